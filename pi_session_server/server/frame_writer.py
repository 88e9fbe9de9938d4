"""The frames the server sends, written without the event loop ever waiting for the client.

A client reads its end of the pipe when it likes: a front end busy elsewhere, a script that sends
a batch of requests and reads the replies once it sent them all, a reply bigger than the pipe
holds. A write that waited for it on the loop's thread would stop the server (no request read, no
cancellation seen, no file followed, no other session served), and a client that pipelines would
wait for us to read its requests while we wait for it to read our replies, for ever. So the frames
wait in a queue in memory, and a thread of their own writes them: in order, each whole, the
loop's frames of one iteration together (one flush). The server goes on reading while the client
does not: what it was asked for waits in memory, said once in the log past
:data:`BACKLOG_WARNING_BYTES`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import BinaryIO

from pi_session_server.output import flush_fully, write_fully

logger = logging.getLogger(__name__)

#: seconds the end of the connection waits: for the requests sent before ``shutdown`` (or before
#: the end of the input) to be answered, then for the client to take any of the replies queued
DRAIN_SECONDS = 30.0
#: bytes queued for a client that does not read past which the log says so (once, until it caught up)
BACKLOG_WARNING_BYTES = 256 << 20
#: the most handed to one write, so that the drain at exit sees a slow client take a big reply
WRITE_SLICE = 1 << 20


class FrameWriter:
    """Writes whole frames to the client, safe from any thread. The loop's frames are gathered
    and queued at the end of its iteration, another thread's at once; the writer thread writes
    what is queued. A frame is written as its parts, never joined into one more copy of a big body.
    pygls writes through it too (it calls ``write`` and ``close``). Without a loop (a connection
    that serves no client), frames are written at once on the caller's thread."""

    def __init__(
        self,
        stream: BinaryIO,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        drain_seconds: float = DRAIN_SECONDS,
        backlog_warning: int = BACKLOG_WARNING_BYTES,
    ) -> None:
        self._stream = stream
        self._loop = loop
        self._loop_thread = threading.get_ident() if loop is not None else None
        self._gathered: list[bytes] = []  # the loop's frames of this iteration
        self._scheduled = False
        self._drain_seconds = drain_seconds
        self._backlog_warning = backlog_warning
        self._write_lock = threading.Lock()  # one write at a time (without a loop, any thread writes)
        self._changed = threading.Condition()  # guards what follows
        self._queue: list[bytes] = []  # parts of whole frames, in order
        self._queued = 0  # their bytes, and those of the parts being written
        self._writing = False
        self._progress_at = time.monotonic()  # when the client last took bytes (or a write began)
        self._broken = False
        self._finished = False
        self._abandoned = False  # finish() gave up on a client that took nothing
        self._warned = False
        self._thread: threading.Thread | None = None
        if loop is not None:
            self._thread = threading.Thread(target=self._write_queued, name="pi-stdout", daemon=True)
            self._thread.start()

    def write(self, data: bytes) -> None:
        """A frame, headers included (pygls' writer interface)."""
        self._write_parts([data])

    def write_frame(self, *body: bytes) -> None:
        """A frame whose body is the concatenation of ``body``. The parts are kept until the
        writer thread wrote them: a caller never changes a buffer it passed (a ``bytearray``)."""
        self._write_parts([b"Content-Length: %d\r\n\r\n" % sum(map(len, body)), *body])

    def _write_parts(self, parts: list[bytes]) -> None:
        if self._loop is not None and threading.get_ident() == self._loop_thread:
            self._gathered.extend(parts)
            if not self._scheduled:
                self._scheduled = True
                self._loop.call_soon(self.flush)
            return
        self._put(parts)

    def flush(self) -> None:
        """Queue the frames the loop gathered (on the loop's thread)."""
        self._scheduled = False
        if self._gathered:
            parts, self._gathered = self._gathered, []
            self._put(parts)

    def _put(self, parts: list[bytes]) -> None:
        if self._thread is None:
            self._write(parts)
            return
        with self._changed:
            if self._broken or self._finished:
                return
            self._queue.extend(parts)
            self._queued += sum(map(len, parts))
            if self._queued > self._backlog_warning and not self._warned:
                self._warned = True
                logger.warning(
                    "the client is not reading its replies: %d MiB wait to be written "
                    "(requests are still read and answered; the replies leave as the client reads)",
                    self._queued >> 20,
                )
            self._changed.notify_all()

    def _write_queued(self) -> None:
        """The writer thread: what is queued, in order, until the writer is finished and the queue
        written, or the client is gone."""
        while True:
            with self._changed:
                while not self._queue and not self._finished and not self._broken:
                    self._changed.wait()
                if not self._queue or self._broken:
                    return
                parts, self._queue = self._queue, []
                taken, self._writing = self._queued, True
                self._progress_at = time.monotonic()
            self._write(parts)
            with self._changed:
                self._writing = False
                self._queued = max(0, self._queued - taken)  # (0 once the client is gone)
                if not self._queued:
                    self._warned = False  # caught up: said again if it falls behind again
                self._changed.notify_all()

    def _write(self, parts: list[bytes]) -> None:
        with self._write_lock:
            if self._broken:
                return
            try:
                for part in parts:  # small parts fill the stream's buffer; big ones go straight out
                    if len(part) <= WRITE_SLICE:  # (a raw stdout takes what one write() takes)
                        write_fully(self._stream, part)
                    else:
                        whole = memoryview(part).cast("B")
                        for start in range(0, len(whole), WRITE_SLICE):
                            write_fully(self._stream, whole[start : start + WRITE_SLICE])
                            self._progress_at = time.monotonic()
                    self._progress_at = time.monotonic()
                flush_fully(self._stream)
                self._progress_at = time.monotonic()
            except (BrokenPipeError, ValueError, OSError):  # the client went away
                self._gone()

    def _gone(self) -> None:
        with self._changed:
            self._broken = True
            self._queue.clear()
            self._queued = 0
            self._changed.notify_all()
        logger.warning("the client closed its input: replies are dropped")

    def finish(self) -> bool:
        """No more frames (those written from now on are dropped): what is queued is written
        first, for as long as the client takes some of it within ``drain_seconds``. Whether all of
        it was written (or the client is gone: nothing is left to write)."""
        self.flush()
        if self._thread is None:
            return True
        started = time.monotonic()
        with self._changed:
            self._finished = True
            self._changed.notify_all()
            while (self._queue or self._writing) and not self._broken:
                if self._abandoned:  # (a write still waits for the client: it is not waited for again)
                    return False
                waited = time.monotonic() - max(started, self._progress_at)
                if waited >= self._drain_seconds:
                    logger.warning(
                        "the client took none of its replies for %g s: %d bytes of them are dropped",
                        self._drain_seconds,
                        self._queued,
                    )
                    self._abandoned = True
                    self._queue.clear()
                    return False
                self._changed.wait(self._drain_seconds - waited)
        return True

    def close(self) -> None:
        """Finish, then close the stream, unless a write is still waiting for the client (closing
        would wait for that write: the stream is left to the end of the process)."""
        if self.finish():
            with contextlib.suppress(Exception):
                self._stream.close()
