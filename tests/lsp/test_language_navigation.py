"""Hovers, symbols, definitions, references, folding, inlay hints, code lenses and selection ranges
through the real server, for a UTF-16 and a UTF-8 client, on a file with emoji and U+2028."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import builders as S
import pytest
import pytest_asyncio
from language_support import Editor, client_fixture, editor_fixture, open_clean, td  # noqa: F401  (fixtures)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRICKY = "héllo 😀 数据\u2028second\u2029third"


#   0 header
#   1 a user (TRICKY)                         root, branch point (b, f)
#   2 b assistant, calls t1                    parent a
#   3 c toolResult t1                          parent b
#   4 d assistant                              parent c
#   5 e label on b "important"                 parent d
#   6 f user "other branch 🚀"                 parent a
#   7 g assistant                              parent f   <- leaf
SESSION = [
    S.header(),
    S.user("a", None, TRICKY),
    S.assistant(
        "b", "a", "let me read 😀", calls=(("t1", "read", {"path": "/x/数据.py"}),), thinking="think first"
    ),
    S.tool_result("c", "b", "t1", "file contents"),
    S.assistant("d", "c", "done"),
    S.label("e", "d", "b", "important"),
    S.user("f", "a", "other branch 🚀"),
    S.assistant("g", "f", "ok"),
]


@pytest_asyncio.fixture(loop_scope="module")
async def uri(editor: Editor) -> str:
    return await open_clean(editor, SESSION)


async def hover_text(editor: Editor, uri: str, pos: types.Position) -> str:
    result = await editor.client.text_document_hover_async(
        types.HoverParams(text_document=td(uri), position=pos)
    )
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


async def test_hover_on_an_assistant_entry(editor: Editor, uri: str) -> None:
    text = await hover_text(editor, uri, editor.pos_of(uri, 2, "let me read"))
    assert "**assistant**" in text and "`b`" in text
    assert "depth 1" in text and "parent `a` (line 2)" in text and "1 child" in text
    assert "on the current path" not in text  # b is on the abandoned branch
    assert "label** `important`" in text
    assert "anthropic / claude-sonnet-4-5" in text and "stop `toolUse`" in text
    assert "input 1,200" in text and "output 300" in text and "$0.0081" in text
    assert "*thinking:* think first" in text
    assert "**tool call** `read` `t1`" in text and "数据.py" in text
    assert "2026-11-30 09:13:48.180 UTC" in text


async def test_hover_marks_branch_point_current_path_and_leaf(editor: Editor, uri: str) -> None:
    root = await hover_text(editor, uri, editor.pos_of(uri, 1, "😀"))
    assert "**branch point**: 2 children" in root and "on the current path" in root and "root" in root
    # the content preview holds the whole text, its line separator written as its escape (an editor
    # would draw it as a box, or break the line there)
    assert "héllo 😀 数据\\u2028second" in root
    leaf = await hover_text(editor, uri, editor.pos_of(uri, 7, '"ok"'))
    assert "**leaf**" in leaf and "depth 2" in leaf


async def test_hover_on_references_summarises_the_target(editor: Editor, uri: str) -> None:
    on_parent = await hover_text(editor, uri, editor.pos_of(uri, 4, '"c"', occurrence=0))
    assert "**→ `message` · toolResult**" in on_parent and "line 4" in on_parent
    result = await editor.client.text_document_hover_async(
        types.HoverParams(text_document=td(uri), position=editor.pos_of(uri, 3, '"t1"'))
    )
    assert result is not None and result.range is not None
    assert (result.range.start.character, result.range.end.character) == editor.span(uri, 3, '"t1"')
    assert "**→ `message` · assistant** `b`" in result.contents.value  # type: ignore[union-attr]
    on_target = await hover_text(editor, uri, editor.pos_of(uri, 5, '"b"', occurrence=0))
    assert "**→ `message` · assistant**" in on_target and "let me read" in on_target


async def test_hover_on_the_header(editor: Editor, uri: str) -> None:
    text = await hover_text(editor, uri, editor.pos_of(uri, 0, "session"))
    assert "7 entries" in text and "**leaf** `g` (line 8)" in text


V1_HEADER = '{"type":"session","id":"v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}'


def v1_message(word: str) -> str:
    """A user message line of a version 1 file (no id, no parentId)."""
    return (
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"{word}","timestamp":1}}}}'
    )


def v1_compaction(index: object, summary: str = "s") -> str:
    """A compaction line of a version 1 file, naming the first entry it keeps by position."""
    return (
        f'{{"type":"compaction","timestamp":"2025-01-01T00:00:05.000Z","summary":"{summary}",'
        f'"firstKeptEntryIndex":{json.dumps(index)},"tokensBefore":10}}'
    )


async def test_hover_on_a_version_1_compaction_names_the_entry_its_position_keeps(editor: Editor) -> None:
    # pi's migration makes firstKeptEntryIndex (a position among the file's values, the header's 0)
    # the firstKeptEntryId of the entry there: the compaction keeps from line 3 on
    compaction = v1_compaction
    lines = [
        V1_HEADER,
        *(v1_message(word) for word in ("first", "second")),
        compaction(2),
        compaction(4),
        compaction(0),
        compaction(99),
    ]
    uri = editor.fresh_uri()
    await editor.open(uri, "\n".join(lines) + "\n")
    kept = []
    for line in range(3, 7):
        text = await hover_text(editor, uri, editor.pos_of(uri, line, "compaction"))
        kept.append(next(fact for fact in text.split("\n\n") if fact.startswith("**tokens before**")))
    assert kept == [
        "**tokens before** 10 · first kept line 3",
        "**tokens before** 10 · keeps nothing from before it",  # itself
        "**tokens before** 10 · keeps nothing from before it",  # the header
        "**tokens before** 10 · keeps nothing from before it",  # no value there
    ]


async def test_navigation_on_a_version_1_first_kept_index(editor: Editor) -> None:
    # a version 1 compaction names the entry it keeps by position (the header's 0; 123 counts, a
    # falsy line does not): definition, references, highlights and the hover follow it, as pi's
    # migration does, past text whose columns differ in UTF-16 and UTF-8
    uri = editor.fresh_uri()
    lines = [
        V1_HEADER,
        v1_message("first 😀 数据"),  # position 1
        "123",  # 2
        "false",  # none
        v1_message("second"),  # 3
        v1_compaction(1, "kept 😀"),  # 4
        v1_compaction(3, "kept 😀"),  # 5
        v1_compaction(2, "kept 😀"),  # 6: no entry there
        v1_compaction(1, "again 😀"),
    ]
    await editor.open(uri, "\n".join(lines) + "\n")
    doc = td(uri)

    def where(line: int, needle: str, occurrence: int = 0) -> tuple[int, int, int]:
        start = editor.pos_of(uri, line, needle, occurrence).character
        return line, start, editor.pos_of(uri, line, needle, occurrence, after=True).character

    def index_at(line: int) -> types.Position:
        return editor.pos_of(uri, line, '"firstKeptEntryIndex":', after=True)

    def index(line: int) -> tuple[int, int, int]:
        start = index_at(line).character
        return line, start, start + 1

    def placed(found: Sequence[Any] | None) -> list[tuple[int, int, int]]:
        return [(f.range.start.line, f.range.start.character, f.range.end.character) for f in found or []]

    definition = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=index_at(5))
    )
    assert isinstance(definition, list) and placed(definition) == [where(1, '"message"')]
    on_non_object = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=doc, position=index_at(7))
    )
    assert placed(on_non_object) == []  # type: ignore[arg-type]
    references = await editor.client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(True), text_document=doc, position=editor.pos_of(uri, 1, "数据")
        )
    )
    assert placed(references) == [where(1, '"message"'), index(5), index(8)]
    highlights = await editor.client.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=doc, position=index_at(6))
    )
    assert [(*placed([h])[0], types.DocumentHighlightKind(h.kind).name) for h in highlights or []] == [
        (*where(4, '"message"'), "Write"),
        (*index(6), "Read"),
    ]
    hover = await hover_text(editor, uri, index_at(5))
    assert "**→ `message` · user**" in hover and "line 2" in hover and "first 😀" in hover
    nothing = await hover_text(editor, uri, index_at(7))
    assert "**names no entry**" in nothing and "line 3" in nothing


async def test_a_version_1_file_s_carried_links_read_as_pi_s_migration_makes_them(editor: Editor) -> None:
    # ids and links a version 1 file's lines carry anyway: pi's migration replaces every id and
    # parentId (one chain in file order) and keeps a targetId or fromId as written, naming no entry
    # once each has a new id; past text whose columns differ in UTF-16 and UTF-8
    uri = editor.fresh_uri()
    lines = [
        V1_HEADER,
        S.user("aaaa", "zzzz", TRICKY),
        S.assistant("bbbb", "aaaa", "b 😀"),
        S.user("cccc", "aaaa", "c 😀 as written, a second branch at aaaa"),
        S.label("llll", "cccc", "aaaa", "on a"),
        S.branch_summary("ssss", "llll", "bbbb"),
        S.user("dddd", "cccc", "d"),
    ]
    await editor.open(uri, "\n".join(lines) + "\n")
    doc = td(uri)

    def where(line: int, needle: str) -> tuple[int, int, int]:
        start = editor.pos_of(uri, line, needle).character
        return line, start, editor.pos_of(uri, line, needle, after=True).character

    def placed(found: Sequence[Any] | None) -> list[tuple[int, int, int]]:
        return [(f.range.start.line, f.range.start.character, f.range.end.character) for f in found or []]

    async def defined(line: int, needle: str) -> list[tuple[int, int, int]]:
        found = await editor.client.text_document_definition_async(
            types.DefinitionParams(text_document=doc, position=editor.pos_of(uri, line, needle))
        )
        return placed(found)  # type: ignore[arg-type]

    assert await defined(3, '"aaaa"') == [where(2, '"message"')]  # the previous entry, by its type
    assert await defined(1, '"zzzz"') == []  # the first entry is a root
    assert await defined(4, '"aaaa"') == [] and await defined(5, '"bbbb"') == []
    references = await editor.client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(True), text_document=doc, position=editor.pos_of(uri, 1, "😀")
        )
    )
    assert placed(references) == [where(1, '"message"'), where(2, '"aaaa"')]
    assert (await hover_text(editor, uri, editor.pos_of(uri, 3, '"aaaa"'))).startswith(
        "`parentId` `aaaa`: pi's migration replaces this parentId with the previous entry's id\n\n---\n\n"
        "**→ `message` · assistant** no id yet (version 1) · line 3"
    )
    assert await hover_text(editor, uri, editor.pos_of(uri, 4, '"aaaa"')) == (
        "`targetId` `aaaa`: **names no entry**: pi's migration keeps this targetId but gives every entry a new id"
    )
    symbols = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(doc))
    assert [(s.range.start.line, bool(s.children)) for s in symbols or []] == [(n, False) for n in range(7)]  # type: ignore[union-attr]
    lenses = await editor.client.text_document_code_lens_async(types.CodeLensParams(doc))
    assert {lens.range.start.line: lens.command.title for lens in lenses or [] if lens.command} == {
        0: "6 entries · leaf on line 7",
        6: "$(target) leaf: pi continues here",
    }
    hints = await editor.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=doc, range=types.Range(types.Position(0, 0), types.Position(6, 0))
        )
    )
    assert [h.label for h in hints or []][:3] == ["depth 0", "depth 1", "depth 2"]


async def test_hover_on_a_label_line_that_takes_the_label_back_says_it_is_cleared(editor: Editor) -> None:
    # a label line without `label` (pi writes none to clear it) or with an empty one clears its
    # target's label, as the outline's "[label cleared]" says; an empty value is no empty code span
    # (Markdown would show its two backticks)
    uri = await open_clean(
        editor,
        [
            S.header(),
            S.user("a", None),
            S.label("l", "a", "a", None),
            S.label("m", "l", "a", ""),
            S.model_change("n", "m", provider=""),
        ],
    )
    for line in (2, 3):
        text = await hover_text(editor, uri, editor.pos_of(uri, line, "label"))
        assert "**target** `a` · label cleared" in text
        assert "undefined" not in text and "``" not in text
    model = await hover_text(editor, uri, editor.pos_of(uri, 4, "model_change"))
    assert "**model** *empty* / `m`" in model and "``" not in model


async def test_hover_on_an_entry_missing_fields_says_they_are_missing(editor: Editor) -> None:
    # an assistant message of an early pi (a real file: no provider, model nor stopReason): its
    # hover says what is missing, not JavaScript's `undefined`
    bare = '{"role":"assistant","content":[{"type":"text","text":"x"}]}'
    only_model = '{"role":"assistant","content":[],"model":"m","stopReason":"stop"}'
    uri = editor.fresh_uri()
    await editor.open(
        uri,
        "\n".join(
            [
                S.header(),
                S.user("a", None),
                f'{{"type":"message","id":"b","parentId":"a","timestamp":"2026-11-30T09:13:48.180Z","message":{bare}}}',
                f'{{"type":"message","id":"c","parentId":"b","timestamp":"2026-11-30T09:13:48.180Z","message":{only_model}}}',
                f'{{"type":"message","id":"d","parentId":"c","message":{only_model}}}',
            ]
        )
        + "\n",
    )
    text = await hover_text(editor, uri, editor.pos_of(uri, 2, "assistant"))
    assert "**model** *missing* · stop *missing*" in text and "undefined" not in text
    text = await hover_text(editor, uri, editor.pos_of(uri, 3, "assistant"))
    assert "**model** `? / m` · stop `stop`" in text
    untimed = await hover_text(editor, uri, editor.pos_of(uri, 4, "assistant"))
    assert "**time** *missing*\n" in untimed


async def test_hover_on_a_value_written_over_in_its_line_says_pi_ignores_it(editor: Editor) -> None:
    # JSON.parse keeps the last of a key written twice: the first parentId ("a") is not the
    # entry's parent, and a message written twice leaves the first one unread
    uri = editor.fresh_uri()
    twice = S.user("c", "b").replace('"parentId":"b"', '"parentId":"a","parentId":"b"')
    first_message = '"message":{"role":"user","content":"never read","timestamp":1},'
    shadowed = S.user("d", "c").replace('"message":', first_message + '"message":', 1)
    await editor.open(
        uri, "\n".join([S.header(), S.user("a", None), S.user("b", "a"), twice, shadowed]) + "\n"
    )
    result = await editor.client.text_document_hover_async(
        types.HoverParams(text_document=td(uri), position=editor.pos_of(uri, 3, '"a"'))
    )
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    text = result.contents.value
    assert "ignored" in text and "`parentId`" in text and '`"b"`' in text
    assert "→" not in text and "### " not in text  # not the parent, not the entry
    assert result.range is not None
    assert (result.range.start.character, result.range.end.character) == editor.span(uri, 3, '"a"')
    on_key = await hover_text(editor, uri, editor.pos_of(uri, 3, '"parentId"', occurrence=0))
    assert "ignored" in on_key and "`parentId`" in on_key
    # the value pi keeps is described as before
    kept = await hover_text(editor, uri, editor.pos_of(uri, 3, '"b"'))
    assert "→" in kept and "ignored" not in kept
    inside = await hover_text(editor, uri, editor.pos_of(uri, 4, "never read"))
    assert "ignored" in inside and "`message`" in inside and "### " not in inside


async def test_definition_jumps_to_the_referenced_line(editor: Editor, uri: str) -> None:
    async def target(line: int, needle: str, occurrence: int = 0) -> list[tuple[int, int, int]]:
        pos = editor.pos_of(uri, line, needle, occurrence)
        found = await editor.client.text_document_definition_async(
            types.DefinitionParams(text_document=td(uri), position=pos)
        )
        assert isinstance(found, list)
        return [(loc.range.start.line, loc.range.start.character, loc.range.end.character) for loc in found]  # type: ignore[union-attr]

    # parentId "a" of f (line 6) -> id of a on line 1
    assert await target(6, '"a"') == [(1, *editor.span(uri, 1, '"a"'))]
    # targetId of the label -> b
    assert await target(5, '"b"') == [(2, *editor.span(uri, 2, '"b"'))]
    # toolCallId -> the toolCall block's id on line 2
    assert await target(3, '"t1"') == [(2, *editor.span(uri, 2, '"t1"'))]
    # an entry's own id has no definition
    assert await target(2, '"b"') == []


async def test_references_of_an_entry_and_of_a_tool_call(editor: Editor, uri: str) -> None:
    async def refs(line: int, needle: str, include: bool = True) -> list[int]:
        found = await editor.client.text_document_references_async(
            types.ReferenceParams(
                context=types.ReferenceContext(include),
                text_document=td(uri),
                position=editor.pos_of(uri, line, needle),
            )
        )
        return [loc.range.start.line for loc in found or []]

    assert await refs(1, '"a"') == [1, 2, 6]  # declaration + two children
    assert await refs(2, '"b"', include=False) == [3, 5]  # its child and the label naming it
    assert await refs(2, '"t1"') == [2, 3]  # the call and its result
    assert await refs(3, '"t1"', include=False) == [3]


async def test_document_symbols_follow_the_tree(editor: Editor, uri: str) -> None:
    symbols = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(td(uri)))
    assert symbols is not None

    def shape(items: Sequence[Any]) -> list[Any]:
        return [(s.range.start.line, [shape(s.children or [])] if s.children else []) for s in items]

    # header, then root a (a branch point) whose two branches nest: b (with c, d, e) and f (with g)
    assert shape(symbols) == [(0, []), (1, [[(2, [[(3, []), (4, []), (5, [])]]), (6, [[(7, [])]])]])]
    root = symbols[1]
    assert isinstance(root, types.DocumentSymbol)
    assert root.name.startswith("user: héllo 😀") and root.kind == types.SymbolKind.Event
    assert root.selection_range.start.character == editor.span(uri, 1, '"a"')[0]


def _within(inner: types.Range, outer: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(outer.start) <= key(inner.start) and key(inner.end) <= key(outer.end)


def _symbol_under(symbols: Sequence[types.DocumentSymbol], pos: types.Position) -> list[str]:
    """What an editor's breadcrumb shows at ``pos``: the symbols whose range holds it, from the top
    level in, the first such at each level (VS Code's outline model)."""
    trail: list[str] = []
    level: Sequence[types.DocumentSymbol] = symbols
    while True:
        here = next((s for s in level if _within(types.Range(pos, pos), s.range)), None)
        if here is None:
            return trail
        trail.append(here.detail or "")
        level = here.children or []


def _invalid_ranges(
    symbols: Sequence[types.DocumentSymbol], parent: types.DocumentSymbol | None = None
) -> list[str]:
    """Symbols whose selection range is outside their range, or whose range is outside their
    parent's (an editor drops or misplaces them)."""
    bad = []
    for s in symbols:
        if not _within(s.selection_range, s.range) or (
            parent is not None and not _within(s.range, parent.range)
        ):
            bad.append(s.detail or "")
        bad += _invalid_ranges(s.children or [], s)
    return bad


async def test_the_symbol_under_the_cursor_is_the_entry_of_its_line(editor: Editor, uri: str) -> None:
    symbols = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(td(uri)))
    assert symbols is not None
    assert all(isinstance(s, types.DocumentSymbol) for s in symbols)
    assert _invalid_ranges(symbols) == []  # type: ignore[arg-type]
    # the root's range runs over both its branches, each branch's over its entries
    trails = [_symbol_under(symbols, editor.pos(uri, line, 3)) for line in range(8)]  # type: ignore[arg-type]
    assert [t[-1].split(" ")[0] for t in trails] == ["header", "a", "b", "c", "d", "e", "f", "g"]
    assert trails[4][:3] == ["a · 2 branches", "b", "d"]
    assert trails[7][:3] == ["a · 2 branches", "f", "g · leaf"]


async def test_symbol_ranges_hold_their_children_in_any_line_order(editor: Editor) -> None:
    # the first branch continued after the second one started, and a child written before its parent
    lines = [
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", "first branch"),
        S.user("f", "a", "second branch"),
        S.user("c", "b", "first branch again"),
        S.assistant("h", "g", "before its parent"),
        S.assistant("g", "f", "second branch again"),
    ]
    uri = editor.fresh_uri()
    await editor.open(uri, "\n".join(lines) + "\n")
    symbols = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(td(uri)))
    assert symbols is not None
    assert _invalid_ranges(symbols) == []  # type: ignore[arg-type]
    root = symbols[1]
    assert isinstance(root, types.DocumentSymbol) and root.children is not None
    first, second = root.children
    assert (first.range.start.line, first.range.end.line) == (2, 4)
    assert (second.range.start.line, second.range.end.line) == (3, 6)
    assert (root.range.start.line, root.range.end.line) == (1, 6)


async def test_folding_ranges_per_turn(editor: Editor, uri: str) -> None:
    ranges = await editor.client.text_document_folding_range_async(types.FoldingRangeParams(td(uri)))
    assert [(r.start_line, r.end_line) for r in ranges or []] == [(1, 5), (6, 7)]


async def test_inlay_hints_and_code_lenses(editor: Editor, uri: str) -> None:
    hints = await editor.client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=td(uri), range=types.Range(types.Position(0, 0), types.Position(7, 0))
        )
    )
    by_line = {h.position.line: h.label for h in hints or []}
    assert by_line[1] == "depth 0 · 2 children"
    assert by_line[2] == "depth 1 · label “important”"
    assert by_line[7] == "depth 2 · no children · leaf"
    lines = "\n".join(SESSION).split("\n")
    end_of_1 = editor.pos(uri, 1, len(lines[1]))
    assert next(h.position for h in hints or [] if h.position.line == 1) == end_of_1
    lenses = await editor.client.text_document_code_lens_async(types.CodeLensParams(td(uri)))
    titles = {lens.range.start.line: lens.command.title for lens in lenses or [] if lens.command}
    assert titles == {
        0: "7 entries · leaf on line 8",
        1: "$(git-branch) 2 branches",
        2: "label “important”",
        7: "$(target) leaf: pi continues here",
    }


async def test_inlay_hints_of_a_range_given_end_first(editor: Editor, uri: str) -> None:
    # a range given end first is taken start first, as everywhere (it answered no hint)
    async def hint_lines(start: types.Position, end: types.Position) -> list[int]:
        hints = await editor.client.text_document_inlay_hint_async(
            types.InlayHintParams(text_document=td(uri), range=types.Range(start, end))
        )
        return sorted(h.position.line for h in hints or [])

    forward = await hint_lines(types.Position(2, 0), types.Position(5, 3))
    assert forward == [2, 3, 4, 5]
    assert await hint_lines(types.Position(5, 3), types.Position(2, 0)) == forward


async def test_the_leaf_lens_follows_the_session_held_on_the_file(editor: Editor, tmp_path: Path) -> None:
    """pi/branch (the editors' Branch Here) moves the held session's leaf: the lenses and hints of
    the file's document follow it, and a client that can refresh its lenses is asked to."""
    session = tmp_path / f"2026-11-30T09-13-48-180Z_leaf-{editor.encoding}.jsonl"
    text = "\n".join(SESSION) + "\n"
    session.write_text(text, encoding="utf-8")
    uri = session.as_uri()
    refreshes: list[str] = []
    editor.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda params: refreshes.append("lens"))
    editor.client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)(lambda params: refreshes.append("hint"))
    assert list(await editor.open(uri, text)) == []

    async def lenses() -> dict[int, str]:
        found = await editor.client.text_document_code_lens_async(types.CodeLensParams(td(uri)))
        return {lens.range.start.line: lens.command.title for lens in found or [] if lens.command}

    assert (await lenses())[7] == "$(target) leaf: pi continues here"
    moved = await editor.client.protocol.send_request_async("pi/branch", {"uri": uri, "entryId": "d"})
    assert moved.leafId == "d"
    assert await lenses() == {
        0: "7 entries · leaf on line 5",
        1: "$(git-branch) 2 branches",
        2: "label “important”",
        4: "$(target) leaf: pi continues here",
    }
    hints = await editor.client.text_document_inlay_hint_async(
        types.InlayHintParams(td(uri), types.Range(types.Position(0, 0), types.Position(7, 0)))
    )
    by_line = {h.position.line: h.label for h in hints or []}
    assert (by_line[4], by_line[7]) == ("depth 3 · leaf", "depth 2 · no children")
    await editor.client.protocol.send_request_async("pi/resetLeaf", {"uri": uri})
    assert (await lenses())[0] == "7 entries · no leaf: the next entry starts a new root"
    await editor.client.protocol.send_request_async("pi/branch", {"uri": uri, "entryId": "g"})
    assert (await lenses())[7] == "$(target) leaf: pi continues here"
    capabilities = editor.client.capabilities.workspace  # type: ignore[attr-defined]
    wanted = set()
    if capabilities.code_lens is not None and capabilities.code_lens.refresh_support:
        wanted.add("lens")
    if capabilities.inlay_hint is not None and capabilities.inlay_hint.refresh_support:
        wanted.add("hint")
    for _ in range(200):
        if wanted <= set(refreshes):
            break
        await asyncio.sleep(0.02)
    assert set(refreshes) == wanted


async def test_selection_ranges_grow_to_the_entry_line(editor: Editor, uri: str) -> None:
    pos = editor.pos_of(uri, 1, "数据")
    result = await editor.client.text_document_selection_range_async(
        types.SelectionRangeParams(text_document=td(uri), positions=[pos])
    )
    assert result is not None
    chain = []
    node: types.SelectionRange | None = result[0]
    while node is not None:
        chain.append(
            (node.range.start.line, node.range.start.character, node.range.end.line, node.range.end.character)
        )
        node = node.parent
    line = "\n".join(SESSION).split("\n")[1]
    content = f'"{TRICKY}"'
    start = line.index(content)
    assert chain[0] == (1, *editor.span(uri, 1, content)[:1], 1, editor.span(uri, 1, content)[1])
    assert chain[-1] == (1, 0, 1, editor.pos(uri, 1, len(line)).character)
    assert len(chain) >= 4 and all(a[1] >= b[1] and a[3] <= b[3] for a, b in itertools.pairwise(chain))
    assert start > 0
