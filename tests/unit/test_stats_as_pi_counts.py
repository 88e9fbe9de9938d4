"""``pi-session stats`` and ``pi/getStats`` count tokens and cost as pi's own
``AgentSession.getSessionStats()`` does (0.86.1 and 1.6.0 alike): the usage of assistant messages,
of tool results, of ``usage`` entries and of branch summaries and compactions, ``tokens.total``
the sum of input, output, cache reads and cache writes, whatever ``totalTokens`` the messages
recorded (older pi releases recorded none). pi's method runs in Node on the same files
(``tests/node_client/session_stats_probe.mjs``); skipped without the reference copy."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import builders as S
import pytest
import reference_locations
from test_protocol_tree_filters import EXAMPLE

from pi_session_server.cli import main
from pi_session_server.commands._common import open_to_look
from pi_session_server.server.session_stats import session_stats

ROOT = Path(__file__).resolve().parents[2]
ORACLE = reference_locations.oracle_dir()
PROBE = ROOT / "tests" / "node_client" / "session_stats_probe.mjs"  # (it opens the files as pi does: copies)
PI_086 = "@earendil-works/pi-coding-agent"
AGENT_SESSION = Path("dist/core/agent-session.js")
KIT = ROOT / "tests" / "conformance" / "vectors" / "fixtures"
PROFILES = ["0.86.1", "1.6.0"]
TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite", "total")

needs_reference = pytest.mark.skipif(
    shutil.which("node") is None or not reference_locations.pi_086_package(ORACLE).is_dir(),
    reason="pi 0.86.1 (the oracle copy) is not installed",
)


def _usage(tokens: int, cost: float, *, recorded: bool = True) -> dict[str, Any]:
    usage = {
        "input": tokens,
        "output": tokens // 2,
        "cacheRead": tokens * 3,
        "cacheWrite": 7,
        "cost": {"total": cost},
    }
    if recorded:
        usage["totalTokens"] = tokens + tokens // 2  # (what a pi release recorded: not the four's sum)
    return usage


def _every_usage(path: Path, *, recorded: bool) -> Path:
    """A session with usage everywhere pi's totals look: assistant turns (their totalTokens recorded
    or not), a tool result, a usage entry, a compaction and a branch summary with usage, and a
    branch summary without."""
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    assistant = S.assistant_message(
        "ok", 2, provider="p", model="m", usage=_usage(100, 0.25, recorded=recorded)
    )
    assistant["content"] = [call]
    result = S.tool_result_message("c1", timestamp=3) | {"usage": _usage(40, 0.125, recorded=recorded)}
    second = S.assistant_message("done", 4, provider="p", model="n", usage=_usage(10, 0.5, recorded=recorded))
    ts = "2026-11-30T09:13:49.000Z"
    lines = [
        S.header(),
        S.user("u1", None, "hi"),
        json.dumps(S.message_entry("a1", "u1", assistant, ts)),
        json.dumps(S.message_entry("t1", "a1", result, ts)),
        json.dumps(
            {"type": "usage", "id": "g1", "parentId": "t1", "timestamp": ts, "usage": _usage(5, 0.0625)}
        ),
        json.dumps(S.message_entry("a2", "g1", second, ts)),
        json.dumps(
            {
                "type": "compaction",
                "id": "k1",
                "parentId": "a2",
                "timestamp": ts,
                "summary": "s",
                "firstKeptEntryId": "a2",
                "tokensBefore": 9,
                "usage": _usage(3, 0.03125),
            }
        ),
        json.dumps(
            {
                "type": "branch_summary",
                "id": "b1",
                "parentId": "u1",
                "timestamp": ts,
                "fromId": "k1",
                "summary": "left",
                "usage": _usage(2, 0.015625),
            }
        ),
        S.branch_summary("b2", "b1", "k1"),
    ]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _pi_counts(paths: list[Path]) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(PROBE), str(ORACLE), PI_086, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _get_session_stats(package: Path) -> str:
    """The source of ``getSessionStats()`` in an installed pi package."""
    text = (package / AGENT_SESSION).read_text()
    start = text.index("    getSessionStats() {")
    return text[start : text.index("\n    }\n", start)]


@needs_reference
def test_pi_1_6_0_counts_as_0_86_1_does() -> None:
    """The probe runs 0.86.1's method (1.6.0's module does not load in every Node: it imports an
    HTTP client at once): the two releases' methods are the same text, so one reference is both's."""
    if not reference_locations.has_pi_160(ORACLE):
        pytest.skip("pi 1.6.0 is not installed")
    pi_160 = ORACLE / reference_locations.PI_160_PACKAGE
    assert _get_session_stats(pi_160) == _get_session_stats(reference_locations.pi_086_package(ORACLE))


@needs_reference
@pytest.mark.parametrize("pi", PROFILES)
def test_tokens_and_cost_are_those_of_pi_s_get_session_stats(tmp_path: Path, pi: str) -> None:
    # copies: pi's open migrates an old file, writing it
    kit = [*sorted((KIT / "real").glob("*.jsonl")), *sorted((KIT / "real-1.6.0").glob("*.jsonl")), EXAMPLE]
    paths = [
        _every_usage(tmp_path / "recorded.jsonl", recorded=True),
        _every_usage(tmp_path / "unrecorded.jsonl", recorded=False),
        *(Path(shutil.copyfile(path, tmp_path / f"{at}-{path.name}")) for at, path in enumerate(kit)),
    ]
    expected = _pi_counts(paths)
    compared = 0
    for path in paths:
        ours = session_stats(open_to_look(str(path), pi), cache=None)
        theirs = expected[str(path)]
        if "error" in theirs:  # (a message without usage: pi throws, ours counts it 0, docs/CLI.md)
            continue
        compared += 1
        assert {key: ours["tokens"][key] for key in TOKEN_KEYS} == theirs["tokens"], path.name
        assert ours["cost"] == pytest.approx(theirs["cost"], rel=1e-12, abs=1e-15), path.name
    assert compared >= len(paths) - 3


@pytest.mark.parametrize("pi", PROFILES)
@pytest.mark.parametrize("recorded", [True, False], ids=["totalTokens-recorded", "none-recorded"])
def test_every_usage_is_counted_and_total_is_the_four_s_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pi: str, recorded: bool
) -> None:
    """The sums of the session above, by hand: the turns' and the other entries' usage; the models
    keep their assistant turns alone; ``totalTokens`` sums what was recorded (ours), ``total`` is pi's."""
    path = _every_usage(tmp_path / "s.jsonl", recorded=recorded)
    assert main(["stats", str(path), "--json", "--pi", pi]) == 0
    stats = json.loads(capsys.readouterr().out)
    inputs = 100 + 40 + 5 + 10 + 3 + 2  # the turns, the tool result, the usage entry, the summaries
    outputs = 50 + 20 + 2 + 5 + 1 + 1
    recorded_sums = (150 + 60 + 15) + (7 + 3 + 4) if recorded else 7 + 4 + 3  # (usage entries always record)
    assert stats["tokens"] == {
        "input": inputs,
        "output": outputs,
        "cacheRead": inputs * 3,
        "cacheWrite": 7 * 6,
        "totalTokens": recorded_sums,
        "total": inputs + outputs + inputs * 3 + 7 * 6,
    }
    assert stats["cost"] == 0.25 + 0.125 + 0.0625 + 0.5 + 0.03125 + 0.015625
    assert stats["models"] == {
        "p/m": {"turns": 1, "totalTokens": 150 if recorded else 0, "cost": 0.25},
        "p/n": {"turns": 1, "totalTokens": 15 if recorded else 0, "cost": 0.5},
    }
    assert main(["stats", str(path), "--pi", pi]) == 0
    (line,) = (line for line in capsys.readouterr().out.splitlines() if line.startswith("tokens: "))
    assert re.match(r"tokens: ([\d,]+) ", line).group(1) == f"{stats['tokens']['total']:,}"  # type: ignore[union-attr]
