"""server/workers.py: serial queues on a bounded pool of daemon threads, and cancellable jobs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from pi_session_server.server.workers import (
    Cancelled,
    CancelToken,
    WorkerPool,
    answer_urgent_jobs,
    at_a_pause,
    log_failure,
    on_loop,
    pausing,
    queued_together,
)


def test_the_pool_is_idle_once_no_job_runs_or_waits() -> None:
    pool = WorkerPool(max_threads=1)
    assert pool.wait_idle(0)
    release = threading.Event()
    running = pool.queue("a").submit(lambda token: release.wait(30))
    waiting = pool.queue("b").submit(lambda token: "late")  # (no thread free for it)
    assert not pool.wait_idle(0.05)
    settled = threading.Event()
    threading.Thread(target=lambda: pool.wait_idle(60) and settled.set(), daemon=True).start()
    release.set()
    # (told as the last job ends, not when the wait gives up)
    assert settled.wait(10), "the pool never went idle"
    assert running.done() and waiting.result() == "late"


def test_one_queue_runs_its_jobs_one_at_a_time_in_order() -> None:
    pool = WorkerPool()
    queue = pool.queue("q")
    seen: list[int] = []
    running = threading.Lock()

    def job(n: int) -> object:
        def run(token: CancelToken) -> int:
            assert running.acquire(blocking=False), "two jobs of one queue ran at once"
            time.sleep(0.001)
            seen.append(n)
            running.release()
            return n

        return run

    jobs = [queue.submit(job(n)) for n in range(50)]
    deadline = time.monotonic() + 20
    while not all(j.done() for j in jobs):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert seen == list(range(50)) and [j.result() for j in jobs] == list(range(50))


def test_a_stuck_queue_delays_no_other() -> None:
    pool = WorkerPool()
    release = threading.Event()
    stuck = pool.queue("stuck").submit(lambda token: release.wait(30), interruptible=False)
    other = pool.queue("other").submit(lambda token: "answered")
    deadline = time.monotonic() + 10
    while not other.done():
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert other.result() == "answered" and not stuck.done()
    release.set()


def test_past_the_bound_queues_wait_for_a_thread() -> None:
    pool = WorkerPool(max_threads=2)
    release = threading.Event()
    stuck = [pool.queue(f"s{i}").submit(lambda token: release.wait(30)) for i in range(2)]
    waiting = pool.queue("third").submit(lambda token: "late")
    time.sleep(0.2)
    assert not waiting.done()
    release.set()
    deadline = time.monotonic() + 10
    # (the stuck jobs' threads set their results on their own: one may come after the third's)
    while not (waiting.done() and all(s.done() for s in stuck)):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert waiting.result() == "late"


def test_cancelling_a_queued_job_a_running_read_and_a_running_write() -> None:
    pool = WorkerPool()
    queue = pool.queue("q")
    started = threading.Event()
    release = threading.Event()

    def read(token: CancelToken) -> str:
        started.set()
        while not release.is_set():
            token.check()  # stops at the next check once cancelled
            time.sleep(0.005)
        return "read"

    running = queue.submit(read)
    queued = queue.submit(lambda token: "never")
    started.wait(10)
    assert queued.cancel() and queued.cancelled()
    assert running.cancel() and running.cancelled()
    with pytest.raises(Cancelled):
        running.result()

    write_started = threading.Event()

    def write(token: CancelToken) -> str:
        write_started.set()
        release.wait(10)
        return "written"

    writing = queue.submit(write, interruptible=False)
    write_started.wait(10)
    assert not writing.cancel()  # a write that started finishes
    release.set()
    deadline = time.monotonic() + 10
    while not writing.done():
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert writing.result() == "written"


def test_callbacks_run_once_even_when_added_late() -> None:
    pool = WorkerPool()
    job = pool.queue("q").submit(lambda token: 5)
    while not job.done():
        time.sleep(0.001)
    seen: list[int] = []
    job.add_done_callback(lambda j: seen.append(j.result()))
    assert seen == [5]


def test_an_asyncio_future_of_a_job_cancels_it() -> None:
    pool = WorkerPool()
    queue = pool.queue("q")
    release = threading.Event()

    async def main() -> None:
        blocker = queue.submit(lambda token: release.wait(10), interruptible=False)
        waiting = queue.submit(lambda token: "x")
        future = on_loop(waiting, asyncio.get_running_loop())
        future.cancel()
        await asyncio.sleep(0.01)
        assert waiting.cancelled()
        release.set()
        assert await on_loop(blocker, asyncio.get_running_loop()) is True
        assert await on_loop(queue.submit(lambda token: 7), asyncio.get_running_loop()) == 7

    asyncio.run(main())


def test_the_failure_of_a_job_nobody_awaits_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pool = WorkerPool()
    queue = pool.queue("q")

    def fail(_token: CancelToken) -> None:
        raise RecursionError("too deep")

    with caplog.at_level("ERROR", logger="pi_session_server.server.workers"):
        failed = log_failure(queue.submit(fail), "opening file:///s.jsonl")
        fine = log_failure(queue.submit(lambda _token: 1), "opening file:///t.jsonl")
        over = threading.Event()
        fine.add_done_callback(lambda _job: over.set())  # after the logging callbacks of both
        assert over.wait(10) and failed.done()
    (record,) = caplog.records
    assert record.getMessage() == "opening file:///s.jsonl failed"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RecursionError)


HEAP_SCRIPT = r"""
import resource, sys
from pi_session_server.server.workers import keep_big_blocks_out_of_the_heap

if not keep_big_blocks_out_of_the_heap():
    print("not glibc"); sys.exit(0)

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

# a file's scan: a 1 MiB chunk read, freed, the next read
block = bytearray(1 << 20); del block
before = faults()
for _ in range(64):
    block = bytearray(1 << 20); del block
chunk_faults = faults() - before

# a big line read or a big reply written: its memory goes back to the system when freed, also
# the second time (glibc by default keeps it in the heap once a block that big was freed)
for _ in range(2):
    start = resident()
    block = bytearray(32 << 20)
    grown = resident() - start
    del block
    kept = resident() - start
print(chunk_faults, grown, kept)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap, /proc")
def test_big_blocks_go_back_to_the_system_and_the_scan_s_chunks_are_reused() -> None:
    out = subprocess.run(
        [sys.executable, "-c", HEAP_SCRIPT], capture_output=True, text=True, check=True
    ).stdout
    if out.strip() == "not glibc":
        pytest.skip("not glibc")
    chunk_faults, grown, kept = map(int, out.split())
    # a chunk mapped afresh each time touches its 256 pages anew (64 * 256 faults): the system's
    # time of a big file's scan; reused from the heap, it touches them once
    assert chunk_faults < 64 * 256 // 4, chunk_faults
    assert grown >= 32 << 20 and kept < 4 << 20, (grown, kept)


def _urgent_job_at_pauses(pause_in: bool, outer_urgent: bool = False) -> list[str]:
    """A job that is not deferrable pauses (inside :func:`pausing` or not) once an urgent job is
    queued behind it: what ran, in order."""
    pool = WorkerPool(max_threads=2)
    q = pool.queue("q")
    events: list[str] = []
    queued = threading.Event()

    def outer(_token: CancelToken) -> None:
        assert queued.wait(10)
        if pause_in:
            with pausing():
                answer_urgent_jobs()
        else:
            answer_urgent_jobs()
        events.append("outer")

    def urgent(_token: CancelToken) -> None:
        events.append("urgent at a pause" if at_a_pause() else "urgent")

    first = q.submit(outer, interruptible=False, urgent=outer_urgent)
    second = q.submit(urgent, urgent=True)
    queued.set()
    for job in (first, second):
        deadline = time.monotonic() + 10
        while not job.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
    return events


def test_a_job_that_is_not_deferrable_answers_urgent_jobs_at_its_pauses_within_pausing_only() -> None:
    assert _urgent_job_at_pauses(pause_in=True) == ["urgent at a pause", "outer"]
    assert _urgent_job_at_pauses(pause_in=False) == ["outer", "urgent"]
    # an urgent job never pauses for another one
    assert _urgent_job_at_pauses(pause_in=True, outer_urgent=True) == ["outer", "urgent"]


def test_at_a_pause_of_work_half_done_only_the_urgent_jobs_ready_run_up_to_the_first_that_is_not() -> None:
    """Urgent jobs queued in the order ready, not ready, ready: at a pause half done the first
    runs (its ready() asked as at a pause), the second and the one behind it wait, for the whole
    pause that follows; a job without ready() waits too."""
    pool = WorkerPool(max_threads=2)
    q = pool.queue("q")
    events: list[str] = []
    queued = threading.Event()
    asked_at_a_pause: list[bool] = []

    def ready(answer: bool) -> Callable[[], bool]:
        def asked() -> bool:
            asked_at_a_pause.append(at_a_pause())
            return answer

        return asked

    def outer(_token: CancelToken) -> None:
        assert queued.wait(10)
        with pausing():
            answer_urgent_jobs(half_done=True)
            events.append("half done")
            answer_urgent_jobs()
        events.append("outer")

    def urgent(name: str) -> Callable[[CancelToken], None]:
        return lambda _token: events.append(name + (" at a pause" if at_a_pause() else ""))

    jobs = [
        q.submit(outer, interruptible=False),
        q.submit(urgent("ready"), urgent=True, ready=ready(True)),
        q.submit(urgent("not ready"), urgent=True, ready=ready(False)),
        q.submit(urgent("ready behind"), urgent=True, ready=ready(True)),
        q.submit(urgent("without ready"), urgent=True),
    ]
    queued.set()
    for job in jobs:
        deadline = time.monotonic() + 10
        while not job.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert events == [
        "ready at a pause",
        "half done",
        "not ready at a pause",
        "ready behind at a pause",
        "without ready at a pause",
        "outer",
    ]
    assert asked_at_a_pause == [True, True]


def test_jobs_queued_together_start_once_the_last_is_queued() -> None:
    """A job that answers the urgent jobs behind it at its pause, and an urgent one, submitted
    together to a queue whose worker is free to take the first at once (it has just finished the
    job before): the first waits for the second to be queued, and answers it at its pause."""
    pool = WorkerPool(max_threads=2)
    q = pool.queue("q")
    events: list[str] = []
    release = threading.Event()

    def outer(_token: CancelToken) -> None:
        with pausing():
            answer_urgent_jobs()
        events.append("outer")

    def urgent(_token: CancelToken) -> None:
        events.append("urgent at a pause" if at_a_pause() else "urgent")

    def wait_until(done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not done():
            assert time.monotonic() < deadline
            time.sleep(0.01)

    before = q.submit(lambda _token: release.wait(10), interruptible=False)
    with queued_together():
        first = q.submit(outer, interruptible=False)
        release.set()
        # the worker is done with the job before: it takes the next, or finds none queued
        wait_until(lambda: first.done() or (before.done() and q.idle))
        second = q.submit(urgent, urgent=True)
    for job in (first, second):
        wait_until(job.done)
    assert events == ["urgent at a pause", "outer"]
