"""Language features for session files: thin handlers over :mod:`pi_session_server.analysis`.

Every document has a serial queue (:mod:`workers`): its opening, every change, every request about
it and its closing are jobs on that queue, run in arrival order on a worker thread. The event loop
only routes; a 100 MB document being analysed delays nothing but the requests about it, and those
are answered against exactly the text that preceded them.

Documents are kept as :class:`~pi_session_server.analysis.SessionDocument` (lines split on "\\n"
only, edited incrementally), never as pygls ``TextDocument`` (which would split on U+2028 and
rebuild the whole text on every change). Positions: the analysis works in byte offsets within a
session line; every handler converts with the position encoding negotiated at ``initialize``
(UTF-16 for VS Code, UTF-8 for Neovim, or UTF-32) and with the LSP's line breaks
(:mod:`~pi_session_server.analysis.lone_cr`: a lone "\\r" starts a line on the wire; documents
read from disk, which the editor does not show, keep pi's lines, and so does every document of a
client whose lines end at "\\n" only: ``initializationOptions.lineBreaks``).

Diagnostics: a client that pulls them (``textDocument/diagnostic``) gets them that way only; the
others get ``publishDiagnostics``, debounced. A big document (``QUICK_OPEN_CHARS``) is published in
two steps: its envelope problems at once, then the complete list.

Files the editor does not send (VS Code skips files over 50 MB) are analysed from disk when a
request names them, followed on disk while they grow (the server's one file poller), their
diagnostics pushed, and the client is told (``pi/largeFile``). A path that is not a regular file
(a FIFO, a device) is refused with ``PathRefused`` (-32010) and never opened. A followed file
that is deleted, renamed away or replaced by such a path is gone: its diagnostics are taken back
(the editor, which never had the document, would show them for good), and the next request reads
the path afresh. A file read from disk that the editor then opens is the editor's document only
(the problems pushed from disk are taken back) until it closes it: then it is read again (a read
the editor's opening it again makes useless stops at its pauses). One nobody asks about lets go of
its analysis and stays followed: read again when it changes, its problems stay true.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import inspect
import itertools
import logging
import os
import re
import stat
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException

from pi_session_server.analysis import autofix, jsonpath, navigation, repairs
from pi_session_server.analysis import completion as completion_mod
from pi_session_server.analysis import hints as hints_mod
from pi_session_server.analysis.diagnostics import (
    Diagnostic,
    diagnostics_of_lines,
    document_diagnostics,
    first_pass_diagnostics,
)
from pi_session_server.analysis.document import BOM_PREFIX_SIZE, SessionDocument
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.analysis.highlights import DECLARATION, highlights
from pi_session_server.analysis.hover import hover as hover_markdown
from pi_session_server.analysis.hover import reads_its_line_only
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.analysis.lone_cr import LoneCarriageReturns, editor_line_end, lsp_position
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.analysis.positions import UTF8, UTF16, UTF32, to_offset
from pi_session_server.analysis.selection import selection_spans
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.errors import StaleFileError
from pi_session_server.format.gcpause import gc_paused
from pi_session_server.format.jsjson import encode_value
from pi_session_server.format.jstext import as_displayed
from pi_session_server.regular_file import NotRegularFile, open_regular, open_regular_status
from pi_session_server.render.editor_text import shown_line
from pi_session_server.session.profiles import profile_for

from .errors import INVALID_PARAMS, PiRpcError
from .language_open_text import OpenedText
from .language_reopen import ClosedDocument, ClosedDocuments
from .locations import MAX_URI_CHARS, FileKeys, file_keys, require_regular_file, uri_to_path
from .pending_deletes import deleted_as
from .poller import signature_of
from .workers import (
    Cancelled,
    CancelToken,
    Job,
    SerialQueue,
    answer_urgent_jobs,
    at_a_pause,
    log_failure,
    on_loop,
    pausing,
    queued_together,
)

if TYPE_CHECKING:
    from .app import PiSessionServer

logger = logging.getLogger(__name__)

LANGUAGE_IDS = frozenset({"pi-session", "jsonl", "json"})
LARGE_FILE = "pi/largeFile"
EXTRACT_IMAGE = "pi.session.extractImage"
#: repairs made to the file on disk (a byte order mark the editor hides), as `repair --in-place`
REPAIR_FILE = "pi.session.repairFile"
SOURCE = "pi-session"

#: seconds between two diagnostics publications of one document (the first one goes out at once)
DEBOUNCE = 0.05
#: a file read from disk lets go of its analysis after this many seconds without a request about it
#: (it is still followed: read again when it changes)
DISK_FORGET = 900.0
#: documents with more lines have their objects moved out of the garbage collector's sight
BIG_DOCUMENT_LINES = 20_000
#: documents opened with at least this many characters publish their diagnostics in two steps: the
#: envelope problems at once, then the complete list
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


def _start_first(asked: types.Range) -> types.Range:
    """The range a client gave end first (a selection made upwards), start first."""
    start, end = asked.start, asked.end
    if (end.line, end.character) < (start.line, start.character):
        return types.Range(end, start)
    return asked


def _last_line_selected(selection: types.Range) -> int:
    """The last line a selection holds a character of: one that ends at the start of a line (a
    whole line selected, as clicking its number does) ends on the line before."""
    end = selection.end
    if end.character == 0 and end.line > selection.start.line:
        return end.line - 1
    return end.line


def _asks_for(only: Sequence[str], kind: str) -> bool:
    """Does a ``context.only`` list ask for actions of ``kind``? (A kind covers its subkinds:
    "source" asks for "source.fixAll.pi-session".)"""
    return any(k == kind or kind.startswith(k + ".") for k in only)


def _repair_line(key: Sequence[Any]) -> int | None:
    """The line a repair's key names (None for a repair of the file: its header, its encoding)."""
    return key[1] if len(key) > 1 and type(key[1]) is int else None


def _quick_fixes_only(params: types.CodeActionParams) -> bool:
    """A code action request that asks for no "fix all" action: the quick fixes of the lines of its
    range, what the editor asks at every cursor move (a "fix all" plans every repair of the
    document)."""
    only = params.context.only
    return only is None or not _asks_for(only, FIX_ALL)


def _plan_edits(plan: autofix.Plan) -> list[repairs.TextEdit]:
    return [edit for planned in plan.applied for edit in planned.repair.edits()]


#: (in a request's job) it is not answered at a pause of another one: nothing to hand back
_NO_PAUSE = object()

# an LSP Position and Range as the JSON values they are sent as
JsonPosition = dict[str, int]
JsonRange = dict[str, JsonPosition]


@dataclass(frozen=True, slots=True)
class KeptOutline:
    """A documentSymbol answer and what it was made of: the analysis (not held: a reload replaces
    it, and its version counts again), its version, and the leaf the outline marks."""

    doc: weakref.ref[SessionDocument]
    version: int
    leaf: LineInfo | None
    answer: msgspec.Raw


@dataclass(eq=False)
class DocState:
    """One document and its queue. Everything but ``queue``, ``closed``, ``changes_received`` and
    ``resting`` is read and written by jobs on that queue only."""

    uri: str
    path: str | None
    queue: SerialQueue
    # what the file at ``path`` is (locations.file_keys, set whole by a request's job; read on the
    # loop too): a session held on it through another spelling is found by it
    keys: FileKeys = frozenset()
    doc: SessionDocument | None = None  # None until opened (or when reading it from disk failed)
    version: int | None = None
    from_disk: bool = False
    # a lone CR starts a line on the wire (see lone_cr): not in a document read from disk, which
    # keeps pi's lines, nor for a client whose lines end at "\n" only (ServerOptions)
    lone_cr_ends_line: bool = True
    # the documents read from disk (their URIs) that this one's opening replaced: the file's
    # problems are shown from disk again when the editor closes it
    replaced_disk_reads: tuple[str, ...] = ()
    failure: PiRpcError | None = None  # reading it from disk was refused: every request answers this
    closed: bool = False
    # the editor's changes received, counted on the loop as each arrives (jobs read it): a request
    # asked before the last of them is about a text the editor no longer shows
    changes_received: int = 0
    # while the queue answers a request about the whole document: the changes received before it
    # was asked (see LanguageFeatures.still_current)
    answering_after: int | None = None
    disk_key: tuple[int, int, int] | None = None  # (inode, size, mtime) of a file followed on disk
    disk_tail: bytes = b""  # its last bytes as loaded (see _same_tail)
    refreshing: bool = False  # a refresh from disk is queued
    # (on the loop) a file read from disk let go of its analysis, nobody having asked about it for
    # a while: it is read again when it changes, or when a request names it (see _rest)
    resting: bool = False
    lone_cr: LoneCarriageReturns = field(default_factory=LoneCarriageReturns)
    last_publish: float = 0.0
    publish_pending: bool = False  # a debounced publication is on its way
    # (doc.version, version) last published: a change that leaves the text as it was still needs
    # a publication naming its version
    published: tuple[int, int | None] = (-1, None)
    diagnostics_cache: tuple[int, list[Diagnostic]] | None = None
    lsp_cache: tuple[int, list[dict[str, Any]]] | None = None
    outline: KeptOutline | None = (
        None  # the last documentSymbol answer (see LanguageFeatures.document_symbols)
    )
    # {repair key: (the line it was decided on, whether its image can be moved out)}: code actions
    # are asked at every cursor move, and the answer reads megabytes of base64; it holds while the
    # line is the same (an edit gives a changed line new facts)
    image_verdicts: dict[tuple[Any, ...], tuple[LineInfo, bool]] = field(default_factory=dict)
    last_access: float = field(default_factory=time.monotonic)
    # which opening of a document this is, in the process: a pull's resultId holds it, as every
    # opening's versions start again (an object's id() is used again once it is freed)
    opening: int = field(default_factory=itertools.count().__next__)

    def opened(self) -> SessionDocument:
        if self.failure is not None:
            raise self.failure
        assert self.doc is not None
        return self.doc


class LanguageFeatures:
    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self.docs: dict[str, DocState] = {}
        # the queue of each document's jobs, the same for every opening of one URI while one of
        # them has jobs to run: a close's last publication goes out before the next open's first
        self._queues: dict[str, SerialQueue] = {}
        self._queues_lock = threading.Lock()
        self.debounce = DEBOUNCE
        self.quick_open = QUICK_OPEN_CHARS
        self.disk_forget = DISK_FORGET
        self._converter = converters.get_converter()
        self._forget_timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self.closed_documents = ClosedDocuments()

    def stop(self) -> None:
        """The server shuts down: the timer letting go of idle documents' analysis is cancelled,
        and no request arms it again (the shutdown lets go of everything)."""
        self._stopped = True
        if self._forget_timer is not None:
            self._forget_timer.cancel()
            self._forget_timer = None

    # ------------------------------------------------------------------ client and positions

    @property
    def encoding(self) -> str:
        try:
            value = self.server.workspace.position_encoding
        except RuntimeError:  # not initialized
            return UTF16
        text = getattr(value, "value", value)
        return text if text in (UTF8, UTF16, UTF32) else UTF16

    def workspace_cwd(self) -> str | None:
        """The directory a document without a file (an untitled one) is taken to belong to, as pi
        writes its working directory in a session's header: the client's first workspace folder,
        else its root; None without either (the analysis then takes this process's)."""
        try:
            workspace = self.server.workspace
        except RuntimeError:  # not initialized
            return None
        for folder in list(workspace.folders.values()):
            path = _path_of(folder.uri)
            if path:
                return path
        root = workspace.root_uri
        return (_path_of(root) if root else None) or workspace.root_path or None

    def client_pulls(self) -> bool:
        """The client asks for diagnostics (``textDocument/diagnostic``) and so is not sent them."""
        try:
            caps = self.server.client_capabilities
        except AttributeError:  # not initialized
            return False
        return caps.text_document is not None and caps.text_document.diagnostic is not None

    def position(self, state: DocState, line: int, offset: int, raw: bytes | None = None) -> types.Position:
        """``raw``: the line's bytes when the caller has them (a line of a file is read again
        each time they are asked for)."""
        return types.Position(*self.place(state, line, offset, raw))

    def place(self, state: DocState, line: int, offset: int, raw: bytes | None = None) -> tuple[int, int]:
        """:meth:`position` as (line, character): for an answer made as JSON values."""
        doc = state.opened()
        if line >= doc.line_count:
            line = doc.line_count - 1
            offset = len(doc.lines[line].raw)
            raw = None
        if raw is None:
            raw = doc.lines[line].raw
        offset = min(offset, _editor_line_end(doc, line, raw))
        return lsp_position(state.lone_cr, line, raw, offset, self.encoding, doc.errors)

    def range(
        self, state: DocState, line: int, start: int, end: int, end_line: int | None = None
    ) -> types.Range:
        last = line if end_line is None else end_line
        return types.Range(self.position(state, line, start), self.position(state, last, end))

    def line_of(self, state: DocState, lsp_line: int) -> int:
        """The session line an LSP line is part of."""
        return state.lone_cr.from_lsp(max(lsp_line, 0))[0]

    def offset(self, state: DocState, pos: types.Position) -> tuple[int, int]:
        """(line, byte offset) of a client position, clamped to the document."""
        doc = state.opened()
        line, start, end = state.lone_cr.from_lsp(max(pos.line, 0))
        if line >= doc.line_count:
            last = doc.line_count - 1
            return last, len(doc.lines[last].raw)
        raw = doc.lines[line].raw
        if end < 0:
            # to a client whose lines end at "\n" only, the CR of a CRLF is its line's last
            # character (Neovim shows it as ^M, and text typed after it goes after it), or not in
            # its line at all (a buffer whose lines all end in CRLF): a position past it is after it
            newline_only = self.server.options.lines_end_at_newline_only
            end = len(raw) if newline_only else _editor_line_end(doc, line, raw)
        return line, start + to_offset(raw[start:end], pos.character, self.encoding, doc.errors)

    def encoded(self, value: Any) -> Any:
        """An LSP result (lsprotocol objects) as the JSON it is sent as, made on the worker (an
        answer made as JSON already is that)."""
        if isinstance(value, msgspec.Raw):
            return value
        return msgspec.Raw(encode_value(self._converter.unstructure(value), displayed=True))

    # ------------------------------------------------------------------ text synchronisation (on the loop)

    @staticmethod
    def accepts(uri: str, language_id: str | None) -> bool:
        return (language_id in LANGUAGE_IDS) or uri.endswith(".jsonl")

    def _new_state(self, uri: str, *, from_disk: bool = False) -> DocState:
        previous = self.docs.get(uri)
        if previous is not None:
            self._drop(previous)
        path = _path_of(uri)
        with self._queues_lock:
            queue = self._queues.get(uri)
            if queue is None:
                queue = self._queues[uri] = self.server.pool.queue(f"document {uri}")
            lone_cr_ends_line = not from_disk and not self.server.options.lines_end_at_newline_only
            state = DocState(uri, path, queue, from_disk=from_disk, lone_cr_ends_line=lone_cr_ends_line)
            self.docs[uri] = state
        return state

    def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if not self.accepts(item.uri, item.language_id):
            return
        text = item.text
        self._open(item.uri, item.version, len(text), OpenedText(self.server.options.pi, text=text))

    def did_open_raw(self, body: bytes) -> bool:
        """``didOpen`` with the text still a JSON string token: decoding a 100 MB ``didOpen`` the
        usual way builds a 100 MB ``str`` (often 4 bytes a character, for one emoji) only to encode
        it back to UTF-8 here. The token is unescaped straight into bytes, on the document's worker.
        False (nothing done) for a document that is not a session: it takes the usual path."""
        try:
            message = _decode_open(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        document = message.params.textDocument
        token = document.text
        if message.jsonrpc != "2.0" or not self.accepts(document.uri, document.languageId):
            return False
        if bytes(memoryview(token)[:1]) != b'"':
            return False  # not a JSON string: the usual path reports it
        size = _token_size(token)
        self._open(document.uri, document.version, size, OpenedText(self.server.options.pi, token=token))
        return True

    def _open(self, uri: str, version: int | None, size: int, text: OpenedText) -> None:
        """``text``: what the editor sent, analysed, or compared with the analysis kept at the
        document's closing (see :mod:`.language_reopen`) and analysed when it is not that one's
        text with lines appended."""
        previous = self.docs.get(uri)
        replaced = previous.replaced_disk_reads if previous is not None and not previous.from_disk else ()
        replaced += self._replace_disk_reads(uri)
        state = self._new_state(uri)
        state.replaced_disk_reads = replaced
        state.version = version
        quick = size >= self.quick_open

        def open_job(_token: CancelToken) -> None:
            if state.path is not None:  # (the sessions held on the file, however spelled, find it)
                state.keys = file_keys(state.path)
            closed = self.closed_documents.take(uri)
            # One pause of the collector for the whole open: a pause that ended between the first
            # pass and the rest would have it walk every line's facts at once, before the first
            # diagnostics go out; a big document's are frozen before it ends (see _opened).
            try:
                with gc_paused():
                    if closed is None or not self._reopened(state, closed, text.utf8()):
                        closed = None  # (freed before the new analysis is made)
                        self._opened(state, text.document(quick))
            except Exception as error:  # a bug of ours: the user learns the document has no analysis
                self.server.notify(
                    types.WINDOW_SHOW_MESSAGE,
                    {
                        "type": types.MessageType.Error.value,
                        "message": shown_line(
                            f"pi-session could not analyse {uri}: {type(error).__name__}: {error} "
                            "(the server's log has the details)"
                        ),
                    },
                )
                raise

        log_failure(state.queue.submit(open_job, interruptible=False), f"opening {uri}")

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        state = self.docs.get(params.text_document.uri)
        if state is None or state.from_disk:
            return
        changes = list(params.content_changes)
        version = params.text_document.version
        state.changes_received += 1
        state.queue.submit(lambda _token: self._apply_changes(state, changes, version), interruptible=False)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """The editor wrote the document: the file's bytes may have changed under the text (a byte
        order mark written or dropped with the encoding)."""
        state = self.docs.get(params.text_document.uri)
        if state is not None and not state.from_disk:
            state.queue.submit(lambda _token: self._file_changed(state), interruptible=False)

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        state = self.docs.get(params.text_document.uri)
        if state is not None and not state.from_disk:
            # (the whole-document answers asked before are for a text the editor no longer shows:
            # Neovim asks its folds and hints right before it reloads a file changed on disk)
            state.changes_received += 1
            del self.docs[state.uri]
            self._drop(state, publish_empty=True, keep=True)
            self._show_disk_reads_again(state)

    def _replace_disk_reads(self, uri: str) -> tuple[str, ...]:
        """On the loop, as the editor opens ``uri``: drop the documents read from disk for its
        file (under ``uri``, or another spelling of it), and take back the problems pushed for
        them, unless the opened document's own go out by push to the same URI (its first
        publication replaces them: it is made on the same queue, after the drop). Their URIs."""
        path = _path_of(uri)
        replaced = []
        for other in list(self.docs.values()):
            if other.from_disk and (other.uri == uri or (path is not None and other.path == path)):
                del self.docs[other.uri]
                self._drop(other, publish_empty=other.uri != uri or self.client_pulls())
                replaced.append(other.uri)
        return tuple(replaced)

    def _show_disk_reads_again(self, closed: DocState) -> None:
        """On the loop, as the editor closes a document that replaced reads from disk: read the
        file from disk again (on the same queue, after the closing's publication), so that its
        problems are shown as they were before the editor opened it, as the file now has them.
        Not while the file is open under another spelling, nor when it was opened again."""

        def read_again(uri: str, path: str) -> None:
            if uri not in self.docs:  # (not opened again while a pi/delete sent before answered)
                self._from_disk(uri, path, announce=False)

        for uri in closed.replaced_disk_reads:
            path = _disk_path(uri)
            if path is None or uri in self.docs or any(s.path == path for s in self.docs.values()):
                continue
            self.server.pending_deletes.ordered(
                [deleted_as(path, self.server.environment)], functools.partial(read_again, uri, path)
            )

    def _drop(self, state: DocState, publish_empty: bool = False, keep: bool = False) -> None:
        """Forget a document once the jobs queued for it are done; ``publish_empty``: take back
        its pushed problems; ``keep``: keep its analysis a few seconds for its reopening
        (:mod:`.language_reopen`)."""

        def close(_token: CancelToken) -> None:
            state.closed = True
            jsonpath.forget_kept_facts()  # (a long line's bytes, kept for the hovers along it)
            if publish_empty and self.pushes(state):
                self._send(state, [])
            if (
                keep
                and state.doc is not None
                and state.failure is None
                and self.closed_documents.keep(state.uri, state.doc, state.lone_cr)
            ):
                state.doc = None  # (the kept analysis has one owner: freed when it lets go)
                self._expire_closed_later(state.queue)
            with self._queues_lock:
                if self.docs.get(state.uri) is None:  # not opened again meanwhile (on its queue)
                    self._queues.pop(state.uri, None)

        self.server.poller.unfollow(state.uri)
        state.queue.submit(close, interruptible=False)

    def _expire_closed_later(self, queue: SerialQueue) -> None:
        """On a worker: have the closed documents kept too long dropped by a job of ``queue``
        once the one just kept is (the loop only times it: freeing is a worker's)."""
        seconds = self.closed_documents.seconds

        def expire(_token: CancelToken) -> None:
            self.closed_documents.expire()

        self.server.loop_call(
            lambda: asyncio.get_running_loop().call_later(
                seconds, lambda: queue.submit(expire, interruptible=False)
            )
        )

    # ------------------------------------------------------------------ on the document's worker

    def _reopened(self, state: DocState, closed: ClosedDocument, data: bytes | None) -> bool:
        """Continue the analysis kept at the document's closing when the text reopened (``data``,
        its bytes) is the closed text with lines appended: the lines appended are analysed as the
        edit at its end that adds them would be, and the diagnostics published. False (nothing
        done) for any other text, which is analysed afresh.

        Only a text whose bytes the fresh analysis would take as they are continues one: valid
        UTF-8 after the closed text (the fresh analysis replaces invalid bytes), and no surrogate
        in it (an editor's text decoded with them as JSON escapes then sent raw would be read
        otherwise)."""
        doc = closed.doc
        if (
            data is None
            or doc.provisional
            or doc.errors != "surrogatepass"  # (as every editor's text once finished)
            or doc.profile is not profile_for(self.server.options.pi)
        ):
            return False
        added = doc.appended_in(data)
        if added is None or _holds_surrogate(data, len(data) - len(added)):
            return False
        try:
            added.decode("utf-8")
        except UnicodeDecodeError:
            return False
        state.doc = doc
        _keep_lone_crs(state, closed.lone_cr)
        self._look_at_file(state)
        self._append(state, added)
        self.publish(state)
        _fill_caches(doc)
        return True

    def _append(self, state: DocState, added: bytes) -> None:
        """Bytes appended to the end of the document: the edit there that adds them."""
        doc = state.opened()
        last = doc.line_count - 1
        end = len(doc.lines[last].raw)
        before = doc.line_count
        doc.apply_edit(last, end, last, end, added)
        if state.lone_cr_ends_line:
            state.lone_cr.edited(doc.lines, last, 1, 1 + doc.line_count - before)

    def _opened(self, state: DocState, doc: SessionDocument) -> None:
        state.doc = doc
        _keep_lone_crs(state, LoneCarriageReturns())
        self._look_at_file(state)
        self._scan_lone_crs(state, doc)  # before any publication: the editor's lines are placed by it
        if doc.provisional:
            # the envelope problems at once; the complete list once the rest of each line is read
            self.publish(state, first_pass=True)
            # (a hover asked meanwhile on a line read in full already is answered at a pause)
            with pausing():
                doc.finish(lambda: answer_urgent_jobs(half_done=True))
            self._scan_lone_crs(state, doc)  # (finishing may replace invalid UTF-8: new offsets)
        # the document is read: what the user asked meanwhile is answered before its problems
        # are searched, and what was asked during the search after it (the search pauses at
        # problems only: not at all in a file without any, where a hover read off the wire while
        # the lines were read would otherwise wait for the caches too)
        with pausing():
            answer_urgent_jobs()
            self.publish(state)
            answer_urgent_jobs()
        _fill_caches(doc)
        if doc.line_count > BIG_DOCUMENT_LINES:
            # its objects hold no cycles: out of every future collection, which would otherwise
            # walk them all, holding the interpreter (and so every thread) for up to a second
            gc.freeze()

    @staticmethod
    def _scan_lone_crs(state: DocState, doc: SessionDocument) -> None:
        """Where the editor's lines break inside the document's (a lone CR ends a line to LSP)."""
        if state.lone_cr_ends_line and any(b"\r" in line.raw for line in doc.lines):
            state.lone_cr.scan(doc.lines)

    def _look_at_file(self, state: DocState) -> bool:
        """On the worker: give the analysis the file's first bytes on disk, which editors do not
        send (a byte order mark is the file's encoding to them). Whether that changed anything."""
        doc = state.doc
        if doc is None or state.from_disk or state.path is None:
            return False
        return doc.set_disk_start(_file_start(state.path))

    def _file_changed(self, state: DocState) -> None:
        """On the worker: the file under an editor's document changed (saved, or repaired on disk)."""
        if state.closed or state.doc is None or not self._look_at_file(state):
            return
        if self.pushes(state):
            self.schedule_publish(state)
        else:  # the client pulls: tell it to ask again
            self.server.loop_call(self._refresh_pulled_diagnostics)

    def _refresh_pulled_diagnostics(self) -> None:
        try:
            workspace = self.server.client_capabilities.workspace
        except AttributeError:
            return
        if (
            workspace is not None
            and workspace.diagnostics is not None
            and workspace.diagnostics.refresh_support
        ):
            self.server.lsp.workspace_diagnostic_refresh(None)

    def _apply_changes(self, state: DocState, changes: list[Any], version: int) -> None:
        if state.closed or state.doc is None:
            return
        doc = state.doc
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.offset(state, change.range.start)
                end = self.offset(state, change.range.end)
                before = doc.line_count
                doc.apply_edit(start[0], start[1], end[0], end[1], change.text)
                first, removed = min(start[0], end[0]), abs(end[0] - start[0]) + 1
                # (an edit can make a "\r" lone without one in its text: it removed the "\n" after it)
                if state.lone_cr_ends_line:
                    state.lone_cr.edited(doc.lines, first, removed, removed + doc.line_count - before)
            else:
                doc.replace_all(change.text)
                _keep_lone_crs(state, LoneCarriageReturns())
                if state.lone_cr_ends_line and "\r" in change.text:
                    state.lone_cr.scan(doc.lines)
        state.version = version
        self.schedule_publish(state)

    def _answer(
        self,
        state: DocState,
        answer: Callable[[DocState], Any],
        encode: bool,
        gone: Any,
        changes_before: int | None = None,
    ) -> Any:
        """A request's job: the answer (``encode``: as the JSON it is sent as); ``gone`` when the
        document is (closed, or its file deleted or never there). ``changes_before``: the editor's
        changes received before the request, for a request about the whole document that the
        editor asks again after each change: it is answered ContentModified once a later change
        came, unworked, or as soon as its work sees it (its long loops call
        :meth:`still_current`). Typing in a big document would otherwise queue one whole-document
        answer per keystroke, each for a text gone, ahead of what the user asks next."""
        if state.failure is not None:
            raise state.failure
        if state.closed or state.doc is None:
            return gone
        # (an urgent request answered at a pause of a whole-document answer hands it back as it
        # was, and the leaf too: the paused work, its inlay hints' context edits, reads it again)
        answering_after = state.answering_after
        state.answering_after = changes_before
        doc = state.doc
        paused_leaf = doc.held_leaf if at_a_pause() else _NO_PAUSE
        try:
            self.still_current(state)
            state.last_access = time.monotonic()
            # (at a pause of another job, the document stays as that job reads it: the poller
            # queues the refresh as a job of its own)
            if state.from_disk and not at_a_pause():
                self._refresh_from_disk(state)
                if state.closed:
                    return gone
            # (at a pause of the first full read of its lines, it goes on with them: an urgent job
            # is answered there only when exact without them, see ask's ``exact_early``)
            if state.doc.provisional and not at_a_pause():
                state.doc.finish()
            if state.path is not None:  # where the session held on this file continues (pi/branch)
                state.keys = file_keys(state.path)
                state.doc.set_leaf(self.server.registry.held_leaf(state.path, state.keys))
            result = answer(state)
            self.still_current(state)
            return self.encoded(result) if encode and result is not None else result
        finally:
            state.answering_after = answering_after
            if paused_leaf is not _NO_PAUSE:
                doc.set_leaf(paused_leaf)

    @staticmethod
    def still_current(state: DocState) -> None:
        """Raise ContentModified when the request about the whole document being answered was
        overtaken by a change (see :meth:`_answer`); its long loops call this now and then, so a
        change typed stops the work for the text it replaced. The requests about a position asked
        meanwhile (a hover) are answered first, here: they need not wait for the whole answer."""
        answer_urgent_jobs()
        if state.answering_after is not None and state.changes_received != state.answering_after:
            raise JsonRpcException(
                code=types.LSPErrorCodes.ContentModified,
                message="The document changed after this request: ask again",
            )

    def ask(
        self,
        uri: str,
        answer: Callable[[DocState], Any],
        *,
        encode: bool = True,
        otherwise: Any = None,
        gone: Any = None,
        whole_document: bool = False,
        content_modified: bool = True,
        urgent: bool = False,
        exact_early: Callable[[DocState], bool] | None = None,
    ) -> Any:
        """Queue a request about ``uri`` (read from disk when the editor did not send it); what a
        handler returns: the job, or ``otherwise`` for a document that is not a session (``gone``
        for one closed, or whose file is not there: a request whose answer cannot be null says
        what to answer instead). A file
        read from disk is read after the pi/delete of it sent before the request answered (see
        :mod:`.pending_deletes`): the request finds it gone. ``whole_document``: a request about
        the whole document, whose answer a short request the user waits for (``urgent``: a hover,
        a quick fix) does not wait for unless it started (then the urgent one is answered at its
        next pause, :meth:`still_current`); either sees every change sent before it.
        ``content_modified``: the whole-document request is one the editor asks again after each
        change, answered ContentModified once a later change came (see :meth:`_answer`); False for
        one answered for the text it was asked on whatever comes after (a pull of diagnostics:
        VS Code's client takes ContentModified for an empty list, and would show that).
        ``exact_early``: for an urgent request, whether its answer is exact at a pause of the first
        full read of a big document's lines, before they are all read (it is answered there);
        without it, the request waits for the end of that read."""

        disk_path = _disk_path(uri)  # (None for a uri that names no session file)

        def asked() -> Any:
            # (a read from disk queued together with the request: the read answers an urgent one
            # at its end, before the search for the file's problems, and would pass that pause
            # unseen if it got there before the request was queued)
            with queued_together():
                state = self.docs.get(uri)
                # (a file gone, not forgotten yet; or one whose analysis was let go, read again untold)
                if state is None or (state.closed and state.from_disk) or state.resting:
                    state = self._from_disk(uri, disk_path, announce=state is None or not state.resting)
                if state is None:
                    return otherwise
                changes_before = state.changes_received if whole_document and content_modified else None
                return state.queue.submit(
                    lambda _token: self._answer(state, answer, encode, gone, changes_before),
                    deferrable=whole_document,
                    urgent=urgent,
                    ready=None if exact_early is None else functools.partial(exact_early, state),
                )

        state = self.docs.get(uri)
        if disk_path is None or (state is not None and not state.from_disk):  # no file, or the editor's text
            return asked()
        return self.server.pending_deletes.ordered([deleted_as(disk_path, self.server.environment)], asked)

    def held_leaf_moved(self, paths: set[str], keys: FileKeys = frozenset()) -> None:
        """On the loop: the leaf of a session held on one of ``paths`` (or on the file ``keys`` say
        it is) moved (pi/branch, pi/resetLeaf, appends): a client showing the file asks for its
        code lenses and inlay hints again."""
        if not any(
            (state.path in paths or keys & state.keys) and not state.from_disk for state in self.docs.values()
        ):
            return
        try:
            workspace = self.server.client_capabilities.workspace
        except AttributeError:  # not initialized
            return
        if workspace is None:
            return
        if workspace.code_lens is not None and workspace.code_lens.refresh_support:
            self.server.lsp.workspace_code_lens_refresh(None)
        if workspace.inlay_hint is not None and workspace.inlay_hint.refresh_support:
            self.server.lsp.workspace_inlay_hint_refresh(None)

    # ------------------------------------------------------------------ files the editor did not send

    def _from_disk(self, uri: str, path: str | None, announce: bool = True) -> DocState | None:
        """A new document for the file at ``path`` (``_disk_path(uri)``), read by a job;
        ``announce``: tell the client (``pi/largeFile``), which a read again was told already."""
        if path is None:
            return None
        state = self._new_state(uri, from_disk=True)
        state.path = path
        log_failure(
            state.queue.submit(lambda _token: self._load_from_disk(state, announce), interruptible=False),
            f"reading {path}",
        )
        self._forget_idle_later()
        return state

    def _load_from_disk(self, state: DocState, announce: bool) -> None:
        """``announce``: False for a file read again, whose problems the editor may show from the
        read before: taken back when the file can no longer be read."""
        path = state.path
        assert path is not None
        try:
            self._still_read(state)
            exists = require_regular_file(path)
            if exists:
                doc = SessionDocument(pi=self.server.options.pi)
                st = os.stat(path)
                # lines keep their place in the file, not their bytes: a GB session the editor did
                # not send costs the memory of its line facts (SessionDocument.load_file)
                size = doc.load_file(path, check=lambda: self._still_read(state))
        except Cancelled:
            return  # the editor opened the document before the read ended: its text replaces it
        except PiRpcError as error:
            state.failure = error
            exists = False
        except OSError:
            exists = False
        if not exists:
            if not announce:
                self._send(state, [])
            self.server.loop_call(lambda: self._forget(state))
            return
        state.disk_key = (st.st_ino, size, st.st_mtime_ns)
        state.disk_tail = _tail_of(doc)
        if announce:
            self.server.notify(
                LARGE_FILE,
                {
                    "uri": state.uri,
                    "size": size,
                    "message": f"The editor did not send this document ({size / 1e6:.1f} MB); "
                    "pi-session features work from the file on disk and follow it as it grows.",
                },
            )
        self._opened(state, doc)
        # the file as it was before the read: a change made since (while it was read, or once its
        # problems were published) is seen by the poller's next look
        signature = signature_of(st)

        def follow() -> None:  # (on the loop, where a drop unfollows: never followed once dropped)
            if self.docs.get(state.uri) is state and not state.closed:
                self.server.poller.follow(state.uri, path, lambda: self._queue_refresh(state), signature)

        self.server.loop_call(follow)

    def _still_read(self, state: DocState) -> None:
        """On the worker, at the pauses of a read from disk: raise Cancelled once the document
        being read is no longer wanted (the editor opened the file meanwhile: Neovim closes and
        opens again a file pi appended to, and the read that its closing started is for nothing)."""
        if self.docs.get(state.uri) is not state:
            raise Cancelled

    def _read_again_paused(self, state: DocState) -> None:
        """On the worker, at the pauses of a file read again from disk (another program rewrote
        it), the analysis of its read before still whole: stop if the read is no longer wanted
        (:meth:`_still_read`), else answer the requests about a position asked meanwhile from that
        analysis. The file changed when another program wrote it, not in the order of the
        editor's messages: a hover asked a moment before would have been answered so too."""
        self._still_read(state)
        answer_urgent_jobs()

    def _forget(self, state: DocState) -> None:
        """On the loop: a document that could not be read from disk is tried again next time."""
        if self.docs.get(state.uri) is state:
            del self.docs[state.uri]

    def _gone(self, state: DocState) -> None:
        """On the worker: the file of a document read from disk is no longer there (deleted,
        renamed away, or no longer a regular file). Its problems are taken back (nothing else
        would clear them: the editor never had the document) and the document is forgotten; a
        later request reads the path afresh, as pi would."""
        state.closed = True  # (first: a request the client makes on the empty list reads afresh)
        self._send(state, [])

        def forget() -> None:
            if self.docs.get(state.uri) is state:
                del self.docs[state.uri]
                self._drop(state)

        self.server.loop_call(forget)

    def _queue_refresh(self, state: DocState) -> None:
        """The poller saw the file change (on its thread)."""
        if state.resting:
            self.server.loop_call(lambda: self._wake(state))
            return
        if not state.refreshing and not state.closed:
            state.refreshing = True
            state.queue.submit(lambda _token: self._refresh_from_disk(state), interruptible=False)

    def _refresh_from_disk(self, state: DocState) -> bool:
        """Catch up with the file: an append is applied as an edit at the end; anything else reloads."""
        state.refreshing = False
        doc = state.doc
        if doc is None or state.closed or state.path is None:
            return False
        old = state.disk_key
        opened = self._open_changed(state, state.path)
        if opened is None:
            return False
        fd, st = opened
        try:
            with open(fd, "rb") as f:
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
                    self._append(state, added)
                    size = old[1] + len(added)
                    state.disk_tail = (state.disk_tail + added)[-_TAIL:]
            if not appended:
                # (the analysis stays as it was until the read ends: a request about a position
                # asked meanwhile is answered from it at the read's pauses)
                with pausing():
                    size = doc.load_file(state.path, check=lambda: self._read_again_paused(state))
                state.disk_tail = _tail_of(doc)
        except Cancelled:  # (the editor opened the file meanwhile: the document is dropped)
            return False
        except OSError:
            return False
        state.disk_key = (st.st_ino, size, st.st_mtime_ns)
        self.schedule_publish(state)
        return True

    def _open_changed(self, state: DocState, path: str) -> tuple[int, os.stat_result] | None:
        """The file followed by ``state``, opened, and its status; None when it has not changed
        since it was read, or cannot be read now (a path that no longer names a regular file, a
        FIFO or a device renamed over it, is gone as a deleted file is: never read)."""
        try:
            st = os.stat(path)
            if (st.st_ino, st.st_size, st.st_mtime_ns) == state.disk_key:
                return None  # unchanged: nothing opened (the poller asks again and again)
            fd, st = open_regular_status(path)
        except (FileNotFoundError, NotADirectoryError, NotRegularFile):
            self._gone(state)
            return None
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):  # (a directory: nothing to read)
            os.close(fd)
            self._gone(state)
            return None
        if (st.st_ino, st.st_size, st.st_mtime_ns) == state.disk_key:
            os.close(fd)
            return None
        return fd, st

    def _forget_idle_later(self) -> None:
        """Documents read from disk that nobody asked about for ``disk_forget`` seconds
        (:data:`DISK_FORGET`) let go of their analysis (:meth:`_rest`)."""
        if self._forget_timer is not None or self._stopped:
            return
        loop = asyncio.get_running_loop()

        def analysed() -> list[DocState]:
            return [s for s in self.docs.values() if s.from_disk and not s.resting]

        def forget() -> None:
            self._forget_timer = None
            now = time.monotonic()
            for state in analysed():
                if now - state.last_access >= self.disk_forget:
                    self._rest(state)
            if analysed():
                self._forget_idle_later()

        self._forget_timer = loop.call_later(self.disk_forget / 10, forget)

    def _rest(self, state: DocState) -> None:
        """On the loop: a document read from disk that nobody asks about lets go of its analysis
        (the memory of a big file's line facts), not of its problems: the editor, which never had
        the document, keeps showing them, so they must stay true. The file stays followed (a
        ``stat`` a tick); when it changes (pi appends a damaged line, ``pi-session repair`` mends
        it) it is read again and its problems published as it now has them (:meth:`_wake`), and
        so it is when a request names it. Deleted, its problems are taken back. One whose file
        has no problem is forgotten whole, no longer followed: nothing of it is listed to go
        stale, and following every file ever checked (a "Check All") would cost a ``stat`` each
        a tick for good."""
        state.resting = True

        def rest(_token: CancelToken) -> None:
            if state.closed:
                return
            found = state.diagnostics_cache
            if found is not None and not found[1]:
                self.server.loop_call(lambda: self._forget_resting(state))
            state.doc = None
            state.diagnostics_cache = state.lsp_cache = None
            state.outline = None
            state.image_verdicts = {}
            state.disk_tail = b""
            jsonpath.forget_kept_facts()  # (a long line's bytes, kept for the hovers along it)

        state.queue.submit(rest, interruptible=False)

    def _forget_resting(self, state: DocState) -> None:
        """On the loop: forget a resting document whose file had no problem (see :meth:`_rest`);
        a request that names it reads it again, as a new one."""
        if self.docs.get(state.uri) is state and state.resting:
            del self.docs[state.uri]
            self._drop(state)

    def _wake(self, state: DocState) -> None:
        """On the loop: the file of a resting document changed: read it again (a file gone is
        found so by the read, which takes its problems back)."""
        if self.docs.get(state.uri) is state and state.resting and state.path is not None:
            self._from_disk(state.uri, state.path, announce=False)

    # ------------------------------------------------------------------ diagnostics

    def diagnostics(self, state: DocState) -> list[Diagnostic]:
        doc = state.opened()
        cache = state.diagnostics_cache
        if cache is not None and cache[0] == doc.version:
            return cache[1]
        found = document_diagnostics(doc, lambda: self.still_current(state))
        state.diagnostics_cache = (doc.version, found)
        return found

    def lsp_diagnostic(
        self,
        state: DocState,
        d: Diagnostic,
        related_ranges: dict[tuple[int, int, int], types.Range] | None = None,
    ) -> types.Diagnostic:
        """``related_ranges``: the ranges of related lines converted already in this pass (the
        first lines of a large duplicate group are related to each of its members)."""
        doc = state.opened()
        ranges = {} if related_ranges is None else related_ranges
        related = []
        for r in d.related:
            if r.line < doc.line_count:
                where = ranges.get((r.line, r.start, r.end))
                if where is None:
                    where = ranges[r.line, r.start, r.end] = self.range(state, r.line, r.start, r.end)
                related.append(
                    types.DiagnosticRelatedInformation(
                        types.Location(state.uri, where), shown_line(r.message)
                    )
                )
        return types.Diagnostic(
            range=self.range(state, d.line, d.start, d.end),
            message=shown_line(d.message),
            severity=types.DiagnosticSeverity(int(d.severity)),
            code=d.code,
            source=SOURCE,
            related_information=related or None,
        )

    def lsp_diagnostics(self, state: DocState) -> list[dict[str, Any]]:
        """The document's diagnostics as the JSON values they are sent as (cached per version)."""
        doc = state.opened()
        cache = state.lsp_cache
        if cache is not None and cache[0] == doc.version:
            return cache[1]
        made = []
        related_ranges: dict[tuple[int, int, int], types.Range] = {}
        for n, d in enumerate(self.diagnostics(state)):
            if n % CHECK_EVERY == 0:
                self.still_current(state)  # (a damaged file has one or more a line)
            made.append(self.lsp_diagnostic(state, d, related_ranges))
        found: list[dict[str, Any]] = self._converter.unstructure(made)
        state.lsp_cache = (doc.version, found)
        return found

    def pushes(self, state: DocState) -> bool:
        """Diagnostics of this document go out as ``publishDiagnostics``: the client does not pull
        them, or it never opened the document (read from disk: nothing would ask)."""
        return state.from_disk or not self.client_pulls()

    def publish(self, state: DocState, first_pass: bool = False) -> None:
        """Publish the diagnostics of ``state``; ``first_pass``: only those its envelopes decide (a
        provisional document stays provisional; its complete list follows)."""
        doc = state.opened()
        state.last_publish = time.monotonic()
        state.published = (doc.version, state.version)
        if not self.pushes(state):
            return
        if first_pass:
            related_ranges: dict[tuple[int, int, int], types.Range] = {}
            found = [self.lsp_diagnostic(state, d, related_ranges) for d in first_pass_diagnostics(doc)]
            self._send(state, self._converter.unstructure(found))
        else:
            # the document is as the job publishing wants it: the short requests asked meanwhile
            # (a hover) are answered at the pauses of the long search for its problems
            with pausing():
                made = self.lsp_diagnostics(state)
            self._send(state, made)

    def _send(self, state: DocState, diagnostics: list[Any]) -> None:
        params: dict[str, Any] = {"uri": state.uri, "diagnostics": diagnostics}
        if state.version is not None:
            params["version"] = state.version
        self.server.connection.notify(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params, displayed=True)

    def schedule_publish(self, state: DocState) -> None:
        """Publish at once if the last publication is older than the debounce interval, else once
        at the end of it (every change in between is folded into that one publication)."""
        if not self.pushes(state) or state.publish_pending:
            return
        wait = state.last_publish + self.debounce - time.monotonic()
        if wait <= 0:
            self.publish(state)
            return
        state.publish_pending = True

        def publish_job(_token: CancelToken) -> None:
            state.publish_pending = False
            if (
                not state.closed
                and state.doc is not None
                and state.published != (state.doc.version, state.version)
            ):
                self.publish(state)

        self.server.loop_call(
            lambda: asyncio.get_running_loop().call_later(
                wait, lambda: state.queue.submit(publish_job, interruptible=False)
            )
        )

    def pull(self, state: DocState, params: types.DocumentDiagnosticParams) -> Any:
        doc = state.opened()
        result_id = f"{state.opening}:{doc.version}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return {"kind": "full", "resultId": result_id, "items": self.lsp_diagnostics(state)}

    # ------------------------------------------------------------------ requests

    def hover(self, state: DocState, params: types.HoverParams) -> types.Hover | None:
        line, offset = self.offset(state, params.position)
        found = hover_markdown(state.opened(), line, offset)
        if found is None:
            return None
        text, span = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=as_displayed(text)),
            range=self.range(state, line, *span) if span is not None else None,
        )

    def hover_exact_now(self, state: DocState, params: types.HoverParams) -> bool:
        """At a pause of the first full read of a big document's lines (see :meth:`_opened`):
        the hover's answer is already the one it gets once every line is read (its line is read
        in full, and it reads no other line's facts but the tree's). Not in a document with lone
        CRs, whose columns are placed again once the lines are read (invalid UTF-8 replaced)."""
        doc = state.doc
        if doc is None or state.closed or state.failure is not None or state.lone_cr:
            return False
        line, offset = self.offset(state, params.position)
        return doc.read_in_full(line) and reads_its_line_only(doc, line, offset)

    def location(self, state: DocState, target: navigation.Target) -> types.Location:
        return types.Location(state.uri, self.range(state, target.line, target.start, target.end))

    def definition(self, state: DocState, params: types.DefinitionParams) -> list[types.Location]:
        line, offset = self.offset(state, params.position)
        return [self.location(state, t) for t in navigation.definition(state.opened(), line, offset)]

    def references(self, state: DocState, params: types.ReferenceParams) -> list[types.Location]:
        line, offset = self.offset(state, params.position)
        found = navigation.references(state.opened(), line, offset, params.context.include_declaration)
        return [self.location(state, t) for t in found]

    def document_highlights(
        self, state: DocState, params: types.DocumentHighlightParams
    ) -> list[types.DocumentHighlight]:
        """On an id: the entry's (or tool call's) own id as written, the ids naming it as read."""
        line, offset = self.offset(state, params.position)
        return [
            types.DocumentHighlight(
                self.range(state, h.target.line, h.target.start, h.target.end),
                kind=types.DocumentHighlightKind.Write
                if h.kind == DECLARATION
                else types.DocumentHighlightKind.Read,
            )
            for h in highlights(state.opened(), line, offset)
        ]

    def implementation(self, state: DocState, params: types.ImplementationParams) -> list[types.Location]:
        """Go to implementations, shown as go to children: the entries that continue from the entry on
        the cursor's line."""
        line, _offset = self.offset(state, params.position)
        return [self.location(state, t) for t in navigation.children_targets(state.opened(), line)]

    def completion(self, state: DocState, params: types.CompletionParams) -> types.CompletionList | None:
        """Ids inside a string naming an entry or a tool call, entry types inside ``type``: each
        item replaces the string's content."""
        line, offset = self.offset(state, params.position)
        found = completion_mod.completions(state.opened(), line, offset)
        if found is None:
            return None
        replaced = self.range(state, line, found.start, found.end)
        kind = (
            types.CompletionItemKind.Reference
            if found.names in (completion_mod.ENTRY_ID, completion_mod.TOOL_CALL_ID)
            else types.CompletionItemKind.EnumMember
        )
        width = len(str(len(found.candidates)))
        items = [
            types.CompletionItem(
                label=shown_line(c.label),
                kind=kind,
                detail=shown_line(c.detail),
                sort_text=str(rank).zfill(width),  # the analysis's order: nearest entries first
                filter_text=c.written,  # what the user types: the id as the document writes it
                text_edit=types.TextEdit(replaced, c.new_text),
            )
            for rank, c in enumerate(found.candidates)
        ]
        return types.CompletionList(is_incomplete=found.incomplete, items=items)

    def document_symbols(self, state: DocState, _params: Any) -> msgspec.Raw:
        """The outline as the JSON it is sent as, kept until the text or the leaf changes: editors
        ask again without a change (an outline view shown again, a symbol picker), and for a big
        session the answer is megabytes. Made as JSON values, not lsprotocol objects unstructured
        after: that would hold the outline three times over."""
        doc = state.opened()
        leaf = doc.leaf()
        kept = state.outline
        if kept is not None and kept.doc() is doc and kept.version == doc.version and kept.leaf is leaf:
            return kept.answer
        # each symbol's line as (its start, its end, its id's span), placed while the analysis
        # holds the line's bytes, which a line of a file would read again
        places: dict[int, tuple[JsonPosition, JsonPosition, JsonRange]] = {}

        def position(line: int, offset: int, raw: bytes) -> JsonPosition:
            lsp_line, character = self.place(state, line, offset, raw)
            return {"line": lsp_line, "character": character}

        def place(sym: Symbol, raw: bytes) -> None:
            if len(places) % CHECK_EVERY == 0:
                self.still_current(state)
            line = sym.line
            start, end = sym.selection
            if not state.lone_cr and raw.isascii() and not raw.endswith(b"\r"):
                # a byte is a column in every encoding, the line is one LSP line and no offset
                # stands on a CR: what self.place finds, without four conversions a symbol
                places[line] = (
                    {"line": line, "character": 0},
                    {"line": line, "character": sym.end},
                    {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
                )
                return
            places[line] = (
                position(line, 0, raw),
                position(line, sym.end, raw),
                {"start": position(line, start, raw), "end": position(line, end, raw)},
            )

        def convert(sym: Symbol) -> dict[str, Any]:
            first, last = sym.lines  # (each a symbol's line: placed too)
            made: dict[str, Any] = {
                "name": shown_line(sym.name or "(entry)"),
                "kind": int(_SYMBOL_KINDS.get(sym.kind, types.SymbolKind.Object)),
                "range": {"start": places[first][0], "end": places[last][1]},
                "selectionRange": places[sym.line][2],
                "detail": shown_line(sym.detail) if sym.detail else sym.detail,
            }
            if sym.children:
                made["children"] = [convert(c) for c in sym.children]
            return made

        outline = [convert(s) for s in document_symbols(doc, place)]
        places.clear()
        answer = msgspec.Raw(encode_value(outline, displayed=True))
        state.outline = KeptOutline(weakref.ref(doc), doc.version, leaf, answer)
        return answer

    def folding(self, state: DocState, _params: Any) -> list[types.FoldingRange]:
        out = []
        for n, (a, b) in enumerate(folding_ranges(state.opened())):
            if n % CHECK_EVERY == 0:
                self.still_current(state)
            start = self.position(state, a, 0).line
            end = self.position(state, b, len(state.opened().lines[b].raw)).line
            out.append(types.FoldingRange(start, end, kind=types.FoldingRangeKind.Region))
        return out

    def inlay_hints(self, state: DocState, params: types.InlayHintParams) -> list[types.InlayHint]:
        asked = _start_first(params.range)
        first = self.line_of(state, asked.start.line)
        last = self.line_of(state, asked.end.line)
        out = []
        for n, h in enumerate(
            hints_mod.inlay_hints(state.opened(), first, last, lambda: self.still_current(state))
        ):
            if n % CHECK_EVERY == 0:
                self.still_current(state)
            out.append(
                types.InlayHint(
                    self.position(state, h.line, h.offset),
                    shown_line(h.label),
                    padding_left=True,
                    tooltip=shown_line(h.tooltip),
                )
            )
        return out

    def code_lenses(self, state: DocState, _params: Any) -> list[types.CodeLens]:
        return [
            types.CodeLens(
                self.range(state, lens.line, 0, 0), command=types.Command(shown_line(lens.title), "")
            )
            for lens in hints_mod.code_lenses(state.opened(), lambda: self.still_current(state))
        ]

    def selection_ranges(
        self, state: DocState, params: types.SelectionRangeParams
    ) -> list[types.SelectionRange]:
        out = []
        for pos in params.positions:
            line, offset = self.offset(state, pos)
            spans = selection_spans(state.opened(), line, offset) or [(offset, offset)]
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
        except AttributeError:
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

    def code_actions(self, state: DocState, params: types.CodeActionParams) -> list[types.CodeAction]:
        doc = state.opened()
        only = params.context.only
        out = []
        if only is not None and _asks_for(only, FIX_ALL):
            automatic = params.context.trigger_kind == types.CodeActionTriggerKind.Automatic
            fix_all = self._fix_all_action(state, on_disk=not automatic)
            if fix_all is not None:
                out.append(fix_all)
        if only is not None and not _asks_for(only, types.CodeActionKind.QuickFix):
            return out
        selection = _start_first(params.range)
        first = self.line_of(state, selection.start.line)
        last = max(first, self.line_of(state, _last_line_selected(selection)))
        resolve = self._resolve_support()
        # (its lines' only: asked at a pause of the search for the document's, it would make that twice)
        diags = diagnostics_of_lines(doc, first, last)
        for repair in repairs.repairs(doc, first, last, state.path, self.workspace_cwd()):
            if repair.image is not None and not self._image_movable(state, repair):
                continue
            action = types.CodeAction(
                title=shown_line(repair.title),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[
                    self.lsp_diagnostic(state, d)
                    for d in diags
                    if d.code == repair.code and d.line == repair.line
                ],
                is_preferred=repair.preferred,
            )
            if resolve:  # the edit (or the command) is computed when the user picks the action
                action.data = {"uri": state.uri, "version": doc.version, "key": list(repair.key)}
            else:
                self._complete(state, action, repair)
            out.append(action)
        return out

    @staticmethod
    def _image_movable(state: DocState, repair: repairs.Repair) -> bool:
        """Whether moving the image out of the file can succeed: the session has a file to write
        it next to, and its data is one strict base64 string (what :meth:`extract_image` checks
        again when it runs: the text may change meanwhile). Decided once for each text of the
        image's line."""
        if state.path is None or repair.image is None:
            return False
        lines = state.opened().lines
        info = lines[repair.line]
        known = state.image_verdicts.get(repair.key)
        if known is not None and known[0] is info:
            return known[1]
        verdict = repair.image() is not None
        # (the verdicts of lines edited or removed since go: they would keep old lines alive)
        kept = {key: v for key, v in state.image_verdicts.items() if _in_document(lines, v[0])}
        kept[repair.key] = (info, verdict)
        state.image_verdicts = kept
        return verdict

    def _complete(self, state: DocState, action: types.CodeAction, repair: repairs.Repair) -> None:
        """What picking a repair does: a text edit, or a command for what a text edit cannot do."""
        if repair.image is not None:
            action.command = self._image_command(state, repair)
        elif repair.on_disk:
            action.command = self._file_command(state, repair.title, list(repair.key))
        else:
            action.edit = self.workspace_edit(state, repair.edits())

    @staticmethod
    def _file_command(state: DocState, title: str, key: list[Any]) -> types.Command:
        return types.Command(
            shown_line(title), REPAIR_FILE, arguments=[state.uri, state.opened().version, key]
        )

    def _fix_all_action(self, state: DocState, on_disk: bool = True) -> types.CodeAction | None:
        """Every repair that loses nothing (``pi-session repair``'s default), as one action: what
        "Fix All" and ``"editor.codeActionsOnSave": {"source.fixAll": ...}`` run. Only offered when
        the client asks for source actions (planning reads the whole document).

        When the file on disk needs a repair the text cannot hold (a byte order mark the editor
        hides), an explicit Fix All (``on_disk``) repairs the file itself, all of it, as ``pi-session
        repair --in-place`` does, and the editor reloads it; run automatically (on save: the editor
        writes its text right after) it makes the text's repairs only."""
        plan = autofix.plan_repairs(state.opened(), autofix.SAFE_CODES, state.path, self.workspace_cwd())
        to_file = on_disk and bool(plan.on_disk)
        count = len(plan.applied) + (len(plan.on_disk) if to_file else 0)
        if not count:
            return None
        where = ", in the file on disk" if to_file else ""
        action = types.CodeAction(
            title=f"Fix all problems pi-session can repair without loss ({count} repair{'s' if count > 1 else ''}{where})",
            kind=FIX_ALL,
        )
        if self._resolve_support():
            action.data = {
                "uri": state.uri,
                "version": state.opened().version,
                "key": [FIX_ALL],
                "onDisk": to_file,
            }
        elif to_file:
            action.command = self._file_command(state, action.title, [FIX_ALL])
        else:
            action.edit = self.workspace_edit(state, _plan_edits(plan))
        return action

    def _find_repair(self, state: DocState, version: Any, key: list[Any]) -> repairs.Repair | None:
        doc = state.opened()
        if doc.version != version or not key:
            return None
        line = _repair_line(key)
        first, last = (0, doc.line_count - 1) if line is None else (line, line)
        for repair in repairs.repairs(doc, first, last, state.path, self.workspace_cwd()):
            if list(repair.key) == key:
                return repair
        return None

    def resolve_code_action(self, state: DocState, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        if data.get("key") == [FIX_ALL]:
            if state.opened().version != data.get("version"):
                return action
            if data.get("onDisk") is True:
                action.command = self._file_command(state, action.title, [FIX_ALL])
            else:
                plan = autofix.plan_repairs(
                    state.opened(), autofix.SAFE_CODES, state.path, self.workspace_cwd()
                )
                action.edit = self.workspace_edit(state, _plan_edits(plan))
            return action
        repair = self._find_repair(state, data.get("version"), data.get("key") or [])
        if repair is not None:
            self._complete(state, action, repair)
        return action

    @staticmethod
    def _image_command(state: DocState, repair: repairs.Repair) -> types.Command:
        doc = state.opened()
        return types.Command(
            shown_line(repair.title), EXTRACT_IMAGE, arguments=[state.uri, doc.version, list(repair.key)]
        )

    def repair_file(self, state: DocState, version: Any, key: list[Any]) -> Any:
        """On the worker: make a repair (``key``: a repair's, or ``[FIX_ALL]`` for every repair
        that loses nothing) to the file on disk under its lock, as ``pi-session repair --in-place``
        does, if the editor's text is what the file holds (without the byte order mark the editor
        hides). The editor then reloads the file; its problems are published again."""
        doc = state.opened()
        changed = "the document changed; ask for the code action again"
        if state.path is None or doc.version != version:
            return self._not_applied(changed)
        if key == [FIX_ALL]:
            chosen = autofix.SAFE_CODES
        else:
            repair = self._find_repair(state, version, key)
            if repair is None or not repair.on_disk:
                return self._not_applied(changed)
            chosen = frozenset({repair.code})
        try:
            done = autofix.repair_file(state.path, chosen, doc.profile, text=doc.data())
        except StaleFileError as error:
            return self._not_applied(str(error))
        except OSError as error:
            return self._not_applied(f"{state.path}: {error.strerror or error}")
        self._file_changed(state)
        return {"applied": True, "file": state.path, "repairs": done.repairs, "kept": done.kept}

    def _not_applied(self, reason: str) -> dict[str, Any]:
        """A repair command that did nothing: the reply says why, and so does the editor (a client
        does not show what a command answers)."""
        self.server.notify(
            types.WINDOW_SHOW_MESSAGE,
            {
                "type": types.MessageType.Warning.value,
                "message": shown_line(f"pi-session: nothing repaired: {reason}"),
            },
        )
        return {"applied": False, "reason": reason}

    def extract_image(self, state: DocState, version: Any, key: list[Any]) -> Any:
        """On the worker: write the image next to the session; the edit that replaces the block
        (or why nothing was done)."""
        if state.path is None:
            return self._not_applied("the document has no file to write the image next to: save it first")
        repair = self._find_repair(state, version, key)
        if repair is None or repair.image is None:
            return self._not_applied("the document changed; ask for the code action again")
        plan = repair.image()
        if plan is None:  # (not one strict base64 string: nothing is taken out that a file would not hold)
            return self._not_applied("the image data is not valid base64: it stays in the session")
        try:
            target = _write_new_file(os.path.join(os.path.dirname(state.path), plan.file_name), plan.data)
        except OSError as error:
            where = error.filename if isinstance(error.filename, str) else plan.file_name
            return self._not_applied(f"the image could not be written to {where}: {error.strerror or error}")
        edit = plan.edit
        if os.path.basename(target) != plan.file_name:
            edit = repairs.TextEdit(
                edit.start_line,
                edit.start,
                edit.end_line,
                edit.end,
                edit.new_text.replace(plan.file_name, os.path.basename(target)),
            )
        return types.ApplyWorkspaceEditParams(
            self.workspace_edit(state, [edit]), label=shown_line(repair.title)
        ), target


# ---------------------------------------------------------------------- helpers


class _OpenedDocument(msgspec.Struct):
    uri: str
    languageId: str  # the LSP field name
    version: int
    text: msgspec.Raw


class _OpenParams(msgspec.Struct):
    textDocument: _OpenedDocument  # the LSP field name


class _OpenNotification(msgspec.Struct):
    jsonrpc: str
    method: str
    params: _OpenParams


_decode_open = msgspec.json.Decoder(_OpenNotification).decode


def _editor_line_end(doc: SessionDocument, line: int, raw: bytes) -> int:
    return editor_line_end(raw, last=line + 1 >= doc.line_count)


def _token_size(token: msgspec.Raw) -> int:
    """What a ``didOpen`` taken raw (:meth:`LanguageFeatures.did_open_raw`) is judged big by
    (:data:`QUICK_OPEN_CHARS`): its text's JSON string token's bytes, quotes and escapes included."""
    return len(memoryview(token))


def publishes_in_two_steps(did_open: bytes) -> bool:
    """Whether the server, with its default :data:`QUICK_OPEN_CHARS`, publishes the diagnostics of
    the session document the ``didOpen`` message ``did_open`` (its body, as sent) opens in two
    steps (the envelope problems, then all), as it decides when it takes the message raw: on the
    size of the text's JSON token, not of the text (a text of fewer characters than the bound, its
    escapes counted, is published twice). For a client timing the publications (bench/)."""
    return _token_size(_decode_open(did_open).params.textDocument.text) >= QUICK_OPEN_CHARS


#: a UTF-16 surrogate's bytes as "surrogatepass" writes them (never in valid UTF-8)
_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")


def _holds_surrogate(data: bytes, end: int) -> bool:
    """``data[:end]`` holds a surrogate's bytes (looked for from the first byte they start with,
    found at memory speed: most texts have none)."""
    at = data.find(b"\xed", 0, end)
    return at >= 0 and _SURROGATE.search(data, at, end) is not None


def _keep_lone_crs(state: DocState, lone_cr: LoneCarriageReturns) -> None:
    """The document's lone CRs are kept in ``lone_cr`` from now on: the lines its texts name
    ("line 12" in a hover, a message, a title) are numbered by them, as the client numbers them."""
    state.lone_cr = lone_cr
    if state.doc is not None:
        state.doc.line_number = lone_cr.line_number


def _fill_caches(doc: SessionDocument) -> None:
    """Depths and the leaf path, so that hovers and inlay hints then cost O(1)."""
    tree = doc.tree
    for e in doc.entries():
        tree.depth(e)
    doc.leaf_path()


def _in_document(lines: Sequence[LineInfo], info: LineInfo) -> bool:
    """``info`` is still one of ``lines`` (an edit gives the lines it changes new facts and
    renumbers the others)."""
    return info.line < len(lines) and lines[info.line] is info


def _disk_path(uri: str) -> str | None:
    """The file of a session the editor did not send that ``uri`` names, or None."""
    if not uri.startswith("file:") or not uri.endswith(".jsonl") or len(uri) > MAX_URI_CHARS:
        return None
    return _path_of(uri)


def _path_of(uri: str) -> str | None:
    try:
        return uri_to_path(uri)
    except PiRpcError:
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


def _file_start(path: str) -> bytes:
    """The first bytes of the file at ``path`` that tell its byte order mark (none for a file that
    cannot be read, or is not a regular file: a FIFO would wait for a writer)."""
    try:
        fd = open_regular(path)
    except (OSError, ValueError):
        return b""
    try:
        return os.pread(fd, BOM_PREFIX_SIZE, 0)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _free_name(path: str) -> str:
    """``path``, or ``<stem>-<n><ext>`` with the first n that names nothing (a dangling symlink
    takes its name too: creating the file would fail)."""
    if not os.path.lexists(path):
        return path
    stem, ext = os.path.splitext(path)
    n = 2
    while os.path.lexists(f"{stem}-{n}{ext}"):
        n += 1
    return f"{stem}-{n}{ext}"


_NAME_TRIES = 8  # names tried when another program takes each free name first


def _write_new_file(path: str, data: bytes) -> str:
    """Write ``data`` to a new file at ``path`` or the next free name (:func:`_free_name`; another
    program, such as a second editor window moving the same image, may take it between the look
    and the creation: the next one is tried); the path written. A write that fails removes the
    file it made. Raises OSError."""
    for _ in range(_NAME_TRIES):
        target = _free_name(path)
        try:
            f = open(target, "xb")  # noqa: SIM115 - closed below, removed if the write fails
        except FileExistsError:
            continue
        try:
            with f:
                f.write(data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target)
            raise
        return target
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)


# ---------------------------------------------------------------------- registration

_NOT_A_SESSION = {"applied": False, "reason": "not a session document"}


def register_language_features(server: PiSessionServer) -> LanguageFeatures:
    """Register the ``textDocument/*`` features for session files on ``server``."""
    lf = LanguageFeatures(server)
    connection = server.connection
    route = connection.lsp_route

    route(server, types.TEXT_DOCUMENT_DID_OPEN)(lf.did_open)
    route(server, types.TEXT_DOCUMENT_DID_CHANGE)(lf.did_change)
    route(server, types.TEXT_DOCUMENT_DID_CLOSE)(lf.did_close)
    route(server, types.TEXT_DOCUMENT_DID_SAVE)(lf.did_save)
    connection.raw_route(types.TEXT_DOCUMENT_DID_OPEN, lf.did_open_raw)

    def about_document(
        method: str,
        answer: Callable[[DocState, Any], Any],
        options: Any = None,
        otherwise: Any = None,
        whole_document: bool = False,
        content_modified: bool = True,
        urgent: bool | Callable[[Any], bool] = False,
        exact_early: Callable[[DocState, Any], bool] | None = None,
    ) -> None:
        """A request about one document: a job on the document's queue (``otherwise`` for a
        document that is not a session; ``whole_document``, ``content_modified``, ``urgent``,
        ``exact_early``: see :meth:`LanguageFeatures.ask`; ``urgent`` may be decided by the
        request's params)."""

        def handler(params: Any) -> Any:
            return lf.ask(
                params.text_document.uri,
                lambda state: answer(state, params),
                otherwise=otherwise,
                gone=otherwise,
                whole_document=whole_document,
                content_modified=content_modified,
                urgent=urgent(params) if callable(urgent) else urgent,
                exact_early=None if exact_early is None else lambda state: exact_early(state, params),
            )

        route(server, method, options)(handler)

    about_document(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        lf.pull,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
        otherwise={"kind": "full", "items": []},
        # about the whole document, but computed once a version: the short requests asked after it
        # go first; answered for its text, even when a change comes after it
        whole_document=True,
        content_modified=False,
    )
    # about a position, where the user waits: answered ahead of the whole-document answers asked before
    about_document(types.TEXT_DOCUMENT_HOVER, lf.hover, urgent=True, exact_early=lf.hover_exact_now)
    # asked again by the editor after each change, each about the whole document (Neovim's inlay
    # hints and folds are asked for every line)
    about_document(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, lf.document_symbols, whole_document=True)
    about_document(types.TEXT_DOCUMENT_DEFINITION, lf.definition, urgent=True)
    about_document(types.TEXT_DOCUMENT_REFERENCES, lf.references, urgent=True)
    about_document(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, lf.document_highlights, urgent=True)
    about_document(types.TEXT_DOCUMENT_IMPLEMENTATION, lf.implementation, urgent=True)
    about_document(
        types.TEXT_DOCUMENT_COMPLETION,
        lf.completion,
        # a string's opening quote: the editor closes it, the cursor is then inside it
        types.CompletionOptions(trigger_characters=['"'], resolve_provider=False),
        urgent=True,
    )
    about_document(types.TEXT_DOCUMENT_FOLDING_RANGE, lf.folding, whole_document=True)
    about_document(
        types.TEXT_DOCUMENT_INLAY_HINT,
        lf.inlay_hints,
        types.InlayHintOptions(resolve_provider=False),
        whole_document=True,
    )
    about_document(
        types.TEXT_DOCUMENT_CODE_LENS,
        lf.code_lenses,
        types.CodeLensOptions(resolve_provider=False),
        whole_document=True,
    )
    about_document(types.TEXT_DOCUMENT_SELECTION_RANGE, lf.selection_ranges, urgent=True)
    about_document(
        types.TEXT_DOCUMENT_CODE_ACTION,
        lf.code_actions,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
        ),
        urgent=_quick_fixes_only,  # (a "fix all", asked on save, waits its turn)
    )

    @route(server, types.CODE_ACTION_RESOLVE)
    def resolve_code_action(params: types.CodeAction) -> Any:
        data = params.data if isinstance(params.data, dict) else {}
        uri = data.get("uri")
        unresolved = lf.encoded(params)
        if not isinstance(uri, str):
            return unresolved
        key = data.get("key")
        return lf.ask(
            uri,
            lambda state: lf.resolve_code_action(state, params),
            otherwise=unresolved,
            gone=unresolved,
            # the quick fix picked, which the user waits for: made from its line
            urgent=isinstance(key, list) and _repair_line(key) is not None,
        )

    @connection.command(server, REPAIR_FILE)
    def repair_file(arguments: list[Any]) -> Any:
        uri, version, key = _command_arguments(REPAIR_FILE, arguments)
        return lf.ask(
            uri, lambda state: lf.repair_file(state, version, key), encode=False, otherwise=_NOT_A_SESSION
        )

    @connection.command(server, EXTRACT_IMAGE)
    def extract_image(arguments: list[Any]) -> Any:
        uri, version, key = _command_arguments(EXTRACT_IMAGE, arguments)
        extracted = lf.ask(
            uri, lambda state: lf.extract_image(state, version, key), encode=False, otherwise=_NOT_A_SESSION
        )
        return _apply_image_edit(server, extracted)

    return lf


async def _apply_image_edit(server: PiSessionServer, extracted: Any) -> Any:
    """Once the image is written (``extracted``: what :meth:`LanguageFeatures.ask` returned): ask
    the editor to replace the block with the reference to it."""
    if isinstance(extracted, Job):
        extracted = on_loop(extracted, asyncio.get_running_loop())
    done = await extracted if inspect.isawaitable(extracted) else extracted
    if not isinstance(done, tuple):
        return done
    edit, target = done
    try:
        result = await server.workspace_apply_edit_async(edit)
    except JsonRpcException as error:  # the editor refused the request or answered nonsense
        return {"applied": False, "file": target, "reason": error.message}
    return {"applied": bool(result.applied), "file": target}


def _command_arguments(command: str, arguments: list[Any]) -> tuple[str, int, list[Any]]:
    """``[uri, version, key]`` of a repair command; -32602 for anything else."""
    if (
        len(arguments) != 3
        or not isinstance(arguments[0], str)
        or not isinstance(arguments[1], int)
        or isinstance(arguments[1], bool)
        or not isinstance(arguments[2], list)
    ):
        raise JsonRpcException(
            code=INVALID_PARAMS,
            message=f"Invalid params: {command} takes [uri: string, version: integer, key: array]",
        )
    return arguments[0], arguments[1], arguments[2]
