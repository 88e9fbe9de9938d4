"""Document highlights, go to implementation (children), completion of ids and entry types, and
go to definition on a value pi ignores, through the real server for a UTF-16 and a UTF-8 client:
ids with emoji, and text with emoji and U+2028 before the positions asked about."""

from __future__ import annotations

import builders as S
import pytest
import pytest_asyncio
from language_support import Editor, client_fixture, editor_fixture, open_clean, td  # noqa: F401  (fixtures)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRICKY = "héllo 😀 数据\u2028second\u2029third"


def parent_last(line: str, parent: str) -> str:
    """``line`` with its ``parentId`` written last, after the message text."""
    return line.replace(f'"parentId":"{parent}",', "")[:-1] + f',"parentId":"{parent}"}}'


#   0 header
#   1 é1 user (TRICKY)                          root
#   2 😀2 assistant, calls 🔧1                    parent é1
#   3 c3 toolResult 🔧1 (TRICKY first)           parent 😀2, written after the text
#   4 l4 label on 😀2                            parent c3
#   5 f5 user                                   parent é1
SESSION = [
    S.header(),
    S.user("é1", None, TRICKY),
    S.assistant("😀2", "é1", "let me read 😀", calls=(("🔧1", "read", {"path": "数据.py"}),)),
    parent_last(S.tool_result("c3", "😀2", "🔧1", TRICKY), "😀2"),
    S.label("l4", "c3", "😀2", "important"),
    S.user("f5", "é1", "other branch 🚀"),
]


@pytest_asyncio.fixture(loop_scope="module")
async def uri(editor: Editor) -> str:
    return await open_clean(editor, SESSION)


def where(editor: Editor, uri: str, line: int, needle: str, occurrence: int = 0) -> tuple[int, int, int]:
    """(line, start, end) in the client's columns of the ``occurrence``-th ``needle`` on ``line``."""
    start = editor.pos_of(uri, line, needle, occurrence).character
    end = editor.pos_of(uri, line, needle, occurrence, after=True).character
    return line, start, end


async def highlighted(editor: Editor, uri: str, pos: types.Position) -> list[tuple[int, int, int, str]]:
    found = await editor.client.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=td(uri), position=pos)
    )
    return [
        (
            h.range.start.line,
            h.range.start.character,
            h.range.end.character,
            types.DocumentHighlightKind(h.kind).name,
        )
        for h in found or []
    ]


async def test_the_server_announces_the_features(editor: Editor) -> None:
    capabilities = editor.server_capabilities
    assert capabilities is not None
    assert capabilities.document_highlight_provider
    assert capabilities.implementation_provider
    assert capabilities.completion_provider is not None
    assert list(capabilities.completion_provider.trigger_characters or []) == ['"']


async def test_highlights_of_an_entry_from_its_id_and_from_the_keys_naming_it(
    editor: Editor, uri: str
) -> None:
    expected = [
        (*where(editor, uri, 2, '"😀2"'), "Write"),
        (*where(editor, uri, 3, '"😀2"'), "Read"),  # parentId, after the text with U+2028
        (*where(editor, uri, 4, '"😀2"'), "Read"),  # targetId
    ]
    assert await highlighted(editor, uri, editor.pos_of(uri, 2, "😀2")) == expected
    assert await highlighted(editor, uri, editor.pos_of(uri, 3, "😀2")) == expected
    assert await highlighted(editor, uri, editor.pos_of(uri, 4, '"targetId"')) == expected
    # the label's own parentId names c3
    assert await highlighted(editor, uri, editor.pos_of(uri, 4, '"c3"')) == [
        (*where(editor, uri, 3, '"c3"'), "Write"),
        (*where(editor, uri, 4, '"c3"'), "Read"),
    ]


async def test_highlights_of_a_tool_call_and_its_result(editor: Editor, uri: str) -> None:
    expected = [(*where(editor, uri, 2, '"🔧1"'), "Write"), (*where(editor, uri, 3, '"🔧1"'), "Read")]
    assert await highlighted(editor, uri, editor.pos_of(uri, 3, "🔧1")) == expected
    assert await highlighted(editor, uri, editor.pos_of(uri, 2, '"🔧1"')) == expected


async def test_no_highlights_in_text(editor: Editor, uri: str) -> None:
    assert await highlighted(editor, uri, editor.pos_of(uri, 1, "second")) == []


async def test_implementation_goes_to_the_children(editor: Editor, uri: str) -> None:
    async def children(line: int, needle: str) -> list[tuple[int, int, int]]:
        found = await editor.client.text_document_implementation_async(
            types.ImplementationParams(text_document=td(uri), position=editor.pos_of(uri, line, needle))
        )
        assert isinstance(found, list)
        return [(loc.range.start.line, loc.range.start.character, loc.range.end.character) for loc in found]  # type: ignore[union-attr]

    branches = [where(editor, uri, 2, '"😀2"'), where(editor, uri, 5, '"f5"')]
    assert await children(1, '"é1"') == branches
    assert await children(1, "third") == branches  # anywhere on the line
    assert await children(3, "second") == [where(editor, uri, 4, '"l4"')]
    assert await children(5, '"f5"') == []  # a leaf


async def complete(editor: Editor, uri: str, pos: types.Position) -> types.CompletionList:
    found = await editor.client.text_document_completion_async(
        types.CompletionParams(text_document=td(uri), position=pos)
    )
    assert isinstance(found, types.CompletionList)
    return found


async def test_completion_of_a_parent_id_after_text_with_line_separators(editor: Editor) -> None:
    uri = editor.fresh_uri()
    # the last line is being typed: its parentId is written last, after the text
    typing = parent_last(S.user("n6", "", TRICKY), "")
    await editor.open(uri, "\n".join([*SESSION, typing]) + "\n")
    pos = editor.pos_of(uri, 6, '"parentId":"', after=True)
    found = await complete(editor, uri, pos)
    assert not found.is_incomplete
    labels = [item.label for item in found.items]
    assert labels == ["f5", "l4", "c3", "😀2", "é1"]  # the entries before, nearest first
    assert [item.sort_text for item in found.items] == sorted(item.sort_text or "" for item in found.items)
    first = found.items[0]
    assert first.kind == types.CompletionItemKind.Reference
    assert first.detail == "message · line 6 · user: other branch 🚀"
    assert isinstance(first.text_edit, types.TextEdit)
    assert first.text_edit.range == types.Range(pos, pos)  # the string is empty: replace nothing
    # what is typed filters: the list then says it is incomplete, and the edit replaces the content
    await editor.edit(uri, pos, pos, "😀")
    after = editor.pos_of(uri, 6, '"parentId":"😀', after=True)
    found = await complete(editor, uri, after)
    assert found.is_incomplete and [item.label for item in found.items] == ["😀2"]
    edit = found.items[0].text_edit
    assert isinstance(edit, types.TextEdit) and edit.new_text == "😀2"
    assert edit.range == types.Range(pos, after)
    await editor.apply(uri, [edit])
    assert editor.texts[uri].split("\n")[6].endswith('"parentId":"😀2"}')
    definition = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=td(uri), position=editor.pos_of(uri, 6, "😀2"))
    )
    assert isinstance(definition, list) and [d.range.start.line for d in definition] == [2]  # type: ignore[union-attr]


async def test_completion_of_ids_the_document_writes_escaped(editor: Editor) -> None:
    """The user types an id as the document writes it (JSON escapes, a \\u escape another writer
    used): an item is filtered by that form and writes it, and the id it writes names the entry."""
    uri = editor.fresh_uri()
    quoted = S.user('say "hi" \\ \x1b', None)  # written "say \"hi\" \\ \u001b"
    escaped = S.user("é9", 'say "hi" \\ \x1b').replace('"é9"', '"\\u00e99"')
    typing = S.user("n3", "").replace('"parentId":""', '"parentId":"say \\"h"')
    await editor.open(uri, "\n".join([*SESSION[:1], quoted, escaped, typing]) + "\n")
    start = editor.pos_of(uri, 3, '"parentId":"', after=True)
    typed = editor.pos_of(uri, 3, '"parentId":"say \\"h', after=True)
    found = await complete(editor, uri, typed)
    assert found.is_incomplete and [item.label for item in found.items] == ['say "hi" \\ \\x1b']
    item = found.items[0]
    assert item.filter_text == 'say \\"hi\\" \\\\ \\u001b'  # what the document has, typed or not
    assert isinstance(item.text_edit, types.TextEdit) and item.text_edit.new_text == item.filter_text
    assert item.text_edit.range == types.Range(start, typed)
    await editor.apply(uri, [item.text_edit])
    definition = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=td(uri), position=editor.pos_of(uri, 3, "say"))
    )
    assert isinstance(definition, list) and [d.range.start.line for d in definition] == [1]  # type: ignore[union-attr]
    # the other id, written with a \\u escape where it is defined: offered as written there
    await editor.edit(uri, start, editor.pos_of(uri, 3, "\\u001b", after=True), "\\u00e9")
    found = await complete(editor, uri, editor.pos_of(uri, 3, '"parentId":"\\u00e9', after=True))
    assert [(item.label, item.filter_text) for item in found.items] == [("é9", "\\u00e99")]
    assert (
        isinstance(found.items[0].text_edit, types.TextEdit)
        and found.items[0].text_edit.new_text == "\\u00e99"
    )


async def test_completion_of_an_ascii_id_another_writer_escaped(editor: Editor) -> None:
    """An id of ASCII letters written with escapes JSON does not need (``"\\u0061bc"`` for
    ``abc``): offered, filtered and written as the document writes it, also once part of it is typed
    in that form."""
    uri = editor.fresh_uri()
    escaped = S.user("abc", None, "first").replace('"id":"abc"', '"id":"\\u0061bc"')
    plain = S.user("abd", "abc", "second")  # written as it reads: offered so
    typing = S.user("n3", "")
    await editor.open(uri, "\n".join([*SESSION[:1], escaped, plain, typing]) + "\n")
    start = editor.pos_of(uri, 3, '"parentId":"', after=True)
    found = await complete(editor, uri, start)
    offered = [
        (i.label, i.filter_text, i.text_edit.new_text if isinstance(i.text_edit, types.TextEdit) else None)
        for i in found.items
    ]
    assert offered == [("abd", "abd", "abd"), ("abc", "\\u0061bc", "\\u0061bc")]
    await editor.edit(uri, start, start, "\\u0061b")  # typed in the document's form: reads "ab"
    found = await complete(editor, uri, editor.pos_of(uri, 3, '"parentId":"\\u0061b', after=True))
    assert [(i.label, i.filter_text) for i in found.items] == [("abd", "abd"), ("abc", "\\u0061bc")]
    item = found.items[1]
    assert isinstance(item.text_edit, types.TextEdit)
    await editor.apply(uri, [item.text_edit])
    assert editor.texts[uri].split("\n")[3].count('"parentId":"\\u0061bc"') == 1
    definition = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=td(uri), position=editor.pos_of(uri, 3, "u0061bc"))
    )
    assert isinstance(definition, list) and [d.range.start.line for d in definition] == [1]  # type: ignore[union-attr]


async def test_completion_of_entry_types(editor: Editor, uri: str) -> None:
    pos = editor.pos_of(uri, 5, '"type":"', after=True)
    found = await complete(editor, uri, pos)
    labels = [item.label for item in found.items]
    assert labels[0] == "message" and {"compaction", "label", "context_edit"} <= set(labels)
    assert "session" not in labels
    edit = found.items[0].text_edit
    assert isinstance(edit, types.TextEdit)
    assert (edit.range.start.character, edit.range.end.character) == editor.span(uri, 5, "message")


async def test_completion_of_a_tool_call_id(editor: Editor, uri: str) -> None:
    pos = editor.pos_of(uri, 3, '"toolCallId":"', after=True)
    found = await complete(editor, uri, pos)
    assert [item.label for item in found.items] == ["🔧1"]
    item = found.items[0]
    assert item.kind == types.CompletionItemKind.Reference
    assert item.detail is not None and item.detail.startswith("message · line 3 · ")
    assert isinstance(item.text_edit, types.TextEdit)
    assert (item.text_edit.range.start.character, item.text_edit.range.end.character) == editor.span(
        uri, 3, "🔧1"
    )


async def test_no_completion_in_message_text(editor: Editor, uri: str) -> None:
    found = await editor.client.text_document_completion_async(
        types.CompletionParams(text_document=td(uri), position=editor.pos_of(uri, 1, "second"))
    )
    assert found is None or (isinstance(found, types.CompletionList) and found.items == [])


async def test_definition_on_a_value_pi_ignores_goes_where_pi_s_value_points(editor: Editor) -> None:
    uri = editor.fresh_uri()
    twice = S.user("c", "b", TRICKY).replace('"parentId":"b"', '"parentId":"😀a","parentId":"b"')
    await editor.open(uri, "\n".join([S.header(), S.user("😀a", None), S.user("b", "😀a"), twice]) + "\n")
    found = await editor.client.text_document_definition_async(
        types.DefinitionParams(text_document=td(uri), position=editor.pos_of(uri, 3, "😀a"))
    )
    assert isinstance(found, list)
    assert [(d.range.start.line, d.range.start.character, d.range.end.character) for d in found] == [  # type: ignore[union-attr]
        where(editor, uri, 2, '"b"')
    ]
