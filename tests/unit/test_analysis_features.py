"""Hover, symbols, navigation, folding, hints and selection in domain terms."""

from __future__ import annotations

import itertools
import random

import builders as S
import pytest
from analysis_documents import at, linked, make

from pi_session_server.analysis import jsonpath
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.analysis.hints import code_lenses, inlay_hints
from pi_session_server.analysis.hover import hover
from pi_session_server.analysis.jsonpath import is_kept, key_span, scalar_at, value_span
from pi_session_server.analysis.navigation import definition, id_target, reference_at, references
from pi_session_server.analysis.selection import selection_spans
from pi_session_server.analysis.symbols import MAX_NESTING, Symbol, document_symbols


def shape(symbols: list[Symbol]) -> list:
    return [(s.line, shape(s.children)) if s.children else s.line for s in symbols]


def test_symbols_flatten_chains_and_nest_branches() -> None:
    doc = make(
        S.header(),
        S.user("a", None),
        S.user("b", "a"),
        S.user("c", "b"),
        S.user("d", "b"),
        S.user("e", "d"),
        S.user("f", "a"),
    )
    # a -> b -> {c, d -> e}, a -> f ; a and b are branch points
    assert shape(document_symbols(doc)) == [0, (1, [(2, [3, (4, [5])]), 6])]


def test_symbols_show_every_entry_once_even_with_cycles_and_duplicates() -> None:
    doc = make(S.header(), S.user("a", None), S.user("x", "y"), S.user("y", "x"), S.user("a", None))

    def flat(symbols: list[Symbol]) -> list[int]:
        return [n for s in symbols for n in (s.line, *flat(s.children))]

    assert sorted(flat(document_symbols(doc))) == [0, 1, 2, 3, 4]


def test_deep_branching_does_not_recurse_without_bound() -> None:
    lines = [S.header(), S.user("r", None)]
    prev = "r"
    for i in range(3000):  # every entry a branch point: a side leaf and the continuation
        lines.append(S.user(f"s{i}", prev))
        lines.append(S.user(f"n{i}", prev))
        prev = f"n{i}"
    symbols = document_symbols(make(*lines))

    def depth(items: list[Symbol]) -> int:
        best = 0
        stack = [(items, 1)]
        while stack:
            current, d = stack.pop()
            for s in current:
                best = max(best, d)
                stack.append((s.children, d + 1))
        return best

    assert depth(symbols) <= 2 * MAX_NESTING + 3


def test_definition_and_references() -> None:
    doc = linked()
    ref = reference_at(doc, 3, at(doc, 3, '"t1"'))
    assert ref is not None and ref.kind == "toolCallId" and ref.value == "t1"
    assert [
        (t.line, doc.lines[t.line].raw[t.start : t.end]) for t in definition(doc, 3, at(doc, 3, '"t1"'))
    ] == [(2, b'"t1"')]
    assert [t.line for t in definition(doc, 5, at(doc, 5, '"a"'))] == [1]  # firstKeptEntryId
    assert [t.line for t in definition(doc, 6, at(doc, 6, '"b"', 0))] == [2]  # fromId
    assert [t.line for t in references(doc, 2, 0)] == [2, 3, 4, 6]  # b: declaration, child, label, fromId
    assert [t.line for t in references(doc, 1, at(doc, 1, '"a"'), include_declaration=False)] == [2, 5, 6]
    assert [t.line for t in references(doc, 2, at(doc, 2, '"t1"'))] == [2, 3]


def test_hover_texts() -> None:
    doc = make(S.header(), S.user("a", None, "x" * 2000), S.user("b", "gone"))
    found = hover(doc, 1, 5)
    assert found is not None
    text, span = found
    assert span is None and "more characters" in text and "**leaf**" not in text
    # how much more there is, after the block (in it, its emphasis would be text)
    assert text.endswith("x…\n```\n\n*(1,400 more characters)*")
    on_missing = hover(doc, 2, at(doc, 2, '"gone"'))
    assert on_missing is not None and "no entry has this id" in on_missing[0]
    assert hover(doc, 2, at(doc, 2, '"gone"'))[1] == (at(doc, 2, '"gone"') - 1, at(doc, 2, '"gone"') + 5)  # type: ignore[index]
    bad = make(S.header(), "{oops")
    assert "invalid JSON" in hover(bad, 1, 1)[0]  # type: ignore[index]


def test_a_reference_hover_s_heading_is_bold_once() -> None:
    # bold inside bold ("**→ `message` · **user****") is not CommonMark: the stars show
    doc = make(S.header(), S.user("a", None), S.user("b", "a"))
    found = hover(doc, 2, at(doc, 2, '"a"'))
    assert found is not None
    heading = found[0].split("\n")[0]
    assert heading.startswith("**→ `message` · user**") and heading.count("**") == 2, heading


def test_folding_per_user_turn() -> None:
    doc = make(
        S.header(),
        S.model_change("m", None),
        S.user("a", "m"),
        S.assistant("b", "a"),
        S.user("c", "b"),
        S.assistant("d", "c"),
        "",
    )
    assert folding_ranges(doc) == [(0, 1), (2, 3), (4, 5)]


def test_inlay_hints_only_in_range_and_lenses() -> None:
    doc = make(
        S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "a"), S.label("l", "c", "a", "start")
    )
    hints = inlay_hints(doc, 2, 3)
    assert [(h.line, h.label) for h in hints] == [(2, "depth 1 · no children"), (3, "depth 1")]
    assert hints[0].offset == len(doc.lines[2].raw)
    lenses = {lens.line: lens.title for lens in code_lenses(doc)}
    assert lenses == {
        0: "4 entries · leaf on line 5",
        1: "$(git-branch) 2 branches · label “start”",
        4: "$(target) leaf: pi continues here",
    }
    doc.set_leaf("b")  # the session held on the file branched back to b
    lenses = {lens.line: lens.title for lens in code_lenses(doc)}
    assert lenses == {
        0: "4 entries · leaf on line 3",
        1: "$(git-branch) 2 branches · label “start”",
        2: "$(target) leaf: pi continues here",
    }
    assert [h.label for h in inlay_hints(doc, 2, 2)] == ["depth 1 · no children · leaf"]
    doc.set_leaf(None)  # resetLeaf: no leaf
    assert {lens.line: lens.title for lens in code_lenses(doc)}[0] == (
        "4 entries · no leaf: the next entry starts a new root"
    )
    doc.set_leaf("gone")  # not in the document: the file's own leaf
    assert {lens.line: lens.title for lens in code_lenses(doc)}[4] == "$(target) leaf: pi continues here"
    header_only = make(S.header())  # (what pi writes before the first message)
    assert [(lens.line, lens.title) for lens in code_lenses(header_only)] == [(0, "no entries yet")]


def test_selection_spans_on_a_key_and_on_a_repeated_key() -> None:
    raw = b'{"a":{"b":1},"a":null}'
    doc = SessionDocument(S.header().encode() + b"\n" + raw)
    second_key = raw.index(b'"a"', 2)
    spans = selection_spans(doc, 1, second_key + 1)
    # the member of *this* key (not the first "a"), then the object, then the line
    assert [raw[slice(*s)] for s in spans] == [b'"a"', b'"a":null', raw]


def test_selection_spans_of_a_deep_line_stop_at_the_nearest_levels() -> None:
    from pi_session_server.analysis.selection import SELECTION_LEVELS

    depth = 5_000
    raw = b'{"type":"custom","data":' + b'{"k":' * depth + b"1" + b"}" * depth + b"}"
    doc = SessionDocument(S.header().encode() + b"\n" + raw)
    spans = selection_spans(doc, 1, raw.index(b"1}"))
    assert spans[0] == (raw.index(b"1}"), raw.index(b"1}") + 1)
    assert spans[-1] == (0, len(raw))
    assert len(spans) <= 2 * SELECTION_LEVELS + 3
    assert all(a[0] >= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(spans))


def test_selection_spans_nest() -> None:
    doc = make(S.header(), S.user("a", None, "hello 😀"))
    spans = selection_spans(doc, 1, at(doc, 1, "hello"))
    raw = doc.lines[1].raw
    assert raw[slice(*spans[0])] == '"hello 😀"'.encode()
    assert raw[slice(*spans[1])] == '"content":"hello 😀"'.encode()
    assert spans[-1] == (0, len(raw))
    assert all(a[0] >= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(spans))


def test_ranges_of_a_crlf_line_end_before_its_carriage_return() -> None:
    # an editor counts the "\r" of "\r\n" in the line break: a range past it would end on the next line
    lines = [S.header(), "", S.user("a", None) + S.user("b", "a"), S.user("c", "a"), '{"type":"message"}']
    doc = SessionDocument("\r\n".join(lines) + "\r\n")

    def text_end(line: int) -> int:
        assert doc.lines[line].raw.endswith(b"\r")
        return len(doc.lines[line].raw) - 1

    def symbols(found: list[Symbol]) -> list[Symbol]:
        return [x for s in found for x in (s, *symbols(s.children))]

    assert [(s.line, s.end) for s in symbols(document_symbols(doc))] == [(n, text_end(n)) for n in (0, 3, 4)]
    assert selection_spans(doc, 0, 3)[-1] == (0, text_end(0))
    by_code = {d.code: d for d in document_diagnostics(doc)}
    assert (by_code["PI004"].line, by_code["PI004"].end) == (1, 0)  # the blank line holds only "\r"
    assert by_code["PI006"].related[-1].end == text_end(2)  # the second piece
    assert id_target(doc.lines[4]).end == text_end(4)  # an entry without an id: the whole line
    headerless = SessionDocument("{oops\r\n")
    (missing,) = [d for d in document_diagnostics(headerless) if d.code == "PI010"]
    assert (missing.start, missing.end) == (0, len("{oops"))


def test_a_key_written_twice_is_found_where_json_parse_takes_it() -> None:
    # JSON.parse (pi) keeps the last value: the problem, the definition and the hover are there
    doc = make(
        S.header(),
        S.user("a", None).replace('"id":"a"', '"id":"old","id":"a"'),
        S.user("b", "a").replace('"parentId":"a"', '"parentId":"a","parentId":"gone"'),
    )
    (problem,) = document_diagnostics(doc)
    raw = doc.lines[2].raw
    assert problem.code == "PI031" and raw[problem.start : problem.end] == b'"gone"'
    # the first parentId is not the entry's parent: its definition is where pi's value points
    # ("gone": nowhere), not at a
    assert definition(doc, 2, at(doc, 2, '"a"')) == []
    # the id pi reads is the last one: a reference to "a" goes to it
    doc = make(doc.lines[0].raw.decode(), doc.lines[1].raw.decode(), S.user("c", "a"))
    target = definition(doc, 2, at(doc, 2, '"a"'))
    assert [(t.line, doc.lines[1].raw[t.start : t.end]) for t in target] == [(1, b'"a"')]


def test_hover_on_what_a_key_written_again_leaves_unread_says_pi_ignores_it() -> None:
    deep = "[" * 3000 + '"far down"' + "]" * 3000
    doc = make(
        S.header().replace('"cwd":"/proj"', '"cwd":"/old","cwd":"/proj"'),
        S.user("a", None),
        S.user("b", "a").replace('"parentId":"a"', '"parentId":"gone","parentId":"a"'),
        S.user("c", "b").replace('"message":', '"message":{"role":"user","content":"unread"},"message":', 1),
        S.user("d", "c").replace('"id":"d"', f'"id":"d","deep":{deep},"deep":1'),
    )
    ignored = hover(doc, 2, at(doc, 2, '"gone"'))
    assert ignored is not None
    text, span = ignored
    assert "**ignored by pi**: `parentId`" in text and '`"a"`' in text and "no entry has this id" not in text
    assert doc.lines[2].raw[span[0] : span[1]] == b'"gone"'
    on_key = hover(doc, 2, at(doc, 2, '"parentId"'))
    assert on_key is not None and "**ignored by pi**" in on_key[0] and "this key" in on_key[0]
    assert "**ignored by pi**" not in hover(doc, 2, at(doc, 2, '"parentId"', occurrence=1))[0]  # type: ignore[index]
    kept = hover(doc, 2, at(doc, 2, '"a"'))
    assert kept is not None and "→" in kept[0] and "ignored" not in kept[0]
    nested = hover(doc, 3, at(doc, 3, "unread"))
    assert (
        nested is not None
        and "**ignored by pi**: `message`" in nested[0]
        and '"content":"hello"' in nested[0]
    )
    header = hover(doc, 0, at(doc, 0, "/old"))
    assert header is not None and "`cwd`" in header[0] and '`"/proj"`' in header[0]
    inside_deep = hover(doc, 4, at(doc, 4, "far down"))
    assert inside_deep is not None and "`deep`" in inside_deep[0] and "`1`" in inside_deep[0]
    on_the_mark = hover(make("\ufeff" + S.header(), S.user("a", None)), 0, 1)  # before the object
    assert on_the_mark is not None and on_the_mark[0].startswith("### session")


def test_hover_on_a_root_parent_and_a_compaction_that_keeps_nothing() -> None:
    doc = make(
        S.header(),
        S.user("a", None),
        S.compaction("k", "a", "x").replace('"firstKeptEntryId":"x"', '"firstKeptEntryId":null'),
    )
    root = hover(doc, 1, at(doc, 1, '"parentId":null') + len('"parentId":'))
    kept = hover(doc, 2, at(doc, 2, '"firstKeptEntryId":null') + len('"firstKeptEntryId":'))
    assert root is not None and "root" in root[0] and "no entry has this id" not in root[0]
    assert kept is not None and "keeps nothing" in kept[0] and "no entry has this id" not in kept[0]


def test_session_text_in_hover_previews_is_not_markdown() -> None:
    text = "# Big ![x](https://example.com/t.png) [click](https://example.com/p) **leaf** `x`"
    doc = make(S.header(), S.user("a", None, text), S.user("b", "a"))
    found = hover(doc, 2, at(doc, 2, '"a"'))  # on the parentId: a preview of the user message
    header = hover(doc, 0, 1)  # the leaf's preview
    lenient = hover(make(S.header(), S.user("a", None), S.user("b", "a", text)), 0, 1)
    assert found is not None and header is not None and lenient is not None
    for markdown in (found[0], lenient[0]):
        assert "![x](" not in markdown and "[click](" not in markdown and "**leaf** `x`" not in markdown
        assert "https://" not in markdown
        assert r"\!\[x\]" in markdown and r"\*\*leaf\*\*" in markdown


def test_hover_on_tool_call_arguments_nested_deeper_than_the_encoder_goes() -> None:
    deep: list = []
    for _ in range(3000):
        deep = [deep]
    doc = make(S.header(), S.user("a", None), S.assistant("b", "a", calls=(("t", "read", {"k": deep}),)))
    found = hover(doc, 2, 1)
    assert found is not None and "**tool call** `read`" in found[0] and '"k": [' in found[0]


def test_labels_and_names_are_cut_in_hints_lenses_and_hovers() -> None:
    long = "L" * 200_000
    doc = make(
        S.header(),
        S.user("a", None),
        S.label("l", "a", "a", long),
        S.session_info("n", "l", long),
        S.user("b", "n"),
    )
    assert all(len(h.label) < 200 for h in inlay_hints(doc))
    assert all(len(lens.title) < 200 for lens in code_lenses(doc))
    for line in (1, 2, 3):
        found = hover(doc, line, 1)
        assert found is not None and len(found[0]) < 5_000
    on_parent = hover(doc, 4, at(doc, 4, '"n"'))  # a preview of the session_info entry
    assert on_parent is not None and len(on_parent[0]) < 1_000


@pytest.mark.parametrize(
    ("raw", "path", "expected"),
    [
        (b'{"parentId":"a","parentId":"z","x":1}', ("parentId",), b'"z"'),
        (b'{"a":{"b":1,"b":2},"a":{"c":3}}', ("a", "b"), None),  # the "a" pi keeps has no "b"
        (b'{"a":{"b":1,"b":2},"z":{"c":3}}', ("a", "b"), b"2"),
        (b'{"id":"x","m":[{"id":"y"}]}', ("id",), b'"x"'),  # an "id" inside a value is not the entry's
        (b'{"id":"x","m":[{"id":"y"}],"id":"z"}', ("id",), b'"z"'),
        (b'{"id":"x","m":[{"id":"y"}],"\\u0069d":"z"}', ("id",), b'"z"'),  # the same key, escaped
        (b'{"\\u0069d":"x","m":[{"id":"y"}],"id":"z"}', ("id",), b'"z"'),
        (b'{"id":"x","m":[{"id":"y"}], "id" :"z"', ("id",), b'"z"'),  # cut off: walked
        (b'{"id":"x","m":"\\"id\\""}', ("id",), b'"x"'),
    ],
)
@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_the_value_of_a_key_written_twice_is_the_last_one(
    raw: bytes, path: tuple, expected: bytes | None, long: bool
) -> None:
    if long:  # a line whose facts are kept for the next question: asked twice, and as other bytes
        raw = b'{"pad":"' + b"x" * 100_000 + b'",' + raw[1:]
    for asked in (raw, raw, bytes(bytearray(raw))):
        span = value_span(asked, path)
        assert (None if span is None else asked[span[0] : span[1]]) == expected
        key = key_span(asked, path)
        assert (key is None) == (expected is None)
        if key is not None and span is not None:
            assert key[1] < span[0] and asked.rfind(b'"', 0, span[0]) > key[0]  # the key of that value


def test_facts_kept_of_a_long_line_are_not_another_line_s() -> None:
    pad = b'{"pad":"' + b"x" * 100_000 + b'",'
    twice, once = pad + b'"id":"x","id":"z"}', pad + b'"id":"x","ie":"z"}'  # (the same length)
    for raw, expected in ((twice, b'"z"'), (once, b'"x"'), (twice, b'"z"')):
        span = value_span(raw, ("id",))
        assert span is not None and raw[span[0] : span[1]] == expected
        loc = scalar_at(raw, raw.index(b'"x"'))
        assert loc is not None and is_kept(raw, loc) == (expected == b'"x"')


@pytest.mark.parametrize("escapes", [False, True], ids=["plain", "escapes"])
@pytest.mark.parametrize("order", ["backwards", "shuffled"])
def test_questions_about_a_long_line_answer_as_if_each_read_it_all(
    monkeypatch: pytest.MonkeyPatch, escapes: bool, order: str
) -> None:
    # what earlier questions read of a line is kept: later ones, in any order, answer the same
    pad = "x" * 70_000
    tail = ',"s":"\\u001b","\\u0069d":"f","z":"\\u0041"' if escapes else ""
    raw = (
        f'{{"id":"a","m":[{{"id":"b","t":"{pad}"}},{{"type":"c"}}],"id":"d","type":"e",'
        f'"n":{{"k":1,"k":2}},"q":{{"id":"g","p":"{pad}"}}{tail}}}'
    ).encode()
    locs = [
        loc
        for offset in range(len(raw))
        if raw[offset : offset + 1] in b'"0123456789' and (loc := scalar_at(raw, offset + 1)) is not None
    ]
    asked = list(reversed(range(len(locs))))
    if order == "shuffled":
        random.Random(7).shuffle(asked)

    def answers() -> dict[int, tuple[bool, tuple[int, int] | None]]:
        return {i: (is_kept(raw, locs[i]), value_span(raw, locs[i].path)) for i in asked}

    monkeypatch.setattr(jsonpath, "_kept", None)
    kept = answers()
    monkeypatch.setattr(jsonpath, "_KEPT_FROM", 10**12)  # every question reads afresh
    assert kept == answers()
    assert len({loc.path for loc in locs}) > 10 and not all(k for k, _ in kept.values())


def test_hovers_along_a_long_line_read_its_object_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # each hover asks whether what is under the cursor is what pi reads: on a line of megabytes,
    # reading the whole line again for each question made every hover cost the line's length
    doc = make(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t1", "read", {"path": "/x"}),)),
        S.tool_result("c", "b", "t1", images=(("A" * 300_000, "image/png"),)),
    )
    reads: list[bytes] = []
    read = jsonpath._once_in_the_object
    monkeypatch.setattr(
        jsonpath, "_once_in_the_object", lambda raw, quoted: reads.append(quoted) or read(raw, quoted)
    )
    raw = doc.lines[3].raw
    for offset in (1, 1, raw.index(b'"message"') + 1, 1):
        assert hover(doc, 3, offset) is not None
    assert len(reads) == len(set(reads)), reads
