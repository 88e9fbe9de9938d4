"""Hostile files at scale: long chains, deep nesting, cycles, huge lines, millions of lines.

Each case runs in a forked child with a time bound (``run_bounded``): a hang is reported as a hang
(bounded far above the linear cost, so slow machines do not fail) instead of eating the whole run.
Files are generated at test time in tmp. ``--long`` runs the full sizes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_exercise import exercise_analysis, exercise_file, exercise_reads, exercise_writes
from reliability_helpers import ASSISTANT_BODY, HEADER, TS, chain_file, run_bounded

from pi_session_server.analysis import SessionDocument, document_diagnostics, hover, selection
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, tree_to_json

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]  # every input here is huge


def _assert_ok(result, what: str) -> None:
    assert result.finished, f"{what} did not finish within the bound ({result.seconds:.0f} s): a hang"
    assert not result.error, f"{what} crashed:\n{result.error}"


# -- a 200,000-entry chain ------------------------------------------------------------------------


def _chain_library(path: str, n: int, full: bool) -> None:
    viewer = SessionManager.open(path, read_only=True)
    assert len(viewer.get_entries()) == n
    assert len(viewer.get_branch()) == n
    roots = viewer.get_tree()
    depth, node = 0, roots[0]
    while node.children:  # walk down without recursion: the tree is one path n deep
        node, depth = node.children[0], depth + 1
    assert depth == n - 1
    if full:
        tree_to_json(roots)
    exercise_reads(viewer, 20 if full else 1)  # includes build_session_context (n messages)
    viewer.close()
    writer = SessionManager.open(path)
    ids = exercise_writes(writer)
    writer.close()
    again = SessionManager.open(path, read_only=True)
    assert all(again.get_entry(i) is not ABSENT for i in ids)
    again.close()


def test_200k_entry_chain_through_the_api(tmp_path: Path, long_run: bool):
    path = chain_file(tmp_path / "chain.jsonl", 200_000)
    _assert_ok(run_bounded(600, _chain_library, str(path), 200_000, long_run), "the 200,000-entry chain")


def _chain_analysis(path: str) -> None:
    exercise_analysis(Path(path).read_bytes())


def test_long_chain_through_the_language_features(tmp_path: Path, long_run: bool):
    n = 200_000 if long_run else 20_000
    path = chain_file(tmp_path / "chain.jsonl", n)
    _assert_ok(
        run_bounded(1200 if long_run else 240, _chain_analysis, str(path)), f"analysis of a {n}-entry chain"
    )


# -- deep nesting ----------------------------------------------------------------------------------


def deep_file(path: Path, depth: int) -> Path:
    user = (
        b'{"type":"message","id":"u1","parentId":null,"timestamp":"'
        + TS.encode()
        + b'","message":{"role":"user",'
        b'"content":' + b"[" * depth + b"]" * depth + b',"timestamp":1}}\n'
    )
    assistant = (
        b'{"type":"message","id":"a1","parentId":"u1","timestamp":"'
        + TS.encode()
        + b'","message":'
        + ASSISTANT_BODY.encode()
        + b"}\n"
    )
    custom = (
        b'{"type":"custom","customType":"d","id":"c1","parentId":"a1","timestamp":"'
        + TS.encode()
        + b'","data":'
        + b'{"a":' * depth
        + b"1"
        + b"}" * depth
        + b"}\n"
    )
    path.write_bytes(HEADER + user + assistant + custom)
    return path


def _deep_library(path: str, scratch: str) -> None:
    exercise_file(path, Path(scratch), analysis=False)
    viewer = SessionManager.open(path, read_only=True)
    value = viewer.get_entry("c1").to_json()
    depth = 0
    node = value["data"]
    while isinstance(node, dict):
        node, depth = node["a"], depth + 1
    assert depth == 100_000
    viewer.close()


def test_100k_deep_nesting_through_the_api(tmp_path: Path):
    """D8: any depth loads, builds context, re-serializes (fork, branched session, appends)."""
    path = deep_file(tmp_path / "deep.jsonl", 100_000)
    _assert_ok(run_bounded(300, _deep_library, str(path), str(tmp_path / "scratch")), "100,000-deep nesting")


def _deep_diagnostics(path: str) -> None:
    doc = SessionDocument(Path(path).read_bytes())
    document_diagnostics(doc)
    for line in range(doc.line_count):
        raw = doc.line_bytes(line)
        hover.hover(doc, line, len(raw) // 2)


def test_100k_deep_nesting_diagnostics_and_hover_finish(tmp_path: Path):
    path = deep_file(tmp_path / "deep.jsonl", 100_000)
    _assert_ok(run_bounded(20, _deep_diagnostics, str(path)), "diagnostics of a 100,000-deep line")


def test_a_line_of_nested_entry_starts_that_never_close_finishes(tmp_path: Path):
    # every `{"type":` is a place where a glued line could start (PI006); none of these objects
    # closes, so a search that scans each one to the end of the line is quadratic (finding #20)
    path = tmp_path / "nested-starts.jsonl"
    line = b'{"type":"x","a":' * 200_000
    whole = f'{{"type":"message","id":"q","parentId":null,"timestamp":"{TS}"}}'.encode()
    path.write_bytes(HEADER + line + whole + b"\n" + line + b"\n")
    _assert_ok(run_bounded(20, _deep_diagnostics, str(path)), "diagnostics of 3 MB of nested entry starts")


def _deep_selection(path: str) -> None:
    doc = SessionDocument(Path(path).read_bytes())
    raw = doc.line_bytes(3)
    selection.selection_spans(doc, 3, raw.index(b"1}"))  # the innermost value


def test_deep_nesting_selection_range_finishes(tmp_path: Path):
    path = deep_file(tmp_path / "deep.jsonl", 2_000)
    _assert_ok(run_bounded(6, _deep_selection, str(path)), "selectionRange in a 2,000-deep line")


# -- cycles ---------------------------------------------------------------------------------------


def cycle_file(path: Path, n: int) -> Path:
    """One big cycle without a root, self-parents, 2-cycles, and duplicate ids that make a cycle
    reachable from a root (D1, D2)."""
    lines = [HEADER]

    def entry(
        eid: str, parent: str | None, body: str = '{"role":"user","content":"x","timestamp":1}'
    ) -> None:
        p = "null" if parent is None else json.dumps(parent)
        lines.append(
            f'{{"type":"message","id":"{eid}","parentId":{p},"timestamp":"{TS}","message":{body}}}\n'.encode()
        )

    for i in range(n):  # c0 <- c1 <- ... <- c(n-1) <- c0
        entry(
            f"c{i}",
            f"c{(i - 1) % n}",
            ASSISTANT_BODY if i % 2 else '{"role":"user","content":"x","timestamp":1}',
        )
    for i in range(100):
        entry(f"self{i}", f"self{i}")
    for i in range(100):
        entry(f"p{i}", f"q{i}")
        entry(f"q{i}", f"p{i}")
    entry("root", None)
    entry("dup", "root")
    entry("kid", "dup")
    entry("dup", "kid")  # the duplicate id closes a cycle below the root
    path.write_bytes(b"".join(lines))
    return path


def _cycles(path: str, scratch: str, n: int) -> None:
    exercise_file(path, Path(scratch), sample=20)
    viewer = SessionManager.open(path, read_only=True)
    assert len(viewer.get_branch("c5")) == n  # D1: the walk stops before revisiting an entry
    viewer.close()


def test_parent_cycles_everywhere(tmp_path: Path, long_run: bool):
    n = 100_000 if long_run else 2_000
    path = cycle_file(tmp_path / "cycles.jsonl", n)
    _assert_ok(run_bounded(600, _cycles, str(path), str(tmp_path / "scratch"), n), "a file full of cycles")


def _analyse(path: str) -> None:
    exercise_analysis(Path(path).read_bytes())


def test_language_features_on_a_12k_entry_cycle(tmp_path: Path):
    path = cycle_file(tmp_path / "cycles.jsonl", 12_000)
    _assert_ok(run_bounded(30, _analyse, str(path)), "the language features on a 12,000-entry cycle")


def test_language_features_on_12k_entries_with_one_id(tmp_path: Path):
    path = tmp_path / "dup.jsonl"
    line = f'{{"type":"custom","customType":"x","id":"dup","parentId":null,"timestamp":"{TS}"}}\n'.encode()
    path.write_bytes(HEADER + line * 12_000)
    _assert_ok(run_bounded(30, _analyse, str(path)), "the language features on 12,000 entries with one id")


# -- huge numbers, huge lines, many lines ------------------------------------------------------------


def numbers_file(path: Path) -> Path:
    nasty = ["1e999", "-1e999", "1e-999", "-0", "123456789012345678901234567890", "0.1e400000"]
    lines = [HEADER]
    parent = "null"
    for i, number in enumerate(nasty):
        lines.append(
            f'{{"type":"message","id":{number},"parentId":{parent},"timestamp":{number},'
            f'"message":{{"role":"assistant","content":[{{"type":"text","text":"n"}}],"usage":{{"input":{number},'
            f'"output":{number},"cacheRead":0,"cacheWrite":0,"totalTokens":{number},"cost":{{"total":{number}}}}},'
            f'"provider":"p","model":"m","timestamp":{number}}}}}\n'.encode()
        )
        lines.append(
            f'{{"type":"label","id":"l{i}","parentId":{number},"timestamp":"{TS}","targetId":{number},"label":{number}}}\n'.encode()
        )
        parent = number
    path.write_bytes(b"".join(lines))
    return path


def test_numbers_beyond_double_range(tmp_path: Path):
    path = numbers_file(tmp_path / "numbers.jsonl")
    _assert_ok(
        run_bounded(120, exercise_file, str(path), tmp_path / "scratch"), "a file of 1e999 and friends"
    )


def huge_line_file(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.write(HEADER)
        f.write(
            b'{"type":"message","id":"u1","parentId":null,"timestamp":"'
            + TS.encode()
            + b'","message":{"role":"user","content":"'
        )
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            f.write(block)
        f.write(b'","timestamp":1}}\n')
        f.write(
            b'{"type":"message","id":"a1","parentId":"u1","timestamp":"'
            + TS.encode()
            + b'","message":'
            + ASSISTANT_BODY.encode()
            + b"}\n"
        )
    return path


def _huge_line(path: str, scratch: str, size: int) -> None:
    exercise_file(path, Path(scratch), sample=5)
    viewer = SessionManager.open(path, read_only=True)
    assert len(viewer.get_entry("u1")["message"]["content"]) == size
    viewer.close()


def test_single_huge_line(tmp_path: Path, long_run: bool):
    size = (100 << 20) if long_run else (16 << 20)
    path = huge_line_file(tmp_path / "huge.jsonl", size)
    _assert_ok(
        run_bounded(900 if long_run else 240, _huge_line, str(path), str(tmp_path / "scratch"), size),
        f"a single {size >> 20} MB line",
    )


def _many_lines(path: str, scratch: str, n: int) -> None:
    exercise_file(path, Path(scratch), sample=5)
    viewer = SessionManager.open(path, read_only=True)
    assert len(viewer.get_entries()) == n
    viewer.close()


def test_many_empty_object_lines(tmp_path: Path, long_run: bool):
    n = 1_000_000 if long_run else 20_000
    path = tmp_path / "objects.jsonl"
    path.write_bytes(HEADER + b"{}\n" * n)
    _assert_ok(
        run_bounded(1800 if long_run else 240, _many_lines, str(path), str(tmp_path / "scratch"), n),
        f"{n} lines of {{}}",
    )
