"""Damaged files cost work about linear in their size whatever the damage: the work is counted
(reads of the file, calls), never timed (the figures: bench/bench_damage.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from test_analysis_long_line import counting_reads

from pi_session_server.analysis import diagnostics, tree
from pi_session_server.analysis.autofix import FIXABLE_CODES, plan_repairs
from pi_session_server.analysis.diagnostics import Diagnostic, diagnostics_of_lines, document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import repairs
from pi_session_server.server.language_conversions import LspConversions
from pi_session_server.server.language_diagnostics import DocumentDiagnostics
from pi_session_server.server.language_document_state import DocState

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
ENTRY = (
    b'{"type":"message","id":"%s","parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z",'
    b'"message":{"role":"user","content":"hello","timestamp":1}}'
)


def _file(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, *lines]) + b"\n")
    return path


def _diagnostics_counting_reads(path: Path) -> tuple[list[Diagnostic], int]:
    """The diagnostics of the file read from disk (as ``check`` and the language server read a
    file the editor does not send), and how many times a line was read again for them."""
    doc = SessionDocument.from_file(str(path))
    with counting_reads() as reads:
        found = document_diagnostics(doc)
    return found, sum(reads.values())


def test_one_line_repeated_reads_each_line_once(tmp_path: Path) -> None:
    # a crash loop writing one line again and again: every line a duplicate of every other, each
    # with the group's first lines as related lines
    count = 2_000
    path = _file(tmp_path, [ENTRY % (b"same", b"null")] * count)
    found, reads = _diagnostics_counting_reads(path)
    duplicates = [d for d in found if d.code == "PI030"]
    assert len(duplicates) == count
    assert all(len(d.related) == 20 for d in duplicates)
    # each problem's own line, and the related lines once for the pass (not once per problem)
    assert reads <= 2 * count + 100


def test_the_language_server_converts_related_lines_once(tmp_path: Path) -> None:
    # the diagnostics of a file the editor does not send, as the server sends them: each related
    # line's range is converted to the client's columns once, not once per problem it is related to
    count = 1_000
    path = _file(tmp_path, [ENTRY % (b"same", b"null")] * count)
    server: Any = SimpleNamespace(workspace=SimpleNamespace(position_encoding="utf-16"))
    features = DocumentDiagnostics(server, LspConversions(server))
    no_queue: Any = None  # the request runs here, not on a document's queue
    on_disk = DocState("file:///s.jsonl", str(path), no_queue, doc=SessionDocument.from_file(str(path)))
    in_memory = DocState("file:///s.jsonl", None, no_queue, doc=SessionDocument(path.read_bytes()))
    features.diagnostics(on_disk)  # (found as for check, counted above)
    with counting_reads() as reads:
        sent = features.lsp_diagnostics(on_disk)
    assert msgspec.json.encode(sent) == msgspec.json.encode(features.lsp_diagnostics(in_memory))
    assert len(sent) == count and all(len(d["relatedInformation"]) == 20 for d in sent)
    assert max(reads.values()) <= 4  # its own problem's two ends, and its two ends as a related line, once


def test_related_ranges_are_the_same_as_each_line_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lines of a cycle and of a duplicate group, some with trailing blanks and a CR: each related
    # range is its line's whole text, as when the line is placed by itself
    lines = [ENTRY % (b"a", b'"b"') + b"  ", ENTRY % (b"b", b'"a"') + b"\r", ENTRY % (b"a", b"null") + b"\t"]
    path = _file(tmp_path, lines * 3)
    in_memory = document_diagnostics(SessionDocument(path.read_bytes()))
    from_file, _ = _diagnostics_counting_reads(path)
    assert from_file == in_memory
    related = {(r.line, r.start, r.end) for d in from_file for r in d.related}
    raw = path.read_bytes().split(b"\n")
    assert related and all(
        (start, end) == (0, len(raw[line].rstrip(b" \t\r"))) for line, start, end in related
    )


def _calls(job: Callable[[], object]) -> int:
    """The Python function calls (and calls into C) ``job`` makes: work counted, not timed."""
    count = 0

    def counting(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(counting)
    try:
        job()
    finally:
        sys.setprofile(None)
    return count


def _repeated(count: int) -> SessionDocument:
    return SessionDocument(b"\n".join([HEADER, *[ENTRY % (b"same", b"null")] * count]) + b"\n")


def test_the_repair_plan_of_one_line_repeated_is_linear() -> None:
    # a repair on every line, each checked against the repairs planned before it
    small, large = _repeated(300), _repeated(1_200)
    plans = [plan_repairs(doc, FIXABLE_CODES) for doc in (small, large)]
    assert [len(p.applied) for p in plans] == [299, 1_199]  # every copy but the last one removed
    ratio = _calls(lambda: plan_repairs(large, FIXABLE_CODES)) / _calls(
        lambda: plan_repairs(small, FIXABLE_CODES)
    )
    assert ratio < 5  # four times the lines: four times the work, not sixteen


def _headers_everywhere(count: int) -> SessionDocument:
    # a header before every entry (files concatenated, a writer that starts each line anew)
    entries = [ENTRY % (b"e%d" % n, b'"e%d"' % (n - 1) if n else b"null") for n in range(count)]
    return SessionDocument(b"\n".join(line for entry in entries for line in (HEADER, entry)) + b"\n")


@pytest.mark.parametrize("quick_fixes", ["diagnostics of lines", "repairs"])
def test_the_quick_fixes_of_a_few_lines_among_repeated_headers_look_at_those_lines(quick_fixes: str) -> None:
    def of_lines(doc: SessionDocument) -> Callable[[], object]:
        if quick_fixes == "repairs":
            return lambda: repairs(doc, 100, 110)
        return lambda: diagnostics_of_lines(doc, 100, 110)

    small, large = _headers_everywhere(500), _headers_everywhere(4_000)
    for doc in (small, large):
        found = diagnostics_of_lines(doc, 100, 110)
        assert found == [d for d in document_diagnostics(doc) if 100 <= d.line <= 110]
        assert [d.code for d in found if d.code == "PI013"] == ["PI013"] * 6
        assert {r.code for r in repairs(doc, 100, 110)} == {"PI013"}
    # eight times the headers, the same few lines: the same work
    assert _calls(of_lines(large)) < 1.5 * _calls(of_lines(small))


def _results_on_another_branch(pairs: int) -> bytes:
    """Calls down one branch of a fork, their results down the other in reverse order: each result
    is far deeper or far shallower than its call."""

    def entry(i: str, parent: str, message: dict[str, object]) -> bytes:
        value = {"type": "message", "id": i, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z"}
        return json.dumps({**value, "message": {**message, "timestamp": 1}}).encode()

    lines = [HEADER, ENTRY % (b"root", b"null")]
    for n in range(pairs):
        call = {"type": "toolCall", "id": f"t{n}", "name": "bash", "arguments": {}}
        lines.append(entry(f"a{n}", f"a{n - 1}" if n else "root", {"role": "assistant", "content": [call]}))
    for k, n in enumerate(reversed(range(pairs))):
        result = {
            "role": "toolResult",
            "toolCallId": f"t{n}",
            "toolName": "bash",
            "content": [],
            "isError": False,
        }
        lines.append(entry(f"r{n}", f"r{n + 1}" if k else "root", result))
    return b"\n".join(lines) + b"\n"


def test_tool_results_whose_calls_are_on_another_branch_are_found_in_linear_work() -> None:
    small, large = _results_on_another_branch(250), _results_on_another_branch(1_000)
    for data, pairs in ((small, 250), (large, 1_000)):
        orphans = [d for d in document_diagnostics(SessionDocument(data)) if d.code == "PI036"]
        assert len(orphans) == pairs
        assert all(d.related[0].message == "the toolCall, on another branch" for d in orphans)
    # (the tree's problems are found as the document is made)
    ratio = _calls(lambda: SessionDocument(large)) / _calls(lambda: SessionDocument(small))
    assert ratio < 6  # four times the pairs: about four times the work (a few skips a bit of depth more)


def _unshared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each problem's related lines found and placed for it alone (as before they were shared)."""
    monkeypatch.setattr(
        tree._SharedRelated, "of", lambda self, group, e, why: tree._first_related(group, e, why)
    )
    monkeypatch.setattr(
        diagnostics.WholeLines, "related", lambda self, related: diagnostics._related_lines(related, self.of)
    )


def test_the_members_of_a_large_group_share_their_related_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    # a crash loop: every copy names the group's first 20 lines; those are placed once, not per copy
    count = 2_000
    doc = _repeated(count)
    found = document_diagnostics(doc)
    assert len(found) == count and all(len(d.related) == 20 for d in found)
    made = {id(r) for d in found for r in d.related}
    assert len(made) <= 21 * 20  # the first 21 copies' own lists, then one list for the rest
    with monkeypatch.context() as alone:
        _unshared(alone)
        assert found == document_diagnostics(_repeated(count))


@pytest.mark.parametrize(
    "edit", ["remove the first copy", "insert a copy at the start", "another id at the start"]
)
def test_shared_related_lines_follow_edits(edit: str) -> None:
    # the group's first members change under the same group: no related lines from before the edit
    doc = _repeated(60)
    document_diagnostics(doc)
    line = (ENTRY % (b"same", b"null")).decode()
    if edit == "remove the first copy":
        doc.apply_edit(1, 0, 2, 0, "")
    elif edit == "insert a copy at the start":
        doc.apply_edit(1, 0, 1, 0, line + "\n")
    else:
        doc.apply_edit(1, 0, 1, len(line), line.replace('"same"', '"other"'))
    assert document_diagnostics(doc) == document_diagnostics(SessionDocument(doc.text()))


def test_a_cycle_shares_its_related_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    count = 300
    lines = [ENTRY % (b"c%d" % n, b'"c%d"' % ((n - 1) % count)) for n in range(count)]
    data = b"\n".join([HEADER, *lines]) + b"\n"
    found = [d for d in document_diagnostics(SessionDocument(data)) if d.code == "PI032"]
    assert len(found) == count
    assert len({id(r) for d in found for r in d.related}) <= 21 * 20
    with monkeypatch.context() as alone:
        _unshared(alone)
        assert found == [d for d in document_diagnostics(SessionDocument(data)) if d.code == "PI032"]


def _shared_call_ids(pairs: int) -> bytes:
    """Calls that all have one id down one branch of a fork, results with that id down the other:
    no result is below a call of its id, so each is compared with the calls of that id."""

    def entry(i: str, parent: str, message: dict[str, object]) -> bytes:
        value = {"type": "message", "id": i, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z"}
        return json.dumps({**value, "message": {**message, "timestamp": 1}}).encode()

    lines = [HEADER, ENTRY % (b"root", b"null")]
    call = {"type": "toolCall", "id": "t", "name": "bash", "arguments": {}}
    result = {"role": "toolResult", "toolCallId": "t", "toolName": "bash", "content": [], "isError": False}
    for n in range(pairs):
        lines.append(entry(f"a{n}", f"a{n - 1}" if n else "root", {"role": "assistant", "content": [call]}))
    for n in range(pairs):
        lines.append(entry(f"r{n}", f"r{n - 1}" if n else "root", result))
    return b"\n".join(lines) + b"\n"


def test_many_tool_calls_sharing_one_id_are_paired_in_about_linear_work() -> None:
    small, large = _shared_call_ids(200), _shared_call_ids(800)
    for data, pairs in ((small, 200), (large, 800)):
        found = document_diagnostics(SessionDocument(data))
        assert [d.code for d in found].count("PI036") == pairs  # each result: no call above it
        assert [d.code for d in found].count("PI037") == pairs  # each call: no result below it
    ratio = _calls(lambda: SessionDocument(large)) / _calls(lambda: SessionDocument(small))
    assert ratio < 6  # four times the pairs: about four times the work, not sixteen


_POOL = ["t1", "t2", "t3"]


def _random_tree(rng: Any, count: int) -> bytes:
    """Entries with random parents (earlier ones as a rule; at times a missing one, a later one
    or an id again), tool calls and results whose ids come from a few."""
    ids = [f"e{n}" for n in range(count)]
    lines = [HEADER]
    for n, i in enumerate(ids):
        roll = rng.random()
        if roll < 0.05:
            parent: object = "gone"
        elif roll < 0.08:
            parent = rng.choice(ids)  # at or after it, at times: a cycle
        elif n == 0 or roll < 0.12:
            parent = None
        else:
            parent = ids[rng.randrange(max(0, n - 6), n)] if rng.random() < 0.8 else rng.choice(ids[:n])
        if rng.random() < 0.05 and n:
            i = rng.choice(ids[:n])  # an id again
        kind = rng.random()
        if kind < 0.4:
            calls = [
                {"type": "toolCall", "id": rng.choice(_POOL), "name": "x", "arguments": {}}
                for _ in range(rng.randint(1, 2))
            ]
            message: dict[str, object] = {"role": "assistant", "content": calls}
        elif kind < 0.8:
            message = {
                "role": "toolResult",
                "toolCallId": rng.choice(_POOL),
                "toolName": "x",
                "content": [],
                "isError": False,
            }
        else:
            message = {"role": "user", "content": "hi"}
        value = {"type": "message", "id": i, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z"}
        lines.append(json.dumps({**value, "message": {**message, "timestamp": 1}}).encode())
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("seed", range(40))
def test_pairs_found_by_numbering_the_tree_are_those_found_pair_by_pair(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    data = _random_tree(random.Random(seed), 120)
    with monkeypatch.context() as pairwise:
        pairwise.setattr(tree.TreeIndex, "_subtrees_for", lambda self, pairs: None)
        expected = document_diagnostics(SessionDocument(data))
    monkeypatch.setattr(tree, "_PAIRS_BEFORE_NUMBERING", -(10**9))  # numbered at the first pair
    assert document_diagnostics(SessionDocument(data)) == expected
    # and after edits (each a pass of its own over the entries it touched)
    doc = SessionDocument(data)
    rng = random.Random(seed + 1000)
    for _ in range(5):
        line = rng.randrange(1, doc.line_count - 1)
        other = doc.text().split("\n")[rng.randrange(1, doc.line_count - 1)]
        doc.apply_edit(line, 0, line + 1, 0, other + "\n")
    with monkeypatch.context() as pairwise:
        pairwise.setattr(tree.TreeIndex, "_subtrees_for", lambda self, pairs: None)
        expected = document_diagnostics(SessionDocument(doc.text()))
    assert document_diagnostics(doc) == expected


def test_the_repair_plan_of_one_line_repeated_on_disk_reads_the_kept_copy_once(tmp_path: Path) -> None:
    # each copy is compared with the one pi keeps: that one is read once for all of them
    count = 500
    path = _file(tmp_path, [ENTRY % (b"same", b"null")] * count)
    on_disk = SessionDocument.from_file(str(path))
    with counting_reads() as reads:
        plan = plan_repairs(on_disk, FIXABLE_CODES)
    assert len(plan.applied) == count - 1
    assert plan.splices() == plan_repairs(SessionDocument(path.read_bytes()), FIXABLE_CODES).splices()
    assert max(reads.values()) == 1
