"""What the language server takes from the client's workspace: the directory an untitled document
(no file, so no session directory to read it from) belongs to, which a session header names as
its ``cwd`` (pi writes its working directory there)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import builders as S
import pytest
import pytest_lsp
from language_support import SERVER, Editor, codes_by_line, start_editor
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIRST = Path("/srv/pi-workspace-tests/first project")
SECOND = Path("/srv/pi-workspace-tests/second")
ROOT = Path("/srv/pi-workspace-tests/root")

# (workspace folders, root URI) the client gives, and the directory the header must name
WORKSPACES = {
    "folders": ([FIRST.as_uri(), SECOND.as_uri()], ROOT.as_uri(), str(FIRST)),
    "root only": (None, ROOT.as_uri(), str(ROOT)),
}


@pytest_lsp.fixture(name="client", config=SERVER, params=list(WORKSPACES), scope="module")
async def client_fixture(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """One server per workspace: the client (as VS Code) and the directory it stands for."""
    folders, root, expected = WORKSPACES[request.param]
    editor = await start_editor(lsp_client, "visual-studio-code", folders, root)
    lsp_client.workspace = (editor, expected)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(name="workspace")
def workspace_fixture(client: LanguageClient) -> tuple[Editor, str]:
    return client.workspace  # type: ignore[attr-defined,no-any-return]


async def test_the_header_inserted_in_an_untitled_document_names_the_workspace_folder(
    workspace: tuple[Editor, str],
) -> None:
    editor, expected = workspace
    uri = "untitled:Untitled-1"
    text = S.user("a", None) + "\n" + S.user("b", "a") + "\n"
    assert codes_by_line(await editor.open(uri, text)) == [(0, "PI010")]
    found = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in found or [] if isinstance(a, types.CodeAction) and a.title.startswith("Insert")]
    if action.edit is None:
        action = await editor.client.code_action_resolve_async(action)
    assert action.edit is not None and action.edit.changes is not None
    assert codes_by_line(await editor.apply(uri, action.edit.changes[uri])) == []
    header = json.loads(editor.texts[uri].split("\n")[0])
    assert header["type"] == "session" and header["cwd"] == expected
