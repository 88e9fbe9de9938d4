"""A lone carriage return, seen by a client that follows the LSP (issue 20, finding 14).

The rule (analysis/lone_cr.py): positions on the wire follow the LSP, for which "\\n", "\\r\\n" and a
lone "\\r" all end a line; the analysis keeps pi's lines (split on "\\n" only). A session line with
a "\\r" between its JSON tokens (white space to pi) is two lines to such a client: everything the
server says about later lines must name them as the client numbers them, and positions the client
sends inside or after that line must reach the right place.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import builders as S
import pytest
from language_support import Editor, client_fixture, codes_by_line, editor_fixture, td  # noqa: F401  (fixtures)
from lsprotocol import types

from pi_session_server.cli import main

pytestmark = pytest.mark.asyncio(loop_scope="module")


def spec_lines(text: str) -> list[str]:
    """The lines an LSP client sees: "\\r\\n", "\\r" and "\\n" end a line."""
    return re.split("\r\n|\r|\n", text)


def spec_position(text: str, needle: str, encoding: str) -> types.Position:
    for number, line in enumerate(spec_lines(text)):
        at = line.find(needle)
        if at >= 0:
            prefix = line[:at]
            if encoding == "utf-16":
                return types.Position(number, len(prefix.encode("utf-16-le")) // 2)
            if encoding == "utf-8":
                return types.Position(number, len(prefix.encode()))
            return types.Position(number, len(prefix))
    raise AssertionError(f"{needle!r} not in the text")


def with_lone_cr(line: str, before: str) -> str:
    """``line`` with a "\\r" (JSON white space) before the member ``before``."""
    return line.replace(f'"{before}"', f'\r"{before}"', 1)


async def change(editor: Editor, uri: str, start: types.Position, end: types.Position, text: str) -> None:
    editor.versions[uri] += 1
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start, end), text=text)
            ],
        )
    )


async def test_positions_after_a_lone_carriage_return_are_the_clients(editor: Editor) -> None:
    uri = editor.fresh_uri("cr")
    # pi's line 1 holds a lone "\r": the client's lines 1 and 2; pi's line 2 is the client's line 3
    text = "".join(
        line + "\n"
        for line in (
            S.header(),
            with_lone_cr(S.user("a", None, text="first"), "id"),
            S.user("b", "gone", text="second"),
        )
    )
    assert len(spec_lines(text)) == 5 and len(text.split("\n")) == 4
    assert codes_by_line(await editor.open(uri, text)) == [(3, "PI031")]  # the client's line 3

    # a hover on the client's line 2 (the part after the "\r") is about entry a
    position = spec_position(text, '"id":"a"', editor.encoding)
    assert position.line == 2
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), position)
    )
    assert hover is not None and "first" in str(hover.contents)

    # an edit the client places on its line 3 reaches pi's line 2: the dangling parent is fixed
    start = spec_position(text, "gone", editor.encoding)
    end = types.Position(start.line, start.character + len("gone"))
    text = text.replace('"parentId":"gone"', '"parentId":"a"')
    editor.texts[uri] = text
    await change(editor, uri, start, end, "a")
    assert codes_by_line(await editor.diagnostics_for(uri)) == []

    # an edit inside the client's line 2 (after the "\r"): entry a is renamed, b dangles again
    start = spec_position(text, '"a","parentId":null', editor.encoding)
    start = types.Position(start.line, start.character + 1)
    text = text.replace('"id":"a","parentId":null', '"id":"c","parentId":null')
    editor.texts[uri] = text
    await change(editor, uri, start, types.Position(start.line, start.character + 1), "c")
    assert codes_by_line(await editor.diagnostics_for(uri)) == [(3, "PI031")]

    # the outline names each entry on the client's lines
    symbols = await editor.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))
    )

    def flat(found: list) -> list:
        return [item for symbol in found for item in [symbol, *flat(symbol.children or [])]]

    found = {s.name: s.selection_range.start.line for s in flat(list(symbols or []))}
    assert found["user: first"] == 2 and found["user: second"] == 3  # c's id is after the "\r"


async def test_no_range_ends_between_the_cr_and_lf_of_a_crlf_line(editor: Editor) -> None:
    """pi's JSON.parse fails at the CR of a line cut inside a string ("Bad control character"): the
    problem is placed at the end of the editor's line, not past it (where an editor clamps it)."""
    uri = editor.fresh_uri("crlf-cut")
    cut = S.user("b", "a", text="cut off here")[:-12]
    text = "\r\n".join((S.header(), S.user("a", None), cut, S.user("c", "a"))) + "\r\n"
    (invalid,) = [d for d in await editor.open(uri, text) if d.code == "PI001"]
    line = spec_lines(text)[invalid.range.start.line]
    assert line == cut
    width = len(line.encode("utf-16-le")) // 2 if editor.encoding == "utf-16" else len(line)
    assert invalid.range.start.character <= width and invalid.range.end.character <= width


async def test_texts_name_lines_as_the_client_numbers_them(editor: Editor) -> None:
    """A "line N" in a hover, a completion item, a hint, a lens, a quick fix's title or a problem's
    message is the client's line N, where the entry starts: a lone "\\r" above it counts."""
    uri = editor.fresh_uri("cr-texts")
    # the client's lines (from 1): header 1, a 2-3, b 4, c 5, the two d 6 and 7, e 8, f 9
    text = "".join(
        line + "\n"
        for line in (
            S.header(),
            with_lone_cr(S.user("a", None, text="first"), "id"),
            S.assistant("b", "a"),
            S.user("c", "b", text="third"),
            S.user("d", "c"),
            S.user("d", "c"),
            S.context_edit("e", "d", "b"),
            S.context_edit("f", "e", "e"),
        )
    )
    diagnostics = await editor.open(uri, text)
    assert codes_by_line(diagnostics) == [(5, "PI030"), (6, "PI030"), (8, "PI038")]
    (refused,) = [d for d in diagnostics if d.code == "PI038"]
    assert "(line 8 (context_edit))" in refused.message

    async def hover_on(needle: str) -> str:
        position = spec_position(text, needle, editor.encoding)
        hover = await editor.client.text_document_hover_async(types.HoverParams(td(uri), position))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        return hover.contents.value

    b = await hover_on('"id":"b"')
    assert "line 4 · depth 1 · parent `a` (line 2)" in b and "**edited** by line 8" in b

    at = spec_position(text, '"parentId":"c"', editor.encoding)
    at = types.Position(at.line, at.character + len('"parentId":"'))
    items = await editor.client.text_document_completion_async(types.CompletionParams(td(uri), at))
    assert isinstance(items, types.CompletionList)
    assert {item.label: item.detail for item in items.items}["c"] == "message · line 5 · user: third"

    whole = types.Range(types.Position(0, 0), types.Position(len(spec_lines(text)), 0))
    hints = await editor.client.text_document_inlay_hint_async(types.InlayHintParams(td(uri), whole))
    labels = {hint.position.line: hint.label for hint in hints or []}
    assert labels[3] == "depth 1 · edited by line 8" and "omits line 4" in str(labels[7])

    lenses = await editor.client.text_document_code_lens_async(types.CodeLensParams(td(uri)))
    titles = {lens.range.start.line: lens.command.title for lens in lenses or [] if lens.command}
    assert titles[3].startswith("edited by line 8:")
    assert titles[0].endswith("leaf on line 9")  # f, the last entry

    context = types.CodeActionContext(diagnostics=list(diagnostics))
    actions = await editor.client.text_document_code_action_async(
        types.CodeActionParams(td(uri), types.Range(types.Position(5, 0), types.Position(5, 0)), context)
    )
    assert any("line 7 holds the same entry" in action.title for action in actions or [])


async def test_check_json_places_problems_where_the_language_server_does(
    editor: Editor, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pi-session check --json``'s ``range`` (what VS Code's "Check All Sessions" shows) is the
    language server's range of each problem of the same file: after a lone "\\r", after an emoji,
    and at the end of a CRLF line cut short."""
    cut = S.user("d", "c", text="cut off here")[:-12]
    text = "".join(
        line + "\n"
        for line in (
            S.header(),
            with_lone_cr(S.user("a", None, text="first"), "id"),
            with_lone_cr(S.user("b", "gone", text="😀 数据"), "timestamp"),
            S.user("c", "a"),
            cut + "\r",
        )
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(text.encode())
    uri = editor.fresh_uri("cr-check")
    served = sorted(
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in await editor.open(uri, text)
    )
    main(["check", "--json", str(path)])
    (report,) = json.loads(capsys.readouterr().out)["files"]
    checked = sorted(
        (
            d["code"],
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["range"]["end"]["line"],
            d["range"]["end"]["character"],
        )
        for d in report["diagnostics"]
    )
    assert {code for code, *_ in checked} >= {"PI001", "PI031"}
    if editor.encoding == "utf-16":  # (check's characters are VS Code's)
        assert checked == served
    else:
        assert [d[:2] + d[3:4] for d in checked] == [d[:2] + d[3:4] for d in served]
