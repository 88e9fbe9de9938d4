"""Reading a file in chunks, the next chunk read on another thread while this one is parsed.

Opening a large session is the kernel's copy of the file into our buffers plus msgspec's pass over
every line. ``preadv`` releases the GIL, so a reader thread can copy chunk k+1 while the caller
decodes chunk k: on two cores the copy disappears from the wall time (about 40 ms of a 300 MB
open, 0.3 s of a 2 GB one). Small reads stay on the calling thread: a thread is not worth it
below a couple of chunks.

Buffers are recycled (the caller hands each one back with :meth:`ChunkReader.release`), so a
multi-GB file is read through a few fixed buffers and never through fresh memory.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator

THREAD_MIN_BYTES = 16 * 1024 * 1024  # below this, read on the calling thread
_BUFFERS = 3  # one being parsed, one being filled, one spare so neither side waits on the other


class ChunkReader:
    """Chunks of ``fd`` from ``start`` to ``end`` (or to EOF as it is when each read happens)."""

    def __init__(self, fd: int, start: int, end: int | None, chunk_size: int, total: int) -> None:
        self._fd = fd
        self._start = start
        self._end = end
        self._chunk_size = chunk_size
        self._threaded = (total - start) >= THREAD_MIN_BYTES
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._filled: queue.SimpleQueue[tuple[bytearray, int, BaseException | None]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __iter__(self) -> Iterator[tuple[bytearray, int]]:
        """Yield ``(buffer, length)``: the next ``length`` bytes of the file are ``buffer[:length]``.
        Each buffer must be handed back with :meth:`release` before the one after next is needed."""
        if not self._threaded:
            yield from self._read_here()
            return
        for _ in range(_BUFFERS):
            self._free.put(bytearray(self._chunk_size))
        self._thread = threading.Thread(target=self._read_ahead, name="pi-session-readahead", daemon=True)
        self._thread.start()
        try:
            while True:
                buf, length, error = self._filled.get()
                if error is not None:
                    raise error
                if length == 0:
                    return
                yield buf, length
        finally:
            self.close()

    def release(self, buf: bytearray) -> None:
        if self._threaded:
            self._free.put(buf)

    def close(self) -> None:
        """Stop the reader thread (also when the caller stops early or raises)."""
        thread = self._thread
        if thread is None:
            return
        self._thread = None
        self._stop.set()
        self._free.put(bytearray(0))  # wakes a reader waiting for a buffer
        thread.join()

    def _read_here(self) -> Iterator[tuple[bytearray, int]]:
        buf = bytearray(self._chunk_size)
        offset = self._start
        while True:
            length = self._read(buf, offset)
            if length == 0:
                return
            yield buf, length
            offset += length

    def _read_ahead(self) -> None:
        offset = self._start
        while True:
            buf = self._free.get()
            if self._stop.is_set():
                return
            try:
                length = self._read(buf, offset)
            except BaseException as err:  # handed to the caller, raised there
                self._filled.put((buf, 0, err))
                return
            self._filled.put((buf, length, None))
            if length == 0:
                return
            offset += length

    def _read(self, buf: bytearray, offset: int) -> int:
        want = len(buf)
        if self._end is not None:
            want = min(want, self._end - offset)
        if want <= 0:
            return 0
        with memoryview(buf) as view:
            return os.preadv(self._fd, [view[:want]], offset)
