"""The commands users run on big sessions take the short way, with the same output as the long one.

* ``tree``, ``context`` and ``check`` import only what they use: never pygls or lsprotocol (the
  language server's, which cost more to import than a big session costs to open).
* Previews are read in one pass over the file, decoding only what a preview shows
  (session/preview_pass.py), and kept with the file's index (session/preview_store.py): the text
  is the same as from each entry's whole value, whatever the lines hold, and the kept previews are
  used only for the lines they were made from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import builders as S
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format.entry import ENVELOPE_DECODER, LineBytes
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import (
    SessionManager,
    cache_dir,
    describe,
    entry_facts,
    loader,
    preview_cache,
    preview_pass,
    preview_store,
    view_store,
)
from pi_session_server.session.describe import preview_of
from pi_session_server.session.entry_facts import collect_tool_calls
from pi_session_server.session.preview_cache import PreviewCache

DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"
ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------- imports

PROBE = """
import json, sys
from pi_session_server.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs", "attrs"))
server = sorted(m for m in sys.modules if m.startswith("pi_session_server.server"))
print(json.dumps({"code": code, "heavy": heavy, "server": server}), file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [("tree",), ("context",), ("context", "--json"), ("check",), ("--help",), ("tree", "--help")],
)
def test_the_viewing_commands_do_not_import_the_language_server(args: tuple[str, ...], tmp_path: Path):
    session = tmp_path / "s.jsonl"
    session.write_bytes(S.generate_session(50_000, seed=3))
    argv = [*args] if "--help" in args else [*args, str(session)]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    report = json.loads(done.stderr.strip().splitlines()[-1]) if "--help" not in args else None
    if report is None:  # argparse exits after printing the help: ask the interpreter instead
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "pi_session_server.cli", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line]
        assert not [m for m in imported if m.split(".")[0] in ("pygls", "lsprotocol")]
        return
    assert report["code"] in (0, 1), done.stderr
    assert report["heavy"] == [] and report["server"] == []


def test_the_server_commands_still_have_their_options():
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "--watch-interval" in done.stdout


# ---------------------------------------------------------------------- previews in one pass


def _assistant(n: int, parent: str, content: Any, stop: str = "toolUse") -> str:
    return json.dumps(
        {
            "type": "message",
            "id": f"a{n}",
            "parentId": parent,
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": content, "stopReason": stop},
        }
    )


ODD = [
    # tool calls: pi's own (their rendering reads a few arguments), others (all of them), odd ones
    lambda n, p: _assistant(
        n,
        p,
        [
            {"type": "thinking", "thinking": "x" * 500},
            {
                "type": "toolCall",
                "id": f"c{n}",
                "name": "read",
                "arguments": {"path": "/home/u/f", "offset": 5},
            },
        ],
    ),
    lambda n, p: _assistant(
        n,
        p,
        [{"type": "toolCall", "id": f"c{n}", "name": "mcp_thing", "arguments": {"q": [1, 2], "z": "y" * 80}}],
    ),
    lambda n, p: _assistant(
        n, p, [{"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": "not an object"}]
    ),
    lambda n, p: _assistant(n, p, [{"type": "toolCall", "id": f"c{n}", "name": "edit"}]),
    lambda n, p: _assistant(n, p, [{"type": "toolCall", "id": 7, "name": "ls", "arguments": {"path": 3}}]),
    lambda n, p: _assistant(n, p, [], stop="error"),
    lambda n, p: _assistant(n, p, [{"type": "text", "text": "  "}], stop="aborted"),
    lambda n, p: _assistant(n, p, "plain text content", stop="stop"),
    lambda n, p: _assistant(n, p, ["a string block", {"type": "text", "text": "then text"}]),
    lambda n, p: _assistant(n, p, {"type": "text", "text": "an object, not a list"}),
    lambda n, p: _assistant(n, p, [{"type": "text", "text": "\ud83d\ude00" * 150}]),
    lambda n, p: S.tool_result(f"r{n}", p, f"c{n - 1}", "result " * 50),
    lambda n, p: S.tool_result(f"r{n}", p, "no-such-call", "orphan"),
    lambda n, p: S.user(f"u{n}", p, [{"type": "image", "data": "A" * 5000, "mimeType": "image/png"}]),
    lambda n, p: S.user(
        f"u{n}", p, [{"type": "text", "text": "line\nbreaks\tand tabs "}, {"type": "text", "text": 5}]
    ),
    lambda n, p: S.user(f"u{n}", p, "\u2028 separators \u2029"),
    lambda n, p: S.user(f"u{n}", p, 12),
    lambda n, p: (
        '{"type":"message","id":"u' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"user","content":"a","content":"b"}}'
    ),  # JSON.parse: the last one
    lambda n, p: (
        '{"type":"message","id":"u' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"user","content":"\\ud800 lone"}}'
    ),
    lambda n, p: json.dumps(
        {"type": "message", "id": f"x{n}", "parentId": p, "timestamp": "t", "message": None}
    ),
    lambda n, p: json.dumps(
        {"type": "message", "id": f"x{n}", "parentId": p, "timestamp": "t", "message": "text"}
    ),
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"b{n}",
            "parentId": p,
            "timestamp": "t",
            "message": {"role": "bashExecution", "command": "ls\n-la"},
        }
    ),
    lambda n, p: json.dumps(
        {"type": "message", "id": f"y{n}", "parentId": p, "timestamp": "t", "message": {"role": "narrator"}}
    ),
    # envelopes that are not strings: checked against the loaded ones the general way
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"x{n}",
            "parentId": n,
            "timestamp": 1.5e12,
            "message": {"role": "user", "content": "numbers"},
        }
    ),
    lambda n, p: (
        '{"type":"message","id":"u' + str(n) + '","parentId":"' + p + '","timestamp":12345678901234567890123,'
        '"message":{"role":"user","content":"big timestamp"}}'
    ),
    # messages the pass decodes with their content in one go only for the common roles: the others
    # take the general way, with the same previews
    lambda n, p: json.dumps(
        {"type": "message", "id": f"y{n}", "parentId": p, "timestamp": "t", "message": {"content": "no role"}}
    ),
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"y{n}",
            "parentId": p,
            "timestamp": "t",
            "message": {"role": 5, "content": "x"},
        }
    ),
    lambda n, p: (
        '{"type":"message","id":"a' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"user","role":"assistant","content":"","stopReason":"error"}}'
    ),  # JSON.parse: the last role
    lambda n, p: json.dumps(
        {
            "type": "custom",
            "id": f"q{n}",
            "parentId": p,
            "timestamp": "t",
            "customType": "c",
            "message": {"role": "user", "content": "not shown"},
        }
    ),
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"r{n}",
            "parentId": p,
            "timestamp": "t",
            "message": {
                "role": "toolResult",
                "toolCallId": f"c{n - 1}",
                "content": [{"type": "text", "text": "out"}, {"type": "image", "data": "AAAA"}],
                "stopReason": "error",
            },
        }
    ),
    lambda n, p: json.dumps(
        {
            "type": "custom_message",
            "id": f"m{n}",
            "parentId": p,
            "timestamp": "t",
            "customType": "note",
            "content": [{"type": "text", "text": "hi"}],
        }
    ),
    lambda n, p: json.dumps(
        {"type": "custom_message", "id": f"m{n}", "parentId": p, "timestamp": "t", "content": 3}
    ),
    lambda n, p: S.compaction(f"k{n}", p, p, "summary " * 100),
    lambda n, p: json.dumps(
        {
            "type": "compaction",
            "id": f"k{n}",
            "parentId": p,
            "timestamp": "t",
            "tokensBefore": 123456789012345678901234,
        }
    ),
    lambda n, p: S.branch_summary(f"s{n}", p, p, "left\nbranch"),
    lambda n, p: json.dumps(
        {"type": "branch_summary", "id": f"s{n}", "parentId": p, "timestamp": "t", "summary": {"o": 1}}
    ),
    lambda n, p: S.model_change(f"c{n}x", p),
    lambda n, p: json.dumps(
        {
            "type": "thinking_level_change",
            "id": f"t{n}",
            "parentId": p,
            "timestamp": "t",
            "thinkingLevel": None,
        }
    ),
    lambda n, p: json.dumps(
        {"type": "custom", "id": f"q{n}", "parentId": p, "timestamp": "t", "customType": ["x"]}
    ),
    lambda n, p: S.label(f"l{n}", p, p, None),
    lambda n, p: S.session_info(f"i{n}", p, ""),
    lambda n, p: json.dumps({"type": "future", "id": f"f{n}", "parentId": p, "timestamp": "t"}),
    lambda n, p: json.dumps(
        {
            "type": "context_edit",
            "id": f"e{n}",
            "parentId": p,
            "timestamp": "t",
            "targetId": p,
            "replacement": None,
        }
    ),
    lambda n, p: json.dumps(
        {
            "type": "context_edit",
            "id": f"e{n}",
            "parentId": p,
            "timestamp": "t",
            "targetId": 4,
            "replacement": {"x": 1},
        }
    ),
    # tool results, whose previews a scan makes from the envelope's head (MessageHead): odd call
    # ids and names, fields the head does not hold that the preview decoder refuses
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"r{n}",
            "parentId": p,
            "timestamp": "t",
            "message": {"role": "toolResult", "toolCallId": 7, "toolName": "ls", "content": "x"},
        }
    ),
    lambda n, p: (
        '{"type":"message","id":"r' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"toolResult","toolCallId":"c' + str(n - 1) + '","toolName":"read",'
        '"toolName":"bash","content":[]}}'
    ),  # JSON.parse: the last name
    lambda n, p: (
        '{"type":"message","id":"r' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"toolResult","toolCallId":"c' + str(n - 1) + '","toolName":"edit",'
        '"errorMessage":"\\ud800 lone","content":[]}}'
    ),
    lambda n, p: json.dumps(
        {
            "type": "message",
            "id": f"r{n}",
            "parentId": p,
            "timestamp": "t",
            "message": {"role": "toolResult", "toolCallId": {"o": 1}, "toolName": ["x", 2]},
        }
    ),
    lambda n, p: json.dumps(
        {
            "type": "custom",
            "id": f"q{n}",
            "parentId": p,
            "timestamp": "t",
            "customType": "c",
            "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read"},
        }
    ),
    # (last: lines whose previews cannot be kept with the index, a call id that is a lone
    # surrogate or an integer beyond msgpack's, see KEPT_ODD)
    lambda n, p: (
        '{"type":"message","id":"r' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"toolResult","toolCallId":"\\ud800c","toolName":"read"}}'
    ),
    lambda n, p: (
        '{"type":"message","id":"r' + str(n) + '","parentId":"' + p + '","timestamp":"t",'
        '"message":{"role":"toolResult","toolCallId":12345678901234567890123,"toolName":null}}'
    ),
]
# ODD[:KEPT_ODD]: the lines whose previews can all be kept with the file's index
KEPT_ODD = len(ODD) - 2


def _write_session(path: Path, picks: list[int], repeat: int = 1) -> Path:
    lines = [S.header()]
    parent = None
    n = 0
    for _ in range(repeat):
        for pick in picks:
            n += 1
            line = ODD[pick](n, parent) if parent is not None else S.user(f"u{n}", None, "first")
            lines.append(line)
            parent = json.loads(line)["id"] if '"\\ud800' not in line else parent
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    return path


def _previews_two_ways(path: Path, held: bool = False) -> tuple[list[Any], list[Any]]:
    """(previews from each entry's whole value, previews from one pass), for every entry; ``held``:
    the pass decodes the lines' bytes held by the entries (a small file's), else reads the file."""
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        if not held:
            _read_from_the_file(entries)
        whole_calls: dict[Any, Any] = {}
        for entry in entries:  # pi's toolCallMap, from the whole values
            if entry.type == "message" and entry.role == "assistant":
                whole_calls.update(entry_facts.tool_calls_of(entry))
        whole = [preview_of(e, whole_calls) for e in entries]
        cache = PreviewCache()
        calls = cache.collect_tool_calls(entries)
        cache.prefetch(entries)
        preview = cache.previews()
        passed = [preview(e, calls) for e in entries]
        silent = [cache.silent_turn(e) for e in entries if e.type == "message" and e.role == "assistant"]
        whole_silent = [
            PreviewCache().silent_turn(e) for e in entries if e.type == "message" and e.role == "assistant"
        ]
    return [whole, whole_silent], [passed, silent]


def _read_from_the_file(entries: list[Any]) -> None:
    """Bodies read from the file, as a big session's are (a small one's lines are kept in memory)."""
    for entry in entries:
        if type(entry._body) is LineBytes:
            entry._body = ABSENT


@pytest.fixture
def every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any number of entries is read in one pass (not only many)."""
    monkeypatch.setattr("pi_session_server.session.entry_facts.MIN_BATCH", 1)
    monkeypatch.setattr("pi_session_server.session.preview_cache.MIN_BATCH", 1)


@pytest.mark.parametrize("held", [False, True], ids=["read", "held"])
def test_previews_from_one_pass_are_those_of_the_whole_values(tmp_path: Path, every_batch: None, held: bool):
    path = _write_session(tmp_path / "s.jsonl", list(range(len(ODD))), repeat=3)
    whole, passed = _previews_two_ways(path, held)
    assert passed == whole
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        values = list(preview_pass.preview_values(entries))
    assert 0 < len(values) < len(entries)  # most lines read in the pass, the odd ones the usual way


@pytest.mark.parametrize("index", [False, True], ids=["plain", "from the index"])
def test_lines_far_apart_are_read_alone_not_a_window_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_batch: None, index: bool
) -> None:
    """The rows of a reply can be a few lines each far from the next (a tree view's levels): each
    is read alone, not with a window of the file after it; lines close together share a window."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    lines, parent = [S.header()], None
    for n in range(60):  # a user message, then a big tool result
        lines.append(S.user(f"u{n}", parent, f"question {n}"))
        lines.append(S.tool_result(f"r{n}", f"u{n}", f"c{n}", "x" * 300_000))
        parent = f"r{n}"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index_dir = str(tmp_path / "index") if index else False
    SessionManager.open(str(path), read_only=True, index=index_dir).close()
    with SessionManager.open(str(path), read_only=True, index=index_dir) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        far = [e for e in entries if e.type == "message" and e.role == "user"][::4]  # 1.2 MB apart
        close = entries[10:16]
        reads: list[int] = []
        real_pread = os.pread
        monkeypatch.setattr(
            preview_pass.os, "pread", lambda fd, n, at: reads.append(n) or real_pread(fd, n, at)
        )
        far_values = dict(preview_pass.preview_values(far))
        assert len(reads) == len(far) and sum(reads) <= len(far) * preview_pass.LINE_GUESS
        reads.clear()
        close_values = dict(preview_pass.preview_values(close))
        assert len(reads) == 1  # one window for lines next to one another
        shown = partial(describe.finish_preview, tool_calls={}, home="/home/u")
        whole = {e: shown(describe.preview_part(e)) for e in far + close}
        passed = {**far_values, **close_values}
        assert {e: shown(entry_facts.part_and_facts(e, v)[0]) for e, v in passed.items()} == whole


@settings(max_examples=40, deadline=None)
@given(picks=st.lists(st.integers(0, len(ODD) - 1), min_size=1, max_size=40), held=st.booleans())
def test_previews_of_any_lines_from_one_pass(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int], held: bool
):
    path = _write_session(tmp_path_factory.mktemp("previews") / "s.jsonl", picks)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("pi_session_server.session.entry_facts.MIN_BATCH", 1)
        mp.setattr("pi_session_server.session.preview_cache.MIN_BATCH", 1)
        whole, passed = _previews_two_ways(path, held)
    assert passed == whole


@pytest.mark.parametrize("held", [False, True], ids=["read", "held"])
@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_previews_of_real_sessions_from_one_pass(name: str, held: bool, every_batch: None):
    whole, passed = _previews_two_ways(DATA / name, held)
    assert passed == whole


def _previews_made_while_scanning(
    path: Path, monkeypatch: pytest.MonkeyPatch, held: bool
) -> tuple[list[Any], list[Any], list[Any]]:
    """(previews from each entry's whole value, previews made while the open scanned the file (the
    CLI's tree), the entries the pass of prefetch was given after the open); ``held``: the lines'
    bytes are kept with the entries (a small file's), else not (a big file's)."""
    if not held:
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    cache = PreviewCache(keep_in_walk=False)
    with cache.made_while_scanning():
        sm = SessionManager.open(str(path), read_only=True, index=False)
    with sm:
        entries = sm.get_entries()
        assert any(type(e._body) is LineBytes for e in entries) == held
        given: list[Any] = []
        real_values = entry_facts.preview_values
        monkeypatch.setattr(entry_facts, "preview_values", lambda es: given.extend(es) or real_values(es))
        cache.prefetch(entries)
        calls = cache.collect_tool_calls(entries)
        preview = cache.previews()
        made = [preview(e, calls) for e in entries]
        made_silent = [cache.silent_turn(e) for e in entries if e.type == "message" and e.role == "assistant"]
        whole_calls: dict[Any, Any] = {}
        for entry in entries:  # pi's toolCallMap, from the whole values
            if entry.type == "message" and entry.role == "assistant":
                whole_calls.update(entry_facts.tool_calls_of(entry))
        whole = [preview_of(e, whole_calls) for e in entries]
        whole_silent = [
            PreviewCache().silent_turn(e) for e in entries if e.type == "message" and e.role == "assistant"
        ]
    return [whole, whole_silent], [made, made_silent], given


@pytest.mark.parametrize("held", [False, True], ids=["read", "held"])
def test_previews_made_while_the_open_scans_are_those_of_the_whole_values_and_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_batch: None, held: bool
):
    """``tree`` makes the previews from the lines its open scans (PreviewCache.made_while_scanning):
    the same text as from each entry's whole value, whatever the lines hold; only the lines the
    scan did not decode whole (its slow path, fields the preview decoder refuses) are read again."""
    path = _write_session(tmp_path / "s.jsonl", list(range(len(ODD))), repeat=3)
    whole, made, given = _previews_made_while_scanning(path, monkeypatch, held)
    assert made == whole
    lines = path.read_bytes().split(b"\n")

    def scanned_whole(entry: Any) -> bool:  # decoded in the scan's hot loop, and its preview fields
        try:
            ENVELOPE_DECODER.decode(lines[entry.line])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False  # the scan's exact slow path
        return preview_pass.line_value(lines[entry.line]) is not None

    assert given and not any(map(scanned_whole, given))
    assert len(set(given)) < len(made[0]) // 4


def test_a_messages_preview_is_made_from_the_head_the_scan_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """What the preview of a tool result, a user or an assistant message shows (a call id and tool
    name; a content, stop reason and error) the scan decoded with its envelope (ObservedHead): its
    line is decoded once, by the scan (a message's content alone is decoded again, from the head).
    Only lines of other kinds, and messages whose content the preview's fields do not take (an
    object, a number, a list holding a string), are decoded again (line_value)."""
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 0, 12, 1, 11, 44, 7, 8, 15, 17, 9, 16, 21], repeat=5)
    decoded: list[bytes] = []
    real_line_value = entry_facts.line_value
    monkeypatch.setattr(
        entry_facts, "line_value", lambda line: decoded.append(bytes(line)) or real_line_value(line)
    )
    whole, made, _ = _previews_made_while_scanning(path, monkeypatch, held=False)
    assert made == whole
    again = (b'"an object, not a list"', b'"a string block"', b'"content":12', b'"bashExecution"')
    lines = path.read_bytes().splitlines()[1:]
    assert decoded == [line for line in lines if any(mark in line for mark in again)]
    assert len(decoded) == 4 * 5


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_previews_of_real_sessions_made_while_the_open_scans(
    name: str, monkeypatch: pytest.MonkeyPatch, every_batch: None
):
    """(A file of an older version is migrated as it is read: its previews are made after the open.)"""
    whole, made, _ = _previews_made_while_scanning(DATA / name, monkeypatch, held=False)
    assert made == whole


@pytest.mark.parametrize("indexed", [False, True], ids=["no index", "index"])
def test_previews_made_while_scanning_are_listed_to_keep_only_where_they_can_be_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indexed: bool
):
    """The previews a scan makes are listed in file order (preview_store.Made, every entry's) only
    for a file whose previews can be kept with its index: not for a file opened without one."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11], repeat=10)
    cache = PreviewCache()
    index: Any = str(tmp_path / "index") if indexed else False
    with cache.made_while_scanning(), SessionManager.open(str(path), read_only=True, index=index) as sm:
        entries = sm.get_entries()
    made = cache._scanned
    assert (made is not None) == indexed
    assert made is None or made.entries == [e for e in entries if preview_cache._cached(cache.parts, e)]
    assert cache._made == len(cache.parts) > 0


def test_tree_keeps_the_previews_it_made_while_scanning_with_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The previews ``tree`` made while its open scanned the file are kept with the file's index,
    as those of a pass are: the next process that walks the session reads them, not the lines."""
    from pi_session_server.cli import main

    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=3)
    time.sleep(0.1)
    assert main(["tree", str(path)]) == 0
    assert "◀ leaf" in capsys.readouterr().out
    with SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")) as sm:
        entries = sm.get_entries()
        monkeypatch.setattr(entry_facts, "preview_values", lambda es: pytest.fail("read again"))
        cache = PreviewCache(keep_in_walk=False)
        cache.prefetch(entries)
        assert all(preview_cache._cached(cache.parts, e) is not None for e in entries)


def test_the_tool_calls_gathered_while_scanning_serve_the_walk_when_the_previews_are_kept_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``tree``'s first open of a file with an index keeps its previews whole (for the index) and
    gathers the tool calls of its assistant messages as the scan makes them: the walk takes those
    calls as they are, the messages' facts not looked up again, and they are pi's calls."""
    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=3)
    time.sleep(0.1)
    cache = PreviewCache()
    with cache.made_while_scanning(longest=12):
        sm = SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index"))
    with sm:
        entries = sm.get_entries()
        assert cache._scanned is not None  # kept with the index: the previews made whole
        cache.prefetch(entries)
        gathered = cache._scanned_calls
        assert gathered is not None
        calls = cache.tool_calls_once(entries)
        assert calls is gathered[0] and calls
        whole = entry_facts.collect_tool_calls(entries)  # (arguments as dicts: rendered alike)
        assert calls.keys() == whole.keys()
        for key, (name, arguments) in calls.items():
            assert name == whole[key][0]
            assert describe.format_tool_call(name, arguments, "/home/u") == describe.format_tool_call(
                *whole[key], "/home/u"
            )


@pytest.mark.parametrize("big", [True, False], ids=["big file", "small file"])
@pytest.mark.parametrize("ended", [True, False], ids=["last line ended", "last line not ended"])
def test_the_tree_first_open_holds_its_previews_cut_and_keeps_them_whole_as_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ended: bool, big: bool
):
    """``tree``'s first open of a big file with an index holds the previews as its one walk shows
    them, cut, and no facts of the assistant messages (as an open without the index does): those
    it keeps are written as the scan makes them, a chunk at a time. A smaller file's are held
    whole until they are kept. What it keeps is what a server's keeper keeps, looking every entry
    up (a last line without its newline left out by both)."""
    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "SPOOL_FROM_SIZE", 0 if big else 1 << 40)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(preview_store, "_CHUNK", 7)  # (several chunks, the last one part full)
    # (enough entries for the keeper's prefetch to read them in a pass, with the messages' facts)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=8)
    if not ended:
        path.write_bytes(path.read_bytes()[:-1])
    time.sleep(0.1)
    longest = 12
    cache = PreviewCache("/home/u")
    with cache.made_while_scanning(longest=longest):
        sm = SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index"))
    with sm:
        entries = sm.get_entries()
        held = [part for _, part in cache.parts.values() if type(part) is str]
        assert held and all(len(part) <= longest for part in held) == big
        assert bool(cache.calls) != big
        cache.prefetch(entries)
    (kept,) = (tmp_path / "index").glob("*.pi-previews")
    looked_up_dir = tmp_path / "looked-up"
    with SessionManager.open(str(path), read_only=True, index=str(looked_up_dir)) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        looked_up = PreviewCache("/home/u", keep_in_walk=False)
        looked_up.prefetch(entries)
        assert any(len(part) > longest for _, part in looked_up.parts.values() if type(part) is str)
        keep = looked_up.keeper(entries)
        assert keep is not None and keep()
    (expected,) = looked_up_dir.glob("*.pi-previews")
    assert kept.read_bytes() == expected.read_bytes()


def test_previews_held_cut_after_an_append_are_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``tree`` of a file grown since its index was written scans the lines it grew by, their
    previews held cut: they are not kept then (the next walk makes them whole and keeps them)."""
    from pi_session_server.cli import main

    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    picks = [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14]
    path = _write_session(tmp_path / "s.jsonl", picks, repeat=3)
    time.sleep(0.1)
    assert main(["tree", "--width", "8", str(path)]) == 0
    grown = _write_session(tmp_path / "grown.jsonl", picks, repeat=6).read_bytes()
    path.write_bytes(grown)  # (the same lines first: appended to)
    time.sleep(0.1)
    for _ in range(2):
        assert main(["tree", "--width", "8", str(path)]) == 0
    capsys.readouterr()
    with SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")) as sm:
        entries = sm.get_entries()
        loaded = preview_store.load(entries)
        _read_from_the_file(entries)
        assert len(loaded.entries) == len(entries)
        for entry, part in zip(loaded.entries, loaded.parts, strict=True):
            if type(part) is str:
                assert part == describe.preview_part(entry)


@pytest.mark.parametrize("below", [True, False], ids=["smaller than the index's minimum", "not smaller"])
def test_nothing_is_kept_with_the_index_of_a_file_smaller_than_the_index_is_kept_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], below: bool
):
    """docs/CONFIGURATION.md: files smaller than PI_SESSION_INDEX_MIN_SIZE get no index; nor
    previews, nor views kept beside one (the tree command, and a server's keeper)."""
    from pi_session_server.cli import main

    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11], repeat=10)
    size = path.stat().st_size
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, str(size + 1 if below else size))
    time.sleep(0.1)
    assert main(["tree", str(path)]) == 0
    assert "◀ leaf" in capsys.readouterr().out
    index_dir = tmp_path / "index"
    kept = sorted(p.suffix for p in index_dir.glob("*")) if index_dir.exists() else []
    assert kept == ([] if below else [".pi-index", ".pi-previews", ".pi-view-tree"])
    served = tmp_path / "served"  # (what a server's keeper keeps, in a directory of its own)
    with SessionManager.open(str(path), read_only=True, index=str(served)) as sm:
        entries = sm.get_entries()
        cache = PreviewCache(keep_in_walk=False)
        cache.prefetch(entries)
        keep = cache.keeper(entries)
        assert (keep is not None and keep()) == (not below)
    assert any(served.glob("*.pi-previews")) == (not below)


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "/home/u/f", "offset": 5, "limit": None, "extra": {"deep": [1, {"x": 2}]}},
        {"pattern": ["a", {"b": None}], "path": 1.5, "command": "ls -la", "file_path": "", "limit": 2**70},
        {"content": "x" * 1000},
        {},
    ],
)
def test_the_arguments_of_a_call_to_pis_own_tool_are_those_of_the_whole_value(arguments: dict[str, Any]):
    """The pass keeps the arguments pi's rendering reads, as the whole value holds them, in its order."""
    raw = msgspec.Raw(msgspec.json.encode(arguments))
    held = preview_pass._arguments("read", raw)
    assert all(getattr(held, name) == arguments.get(name, ABSENT) for name in OWN_ARGUMENTS)
    kept = msgspec.to_builtins(held)  # as the previews kept encode it
    assert kept == {name: value for name, value in arguments.items() if name in OWN_ARGUMENTS}
    assert list(kept) == [name for name in OWN_ARGUMENTS if name in arguments]
    assert msgspec.json.encode(held) == msgspec.json.encode(kept)


def test_the_calls_a_tree_holds_until_their_results_are_drawn_are_not_dicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_batch: None
):
    """The arguments of a call to one of pi's tools are held as the few a rendering shows, not as a
    dict each (a session's tree holds every call until its result is drawn); the previews are the
    same (test_previews_made_while_the_open_scans_are_those_of_the_whole_values_and_not_read_again)."""
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 3, 11, 4, 11], repeat=20)
    cache = PreviewCache(keep_in_walk=False)
    with cache.made_while_scanning(), SessionManager.open(str(path), read_only=True, index=False) as sm:
        calls = cache.collect_tool_calls(sm.get_entries())
    held = [arguments for name, arguments in calls.values() if name in ("read", "ls")]
    assert held and all(type(arguments) is preview_pass.ToolArguments for arguments in held)


OWN_ARGUMENTS = ("path", "file_path", "offset", "limit", "command", "pattern")


def test_held_bytes_of_another_line_are_refused(tmp_path: Path):
    """An entry whose envelope came from the index and whose held bytes are another line's (see
    Entry.value) is refused by the pass as by Entry.value."""
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 13] * 5)
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        first, second = entries[2], entries[3]
        assert type(first._body) is LineBytes and type(second._body) is LineBytes
        first._body = second._body
        with pytest.raises(Exception, match="changed underneath"):
            first.value  # noqa: B018 - what the usual way does
        with pytest.raises(Exception, match="changed underneath"):
            list(preview_pass.preview_values(entries))


def test_a_line_changed_under_the_pass_is_refused(tmp_path: Path, every_batch: None):
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 13] * 50)
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        data = path.read_bytes()
        middle = entries[len(entries) // 2]
        at = data.index(f'"{middle.id}"'.encode(), middle.offset)
        path.write_bytes(data[:at] + b'"X' + data[at + 2 :])  # its id, one letter changed
        with pytest.raises(Exception, match="changed underneath"):
            list(preview_pass.preview_values(entries))


# ---------------------------------------------------------------------- the tree command, kept previews


def _tree(path: Path, env: dict[str, str], *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server.cli", "tree", *extra, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_the_tree_is_the_same_from_the_file_from_its_index_and_from_kept_previews(tmp_path: Path):
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=150)
    index_dir = tmp_path / "index"
    env = dict(os.environ, PI_SESSION_INDEX_DIR=str(index_dir), PI_SESSION_INDEX_MIN_SIZE="0")
    expected = _tree(path, env, "--no-index")
    assert not index_dir.exists()
    time.sleep(cache_dir.RACY_NS / 1e9 + 0.1)  # previews are kept for a file settled (RACY_NS)
    assert _tree(path, env) == expected  # writes the index and the previews
    kept = sorted(p.suffix for p in index_dir.iterdir())
    assert kept == [".pi-index", ".pi-previews", ".pi-view-tree"]
    assert _tree(path, env) == expected  # reads both
    data = path.read_bytes()  # the same size, other text in the middle: neither is used
    middle = data.index(b"breaks", len(data) // 2)
    path.write_bytes(data[:middle] + b"BREAKS" + data[middle + 6 :])
    expected = _tree(path, env, "--no-index")
    assert "BREAKS" in expected
    assert _tree(path, env) == expected
    with open(path, "a", encoding="utf-8") as f:  # appended: new previews made, kept ones used
        f.write(
            S.user("late1", "i1650", "appended later")
            + "\n"
            + S.tool_result("late2", "late1", "c1", "x")
            + "\n"
        )
    expected = _tree(path, env, "--no-index")
    assert "appended later" in expected
    assert _tree(path, env) == expected


def _previews(path: Path, index_dir: str | bool) -> list[str]:
    with SessionManager.open(str(path), read_only=True, index=index_dir) as sm:
        entries = sm.get_entries()
        cache = PreviewCache()
        calls = cache.collect_tool_calls(entries)
        cache.prefetch(entries)
        preview = cache.previews()
        return [preview(e, calls) for e in entries]


def test_kept_previews_describe_only_their_own_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 13, 7], repeat=20)
    index_dir = str(tmp_path / "index")
    time.sleep(0.1)
    first = _previews(path, index_dir)
    (kept,) = Path(index_dir).glob("*.pi-previews")
    stored = kept.read_bytes()
    assert _previews(path, index_dir) == first
    loaded = []
    real_load = preview_store.load
    monkeypatch.setattr(
        preview_store, "load", lambda entries, fd=None: loaded.append(real_load(entries, fd)) or loaded[-1]
    )
    assert _previews(path, index_dir) == first
    assert len(loaded[-1].entries) == len(first)  # every preview came from the kept ones
    for damaged in (
        b"",
        stored[:-3],
        stored[:20] + bytes([stored[20] ^ 1]) + stored[21:],
        b"PIPREVW\x00" + os.urandom(200),
    ):
        kept.write_bytes(damaged)
        assert _previews(path, index_dir) == first
        assert loaded[-1] == preview_store.NOTHING_LOADED
    kept.write_bytes(stored)
    time.sleep(0.06)  # past the clock's tick: the rewrite gets another ctime
    with open(path, "r+b") as f:  # the same size, other text in the middle
        data = f.read()
        at = data.index(b"first")
        f.seek(at)
        f.write(b"FIRST")
    assert _previews(path, index_dir)[0] == first[0].replace("first", "FIRST")
    assert loaded[-1] == preview_store.NOTHING_LOADED


def _uncached_previews(path: Path) -> list[str]:
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        calls = collect_tool_calls(entries)
        return [preview_of(e, calls) for e in entries]


def test_kept_tool_call_texts_hold_for_their_home_and_their_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A tool result's kept text is that of the call it was made from, with the home directory it
    was made with: another home, or a call appended later with the same id, renders it again."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    monkeypatch.setenv("HOME", "/home/me")
    lines, parent = [S.header()], None
    for n in range(12):
        lines.append(S.assistant(f"a{n}", parent, "", calls=((f"c{n}", "read", {"path": f"/home/me/f{n}"}),)))
        lines.append(S.tool_result(f"t{n}", f"a{n}", f"c{n}"))
        parent = f"t{n}"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index_dir = str(tmp_path / "index")
    time.sleep(0.1)
    first = _previews(path, index_dir)
    assert first == _uncached_previews(path)
    assert "~/f0" in first[1]
    assert list(Path(index_dir).glob("*.pi-previews"))
    rendered: list[Any] = []
    real_format = describe.format_tool_call
    monkeypatch.setattr(
        describe, "format_tool_call", lambda *args: rendered.append(args) or real_format(*args)
    )
    assert _previews(path, index_dir) == first
    assert rendered == []  # every tool result's text was kept
    monkeypatch.setenv("HOME", "/elsewhere")
    elsewhere = _previews(path, index_dir)
    assert len(rendered) == 12
    assert elsewhere == _uncached_previews(path)
    assert "/home/me/f0" in elsewhere[1]
    monkeypatch.setenv("HOME", "/home/me")
    with open(path, "a", encoding="utf-8") as f:  # a later call with the id of the first
        f.write(S.assistant("late", parent, "", calls=(("c0", "read", {"path": "/home/me/other"}),)) + "\n")
    later = _previews(path, index_dir)
    assert later == _uncached_previews(path)
    assert "~/other" in later[1]
    assert later[3:24] == first[3:24]


# ---------------------------------------------------------------------- the tree command, kept views


def _keep_views_of_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Views kept in ``tmp_path / "index"`` for files of any size, and of a file that settled for
    a tenth of a second (the tests wait that long after a change)."""
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)


def test_a_kept_view_is_drawn_again_whenever_anything_it_was_drawn_from_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``tree`` of a file unchanged since it was drawn the same way prints the text kept with its
    index (session/view_store.py); another width, release or home, a line appended, a rewrite in
    place, a kept view damaged, a file changed just before: drawn again, the same as without any."""
    from pi_session_server.cli import main
    from pi_session_server.commands import tree_draw as tree_command
    from pi_session_server.session import view_store

    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    drawn: list[int] = []
    real_lines = tree_command.tree_lines
    monkeypatch.setattr(tree_command, "tree_lines", lambda *args: drawn.append(1) or real_lines(*args))
    opened: list[int] = []
    real_open = tree_command.open_to_look
    monkeypatch.setattr(
        tree_command, "open_to_look", lambda *args, **kw: opened.append(1) or real_open(*args, **kw)
    )
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=3)

    errors: list[str] = []

    def tree(*extra: str) -> tuple[str, int]:
        before, opens = len(drawn), len(opened)
        assert main(["tree", *extra, str(path)]) == 0
        out, err = capsys.readouterr()
        draws = len(drawn) - before
        assert len(opened) - opens == draws  # a kept view is printed without reading the session
        assert main(["tree", "--no-index", *extra, str(path)]) == 0
        assert capsys.readouterr() == (out, err)  # the same as drawn without anything kept
        errors[:] = [err]
        return out, draws

    time.sleep(0.1)
    first, draws = tree()
    assert draws == 1
    (kept,) = (tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE))
    assert tree() == (first, 0)  # the kept view
    os.utime(kept, (1000, 1000))
    assert tree() == (first, 0)
    assert kept.stat().st_mtime > 1000  # shown: used now, so pruning keeps it (cache_dir.prune)
    assert tree("--width", "30")[1] == 1  # another width: drawn, and kept in its place
    assert tree("--width", "30")[1] == 0
    assert tree("--pi", "0.86.1", "--width", "30")[1] == 1
    monkeypatch.setenv("HOME", "/elsewhere")
    assert tree()[1] == 1
    assert tree()[1] == 0
    real_stamp = cache_dir.code_stamp()
    monkeypatch.setattr(cache_dir, "code_stamp", lambda: real_stamp ^ 1)  # the package's code changed
    assert tree()[1] == 1
    assert tree()[1] == 0
    monkeypatch.setattr(cache_dir, "code_stamp", lambda: real_stamp)
    assert tree()[1] == 1
    for damaged in (b"", kept.read_bytes()[:-3], b"PIVIEW\x00\x00" + os.urandom(100)):
        kept.write_bytes(damaged)
        assert tree()[1] == 1
    with open(path, "a", encoding="utf-8") as f:  # appended: the leaf moved
        f.write(S.user("late1", "i33", "appended later") + "\n")
    out, draws = tree()
    assert "appended later" in out and draws == 1
    time.sleep(0.1)
    tree()
    assert tree()[1] == 0
    monkeypatch.setattr(cache_dir, "RACY_NS", 10**18)  # every file changed just before: none kept
    assert tree()[1] == 1
    assert tree()[1] == 1
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    with open(path, "r+b") as f:  # the same size, other text in the middle
        data = f.read()
        at = data.index(b"appended later")
        f.seek(at)
        f.write(b"APPENDED")
    time.sleep(0.1)
    out, draws = tree()
    assert "APPENDED later" in out and draws == 1
    assert tree()[1] == 0
    with open(path, "a", encoding="utf-8") as f:  # a line pi skips: reported each time, never kept
        f.write("not json\n")
    time.sleep(0.1)
    for _ in range(2):
        assert tree()[1] == 1
        assert "1 line skipped" in errors[0]


def test_a_kept_view_holds_for_the_time_zone_it_was_made_in(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tz: Callable[[str], None],
):
    """A time without an offset is a local time: the order of siblings in the tree, and the
    context's timestamps, change with the time zone (a view kept in another printed the old)."""
    from pi_session_server.cli import main

    _keep_views_of_every_file(tmp_path, monkeypatch)
    path = tmp_path / "s.jsonl"
    lines = [
        S.header(),
        S.user("root", None, "root"),
        S.user("local", "root", "LOCAL-TIME reply", timestamp="2026-03-14T09:12:07"),
        S.user("utc", "root", "UTC reply", timestamp="2026-03-14T05:00:00.000Z"),
        json.dumps(  # (its timestamp is the context message's)
            {"type": "branch_summary", "id": "sum", "parentId": "local", "timestamp": "2026-03-14T10:00:00",
             "fromId": "local", "summary": "left"}
        ),
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    time.sleep(0.1)
    shown: dict[tuple[str, str], str] = {}
    for zone in ("UTC", "Asia/Tokyo", "UTC"):
        tz(zone)
        for command in (["tree"], ["context", "--json", "--leaf", "sum"]):
            assert main([*command, str(path)]) == 0
            kept_or_made = capsys.readouterr().out
            assert main([*command, "--no-index", str(path)]) == 0
            assert kept_or_made == capsys.readouterr().out
            shown.setdefault((zone, command[0]), kept_or_made)
    assert shown["UTC", "tree"] != shown["Asia/Tokyo", "tree"]  # the siblings swapped
    assert shown["UTC", "context"] != shown["Asia/Tokyo", "context"]


def _comb_session(path: Path, depth: int) -> Path:
    """A session whose every entry on its main line is a branch point (a side reply hangs off each):
    each branch point indents what follows it, so its drawn text grows with the square of ``depth``."""
    lines = [S.header()]
    parent = None
    for n in range(depth):
        lines.append(S.user(f"m{n}", parent, f"main line {n}"))
        lines.append(S.user(f"s{n}", f"m{n}", f"side reply {n}"))
        parent = f"m{n}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_deep_tree_is_written_as_it_is_drawn_and_a_view_too_big_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``tree`` writes its text a batch of lines at a time (a deep tree's text can be many times
    its session's size: never held whole), the same text as drawn at once; a view over
    view_store.MAX_VIEW_BYTES is not kept (drawn again next time), a smaller one is."""
    from pi_session_server.cli import main
    from pi_session_server.commands import tree_draw as tree_command
    from pi_session_server.session import view_store

    _keep_views_of_every_file(tmp_path, monkeypatch)
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    path = _comb_session(tmp_path / "comb.jsonl", 300)
    time.sleep(0.1)
    writes: list[int] = []
    from pi_session_server.commands import tree as tree_printing

    real_write = tree_command.write_encoded
    for module in (tree_command, tree_printing):  # drawn, or printed from the kept view
        monkeypatch.setattr(
            module, "write_encoded", lambda data, enc: writes.append(len(data)) or real_write(data, enc)
        )
    monkeypatch.setattr(tree_command, "BATCH_LINES", 64)

    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        whole = "\n".join(tree_command.tree_lines(sm, 100)) + "\n"
    assert whole.count("\n") == 600 and len(whole) > 300 * 300  # the square of the depth
    monkeypatch.setattr(view_store, "MAX_VIEW_BYTES", len(whole.encode()) - 1)
    assert main(["tree", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.endswith(whole) and len(writes) == 10  # 600 lines, 64 at a time
    assert list((tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE))) == []  # too big to keep
    writes.clear()
    assert main(["tree", str(path)]) == 0
    assert capsys.readouterr().out == out and len(writes) == 10  # drawn again
    monkeypatch.setattr(view_store, "MAX_VIEW_BYTES", len(whole.encode()))
    assert main(["tree", str(path)]) == 0
    assert capsys.readouterr().out == out
    assert (
        len(list((tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE)))) == 1
    )  # small enough: kept
    writes.clear()
    assert main(["tree", str(path)]) == 0
    assert capsys.readouterr().out == out and len(writes) == 1  # printed from the kept view


# ---------------------------------------------------------------------- the context command, kept views


def test_a_kept_context_is_built_again_whenever_anything_it_was_built_from_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``context`` of a file unchanged since it was printed the same way prints the text kept with
    its index (session/view_store.py), without opening the session; another release, leaf, form
    (JSON or Markdown) or file name, a line appended, a rewrite in place, a kept view damaged: built
    again, each time the same as without anything kept. A leaf not found, or lines pi skips, are
    reported each time and never kept."""
    from pi_session_server.cli import main
    from pi_session_server.commands import context as context_command
    from pi_session_server.session import view_store

    _keep_views_of_every_file(tmp_path, monkeypatch)
    opened: list[int] = []
    real_open = context_command.open_to_look
    monkeypatch.setattr(
        context_command, "open_to_look", lambda *args, **kw: opened.append(1) or real_open(*args, **kw)
    )
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=3)
    errors: list[str] = []

    def context(*extra: str, file: Path = path, code: int = 0) -> tuple[str, int]:
        opens = len(opened)
        assert main(["context", *extra, str(file)]) == code
        out, err = capsys.readouterr()
        built = len(opened) - opens
        assert main(["context", "--no-index", *extra, str(file)]) == code
        assert capsys.readouterr() == (out, err)  # the same as built without anything kept
        errors[:] = [err]
        return out, built

    time.sleep(0.1)
    first, built = context("--json")
    assert built == 1 and json.loads(first)["messages"]
    (kept,) = (tmp_path / "index").glob("*" + view_store.suffix(view_store.CONTEXT))
    assert context("--json") == (first, 0)  # the kept view, the session not opened
    markdown, built = context()
    assert built == 1 and markdown != first  # another form: built, and kept in its place
    assert context() == (markdown, 0)
    assert context("--pi", "0.86.1")[1] == 1
    assert context("--pi", "0.86.1")[1] == 0
    middle = json.loads(path.read_text(encoding="utf-8", errors="surrogatepass").splitlines()[5])["id"]
    at_middle, built = context("--json", "--leaf", middle)
    assert built == 1 and at_middle != first
    assert context("--json", "--leaf", middle) == (at_middle, 0)
    assert context("--json", "--leaf", "nowhere", code=1)[1] == 1  # not found: said, nothing kept
    assert "Entry nowhere not found" in errors[0]
    assert context("--json", "--leaf", "nowhere", code=1)[1] == 1
    linked = tmp_path / "other-name.jsonl"
    os.link(path, linked)  # the same file under another name: the Markdown's title names it
    time.sleep(0.1)  # (a link changes the file's ctime)
    renamed, built = context(file=linked)
    assert built == 1 and "other-name.jsonl" in renamed
    assert context(file=linked) == (renamed, 0)
    for damaged in (b"", kept.read_bytes()[:-3], b"PIVIEW\x00\x00" + os.urandom(100)):
        kept.write_bytes(damaged)
        assert context(file=linked)[1] == 1
    with open(path, "a", encoding="utf-8") as f:  # appended: the leaf moved
        f.write(S.user("late1", "i33", "appended later") + "\n")
    out, built = context("--json")
    assert "appended later" in out and built == 1
    time.sleep(0.1)
    context("--json")
    assert context("--json")[1] == 0
    with open(path, "r+b") as f:  # the same size, other text in the middle
        data = f.read()
        f.seek(data.index(b"appended later"))
        f.write(b"APPENDED")
    time.sleep(0.1)
    out, built = context("--json")
    assert "APPENDED later" in out and built == 1
    assert context("--json")[1] == 0
    with open(path, "a", encoding="utf-8") as f:  # a line pi skips: reported each time, never kept
        f.write("not json\n")
    time.sleep(0.1)
    for _ in range(2):
        assert context("--json")[1] == 1
        assert "1 line skipped" in errors[0]


# ---------------------------------------------------------------------- the check command, kept problems


def test_kept_problems_are_found_again_whenever_anything_they_were_found_in_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``check`` of a file unchanged since it was checked the same way prints the problems kept
    with its index (commands/check_report.py), without analysing it; another release, a line
    appended, a rewrite in place, a kept view damaged or holding what check does not write, a file
    changed just before: analysed again, each time printing what an analysis without anything kept
    prints, in both forms and at every severity."""
    from pi_session_server.cli import main
    from pi_session_server.commands import check_analysis
    from pi_session_server.session import view_store

    _keep_views_of_every_file(tmp_path, monkeypatch)
    analysed: list[str] = []
    real_report = check_analysis.report_file
    monkeypatch.setattr(
        check_analysis,
        "report_file",
        lambda path, pi, end=None: analysed.append(pi) or real_report(path, pi, end=end),
    )
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=3)
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join([S.header(), S.user("a", None, "first"), S.user("b", "a", "then")]) + "\n")
    with open(path, "a", encoding="utf-8") as f:  # problems: a line cut off, an orphan tool result
        f.write('{"type":"message","id":"cut"\n')
        f.write(S.tool_result("orphan", "i33", "no-such-call") + "\n")

    def check(*extra: str) -> tuple[str, int]:
        """(what ``check`` prints of both files, how many files it analysed)."""
        outputs, analyses = [], 0
        for form in ((), ("--json",), ("--min-severity", "error", "-q")):
            before = len(analysed)
            code = main(["check", "--no-progress", *form, *extra, str(path), str(clean)])
            out, err = capsys.readouterr()
            analyses = max(analyses, len(analysed) - before)
            assert (
                main(["check", "--no-progress", "--no-index", *form, *extra, str(path), str(clean)]) == code
            )
            assert capsys.readouterr() == (out, err)  # the same as analysed without anything kept
            assert code == 1 and not err
            outputs.append(out)
        return "\n".join(outputs), analyses

    time.sleep(0.1)
    first, analyses = check()
    assert analyses == 2 and "PI036" in first and "PI001" in first and "clean.jsonl: ok" in first
    kept = sorted((tmp_path / "index").glob("*" + view_store.suffix(view_store.CHECK)))
    assert len(kept) == 2
    assert check() == (first, 0)  # the kept problems: neither file analysed
    old, analyses = check("--pi", "0.86.1")
    assert analyses == 2 and analysed[-1] == "0.86.1"
    assert check("--pi", "0.86.1") == (old, 0)
    assert check() == (first, 2)  # one release kept at a time
    for damaged in (
        b"",
        kept[0].read_bytes()[:-3],
        b"PIVIEW\x00\x00" + os.urandom(100),
    ):
        for one in kept:
            one.write_bytes(damaged)
        assert check() == (first, 2)
    for odd in (b"{}", b"[[1,2,3]]", b'[[1,1,2,"fatal","PI001","m"]]', b'[[1,1,2,"error",1,"m"]]', b"\xff"):
        for one in (path, clean):  # a view check did not write, kept as check would keep one
            before = view_store.identity_before_open(str(one))
            assert view_store.save(str(one), before, view_store.CHECK, ("1.6.0",), "", odd)
        assert check() == (first, 2)
    with open(clean, "a", encoding="utf-8") as f:  # appended: a problem more
        f.write("not json\n")
    out, analyses = check()
    assert analyses == 1 and out != first and out.count("PI001") == first.count("PI001") + 3
    time.sleep(0.1)
    check()  # (kept once analysed when it had not changed just before)
    assert check() == (out, 0)
    with open(clean, "r+b") as f:  # the same size, other text in the middle
        data = f.read()
        f.seek(data.index(b"not json"))
        f.write(b"{} json")
    time.sleep(0.1)
    rewritten, analyses = check()
    assert analyses == 1 and rewritten != out
    assert check() == (rewritten, 0)
    monkeypatch.setattr(cache_dir, "RACY_NS", 10**18)  # every file changed just before: none used or kept
    assert check() == (rewritten, 2)
    assert check() == (rewritten, 2)


def test_problems_are_kept_of_files_smaller_than_an_index_is_kept_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """Most sessions are smaller than the files whose index is kept (1 MB by default); their
    problems are kept from check_report.KEPT_MIN_SIZE: a directory of them is not analysed again."""
    from pi_session_server.cli import main
    from pi_session_server.commands import check_analysis, check_report

    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.delenv(cache_dir.INDEX_MIN_SIZE_ENV, raising=False)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    analysed: list[str] = []
    real_report = check_analysis.report_file
    monkeypatch.setattr(
        check_analysis,
        "report_file",
        lambda path, pi, end=None: analysed.append(path) or real_report(path, pi, end=end),
    )
    small, tiny = tmp_path / "small.jsonl", tmp_path / "tiny.jsonl"
    small.write_bytes(S.generate_session(4 * check_report.KEPT_MIN_SIZE, seed=2))
    tiny.write_bytes(S.generate_session(check_report.KEPT_MIN_SIZE // 4, seed=2))
    assert small.stat().st_size < cache_dir.DEFAULT_MIN_SIZE
    time.sleep(0.1)
    outputs = []
    for _ in range(2):
        analysed.clear()
        main(["check", "--no-progress", str(small), str(tiny)])
        outputs.append(capsys.readouterr().out)
    assert analysed == [str(tiny)] and outputs[0] == outputs[1]
    assert list((tmp_path / "index").glob("*.pi-index")) == []  # (no index of either)


def test_what_check_keeps_stays_within_the_cache_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """check keeps the problems of many files and writes no index (whose write prunes the cache):
    it prunes the cache itself, which keeps what was used last within its limits."""
    from pi_session_server.cli import main
    from pi_session_server.commands import check_report

    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MAX_BYTES_ENV, "1")
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for n in range(5):
        (sessions / f"s{n}.jsonl").write_bytes(S.generate_session(2 * check_report.KEPT_MIN_SIZE, seed=n))
    time.sleep(0.1)
    main(["check", "--no-progress", str(sessions)])
    capsys.readouterr()
    kept = [p.name for p in (tmp_path / "index").iterdir()]
    assert len(kept) == 1 and kept[0].endswith(view_store.suffix(view_store.CHECK))  # the last used


@pytest.mark.parametrize("command", [["tree"], ["context", "--json"]])
def test_what_is_kept_of_a_file_changed_past_what_it_can_tell_goes_and_the_next_run_is_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
):
    """Session files are trusted to be append-only: a line edited in the middle of a file that was
    also appended to is seen only when its line is read (StaleFileError). What is kept of the file
    then goes, and the next run reads it anew."""
    from pi_session_server.cli import main

    _keep_views_of_every_file(tmp_path, monkeypatch)
    path = tmp_path / "s.jsonl"
    lines = [
        S.header(),
        *(S.user(f"u{n:03d}", f"u{n - 1:03d}" if n else None, f"turn {n}") for n in range(200)),
    ]
    path.write_text("\n".join(lines) + "\n")
    time.sleep(0.1)
    assert main([*command, str(path)]) == 0
    data = path.read_bytes()
    edited, moved = S.user("u100", "u099", "turn 100"), S.user("u100", "u098", "turn 100")  # its parent
    at = data.index(edited.encode())
    late = S.user("late", "u199", "late") + "\n"
    path.write_bytes(data[:at] + moved.encode() + data[at + len(edited) :] + late.encode())
    time.sleep(0.1)
    assert main([*command, str(path)]) == 2
    assert "run the command again" in capsys.readouterr().err
    assert main([*command, str(path)]) == 0
    again = capsys.readouterr().out
    assert main([*command, "--no-index", str(path)]) == 0
    assert again == capsys.readouterr().out


KEPT_VIEW_PROBE = """
import json, sys
from pi_session_server.cli import main
code = main(sys.argv[1:])
ours = sorted(m for m in sys.modules if m.startswith("pi_session_server."))
print(json.dumps({"code": code, "ours": ours, "msgspec": "msgspec" in sys.modules}), file=sys.stderr)
"""


@pytest.mark.slow
def test_a_kept_view_is_printed_without_importing_the_library(tmp_path: Path):
    """What makes a reopen cheap: printing a kept view (a tree, a context, the problems check found)
    imports the command, the view store and the cache directory's rules, not the session library
    nor the analysis (nor msgspec); the output is the same."""
    session = tmp_path / "s.jsonl"
    session.write_bytes(S.generate_session(50_000, seed=5))
    time.sleep(cache_dir.RACY_NS / 1e9 + 0.1)  # views are kept of a file settled (RACY_NS)
    env = dict(os.environ, PI_SESSION_INDEX_DIR=str(tmp_path / "index"), PI_SESSION_INDEX_MIN_SIZE="0")
    env.pop("PI_SESSION_NO_INDEX", None)
    builders = {"tree": "session.manager", "context": "session.manager", "check": "analysis.document"}
    for command in (["tree"], ["context"], ["context", "--json"], ["check"], ["check", "--json"]):
        runs = [
            subprocess.run(
                [sys.executable, "-c", KEPT_VIEW_PROBE, *command, str(session)],
                capture_output=True,
                timeout=120,
                cwd=ROOT,
                env=env,
            )
            for _ in range(2)
        ]
        first, again = (json.loads(run.stderr.decode().strip().splitlines()[-1]) for run in runs)
        assert first["code"] == again["code"] == 0
        assert runs[1].stdout == runs[0].stdout and runs[0].stdout
        # the first run made it; check keeps its problems, whichever form printed them
        made = f"pi_session_server.{builders[command[0]]}" in first["ours"]
        assert made == (command != ["check", "--json"])
        assert again["msgspec"] is False, command
        assert [m for m in again["ours"] if m.startswith("pi_session_server.session.")] == [
            "pi_session_server.session.cache_dir",
            "pi_session_server.session.descriptors",  # (cache_dir's: it imports none of the library)
            "pi_session_server.session.releases",
            # (tree's --filter lists the mode names: a module that imports nothing)
            *(["pi_session_server.session.tree_modes"] if command == ["tree"] else []),
            "pi_session_server.session.view_store",
        ]


# ---------------------------------------------------------------------- previews kept as a pass made them


def _kept_after_a_first_walk(
    path: Path, index_dir: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, bool]:
    """(the previews file a fresh cache's prefetch writes, as the tree command's does; whether it
    was made from what the pass made, without looking the entries up)."""
    from_the_pass: list[bool] = []
    real = preview_store._stored_parts

    def spied(listed: Any, facts: Any, calls: Any, text: Any, made: Any = None) -> Any:
        from_the_pass.append(made is not None and made.entries == listed)
        return real(listed, facts, calls, text, made)

    with monkeypatch.context() as mp:
        mp.setattr(preview_store, "_stored_parts", spied)
        with SessionManager.open(str(path), read_only=True, index=index_dir) as sm:
            entries = sm.get_entries()
            _read_from_the_file(entries)
            PreviewCache("/home/u").prefetch(entries)
    (kept,) = Path(index_dir).glob("*.pi-previews")
    return kept.read_bytes(), from_the_pass == [True]


@pytest.mark.parametrize("picks", [[0, 1, 11, 7, 12, 13], list(range(KEPT_ODD))], ids=["common", "odd"])
def test_previews_kept_as_a_pass_made_them_are_those_kept_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, picks: list[int]
):
    """The tree command's first walk keeps what its pass made as it came (preview_store.Made): the
    same file as one made by looking every entry up in the cache (a server's keeper). A walk with
    lines read the usual way (odd ones) looks them up."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    path = _write_session(tmp_path / "s.jsonl", picks, repeat=80 // len(picks) + 1)
    time.sleep(0.1)
    made, from_the_pass = _kept_after_a_first_walk(path, str(tmp_path / "first"), monkeypatch)
    assert from_the_pass == (picks != list(range(KEPT_ODD)))
    index_dir = str(tmp_path / "looked-up")
    with SessionManager.open(str(path), read_only=True, index=index_dir) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        cache = PreviewCache("/home/u", keep_in_walk=False)
        cache.prefetch(entries)
        keep = cache.keeper(entries)
        assert keep is not None and keep()
    (looked_up,) = Path(index_dir).glob("*.pi-previews")
    assert made == looked_up.read_bytes()


def test_what_a_pass_made_for_other_entries_is_not_kept_for_these(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 7], repeat=20)
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        cache = PreviewCache("/home/u", keep_in_walk=False)
        cache.prefetch(entries)
        text = partial(describe.call_text, home="/home/u")

        def stored(made: preview_store.Made | None = None) -> tuple[list[Any], Any]:
            found = preview_store._stored_parts(entries, cache.parts, cache.calls, text, made)
            assert found is not None
            parts = [part for chunk in found.parts() for part in chunk]
            calls = [calls for chunk in found.calls() for calls in chunk]
            return parts, (found.assistant_positions, found.silent, calls)

        whole = stored()
        made = preview_store.Made()
        made.entries, made.parts = entries[1:], ["not these"] * (len(entries) - 1)
        assert stored(made) == whole
        made.entries, made.parts = entries[::-1], ["not these"] * len(entries)
        assert stored(made) == whole
        assert "not these" not in whole[0]


def test_held_and_read_lines_in_one_pass(tmp_path: Path):
    """A pass over entries some of which hold their line's bytes and some not gives each once."""
    path = _write_session(tmp_path / "s.jsonl", [0, 11, 13, 7], repeat=10)
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        held = {id(e): value for e, value in preview_pass.preview_values(entries)}
        _read_from_the_file(entries[::2])
        mixed = list(preview_pass.preview_values(entries))
    assert sorted(map(id, (e for e, _ in mixed))) == sorted(held)
    assert all(held[id(e)] == value for e, value in mixed)


def test_a_walk_made_once_gives_the_previews_and_lets_them_go(tmp_path: Path, every_batch: None):
    """``previews_once()`` (the tree command's one walk) gives the previews ``previews()`` gives
    (cut to ``longest``), the tool results' made before the walk, and lets go of each once it is
    made when the walk asks each entry once."""
    path = _write_session(tmp_path / "s.jsonl", list(range(len(ODD))), repeat=2)
    with SessionManager.open(str(path), read_only=True, index=False) as sm:
        entries = sm.get_entries()
        _read_from_the_file(entries)
        expected_cache = PreviewCache("/home/u")
        calls = expected_cache.collect_tool_calls(entries)
        preview = expected_cache.previews()
        expected = [preview(e, calls) for e in entries]
        cache = PreviewCache("/home/u")
        cache.prefetch(entries)
        assert cache.parts
        calls = cache.collect_tool_calls(entries)
        preview = cache.previews_once(calls, asked_once=True)
        assert not cache.calls and all(type(part) is str for _, part in cache.parts.values())
        assert [preview(e) for e in entries] == expected
        assert not cache.parts
        cache = PreviewCache("/home/u")  # a walk that may ask an entry again holds its previews
        cache.prefetch(entries)
        once = cache.tool_calls_once(entries)
        assert once == calls and not cache.calls  # the calls taken, the facts let go
        preview = cache.previews_once(once, asked_once=False, longest=12)
        assert [preview(e) for e in entries] == [text[:12] for text in expected]
        assert [preview(e) for e in entries] == [text[:12] for text in expected]
        assert len(cache.parts) == len(entries)


def test_a_fifo_renamed_over_the_file_after_its_identity_was_taken_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The view's file is opened after its identity was taken by a stat: a FIFO renamed over it in
    between would wait for a writer for good."""
    import threading

    _keep_views_of_every_file(tmp_path, monkeypatch)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 2])
    time.sleep(0.1)
    before = view_store.identity_before_open(str(path))
    assert before is not None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.replace(fifo, path)
    found: list[Any] = []
    looking = threading.Thread(
        target=lambda: found.append(view_store.load(str(path), before, view_store.TREE, ("key",))),
        daemon=True,
    )
    looking.start()
    looking.join(10)
    if looking.is_alive():  # (let the stuck open go before failing)
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the open of the FIFO waited for a writer")
    assert found == [None]


def test_a_view_kept_from_its_parts_is_the_view_kept_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``tree`` keeps its text from the batches it wrote, never joined: the same kept view as the
    text whole, loaded the same; parts over view_store.MAX_VIEW_BYTES together are not kept."""
    _keep_views_of_every_file(tmp_path, monkeypatch)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 2])
    time.sleep(0.1)
    before = view_store.identity_before_open(str(path))
    parts = [b"first batch\n", b"", "second \u2028 batch\n".encode()]
    kept = {}
    for how, data in (("whole", b"".join(parts)), ("parts", parts)):
        assert view_store.save(str(path), before, view_store.TREE, ("k",), "\nhead\n", data)
        (place,) = (tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE))
        kept[how] = place.read_bytes()
        loaded = view_store.load(str(path), before, view_store.TREE, ("k",))
        assert loaded is not None and (loaded.head, loaded.data) == ("\nhead\n", b"".join(parts))
        place.unlink()
    assert kept["parts"] == kept["whole"]
    monkeypatch.setattr(view_store, "MAX_VIEW_BYTES", sum(map(len, parts)) - 1)
    assert not view_store.save(str(path), before, view_store.TREE, ("k",), "\nhead\n", parts)


def test_a_view_kept_from_spooled_parts_reads_each_part_back_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``tree`` spools the batches it wrote to a file in the cache directory: they are read back
    once, as they are written to the kept view (not for their size, nor for the CRC before the
    write, nor held together for it), and the kept view is the one kept from the text whole."""
    from pi_session_server.session.cache_dir import SpooledParts

    class CountedParts(SpooledParts):
        reads = 0

        def __getitem__(self, at: Any) -> Any:
            part = super().__getitem__(at)
            CountedParts.reads += 1  # (a part read: not the IndexError that ends an iteration)
            return part

    _keep_views_of_every_file(tmp_path, monkeypatch)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 2])
    time.sleep(0.1)
    before = view_store.identity_before_open(str(path))
    texts = [b"first batch\n", b"", "second \u2028 batch\n".encode(), b"third\n"]
    kept = {}
    for how in ("whole", "spooled"):
        spooled = CountedParts(str(tmp_path))
        for text in texts:
            spooled.append(text)
        data = b"".join(texts) if how == "whole" else spooled
        assert view_store.save(str(path), before, view_store.TREE, ("k",), "\nhead\n", data)
        spooled.close()
        (place,) = (tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE))
        kept[how] = place.read_bytes()
        place.unlink()
    assert kept["spooled"] == kept["whole"]
    assert CountedParts.reads == len(texts)
    too_big = CountedParts(str(tmp_path))
    too_big.append(b"x" * 10)
    monkeypatch.setattr(view_store, "MAX_VIEW_BYTES", 9)
    assert not view_store.save(str(path), before, view_store.TREE, ("k",), "\nhead\n", too_big)
    too_big.close()
    assert CountedParts.reads == len(texts)  # (its size known without reading it back)


def _one_walk_previews(
    path: Path, index: str | bool, longest: int
) -> tuple[list[Any], dict[int, Any], list[str]]:
    """The tree command's one walk of the session at ``path``: the previews its cache held and its
    tool calls after its prefetch, and the previews it shows, cut to ``longest`` characters."""
    cache = PreviewCache()
    with cache.made_while_scanning(longest=longest):
        manager = SessionManager.open(str(path), read_only=True, index=index)
    with manager:
        entries = manager.get_entries()
        cache.prefetch(entries)
        held = [part for _entry, part in cache.parts.values()]
        calls = dict(cache.calls)
        tool_calls = cache.tool_calls_once(entries)
        preview = cache.previews_once(tool_calls, asked_once=True, longest=longest)
        return held, calls, [preview(e) for e in entries]


def _kept_previews_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A session of every kind of entry, kept previews of a few of them, and its index directory."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    path = _write_session(tmp_path / "s.jsonl", [0, 1, 11, 13, 7, 3, 11, 21, 25, 27, 14], repeat=20)
    time.sleep(0.1)
    return path, str(tmp_path / "index")


def test_the_one_walk_loads_the_kept_previews_as_it_shows_them_without_their_tool_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The tree command's reopen of a file whose kept previews describe its every entry holds
    them cut to what its rows show, and no tool call (the calls kept, with their arguments, are
    not even decoded): the rows are those of the file read without its index."""
    path, index_dir = _kept_previews_setting(tmp_path, monkeypatch)
    longest = 12
    *_, expected = _one_walk_previews(path, False, longest)
    whole = _previews(path, index_dir)  # (keeps them)
    assert max(map(len, whole)) > longest
    monkeypatch.setattr(preview_store, "_decode", lambda body: pytest.fail("the tool calls decoded"))
    held, calls, shown = _one_walk_previews(path, index_dir, longest)
    assert shown == expected
    assert calls == {}
    assert len(held) == len(whole) and max(map(len, held)) <= longest


def test_previews_loaded_cut_by_the_one_walk_are_never_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Neither way previews are kept with the index (the walk's own save, and a keeper job) keeps
    the cut ones the tree command's reopen loaded, even when it would keep anything (MIN_STORED
    0): what is kept stays whole."""
    path, index_dir = _kept_previews_setting(tmp_path, monkeypatch)
    whole = _previews(path, index_dir)
    (kept,) = Path(index_dir).glob("*.pi-previews")
    stored = kept.read_bytes()
    monkeypatch.setattr(preview_store, "MIN_STORED", 0)
    cache = PreviewCache()
    with cache.made_while_scanning(longest=12):
        manager = SessionManager.open(str(path), read_only=True, index=index_dir)
    with manager:
        entries = manager.get_entries()
        cache.prefetch(entries)  # (the walk's own save)
        assert kept.read_bytes() == stored
        kept.unlink()  # (a keeper job merges what is kept: nothing is)
        job = cache.keeper(entries)
        if job is not None:
            job()
    assert not kept.exists() or _previews(path, index_dir) == whole
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    assert _previews(path, index_dir) == whole


def test_the_one_walk_keeps_the_previews_it_made_beside_those_kept_of_some_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Previews kept of some of a file's entries are loaded whole by the tree command's walk, which
    reads the rest: all of them are kept, whole, for the next walk (which loads them cut)."""
    path, index_dir = _kept_previews_setting(tmp_path, monkeypatch)
    whole = _previews(path, False)
    with SessionManager.open(str(path), read_only=True, index=index_dir) as sm:
        entries = sm.get_entries()
        PreviewCache().prefetch(entries[: len(entries) // 2])  # kept of the first half
    *_, expected = _one_walk_previews(path, False, 12)
    _, calls, shown = _one_walk_previews(path, index_dir, 12)
    assert shown == expected and calls  # (loaded whole: the calls too)
    _, calls, shown = _one_walk_previews(path, index_dir, 12)
    assert shown == expected and not calls  # (every one kept: loaded cut)
    assert _previews(path, index_dir) == whole


def test_previews_are_kept_a_chunk_at_a_time_as_they_would_be_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The previews kept with the index are encoded (a tool result's made as stored) a chunk at a
    time, never all at once (a big session's are not held a second time): what is kept is what
    one chunk of them all keeps, and is read back as the previews made."""
    path, index_dir = _kept_previews_setting(tmp_path, monkeypatch)
    whole = _previews(path, False)
    real_encode = preview_store._encode
    encoded: list[int] = []  # how many parts and calls each encoding was given

    def spied_encode(value: Any) -> bytes:
        if isinstance(value, preview_store.StoredPreviews):
            encoded.append(len(value.parts) + len(value.assistant_calls))
        elif isinstance(value, list):
            encoded.append(len(value))
        return real_encode(value)

    monkeypatch.setattr(preview_store, "_encode", spied_encode)
    kept: dict[int, Any] = {}
    for chunk in (20, len(whole)):
        monkeypatch.setattr(preview_store, "_CHUNK", chunk)
        encoded.clear()
        assert _previews(path, index_dir) == whole  # (kept)
        (place,) = Path(index_dir).glob("*.pi-previews")
        assert max(encoded) <= chunk
        body = cache_dir.unframed(place.read_bytes(), preview_store.MAGIC, preview_store.FORMAT_VERSION)
        assert body is not None
        kept[chunk] = preview_store._decode(body)
        place.unlink()
    assert len(kept[20].parts) == len(whole) and len(kept[20].assistant_calls) > 20
    assert kept[20] == kept[len(whole)]
    assert _previews(path, index_dir) == whole
    assert _previews(path, index_dir) == whole  # (read back)
