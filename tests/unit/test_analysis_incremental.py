"""Incremental analysis gives exactly what analysing the edited text from scratch gives."""

from __future__ import annotations

import builders as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_session_server.analysis import tree as tree_module
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument

IDS = ["a", "b", "c", "d", "e"]

LINE_POOL = [
    S.header(),
    S.header(version=2),
    "\ufeff" + S.header(),
    "",
    "   ",
    "[1]",
    "null",
    '{"type":"message","id":"b"',
    *(S.user(i, None) for i in IDS[:2]),
    *(S.user(i, p) for i in IDS for p in ("a", "c")),
    S.user("e", "e"),
    S.user("a", "x"),
    S.assistant("b", "a", calls=(("t1", "read", {}),)),
    S.assistant("d", "c", calls=(("t2", "read", {}), ("t1", "bash", {}))),
    S.tool_result("c", "b", "t1"),
    S.tool_result("e", "d", "t2"),
    S.tool_result("e", "a", "t9"),
    S.label("d", "c", "a"),
    S.label("e", "c", "zz"),
    S.compaction("e", "d", "b"),
    S.compaction("d", "c", "e"),
    S.branch_summary("c", "a", "root"),
    S.branch_summary("c", "a", "q"),
    '{"type":"future","id":"b","parentId":"d","timestamp":"x"}',
    S.context_edit("e", "c", "a", None),
    S.context_edit("d", "b", "zz", {"content": "x"}),
    S.context_edit("c", "a", "b", {"content": 5}),
    '{"type":"context_edit","id":"e","parentId":"d","timestamp":"2026-11-30T09:13:48.180Z","targetId":"c"}',
]


def snapshot(doc: SessionDocument) -> list[tuple[object, ...]]:
    diags = [
        (d.line, d.start, d.end, d.code, d.message, tuple((r.line, r.message) for r in d.related))
        for d in document_diagnostics(doc)
    ]
    tree = doc.tree
    depths = sorted((e.line, tree.depth(e)) for e in doc.entries())
    leaf_path = sorted(e.line for e in doc.leaf_path())
    kids = sorted((e.line, tuple(k.line for k in tree.kids(e))) for e in doc.entries())
    return [*diags, ("depths", tuple(depths)), ("leaf", tuple(leaf_path)), ("kids", tuple(kids))]


def _related_set(snap: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    # related information order follows index order, which is the same; compare as sets for safety
    return [tuple(sorted(x[5])) if len(x) == 6 and isinstance(x[5], tuple) else x for x in snap]


edit = st.tuples(
    st.integers(0, 30),  # start line
    st.integers(0, 3),  # extra lines to replace
    st.lists(st.sampled_from(LINE_POOL), max_size=4),
    st.booleans(),  # replace whole lines, or splice inside a line
    st.integers(0, 200),  # splice column
)


Edit = tuple[int, int, list[str], bool, int]


def check_edits(initial: list[str], edits: list[Edit]) -> None:
    doc = SessionDocument("\n".join(initial) + "\n")
    doc.first_kept()  # (kept per version: each edit must let it go)
    for start, extra, new_lines, whole, col in edits:
        n = doc.line_count
        start = min(start, n - 1)
        end = min(start + extra, n - 1)
        if whole:
            insert = "".join(line + "\n" for line in new_lines)
            doc.apply_edit(start, 0, end, 0, insert)
        else:
            insert = "\n".join(new_lines)
            doc.apply_edit(start, col, end, col, insert)
        fresh = SessionDocument(doc.text())
        assert [i.line for i in doc.lines] == list(range(doc.line_count))
        assert _related_set(snapshot(doc)) == _related_set(snapshot(fresh))
        first, first_fresh = doc.first_kept(), fresh.first_kept()
        assert (first and first.line) == (first_fresh and first_fresh.line)
        assert doc.format_version() == fresh.format_version()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINE_POOL), max_size=12), st.lists(edit, min_size=1, max_size=6))
def test_incremental_matches_rebuild(initial: list[str], edits: list[Edit]) -> None:
    check_edits(initial, edits)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINE_POOL), max_size=12), st.lists(edit, min_size=1, max_size=6))
def test_incremental_matches_rebuild_through_depths(initial: list[str], edits: list[Edit]) -> None:
    """The same with the quick ancestor look-up switched off: every ancestry test uses depths."""
    saved = tree_module._NEAR
    tree_module._NEAR = 0
    try:
        check_edits(initial, edits)
    finally:
        tree_module._NEAR = saved


def test_append_at_end_touches_only_new_lines() -> None:
    lines = [S.header(), S.user("a", None), S.assistant("b", "a", calls=(("t1", "read", {}),))]
    doc = SessionDocument("\n".join(lines) + "\n")
    before = list(doc.lines)
    doc.apply_edit(doc.line_count - 1, 0, doc.line_count - 1, 0, S.tool_result("c", "b", "t1") + "\n")
    assert doc.lines[:3] == before[:3]  # earlier line objects were kept, not rescanned
    assert doc.lines[4] is before[3]  # the empty text after the final newline moved down
    assert [d.code for d in document_diagnostics(doc)] == []


def test_unanswered_call_is_resolved_by_appended_result() -> None:
    lines = [S.header(), S.user("a", None), S.assistant("b", "a", calls=(("t1", "read", {}),))]
    doc = SessionDocument("\n".join(lines) + "\n")
    assert [d.code for d in document_diagnostics(doc)] == ["PI037"]
    doc.apply_edit(3, 0, 3, 0, S.tool_result("c", "b", "t1") + "\n")
    assert document_diagnostics(doc) == []


def test_deleting_a_middle_line_orphans_its_child_and_reparenting_fixes_it() -> None:
    lines = [S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "b")]
    doc = SessionDocument("\n".join(lines) + "\n")
    doc.apply_edit(2, 0, 3, 0, "")
    assert [(d.line, d.code) for d in document_diagnostics(doc)] == [(2, "PI031")]
    doc.apply_edit(2, 0, 3, 0, S.user("c", "a") + "\n")
    assert document_diagnostics(doc) == []


def test_edit_closing_a_cycle_and_opening_it_again() -> None:
    lines = [S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "b")]
    doc = SessionDocument("\n".join(lines) + "\n")
    doc.apply_edit(1, 0, 2, 0, S.user("a", "c") + "\n")
    assert sorted((d.line, d.code) for d in document_diagnostics(doc)) == [
        (1, "PI032"),
        (2, "PI032"),
        (3, "PI032"),
    ]
    doc.apply_edit(1, 0, 2, 0, S.user("a", None) + "\n")
    assert document_diagnostics(doc) == []


def test_an_edit_inside_an_entry_checks_nothing_below_it(monkeypatch) -> None:
    # typing in a message's text rewrites its line: its id and parentId are as they were, so the
    # entries after it keep their paths (and the tool results theirs to their calls) and are not
    # checked again
    turns = [S.user("u", None, "start")]
    for i in range(100):
        parent = "u" if i == 0 else f"r{i - 1}"
        turns += [
            S.assistant(f"a{i}", parent, calls=((f"t{i}", "read", {}),)),
            S.tool_result(f"r{i}", f"a{i}", f"t{i}"),
        ]
    doc = SessionDocument("\n".join([S.header(), *turns]) + "\n")
    assert doc.lines[1] in doc.leaf_path()
    checked: list[str] = []
    problems_of = tree_module.TreeIndex._problems_of

    def counting(self: tree_module.TreeIndex, e: object) -> object:
        checked.append(e.id)  # type: ignore[attr-defined]
        return problems_of(self, e)  # type: ignore[arg-type]

    monkeypatch.setattr(tree_module.TreeIndex, "_problems_of", counting)
    at = doc.lines[1].raw.index(b"start")
    doc.apply_edit(1, at, 1, at, "the ")
    assert sorted(checked) == ["a0", "u"]  # the entry and its child (whose parent line is new)
    assert doc.lines[1] in doc.leaf_path()  # the entry rewritten is still on the current path
    assert snapshot(doc) == snapshot(SessionDocument(doc.text()))
