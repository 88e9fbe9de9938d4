"""Language features for session files: thin pygls handlers over :mod:`pi_session_server.analysis`.

Documents are kept as :class:`~pi_session_server.analysis.SessionDocument` (lines split on "\\n"
only, edited incrementally); pygls' own ``TextDocument`` would split on U+2028 and rebuild the whole
text on every change, so for session documents the workspace holds a thin stand-in whose text is
produced from our model only if someone asks for it.

Positions: the analysis works in byte offsets within a line; every handler converts with the
position encoding negotiated at ``initialize`` (UTF-16 for VS Code, UTF-8 for Neovim, or UTF-32).

Documents opened (or replaced) with at least ``QUICK_OPEN_CHARS`` characters are analysed on a
worker thread: other requests are answered meanwhile, requests about that document wait for the
analysis (and are answered in arrival order with the changes that arrive meanwhile), and a later
whole-document change supersedes a stale analysis.

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
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from pi_session_server.analysis import autofix, navigation, repairs
from pi_session_server.analysis import hints as hints_mod
from pi_session_server.analysis.diagnostics import Diagnostic, document_diagnostics, first_pass_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.analysis.hover import hover as hover_markdown
from pi_session_server.analysis.positions import UTF8, UTF16, UTF32, to_column, to_offset
from pi_session_server.analysis.selection import selection_spans
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.format.gcpause import gc_paused
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


#: the kind of the "fix all" source action (VS Code's codeActionsOnSave "source.fixAll" includes it)
FIX_ALL = "source.fixAll.pi-session"


def _asks_for(only: Sequence[str], kind: str) -> bool:
    """Does a ``context.only`` list ask for actions of ``kind``? (A kind covers its subkinds:
    "source" asks for "source.fixAll.pi-session".)"""
    return any(k == kind or kind.startswith(k + ".") for k in only)


def _plan_edits(plan: autofix.Plan) -> list[repairs.TextEdit]:
    return [edit for planned in plan.applied for edit in planned.repair.edits()]


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
class Analysis:
    """A document being analysed on the worker thread.

    What arrives for the document meanwhile (changes, requests) waits in ``backlog``, in arrival
    order, and runs once the analysis is installed. ``stale``: a newer text or a close made the
    result useless (the worker stops at its next step; nothing of it is installed).
    """

    backlog: list[tuple[bool, Callable[[], None]]] = field(default_factory=list)  # (is a change, run)
    stale: bool = False

    def requests(self) -> list[tuple[bool, Callable[[], None]]]:
        return [item for item in self.backlog if not item[0]]


@dataclass(eq=False)
class DocState:
    uri: str
    path: str | None
    doc: SessionDocument
    version: int | None = None
    from_disk: bool = False
    disk_key: tuple[int, int, int] | None = None  # (inode, size, mtime) of a file followed on disk
    disk_tail: bytes = b""  # its last bytes as loaded (see _same_tail)
    timer: asyncio.TimerHandle | None = None
    last_publish: float = 0.0
    diagnostics_cache: tuple[int, list[Diagnostic]] | None = None
    lsp_cache: tuple[int, list[types.Diagnostic]] | None = None
    analysis: Analysis | None = None  # set while the document is analysed on the worker thread
    published: int = -1  # doc.version last published
    last_access: float = field(default_factory=time.monotonic)


@dataclass
class LanguageFeatures:
    server: LanguageServer
    docs: dict[str, DocState] = field(default_factory=dict)
    debounce: float = DEBOUNCE
    quick_open: int = QUICK_OPEN_CHARS
    _poller: asyncio.TimerHandle | None = None
    _analyser: ThreadPoolExecutor | None = None

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
        text = item.text
        quick = len(text) >= self.quick_open
        if quick and _running_loop() is not None:
            self._open_in_background(
                item.uri, item.language_id, item.version, lambda: SessionDocument(text, quick=True)
            )
            return
        self._opened(item.uri, item.language_id, item.version, SessionDocument(text, quick=quick))

    def did_open_json(self, uri: str, language_id: str | None, version: int | None, token: Any) -> bool:
        """``didOpen`` with the document's text still a JSON string token (``msgspec.Raw`` or bytes).

        For the transport: decoding a 100 MB ``didOpen`` the usual way builds a 100 MB ``str``
        (often 4 bytes a character, for one emoji) only to encode it back to UTF-8 here. Decoding the
        message with the text as ``msgspec.Raw`` and unescaping the token straight into bytes gives
        exactly the same document, in about a third of the time (see ``json_string_bytes``).

        False (nothing done) for a document that is not a session: it takes the usual path.
        """
        if not self.accepts(uri, language_id) or bytes(memoryview(token)[:1]) != b'"':
            return False  # not a JSON string: the usual path reports it
        if len(memoryview(token)) >= self.quick_open and _running_loop() is not None:
            self._open_in_background(uri, language_id, version, lambda: self._document_of_token(token))
            return True
        self._opened(uri, language_id, version, self._document_of_token(token))
        return True

    def _document_of_token(self, token: Any) -> SessionDocument:
        data = json_string_bytes(token)
        if data is not None:
            # None for invalid UTF-8: decoding the message would have replaced those bytes
            doc = SessionDocument.from_editor_bytes(data, quick=len(data) >= self.quick_open)
            if doc is not None:
                return doc
        text = parse_bytes(memoryview(token))
        if not isinstance(text, str):
            raise ValueError("the document text is not a JSON string")
        return SessionDocument(text, quick=len(text) >= self.quick_open)

    def _opened(self, uri: str, language_id: str | None, version: int | None, doc: SessionDocument) -> None:
        state = self._new_state(uri, language_id, version, doc)
        if doc.provisional:
            self.publish(state, first_pass=True)
            self._soon(lambda: self._finish(state, warm=True))
        else:
            self.publish(state)
            self._soon(lambda: self._warm(state))

    def _new_state(
        self, uri: str, language_id: str | None, version: int | None, doc: SessionDocument
    ) -> DocState:
        previous = self.docs.get(uri)
        if previous is not None and previous.analysis is not None:
            previous.analysis.stale = True  # reopened: that analysis is for a text gone
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
        return state

    # ------------------------------------------------------------------ analysis on the worker thread

    def _open_in_background(
        self, uri: str, language_id: str | None, version: int | None, build: Callable[[], SessionDocument]
    ) -> None:
        # an empty stand-in until the analysis is installed: nothing reads it but the (deferred)
        # requests' fallbacks
        state = self._new_state(uri, language_id, version, SessionDocument())
        self._analyse_in_background(state, build)

    def _analyse_in_background(self, state: DocState, build: Callable[[], SessionDocument]) -> None:
        """Build ``state``'s document with ``build`` on the worker thread, publish its diagnostics
        (the envelope problems first for a quick load) and install it; meanwhile the event loop
        keeps serving. The document being built is reachable from the worker only until installed,
        so it is never touched by two threads at once."""
        previous = state.analysis
        job = Analysis(backlog=previous.requests() if previous is not None else [])
        if previous is not None:
            previous.stale = True
        state.analysis = job
        loop = asyncio.get_running_loop()

        def on_loop(callback: Callable[[], None]) -> None:
            def run() -> None:
                if self.docs.get(state.uri) is state and state.analysis is job and not job.stale:
                    callback()

            loop.call_soon_threadsafe(run)

        def work() -> None:
            if job.stale:
                return
            try:
                # No cyclic GC meanwhile: a full collection holds the GIL while it walks the heap,
                # and the millions of objects an analysis allocates would stop the event loop for
                # up to a second each time (the loop's ``_warm`` settles them once, later).
                with gc_paused():
                    draft, published = analyse()
            except Exception:
                logger.exception("analysing %s on the worker thread failed", state.uri)
                on_loop(lambda: self._analyse_here(state, build))
                return
            if draft is not None:
                on_loop(lambda: self._install(state, draft, published))

        def analyse() -> tuple[DocState | None, list[Any]]:
            draft = DocState(state.uri, state.path, build(), state.version)
            doc = draft.doc
            if doc.provisional:
                first = self.plain([self.lsp_diagnostic(draft, d) for d in first_pass_diagnostics(doc)])
                on_loop(lambda: self._send(state, first))
                if job.stale:
                    return None, []
                doc.finish()
            # the publication's JSON is built here too: for 100,000s of diagnostics that takes
            # seconds, which the loop would otherwise spend
            published = self.plain(self.lsp_diagnostics(draft))
            _fill_caches(doc)
            return draft, published

        if self._analyser is None:
            self._analyser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pi-analysis")
        self._analyser.submit(work)

    def _install(self, state: DocState, draft: DocState | None, published: list[Any] | None) -> None:
        """On the loop: the analysed document replaces the stand-in, its diagnostics go out, then
        what waited for it runs in arrival order."""
        job = state.analysis
        state.analysis = None
        if draft is not None:
            state.doc = draft.doc
            state.diagnostics_cache = draft.diagnostics_cache
            state.lsp_cache = draft.lsp_cache
            self.publish(state, published=published)
            self._soon(lambda: self._warm(state))
        for _, run in job.backlog if job is not None else ():
            run()

    def _analyse_here(self, state: DocState, build: Callable[[], SessionDocument]) -> None:
        """The worker failed (a bug): analyse on the loop, as for a small document, so that the
        document still gets its diagnostics and the waiting requests their answers."""
        draft: DocState | None = None
        try:
            draft = DocState(state.uri, state.path, build(), state.version)
        except Exception:
            logger.exception("analysing %s failed", state.uri)
        self._install(state, draft, None)

    def defer(self, uri: str, answer: Callable[[], Any]) -> asyncio.Future[Any] | None:
        """None when the document ``uri`` can be answered about now; else a future that gets
        ``answer()`` once its analysis is installed (after the changes that arrived before)."""
        state = self.docs.get(uri)
        if state is None or state.analysis is None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def run() -> None:
            if future.cancelled():
                return
            try:
                future.set_result(answer())
            except Exception as error:
                future.set_exception(error)

        state.analysis.backlog.append((False, run))
        return future

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
        changes = list(params.content_changes)
        version = params.text_document.version
        whole = self._big_replacement(changes)
        if whole is not None and _running_loop() is not None:
            # a new text to analyse from scratch: on the worker thread, superseding any analysis
            text = changes[whole].text
            state.version = version
            self._analyse_in_background(state, lambda: SessionDocument(text, quick=True))
            changes = changes[whole + 1 :]
            if not changes:
                return
        if state.analysis is not None:
            state.analysis.backlog.append((True, lambda: self._apply_changes(state, changes, version)))
            return
        self._apply_changes(state, changes, version)

    def _big_replacement(self, changes: list[Any]) -> int | None:
        """The index of the last whole-document change if its text is big, else None."""
        for i in range(len(changes) - 1, -1, -1):
            if not isinstance(changes[i], types.TextDocumentContentChangePartial):
                return i if len(changes[i].text) >= self.quick_open else None
        return None

    def _apply_changes(self, state: DocState, changes: list[Any], version: int) -> None:
        doc = state.doc
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.offset(state, change.range.start)
                end = self.offset(state, change.range.end)
                doc.apply_edit(start[0], start[1], end[0], end[1], change.text)
            else:
                doc.replace_all(change.text)
        state.version = version
        self.schedule_publish(state)

    def did_close(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is None:
            return
        if state.analysis is not None:
            state.analysis.stale = True
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
            st = os.stat(path)
            # lines keep their place in the file, not their bytes: a GB session the editor did
            # not send costs the memory of its line facts (SessionDocument.load_file)
            doc = SessionDocument()
            size = doc.load_file(path)
        except OSError:
            return None
        state = DocState(
            uri,
            path,
            doc,
            None,
            from_disk=True,
            disk_key=(st.st_ino, size, st.st_mtime_ns),
            disk_tail=_tail_of(doc),
        )
        self.docs[uri] = state
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
                appended = (
                    old is not None
                    and old[0] == st.st_ino
                    and st.st_size > old[1]
                    and _same_tail(f, state.disk_tail, old[1])
                )
                if appended:
                    assert old is not None
                    f.seek(old[1])
                    added = f.read()
                    last = doc.line_count - 1
                    end = len(doc.lines[last].raw)
                    doc.apply_edit(last, end, last, end, added)
                    size = old[1] + len(added)
                    state.disk_tail = (state.disk_tail + added)[-_TAIL:]
            if not appended:
                size = doc.load_file(state.path)
                state.disk_tail = _tail_of(doc)
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
        if self.docs.get(state.uri) is not state or state.analysis is not None:
            return
        _fill_caches(state.doc)
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
        cache = state.lsp_cache
        if cache is not None and cache[0] == state.doc.version:
            return cache[1]
        found = [self.lsp_diagnostic(state, d) for d in self.diagnostics(state)]
        state.lsp_cache = (state.doc.version, found)
        return found

    def publish(self, state: DocState, first_pass: bool = False, published: list[Any] | None = None) -> None:
        """Publish the diagnostics of ``state``; ``first_pass``: only those its envelopes decide
        (a provisional document stays provisional; its complete list follows). ``published``:
        the diagnostics of this version, already as JSON."""
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        state.last_publish = time.monotonic()
        state.published = state.doc.version
        if published is None:
            if first_pass:
                found = [self.lsp_diagnostic(state, d) for d in first_pass_diagnostics(state.doc)]
            else:
                found = self.lsp_diagnostics(state)
            published = self.plain(found)
        self._send(state, published)

    def _send(self, state: DocState, diagnostics: list[Any]) -> None:
        """``textDocument/publishDiagnostics`` with diagnostics already as JSON."""
        params: dict[str, Any] = {"uri": state.uri, "diagnostics": diagnostics}
        if state.version is not None:
            params["version"] = state.version
        send_json = getattr(self.server.protocol, "notify_json", None)
        if send_json is not None:  # the sidecar's transport
            send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params)
        else:
            typed = self.server.protocol._converter.structure(params, types.PublishDiagnosticsParams)
            self.server.text_document_publish_diagnostics(typed)

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
        only = params.context.only
        out = []
        if only is not None and _asks_for(only, FIX_ALL):
            fix_all = self._fix_all_action(state)
            if fix_all is not None:
                out.append(fix_all)
        if only is not None and not _asks_for(only, types.CodeActionKind.QuickFix):
            return out
        first = params.range.start.line
        last = max(first, params.range.end.line)
        resolve = self._resolve_support()
        diags = [d for d in self.diagnostics(state) if first <= d.line <= last]
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

    def _fix_all_action(self, state: DocState) -> types.CodeAction | None:
        """Every repair that loses nothing (``pi-session repair``'s default), as one action: what
        "Fix All" and ``"editor.codeActionsOnSave": {"source.fixAll": ...}`` run. Only offered when
        the client asks for source actions (planning reads the whole document)."""
        plan = autofix.plan_repairs(state.doc, autofix.SAFE_CODES, state.path)
        if not plan.applied:
            return None
        count = len(plan.applied)
        action = types.CodeAction(
            title=f"Fix all problems pi-session can repair without loss ({count} repair{'s' if count > 1 else ''})",
            kind=FIX_ALL,
        )
        if self._resolve_support():
            action.data = {"uri": state.uri, "version": state.doc.version, "key": [FIX_ALL]}
        else:
            action.edit = self.workspace_edit(state, _plan_edits(plan))
        return action

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
        if data.get("key") == [FIX_ALL]:
            state = self.state(data.get("uri", ""))
            if state is not None and state.doc.version == data.get("version"):
                plan = autofix.plan_repairs(state.doc, autofix.SAFE_CODES, state.path)
                action.edit = self.workspace_edit(state, _plan_edits(plan))
            return action
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


async def _wait_for(future: asyncio.Future[Any]) -> Any:
    return await future


def _fill_caches(doc: SessionDocument) -> None:
    """Depths and the leaf path, so that hovers and inlay hints then cost O(1)."""
    tree = doc.tree
    for e in doc.entries():
        tree.depth(e)
    doc.leaf_path()


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


_TAIL = 4096  # bytes of a followed file kept to tell an append from a rewrite


def _tail_of(doc: SessionDocument) -> bytes:
    """The last bytes of the document's text (read once at load: its lines may only know their
    place in the file, which a rewrite in place would change under them)."""
    ours = b""
    for i in range(doc.line_count - 1, -1, -1):
        ours = doc.lines[i].raw + (b"\n" + ours if i < doc.line_count - 1 else ours)
        if len(ours) >= _TAIL:
            break
    return ours[-_TAIL:]


def _same_tail(f: Any, tail: bytes, size: int) -> bool:
    """The file's first ``size`` bytes still end with ``tail``, the end of what we loaded (an
    append, not a rewrite)."""
    n = min(size, len(tail))
    f.seek(size - n)
    return f.read(n) == tail[len(tail) - n :] if n else True


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

    def when_analysed(answer: Callable[[Any], Any]) -> Callable[[Any], Generator[Any, Any, Any]]:
        """The handler of a request about a document: answered at once, or, while the document is
        analysed on the worker thread, once that is done. pygls runs a generator handler up to its
        first ``yield`` right away, so a request keeps its place among the changes around it."""

        def handler(params: Any) -> Generator[Any, Any, Any]:
            waiting = lf.defer(params.text_document.uri, lambda: answer(params))
            if waiting is None:
                return answer(params)
            return (yield _wait_for, (waiting,), {})

        return handler

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
    @when_analysed
    def pull(params: types.DocumentDiagnosticParams) -> Any:
        return lf.pull(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @when_analysed
    def hover(params: types.HoverParams) -> Any:
        return lf.hover(params)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @when_analysed
    def symbols(params: types.DocumentSymbolParams) -> Any:
        return lf.plain(lf.document_symbols(params))

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @when_analysed
    def definition(params: types.DefinitionParams) -> Any:
        return lf.plain(lf.definition(params))

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @when_analysed
    def references(params: types.ReferenceParams) -> Any:
        return lf.plain(lf.references(params))

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @when_analysed
    def folding(params: types.FoldingRangeParams) -> Any:
        return lf.plain(lf.folding(params))

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    @when_analysed
    def inlay_hints(params: types.InlayHintParams) -> Any:
        return lf.plain(lf.inlay_hints(params))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @when_analysed
    def code_lenses(params: types.CodeLensParams) -> Any:
        return lf.plain(lf.code_lenses(params))

    @server.feature(types.TEXT_DOCUMENT_SELECTION_RANGE)
    @when_analysed
    def selection_ranges(params: types.SelectionRangeParams) -> Any:
        return lf.plain(lf.selection_ranges(params))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
        ),
    )
    @when_analysed
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
