"""Repairs as code actions through the real server: each one offered for its diagnostic, resolved,
applied by the client, and then the problem is gone."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import builders as S
import pytest
from language_support import Editor, client_fixture, codes_by_line, editor_fixture  # noqa: F401  (fixtures)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")


def doc(*lines: str, final_newline: bool = True) -> str:
    return "\n".join(lines) + ("\n" if final_newline else "")


async def actions_on(editor: Editor, uri: str, line: int) -> list[types.CodeAction]:
    found = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


async def apply_action(editor: Editor, uri: str, line: int, title_start: str) -> list[types.Diagnostic]:
    actions = [a for a in await actions_on(editor, uri, line) if a.title.startswith(title_start)]
    assert len(actions) == 1, [a.title for a in await actions_on(editor, uri, line)]
    action = actions[0]
    if action.edit is None:
        action = await editor.client.code_action_resolve_async(action)
    assert action.edit is not None and action.edit.changes is not None
    return list(await editor.apply(uri, action.edit.changes[uri]))


async def test_remove_truncated_last_line(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(
        S.header(),
        S.user("a", None),
        '{"type":"message","id":"b","parentId":"a","timest',
        final_newline=False,
    )
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI002")]
    assert await apply_action(editor, uri, 2, "Remove the truncated last line") == []
    assert editor.texts[uri] == doc(S.header(), S.user("a", None))


async def test_split_lines_glued_after_a_crash(editor: Editor) -> None:
    uri = editor.fresh_uri()
    a, b, c = S.user("a", None), S.assistant("b", "a", "😀 answer"), S.user("c", "b")
    cut = b[:60]
    text = doc(S.header(), a, cut + b, c)
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI006"), (3, "PI031")]
    titles = [x.title for x in await actions_on(editor, uri, 3)]
    assert titles[0] == "Split line 3, where the parent `b` is glued to another line"
    remaining = await apply_action(editor, uri, 2, "Split the glued line and remove the cut-off part")
    assert remaining == []
    assert editor.texts[uri] == doc(S.header(), a, b, c)


async def test_move_an_orphan_tool_result_to_its_call(editor: Editor) -> None:
    uri = editor.fresh_uri()
    calls: tuple[tuple[str, str, dict[str, object]], ...] = (("t1", "read", {}),)
    lines = [
        S.header(),
        S.user("u1", None),
        S.assistant("a1", "u1", calls=calls),
        S.user("u2", "u1", "elsewhere"),
        S.tool_result("r1", "u2", "t1"),
    ]
    assert codes_by_line(await editor.open(uri, doc(*lines))) == [(2, "PI037"), (4, "PI036")]
    assert await apply_action(editor, uri, 4, "Move under the assistant message that made the call") == []
    assert editor.texts[uri] == doc(*lines[:4], S.tool_result("r1", "a1", "t1"))


async def test_keep_an_orphan_tool_result_as_a_custom_message(editor: Editor) -> None:
    uri = editor.fresh_uri()
    lines = [
        S.header(),
        S.user("u1", None),
        S.tool_result("r1", "u1", "gone", "what it printed"),
        S.user("u2", "r1"),
    ]
    assert codes_by_line(await editor.open(uri, doc(*lines))) == [(2, "PI036")]
    (preferred,) = [a for a in await actions_on(editor, uri, 2) if a.is_preferred]
    assert preferred.title.startswith("Keep it as a custom message")
    assert await apply_action(editor, uri, 2, "Keep it as a custom message") == []
    kept = editor.texts[uri].split("\n")
    note = json.loads(kept[2])
    assert (note["type"], note["id"], note["parentId"]) == ("custom_message", "r1", "u1")
    assert note["content"] == [{"type": "text", "text": "what it printed"}]
    assert note["details"]["toolResult"]["toolCallId"] == "gone"
    assert kept[:2] + kept[3:] == lines[:2] + lines[3:] + [""]


async def test_fix_all_makes_every_repair_that_loses_nothing(editor: Editor) -> None:
    uri = editor.fresh_uri()
    a, b, c, d = S.user("a", None), S.assistant("b", "a"), S.user("c", "b"), S.user("d", "c")
    text = doc("\ufeff" + a, S.header(), b[:50] + b, c + d, S.tool_result("r", "d", "gone"))
    assert codes_by_line(await editor.open(uri, text)) == [
        (0, "PI014"),
        (1, "PI012"),
        (2, "PI006"),
        (3, "PI006"),
        (4, "PI031"),  # its parent d is glued inside line 3
        (4, "PI036"),
    ]
    quick_fixes_only = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(2, 0), types.Position(2, 0)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert all(x.kind == types.CodeActionKind.QuickFix for x in quick_fixes_only or [])
    found = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    (action,) = [x for x in found or [] if isinstance(x, types.CodeAction)]
    assert action.kind == "source.fixAll.pi-session" and "(4 repairs)" in action.title
    if action.edit is None:
        action = await editor.client.code_action_resolve_async(action)
    assert action.edit is not None and action.edit.changes is not None
    remaining = await editor.apply(uri, action.edit.changes[uri])
    # the orphan tool result needs a choice (move or remove): fix-all leaves it to the user
    assert codes_by_line(remaining) == [(2, "PI001"), (6, "PI036")]
    assert editor.texts[uri] == doc(S.header(), a, b[:50], b, c, d, S.tool_result("r", "d", "gone"))


async def test_insert_missing_header_named_after_the_file(editor: Editor) -> None:
    uri = editor.fresh_uri("named")
    text = doc(S.user("a", None, "😀 first"), S.user("b", "a"))
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI010")]
    assert await apply_action(editor, uri, 0, "Insert a session header") == []
    header = json.loads(editor.texts[uri].split("\n")[0])
    assert header["type"] == "session" and header["version"] == 3
    assert header["id"] == uri.rsplit("_", 1)[1].removesuffix(".jsonl")
    assert header["timestamp"] == "2026-11-30T09:13:48.180Z"


async def test_the_header_inserted_in_an_untitled_document_names_the_servers_working_directory(
    editor: Editor,
) -> None:
    # no file, and a client that gave no workspace: pi writes its process's working directory
    uri = f"untitled:Untitled-{editor.opened}"
    editor.opened += 1
    text = doc(S.user("a", None), S.user("b", "a"))
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI010")]
    assert await apply_action(editor, uri, 0, "Insert a session header") == []
    header = json.loads(editor.texts[uri].split("\n")[0])
    assert header["type"] == "session" and header["cwd"] == os.getcwd()


async def test_move_header_to_first_line(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.user("a", None), S.user("b", "a"), S.header())
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI012")]
    assert await apply_action(editor, uri, 2, "Move the session header") == []
    assert editor.texts[uri] == doc(S.header(), S.user("a", None), S.user("b", "a"))


async def test_remove_duplicate_header(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", None), S.header(session_id="other"), S.user("b", "a"))
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI013")]
    assert await apply_action(editor, uri, 2, "Remove the duplicate session header") == []
    assert editor.texts[uri] == doc(S.header(), S.user("a", None), S.user("b", "a"))


async def test_remove_byte_order_mark(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc("\ufeff" + S.header(), S.user("a", None))
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI014")]
    assert await apply_action(editor, uri, 0, "Remove the byte order mark") == []
    assert editor.texts[uri] == doc(S.header(), S.user("a", None))


async def test_migrate_v1_file_keeps_unparsable_lines(editor: Editor) -> None:
    uri = editor.fresh_uri()
    v1 = [
        '{"type":"session","id":"v1sess","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c","provider":"anthropic","modelId":"m","thinkingLevel":"off"}',
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}',
        "{broken",
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":3}}',
        '{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":1,"tokensBefore":10}',
    ]
    assert codes_by_line(await editor.open(uri, doc(*v1))) == [(0, "PI015"), (2, "PI001")]
    assert codes_by_line(await apply_action(editor, uri, 0, "Migrate to version 3")) == [(2, "PI001")]
    lines = editor.texts[uri].split("\n")
    assert lines[0] == v1[0][:-1] + ',"version":3}'
    assert lines[2] == "{broken" and lines[-1] == ""
    first, hook, compaction = json.loads(lines[1]), json.loads(lines[3]), json.loads(lines[4])
    assert (
        first["parentId"] is None and hook["parentId"] == first["id"] and compaction["parentId"] == hook["id"]
    )
    assert hook["message"]["role"] == "custom"
    assert compaction["firstKeptEntryId"] == first["id"] and "firstKeptEntryIndex" not in compaction
    assert list(compaction) == [
        "type",
        "timestamp",
        "summary",
        "tokensBefore",
        "id",
        "parentId",
        "firstKeptEntryId",
    ]


async def test_reparent_orphan_to_nearest_surviving_ancestor(editor: Editor) -> None:
    uri = editor.fresh_uri()
    # "b" was deleted: c (and its sibling d) name it; the nearest surviving ancestor is a
    text = doc(S.header(), S.user("a", None), S.user("c", "b"), S.user("d", "b"), S.user("e", "c"))
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI031"), (3, "PI031")]
    (title,) = [a.title for a in await actions_on(editor, uri, 3)]
    assert title == "Re-parent to `a` (line 2), the nearest surviving ancestor (with 1 more entry naming `b`)"
    assert codes_by_line(await apply_action(editor, uri, 2, "Re-parent to `a` (line 2)")) == []
    assert [json.loads(line)["parentId"] for line in editor.texts[uri].split("\n")[2:5]] == ["a", "a", "c"]


async def test_break_a_cycle(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", "b"), S.user("b", "a"))
    assert codes_by_line(await editor.open(uri, text)) == [(1, "PI032"), (2, "PI032")]
    # offered on every line of the cycle: the break at the link pointing forward in the file
    assert await apply_action(editor, uri, 2, "Break the cycle at line 2: make `a` a root") == []
    assert [json.loads(line).get("parentId") for line in editor.texts[uri].split("\n")[1:3]] == [None, "a"]


async def test_break_a_cycle_at_another_entry(editor: Editor) -> None:
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", "b"), S.user("b", "a"))
    await editor.open(uri, text)
    assert await apply_action(editor, uri, 2, "Break the cycle here") == []
    assert [json.loads(line).get("parentId") for line in editor.texts[uri].split("\n")[1:3]] == ["b", None]


async def test_move_huge_image_out_of_the_file(editor: Editor, tmp_path: Path) -> None:
    session = tmp_path / "2026-11-30T09-13-48-180Z_img.jsonl"
    image = os.urandom(900_000)
    data = base64.b64encode(image).decode()
    text = doc(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t1", "read", {}),)),
        S.tool_result("c", "b", "t1", "a screenshot 😀", images=((data, "image/png"),)),
    )
    session.write_text(text, encoding="utf-8")
    uri = session.as_uri()
    assert codes_by_line(await editor.open(uri, text)) == [(3, "PI040")]
    (action,) = [a for a in await actions_on(editor, uri, 3) if a.title.startswith("Move the image")]
    action = await editor.client.code_action_resolve_async(action)
    assert action.command is not None and action.edit is None
    editor.applied_edits.clear()
    result = await editor.client.workspace_execute_command_async(
        types.ExecuteCommandParams(action.command.command, action.command.arguments)
    )
    assert result is not None and result["applied"] is True
    written = Path(result["file"])
    assert written.parent == tmp_path and written.suffix == ".png" and written.read_bytes() == image
    (applied,) = editor.applied_edits
    assert applied.edit.changes is not None
    edits = applied.edit.changes[uri]
    assert codes_by_line(await editor.apply(uri, edits)) == []
    block = json.loads(editor.texts[uri].split("\n")[3])["message"]["content"][1]
    assert block["type"] == "text" and written.name in block["text"] and "image/png" in block["text"]


async def test_moving_an_image_out_is_offered_only_where_it_can_succeed(
    editor: Editor, tmp_path: Path
) -> None:
    # Data that is not one strict base64 string (two strings one after the other: padding
    # inside) cannot be written out whole, and an untitled document has no place to write it:
    # the action would only refuse, so it is not offered (PI040 is still reported).
    half = base64.b64encode(b"\x89PNG half " * 80_002).decode()  # (each string a PI040 on its own)
    assert half.endswith("=")
    good = base64.b64encode(os.urandom(800_000)).decode()
    text = doc(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t1", "read", {}), ("t2", "read", {}))),
        S.tool_result("c", "b", "t1", "two strings", images=((half + half, "image/png"),)),
        S.tool_result("d", "c", "t2", "one string", images=((good, "image/png"),)),
    )
    session = tmp_path / "2026-11-30T09-13-48-180Z_halves.jsonl"
    session.write_text(text, encoding="utf-8")
    uri = session.as_uri()
    reported = [(3, "PI040"), (4, "PI040")]
    found = await editor.open(uri, text)
    while codes_by_line(found) != reported:  # (a big document: its envelope problems come first)
        found = await editor.diagnostics_for(uri)

    def moves(actions: list[types.CodeAction]) -> list[str]:
        return [a.title for a in actions if a.title.startswith("Move the image")]

    for _ in range(2):  # (asked again: the same answer)
        assert moves(await actions_on(editor, uri, 3)) == []
        assert len(moves(await actions_on(editor, uri, 4))) == 1
    # an edit elsewhere changes nothing; the second string removed, the data is one string
    await editor.edit(uri, editor.pos_of(uri, 1, "hello"), editor.pos_of(uri, 1, "hello"), "oh ")
    assert moves(await actions_on(editor, uri, 3)) == []
    start = editor.pos_of(uri, 3, half + half, after=True)
    start = types.Position(start.line, start.character - len(half))
    await editor.edit(uri, start, editor.pos_of(uri, 3, half + half, after=True), "")
    assert len(moves(await actions_on(editor, uri, 3))) == 1
    untitled = f"untitled:Untitled-{editor.opened}"
    editor.opened += 1
    found = await editor.open(untitled, text)
    while codes_by_line(found) != reported:
        found = await editor.diagnostics_for(untitled)
    assert moves(await actions_on(editor, untitled, 4)) == []
    sent_anyway = await editor.client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            "pi.session.extractImage", [untitled, 1, ["PI040", 4, "message", "content", 1]]
        )
    )
    assert sent_anyway["applied"] is False and "save it first" in sent_anyway["reason"]


# -- a byte order mark only the file on disk has (editors strip it from the text they send) ---------


async def code_actions(
    editor: Editor, uri: str, only: list[str] | None = None, automatic: bool = False
) -> list[types.CodeAction]:
    kind = types.CodeActionTriggerKind.Automatic if automatic else types.CodeActionTriggerKind.Invoked
    found = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=only, trigger_kind=kind),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


async def run_command(editor: Editor, action: types.CodeAction) -> dict:
    if action.command is None and action.edit is None:
        action = await editor.client.code_action_resolve_async(action)
    assert action.command is not None and action.edit is None, action
    result = await editor.client.workspace_execute_command_async(
        types.ExecuteCommandParams(action.command.command, action.command.arguments)
    )
    assert isinstance(result, dict)
    return result


async def reload(editor: Editor, uri: str, text: str) -> list[types.Diagnostic]:
    """What an editor does when the file changes on disk under a saved document: take its text."""
    mark = editor.mark(uri)
    editor.texts[uri] = text
    editor.versions[uri] += 1
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return list(await editor.diagnostics_for(uri, after=mark))


def bom_session(tmp_path: Path, name: str, text: str) -> tuple[Path, str]:
    path = tmp_path / f"2026-11-30T09-13-48-180Z_{name}.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    return path, path.as_uri()


async def test_a_byte_order_mark_on_disk_is_reported_and_removed_from_the_file(
    editor: Editor, tmp_path: Path
) -> None:
    text = doc(S.header(), S.user("a", None, "😀 first"), S.assistant("b", "a"))
    path, uri = bom_session(tmp_path, f"bom-{editor.encoding}", text)
    (bom,) = await editor.open(uri, text)  # the editor's text: without the mark
    assert (bom.range.start.line, bom.code) == (0, "PI014") and "on disk" in bom.message
    (action,) = [
        a for a in await actions_on(editor, uri, 0) if a.title.startswith("Remove the byte order mark")
    ]
    assert action.title == "Remove the byte order mark from the file (saved as UTF-8 without BOM)"
    result = await run_command(editor, action)
    assert result["applied"] is True and result["repairs"] == 1
    assert path.read_bytes() == text.encode("utf-8")  # the mark, and nothing else, is gone
    assert list(await editor.diagnostics_for(uri)) == []  # the file was looked at again


async def test_a_utf16_file_on_disk_is_reported_under_its_decoded_text_until_saved_as_utf8(
    editor: Editor, tmp_path: Path
) -> None:
    """Windows PowerShell's `>` writes UTF-16: the editor decodes it and sends a healthy session,
    but pi reads the bytes and refuses the file; nothing to repair in the text, save it as UTF-8."""
    text = doc(S.header(), S.user("a", None, "😀 first"), S.assistant("b", "a"))
    path = tmp_path / f"utf16-{editor.encoding}.jsonl"
    path.write_bytes("\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    (not_utf8,) = await editor.open(path.as_uri(), text)
    assert (not_utf8.range.start.line, not_utf8.code) == (0, "PI017") and "UTF-16LE" in not_utf8.message
    path.write_bytes(text.encode("utf-8"))  # saved as UTF-8 by the editor
    mark = editor.mark(path.as_uri())
    editor.client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    assert list(await editor.diagnostics_for(path.as_uri(), after=mark)) == []


async def test_a_utf16_file_on_disk_is_saved_as_utf8_by_its_quick_fix(editor: Editor, tmp_path: Path) -> None:
    text = doc(S.header(), S.user("a", None, "😀 first"), S.assistant("b", "a"))
    path = tmp_path / f"utf16-fix-{editor.encoding}.jsonl"
    path.write_bytes("\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    uri = path.as_uri()
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI017")]
    (fix_all,) = await code_actions(editor, uri, ["source.fixAll"])
    assert fix_all.title.endswith("(1 repair, in the file on disk)")
    (action,) = [a for a in await actions_on(editor, uri, 0) if a.title == "Save the file as UTF-8"]
    result = await run_command(editor, action)
    assert result["applied"] is True and result["repairs"] == 1
    assert path.read_bytes() == text.encode("utf-8")
    assert list(await editor.diagnostics_for(uri)) == []  # the file was looked at again


async def test_fix_all_repairs_a_file_whose_mark_is_on_disk_in_the_file_and_only_when_asked(
    editor: Editor, tmp_path: Path
) -> None:
    a, b, c = S.user("a", None), S.assistant("b", "a"), S.user("c", "b")
    text = doc(S.header(), a, b[:50] + b, c)  # and two lines glued after a crash
    path, uri = bom_session(tmp_path, f"bom-fix-all-{editor.encoding}", text)
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI014"), (2, "PI006"), (3, "PI031")]
    # on save (automatic), the editor writes its text right after: only the text's repairs
    (on_save,) = await code_actions(editor, uri, ["source.fixAll"], automatic=True)
    assert on_save.title.endswith("(1 repair)")
    (action,) = await code_actions(editor, uri, ["source.fixAll"])
    assert action.title.endswith("(2 repairs, in the file on disk)")
    # unsaved changes in the editor: the file is left alone
    await editor.edit(uri, editor.pos(uri, 3, 0), editor.pos(uri, 3, 0), " ")
    (dirty,) = await code_actions(editor, uri, ["source.fixAll"])
    refused = await run_command(editor, dirty)
    assert refused["applied"] is False and "save it first" in refused["reason"]
    assert path.read_bytes() == b"\xef\xbb\xbf" + text.encode()
    await editor.edit(uri, editor.pos(uri, 3, 0), editor.pos(uri, 3, 1), "")  # back as saved
    (action,) = await code_actions(editor, uri, ["source.fixAll"])
    result = await run_command(editor, action)
    assert result == {"applied": True, "file": str(path), "repairs": 2, "kept": 0}
    repaired = doc(S.header(), a, b[:50], b, c)
    assert path.read_bytes() == repaired.encode()
    # the editor reloads the file it shows: nothing left but the cut-off line pi skips
    assert codes_by_line(await reload(editor, uri, repaired)) == [(2, "PI001")]


async def test_a_save_that_drops_the_mark_clears_the_problem(editor: Editor, tmp_path: Path) -> None:
    text = doc(S.header(), S.user("a", None))
    path, uri = bom_session(tmp_path, f"bom-save-{editor.encoding}", text)
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI014")]
    path.write_bytes(text.encode())  # "Save with Encoding: UTF-8"
    mark = editor.mark(uri)
    editor.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert list(await editor.diagnostics_for(uri, after=mark)) == []


FIXTURES = Path(__file__).resolve().parents[1] / "editors" / "fixtures"


@pytest.mark.parametrize(
    ("name", "language", "code", "line", "title"),
    [
        ("headerless-session.jsonl", "pi-session", "PI010", 0, "Insert a session header"),
        ("headerless-session.jsonl", "jsonl", "PI010", 0, "Insert a session header"),
        ("header-second.jsonl", "pi-session", "PI012", 1, "Move the session header to the first line"),
        ("header-second.jsonl", "jsonl", "PI012", 1, "Move the session header to the first line"),
    ],
)
async def test_the_editors_damaged_header_fixtures_are_reported_and_repaired(
    editor: Editor, tmp_path: Path, name: str, language: str, code: str, line: int, title: str
) -> None:
    """What the clients open as sessions from their first lines (the header missing or not first):
    its problem and repair reach the editor, whichever language the document has yet."""
    path = tmp_path / name
    path.write_bytes((FIXTURES / name).read_bytes())
    uri = path.as_uri()
    assert codes_by_line(await editor.open(uri, path.read_text(encoding="utf-8"), language)) == [(line, code)]
    assert await apply_action(editor, uri, line, title) == []
    assert json.loads(editor.texts[uri].split("\n")[0])["type"] == "session"


async def test_the_editors_bom_fixture_as_the_editor_sends_it(editor: Editor, tmp_path: Path) -> None:
    path = tmp_path / "bom-session.jsonl"
    data = (FIXTURES / "bom-session.jsonl").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    path.write_bytes(data)
    text = data[3:].decode("utf-8")  # what VS Code and Neovim send: the text without the mark
    assert codes_by_line(await editor.open(path.as_uri(), text)) == [(0, "PI014")]
    (fix_all,) = await code_actions(editor, path.as_uri(), ["source.fixAll"])
    assert (await run_command(editor, fix_all))["applied"] is True
    assert path.read_bytes() == data[3:]
    assert list(await editor.diagnostics_for(path.as_uri())) == []


async def test_resolving_an_action_of_a_document_gone_meanwhile_gives_it_back_unresolved(
    editor: Editor, tmp_path: Path
) -> None:
    # the action was listed, then its file went away before the user picked it: the answer is
    # still a code action (null is no answer a client can take), and it does nothing
    uri = (tmp_path / "2026-11-30T09-13-48-180Z_gone.jsonl").as_uri()
    action = types.CodeAction(
        title="Split the glued line into its 2 lines",
        kind=types.CodeActionKind.QuickFix,
        data={"uri": uri, "version": 1, "key": ["PI006", 3]},
    )
    resolved = await editor.client.code_action_resolve_async(action)
    assert resolved is not None
    assert resolved.title == action.title and resolved.edit is None and resolved.command is None


async def test_a_whole_line_selected_gets_the_quick_fixes_of_that_line_only(editor: Editor) -> None:
    # selecting line 2 whole (clicking its number) sends a range that ends at the start of line 3:
    # no character of line 3 is selected, so its quick fix is not offered
    uri = editor.fresh_uri()
    text = doc(S.header(), S.user("a", None), S.user("b", "gone"), S.user("c", "lost"))
    assert codes_by_line(await editor.open(uri, text)) == [(2, "PI031"), (3, "PI031")]

    async def titles(start: types.Position, end: types.Position) -> list[str]:
        found = await editor.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=types.Range(start, end),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        return [a.title for a in found or [] if isinstance(a, types.CodeAction)]

    line_2 = await titles(types.Position(2, 0), types.Position(3, 0))
    assert len(line_2) == 1 and "`a` (line 2)" in line_2[0]
    # a character of line 3 selected: its fix too
    assert len(await titles(types.Position(2, 0), types.Position(3, 1))) == 2
    # the cursor at the start of line 3: that line's
    (line_3,) = await titles(types.Position(3, 0), types.Position(3, 0))
    assert "`b` (line 3)" in line_3
    # a selection made upwards (the range given end first) is the same selection
    assert await titles(types.Position(3, 0), types.Position(2, 0)) == line_2
    assert len(await titles(types.Position(3, 1), types.Position(2, 0))) == 2
