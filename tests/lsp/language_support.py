"""Shared pieces of the language-feature end-to-end tests (the real server process, two clients).

Every test runs twice: as VS Code (UTF-16 positions, the LSP default) and as Neovim (offers UTF-8
first, so the server negotiates UTF-8). ``Editor`` keeps the client's view of each document and
converts (line, text index) into the client's columns, so expectations are written once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "pi_session_server"])
CLIENTS = ["visual-studio-code", "neovim"]


def split_lines(text: str) -> list[str]:
    return text.split("\n")


def column(line_text: str, index: int, encoding: str) -> int:
    """Client column of the text index ``index`` in ``line_text``."""
    prefix = line_text[:index]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(prefix.encode("utf-16-le", "surrogatepass")) // 2
    return len(prefix)


@dataclass
class Editor:
    client: LanguageClient
    encoding: str
    # the client pulls diagnostics (textDocument/diagnostic): the server then pushes them only for
    # documents the client never opened (read from disk)
    pulls: bool = False
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    applied_edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    notifications: dict[str, list[Any]] = field(default_factory=dict)
    opened: int = 0
    # what the server announced at initialize
    server_capabilities: types.ServerCapabilities | None = None
    # every publishDiagnostics, by uri, and how many of each uri's a test has been given: waiting for
    # "the next one" cannot miss a publication that arrives before the wait begins (a big document
    # is published twice in quick succession)
    published: dict[str, list[types.PublishDiagnosticsParams]] = field(default_factory=dict)
    given: dict[str, int] = field(default_factory=dict)

    def record(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.setdefault(params.uri, []).append(params)

    def mark(self, uri: str) -> int:
        """How many publications of ``uri`` there were so far (pass as ``after`` to wait for a new one)."""
        return len(self.published.get(uri, []))

    def fresh_uri(self, name: str = "session") -> str:
        """A new document for each test (one server serves a whole module)."""
        self.opened += 1
        return f"file:///tmp/pi-language-tests/2026-11-30T09-13-48-180Z_{name}{self.opened}.jsonl"

    def pos(self, uri: str, line: int, index: int) -> types.Position:
        return types.Position(line, column(split_lines(self.texts[uri])[line], index, self.encoding))

    def pos_of(
        self, uri: str, line: int, needle: str, occurrence: int = 0, after: bool = False
    ) -> types.Position:
        text = split_lines(self.texts[uri])[line]
        index = -1
        for _ in range(occurrence + 1):
            index = text.index(needle, index + 1)
        return self.pos(uri, line, index + (len(needle) if after else 0))

    def span(self, uri: str, line: int, needle: str) -> tuple[int, int]:
        """(start, end) client columns of ``needle`` on ``line``."""
        start = self.pos_of(uri, line, needle).character
        end = self.pos_of(uri, line, needle, after=True).character
        return start, end

    async def open(self, uri: str, text: str, language_id: str = "pi-session") -> Sequence[types.Diagnostic]:
        self.texts[uri] = text
        self.versions[uri] = 1
        mark = self.mark(uri)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
        )
        return await self.diagnostics_for(uri, after=mark)

    async def diagnostics_for(
        self, uri: str, after: int | None = None, timeout: float = 20
    ) -> Sequence[types.Diagnostic]:
        """The first publication for ``uri`` after the first ``after`` ones (default: the first one
        this test has not been given yet). A client that pulls asks for them instead: the server
        answers after the changes sent before."""
        if self.pulls and uri in self.texts:
            report = await asyncio.wait_for(
                self.client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
                ),
                timeout,
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            assert uri not in self.published, "a client that pulls was sent diagnostics too"
            return report.items
        index = self.given.get(uri, 0) if after is None else after
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.published.get(uri, [])) <= index:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no publishDiagnostics number {index + 1} for {uri} within {timeout} s")
            await asyncio.sleep(0.01)
        self.given[uri] = index + 1
        return self.published[uri][index].diagnostics

    async def edit(
        self, uri: str, start: types.Position, end: types.Position, new_text: str
    ) -> Sequence[types.Diagnostic]:
        """Apply an edit on both sides (client text and server) and return the next diagnostics."""
        lines = split_lines(self.texts[uri])
        s = _index(lines, start, self.encoding)
        e = _index(lines, end, self.encoding)
        text = self.texts[uri]
        self.texts[uri] = text[:s] + new_text + text[e:]
        self.versions[uri] += 1
        mark = self.mark(uri)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(start, end), text=new_text)
                ],
            )
        )
        return await self.diagnostics_for(uri, after=mark)

    async def apply(self, uri: str, edits: Sequence[types.TextEdit]) -> Sequence[types.Diagnostic]:
        """Apply text edits (as an editor does: all positions refer to the text before any of them)."""
        ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
        diagnostics: Sequence[types.Diagnostic] = []
        for e in ordered:
            diagnostics = await self.edit(uri, e.range.start, e.range.end, e.new_text)
        return diagnostics

    def end(self, uri: str) -> types.Position:
        lines = split_lines(self.texts[uri])
        return self.pos(uri, len(lines) - 1, len(lines[-1]))


def _index(lines: list[str], pos: types.Position, encoding: str) -> int:
    """Text index of a client position."""
    offset = sum(len(line) + 1 for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    if encoding == "utf-8":
        prefix = line.encode("utf-8", "surrogatepass")[: pos.character].decode("utf-8", "ignore")
    elif encoding == "utf-16":
        prefix = line.encode("utf-16-le", "surrogatepass")[: 2 * pos.character].decode(
            "utf-16-le", "surrogatepass"
        )
    else:
        prefix = line[: pos.character]
    return offset + len(prefix)


async def start_editor(
    lsp_client: LanguageClient,
    client_name: str,
    workspace_folders: Sequence[str] | None = None,
    root_uri: str | None = None,
    initialization_options: Any = None,
) -> Editor:
    """Initialize as ``client_name`` would, with the workspace folders (URIs) and root it names."""
    capabilities = client_capabilities(client_name)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root_uri,
            initialization_options=initialization_options,
            workspace_folders=[
                types.WorkspaceFolder(uri, uri.rsplit("/", 1)[-1]) for uri in workspace_folders
            ]
            if workspace_folders is not None
            else None,
        )
    )
    encoding = str(
        getattr(
            result.capabilities.position_encoding, "value", result.capabilities.position_encoding or "utf-16"
        )
    )
    pulls = capabilities.text_document is not None and capabilities.text_document.diagnostic is not None
    editor = Editor(lsp_client, encoding, pulls, server_capabilities=result.capabilities)
    features = lsp_client.protocol.fm.features
    stores = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]  # pytest-lsp's: client.diagnostics

    def published(params: types.PublishDiagnosticsParams) -> None:
        editor.record(params)
        stores(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = published

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    @lsp_client.feature("pi/largeFile")
    def large_file(params: Any) -> None:
        editor.notifications.setdefault("pi/largeFile", []).append(params)

    return editor


async def open_clean(editor: Editor, lines: Sequence[str]) -> str:
    """A new document of ``lines``, opened; asserts that the server reports no problem in it."""
    uri = editor.fresh_uri()
    diagnostics = await editor.open(uri, "\n".join(lines) + "\n")
    assert list(diagnostics) == []
    return uri


def td(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri)


def codes_by_line(diagnostics: Sequence[types.Diagnostic]) -> list[tuple[int, str]]:
    return sorted((d.range.start.line, str(d.code)) for d in diagnostics)


@pytest_lsp.fixture(name="client", config=SERVER, params=CLIENTS, scope="module")
async def client_fixture(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """One server per test module and client (VS Code, Neovim)."""
    lsp_client.editor = await start_editor(lsp_client, request.param)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(name="editor")
def editor_fixture(client: LanguageClient) -> Editor:
    return client.editor  # type: ignore[attr-defined]
