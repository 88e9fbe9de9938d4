"""Session files the editor did not send, read from disk.

Files the editor does not send (VS Code skips files over 50 MB) are analysed from disk when a
request names them, followed on disk while they grow (the server's one file poller), their
diagnostics pushed, and the client is told (``pi/largeFile``). A path that is not a regular file
(a FIFO, a device) is refused with ``PathRefused`` (-32010) and never opened. A followed file
that is deleted, renamed away or replaced by such a path is gone: its diagnostics are taken back
(the editor, which never had the document, would show them for good), and the next request reads
the path afresh. One nobody asks about lets go of its analysis and stays followed: read again when
it changes, its problems stay true.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from typing import TYPE_CHECKING, Any

from pi_session_server.analysis import jsonpath
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.regular_file import NotRegularFile, open_regular_status

from .errors import PiRpcError
from .language_document_state import DocState
from .locations import require_regular_file
from .poller import signature_of
from .workers import Cancelled, CancelToken, answer_urgent_jobs, log_failure, pausing

if TYPE_CHECKING:
    from .language_documents import LanguageDocuments

LARGE_FILE = "pi/largeFile"
#: a file read from disk lets go of its analysis after this many seconds without a request about it
#: (it is still followed: read again when it changes)
DISK_FORGET = 900.0


class DiskDocuments:
    """The documents of :class:`~.language_documents.LanguageDocuments` read from disk: their
    reading, their following on disk, and letting go of the analysis of those nobody asks about."""

    def __init__(self, documents: LanguageDocuments) -> None:
        self.documents = documents
        self.server = documents.server
        self.disk_forget = DISK_FORGET
        self._forget_timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def stop(self) -> None:
        """The server shuts down: the timer letting go of idle documents' analysis is cancelled,
        and no request arms it again (the shutdown lets go of everything)."""
        self._stopped = True
        if self._forget_timer is not None:
            self._forget_timer.cancel()
            self._forget_timer = None

    def read(self, uri: str, path: str | None, announce: bool = True) -> DocState | None:
        """A new document for the file at ``path`` (``language_documents._disk_path(uri)``), read by
        a job; ``announce``: tell the client (``pi/largeFile``), which a read again was told already."""
        if path is None:
            return None
        state = self.documents.new_state(uri, from_disk=True)
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
                self.documents.diagnostics.send(state, [])
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
        self.documents.opened(state, doc)
        # the file as it was before the read: a change made since (while it was read, or once its
        # problems were published) is seen by the poller's next look
        signature = signature_of(st)

        def follow() -> None:  # (on the loop, where a drop unfollows: never followed once dropped)
            if self.documents.docs.get(state.uri) is state and not state.closed:
                self.server.poller.follow(state.uri, path, lambda: self._queue_refresh(state), signature)

        self.server.loop_call(follow)

    def _still_read(self, state: DocState) -> None:
        """On the worker, at the pauses of a read from disk: raise Cancelled once the document
        being read is no longer wanted (the editor opened the file meanwhile: Neovim closes and
        opens again a file pi appended to, and the read that its closing started is for nothing)."""
        if self.documents.docs.get(state.uri) is not state:
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
        if self.documents.docs.get(state.uri) is state:
            del self.documents.docs[state.uri]

    def _gone(self, state: DocState) -> None:
        """On the worker: the file of a document read from disk is no longer there (deleted,
        renamed away, or no longer a regular file). Its problems are taken back (nothing else
        would clear them: the editor never had the document) and the document is forgotten; a
        later request reads the path afresh, as pi would."""
        state.closed = True  # (first: a request the client makes on the empty list reads afresh)
        self.documents.diagnostics.send(state, [])

        def forget() -> None:
            if self.documents.docs.get(state.uri) is state:
                del self.documents.docs[state.uri]
                self.documents.drop(state)

        self.server.loop_call(forget)

    def _queue_refresh(self, state: DocState) -> None:
        """The poller saw the file change (on its thread)."""
        if state.resting:
            self.server.loop_call(lambda: self._wake(state))
            return
        if not state.refreshing and not state.closed:
            state.refreshing = True
            state.queue.submit(lambda _token: self.refresh(state), interruptible=False)

    def refresh(self, state: DocState) -> bool:
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
                    self.documents.append(state, added)
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
        self.documents.diagnostics.schedule_publish(state)
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
            return [s for s in self.documents.docs.values() if s.from_disk and not s.resting]

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
        if self.documents.docs.get(state.uri) is state and state.resting:
            del self.documents.docs[state.uri]
            self.documents.drop(state)

    def _wake(self, state: DocState) -> None:
        """On the loop: the file of a resting document changed: read it again (a file gone is
        found so by the read, which takes its problems back)."""
        if self.documents.docs.get(state.uri) is state and state.resting and state.path is not None:
            self.read(state.uri, state.path, announce=False)


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
