"""Diagnostics through the real server: every code, on the right line and columns, for both clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import builders as S
import pytest
from language_support import Editor, client_fixture, codes_by_line, editor_fixture  # noqa: F401  (fixtures)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def URI(editor: Editor) -> str:
    return editor.fresh_uri()


CALL = (("t1", "read", {"path": "/x"}),)


def doc(*lines: str, final_newline: bool = True) -> str:
    return "\n".join(lines) + ("\n" if final_newline else "")


async def test_clean_session_has_no_diagnostics(editor: Editor, URI: str) -> None:
    text = doc(
        S.header(), S.user("a", None), S.assistant("b", "a", calls=CALL), S.tool_result("c", "b", "t1")
    )
    assert list(await editor.open(URI, text)) == []


CASES = [
    # (lines, final newline, expected (line, code) pairs)
    ([S.header(), '{"type":"message","id":"a"', S.user("b", None)], True, [(1, "PI001")]),
    ([S.header(), S.user("a", None), '{"type":"message","id":"b","par'], False, [(2, "PI002")]),
    ([S.header(), "[1,2]", "null", S.user("a", None)], True, [(1, "PI003"), (2, "PI003")]),
    ([S.header(), "", S.user("a", None)], True, [(1, "PI004")]),
    ([S.header(), S.user("a", None)], False, [(1, "PI005")]),
    ([S.user("a", None), S.user("b", "a")], True, [(0, "PI010")]),
    (
        [
            '{"type":"session","version":3,"timestamp":"2026-11-30T09:13:48.180Z","cwd":"/p"}',
            S.user("a", None),
        ],
        True,
        [(0, "PI011")],
    ),
    ([S.user("a", None), S.header()], True, [(1, "PI012")]),
    ([S.header(), S.user("a", None), S.header()], True, [(2, "PI013")]),
    (["\ufeff" + S.header(), S.user("a", None)], True, [(0, "PI014")]),
    ([S.header(version=2), S.user("a", None)], True, [(0, "PI015")]),
    ([S.header(version="abc"), S.user("a", None)], True, [(0, "PI016")]),
    (
        [
            S.header(),
            '{"type":"future_entry","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z"}',
        ],
        True,
        [(1, "PI020")],
    ),
    (
        [
            S.header(),
            '{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","provider":"p"}',
        ],
        True,
        [(1, "PI021")],
    ),
    (
        [
            S.header(),
            '{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","provider":"p","modelId":7}',
        ],
        True,
        [(1, "PI022")],
    ),
    (
        [
            S.header(),
            '{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"robot","timestamp":1}}',
        ],
        True,
        [(1, "PI023")],
    ),
    (
        [
            S.header(),
            '{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":[{"type":"video","url":"x"}],"timestamp":1}}',
        ],
        True,
        [(1, "PI024")],
    ),
    ([S.header(), S.user("a", None, timestamp="yesterday")], True, [(1, "PI025")]),
    (
        [
            S.header(),
            S.user("a", None),
            S.assistant("b", "a").replace('"stopReason":"stop"', '"stopReason":"pending"'),
        ],
        True,
        [(2, "PI026")],
    ),
    ([S.header(), S.user("a", None), S.user("a", "a")], True, [(1, "PI030"), (2, "PI030"), (2, "PI032")]),
    ([S.header(), S.user("a", None), S.user("b", "gone")], True, [(2, "PI031")]),
    ([S.header(), S.user("a", "b"), S.user("b", "a")], True, [(1, "PI032"), (2, "PI032")]),
    ([S.header(), S.user("a", None), S.label("l", "a", "zzz")], True, [(2, "PI033")]),
    ([S.header(), S.user("a", None), S.user("b", None), S.compaction("c", "b", "a")], True, [(3, "PI034")]),
    ([S.header(), S.user("a", None), S.branch_summary("b", "a", "nowhere")], True, [(2, "PI035")]),
    ([S.header(), S.user("a", None), S.tool_result("b", "a", "t9")], True, [(2, "PI036")]),
    ([S.header(), S.user("a", None), S.assistant("b", "a", calls=CALL)], True, [(2, "PI037")]),
]


@pytest.mark.parametrize(("lines", "final_newline", "expected"), CASES, ids=[c[2][0][1] for c in CASES])
async def test_each_code_on_its_line(
    editor: Editor, URI: str, lines: list[str], final_newline: bool, expected: list[tuple[int, str]]
) -> None:
    diagnostics = await editor.open(URI, doc(*lines, final_newline=final_newline))
    assert codes_by_line(diagnostics) == expected
    assert all(d.source == "pi-session" and d.message for d in diagnostics)


async def test_huge_inline_image_reports_its_size(editor: Editor, URI: str) -> None:
    data = "A" * 1_200_000
    text = doc(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=CALL),
        S.tool_result("c", "b", "t1", images=((data, "image/png"),)),
    )
    diagnostics = await editor.open(URI, text)
    assert codes_by_line(diagnostics) == [(3, "PI040")]
    assert "900.0 KB" in diagnostics[0].message and "image/png" in diagnostics[0].message


async def test_severities(editor: Editor, URI: str) -> None:
    text = doc(S.header(version=2), S.user("a", None), S.user("b", "gone"), "{oops")
    found = {str(d.code): d.severity for d in await editor.open(URI, text)}
    assert found == {
        "PI015": types.DiagnosticSeverity.Information,
        "PI031": types.DiagnosticSeverity.Warning,
        "PI001": types.DiagnosticSeverity.Error,
    }


async def test_columns_after_emoji_cjk_and_line_separators(editor: Editor, URI: str) -> None:
    """U+2028 inside a string is not a line break; columns count in the negotiated encoding."""
    tricky = "emoji 😀🚀 CJK 数据検索 sep\u2028para\u2029end"
    bad = (
        '{"type":"message","id":"x","parentId":"a","timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":"'
        + tricky
        + '","timestamp":1},}'
    )
    text = doc(S.header(), S.user("a", None, tricky), bad, S.user("b", "nowhere", tricky))
    diagnostics = await editor.open(URI, text)
    assert codes_by_line(diagnostics) == [(2, "PI001"), (3, "PI031")]
    by_code = {str(d.code): d for d in diagnostics}
    # the JSON error sits at the '}' after the trailing comma, past the emoji and CJK text
    error = by_code["PI001"].range
    expected = editor.pos_of(URI, 2, ",}", after=False).character + 1
    assert (error.start.line, error.start.character) == (2, expected)
    orphan = by_code["PI031"].range
    start, end = editor.span(URI, 3, '"nowhere"')
    assert (orphan.start.character, orphan.end.character) == (start, end)


async def test_utf16_and_utf8_columns_differ_where_they_should(editor: Editor, URI: str) -> None:
    line = S.user("b", "zz", "😀😀😀")
    text = doc(S.header(), line.replace('"content":"😀😀😀"', '"content":"😀😀😀","x":1'))
    text = doc(
        S.header(),
        '{"type":"message","id":"b","parentId":"a😀","timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":"😀","timestamp":1}}',
        S.user("c", "b"),
    )
    diagnostics = await editor.open(URI, text)
    (d,) = [d for d in diagnostics if d.code == "PI031"]
    start_index = text.split("\n")[1].index('"a😀"')
    assert d.range.start.character == start_index if editor.encoding == "utf-32" else True
    if editor.encoding == "utf-16":
        assert (d.range.start.character, d.range.end.character) == (start_index, start_index + 5)
    else:
        assert editor.encoding == "utf-8"
        assert (d.range.start.character, d.range.end.character) == (start_index, start_index + 7)


async def test_control_characters_in_messages_are_sent_escaped(editor: Editor, URI: str) -> None:
    # The parser's "Unexpected token" quotes the raw character, a duplicate id quotes the data:
    # an editor shows a raw control character as nothing, a box, or a broken line.
    text = doc(S.header(), '{"type":\0}', S.user("a\x1b", None), S.user("a\x1b", None))
    diagnostics = await editor.open(URI, text)
    messages = [d.message for d in diagnostics] + [
        r.message for d in diagnostics for r in d.related_information or []
    ]
    assert codes_by_line(diagnostics) == [(1, "PI001"), (2, "PI030"), (3, "PI030")]
    assert not [m for m in messages if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in m)]
    assert "Unexpected token '\\x00'" in diagnostics[0].message
    assert "`a\\x1b`" in diagnostics[1].message


async def test_related_information_points_at_the_other_duplicate(editor: Editor, URI: str) -> None:
    text = doc(S.header(), S.user("a", None), S.user("b", "a"), S.user("b", "a"))
    diagnostics = await editor.open(URI, text)
    dup = [d for d in diagnostics if d.code == "PI030"]
    assert [d.range.start.line for d in dup] == [2, 3]
    assert [r.location.range.start.line for r in dup[0].related_information or []] == [3]


async def test_pull_diagnostics_match_push_and_report_unchanged(editor: Editor, URI: str) -> None:
    text = doc(S.header(), S.user("a", None), S.user("b", "gone"))
    pushed = await editor.open(URI, text)
    report = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(URI))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert codes_by_line(report.items) == codes_by_line(pushed) == [(2, "PI031")]
    again = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(URI), previous_result_id=report.result_id)
    )
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)


async def test_a_document_closed_and_opened_again_ends_with_its_own_diagnostics(editor: Editor) -> None:
    """Editors close and open a document again (a change of language mode, a revert): the empty
    publication of the close goes out before the diagnostics of the open, never after them."""
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is not sent them")
    text = doc(S.user("a", None), S.user("b", "a"))  # no header: an error
    for _ in range(20):
        uri = editor.fresh_uri("reopened")
        item = types.TextDocumentItem(uri=uri, language_id="pi-session", version=1, text=text)
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
        )
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        for _ in range(500):  # the publications of both opens and of the close
            if len(editor.published.get(uri, [])) >= 3:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # (nothing comes later)
        assert [bool(p.diagnostics) for p in editor.published[uri]] == [True, False, True]


async def test_a_document_opened_again_with_other_text_is_never_unchanged(editor: Editor) -> None:
    """A pull's resultId names the opening of the document, not only its version (every opening
    starts at version 1): the old one never makes the new text's report "unchanged"."""
    if not editor.pulls:
        pytest.skip("a client that is sent diagnostics does not pull them")
    uri = editor.fresh_uri("pulled")
    texts = [doc(S.header(), S.user("a", None)), doc(S.header(), S.user("a", None), S.user("b", "gone"))]
    previous = None
    result_ids = set()
    for round_number in range(20):
        text = texts[round_number % 2]
        await editor.open(uri, text)
        report = await editor.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri), previous_result_id=previous)
        )
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport), round_number
        assert codes_by_line(report.items) == ([] if round_number % 2 == 0 else [(2, "PI031")])
        previous = report.result_id
        result_ids.add(previous)
        editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
        )
    assert len(result_ids) == 20  # each opening's own


async def test_big_document_publishes_envelope_problems_first_then_everything(
    editor: Editor, URI: str
) -> None:
    """A document over ``QUICK_OPEN_CHARS`` gets two pushes: the envelope problems, then the full list,
    both on the editor's lines (a lone CR in an early line is a line break to it, white space to pi)."""
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is not sent them")
    from pi_session_server.server.language_documents import QUICK_OPEN_CHARS

    body = S.generate_session(QUICK_OPEN_CHARS + 200_000, seed=3).decode("utf-8")
    lines = body.rstrip("\n").split("\n")
    lines[1] = lines[1].replace('"id"', '\r"id"', 1)
    last_id = json.loads(lines[-1])["id"]
    lines += [
        S.assistant("q1", last_id, text="é 😀", calls=CALL),  # unanswered call: needs the full scan
        S.user("q2", "gone"),  # dangling parent: an envelope problem
        S.user("q3", "q2", text=[{"type": "video"}]),  # block type: needs the full scan
    ]
    n = len(lines) + 1  # the editor's line count
    text = doc(*lines)
    first = await editor.open(URI, text)
    assert codes_by_line(first) == [(n - 2, "PI031")]
    second = await editor.diagnostics_for(URI)
    expected = [(n - 3, "PI037"), (n - 2, "PI031"), (n - 1, "PI024")]
    assert codes_by_line(second) == expected
    report = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(URI))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert codes_by_line(report.items) == expected


@pytest.mark.parametrize("quotes", [250_000, 0], ids=["escapes-over-the-bound", "under-the-bound"])
async def test_publishes_in_two_steps_says_how_often_an_opening_is_published(
    editor: Editor, URI: str, quotes: int
) -> None:
    """A client timing the publications (bench/) asks ``publishes_in_two_steps`` how many it gets:
    the server decides on the size of the text's JSON token, so a text of fewer characters than
    ``QUICK_OPEN_CHARS`` whose escapes take it over the bound is published twice, and one under it
    once (a change published next is the opening's second publication, else the change's)."""
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is not sent them")
    from pi_session_server.server.language_documents import QUICK_OPEN_CHARS, publishes_in_two_steps

    base = S.generate_session(QUICK_OPEN_CHARS - (700_000 if quotes else 300_000), seed=6).decode("utf-8")
    lines = base.rstrip("\n").split("\n")
    lines.append(S.user("quoted", json.loads(lines[-1])["id"], text='"' * quotes))
    text = doc(*lines)
    did_open = {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}
    body = json.dumps(
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": did_open}}
    )
    twice = publishes_in_two_steps(body.encode())
    assert len(text) < QUICK_OPEN_CHARS and twice == bool(quotes)
    await editor.open(URI, text)
    if twice:
        await editor.diagnostics_for(URI)
    await editor.edit(URI, editor.end(URI), editor.end(URI), S.user("q2", "gone") + "\n")
    assert [p.version for p in editor.published[URI]] == [1] * (2 if twice else 1) + [2]


async def test_a_big_document_analysed_in_the_background_keeps_requests_and_changes_in_order(
    editor: Editor, URI: str
) -> None:
    """A document over ``QUICK_OPEN_CHARS`` is analysed on a worker thread: a request sent before a
    change sees the text before it, one sent after sees it, and the change is published. (A
    request about the whole document sent before a change is answered ContentModified instead:
    test_language_superseded.py.)"""
    from pi_session_server.server.language_documents import QUICK_OPEN_CHARS

    body = S.generate_session(QUICK_OPEN_CHARS + 200_000, seed=4).decode("utf-8")
    lines = body.rstrip("\n").split("\n")
    n = len(lines)
    text = doc(*lines)
    editor.texts[URI] = text
    editor.versions[URI] = 1
    client = editor.client
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(URI, "pi-session", 1, text))
    )
    lens_params = types.CodeLensParams(types.TextDocumentIdentifier(URI))
    on_header = types.HoverParams(types.TextDocumentIdentifier(URI), types.Position(0, 3))
    before = asyncio.wrap_future(client.text_document_hover(on_header))  # sent now
    at_end = types.Position(n, 0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(at_end, at_end), text=S.user("q2", "gone") + "\n"
                )
            ],
        )
    )
    after = asyncio.wrap_future(client.text_document_code_lens(lens_params))

    def header_lens(lenses: Any) -> str:
        return next(lens.command.title for lens in lenses if lens.range.start.line == 0)

    hovered = await before
    assert hovered is not None and isinstance(hovered.contents, types.MarkupContent)
    assert f"(line {n})" in hovered.contents.value and f"(line {n + 1})" not in hovered.contents.value
    assert header_lens(await after).endswith(f"leaf on line {n + 1}")
    for _ in range(5):  # the analysed text is published first, then the change
        if (n, "PI031") in codes_by_line(await editor.diagnostics_for(URI)):
            break
    else:
        pytest.fail("the change made during the analysis was never published")


async def test_a_glued_line_whose_second_piece_starts_with_a_non_ascii_character(
    editor: Editor, URI: str
) -> None:
    # the range at the glue was one byte of "é": in UTF-16 every diagnostics and code action
    # request on the document failed; in UTF-8 the range split the character
    cut = 'é","timestamp":1}}'
    text = doc(S.header(), S.user("a", None), S.assistant("b", "a") + cut + S.user("c", "b"))
    (glued,) = [d for d in await editor.open(URI, text) if d.code == "PI006"]
    assert glued.range == types.Range(editor.pos_of(URI, 2, "é"), editor.pos_of(URI, 2, "é", after=True))
    actions = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(URI),
            range=types.Range(types.Position(2, 0), types.Position(2, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert any(a.title.startswith("Split the glued line") for a in actions or [])
