"""What the editor is shown of a session holding control characters, line breaks and Markdown in
every place (ids, the cwd, a model, a label, a tool's name and output, thinking, a malformed line),
through the real server for a UTF-16 and a UTF-8 client: nothing reaches it raw. A name, a label,
a title, a detail is on one line, its control characters (ESC, BEL, CR, LF, U+2028) written as
the terminal's ``check`` writes them; a hover is Markdown in which session text is code or plain
text, never a heading, a link, an image or HTML of its own."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest
import pytest_asyncio
from language_support import Editor, client_fixture, editor_fixture, td  # noqa: F401  (fixtures)
from lsprotocol import types

from pi_session_server.format.jsjson import dumps

pytestmark = pytest.mark.asyncio(loop_scope="module")

TS = "2026-11-30T09:13:48.180Z"
INJECTED = "\n\n# injected <img src=http://evil.example/x.png> [link](http://evil.example)"

USER = "u\x1b[31m1"
ASSISTANT = "a\x071"
RESULT = "r\r1"
CALL = "c\u20281"
CYCLE = ("x\x1b1", "x\x1b2")


def entry(etype: str, entry_id: str, parent: str | None, **fields: object) -> str:
    return dumps({"type": etype, "id": entry_id, "parentId": parent, "timestamp": TS, **fields})


#   0 header                    id and cwd with ESC, BEL
#   1 user USER                 text with ESC, CR LF, a lone CR, U+2028, HTML
#   2 assistant ASSISTANT       model with an OSC sequence; thinking, error with Markdown; a call
#   3 toolResult RESULT         tool name with U+2028, output with ESC and HTML
#   4 label on USER             a label that would start a heading
#   5 model_change              model id with ESC and U+2028
#   6 session_info              name with ESC and CR
#   7, 8 a cycle                ids with ESC (its repair's title names them)
#   9 invalid JSON              HTML that V8's message quotes
#  10 context_edit of USER      its replacement an image in Markdown
#  11 a message                 its role an image in Markdown
#  12 context_edit of 11        (which names its role)
SESSION = [
    dumps({"type": "session", "version": 3, "id": "s\x1b[1mid", "timestamp": TS, "cwd": "/w\x07ork"}),
    entry(
        "message",
        USER,
        None,
        message={
            "role": "user",
            "content": "hi\x1b[31m red\r\nnext\rover\u2028sep <b>bold</b>",
            "timestamp": 1,
        },
    ),
    entry(
        "message",
        ASSISTANT,
        USER,
        message={
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "think" + INJECTED, "thinkingSignature": "s"},
                {"type": "text", "text": "answer\x07"},
                {"type": "toolCall", "id": CALL, "name": "re\x1bad", "arguments": {"p": "\x1b" + INJECTED}},
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude\x1b]0;title\x07",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "error",
            "errorMessage": "failed" + INJECTED,
            "timestamp": 2,
        },
    ),
    entry(
        "message",
        RESULT,
        ASSISTANT,
        message={
            "role": "toolResult",
            "toolCallId": CALL,
            "toolName": "ba\u2028sh",
            "content": [{"type": "text", "text": "out\x1b[2J\x07 <img src=http://evil.example/o.png>"}],
            "isError": False,
            "timestamp": 3,
        },
    ),
    entry("label", "l1", RESULT, targetId=USER, label="mark\x1b[5m" + INJECTED),
    entry("model_change", "m1", "l1", provider="p\x1b", modelId="m\x1b\u2028x"),
    entry("session_info", "n1", "m1", name="name\x1b\rX"),
    entry("message", CYCLE[0], CYCLE[1], message={"role": "user", "content": "loop", "timestamp": 4}),
    entry("message", CYCLE[1], CYCLE[0], message={"role": "user", "content": "loop", "timestamp": 5}),
    '{"type":<img src=http://evil.example/m.png>}',
    entry(
        "context_edit", "e1", "n1", targetId=USER, replacement={"content": "![p](http://evil.example/p.png)"}
    ),
    entry("message", "w1", "e1", message={"role": "![r](http://evil.example/r.png)", "content": "x"}),
    entry("context_edit", "e2", "w1", targetId="w1", replacement=None),
]

#: what an editor draws as nothing, as a box, or as a line break
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: what a hover may hold of them: its own line breaks
HOVER_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def assert_one_line(texts: Iterable[str | None]) -> list[str]:
    shown = [text for text in texts if text is not None]
    for text in shown:
        assert CONTROLS.search(text) is None, repr(text)
    return shown


def assert_safe_markdown(markdown: str) -> None:
    """Session text in ``markdown`` is code or plain text: outside code, no line of its own (a
    heading), no HTML, no link, no image."""
    assert HOVER_CONTROLS.search(markdown) is None, repr(markdown)
    in_fence = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        outside_code = re.sub(r"`[^`]*`", "", line)
        assert "injected" not in outside_code or "\\#" in outside_code, repr(line)
        assert not line.startswith("# "), repr(line)
        assert re.search(r"(?<!\\)[<\[]", outside_code) is None, repr(line)
        assert re.search(r"(?<!\\):(?=//)", outside_code) is None, repr(line)


@pytest_asyncio.fixture(loop_scope="module")
async def uri(editor: Editor) -> str:
    uri = editor.fresh_uri()
    await editor.open(uri, "\n".join(SESSION) + "\n")
    return uri


async def hover_at(editor: Editor, uri: str, line: int, needle: str) -> str:
    found = await editor.client.text_document_hover_async(
        types.HoverParams(td(uri), editor.pos_of(uri, line, needle))
    )
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    assert_safe_markdown(found.contents.value)
    return found.contents.value


async def test_hovers_show_session_text_as_code_or_plain_text(editor: Editor, uri: str) -> None:
    header = await hover_at(editor, uri, 0, '"cwd"')
    assert "`s\\x1b[1mid`" in header and "`/w\\x07ork`" in header
    user = await hover_at(editor, uri, 1, '"timestamp"')
    assert "`u\\x1b[31m1`" in user
    assert "hi\\x1b[31m red\nnext\\x0dover\\u2028sep <b>bold</b>" in user  # its block keeps CR LF a break
    assert "`mark\\x1b[5m\\x0a\\x0a# injected <img src=http://evil.example/x.png>" in user  # its label
    assistant = await hover_at(editor, uri, 2, '"timestamp"')
    assert "`anthropic / claude\\x1b]0;title\\x07`" in assistant
    # (a one-line summary of an error, of thinking: line breaks are spaces there)
    assert "**error** failed \\# injected \\<img src=http\\://evil.example/x.png\\> \\[link\\]" in assistant
    assert "*thinking:* think \\# injected \\<img" in assistant
    assert '"p": "\\u001b\\n\\n# injected <img' in assistant  # in its arguments' block
    assert "`re\\x1bad` `c\\u20281`" in assistant
    result = await hover_at(editor, uri, 3, '"timestamp"')
    assert "`ba\\u2028sh`" in result and "out\\x1b[2J\\x07 <img" in result
    # on a reference: the summary of the entry it names, its preview plain text
    reference = await hover_at(editor, uri, 2, '"parentId"')
    assert "user: hi\\\\x1b\\[31m red next over sep \\<b\\>bold\\</b\\>" in reference
    malformed = await hover_at(editor, uri, 9, "img")
    assert "**invalid JSON**" in malformed and "Unexpected token '\\<'" in malformed
    # what a context edit does, in words that quote its replacement and its target's role
    replaced = await hover_at(editor, uri, 10, '"timestamp"')
    assert "with the text “\\!\\[p\\](http\\://evil.example/p.png)”" in replaced
    omitted = await hover_at(editor, uri, 12, '"timestamp"')
    assert "**leaves out** line 12 (\\!\\[r\\](http\\://evil.example/r.png) message)" in omitted


async def test_symbols_are_one_line(editor: Editor, uri: str) -> None:
    found = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(td(uri)))
    assert found is not None
    texts: list[str | None] = []
    pending = list(found)
    while pending:
        symbol = pending.pop()
        assert isinstance(symbol, types.DocumentSymbol)
        texts += [symbol.name, symbol.detail]
        pending += symbol.children or []
    shown = assert_one_line(texts)
    for expected in (
        "session s\\x1b[1mid",
        "[model: m\\x1b\\u2028x]",
        "[name: name\\x1b\\x0dX]",
        "[ba\\u2028sh] out",
    ):
        assert any(expected in text for text in shown), (expected, shown)
    assert any(text.startswith("u\\x1b[31m1") for text in shown), shown  # a detail: the id


async def test_inlay_hints_and_code_lenses_are_one_line(editor: Editor, uri: str) -> None:
    whole = types.Range(types.Position(0, 0), types.Position(len(SESSION), 0))
    hints = await editor.client.text_document_inlay_hint_async(types.InlayHintParams(td(uri), whole))
    assert hints
    labels = assert_one_line(h.label for h in hints if isinstance(h.label, str))
    assert_one_line(h.tooltip for h in hints if isinstance(h.tooltip, str))
    assert any("label “mark\\x1b[5m\\x0a\\x0a# injected" in label for label in labels), labels
    lenses = await editor.client.text_document_code_lens_async(types.CodeLensParams(td(uri)))
    titles = assert_one_line(lens.command.title for lens in lenses or [] if lens.command is not None)
    assert any("label “mark\\x1b[5m\\x0a\\x0a# injected" in title for title in titles), titles


async def test_completion_items_are_one_line(editor: Editor, uri: str) -> None:
    # at the start of the parentId of the session_info line (naming "m1"): nothing typed
    at = editor.pos_of(uri, 6, '"m1"')
    inside = types.Position(at.line, at.character + 1)
    found = await editor.client.text_document_completion_async(types.CompletionParams(td(uri), inside))
    assert isinstance(found, types.CompletionList) and found.items
    labels = assert_one_line(item.label for item in found.items)
    assert_one_line(item.detail for item in found.items)
    assert_one_line(item.filter_text for item in found.items)
    assert "u\\x1b[31m1" in labels and "r\\x0d1" in labels
    edits = {item.label: item.text_edit for item in found.items}
    edit = edits["u\\x1b[31m1"]
    assert isinstance(edit, types.TextEdit) and edit.new_text == "u\\u001b[31m1"  # what is written: JSON


async def test_code_action_titles_are_one_line(editor: Editor, uri: str) -> None:
    lines = types.Range(types.Position(7, 0), types.Position(8, 0))
    context = types.CodeActionContext(diagnostics=[])
    found = await editor.client.text_document_code_action_async(
        types.CodeActionParams(td(uri), lines, context)
    )
    actions = [a for a in found or [] if isinstance(a, types.CodeAction)]
    titles = assert_one_line(action.title for action in actions)
    assert any("x\\x1b1" in title or "x\\x1b2" in title for title in titles), titles
    assert_one_line(action.command.title for action in actions if action.command is not None)
