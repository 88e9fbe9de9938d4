"""The leaf lens of a document follows the session the sidecar holds on its file however the
editor spells the file (through a symlinked directory, a symlink): through the real server, for a
UTF-16 and a UTF-8 client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from language_support import Editor, client_fixture, editor_fixture, td  # noqa: F401  (fixtures)
from lsprotocol import types
from test_language_navigation import SESSION

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEAF = "$(target) leaf: pi continues here"


def refreshes_of(editor: Editor) -> list[str]:
    """The refreshes the server asked of ``editor``'s client (its handlers registered once)."""
    if not hasattr(editor, "refreshes"):
        asked: list[str] = []
        editor.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda params: asked.append("lens"))
        editor.client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)(lambda params: asked.append("hint"))
        editor.refreshes = asked  # type: ignore[attr-defined]
    return editor.refreshes  # type: ignore[attr-defined,no-any-return]


def through_symlinked_directory(real: Path, tmp_path: Path) -> Path:
    (tmp_path / "linked").symlink_to(real.parent)
    return tmp_path / "linked" / real.name


def through_symlink(real: Path, tmp_path: Path) -> Path:
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    return link


@pytest.mark.parametrize("spelling", [through_symlinked_directory, through_symlink])
async def test_the_leaf_lens_follows_the_session_held_on_the_file_spelled_otherwise(
    editor: Editor, tmp_path: Path, spelling
) -> None:
    """pi/open holds the file by its own path, the editor shows it by another; pi/branch on the
    held session moves the document's leaf lens, and a client that can refresh is asked to."""
    real = tmp_path / "sessions" / f"2026-11-30T09-13-48-180Z_held-{editor.encoding}.jsonl"
    real.parent.mkdir()
    text = "\n".join(SESSION) + "\n"
    real.write_text(text, encoding="utf-8")
    uri = spelling(real, tmp_path).as_uri()
    refreshes = refreshes_of(editor)
    refreshes.clear()
    assert list(await editor.open(uri, text)) == []

    async def lenses() -> dict[int, str]:
        found = await editor.client.text_document_code_lens_async(types.CodeLensParams(td(uri)))
        return {lens.range.start.line: lens.command.title for lens in found or [] if lens.command}

    assert (await lenses())[7] == LEAF
    send = editor.client.protocol.send_request_async
    held = await send("pi/open", {"path": str(real)})
    await send("pi/branch", {"session": held.session, "entryId": "d"})
    moved = await lenses()
    assert moved[4] == LEAF and 7 not in moved
    capabilities = editor.client.capabilities.workspace  # type: ignore[attr-defined]
    if capabilities.code_lens is not None and capabilities.code_lens.refresh_support:
        for _ in range(200):
            if refreshes:
                break
            await asyncio.sleep(0.02)
        assert refreshes
    await send("pi/close", {"session": held.session})
