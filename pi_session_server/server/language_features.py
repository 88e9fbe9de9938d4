"""Language features for session files: thin pygls handlers over :mod:`pi_session_server.analysis`.

Documents are kept as :class:`~pi_session_server.analysis.SessionDocument` (lines split on "\\n"
only, edited incrementally); pygls' own ``TextDocument`` would split on U+2028 and rebuild the whole
text on every change, so for session documents the workspace holds a thin stand-in whose text is
produced from our model only if someone asks for it.

Positions: the analysis works in byte offsets within a line; every handler converts with the
position encoding negotiated at ``initialize`` (UTF-16 for VS Code, UTF-8 for Neovim, or UTF-32).

Files the editor does not send (VS Code skips files over 50 MB) are analysed from disk when a
request names them, followed on disk while they grow, and the client is told (``pi/largeFile``).

"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import gc
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from pi_session_server.analysis import hints as hints_mod
from pi_session_server.analysis import navigation, repairs
from pi_session_server.analysis.diagnostics import Diagnostic, document_diagnostics, first_pass_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.analysis.hover import hover as hover_markdown
from pi_session_server.analysis.positions import UTF8, UTF16, UTF32, to_column, to_offset
from pi_session_server.analysis.selection import selection_spans
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.format.jsjson import parse_bytes

logger = logging.getLogger(__name__)

LANGUAGE_IDS = frozenset({"pi-session", "jsonl", "json"})
LARGE_FILE = "pi/largeFile"
EXTRACT_IMAGE = "pi.session.extractImage"
SOURCE = "pi-session"

#: seconds between two diagnostics publications of one document (the first one goes out at once)
DEBOUNCE = 0.05
#: seconds between two checks of files followed on disk
DISK_POLL = 1.0
#: a file followed on disk is dropped after this many seconds without a request about it
DISK_FORGET = 900.0
#: documents with more lines get the garbage collector settled after opening (see ``_warm``)
BIG_DOCUMENT_LINES = 20_000
#: documents opened with at least this many characters publish their diagnostics in two steps: the
#: envelope problems at once, then the complete list (see ``LanguageFeatures.did_open``)
QUICK_OPEN_CHARS = 2_000_000

_SYMBOL_KINDS = {
    "session": types.SymbolKind.File,
    "user": types.SymbolKind.Event,
    "assistant": types.SymbolKind.Function,
    "toolResult": types.SymbolKind.Field,
    "bashExecution": types.SymbolKind.Operator,
    "system": types.SymbolKind.Interface,
    "compaction": types.SymbolKind.Package,
    "branch_summary": types.SymbolKind.Namespace,
    "label": types.SymbolKind.Key,
    "model_change": types.SymbolKind.Property,
    "thinking_level_change": types.SymbolKind.Property,
    "session_info": types.SymbolKind.Constant,
    "custom": types.SymbolKind.Struct,
    "custom_message": types.SymbolKind.Struct,
    "usage": types.SymbolKind.Number,
}


class _EditorText(TextDocument):
    """What pygls' workspace holds for a session document: text produced from our model on demand,
    changes ignored (our handler applies them to the model)."""

    def __init__(
        self, uri: str, state: DocState, version: int | None, language_id: str | None, **kwargs: Any
    ):
        super().__init__(uri, source=None, version=version, language_id=language_id, **kwargs)
        self._state = state
        self._cache: tuple[int, str] = (-1, "")

    @property
    def source(self) -> str:
        doc = self._state.doc
        if self._cache[0] != doc.version:
            self._cache = (doc.version, doc.text())
        return self._cache[1]

    def apply_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        pass


@dataclass(eq=False)
class DocState:
    uri: str
    path: str | None
    doc: SessionDocument
    version: int | None = None
    from_disk: bool = False
    disk_key: tuple[int, int, int] | None = None  # (inode, size, mtime) of a file followed on disk
    timer: asyncio.TimerHandle | None = None
    last_publish: float = 0.0
    diagnostics_cache: tuple[int, list[Diagnostic]] | None = None
    published: int = -1  # doc.version last published
    last_access: float = field(default_factory=time.monotonic)


@dataclass
class LanguageFeatures:
    server: LanguageServer
    docs: dict[str, DocState] = field(default_factory=dict)
    debounce: float = DEBOUNCE
    quick_open: int = QUICK_OPEN_CHARS
    _poller: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ encoding and positions

    @property
    def encoding(self) -> str:
        try:
            value = self.server.workspace.position_encoding
        except RuntimeError:  # not initialized
            return UTF16
        text = getattr(value, "value", value)
        return text if text in (UTF8, UTF16, UTF32) else UTF16

    def position(self, state: DocState, line: int, offset: int) -> types.Position:
        doc = state.doc
        if line >= doc.line_count:
            line = doc.line_count - 1
            offset = len(doc.lines[line].raw)
        return types.Position(line, to_column(doc.lines[line].raw, offset, self.encoding, doc.errors))

    def range(
        self, state: DocState, line: int, start: int, end: int, end_line: int | None = None
    ) -> types.Range:
        last = line if end_line is None else end_line
        return types.Range(self.position(state, line, start), self.position(state, last, end))

    def offset(self, state: DocState, pos: types.Position) -> tuple[int, int]:
        """(line, byte offset) of a client position, clamped to the document."""
        doc = state.doc
        line = min(max(pos.line, 0), doc.line_count - 1)
        if pos.line >= doc.line_count:
            return line, len(doc.lines[line].raw)
        return line, to_offset(doc.lines[line].raw, pos.character, self.encoding, doc.errors)

    def plain(self, value: Any) -> Any:
        """A list result as plain JSON (LSP's own encoding: absent optionals omitted).

        The sidecar's transport converts a single result object but sends lists as they are.
        """
        if isinstance(value, list):
            return self.server.protocol._converter.unstructure(value)
        return value

    # ------------------------------------------------------------------ documents

    @staticmethod
    def accepts(uri: str, language_id: str | None) -> bool:
        return (language_id in LANGUAGE_IDS) or uri.endswith(".jsonl")

    def did_open(self, item: types.TextDocumentItem) -> None:
        if not self.accepts(item.uri, item.language_id):
            return
        # A big document is read in two steps: its envelopes first (syntax, header, ids, parents),
        # whose problems are published at once, then the rest of each line (tool calls, field types,
        # images), published as the complete list that supersedes the first.
        quick = len(item.text) >= self.quick_open
        self._opened(item.uri, item.language_id, item.version, SessionDocument(item.text, quick=quick))

    def did_open_json(self, uri: str, language_id: str | None, version: int | None, token: Any) -> bool:
        """``didOpen`` with the document's text still a JSON string token (``msgspec.Raw`` or bytes).

        For the transport: decoding a 100 MB ``didOpen`` the usual way builds a 100 MB ``str``
        (often 4 bytes a character, for one emoji) only to encode it back to UTF-8 here. Decoding the
        message with the text as ``msgspec.Raw`` and unescaping the token straight into bytes gives
        exactly the same document, in about a third of the time (see ``json_string_bytes``).

        False (nothing done) for a document that is not a session: it takes the usual path.
        """
        if not self.accepts(uri, language_id):
            return False
        data = json_string_bytes(token)
        doc = None
        if data is not None:
            # None for invalid UTF-8: decoding the message would have replaced those bytes
            doc = SessionDocument.from_editor_bytes(data, quick=len(data) >= self.quick_open)
        if doc is None:
            text = parse_bytes(memoryview(token))
            if not isinstance(text, str):
                return False
            doc = SessionDocument(text, quick=len(text) >= self.quick_open)
        self._opened(uri, language_id, version, doc)
        return True

    def _opened(self, uri: str, language_id: str | None, version: int | None, doc: SessionDocument) -> None:
        state = DocState(uri, _path_of(uri), doc, version)
        self.docs[uri] = state
        with contextlib.suppress(RuntimeError, KeyError, AttributeError):
            workspace = self.server.workspace
            workspace._text_documents[_unquote(uri)] = _EditorText(
                uri,
                state,
                version,
                language_id,
                position_codec=workspace.position_codec,
            )
        if doc.provisional:
            self.publish(state, first_pass=True)
            self._soon(lambda: self._finish(state, warm=True))
        else:
            self.publish(state)
            self._soon(lambda: self._warm(state))

    def _finish(self, state: DocState, warm: bool = False) -> None:
        """Complete a document opened in two steps and publish its complete diagnostics."""
        if self.docs.get(state.uri) is not state:
            return
        if state.doc.finish():
            self.publish(state)
        if warm:
            self._warm(state)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        state = self.docs.get(params.text_document.uri)
        if state is None or state.from_disk:
            return
        doc = state.doc
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.offset(state, change.range.start)
                end = self.offset(state, change.range.end)
                doc.apply_edit(start[0], start[1], end[0], end[1], change.text)
            else:
                doc.replace_all(change.text)
        state.version = params.text_document.version
        self.schedule_publish(state)

    def did_close(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is None:
            return
        if state.timer is not None:
            state.timer.cancel()
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def state(self, uri: str) -> DocState | None:
        """The document for a request: the editor's, else the file on disk (kept up to date)."""
        state = self.docs.get(uri)
        if state is None:
            return self._open_from_disk(uri)
        if state.doc.provisional:
            self._finish(state)
        if state.from_disk:
            state.last_access = time.monotonic()
            self._refresh_from_disk(state)
        return state

    def _open_from_disk(self, uri: str) -> DocState | None:
        path = _path_of(uri)
        if path is None or not path.endswith(".jsonl") or not os.path.isfile(path):
            return None
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except OSError:
            return None
        state = DocState(
            uri,
            path,
            SessionDocument(data),
            None,
            from_disk=True,
            disk_key=(st.st_ino, len(data), st.st_mtime_ns),
        )
        self.docs[uri] = state
        size = len(data)
        self.server.protocol.notify(
            LARGE_FILE,
            {
                "uri": uri,
                "size": size,
                "message": f"The editor did not send this document ({size / 1e6:.1f} MB); "
                "pi-session features work from the file on disk and follow it as it grows.",
            },
        )
        self.publish(state)
        self._soon(lambda: self._warm(state))
        self._start_poller()
        return state

    def _refresh_from_disk(self, state: DocState) -> bool:
        """Catch up with the file: an append is applied as an edit at the end; anything else reloads."""
        assert state.path is not None
        try:
            st = os.stat(state.path)
        except OSError:
            return False
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == state.disk_key:
            return False
        old = state.disk_key
        doc = state.doc
        try:
            with open(state.path, "rb") as f:
                if (
                    old is not None
                    and old[0] == st.st_ino
                    and st.st_size > old[1]
                    and _same_tail(f, doc, old[1])
                ):
                    f.seek(old[1])
                    added = f.read()
                    last = doc.line_count - 1
                    end = len(doc.lines[last].raw)
                    doc.apply_edit(last, end, last, end, added)
                    size = old[1] + len(added)
                else:
                    data = f.read()
                    doc.replace_all(data)
                    size = len(data)
        except OSError:
            return False
        state.disk_key = (st.st_ino, size, st.st_mtime_ns)
        self.schedule_publish(state)
        return True

    def _start_poller(self) -> None:
        if self._poller is not None:
            return
        loop = _running_loop()
        if loop is None:
            return

        def tick() -> None:
            self._poller = None
            now = time.monotonic()
            for s in [s for s in self.docs.values() if s.from_disk and now - s.last_access > DISK_FORGET]:
                del self.docs[s.uri]  # nobody asked about it for a long time: stop following it
            followed = [s for s in self.docs.values() if s.from_disk]
            for s in followed:
                with contextlib.suppress(Exception):
                    self._refresh_from_disk(s)
            if followed:
                self._start_poller()

        self._poller = loop.call_later(DISK_POLL, tick)

    def _warm(self, state: DocState) -> None:
        """Right after opening, while the editor is idle: fill the depth cache and the leaf path
        (hovers then cost O(1)), and for a big document settle the garbage collector once.

        A document is loaded with the cyclic GC paused, so its objects are all "young": the next
        collections would walk them (hundreds of thousands) in the middle of later edits. One full
        collection now, then ``gc.freeze()``, moves them out of every future scan (they hold no
        reference cycles; they are still freed normally when the document closes).
        """
        if self.docs.get(state.uri) is not state:
            return
        tree = state.doc.tree
        for e in state.doc.entries():
            tree.depth(e)
        state.doc.leaf_path()
        if state.doc.line_count > BIG_DOCUMENT_LINES:
            gc.collect()
            gc.freeze()

    @staticmethod
    def _soon(callback: Any) -> None:
        loop = _running_loop()
        if loop is not None:
            loop.call_soon(callback)

    # ------------------------------------------------------------------ diagnostics

    def diagnostics(self, state: DocState) -> list[Diagnostic]:
        cache = state.diagnostics_cache
        if cache is not None and cache[0] == state.doc.version:
            return cache[1]
        found = document_diagnostics(state.doc)
        state.diagnostics_cache = (state.doc.version, found)
        return found

    def lsp_diagnostic(self, state: DocState, d: Diagnostic) -> types.Diagnostic:
        related = [
            types.DiagnosticRelatedInformation(
                types.Location(state.uri, self.range(state, r.line, r.start, r.end)), r.message
            )
            for r in d.related
            if r.line < state.doc.line_count
        ]
        return types.Diagnostic(
            range=self.range(state, d.line, d.start, d.end),
            message=d.message,
            severity=types.DiagnosticSeverity(int(d.severity)),
            code=d.code,
            source=SOURCE,
            related_information=related or None,
        )

    def lsp_diagnostics(self, state: DocState) -> list[types.Diagnostic]:
        return [self.lsp_diagnostic(state, d) for d in self.diagnostics(state)]

    def publish(self, state: DocState, first_pass: bool = False) -> None:
        """Publish the diagnostics of ``state``; ``first_pass``: only those its envelopes decide
        (a provisional document stays provisional; its complete list follows)."""
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.last_publish = time.monotonic()
        state.published = state.doc.version
        if first_pass:
            found = [self.lsp_diagnostic(state, d) for d in first_pass_diagnostics(state.doc)]
        else:
            found = self.lsp_diagnostics(state)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(state.uri, found, version=state.version)
        )

    def schedule_publish(self, state: DocState) -> None:
        """Publish at once if the last publication is older than the debounce interval, else once
        at the end of it (every change in between is folded into that one publication)."""
        if state.timer is not None:
            return
        loop = _running_loop()
        wait = state.last_publish + self.debounce - time.monotonic()
        if loop is None:
            self.publish(state)
            return

        def fire() -> None:
            state.timer = None
            if self.docs.get(state.uri) is state and state.published != state.doc.version:
                self.publish(state)

        state.timer = loop.call_later(max(0.0, wait), fire)

    def pull(self, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        state = self.state(params.text_document.uri)
        if state is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        result_id = f"{id(state)}:{state.doc.version}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=self.lsp_diagnostics(state), result_id=result_id
        )

    # ------------------------------------------------------------------ requests

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        line, offset = self.offset(state, params.position)
        found = hover_markdown(state.doc, line, offset)
        if found is None:
            return None
        text, span = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=self.range(state, line, *span) if span is not None else None,
        )

    def location(self, state: DocState, target: navigation.Target) -> types.Location:
        return types.Location(state.uri, self.range(state, target.line, target.start, target.end))

    def definition(self, params: types.DefinitionParams) -> list[types.Location] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        line, offset = self.offset(state, params.position)
        return [self.location(state, t) for t in navigation.definition(state.doc, line, offset)]

    def references(self, params: types.ReferenceParams) -> list[types.Location] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        line, offset = self.offset(state, params.position)
        found = navigation.references(state.doc, line, offset, params.context.include_declaration)
        return [self.location(state, t) for t in found]

    def document_symbols(self, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None

        def convert(sym: Symbol) -> types.DocumentSymbol:
            return types.DocumentSymbol(
                name=sym.name or "(entry)",
                detail=sym.detail,
                kind=_SYMBOL_KINDS.get(sym.kind, types.SymbolKind.Object),
                range=self.range(state, sym.line, 0, sym.end),
                selection_range=self.range(state, sym.line, *sym.selection),
                children=[convert(c) for c in sym.children] or None,
            )

        return [convert(s) for s in document_symbols(state.doc)]

    def folding(self, params: types.FoldingRangeParams) -> list[types.FoldingRange] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        return [
            types.FoldingRange(a, b, kind=types.FoldingRangeKind.Region) for a, b in folding_ranges(state.doc)
        ]

    def inlay_hints(self, params: types.InlayHintParams) -> list[types.InlayHint] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        found = hints_mod.inlay_hints(state.doc, params.range.start.line, params.range.end.line)
        return [
            types.InlayHint(
                self.position(state, h.line, h.offset), h.label, padding_left=True, tooltip=h.tooltip
            )
            for h in found
        ]

    def code_lenses(self, params: types.CodeLensParams) -> list[types.CodeLens] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        return [
            types.CodeLens(self.range(state, lens.line, 0, 0), command=types.Command(lens.title, ""))
            for lens in hints_mod.code_lenses(state.doc)
        ]

    def selection_ranges(self, params: types.SelectionRangeParams) -> list[types.SelectionRange] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        out = []
        for pos in params.positions:
            line, offset = self.offset(state, pos)
            spans = selection_spans(state.doc, line, offset) or [(offset, offset)]
            node: types.SelectionRange | None = None
            for start, end in reversed(spans):
                node = types.SelectionRange(self.range(state, line, start, end), parent=node)
            assert node is not None
            out.append(node)
        return out

    # ------------------------------------------------------------------ code actions

    def _resolve_support(self) -> bool:
        try:
            caps = self.server.client_capabilities
        except RuntimeError:
            return False
        action = caps.text_document.code_action if caps.text_document else None
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties)

    def workspace_edit(self, state: DocState, edits: Sequence[repairs.TextEdit]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(
            changes={
                state.uri: [
                    types.TextEdit(self.range(state, e.start_line, e.start, e.end, e.end_line), e.new_text)
                    for e in edits
                ]
            }
        )

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        state = self.state(params.text_document.uri)
        if state is None:
            return None
        first = params.range.start.line
        last = max(first, params.range.end.line)
        resolve = self._resolve_support()
        diags = [d for d in self.diagnostics(state) if first <= d.line <= last]
        out = []
        for repair in repairs.repairs(state.doc, first, last, state.path):
            action = types.CodeAction(
                title=repair.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[
                    self.lsp_diagnostic(state, d)
                    for d in diags
                    if d.code == repair.code and d.line == repair.line
                ],
                is_preferred=repair.preferred,
            )
            if resolve:  # the edit (or the image command) is computed when the user picks the action
                action.data = {"uri": state.uri, "version": state.doc.version, "key": list(repair.key)}
            elif repair.image is not None:
                action.command = self._image_command(state, repair)
            else:
                action.edit = self.workspace_edit(state, repair.edits())
            out.append(action)
        return out

    def _find_repair(self, uri: str, version: Any, key: list[Any]) -> tuple[DocState, repairs.Repair] | None:
        state = self.state(uri)
        if state is None or state.doc.version != version or not key:
            return None
        if len(key) > 1 and isinstance(key[1], int):
            first = last = key[1]
        else:
            first, last = 0, state.doc.line_count - 1
        for repair in repairs.repairs(state.doc, first, last, state.path):
            if list(repair.key) == key:
                return state, repair
        return None

    def resolve_code_action(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        found = self._find_repair(data.get("uri", ""), data.get("version"), data.get("key") or [])
        if found is not None:
            state, repair = found
            if repair.image is not None:
                action.command = self._image_command(state, repair)
            else:
                action.edit = self.workspace_edit(state, repair.edits())
        return action

    @staticmethod
    def _image_command(state: DocState, repair: repairs.Repair) -> types.Command:
        return types.Command(
            repair.title, EXTRACT_IMAGE, arguments=[state.uri, state.doc.version, list(repair.key)]
        )

    async def extract_image(self, uri: str, version: Any, key: list[Any]) -> dict[str, Any]:
        """Write the image next to the session, then ask the editor to replace the block."""
        found = self._find_repair(uri, version, key)
        if found is None or found[1].image is None or found[0].path is None:
            return {"applied": False, "reason": "the document changed; ask for the code action again"}
        state, repair = found
        assert repair.image is not None and state.path is not None
        plan = repair.image()
        if plan is None:
            return {"applied": False, "reason": "the image data is not valid base64"}
        target = _free_name(os.path.join(os.path.dirname(state.path), plan.file_name))
        with open(target, "xb") as f:
            f.write(plan.data)
        edit = plan.edit
        if os.path.basename(target) != plan.file_name:
            edit = repairs.TextEdit(
                edit.start_line,
                edit.start,
                edit.end_line,
                edit.end,
                edit.new_text.replace(plan.file_name, os.path.basename(target)),
            )
        result = await self.server.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(self.workspace_edit(state, [edit]), label=repair.title)
        )
        return {"applied": bool(result.applied), "file": target}


# ---------------------------------------------------------------------- helpers


_SPECIAL_ESCAPE = re.compile(rb"\\[u/]")


def json_string_bytes(token: Any) -> bytes | None:
    """The UTF-8 bytes of the value of a JSON string token (``"..."``, as ``msgspec.Raw`` holds it),
    or None when the quick way does not apply (a ``\\u`` or ``\\/`` escape: decode it as JSON).

    In valid JSON the only other escapes are ``\\" \\\\ \\b \\f \\n \\r \\t``, which Python's
    ``escape_decode`` unescapes the same way, in C, without building a ``str``. The bytes are not
    checked to be valid UTF-8 (see ``SessionDocument.valid_utf8``).
    """
    raw = memoryview(token).cast("B")  # no copy of a 100 MB token
    if len(raw) < 2 or raw[0] != 0x22 or raw[-1] != 0x22 or _SPECIAL_ESCAPE.search(raw) is not None:
        return None
    return codecs.escape_decode(raw[1:-1])[0]  # type: ignore[attr-defined,no-any-return]


def _path_of(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def _unquote(uri: str) -> str:
    from urllib.parse import unquote

    return unquote(uri)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _same_tail(f: Any, doc: SessionDocument, size: int) -> bool:
    """The file's first ``size`` bytes still end the way our copy does (an append, not a rewrite)."""
    n = min(size, 4096)
    f.seek(size - n)
    tail = f.read(n)
    ours = b""
    for i in range(doc.line_count - 1, -1, -1):
        ours = doc.lines[i].raw + (b"\n" + ours if i < doc.line_count - 1 else ours)
        if len(ours) >= n:
            break
    return ours[-n:] == tail if n else True


def _free_name(path: str) -> str:
    if not os.path.exists(path):
        return path
    stem, ext = os.path.splitext(path)
    n = 2
    while os.path.exists(f"{stem}-{n}{ext}"):
        n += 1
    return f"{stem}-{n}{ext}"


# ---------------------------------------------------------------------- registration


def register_language_features(server: LanguageServer) -> LanguageFeatures:
    """Register the ``textDocument/*`` features for session files on ``server``."""
    lf = LanguageFeatures(server)
    server.language_features = lf  # type: ignore[attr-defined]

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        lf.did_open(params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        lf.did_change(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        lf.did_close(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    def pull(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return lf.pull(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> Any:
        return lf.hover(params)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(params: types.DocumentSymbolParams) -> Any:
        return lf.plain(lf.document_symbols(params))

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(params: types.DefinitionParams) -> Any:
        return lf.plain(lf.definition(params))

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(params: types.ReferenceParams) -> Any:
        return lf.plain(lf.references(params))

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    def folding(params: types.FoldingRangeParams) -> Any:
        return lf.plain(lf.folding(params))

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    def inlay_hints(params: types.InlayHintParams) -> Any:
        return lf.plain(lf.inlay_hints(params))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    def code_lenses(params: types.CodeLensParams) -> Any:
        return lf.plain(lf.code_lenses(params))

    @server.feature(types.TEXT_DOCUMENT_SELECTION_RANGE)
    def selection_ranges(params: types.SelectionRangeParams) -> Any:
        return lf.plain(lf.selection_ranges(params))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True),
    )
    def code_actions(params: types.CodeActionParams) -> Any:
        return lf.plain(lf.code_actions(params))

    @server.feature(types.CODE_ACTION_RESOLVE)
    def resolve_code_action(params: types.CodeAction) -> types.CodeAction:
        return lf.resolve_code_action(params)

    @server.command(EXTRACT_IMAGE)
    async def extract_image(*args: Any) -> dict[str, Any]:
        if len(args) != 3:
            return {"applied": False, "reason": "expected [uri, version, key]"}
        return await lf.extract_image(args[0], args[1], args[2])

    return lf
