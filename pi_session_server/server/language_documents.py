"""The documents of the language server: their life, and the requests about them.

Every document has a serial queue (:mod:`workers`): its opening, every change, every request about
it and its closing are jobs on that queue, run in arrival order on a worker thread. The event loop
only routes; a 100 MB document being analysed delays nothing but the requests about it, and those
are answered against exactly the text that preceded them.

Documents are kept as :class:`~pi_session_server.analysis.SessionDocument` (lines split on "\\n"
only, edited incrementally), never as pygls ``TextDocument`` (which would split on U+2028 and
rebuild the whole text on every change).

A file read from disk (:mod:`.language_disk_reads`) that the editor then opens is the editor's
document only (the problems pushed from disk are taken back) until it closes it: then it is read
again (a read the editor's opening it again makes useless stops at its pauses). A document closed
keeps its analysis a few seconds for its reopening (:mod:`.language_reopen`).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from lsprotocol import types

from pi_session_server.analysis import jsonpath
from pi_session_server.analysis.byte_order_marks import BOM_PREFIX_SIZE
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lone_cr import LoneCarriageReturns
from pi_session_server.format.gcpause import gc_paused
from pi_session_server.regular_file import open_regular
from pi_session_server.render.editor_text import shown_line
from pi_session_server.session.profiles import profile_for

from .language_conversions import LspConversions
from .language_diagnostics import DocumentDiagnostics
from .language_disk_reads import DiskDocuments
from .language_document_state import DocState, still_current
from .language_open_text import OpenedText
from .language_reopen import ClosedDocument, ClosedDocuments
from .locations import MAX_URI_CHARS, FileKeys, file_keys, path_of_uri
from .pending_deletes import deleted_as
from .workers import (
    CancelToken,
    SerialQueue,
    answer_urgent_jobs,
    at_a_pause,
    log_failure,
    pausing,
    queued_together,
)

if TYPE_CHECKING:
    from .app import PiSessionServer

LANGUAGE_IDS = frozenset({"pi-session", "jsonl", "json"})
#: documents with more lines have their objects moved out of the garbage collector's sight
BIG_DOCUMENT_LINES = 20_000
#: documents opened with at least this many characters publish their diagnostics in two steps: the
#: envelope problems at once, then the complete list
QUICK_OPEN_CHARS = 2_000_000

#: (in a request's job) it is not answered at a pause of another one: nothing to hand back
_NO_PAUSE = object()


class LanguageDocuments:
    """The documents the editor opened and those read from disk (:attr:`disk`), by URI: their
    opening, changes and closing, and the queueing of the requests about them."""

    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self.docs: dict[str, DocState] = {}
        # the queue of each document's jobs, the same for every opening of one URI while one of
        # them has jobs to run: a close's last publication goes out before the next open's first
        self._queues: dict[str, SerialQueue] = {}
        self._queues_lock = threading.Lock()
        self.quick_open = QUICK_OPEN_CHARS
        self.closed_documents = ClosedDocuments()
        self.convert = LspConversions(server)
        self.diagnostics = DocumentDiagnostics(server, self.convert)
        self.disk = DiskDocuments(self)

    def stop(self) -> None:
        """The server shuts down (see :meth:`DiskDocuments.stop`)."""
        self.disk.stop()

    # ------------------------------------------------------------------ text synchronisation (on the loop)

    @staticmethod
    def accepts(uri: str, language_id: str | None) -> bool:
        return (language_id in LANGUAGE_IDS) or uri.endswith(".jsonl")

    def new_state(self, uri: str, *, from_disk: bool = False) -> DocState:
        previous = self.docs.get(uri)
        if previous is not None:
            self.drop(previous)
        path = path_of_uri(uri)
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
        state = self.new_state(uri)
        state.replaced_disk_reads = replaced
        state.version = version
        quick = size >= self.quick_open

        def open_job(_token: CancelToken) -> None:
            if state.path is not None:  # (the sessions held on the file, however spelled, find it)
                state.keys = file_keys(state.path)
            closed = self.closed_documents.take(uri)
            # One pause of the collector for the whole open: a pause that ended between the first
            # pass and the rest would have it walk every line's facts at once, before the first
            # diagnostics go out; a big document's are frozen before it ends (see opened).
            try:
                with gc_paused():
                    if closed is None or not self._reopened(state, closed, text.utf8()):
                        closed = None  # (freed before the new analysis is made)
                        self.opened(state, text.document(quick))
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
            state.queue.submit(lambda _token: self.file_changed(state), interruptible=False)

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        state = self.docs.get(params.text_document.uri)
        if state is not None and not state.from_disk:
            # (the whole-document answers asked before are for a text the editor no longer shows:
            # Neovim asks its folds and hints right before it reloads a file changed on disk)
            state.changes_received += 1
            del self.docs[state.uri]
            self.drop(state, publish_empty=True, keep=True)
            self._show_disk_reads_again(state)

    def _replace_disk_reads(self, uri: str) -> tuple[str, ...]:
        """On the loop, as the editor opens ``uri``: drop the documents read from disk for its
        file (under ``uri``, or another spelling of it), and take back the problems pushed for
        them, unless the opened document's own go out by push to the same URI (its first
        publication replaces them: it is made on the same queue, after the drop). Their URIs."""
        path = path_of_uri(uri)
        replaced = []
        for other in list(self.docs.values()):
            if other.from_disk and (other.uri == uri or (path is not None and other.path == path)):
                del self.docs[other.uri]
                self.drop(other, publish_empty=other.uri != uri or self.diagnostics.client_pulls())
                replaced.append(other.uri)
        return tuple(replaced)

    def _show_disk_reads_again(self, closed: DocState) -> None:
        """On the loop, as the editor closes a document that replaced reads from disk: read the
        file from disk again (on the same queue, after the closing's publication), so that its
        problems are shown as they were before the editor opened it, as the file now has them.
        Not while the file is open under another spelling, nor when it was opened again."""

        def read_again(uri: str, path: str) -> None:
            if uri not in self.docs:  # (not opened again while a pi/delete sent before answered)
                self.disk.read(uri, path, announce=False)

        for uri in closed.replaced_disk_reads:
            path = _disk_path(uri)
            if path is None or uri in self.docs or any(s.path == path for s in self.docs.values()):
                continue
            self.server.pending_deletes.ordered(
                [deleted_as(path, self.server.environment)], functools.partial(read_again, uri, path)
            )

    def drop(self, state: DocState, publish_empty: bool = False, keep: bool = False) -> None:
        """Forget a document once the jobs queued for it are done; ``publish_empty``: take back
        its pushed problems; ``keep``: keep its analysis a few seconds for its reopening
        (:mod:`.language_reopen`)."""

        def close(_token: CancelToken) -> None:
            state.closed = True
            jsonpath.forget_kept_facts()  # (a long line's bytes, kept for the hovers along it)
            if publish_empty and self.diagnostics.pushes(state):
                self.diagnostics.send(state, [])
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
        self.append(state, added)
        self.diagnostics.publish(state)
        _fill_caches(doc)
        return True

    def append(self, state: DocState, added: bytes) -> None:
        """Bytes appended to the end of the document: the edit there that adds them."""
        doc = state.opened()
        last = doc.line_count - 1
        end = len(doc.lines[last].raw)
        before = doc.line_count
        doc.apply_edit(last, end, last, end, added)
        if state.lone_cr_ends_line:
            state.lone_cr.edited(doc.lines, last, 1, 1 + doc.line_count - before)

    def opened(self, state: DocState, doc: SessionDocument) -> None:
        state.doc = doc
        _keep_lone_crs(state, LoneCarriageReturns())
        self._look_at_file(state)
        self._scan_lone_crs(state, doc)  # before any publication: the editor's lines are placed by it
        if doc.provisional:
            # the envelope problems at once; the complete list once the rest of each line is read
            self.diagnostics.publish(state, first_pass=True)
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
            self.diagnostics.publish(state)
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

    def file_changed(self, state: DocState) -> None:
        """On the worker: the file under an editor's document changed (saved, or repaired on disk)."""
        if state.closed or state.doc is None or not self._look_at_file(state):
            return
        if self.diagnostics.pushes(state):
            self.diagnostics.schedule_publish(state)
        else:  # the client pulls: tell it to ask again
            self.server.loop_call(self.diagnostics.refresh_pulled_diagnostics)

    def _apply_changes(self, state: DocState, changes: list[Any], version: int) -> None:
        if state.closed or state.doc is None:
            return
        doc = state.doc
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.convert.offset(state, change.range.start)
                end = self.convert.offset(state, change.range.end)
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
        self.diagnostics.schedule_publish(state)

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
        :func:`still_current`). Typing in a big document would otherwise queue one whole-document
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
            still_current(state)
            state.last_access = time.monotonic()
            # (at a pause of another job, the document stays as that job reads it: the poller
            # queues the refresh as a job of its own)
            if state.from_disk and not at_a_pause():
                self.disk.refresh(state)
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
            still_current(state)
            return self.convert.encoded(result) if encode and result is not None else result
        finally:
            state.answering_after = answering_after
            if paused_leaf is not _NO_PAUSE:
                doc.set_leaf(paused_leaf)

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
        next pause, :func:`still_current`); either sees every change sent before it.
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
                    state = self.disk.read(uri, disk_path, announce=state is None or not state.resting)
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


def _token_size(token: msgspec.Raw) -> int:
    """What a ``didOpen`` taken raw (:meth:`LanguageDocuments.did_open_raw`) is judged big by
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


def _disk_path(uri: str) -> str | None:
    """The file of a session the editor did not send that ``uri`` names, or None."""
    if not uri.startswith("file:") or not uri.endswith(".jsonl") or len(uri) > MAX_URI_CHARS:
        return None
    return path_of_uri(uri)


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
