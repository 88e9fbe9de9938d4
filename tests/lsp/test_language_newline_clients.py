"""A client whose lines end at "\\n" only (``initializationOptions.lineBreaks: "newline"``).

Neovim splits a buffer at "\\n" only: a lone "\\r" (JSON white space to pi) stays inside its line,
shown as ^M, as in pi's lines. Such a client says so at ``initialize``, and every position the
server sends or reads is then on pi's lines; a client that says nothing gets the LSP's lines, where
a lone "\\r" ends a line too (see test_language_line_breaks.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import builders as S
import pytest
import pytest_lsp
from language_support import SERVER, Editor, codes_by_line, start_editor, td
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

# how the client breaks lines (its initializationOptions) -> how it splits a text into lines
LINE_BREAKS = {
    "newline": ({"lineBreaks": "newline"}, "\n"),
    "lsp (not said)": (None, "\r\n|\r|\n"),
    "lsp": ({"lineBreaks": "lsp"}, "\r\n|\r|\n"),
}


@pytest_lsp.fixture(name="client", config=SERVER, params=list(LINE_BREAKS), scope="module")
async def client_fixture(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """One server per rule: a client with Neovim's capabilities that says how it breaks lines."""
    options, breaks = LINE_BREAKS[request.param]
    editor = await start_editor(lsp_client, "neovim", initialization_options=options)
    lsp_client.line_breaks = (editor, breaks)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(name="line_breaks")
def line_breaks_fixture(client: LanguageClient) -> tuple[Editor, str]:
    return client.line_breaks  # type: ignore[attr-defined,no-any-return]


def position(text: str, breaks: str, needle: str, encoding: str) -> types.Position:
    """Where ``needle`` is in ``text`` split into lines at ``breaks``."""
    for number, line in enumerate(re.split(breaks, text)):
        at = line.find(needle)
        if at >= 0:
            prefix = line[:at]
            if encoding == "utf-16":
                return types.Position(number, len(prefix.encode("utf-16-le")) // 2)
            return types.Position(number, len(prefix.encode()) if encoding == "utf-8" else len(prefix))
    raise AssertionError(f"{needle!r} not in the text")


async def test_positions_are_on_the_lines_the_client_says_it_has(line_breaks: tuple[Editor, str]) -> None:
    editor, breaks = line_breaks
    uri = editor.fresh_uri("line-breaks")
    # pi's line 1 holds a lone "\r" (before "id"): one line to a "newline" client, two to the LSP
    text = "".join(
        line + "\n"
        for line in (
            S.header(),
            S.user("a", None, text="first").replace('"id"', '\r"id"', 1),
            S.assistant("b", "a"),
            S.user("c", "gone", text="second"),
            S.assistant("d", "c"),
        )
    )

    def at(needle: str) -> types.Position:
        return position(text, breaks, needle, editor.encoding)

    dangling = at('"parentId":"gone"').line  # pi's line 3: the client's 3 or 4
    assert codes_by_line(await editor.open(uri, text)) == [(dangling, "PI031")]

    # a hover on the part of line 1 after the "\r" is about entry a
    hover = await editor.client.text_document_hover_async(types.HoverParams(td(uri), at('"id":"a"')))
    assert hover is not None and "first" in str(hover.contents)

    # the outline, and the folds of the turns, name the entries on the client's lines
    symbols = await editor.client.text_document_document_symbol_async(types.DocumentSymbolParams(td(uri)))

    def flat(found: list) -> list:
        return [item for symbol in found for item in [symbol, *flat(symbol.children or [])]]

    found = {s.name: s.selection_range.start.line for s in flat(list(symbols or []))}
    assert found["user: first"] == at('"id":"a"').line and found["user: second"] == dangling
    folds = await editor.client.text_document_folding_range_async(types.FoldingRangeParams(td(uri)))
    turns = [(1, at('"id":"b"').line), (dangling, at('"id":"d"').line)]
    assert [(fold.start_line, fold.end_line) for fold in folds or []] == turns

    # an edit the client places on its own line reaches pi's line 3: the dangling parent is fixed
    start = at("gone")
    text = text.replace('"parentId":"gone"', '"parentId":"a"')
    editor.texts[uri] = text
    editor.versions[uri] += 1
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start, types.Position(start.line, start.character + len("gone"))),
                    text="a",
                )
            ],
        )
    )
    assert codes_by_line(await editor.diagnostics_for(uri)) == []


async def test_text_typed_at_the_end_of_a_crlf_line_is_where_the_client_has_it(
    line_breaks: tuple[Editor, str],
) -> None:
    """To a client whose lines end at "\\n" only, the CR of a CRLF in a file of "\\n" lines is its
    line's last character (Neovim's ^M): text typed at the line's end goes after it. To the LSP's
    clients the CRLF ends the line: the same place is before the CR."""
    editor, breaks = line_breaks
    uri = editor.fresh_uri("crlf-typed")
    text = S.header() + "\n" + S.user("a", None) + "\r\n" + S.user("b", "a") + "\n"
    assert codes_by_line(await editor.open(uri, text)) == []
    end = types.Position(1, len(re.split(breaks, text)[1]))  # (ASCII: a character is a byte)
    editor.versions[uri] += 1
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(end, end), text="x")],
        )
    )
    found = await editor.diagnostics_for(uri)
    (invalid,) = [d for d in found if d.code == "PI001"]  # the "x" after a's JSON (b dangles now)
    assert (invalid.range.start.line, invalid.range.start.character) == (1, end.character)
