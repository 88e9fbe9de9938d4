"""Work that serves later requests or the next process, run once the server is quiet.

Keeping a tree's previews (preview_keeping) and writing an open's index (index_keeping) take a
while and nobody waits for them, so they never run in a request or on the event loop: each is a job
on a queue of the worker pool of its own that first waits until no request was in flight for
:data:`QUIET_SECONDS` on end, so it does not take the CPU from a reply a user waits for. (A request
leaves the in-flight set before its reply is written: a job that started at the first moment none
was in flight held the interpreter's lock while a big reply, a whole tree, went out a pipe's buffer
at a time; a client paging through a tree sends its next request within that time.) At shutdown
they go at once, and the process waits for them (at most :data:`FINISH_SECONDS`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .workers import SerialQueue, WorkerPool

#: seconds without a request in flight, on end, before such work starts
QUIET_SECONDS = 0.5
#: how often a waiting job looks whether a request is in flight
POLL_SECONDS = 0.05
#: the longest shutdown waits for the work
FINISH_SECONDS = 5.0


class QuietJobs:
    """A queue of the worker pool named ``name`` for such work; ``quiet_seconds()``: how long no
    request has been in flight (0 while one is)."""

    def __init__(self, pool: WorkerPool, name: str, quiet_seconds: Callable[[], float]) -> None:
        self.queue: SerialQueue = pool.queue(name)
        self._quiet_seconds = quiet_seconds
        self._hurry = threading.Event()

    @property
    def hurried(self) -> bool:
        """Whether shutdown asked for what waits to go now."""
        return self._hurry.is_set()

    def wait_for_quiet(self) -> None:
        """Until no request was in flight for :data:`QUIET_SECONDS`, or shutdown hurries. (Asked
        as a time, not sampled as a flag: requests shorter than a poll, or a poll late on a loaded
        machine, would go unseen.)"""
        while not self._hurry.wait(POLL_SECONDS):
            if self._quiet_seconds() >= QUIET_SECONDS:
                return

    def hurry(self) -> None:
        """At shutdown: what waits for quiet goes now."""
        self._hurry.set()

    def finish(self, timeout: float = FINISH_SECONDS) -> bool:
        """At shutdown: what waits goes now; wait for it (at most ``timeout`` seconds). Whether it
        is all done."""
        self.hurry()
        deadline = time.monotonic() + timeout
        while not self.queue.idle:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
