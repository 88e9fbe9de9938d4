"""A version 1 file whose lines carry ids and links anyway (an old tool's, a hand edit's, a
half-migrated file's) reads as pi's migration makes it (vector extra/x-42): every ``id`` and
``parentId`` replaced (one chain in file order), a ``targetId``, ``fromId`` or ``firstKeptEntryId``
kept as written, naming no entry, unless a compaction's ``firstKeptEntryIndex`` gives it an id."""

from __future__ import annotations

import json
from typing import Any

import builders as S
from analysis_documents import at, make

from pi_session_server.analysis.completion import completions
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.highlights import highlights
from pi_session_server.analysis.hints import code_lenses, inlay_hints
from pi_session_server.analysis.hover import hover
from pi_session_server.analysis.jsonpath import value_span
from pi_session_server.analysis.navigation import ENTRY_REF_FIELDS, definition, references
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.session.migrate import migrate_to_current_version


def _with(line: str, **fields: Any) -> str:
    """``line`` with ``fields`` added last."""
    return line[:-1] + "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in fields.items()) + "}"


#: 0 header, no version                        position 0
#: 1 a user      id aaaa, parentId zzzz         1  the first entry: a root
#: 2 b assistant id bbbb, parentId aaaa         2
#: 3 c user      id cccc, parentId aaaa         3  read as written: a second branch at a
#: 4 label on aaaa                              4
#: 5 branch summary from bbbb                   5
#: 6 compaction keeping bbbb                    6  by id only: kept as written, names nothing
#: 7 compaction, index 8, keeping cccc          7  a later entry: it gets line 8's carried id
#: 8 d user      id dddd, parentId cccc         8
#: 9 compaction, index 2, keeping aaaa          9  the index gives it line 2's new id
#: 10 context edit of aaaa                      10
CARRIED = [
    S.header(version=None),
    S.user("aaaa", "zzzz", "a"),
    S.assistant("bbbb", "aaaa", "b"),
    S.user("cccc", "aaaa", "c"),
    S.label("llll", "cccc", "aaaa", "on a"),
    S.branch_summary("ssss", "llll", "bbbb"),
    S.compaction("kkk1", "ssss", "bbbb"),
    _with(S.compaction("kkk2", "kkk1", "cccc"), firstKeptEntryIndex=8),
    S.user("dddd", "cccc", "d"),
    _with(S.compaction("kkk3", "dddd", "aaaa"), firstKeptEntryIndex=2),
    S.context_edit("eeee", "kkk3", "aaaa"),
]


def carried() -> SessionDocument:
    doc = make(*CARRIED)
    assert doc.is_v1()
    return doc


def _migrated_names(lines: list[str]) -> dict[tuple[int, str], int | None]:
    """What each key naming an entry names once pi's migration (ours, which the conformance
    vectors hold to pi's) has made the file current: (line, key) -> the line of the entry whose
    new id it holds (None: no entry has it, or the migration removed the key)."""
    values = [json.loads(line) for line in lines]
    migrate_to_current_version(values, file_values=True)
    line_of = {v["id"]: n for n, v in enumerate(values) if n and isinstance(v.get("id"), str)}
    return {
        (n, key): line_of.get(v.get(key))
        for n, v in enumerate(values)
        if n
        for key in ENTRY_REF_FIELDS
        if key in json.loads(lines[n])
    }


def test_definition_on_each_carried_key_goes_where_pi_s_migration_points_it() -> None:
    doc = carried()
    expected = _migrated_names(CARRIED)
    found = {}
    for line, key in expected:
        span = value_span(doc.lines[line].raw, (key,))
        assert span is not None
        found[(line, key)] = next((t.line for t in definition(doc, line, span[0] + 1)), None)
    assert found == expected
    # what that is: the previous entry for each parentId, nothing for the ids kept as written, the
    # entry at the index of the compaction naming an earlier one
    assert found[(1, "parentId")] is None and found[(3, "parentId")] == 2 and found[(8, "parentId")] == 7
    assert found[(4, "targetId")] is None and found[(5, "fromId")] is None
    assert found[(10, "targetId")] is None
    assert found[(6, "firstKeptEntryId")] is None and found[(7, "firstKeptEntryId")] is None
    assert found[(9, "firstKeptEntryId")] == 2


def test_a_first_kept_index_naming_a_later_entry_names_nothing() -> None:
    # pi's migration, in file order, has not given line 8 its new id when it reaches line 7
    doc = carried()
    index = at(doc, 7, '"firstKeptEntryIndex":') + len('"firstKeptEntryIndex":')
    assert definition(doc, 7, index) == []
    text = hover(doc, 7, index)[0]  # type: ignore[index]
    assert "**names no entry**" in text and "line 9, at this position, comes after the compaction" in text
    assert "keeps nothing from before it" in hover(doc, 7, 1)[0]  # type: ignore[index]
    assert "first kept line 3" in hover(doc, 9, 1)[0]  # type: ignore[index]
    assert "keeps nothing from before it" in hover(doc, 6, 1)[0]  # type: ignore[index]


def _placed(doc: SessionDocument, found: list[Any]) -> list[tuple[int, str]]:
    return [(t.line, doc.lines[t.line].raw[t.start : t.end].decode()) for t in found]


def test_references_and_highlights_are_the_keys_naming_an_entry_once_migrated() -> None:
    doc = carried()
    # a: named by b's parentId (b follows it); not by c's parentId, the label, the edit or the
    # compaction that name its carried id
    assert _placed(doc, references(doc, 1, at(doc, 1, '"message"'))) == [(1, '"message"'), (2, '"aaaa"')]
    # b: named by c's parentId, and by the compaction whose index keeps it (the index and the
    # firstKeptEntryId the migration gives it), not by the branch summary or compaction naming bbbb
    assert _placed(doc, references(doc, 2, at(doc, 2, '"message"'))) == [
        (2, '"message"'),
        (3, '"aaaa"'),
        (9, '"aaaa"'),
        (9, "2"),
    ]
    assert [(h.target.line, h.kind) for h in highlights(doc, 3, at(doc, 3, '"aaaa"'))] == [
        (2, "declaration"),
        (3, "reference"),
        (9, "reference"),
        (9, "reference"),
    ]
    assert highlights(doc, 4, at(doc, 4, '"aaaa"')) == []


def test_hovers_say_what_pi_s_migration_makes_of_each_carried_key() -> None:
    doc = carried()

    def on(line: int, needle: str) -> str:
        return hover(doc, line, at(doc, line, needle))[0]  # type: ignore[index]

    first = on(1, '"zzzz"')
    assert first == (
        "`parentId` `zzzz`: pi's migration replaces this parentId with the previous entry's id "
        "(none: the first entry is a root)"
    )
    branch = on(3, '"aaaa"')
    assert branch.startswith(
        "`parentId` `aaaa`: pi's migration replaces this parentId with the previous entry's id\n\n---\n\n"
        "**→ `message` · assistant** no id yet (version 1) · line 3"
    )
    assert on(4, '"aaaa"') == (
        "`targetId` `aaaa`: **names no entry**: pi's migration keeps this targetId but gives every entry a new id"
    )
    assert on(5, '"bbbb"').startswith("`fromId` `bbbb`: **names no entry**")
    assert on(6, '"bbbb"').startswith("`firstKeptEntryId` `bbbb`: **names no entry**")
    assert on(7, '"cccc"') == (
        "`firstKeptEntryId` `cccc`: pi's migration replaces this firstKeptEntryId with the id "
        "firstKeptEntryIndex names (none: it names no entry before the compaction)"
    )
    assert on(9, '"aaaa"').startswith(
        "`firstKeptEntryId` `aaaa`: pi's migration replaces this firstKeptEntryId with the id "
        "firstKeptEntryIndex names\n\n---\n\n**→ `message` · assistant**"
    )
    entry = on(1, '"message"')
    assert "· depth 0 · root · 1 child ·" in entry and "not found" not in entry
    assert "aaaa" not in entry and "no id yet (version 1)" in entry
    assert "label" not in entry and "edited" not in entry  # the label and the edit name no entry


def test_the_outline_lenses_and_hints_follow_the_chain() -> None:
    doc = carried()

    def shape(symbols: list[Symbol]) -> list[Any]:
        return [(s.line, s.detail, shape(s.children)) if s.children else (s.line, s.detail) for s in symbols]

    no_id = "no id yet (version 1)"
    assert shape(document_symbols(doc)) == [
        (0, "header"),
        *((n, no_id) for n in range(1, 10)),
        (10, f"{no_id} · leaf"),
    ]
    assert [(lens.line, lens.title) for lens in code_lenses(doc)] == [
        (0, "10 entries · leaf on line 11"),
        (10, "$(target) leaf: pi continues here"),
    ]
    assert [h.label for h in inlay_hints(doc, 1, 3)] == ["depth 0", "depth 1", "depth 2"]


def test_no_entry_id_is_offered_in_a_version_1_file() -> None:
    doc = carried()
    assert completions(doc, 3, at(doc, 3, '"aaaa"')) is None
    assert completions(doc, 4, at(doc, 4, '"aaaa"')) is None
    assert completions(doc, 3, at(doc, 3, '"message"')) is not None  # the entry types still
    current = make(S.header(), S.user("aaaa", None), S.user("bbbb", "aaaa"))
    found = completions(current, 2, at(current, 2, '"aaaa"'))
    assert found is not None and [c.label for c in found.candidates] == ["aaaa"]


def test_a_tool_result_s_calls_on_its_path_come_first_as_migrated() -> None:
    # read as written, the result continues from the later call (line 3); pi's migration puts it
    # after the call on line 1
    doc = make(
        S.header(version=None),
        S.assistant("a1", None, calls=(("t1", "read", {}),)),
        S.tool_result("r2", "a3", "t1"),
        S.assistant("a3", None, calls=(("t1", "read", {}),)),
    )
    assert doc.is_v1()
    assert [t.line for t in definition(doc, 2, at(doc, 2, '"t1"'))] == [1, 3]
