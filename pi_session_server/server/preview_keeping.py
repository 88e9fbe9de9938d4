"""Keeping the tree's previews with a session file's index, off the path of every reply.

A tree view of a big session makes thousands of previews (each entry's body read and decoded);
kept with the file's index (session/preview_store.py), the next process that shows the same file
loads them instead. Writing them takes a while too, so it is done by a job of its own on the
worker pool, never in a request and never on the event loop:

* it is started once a request that made many previews is over (``workers.after_this_job``),
  one per session at a time;
* it waits until the server is quiet (see quiet_jobs), and goes at once at shutdown;
* what it keeps is taken from the session's cache on the session's own queue, between its requests
  (the cache is the session's alone); the file is held as it is then, and nothing is written if it
  changed before the write (``preview_store.hold``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pi_session_server.format.gcpause import gc_paused
from pi_session_server.session.preview_cache import PreviewCache

from .quiet_jobs import FINISH_SECONDS, QuietJobs
from .workers import SerialQueue, WorkerPool, after_this_job, current_queue

logger = logging.getLogger(__name__)

#: the longest a job waits for a session's queue to take what to keep (a job stuck there, on
#: another process's lock say, must not hold the other sessions' previews for good)
TAKE_SECONDS = 60.0


class PreviewKeeper:
    """Keeps the previews of the sessions' caches; ``quiet_seconds()``: how long no request has
    been in flight (0 while one is)."""

    def __init__(self, pool: WorkerPool, quiet_seconds: Callable[[], float]) -> None:
        self._jobs = QuietJobs(pool, "keeping previews", quiet_seconds)

    def later(self, cache: PreviewCache, entries: Callable[[], list[Any]]) -> None:
        """From a job on a session's queue whose request may have made previews: keep them once it
        is answered and the server is quiet (``entries``: the session's entries in file order)."""
        session_queue = current_queue()
        if session_queue is None or cache.keeping or not cache.has_new_previews():
            return
        cache.keeping = True

        def start() -> None:
            self._jobs.queue.submit(
                lambda _token: self._keep(cache, entries, session_queue), interruptible=False
            )

        if not after_this_job(start):
            start()

    def _keep(
        self, cache: PreviewCache, entries: Callable[[], list[Any]], session_queue: SerialQueue
    ) -> None:
        try:
            self._jobs.wait_for_quiet()
            keep = self._on_queue(session_queue, lambda: cache.keeper(entries()))
            if keep is not None:
                with gc_paused():  # many small objects, no cycles (see gcpause)
                    keep()
        except Exception:  # a best-effort cache: the previews are made again next time
            logger.exception("the previews could not be kept")
        finally:
            cache.keeping = False

    def _on_queue(self, queue: SerialQueue, work: Callable[[], Any]) -> Any:
        """``work()`` run on ``queue`` (after what is queued there), waited for; None if it took
        too long (:data:`TAKE_SECONDS`, :data:`FINISH_SECONDS` at shutdown)."""
        done = threading.Event()
        job = queue.submit(lambda _token: work(), interruptible=False)
        job.add_done_callback(lambda _job: done.set())
        started = time.monotonic()
        while not done.wait(0.05):
            waited = time.monotonic() - started
            if waited >= TAKE_SECONDS or (self._jobs.hurried and waited >= FINISH_SECONDS):
                job.cancel()  # not started yet: it never runs
                return None
        return job.result()

    def finish(self, timeout: float = FINISH_SECONDS) -> bool:
        """At shutdown: see QuietJobs.finish."""
        return self._jobs.finish(timeout)
