"""pi/getTree's filter modes against pi's own /tree selector.

The TUI component of pi 0.86.1 (``TreeSelectorComponent``) is run in Node on the same files
(``tests/node_client/tui_tree_probe.mjs``): for the example session and random branching sessions,
the entries it shows, in its order, must be the entries ``tree_view`` shows with
``active_branch_first`` (the TUI's ordering), for every mode and for a search. Skipped when the
reference package is not installed (CI without the oracle copy).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import reference_locations
from builders import TEST_USAGE

from pi_session_server.server.tree_view import tree_view
from pi_session_server.session import SessionManager
from pi_session_server.session.tree_modes import FILTERS

ROOT = Path(__file__).resolve().parents[2]
ORACLE = reference_locations.oracle_dir()
PROBE = ROOT / "tests" / "node_client" / "tui_tree_probe.mjs"
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"
MODES = [m for m in FILTERS if m != "none"]

needs_reference = pytest.mark.skipif(
    shutil.which("node") is None or not reference_locations.pi_086_package(ORACLE).is_dir(),
    reason="pi 0.86.1 (the oracle copy) is not installed",
)

WORDS = ["fix", "the", "cache", "test", "parser", "", "  ", "read", "file"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))


def _assistant(rng: random.Random, calls: list[str]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        content.append({"type": "text", "text": _text(rng)})
    if rng.random() < 0.6:
        call_id = f"call_{len(calls)}"
        calls.append(call_id)
        name = rng.choice(["read", "bash", "edit", "write", "grep", "ls", "custom_tool"])
        content.append(
            {
                "type": "toolCall",
                "id": call_id,
                "name": name,
                "arguments": {"path": "/w/src/a.py", "command": "pytest -q", "pattern": "x"},
            }
        )
    stop = rng.choice(["stop", "toolUse", "toolUse", "error", "aborted"])
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "a",
        "provider": "p",
        "model": "m",
        "usage": TEST_USAGE,
        "stopReason": stop,
        "timestamp": 1,
    }
    if stop == "error" and rng.random() < 0.5:
        message["errorMessage"] = "rate limited\nretry"
    return message


def calls_of(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """The first argument of every call of ``owner.name`` from now on (the function still runs)."""
    calls: list[Any] = []
    real = getattr(owner, name)

    def counting(first: Any, *rest: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *rest, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def _random_message(rng: random.Random, r: float, calls: list[str]) -> dict[str, Any]:
    """A user, assistant, tool result or bash message (``r`` below 0.55 picks which)."""
    if r < 0.2:
        content: Any = _text(rng) if rng.random() < 0.5 else [{"type": "text", "text": _text(rng)}]
        return {"role": "user", "content": content, "timestamp": 1}
    if r < 0.4:
        return _assistant(rng, calls)
    if r < 0.5:
        call = rng.choice(calls) if calls and rng.random() < 0.8 else "unknown"
        return {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": "read",
            "content": [{"type": "text", "text": "ok"}],
            "isError": False,
            "timestamp": 1,
        }
    return {
        "role": "bashExecution",
        "command": "ls -la\n",
        "output": "",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 1,
    }


def _append_random_entry(m: SessionManager, rng: random.Random, r: float, ids: list[Any]) -> bool:
    """Another kind of entry (``r`` from 0.55 picks which); False when it only moved the leaf back."""
    if r < 0.6:
        m.append_custom_message_entry("note", _text(rng), rng.random() < 0.5)
    elif r < 0.65:
        m.append_model_change("p", "m2")
    elif r < 0.68:
        m.append_thinking_level_change("high")
    elif r < 0.72:
        m.append_custom_entry("ext", {"x": 1})
    elif r < 0.78 and ids:
        m.append_label_change(rng.choice(ids), rng.choice(["keep", "cache point", "", None]))
    elif r < 0.8:
        m.append_session_info(_text(rng))
    elif r < 0.83:
        m.append_usage("cache_warm", "p", "m", TEST_USAGE)
    elif r < 0.86 and ids:
        m.append_compaction("summary", rng.choice(ids), rng.randint(0, 90000))
    elif ids:
        return _go_back(m, rng, r, ids)
    return True


def _go_back(m: SessionManager, rng: random.Random, r: float, ids: list[Any]) -> bool:
    """Back to an earlier entry (``r`` from 0.86): plainly (False: no entry written) or with a summary."""
    if r < 0.92:
        m.branch(rng.choice(ids))
        return False
    m.branch_with_summary(rng.choice(ids), "went back: " + _text(rng))
    return True


def random_session(rng: random.Random, path: Path) -> None:
    m = SessionManager.open(str(path))
    calls: list[str] = []
    ids: list[Any] = []
    m.append_message(_assistant(rng, calls))  # the first assistant message makes the file appear
    ids.append(m.get_leaf_id())
    for _ in range(rng.randint(5, 45)):
        r = rng.random()
        if r < 0.55:
            m.append_message(_random_message(rng, r, calls))
        elif not _append_random_entry(m, rng, r, ids):
            continue
        ids.append(m.get_leaf_id())


def ours(path: Path) -> dict[str, list[Any]]:
    m = SessionManager.open(str(path))
    roots, leaf = m.get_tree(), m.get_leaf_id()
    result = {}
    for mode in MODES:
        view = tree_view(roots, leaf, m.by_id, mode=mode, active_branch_first=True, previews=False)
        result[mode] = [n["id"] for n in view["nodes"]]
    view = tree_view(
        roots, leaf, m.by_id, mode="default", search="cache", active_branch_first=True, previews=False
    )
    result["default+search"] = [n["id"] for n in view["nodes"]]
    return result


@needs_reference
def test_filter_modes_match_pi_tree_selector(tmp_path: Path) -> None:
    files = [tmp_path / "example.jsonl"]
    files[0].write_bytes(EXAMPLE.read_bytes())
    rng = random.Random(20260314)
    for i in range(40):
        path = tmp_path / f"random-{i}.jsonl"
        random_session(rng, path)
        files.append(path)
    probe = subprocess.run(
        ["node", str(PROBE), str(ORACLE), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    reference = json.loads(probe.stdout)
    for path in files:
        expected = reference[str(path)]
        assert ours(path) == expected, path.name


def test_none_shows_every_entry_in_get_tree_order() -> None:
    m = SessionManager.open(str(EXAMPLE))
    view = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id)
    assert sorted(n["id"] for n in view["nodes"]) == sorted(e.id for e in m.get_entries())
    depth_of = {n["id"]: n["depth"] for n in view["nodes"]}
    for node in view["nodes"]:
        if node["parentId"] is not None:
            assert depth_of[node["id"]] == depth_of[node["parentId"]] + 1
        assert node["visibleParentId"] == node["parentId"]


def test_hidden_entries_reattach_to_the_nearest_visible_ancestor() -> None:
    m = SessionManager.open(str(EXAMPLE))
    view = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode="user-only")
    nodes = {n["id"]: n for n in view["nodes"]}
    assert list(nodes) == ["1e2f3a4b", "e4f5a6b7", "e0f1a2b3", "a8b9c0d1"]
    assert nodes["1e2f3a4b"]["childIds"] == ["e4f5a6b7", "e0f1a2b3"] and nodes["1e2f3a4b"]["isBranchPoint"]
    assert nodes["a8b9c0d1"]["visibleParentId"] == "e0f1a2b3" and nodes["a8b9c0d1"]["depth"] == 2
    assert nodes["a8b9c0d1"]["onLeafPath"] and not nodes["e4f5a6b7"]["onLeafPath"]


def test_previews_are_what_pi_shows() -> None:
    m = SessionManager.open(str(EXAMPLE))
    view = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode="all")
    preview = {n["id"]: n["preview"] for n in view["nodes"]}
    assert preview["1e2f3a4b"].startswith("user: The test suite fails on test_parse_forecast")
    assert preview["0a9b8c7d"] == "[bash: python -m pytest tests/test_parse.py -q -x]"
    assert preview["2b3c4d5e"] == "[read: src/weather/parse.py]"
    assert preview["a2b3c4d5"] == "[read: src/weather/client.py:1-40]"
    assert preview["f5a6b7c8"] == "assistant: I'll add a small file cache under `~/.cache/weather-cli`"
    assert preview["f7a8b9c0"] == "[compaction: 48k tokens]"
    assert preview["b1c2d3e4"] == "[label: tests-green]"
    assert preview["c2d3e4f5"] == "[title: Fix forecast parsing, add caching]"
    assert preview["e6f7a8b9"] == "[bash]: git status --short"
    assert preview["e2f3a4b5"] == "[reminder]: Tag the release after the changelog is merged."
    assert preview["d9e0f1a2"].startswith("[branch summary]: Tried a file-based response cache")


@pytest.mark.slow
def test_flat_form_of_a_200000_entry_chain() -> None:
    m = SessionManager.in_memory("/w")
    for i in range(200_000):
        m.append_custom_entry("step", i)
    view = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, previews=False)
    nodes = view["nodes"]
    assert len(nodes) == 200_000
    assert nodes[-1]["depth"] == 199_999 and nodes[-1]["isLeaf"] and nodes[0]["onLeafPath"]
    nested = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, form="nested", previews=False)
    assert len(nested["nodes"]) == 1


def test_cached_previews_match_fresh_ones_across_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi/getTree keeps previews per session: a cached walk equals a fresh one, also after appends
    (a tool call appended after its result changes the result's preview) and a change of HOME."""
    from pi_session_server.session.preview_cache import PreviewCache

    copy = tmp_path / "session.jsonl"
    shutil.copyfile(EXAMPLE, copy)
    m = SessionManager.open(str(copy))
    cache = PreviewCache()

    def check() -> None:
        fresh = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode="all")
        for _ in range(2):
            assert tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode="all", cache=cache) == fresh

    check()
    result = {"role": "toolResult", "toolCallId": "late", "toolName": "read", "content": [], "timestamp": 1}
    result_id = m.append_message(result)
    check()
    call = {"type": "toolCall", "id": "late", "name": "read", "arguments": {"path": "/home/u/x.py"}}
    m.append_message({"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2})
    check()
    monkeypatch.setenv("HOME", "/home/u")
    check()
    previews = {
        n["id"]: n["preview"] for n in tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, cache=cache)["nodes"]
    }
    assert previews[result_id] == "[read: ~/x.py]"


def test_the_filters_read_each_assistant_body_once_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session an editor shows grows one entry at a time and its tree is walked again after each:
    with the session's cache the filters' answer for an assistant entry (hidden when it has no text
    and did not fail) is read from its body once (its silence alone, or with its tool calls when a
    walk made its preview first), and every walk equals one without the cache."""
    from pi_session_server.session import entry_facts, preview_cache
    from pi_session_server.session.preview_cache import PreviewCache

    path = tmp_path / "s.jsonl"
    random_session(random.Random(1), path)
    m = SessionManager.open(str(path))
    reads = calls_of(monkeypatch, preview_cache, "assistant_facts")
    monkeypatch.setattr(entry_facts, "assistant_facts", preview_cache.assistant_facts)  # (counted there too)
    read_silences = PreviewCache._read_silences
    monkeypatch.setattr(  # (a method: its entry is its second argument)
        PreviewCache,
        "_read_silences",
        lambda cache, entry: reads.append(entry) or read_silences(cache, entry),
    )
    cache = PreviewCache()
    assistants = [e for e in m.get_entries() if e.type == "message" and e.role == "assistant"]
    assert len(assistants) > 3

    def walk_every_view() -> None:
        for mode in MODES:
            for previews in (False, True):
                fresh = tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, previews=previews)
                cached = tree_view(
                    m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, previews=previews, cache=cache
                )
                assert cached == fresh, (mode, previews)

    reads.clear()  # the fresh walks read bodies without the cache: count the cached ones only
    for mode in MODES:
        tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, previews=False, cache=cache)
    assert sorted(map(id, reads)) == sorted(map(id, assistants))  # each once, all modes together
    walk_every_view()
    silent = {"role": "assistant", "content": [], "stopReason": "toolUse", "timestamp": 1}
    m.append_message(silent)
    m.append_message({"role": "user", "content": "next", "timestamp": 2})
    reads.clear()
    for mode in MODES:
        tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, previews=True, cache=cache)
    assert {e.id for e in reads} == {m.get_entries()[-2].id}  # only the new assistant entry
    walk_every_view()
