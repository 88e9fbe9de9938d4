"""Writing the index a session's open made (session/scan_index.py) after the open is answered.

The index of a file serves the next process that opens it: the one that scanned the file holds
what it found. Making the index (a column from every entry) and writing it is a good part of a
first open, which an editor waits for with its first tree window still to come. So the sidecar's
opens hand their writes over (``scan_index.index_writes_deferred``, taken from the file as it was
scanned), and a job of their own on the worker pool makes them, as the previews are kept (see
preview_keeping): once the server is quiet (see quiet_jobs), at once at shutdown, which waits
for them. A write that fails is no error: the file is scanned next time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pi_session_server.format.gcpause import gc_paused
from pi_session_server.session.scan_index import index_writes_deferred

from .quiet_jobs import FINISH_SECONDS, QuietJobs
from .workers import CancelToken, WorkerPool

logger = logging.getLogger(__name__)


class IndexKeeper:
    """Writes the indexes of the opens made in :meth:`after_reply`; ``quiet_seconds()``: how long no
    request has been in flight (0 while one is)."""

    def __init__(self, pool: WorkerPool, quiet_seconds: Callable[[], float]) -> None:
        self._jobs = QuietJobs(pool, "keeping indexes", quiet_seconds)

    @contextmanager
    def after_reply(self) -> Iterator[None]:
        """The indexes that opens on this thread make in the block are written later, even when
        the block fails (what was scanned is still the file's)."""
        with index_writes_deferred() as writes:
            try:
                yield
            finally:
                for write in writes:
                    self._jobs.queue.submit(self._writer(write), interruptible=False)

    def _writer(self, write: Callable[[], bool]) -> Callable[[CancelToken], None]:
        return lambda _token: self._write(write)

    def _write(self, write: Callable[[], bool]) -> None:
        try:
            self._jobs.wait_for_quiet()
            with gc_paused():  # many small objects, no cycles (see gcpause)
                write()
        except Exception:  # a best-effort cache: the file is scanned again next time
            logger.exception("an index could not be written")

    def hurry(self) -> None:
        """At shutdown: what waits for quiet goes now."""
        self._jobs.hurry()

    def finish(self, timeout: float = FINISH_SECONDS) -> bool:
        """At shutdown: see QuietJobs.finish."""
        return self._jobs.finish(timeout)
