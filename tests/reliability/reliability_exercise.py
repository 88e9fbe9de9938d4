"""Call everything the library and the analysis offer on one (possibly hostile) file.

Used by the hostile-file tests: whatever the bytes, every call either answers or raises the
library's own ``PiSessionError`` (the reference's error for that input); anything else is a crash.
Each problem line must be reported, on its line, by the loader and by the diagnostics.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from pathlib import Path
from typing import Any

from builders import assistant_message, user_message

from pi_session_server.analysis import (
    SessionDocument,
    completion,
    document_diagnostics,
    highlights,
    hints,
    hover,
    navigation,
    repairs,
    selection,
    symbols,
)
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.session import (
    SessionManager,
    build_session_context,
    load_entries_from_file,
    tree_to_json,
)
from pi_session_server.session.loader import is_valid_header, load_exact, open_for_reading, peek_header
from pi_session_server.session.migrate import needs_migration

USER = user_message("probe", 1)
ASSISTANT = assistant_message(
    "probe",
    2,
    provider="p",
    model="m",
    usage={"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
)


def _sample(items: list[Any], limit: int) -> list[Any]:
    if len(items) <= limit:
        return items
    step = max(1, len(items) // limit)
    return items[::step][:limit] + items[-2:]


def exercise_reads(manager: SessionManager, sample: int = 25) -> None:
    """Every read of the API, on a sample of entries (all of them for small files)."""
    check_walks(manager, sample)  # first: a tree holding a cycle would make the reads below hang
    entries = manager.get_entries()
    for entry in _sample(entries, sample * 4):
        entry.to_json()
    roots = manager.get_tree()
    if len(entries) <= 50_000:  # the JSON form of a huge tree is the server's business (resource tests)
        tree_to_json(roots)
    manager.get_leaf_id()
    manager.get_leaf_entry()
    manager.get_header()
    manager.get_session_name()
    manager.get_session_id()
    manager.get_cwd()
    manager.get_session_file()
    manager.get_branch()
    manager.build_session_context()
    manager.build_context_entries()
    big = len(entries) > 50_000  # context building is O(path): once or twice is enough there
    if not big:
        build_session_context(entries, ABSENT, manager.by_id)
    manager.get_children(None)
    for n, entry in enumerate(_sample(entries, sample)):
        manager.get_entry(entry.id)
        manager.get_label(entry.id)
        manager.get_label_timestamp(entry.id)
        manager.get_branch(entry.id)
        if not big or n == 0:
            manager.build_session_context_at(entry.id)
    for entry in _sample(entries, max(1, sample // 5)):
        manager.get_children(entry.id)
    for odd in (None, "", "missing", 0, 1e999, ["x"], {"a": 1}, ABSENT):
        manager.get_entry(odd)
        manager.get_branch(odd)
        manager.get_label(odd)


def check_walks(manager: SessionManager, sample: int = 25) -> None:
    """The walks of the file's links end however the ids tangle them. A path (D1) goes from each
    entry to its parent's entry and stops where there is none, or before one already on the path
    (a cycle); it holds no entry twice. The tree (D2) holds no node under itself: the edges that
    would close a cycle are dropped."""
    by_id = manager.by_id

    def parent_of(entry: Any) -> Any:  # pi's ``parentId ? byId.get(parentId) : undefined``
        parent_id = entry.parent_id
        return by_id.get(index_key(parent_id), ABSENT) if truthy(parent_id) else ABSENT

    entries = manager.get_entries()
    paths = [manager.get_branch()]
    if len(entries) <= 50_000:  # a path can be as long as the file: a few of a huge file's are enough
        paths += [manager.get_branch(entry.id) for entry in _sample(entries, sample)]
    for path in paths:
        on_path = {id(entry) for entry in path}
        assert len(on_path) == len(path), "a path holds an entry twice"
        for parent, child in itertools.pairwise(path):
            assert parent_of(child) is parent, "a path's entry is not its successor's parent"
        if path:
            first = parent_of(path[0])
            assert first is ABSENT or id(first) in on_path, "a path stops before the root"
    # depth first, each node open while its subtree is walked; a node may hang in several places
    # (docs/DEVIATIONS.md D23), so the walk is cut after so many visits
    budget = 200_000
    walk: list[tuple[Any, bool]] = [(root, False) for root in manager.get_tree()]
    open_nodes: set[int] = set()
    while walk and budget:
        node, leaving = walk.pop()
        if leaving:
            open_nodes.discard(id(node))
            continue
        budget -= 1
        assert id(node) not in open_nodes, "the tree holds a node under itself"
        open_nodes.add(id(node))
        walk.append((node, True))
        walk.extend((child, False) for child in node.children)


def exercise_writes(manager: SessionManager) -> list[str]:
    """Every append and leaf move; returns the ids that must be in the file afterwards."""
    ids: list[str] = []
    entries = manager.get_entries()
    ids.append(manager.append_message(USER))
    ids.append(manager.append_message(ASSISTANT))
    ids.append(manager.append_thinking_level_change("high"))
    ids.append(manager.append_model_change("p", "m2"))
    ids.append(manager.append_custom_entry("probe", {"deep": [[[]]]}))
    ids.append(manager.append_custom_message_entry("probe", "text", True))
    ids.append(manager.append_session_info("name\nwith\r\nbreaks"))
    ids.append(manager.append_usage("turn", "p", "m", {"input": 1}).id)
    ids.append(manager.append_label_change(ids[0], "bookmark"))
    target = entries[len(entries) // 2].id if entries else ids[0]
    try:
        manager.branch(target)
    except PiSessionError:
        manager.branch(ids[0])  # an id the index cannot hold (e.g. ABSENT) is "not found"
    ids.append(manager.branch_with_summary(ids[0], "summary"))
    ids.append(manager.append_compaction("compacted", ids[0], 123))
    manager.reset_leaf()
    ids.append(manager.append_message(USER))
    return ids


# Open findings the broad (hypothesis) tests may run into; each is pinned by its own strict-xfail
# test. A failure with ``function`` among its 3 innermost frames and whose error mentions ``text`` is that
# finding, not a new one. Remove an entry when its finding is fixed.
KNOWN_OPEN_FINDINGS: dict[int, tuple[str, str]] = {}


def known_finding(error: str) -> int | None:
    """The open finding a child's traceback text shows, if any."""
    frames = [line.strip() for line in error.splitlines() if line.strip().startswith('File "')]
    last_line = error.strip().splitlines()[-1] if error.strip() else ""
    innermost = [frame.rsplit(" in ", 1)[-1] for frame in frames[-3:]]  # a <genexpr> may come last
    for number, (function, text) in KNOWN_OPEN_FINDINGS.items():
        if function in innermost and text in last_line:
            return number
    return None


def exercise_analysis(data: bytes) -> list[Any]:
    """Every language feature on the text; returns the diagnostics."""
    doc = SessionDocument(data)
    diagnostics = document_diagnostics(doc)
    for d in diagnostics:
        d.to_json()
    symbols.document_symbols(doc)
    folding_ranges(doc)
    last = doc.line_count - 1
    hints.inlay_hints(doc, 0, last)
    hints.code_lenses(doc)
    for fix in repairs.repairs(doc, 0, last, "/tmp/x.jsonl"):
        fix.edits()
    lines = _sample(list(range(doc.line_count)), 30)
    for n in lines:
        raw = doc.line_bytes(n)
        for offset in {0, len(raw) // 3, len(raw) // 2, max(0, len(raw) - 2), len(raw)}:
            hover.hover(doc, n, offset)
            navigation.definition(doc, n, offset)
            navigation.references(doc, n, offset)
            navigation.children_targets(doc, n)
            highlights.highlights(doc, n, offset)
            completion.completions(doc, n, offset)
            selection.selection_spans(doc, n, offset)
    # edits never crash either: delete a line, insert a newline in the middle of one
    if doc.line_count > 2:
        doc.apply_edit(1, 0, 2, 0, b"")
        middle = doc.line_bytes(0)
        doc.apply_edit(0, len(middle) // 2, 0, len(middle) // 2, b"\n")
        document_diagnostics(doc)
    return diagnostics


def exact_classification(path: str) -> tuple[Any, list[Any]]:
    """(header value, non-blank physical lines as the reference's loader classifies them)."""
    fd = open_for_reading(path)
    try:
        peek = peek_header(fd)
        exact = load_exact(fd)
    finally:
        os.close(fd)
    return peek.value, exact.lines


def check_reported_lines(path: str, manager: SessionManager, diagnostics: list[Any]) -> None:
    """Each line that is not an entry is reported, on its line, by the loader and the diagnostics."""
    header, lines = exact_classification(path)
    # files loaded through the migration path do not fill manager.problems (finding #12, CHANGELOG.md)
    loader_reports = is_valid_header(header) and not needs_migration([header])
    diagnosed: dict[int, set[str]] = {}
    for d in diagnostics:
        diagnosed.setdefault(d.line, set()).add(d.code)
    problem_lines = {p.line for p in manager.problems}
    seen_header = False
    for raw in lines:
        if raw.kind == "kept" and not seen_header:
            seen_header = True
            continue
        bad = raw.kind in ("malformed", "falsy") or (raw.kind == "kept" and not isinstance(raw.value, dict))
        if not bad:
            continue
        if loader_reports:
            assert raw.line in problem_lines, f"line {raw.line} ({raw.kind}) not reported by the loader"
        assert raw.line in diagnosed, f"line {raw.line} ({raw.kind}) has no diagnostic"
        if raw.kind == "malformed":
            assert diagnosed[raw.line] & {"PI001", "PI002", "PI006"}, (raw.line, diagnosed[raw.line])
    kept_lines = {raw.line for raw in lines if raw.kind == "kept" and isinstance(raw.value, dict)}
    for p in manager.problems:
        if p.kind in ("malformed", "glued", "falsy", "non_object"):
            assert p.line not in kept_lines, f"the loader reports line {p.line} ({p.kind}), which is an entry"


def check_lazy_equals_exact(path: str, manager: SessionManager) -> None:
    """The fast lazy loader sees the same entries as the exact (JSON.parse-like) one, in order."""
    header, lines = exact_classification(path)
    if not is_valid_header(header) or needs_migration([header]):
        return
    values = [raw for raw in lines if raw.kind == "kept"][1:]
    expected = [
        (
            raw.line,
            raw.value.get("type", ABSENT),
            raw.value.get("id", ABSENT),
            raw.value.get("parentId", ABSENT),
        )
        for raw in values
        if isinstance(raw.value, dict) and raw.value.get("type") != "session"
    ]
    got = [(e.line, e.type, e.id, e.parent_id) for e in manager.get_entries()]
    assert len(got) == len(expected), (len(got), len(expected))
    for a, b in zip(got, expected, strict=True):
        assert _same(a, b), f"lazy {a!r} != exact {b!r}"


def _same(a: Any, b: Any) -> bool:
    """Same value for the library (ints beyond 2**53 may stay exact: every consumer, through
    ``index_key``, treats them as the nearest double, as JSON.parse would hold them)."""
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return type(a) is type(b) and a == b  # the same JSON value (index_key would compare identity)
    return index_key(_as_js_number(a)) == index_key(_as_js_number(b))


def _as_js_number(value: Any) -> Any:
    if type(value) is int and abs(value) > 2**53:
        try:
            return float(value)
        except OverflowError:
            return float("inf") if value > 0 else float("-inf")
    return value


def exercise_file(
    path: str, scratch: Path, *, sample: int = 25, analysis: bool = True, writes: bool = True
) -> str:
    """Everything, on ``path`` (never modified: writes go to copies). Returns how it went."""
    before = Path(path).read_bytes()
    outcome = "opened"
    try:
        viewer = SessionManager.open(path, read_only=True)
    except PiSessionError:
        viewer = None
        outcome = "refused"
    diagnostics = exercise_analysis(before) if analysis else []
    if viewer is not None:
        with viewer:
            exercise_reads(viewer, sample)
            check_lazy_equals_exact(path, viewer)
            if analysis:
                check_reported_lines(path, viewer, diagnostics)
            viewer.refresh_from_disk()
    assert Path(path).read_bytes() == before, "a read-only open changed the file"
    with contextlib.suppress(PiSessionError):
        load_entries_from_file(path + ".missing")
    if not writes:
        return outcome
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / "copy.jsonl"
    shutil.copyfile(path, copy)
    try:
        writer = SessionManager.open(str(copy))
    except PiSessionError:
        assert viewer is None, "read-only open accepted a file that open() refused"
        assert copy.read_bytes() == before, "open() changed a file it refused"
        with contextlib.suppress(PiSessionError):
            SessionManager.fork_from(str(copy), "/elsewhere", str(scratch / "fork"))
        return outcome
    with writer:
        exercise_reads(writer, sample)
        ids = exercise_writes(writer)
        writer.refresh_from_disk()
        exercise_reads(writer, sample)
        leaf = writer.get_leaf_id()
        branched = writer.create_branched_session(leaf)
        assert branched is not ABSENT
    reopened = SessionManager.open(str(copy), read_only=True)
    with reopened:
        missing = [i for i in ids if reopened.get_entry(i) is ABSENT]
        assert not missing, f"appended entries missing after reopening: {missing}"
    forked = SessionManager.fork_from(str(copy), "/elsewhere", str(scratch / "fork"))
    with forked:
        exercise_reads(forked, 5)
    SessionManager.list("/elsewhere", str(scratch / "fork"))
    SessionManager.list_all(str(scratch))
    for _ in itertools.islice(SessionManager.list_all(str(scratch / "fork")), 3):
        pass
    return outcome
