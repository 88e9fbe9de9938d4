"""Where the server's work runs: serial queues (one per session, one per document) on a pool of
worker threads, so that the event loop only parses, routes and answers.

A :class:`SerialQueue` runs its jobs one at a time in submission order; different queues run in
parallel on the :class:`WorkerPool`'s threads. A job stuck on one queue (a lock another process
holds, a file system that does not answer) holds one thread and delays only the jobs behind it on
the same queue. The pool is bounded (:data:`MAX_THREADS`): past that many queues stuck at once,
the others wait for a thread. Threads are daemons, so a job stuck for good never keeps the process
from exiting, and a thread idle for :data:`IDLE_EXIT` seconds ends.

A :class:`Job` can be cancelled: one still queued never runs; a running *interruptible* job (a read)
is answered as cancelled at once and its :class:`CancelToken` is set, which long loops poll
(:meth:`CancelToken.check`) to stop early; a running job that is not interruptible (a write) is
never cancelled halfway: it finishes and its result stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: the most worker threads (the most queues that can be stuck at once before others wait)
MAX_THREADS = 32
#: seconds a worker thread waits for work before it ends
IDLE_EXIT = 30.0

_PENDING, _RUNNING, _DONE, _CANCELLED = range(4)
# .job, .queue: the job this thread runs and its queue (see after_this_job); .pausing: a job that
# is not deferrable but may pause now (see pausing); .paused: the job whose pause runs this one;
# .together: the jobs this thread submits within queued_together, with their queues
_running = threading.local()


class Cancelled(Exception):
    """Raised by :meth:`CancelToken.check` in a job whose request was cancelled."""


class CancelToken:
    """Set when a job's request is cancelled; long jobs call :meth:`check` now and then."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled


class Job(Generic[T]):
    """One call of ``fn(token)`` on a queue: a small future that completes on the worker thread.

    Callbacks (:meth:`add_done_callback`) run in the thread that completes or cancels the job, or
    at once if it is already over.
    """

    __slots__ = (
        "_callbacks",
        "_error",
        "_fn",
        "_lock",
        "_state",
        "_value",
        "deferrable",
        "interruptible",
        "ready",
        "token",
        "urgent",
    )

    def __init__(
        self,
        fn: Callable[[CancelToken], T],
        interruptible: bool,
        deferrable: bool = False,
        urgent: bool = False,
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self._fn = fn
        self.interruptible = interruptible
        self.deferrable = deferrable  # see SerialQueue.submit
        self.urgent = urgent
        self.ready = ready  # see answer_urgent_jobs
        self.token = CancelToken()
        self._lock = threading.Lock()
        self._state = _PENDING
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Job[T]], Any]] = []

    # -- the outcome ----------------------------------------------------------------------

    def done(self) -> bool:
        return self._state in (_DONE, _CANCELLED)

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def result(self) -> T:
        """The value, or the exception the job raised (:class:`Cancelled` if it was cancelled)."""
        if self._state == _CANCELLED:
            raise Cancelled
        if self._state != _DONE:
            raise RuntimeError("the job is not done")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[no-any-return]

    def add_done_callback(self, callback: Callable[[Job[T]], Any]) -> None:
        with self._lock:
            if self._state not in (_DONE, _CANCELLED):
                self._callbacks.append(callback)
                return
        callback(self)

    def cancel(self) -> bool:
        """Cancel the job if it has not started, or if it runs and may be interrupted."""
        with self._lock:
            if self._state == _CANCELLED:
                return True
            if self._state == _DONE or (self._state == _RUNNING and not self.interruptible):
                return False
            self._state = _CANCELLED
            self.token.cancelled = True
        self._finish()
        return True

    # -- on the worker --------------------------------------------------------------------

    def run(self) -> None:
        with self._lock:
            if self._state != _PENDING:
                return
            self._state = _RUNNING
        value: Any = None
        error: BaseException | None = None
        _running.job = self
        try:
            value = self._fn(self.token)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
            error = exc
        finally:
            _running.job = None
        with self._lock:
            if self._state == _CANCELLED:  # answered already; the outcome goes nowhere
                return
            self._state = _DONE
            self._value, self._error = value, error
        self._finish()

    def _finish(self) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # a failing callback must not take the worker down
                logger.exception("a job's callback failed")


def log_failure(job: Job[Any], what: str) -> Job[Any]:
    """Have the failure of a job nobody waits for written to the log (``what`` says which job):
    its exception would otherwise be kept for no one, and the work it stopped would go silently
    undone."""

    def report(finished: Job[Any]) -> None:
        try:
            finished.result()
        except Cancelled:
            pass
        except BaseException:
            logger.exception("%s failed", what)

    job.add_done_callback(report)
    return job


def after_this_job(callback: Callable[[], Any]) -> bool:
    """Call ``callback()`` once the job running on this thread is over, after the callbacks given to
    it before: work that must not delay its reply. (The connection gives the callback that writes
    the reply once the handler returns the job, which may be after the job ran: ``callback`` must
    not count on coming after the reply, only on the job being over.) False (nothing done) on a
    thread that runs no job."""
    job = getattr(_running, "job", None)
    if job is None:
        return False
    job.add_done_callback(lambda _job: callback())
    return True


def current_queue() -> SerialQueue | None:
    """The queue of the job running on this thread (None on a thread that runs no job)."""
    return getattr(_running, "queue", None)


def answer_urgent_jobs(half_done: bool = False) -> None:
    """Called by a running deferrable job at its pauses (or by another within :func:`pausing`):
    run the urgent jobs at the head of its queue now, on this thread (they were queued after it and
    nothing else was, so they see what they would have seen after it). Nothing on a thread that
    runs no such job.

    ``half_done``: the pause of work that leaves what the urgent jobs read half changed (the lines
    of a document read in full one after another): only the urgent jobs whose ``ready()`` says
    their answer is already the one the work's end would give are run, in order, up to the first
    that is not (it and those behind it wait for the next pause)."""
    queue = current_queue()
    if queue is not None:
        queue.run_urgent(half_done)


@contextlib.contextmanager
def pausing() -> Iterator[None]:
    """Within: the running job, though not deferrable (it changes what the urgent jobs read, as an
    opening or an edit does), leaves what they read whole at its pauses: it has changed it and only
    reads from now on (it publishes the problems found), or changes it all at once at its end (a
    file read again), or says at each pause that it is half done (``answer_urgent_jobs(True)``):
    the urgent jobs queued behind it are answered at its pauses (:func:`answer_urgent_jobs`) as a
    deferrable job's are. Nothing for an urgent job, which never pauses for another."""
    job = getattr(_running, "job", None)
    if job is None or job.urgent:
        yield
        return
    before = getattr(_running, "pausing", None)
    _running.pausing = job
    try:
        yield
    finally:
        _running.pausing = before


@contextlib.contextmanager
def queued_together() -> Iterator[None]:
    """Within: the jobs this thread submits are queued at the end, each queue's all at once, in
    the order submitted, so that none starts before the last is queued. A job that makes what
    the next one asks for (the read from disk of a file a hover names) would otherwise run while
    the thread is still to queue the next: it might pass the pause where it answers the urgent
    jobs behind it before that one is there. Within another: the outer one queues them."""
    if getattr(_running, "together", None) is not None:
        yield
        return
    together: list[tuple[SerialQueue, Job[Any]]] = []
    _running.together = together
    try:
        yield
    finally:
        _running.together = None
        by_queue: dict[SerialQueue, list[Job[Any]]] = {}
        for queue, job in together:
            by_queue.setdefault(queue, []).append(job)
        for queue, jobs in by_queue.items():
            queue._enqueue(jobs)


def at_a_pause() -> bool:
    """The job running on this thread is answered at a pause of another one (which stays in the
    middle of its work: what it reads must not change under it)."""
    return getattr(_running, "paused", None) is not None


def on_loop(job: Job[T], loop: asyncio.AbstractEventLoop) -> asyncio.Future[T]:
    """An asyncio future of ``job`` for a coroutine to await; cancelling it cancels the job."""
    future: asyncio.Future[T] = loop.create_future()

    def copy(finished: Job[T]) -> None:
        if future.done():
            return
        if finished.cancelled():
            future.cancel()
            return
        try:
            future.set_result(finished.result())
        except BaseException as error:  # noqa: BLE001 - the job's failure, handed on to the awaiting future
            future.set_exception(error)

    def settle(finished: Job[T]) -> None:
        loop.call_soon_threadsafe(copy, finished)

    def cancel_job(done: asyncio.Future[T]) -> None:
        if done.cancelled():
            job.cancel()

    job.add_done_callback(settle)
    future.add_done_callback(cancel_job)
    return future


def _ready_now(job: Job[Any], outer: Job[Any]) -> bool:
    """``job`` (urgent) may be answered at this pause of ``outer``'s work half done: its ``ready()``
    says so (called as at a pause: :func:`at_a_pause`). A failing ``ready`` is a no: the job waits
    for the work's end, where it is answered as usual."""
    ready = job.ready
    if ready is None:
        return False
    _running.paused = outer
    try:
        return bool(ready())
    except Exception:
        logger.exception("an urgent job's ready() failed")
        return False
    finally:
        _running.paused = None


class SerialQueue:
    """Jobs that run one after another, in the order they were submitted (from any thread)."""

    def __init__(self, pool: WorkerPool, name: str) -> None:
        self.name = name
        self._pool = pool
        self._lock = threading.Lock()
        self._jobs: deque[Job[Any]] = deque()
        self._scheduled = False  # waiting for a thread or being drained by one

    def submit(
        self,
        fn: Callable[[CancelToken], T],
        *,
        interruptible: bool = True,
        deferrable: bool = False,
        urgent: bool = False,
        ready: Callable[[], bool] | None = None,
    ) -> Job[T]:
        """Queue ``fn``. An ``urgent`` job (a short read the user waits for) is queued ahead of the
        ``deferrable`` jobs (long reads that change nothing) at the end of the queue, never ahead of
        any other job: it sees exactly the state it would have seen in arrival order. ``ready``:
        called at a pause of work half done, whether the urgent job may be answered there (see
        :func:`answer_urgent_jobs`); without it, it waits for the work's end."""
        job: Job[T] = Job(fn, interruptible, deferrable, urgent, ready)
        together = getattr(_running, "together", None)
        if together is not None:
            together.append((self, job))
        else:
            self._enqueue([job])
        return job

    def _enqueue(self, jobs: list[Job[Any]]) -> None:
        """Queue ``jobs`` in this order, all at once: no worker takes the first before the last is
        queued."""
        with self._lock:
            for job in jobs:
                if job.urgent:
                    at = len(self._jobs)
                    while at > 0 and self._jobs[at - 1].deferrable:
                        at -= 1
                    self._jobs.insert(at, job)
                else:
                    self._jobs.append(job)
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.schedule(self)

    def run_urgent(self, half_done: bool = False) -> None:
        """Run the urgent jobs at the head of the queue now, on this thread (see
        :func:`answer_urgent_jobs`)."""
        outer = getattr(_running, "job", None)
        if (
            outer is None
            or not (outer.deferrable or getattr(_running, "pausing", None) is outer)
            or current_queue() is not self
        ):
            return
        while True:
            with self._lock:
                if not self._jobs or not self._jobs[0].urgent:
                    return
                job = self._jobs[0]
            # (asked out of the lock: submitting from the loop must not wait for it; only this
            # thread takes jobs out, and one queued meanwhile ahead of it is looked at next)
            if half_done and not _ready_now(job, outer):
                return
            with self._lock:
                if not self._jobs or self._jobs[0] is not job:
                    continue
                self._jobs.popleft()
            _running.paused = outer
            try:
                job.run()
            finally:
                _running.job = outer
                _running.paused = None

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing running."""
        return not self._scheduled

    def drain(self) -> None:
        """Run the queued jobs until none is left (on a pool thread)."""
        while True:
            with self._lock:
                if not self._jobs:
                    self._scheduled = False
                    return
                job = self._jobs.popleft()
            _running.queue = self
            try:
                job.run()
            finally:
                _running.queue = None


# glibc's M_MMAP_THRESHOLD (mallopt), and the size from which a block gets a mapping of its own:
# above the 1 MiB chunks a file's scan reads (format/scan.py), which the heap then reuses instead
# of mapping each afresh and faulting its pages in again (the system's time of a big file's open)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 2 * 1024 * 1024
# glibc's M_TRIM_THRESHOLD: the free memory at the top of the heap kept rather than given back.
# Setting the mmap threshold stops glibc from raising this one with it (it stays 128 KiB): a chunk
# freed at the top of the heap would go back to the system at once, and the next be faulted in
# anew. Twice the mmap threshold, as glibc's own rule would set it.
_M_TRIM_THRESHOLD = -1
_TRIM_THRESHOLD = 2 * _MMAP_THRESHOLD


def keep_big_blocks_out_of_the_heap() -> bool:
    """Have glibc give every block of 2 MiB or more its own mapping, returned to the system when
    freed. By default glibc raises that threshold each time such a block is freed, up to 32 MiB,
    after which big blocks come from the heap of the thread that asks: a worker thread's arena
    then keeps the memory of a 10 MB line it read, or of a 20 MB reply it wrote, long after. False
    where this is not glibc (nothing to do).

    ``mallopt`` is looked up among the symbols the process has loaded already (the C library's
    among them), not found with ``ctypes.util.find_library``, which runs ``ldconfig`` in a
    subprocess while the server starts."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no such symbol (not glibc), or no dlopen(NULL)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


class WorkerPool:
    """Daemon threads that drain the queues given to :meth:`schedule`, up to ``max_threads`` at once."""

    def __init__(self, max_threads: int = MAX_THREADS, name: str = "pi-worker") -> None:
        self._max_threads = max_threads
        self._name = name
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        # (its own condition on the same lock: a notify() of schedule's must wake a thread)
        self._settled = threading.Condition(lock)
        self._ready: deque[SerialQueue] = deque()
        self._threads = 0
        self._idle = 0

    def queue(self, name: str) -> SerialQueue:
        return SerialQueue(self, name)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no job runs or waits for a thread, at most ``timeout`` seconds: whether none
        does. (A server run in a test's process has its jobs done before the test ends: its threads
        outlive the server's loop.)"""
        with self._settled:
            return self._settled.wait_for(self._idle_now, timeout)

    def _idle_now(self) -> bool:
        return not self._ready and self._idle == self._threads

    def schedule(self, queue: SerialQueue) -> None:
        with self._cond:
            self._ready.append(queue)
            if self._idle > len(self._ready) - 1:
                self._cond.notify()
                return
            if self._threads >= self._max_threads:
                return  # every thread is busy: the queue waits for the first one free
            self._threads += 1
            number = self._threads
        threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._ready:
                    self._idle += 1
                    if self._idle == self._threads:
                        self._settled.notify_all()
                    woken = self._cond.wait(IDLE_EXIT)
                    self._idle -= 1
                    if not woken and not self._ready:
                        self._threads -= 1
                        return
                queue = self._ready.popleft()
            queue.drain()
