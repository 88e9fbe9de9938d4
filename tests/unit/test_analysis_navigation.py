"""Navigation between entries in the analysis: definitions on values pi ignores, highlights,
children ("go to implementation") and completion of ids and entry types."""

from __future__ import annotations

import builders as S
import pytest
from analysis_documents import at, linked, make

from pi_session_server.analysis import links
from pi_session_server.analysis.completion import ENTRY_ID, ENTRY_TYPE, MAX_IDS, TOOL_CALL_ID, completions
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.highlights import DECLARATION, REFERENCE, Highlight, highlights
from pi_session_server.analysis.navigation import Target, children_targets, definition, references


def test_definition_on_a_value_pi_ignores_goes_where_pi_s_value_points() -> None:
    # JSON.parse keeps the last "parentId": the entry's parent is b, not a
    twice = S.user("c", "b").replace('"parentId":"b"', '"parentId":"a","parentId":"b"')
    doc = make(S.header(), S.user("a", None), S.user("b", "a"), twice)
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"a"'))] == [2]
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"parentId"', 0))] == [2]
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"b"'))] == [2]
    # references from the ignored value: the entry pi reads there (b), not a
    assert [t.line for t in references(doc, 3, at(doc, 3, '"a"'), include_declaration=True)] == [2, 3]


def test_definition_on_an_ignored_tool_call_id_goes_to_the_call_pi_reads() -> None:
    result = S.tool_result("d", "c", "t2").replace('"toolCallId":"t2"', '"toolCallId":"t1","toolCallId":"t2"')
    doc = make(
        S.header(),
        S.assistant("b", None, calls=(("t1", "read", {}),)),
        S.assistant("c", "b", calls=(("t2", "read", {}),)),
        result,
    )
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"t1"'))] == [2]


def marks(doc: SessionDocument, found: list[Highlight]) -> list[tuple[int, str, str]]:
    return [
        (h.target.line, doc.lines[h.target.line].raw[h.target.start : h.target.end].decode(), h.kind)
        for h in found
    ]


def test_highlights_of_an_entry_from_its_id_and_from_every_key_naming_it() -> None:
    doc = linked()
    expected = [
        (2, '"b"', DECLARATION),
        (3, '"b"', REFERENCE),  # parentId
        (4, '"b"', REFERENCE),  # targetId
        (6, '"b"', REFERENCE),  # fromId
    ]
    assert marks(doc, highlights(doc, 2, at(doc, 2, '"b"'))) == expected
    assert marks(doc, highlights(doc, 3, at(doc, 3, '"b"'))) == expected  # on parentId's value
    assert marks(doc, highlights(doc, 4, at(doc, 4, '"targetId"'))) == expected  # on the key
    assert marks(doc, highlights(doc, 6, at(doc, 6, '"fromId"'))) == expected
    on_first_kept = highlights(doc, 5, at(doc, 5, '"firstKeptEntryId"'))
    assert marks(doc, on_first_kept) == [
        (1, '"a"', DECLARATION),
        (2, '"a"', REFERENCE),
        (5, '"a"', REFERENCE),
        (6, '"a"', REFERENCE),
    ]


def test_highlights_of_a_tool_call_and_its_result() -> None:
    doc = linked()
    expected = [(2, '"t1"', DECLARATION), (3, '"t1"', REFERENCE)]
    assert marks(doc, highlights(doc, 2, at(doc, 2, '"t1"'))) == expected
    assert marks(doc, highlights(doc, 3, at(doc, 3, '"t1"'))) == expected


def test_no_highlights_away_from_ids_or_on_an_id_naming_nothing() -> None:
    doc = make(S.header(), S.user("a", None, "some text"), S.user("b", "gone"))
    assert highlights(doc, 1, at(doc, 1, "some text")) == []
    assert highlights(doc, 2, at(doc, 2, '"gone"')) == []
    assert highlights(doc, 0, 1) == []


def test_highlights_of_a_shadowed_duplicate_id_stop_at_itself() -> None:
    # pi's index keeps the later of two entries with one id: the child names the later one
    doc = make(S.header(), S.user("a", None), S.user("a", None, "again"), S.user("c", "a"))
    assert marks(doc, highlights(doc, 1, at(doc, 1, '"a"'))) == [(1, '"a"', DECLARATION)]
    assert marks(doc, highlights(doc, 3, at(doc, 3, '"a"'))) == [
        (2, '"a"', DECLARATION),
        (3, '"a"', REFERENCE),
    ]


def test_children_of_an_entry_anywhere_on_its_line() -> None:
    doc = linked()
    assert [t.line for t in children_targets(doc, 1)] == [2, 6]
    assert [doc.lines[t.line].raw[t.start : t.end] for t in children_targets(doc, 1)] == [b'"b"', b'"s"']
    assert [t.line for t in children_targets(doc, 4)] == [5]
    assert children_targets(doc, 6) == []  # a leaf
    assert children_targets(doc, 0) == []  # the header
    assert children_targets(doc, 99) == []


def test_children_in_a_version_1_file_follow_pi_s_migration() -> None:
    doc = make(
        '{"type":"session","id":"s","timestamp":"2026-11-30T09:13:48.180Z","cwd":"/w"}',
        '{"type":"message","timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":"hi","timestamp":1}}',
        '{"type":"message","timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":"yo","timestamp":1}}',
    )
    assert doc.is_v1()
    assert [t.line for t in children_targets(doc, 1)] == [2]


def inside(doc: SessionDocument, line: int, needle: str) -> int:
    """The byte offset right after ``needle`` on ``line`` (a cursor typing there)."""
    raw = doc.lines[line].raw
    return raw.index(needle.encode()) + len(needle.encode())


def test_completion_of_a_parent_id_offers_the_entries_before_nearest_first() -> None:
    doc = make(S.header(), S.user("a1", None), S.user("b2", "a1"), S.user("c3", "b2"), S.user("d4", "c3"))
    raw = doc.lines[3].raw
    found = completions(doc, 3, inside(doc, 3, '"parentId":"'))
    assert found is not None and not found.incomplete and found.names == ENTRY_ID
    # the whole content of the string is replaced
    assert raw[found.start : found.end] == b"b2"
    assert [c.label for c in found.candidates] == ["b2", "a1"]  # before (nearest first); d4 is c3's child
    assert found.candidates[0].detail == "message · line 3 · user: hello"
    assert found.candidates[0].new_text == "b2"


def test_completion_of_a_parent_id_leaves_out_the_entries_below_the_line_s_entry() -> None:
    """A parentId naming the entry itself or one below it would make a cycle (pi loses the branch
    from every path): only the others are offered, those of other branches after the line too."""
    doc = make(
        S.header(),
        S.user("a1", None),
        S.user("b2", "a1"),
        S.user("c3", "b2"),
        S.user("d4", "c3"),
        S.user("x5", "a1"),
        S.user("e6", "d4"),
        S.user("y7", "x5"),
    )
    found = completions(doc, 3, inside(doc, 3, '"parentId":"'))
    assert found is not None and [c.label for c in found.candidates] == ["b2", "a1", "x5", "y7"]
    on_root = completions(doc, 1, inside(doc, 1, '"parentId":'))  # null: no string, nothing offered
    assert on_root is None
    # a line being typed (no entry yet): where it would sit is not known, every id is offered
    typed = '{"type":"message","id":"c3","parentId":"'
    typing = make(S.header(), S.user("a1", None), S.user("b2", "a1"), typed, S.user("d4", "c3"))
    found = completions(typing, 3, len(typed))
    assert found is not None and [c.label for c in found.candidates] == ["b2", "a1", "d4"]


def test_completion_filters_by_what_is_typed_and_says_the_list_is_incomplete() -> None:
    doc = make(S.header(), S.user("aa", None), S.user("ab", "aa"), S.user("bb", "ab"), S.user("x", "b"))
    found = completions(doc, 4, inside(doc, 4, '"parentId":"b'))
    assert found is not None and found.incomplete  # "aa" and "ab" were left out
    assert [c.label for c in found.candidates] == ["bb", "ab"]
    assert doc.lines[4].raw[found.start : found.end] == b"b"


def test_completion_is_bounded_on_a_long_session() -> None:
    lines = [S.header(), S.user("e0", None)] + [S.user(f"e{i}", f"e{i - 1}") for i in range(1, 200)]
    doc = make(*lines)
    found = completions(doc, 150, inside(doc, 150, '"parentId":"'))
    assert found is not None and found.incomplete
    assert len(found.candidates) == MAX_IDS
    assert [c.label for c in found.candidates[:3]] == ["e148", "e147", "e146"]


def test_completion_inside_an_unterminated_string_and_in_other_keys() -> None:
    doc = make(S.header(), S.user("a", None), S.label("l", "a", "a"), '{"type":"label","targetId":"l}')
    raw = doc.lines[3].raw
    found = completions(doc, 3, len(raw) - 1)  # typed "l"; the string runs on over the brace
    assert found is not None and raw[found.start : found.end] == b"l"  # the brace stays
    assert [(c.label, c.new_text) for c in found.candidates] == [("l", 'l"')]  # and the string is closed
    assert found.incomplete  # "a" was left out
    on_target = completions(doc, 2, inside(doc, 2, '"targetId":"'))
    assert on_target is not None and [c.label for c in on_target.candidates] == ["a"]


def test_completion_of_a_tool_call_id_offers_the_calls_before_nearest_first() -> None:
    doc = make(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t1", "read", {}), ("t2", "bash", {}))),
        S.tool_result("c", "b", "t1"),
        S.tool_result("d", "c", "x"),
        S.assistant("e", "d", calls=(("t3", "read", {}),)),
    )
    found = completions(doc, 4, inside(doc, 4, '"toolCallId":"'))
    assert found is not None and found.names == TOOL_CALL_ID and not found.incomplete
    assert doc.lines[4].raw[found.start : found.end] == b"x"  # the whole id is replaced
    assert [c.label for c in found.candidates] == ["t1", "t2", "t3"]
    assert found.candidates[0].detail.startswith("message · line 3 · ")
    typed = completions(doc, 3, inside(doc, 3, '"toolCallId":"t'))
    assert typed is not None and typed.incomplete is False
    assert [c.label for c in typed.candidates] == ["t1", "t2", "t3"]
    assert completions(doc, 2, inside(doc, 2, '"id":"t')) is None  # a call's own id names nothing


def test_no_completion_outside_such_a_string() -> None:
    doc = make(S.header(), S.user("a", None, "text"), S.user("b", "a"))
    assert completions(doc, 2, at(doc, 2, '"parentId"')) is None  # on the key
    assert completions(doc, 2, inside(doc, 2, '"parentId":')) is None  # before the opening quote
    assert completions(doc, 2, inside(doc, 2, '"parentId":"a"')) is None  # after the closing quote
    assert completions(doc, 1, inside(doc, 1, '"te')) is None  # message text
    assert completions(doc, 1, inside(doc, 1, '"id":"')) is None  # an entry's own id is not a reference


def test_completion_of_entry_types_follows_the_pi_release() -> None:
    newest = make(S.header(), S.user("a", None))
    found = completions(newest, 1, inside(newest, 1, '"type":"'))
    assert found is not None and found.names == ENTRY_TYPE and not found.incomplete
    labels = [c.label for c in found.candidates]
    assert labels[0] == "message" and "context_edit" in labels and "session" not in labels
    assert newest.lines[1].raw[found.start : found.end] == b"message"
    older = SessionDocument("\n".join([S.header(), S.user("a", None)]) + "\n", pi="0.86.1")
    found = completions(older, 1, inside(older, 1, '"type":"'))
    assert found is not None and "context_edit" not in [c.label for c in found.candidates]
    header = completions(newest, 0, inside(newest, 0, '"type":"'))
    assert header is not None and header.candidates[0].label == "session"


def test_completion_writes_an_id_as_json_string_content() -> None:
    doc = make(S.header(), S.user('q"1', None), S.user("b", "x"))
    found = completions(doc, 2, inside(doc, 2, '"parentId":"'))
    assert found is not None and found.candidates[0].new_text == 'q\\"1'


def test_completion_writes_and_filters_an_id_as_the_document_writes_it() -> None:
    """An id with a quote, a backslash or a control character is JSON-escaped in the file, and one
    with non-ASCII characters may be written as \\u escapes: what the user types is that form, so
    an item writes it and is filtered by it, and what is typed narrows the list as the id it spells."""
    quoted = S.user('say "hi" \\ \x1b', None)  # pi's JSON: "say \"hi\" \\ \u001b"
    escaped = S.user("é9", "x").replace('"é9"', '"\\u00e99"')  # another writer's: "\u00e99"
    doc = make(S.header(), quoted, escaped, S.user("n3", "x"))
    found = completions(doc, 3, inside(doc, 3, '"parentId":"'))
    assert found is not None
    assert [(c.label, c.written, c.new_text) for c in found.candidates] == [
        ("é9", "\\u00e99", "\\u00e99"),
        ('say "hi" \\ \x1b', 'say \\"hi\\" \\\\ \\u001b', 'say \\"hi\\" \\\\ \\u001b'),
    ]
    # typed as the document writes it: narrowed to the id it spells
    for typed, expected in (
        ('say \\"h', ['say "hi" \\ \x1b']),
        ("\\u00e9", ["é9"]),
        ("\\u00", ["é9", 'say "hi" \\ \x1b']),  # an escape cut short: not read yet
        ("\\\\ \\u001", ['say "hi" \\ \x1b']),
    ):
        line = S.user("n3", "typed").replace('"parentId":"typed"', f'"parentId":"{typed}"')
        typing = make(S.header(), quoted, escaped, line)
        found = completions(typing, 3, inside(typing, 3, f'"parentId":"{typed}'))
        assert found is not None and [c.label for c in found.candidates] == expected, typed


def test_completion_of_a_tool_call_id_writes_it_as_its_call_does() -> None:
    call = S.assistant("a1", None, calls=(("call\t1", "read", {}),))
    doc = make(S.header(), call, S.tool_result("r2", "a1", "x"))
    found = completions(doc, 2, inside(doc, 2, '"toolCallId":"'))
    assert found is not None
    assert [(c.label, c.written) for c in found.candidates] == [("call\t1", "call\\t1")]


def _v1_message(word: str) -> str:
    return (
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"{word}","timestamp":1}}}}'
    )


def _v1_compaction(index: str) -> str:
    return (
        '{"type":"compaction","timestamp":"2025-01-01T00:00:05.000Z","summary":"s",'
        f'"firstKeptEntryIndex":{index},"tokensBefore":10}}'
    )


def version_1() -> SessionDocument:
    """A version 1 file, whose compactions name the entry they keep by position (the header's 0;
    a kept value that is no object counts, a falsy one does not)::

    0 header                    position 0
    1 user "first"              1
    2 123                       2 (no entry)
    3 false                     - (pi skips it)
    4 user "second"             3
    5 compaction 1              4   keeps line 1
    6 compaction 3              5   keeps line 4
    7 compaction 2              6   a non-object: nothing
    8 compaction 0              7   the header: nothing
    9 compaction 99             8   no value: nothing
    10 compaction 9             9   itself
    11 compaction 3 then 1      10  JSON.parse reads the last: line 1
    """
    doc = make(
        '{"type":"session","id":"v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}',
        _v1_message("first"),
        "123",
        "false",
        _v1_message("second"),
        _v1_compaction("1"),
        _v1_compaction("3"),
        _v1_compaction("2"),
        _v1_compaction("0"),
        _v1_compaction("99"),
        _v1_compaction("9"),
        _v1_compaction("3").replace(
            '"firstKeptEntryIndex":3', '"firstKeptEntryIndex":3,"firstKeptEntryIndex":1'
        ),
    )
    assert doc.is_v1()
    return doc


def spans(doc: SessionDocument, found: list[Target]) -> list[tuple[int, str]]:
    return [(t.line, doc.lines[t.line].raw[t.start : t.end].decode()) for t in found]


def test_definition_on_a_version_1_first_kept_index_goes_to_the_entry_at_that_position() -> None:
    doc = version_1()

    def defined(line: int, needle: str, occurrence: int = 0) -> list[tuple[int, str]]:
        offset = at(doc, line, needle, occurrence) + needle.startswith(":")  # (on the number)
        return spans(doc, definition(doc, line, offset))

    assert defined(5, ":1,") == [(1, '"message"')]  # an entry has no id yet: its type marks it
    assert defined(5, '"firstKeptEntryIndex"') == [(1, '"message"')]  # on the key
    assert defined(6, ":3,") == [(4, '"message"')]  # the falsy line is no position, 123 is
    assert defined(7, ":2,") == []  # 123: no entry
    assert defined(8, ":0,") == []  # the header
    assert defined(9, ":99,") == []  # past the last value
    assert defined(10, ":9,") == [(10, '"compaction"')]  # itself: keeps nothing from before it
    assert defined(11, ":3,") == [(1, '"message"')]  # the value pi ignores: the one pi reads
    assert defined(11, ":1,") == [(1, '"message"')]


def test_a_first_kept_index_names_nothing_unless_whole_and_a_number() -> None:
    for index in ("1.5", '"1"', "true", "-1", "1e400", "null"):
        doc = make(
            '{"type":"session","id":"v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}',
            _v1_message("first"),
            _v1_compaction(index),
        )
        assert definition(doc, 2, at(doc, 2, '"firstKeptEntryIndex"')) == [], index
        assert spans(doc, references(doc, 1, at(doc, 1, "first"))) == [(1, '"message"')], index


def test_references_of_a_version_1_entry_are_the_compactions_keeping_it() -> None:
    doc = version_1()
    expected = [(1, '"message"'), (5, "1"), (11, "1")]
    assert spans(doc, references(doc, 1, at(doc, 1, "first"))) == expected  # anywhere on its line
    assert spans(doc, references(doc, 5, at(doc, 5, ":1,") + 1)) == expected  # from an index naming it
    assert spans(doc, references(doc, 1, at(doc, 1, "first"), include_declaration=False)) == expected[1:]
    assert spans(doc, references(doc, 4, at(doc, 4, "second"))) == [(4, '"message"'), (6, "3")]
    assert spans(doc, references(doc, 10, at(doc, 10, '"s"'))) == [(10, '"compaction"'), (10, "9")]
    assert references(doc, 7, at(doc, 7, ":2,") + 1) == []  # an index naming no entry


def test_highlights_of_a_version_1_entry_from_its_type_and_from_an_index_naming_it() -> None:
    doc = version_1()
    expected = [(1, '"message"', DECLARATION), (5, "1", REFERENCE), (11, "1", REFERENCE)]
    assert marks(doc, highlights(doc, 1, at(doc, 1, '"message"'))) == expected
    assert marks(doc, highlights(doc, 5, at(doc, 5, ":1,") + 1)) == expected
    assert marks(doc, highlights(doc, 11, at(doc, 11, ":3,") + 1)) == expected  # the ignored one
    assert marks(doc, highlights(doc, 4, at(doc, 4, '"message"'))) == [
        (4, '"message"', DECLARATION),
        (6, "3", REFERENCE),
    ]
    assert highlights(doc, 7, at(doc, 7, ":2,") + 1) == []  # names no entry
    assert highlights(doc, 1, at(doc, 1, "first")) == []  # away from the type


def test_a_first_kept_index_means_nothing_in_a_file_of_version_2_or_later() -> None:
    line = S.compaction("k", "a", "a").replace('"firstKeptEntryId":"a"', '"firstKeptEntryIndex":1')
    doc = make(S.header(), S.user("a", None), line)
    assert definition(doc, 2, at(doc, 2, '"firstKeptEntryIndex"')) == []
    assert highlights(doc, 2, at(doc, 2, '"firstKeptEntryIndex"')) == []
    assert spans(doc, references(doc, 1, at(doc, 1, '"a"'))) == [(1, '"a"'), (2, '"a"')]  # its parentId


def test_the_compactions_keeping_each_version_1_entry_are_found_once_a_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = version_1()
    made = []
    keepers = links._keepers
    monkeypatch.setattr(links, "_keepers", lambda *args: made.append(1) or keepers(*args))
    for line in (1, 4, 1):
        references(doc, line, 0)
    highlights(doc, 1, at(doc, 1, '"message"'))
    assert len(made) == 1
    doc.apply_edit(6, 0, 6, len(doc.lines[6].raw), _v1_compaction("1"))  # line 6 now keeps line 1 too
    assert spans(doc, references(doc, 1, 0, include_declaration=False)) == [(5, "1"), (6, "1"), (11, "1")]
    assert len(made) == 2
