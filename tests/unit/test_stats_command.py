"""``pi-session stats``: a session's totals in the terminal, the same sums as ``pi/getStats``, without
the server's imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.commands._common import example_session_path, open_to_look
from pi_session_server.server.session_stats import session_stats


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["stats", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_sessions_totals(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == example_session_path()
    assert lines[1].endswith('"Fix forecast parsing, add caching"')
    assert lines[2].startswith("36 entries, from 2026-03-14T09:12:05.315Z to ")
    assert lines[3] == "messages: 26 (assistant 12, toolResult 8, user 4, bashExecution 1, system 1)"
    assert "tree: 2 branch points, 3 leaves" in lines
    # as pi's getSessionStats() counts them: the turns', the tool results', the usage entry's, the
    # summaries' (the model's row: its turns alone, their recorded totalTokens)
    assert "tokens: 73,184 (input 17,885, output 1,787, cache read 49,342, cache write 4,170)" in lines
    assert "cost: $0.11" in lines
    assert lines[-1].split() == ["anthropic/claude-sonnet-4-5", "12", "turns", "58,281", "tokens", "$0.07"]


def test_json_is_what_the_sidecar_answers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--json")
    assert code == 0
    assert json.loads(out) == session_stats(open_to_look(example_session_path()))


def test_a_cheap_session_shows_its_cost_below_a_cent_and_its_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = S.usage(10, 5, 0.00042)
    path = tmp_path / "s.jsonl"
    message = S.assistant_message("ok", 2, provider="p", model="m", usage=usage)
    lines = [
        S.header(),
        S.user("u1", None, "hi"),
        json.dumps(S.message_entry("a1", "u1", message, "2026-11-30T09:13:49.000Z")),
        S.session_info("n1", "a1", "\x1b[31mred"),
    ]
    path.write_text("".join(line + "\n" for line in lines))
    code, out, _ = _run(capsys, str(path))
    assert code == 0
    assert '"\\x1b[31mred"' in out and "\x1b" not in out
    assert "cost: $0.0004" in out and "p/m  1 turn  15 tokens  $0.0004" in out


def test_messages_of_an_older_pi_without_total_tokens_are_counted_by_their_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pi's older releases recorded no ``totalTokens`` in a message's usage: the total was shown as
    0 beside non-zero parts. It is their sum, as pi's /session counts it."""
    turn = json.loads(S.assistant("a1", "u1"))
    usage = turn["message"]["usage"]
    del usage["totalTokens"]
    usage.update(input=3, output=191, cacheRead=1684, cacheWrite=9518)
    usage["cost"]["total"] = 0.04
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([S.header(), S.user("u1", None, "hi"), json.dumps(turn)]) + "\n")
    code, out, _ = _run(capsys, str(path))
    assert code == 0
    assert "tokens: 11,396 (input 3, output 191, cache read 1,684, cache write 9,518)" in out.splitlines()
    assert out.splitlines()[-1].endswith("  1 turn  $0.04")  # no count of 0 tokens by the model


@pytest.mark.parametrize(("encoding", "wide"), [("utf-8", "\u4e2d\u6587"), ("ascii", "mod\u00e8le")])
def test_the_models_line_up_as_written(tmp_path: Path, encoding: str, wide: str) -> None:
    """Padded by characters, a model's name of wide characters, or of escapes (an ASCII output),
    pushed its row's figures out of line."""
    usage = S.usage(10, 5, 0.5)
    lines = [S.header(), S.user("u1", None, "hi")]
    for number, model in enumerate((wide, "abcdefghijklmnopqrst")):
        message = S.assistant_message("ok", 2, provider="p", model=model, usage=usage)
        lines.append(json.dumps(S.message_entry(f"a{number}", "u1", message, "2026-11-30T09:13:49.000Z")))
    path = tmp_path / "s.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "stats", "--no-index", str(path)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": encoding},
        cwd=str(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = done.stdout.decode(encoding).split("by model:\n")[1].splitlines()
    shown = {"utf-8": "\u4e2d\u6587" + " " * 16, "ascii": "mod\\xe8le" + " " * 11}[encoding]  # 20 columns
    assert [row.split("  1 turn")[0] for row in rows] == ["  p/" + shown, "  p/abcdefghijklmnopqrst"]


def test_an_empty_file_and_a_missing_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, _ = _run(capsys, str(empty))
    assert code == 0 and "empty file: no session in it yet" in out
    code, out, err = _run(capsys, str(tmp_path / "missing.jsonl"))
    assert code == 2 and out == "" and "missing.jsonl" in err


def test_stats_never_imports_the_server() -> None:
    probe = (
        "import sys; from pi_session_server.cli import main; main(['stats']); "
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'asyncio')]; "
        "sys.exit(f'imported {loaded}' if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_json_is_valid_when_a_sum_overflows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Python's json wrote a cost that overflowed to infinity as ``Infinity``, which no JSON reader
    takes; JSON.stringify, and so the sidecar, writes ``null``."""
    path = tmp_path / "huge.jsonl"
    turns = [json.loads(S.assistant(f"a{n}", f"a{n - 1}" if n else None)) for n in range(2)]
    for turn in turns:
        turn["message"]["usage"]["cost"]["total"] = 1e308
    path.write_text("\n".join([S.header(), *map(json.dumps, turns)]) + "\n")
    code, out, _ = _run(capsys, "--json", str(path))

    def refused(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    assert code == 0 and json.loads(out, parse_constant=refused)["cost"] is None
