"""Document synchronisation through the real server: incremental edits (lines counted on "\\n"
only, U+2028 inside strings), pi appending lines, debounced publication, whole-document changes,
and files the editor never sends (followed on disk, ``pi/largeFile``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import builders as S
import pytest
from language_support import Editor, client_fixture, codes_by_line, editor_fixture  # noqa: F401  (fixtures)
from lsprotocol import types

from pi_session_server.server.language_documents import QUICK_OPEN_CHARS

pytestmark = pytest.mark.asyncio(loop_scope="module")


def doc(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


SEP = "one\u2028two\u2029three 😀"


async def test_edit_inside_a_line_with_line_separators(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", None, SEP), S.user("b", "a", SEP), S.user("c", "b"))
    assert list(await editor.open(uri, text)) == []
    # break the parent link of line 3 ("b" -> "bx"): the server must edit line 3, not a line U+2028 created
    pos = editor.pos_of(uri, 3, '"b"', after=True)
    pos = types.Position(pos.line, pos.character - 1)
    diagnostics = await editor.edit(uri, pos, pos, "x")
    assert codes_by_line(diagnostics) == [(3, "PI031")]
    # now edit inside the content of line 2, after the separators, then fix line 3 again
    inside = editor.pos_of(uri, 2, "three")
    assert codes_by_line(await editor.edit(uri, inside, inside, "😀 ")) == [(3, "PI031")]
    start = editor.pos_of(uri, 3, '"bx"')
    end = editor.pos_of(uri, 3, '"bx"', after=True)
    assert list(await editor.edit(uri, start, end, '"b"')) == []
    assert "😀 three" in editor.texts[uri].split("\n")[2]


async def test_multi_line_edits_insert_and_delete_lines(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "b"))
    await editor.open(uri, text)
    # delete line 2 (b): c is orphaned
    diagnostics = await editor.edit(uri, types.Position(2, 0), types.Position(3, 0), "")
    assert codes_by_line(diagnostics) == [(2, "PI031")]
    # insert two lines before it, the first one restoring b
    diagnostics = await editor.edit(
        uri, types.Position(2, 0), types.Position(2, 0), S.user("b", "a") + "\n" + S.user("x", "zz") + "\n"
    )
    assert codes_by_line(diagnostics) == [(3, "PI031")]


async def test_appending_lines_one_by_one_as_pi_does(editor: Editor) -> None:
    uri = editor.fresh_uri()
    await editor.open(uri, doc(S.header(), S.user("a", None)))
    call = S.assistant("b", "a", calls=(("t1", "read", {}),))
    assert codes_by_line(await editor.edit(uri, editor.end(uri), editor.end(uri), call + "\n")) == [
        (2, "PI037")
    ]
    # a partial write first (no newline yet), then the rest of the line
    result = S.tool_result("c", "b", "t1", "done 😀")
    half = len(result) // 2
    assert codes_by_line(await editor.edit(uri, editor.end(uri), editor.end(uri), result[:half])) == [
        (2, "PI037"),
        (3, "PI002"),
    ]
    assert list(await editor.edit(uri, editor.end(uri), editor.end(uri), result[half:] + "\n")) == []


async def test_whole_document_change(editor: Editor) -> None:
    uri = editor.fresh_uri()
    await editor.open(uri, doc(S.header(), S.user("a", None)))
    new_text = doc(S.user("a", None))
    editor.texts[uri] = new_text
    mark = editor.mark(uri)
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=5),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
        )
    )
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(0, "PI010")]


async def test_burst_of_changes_is_published_fewer_times(editor: Editor) -> None:
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is not sent them")
    uri = editor.fresh_uri()
    await editor.open(uri, doc(S.header(), S.user("a", None)))
    publications: list[Any] = []
    features = editor.client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def counting(params: types.PublishDiagnosticsParams) -> None:
        if params.uri == uri:
            publications.append(params)
        original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = counting
    try:
        changes = 20
        for i in range(changes):
            line = S.user(f"n{i}", f"n{i - 1}" if i else "a") + "\n"
            end = editor.end(uri)
            editor.texts[uri] += line
            editor.versions[uri] += 1
            editor.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=uri, version=editor.versions[uri]
                    ),
                    content_changes=[
                        types.TextDocumentContentChangePartial(range=types.Range(end, end), text=line)
                    ],
                )
            )
        # the last line breaks a link; wait until that state has been published
        end = editor.end(uri)
        diagnostics = await editor.edit(uri, end, end, S.user("z", "missing") + "\n")
        while codes_by_line(diagnostics) != [(22, "PI031")]:
            diagnostics = await editor.diagnostics_for(uri)
        assert 1 <= len(publications) < changes + 1
        assert publications[-1].version == editor.versions[uri]
    finally:
        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = original


async def test_last_publication_carries_the_last_version_when_the_last_change_changed_nothing(
    editor: Editor,
) -> None:
    # A change is published at once; the next ones of the burst leave the text as it was (an
    # editor replacing a character with itself, a change of nothing): the diagnostics stay, but
    # the last publication must name the latest version, or the editor takes them for an older
    # text's.
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is not sent them")
    uri = editor.fresh_uri()
    await editor.open(uri, doc(S.header(), S.user("a", None), S.user("b", "gone")))
    await asyncio.sleep(0.2)  # past the debounce: the next change is published at once
    inside = editor.pos_of(uri, 1, '"a"', after=True)
    inside = types.Position(inside.line, inside.character - 1)  # the id "a" becomes "ax"
    same = editor.pos_of(uri, 2, "gone")
    same_end = types.Position(same.line, same.character + 1)
    changes: list[list[types.TextDocumentContentChangeEvent]] = [
        [types.TextDocumentContentChangePartial(range=types.Range(inside, inside), text="x")],
        [types.TextDocumentContentChangePartial(range=types.Range(same, same_end), text="g")],
        [],
    ]
    mark = editor.mark(uri)
    for content_changes in changes:
        editor.versions[uri] += 1
        editor.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
                content_changes=content_changes,
            )
        )
    last = editor.versions[uri]
    deadline = asyncio.get_running_loop().time() + 5
    while asyncio.get_running_loop().time() < deadline:
        published = editor.published.get(uri, [])[mark:]
        if published and published[-1].version == last:
            break
        await asyncio.sleep(0.02)
    published = editor.published.get(uri, [])[mark:]
    assert published, "no publication after the changes"
    assert [p.version for p in published][-1] == last
    assert codes_by_line(published[-1].diagnostics) == [(2, "PI031")]
    editor.given[uri] = len(editor.published[uri])


async def test_file_the_editor_does_not_send_is_read_and_followed_on_disk(
    editor: Editor, tmp_path: Path
) -> None:
    path = tmp_path / "2026-11-30T09-13-48-180Z_big.jsonl"
    path.write_text(doc(S.header(), S.user("a", None), S.user("b", "gone")), encoding="utf-8")
    uri = path.as_uri()
    mark = editor.mark(uri)
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=types.Position(1, 5))
    )
    assert hover is not None and "**user**" in hover.contents.value  # type: ignore[union-attr]
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(2, "PI031")]
    (note,) = [n for n in editor.notifications.get("pi/largeFile", []) if n.uri == uri]
    assert note.size == path.stat().st_size and "disk" in note.message
    # pi appends to the file: the server notices and publishes again
    with path.open("a", encoding="utf-8") as f:
        f.write(S.user("gone", "a") + "\n")
    while True:
        diagnostics = await editor.diagnostics_for(uri)
        if not diagnostics:
            break
    report = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport) and list(report.items) == []


async def test_a_followed_file_rewritten_in_place_is_read_again(editor: Editor, tmp_path: Path) -> None:
    # The server keeps a followed file's lines as places in the file, not bytes: a rewrite that
    # keeps the inode and grows the file must still be told from an append (by the bytes it
    # loaded, not by reading its own lines back from the rewritten file).
    path = tmp_path / "2026-11-30T09-13-48-180Z_rewritten.jsonl"
    path.write_text(doc(S.header(), S.user("a", None), S.user("b", "gone")), encoding="utf-8")
    uri = path.as_uri()
    mark = editor.mark(uri)
    await editor.client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=types.Position(1, 5))
    )
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(2, "PI031")]
    inode = path.stat().st_ino
    # line 2 rewritten to the same length (every "\n" where it was), then a line more
    line_2 = S.user("b", "a", text="helloooo")
    assert len(line_2) == len(S.user("b", "gone"))
    with path.open("w", encoding="utf-8") as f:  # truncate and write: the same inode
        f.write(doc(S.header(), S.user("a", None), line_2, S.user("c", "zzz")))
    assert path.stat().st_ino == inode
    while True:
        found = codes_by_line(await editor.diagnostics_for(uri))
        if found != [(2, "PI031")]:
            break
    assert found == [(3, "PI031")]


async def _hover(editor: Editor, uri: str) -> Any:
    return await editor.client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=types.Position(1, 5))
    )


async def test_a_followed_file_deleted_takes_its_problems_back(editor: Editor, tmp_path: Path) -> None:
    # A file the editor never sent is gone once deleted: its problems leave the Problems view and
    # a request about it answers as for a file that is not there, not from the text it had.
    path = tmp_path / "2026-11-30T09-13-48-180Z_deleted.jsonl"
    path.write_text(doc(S.header(), S.user("a", None), S.user("b", "gone")), encoding="utf-8")
    uri = path.as_uri()
    mark = editor.mark(uri)
    assert await _hover(editor, uri) is not None
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(2, "PI031")]
    path.unlink()
    assert list(await editor.diagnostics_for(uri)) == []
    assert await _hover(editor, uri) is None
    # the same path written again is read afresh
    path.write_text(doc(S.header(), S.user("a", None), S.user("c", "lost")), encoding="utf-8")
    mark = editor.mark(uri)
    hover = await _hover(editor, uri)
    assert hover is not None and "`a`" in hover.contents.value  # type: ignore[union-attr]
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(2, "PI031")]


async def test_a_request_after_deleting_a_followed_file_finds_it_gone(editor: Editor, tmp_path: Path) -> None:
    # pi/delete then a request at once (before the poller looks): the request finds no file
    path = tmp_path / "2026-11-30T09-13-48-180Z_pidelete.jsonl"
    path.write_text(doc(S.header(), S.user("a", None)), encoding="utf-8")
    uri = path.as_uri()
    assert await _hover(editor, uri) is not None
    await editor.client.protocol.send_request_async("pi/delete", {"uri": uri, "permanent": True})
    assert await _hover(editor, uri) is None


async def test_a_big_document_reopened_with_lines_appended_is_published_complete_at_once(
    editor: Editor,
) -> None:
    """Neovim reloads a session pi appended to as didClose + didOpen of the grown text: the
    analysis kept at the closing continues, and its first publication is the complete one (a
    big document analysed afresh publishes its envelope problems first)."""
    if editor.pulls:
        pytest.skip("a client that pulls diagnostics is answered the complete list either way")
    base = S.generate_session(QUICK_OPEN_CHARS + 100_000, seed=5).decode()
    last = json.loads(base.rstrip("\n").split("\n")[-1])["id"]
    # a tool call left unanswered: a problem only the complete analysis finds
    text = base + S.assistant("zcall", last, calls=(("tz", "read", {}),)) + "\n"
    uri = editor.fresh_uri("reopened")
    await editor.open(uri, text)
    assert codes_by_line(await editor.diagnostics_for(uri)) == [(text.count("\n") - 1, "PI037")]
    editor.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert list(await editor.diagnostics_for(uri)) == []

    grown = text + S.user("zuser", "zcall") + "\n" + '{"type":"message","id":"torn'  # pi writing
    reopened = await editor.open(uri, grown)
    fresh_uri = editor.fresh_uri("fresh")
    first_pass = await editor.open(fresh_uri, grown)
    complete = await editor.diagnostics_for(fresh_uri)
    assert codes_by_line(first_pass) != codes_by_line(complete)
    assert codes_by_line(reopened) == codes_by_line(complete)
    assert [d.range for d in reopened] == [d.range for d in complete]


async def _published_after(editor: Editor, uri: str, mark: int, timeout: float = 10) -> list[Any]:
    """Every publication for ``uri`` after the first ``mark``, once there is one more."""
    deadline = asyncio.get_running_loop().time() + timeout
    while len(editor.published.get(uri, [])) <= mark:
        assert asyncio.get_running_loop().time() < deadline, f"no new publication for {uri}"
        await asyncio.sleep(0.01)
    return editor.published[uri][mark:]


async def _own_diagnostics(editor: Editor, uri: str, version: int, mark: int) -> list[tuple[int, str]]:
    """The open document's diagnostics at ``version``: pulled, or the publication naming it."""
    if editor.pulls:
        report = await editor.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
        )
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        return codes_by_line(report.items)
    while True:
        published = await _published_after(editor, uri, mark)
        if published[-1].version == version:
            return codes_by_line(published[-1].diagnostics)
        mark += len(published)


async def test_a_file_read_from_disk_then_opened_lists_its_problems_once(
    editor: Editor, tmp_path: Path
) -> None:
    """The problems pushed for a file read from disk (the editor had not sent it) give way to the
    open document's own when the editor opens it: a client that pulls would list each problem
    twice, and keep the disk read's after the user fixed it. Closed again, the file shows the disk
    read's problems again."""
    path = tmp_path / "2026-11-30T09-13-48-180Z_opened_later.jsonl"
    text = doc(S.header(), S.user("a", None), S.user("b", "gone"))
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    mark = editor.mark(uri)
    assert await _hover(editor, uri) is not None
    assert codes_by_line(await editor.diagnostics_for(uri, after=mark)) == [(2, "PI031")]

    mark = editor.mark(uri)
    editor.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="pi-session", version=1, text=text)
        )
    )
    assert await _own_diagnostics(editor, uri, 1, mark) == [(2, "PI031")]
    if editor.pulls:  # the disk read's are taken back: the pulled ones are the only list
        assert [codes_by_line(p.diagnostics) for p in await _published_after(editor, uri, mark)] == [[]]

    # the user fixes the link: nothing pushed before stays
    mark = editor.mark(uri)
    start = types.Position(2, text.split("\n")[2].index('"gone"'))
    end = types.Position(2, start.character + len('"gone"'))
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(range=types.Range(start, end), text='"a"')],
        )
    )
    assert await _own_diagnostics(editor, uri, 2, mark) == []
    assert list(editor.published[uri][-1].diagnostics) == []

    # closed without saving: the file on disk still has the problem, shown as the disk read's
    mark = editor.mark(uri)
    editor.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    while True:
        published = await _published_after(editor, uri, mark)
        if codes_by_line(published[-1].diagnostics) == [(2, "PI031")]:
            break
        mark += len(published)
    assert published[-1].version is None  # (the file's, not a version of the closed document)
    told = [n for n in editor.notifications.get("pi/largeFile", []) if n.uri == uri]
    assert len(told) == 1, "the client was told twice that the file is read from disk"


async def test_a_file_read_from_disk_then_opened_under_another_spelling_lists_its_problems_once(
    editor: Editor, tmp_path: Path
) -> None:
    """The editor opens the file under another spelling of its URI than the one read from disk:
    the problems pushed for that one are taken back whatever the client does with diagnostics
    (the open document's own go to the other URI), and shown again once the editor closes it."""
    path = tmp_path / "2026-11-30T09-13-48-180Z_spelled-twice.jsonl"
    text = doc(S.header(), S.user("a", None), S.user("b", "gone"))
    path.write_text(text, encoding="utf-8")
    opened_uri = path.as_uri()
    read_uri = opened_uri.replace("spelled-twice", "spelled%2Dtwice")
    assert read_uri != opened_uri
    mark = editor.mark(read_uri)
    assert await _hover(editor, read_uri) is not None
    assert codes_by_line(await editor.diagnostics_for(read_uri, after=mark)) == [(2, "PI031")]

    mark, mark_opened = editor.mark(read_uri), editor.mark(opened_uri)
    editor.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=opened_uri, language_id="pi-session", version=1, text=text)
        )
    )
    assert [codes_by_line(p.diagnostics) for p in await _published_after(editor, read_uri, mark)] == [[]]
    assert await _own_diagnostics(editor, opened_uri, 1, mark_opened) == [(2, "PI031")]

    mark = editor.mark(read_uri)
    editor.client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(opened_uri))
    )
    published = await _published_after(editor, read_uri, mark)
    assert [codes_by_line(p.diagnostics) for p in published] == [[(2, "PI031")]]
