"""A stat that hangs at one followed file (a stuck network mount) holds that file, never the
poller's look at the others: a look goes on without it after ``STAT_BOUND_SECONDS``, no second
stat of it is made while the first hangs (one thread per stuck file, not one per tick), and its
answer, when it comes, is taken into the next look (the file is refreshed then)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from test_poller_order import RecordingQueue

from pi_session_server.server import poller as poller_module
from pi_session_server.server.poller import DID_CHANGE, MISSING, FilePoller
from pi_session_server.server.registry import Slot
from pi_session_server.server.workers import SerialQueue, WorkerPool

STUCK_MOUNT = "/stuck-mount/"
STUCK = STUCK_MOUNT + "s.jsonl"
TICK = 0.02
WAIT = 10.0


class _FileSystem:
    """``stat_signature`` of a file system where the stat of a file under ``STUCK_MOUNT`` waits
    until ``release()`` (then answers ``stuck_answer``), and every other file has changed at each
    stat."""

    def __init__(self, stuck_answer: Any = ("stuck", 2)) -> None:
        self.calls: Counter[str] = Counter()
        self.running: Counter[str] = Counter()
        self.most_running: Counter[str] = Counter()
        self.stuck_answer = stuck_answer
        self._released = threading.Event()
        self._lock = threading.Lock()

    def release(self) -> None:
        self._released.set()

    def stat_signature(self, path: str) -> Any:
        with self._lock:
            self.calls[path] += 1
            self.running[path] += 1
            self.most_running[path] = max(self.most_running[path], self.running[path])
            number = self.calls[path]
        try:
            if path.startswith(STUCK_MOUNT):
                self._released.wait(WAIT * 3)
                return self.stuck_answer
            return (path, number)
        finally:
            with self._lock:
                self.running[path] -= 1


class _Appended:
    """A manager whose file had a line appended, at every refresh."""

    awaiting_header = False

    def __init__(self) -> None:
        self.refreshes = 0

    def refresh_from_disk(self) -> Any:
        self.refreshes += 1
        return SimpleNamespace(kind="appended", new_entry_ids=["u0000009"], leaf_id="u0000009")


class _Harness:
    def __init__(self, slots: list[Slot]) -> None:
        self.pool = WorkerPool()
        self.told: list[str] = []
        self._cond = threading.Condition()
        self.server = SimpleNamespace(
            pool=self.pool,
            options=SimpleNamespace(watch_interval=TICK),
            registry=SimpleNamespace(slots=lambda: list(slots)),
            note_slot=lambda _slot: None,
            uri_of=lambda path: "file://" + path,
            notify=self._notify,
        )
        self.poller = FilePoller(self.server)  # type: ignore[arg-type]
        self._loop = SimpleNamespace(call_later=lambda *_args: None)  # the test ticks by hand

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        assert method == DID_CHANGE
        with self._cond:
            self.told.append(params["session"])
            self._cond.notify_all()

    def tick_until(self, done: Callable[[], bool], timeout: float = WAIT) -> bool:
        """Tick as the event loop does until ``done()``; whether it came in time."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                return False
            self.poller._tick(self._loop)  # type: ignore[arg-type]
            time.sleep(TICK)
        return True

    def ticks(self, seconds: float) -> None:
        self.tick_until(lambda: False, timeout=seconds)

    def slot(self, handle: str, path: str, queue: SerialQueue | None = None) -> Slot:
        return Slot(handle, queue or self.pool.queue(handle), _Appended(), path=path)  # type: ignore[arg-type]


@pytest.fixture
def file_system(monkeypatch: pytest.MonkeyPatch) -> Iterator[_FileSystem]:
    fs = _FileSystem()
    monkeypatch.setattr(poller_module, "stat_signature", fs.stat_signature)
    try:
        yield fs
    finally:
        fs.release()  # (no thread stays stuck past the test)


def test_the_followed_documents_go_on_while_one_stat_hangs_and_the_late_answer_is_taken_in(
    file_system: _FileSystem,
) -> None:
    harness = _Harness([])
    changes: Counter[str] = Counter()
    poller = harness.poller
    poller.follow("stuck", STUCK, lambda: changes.update(["stuck"]), ("stuck", 1))
    poller.follow("good", "/w/good.jsonl", lambda: changes.update(["good"]))
    assert harness.tick_until(lambda: file_system.calls[STUCK] == 1)
    # the good file is looked at, and found changed, look after look, while the stuck stat hangs
    assert harness.tick_until(lambda: changes["good"] >= 10)
    harness.ticks(3 * poller_module.STAT_BOUND_SECONDS)
    assert file_system.calls[STUCK] == 1 and changes["stuck"] == 0
    file_system.release()
    assert harness.tick_until(lambda: changes["stuck"] == 1)
    # the change was the hung stat's answer, taken in by a look after it: not found by another stat
    assert file_system.calls[STUCK] == 1


def test_a_stuck_session_file_holds_no_other_session_and_its_change_is_told_once_it_answers(
    file_system: _FileSystem,
) -> None:
    slots: list[Slot] = []
    harness = _Harness(slots)
    stuck, good = harness.slot("s1", STUCK), harness.slot("s2", "/w/good.jsonl")
    stuck.last_stat = good.last_stat = ("as opened", 0)
    slots += [stuck, good]
    assert harness.tick_until(lambda: harness.told.count("s2") >= 5)
    assert "s1" not in harness.told
    assert file_system.most_running[STUCK] == 1  # one thread waits for it, however many looks
    file_system.release()
    assert harness.tick_until(lambda: "s1" in harness.told)
    assert stuck.manager.refreshes == 1  # type: ignore[union-attr]


def test_a_stuck_stat_that_answers_missing_refreshes_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    fs = _FileSystem(stuck_answer=MISSING)
    monkeypatch.setattr(poller_module, "stat_signature", fs.stat_signature)
    harness = _Harness([])
    stuck = harness.slot("s1", STUCK)
    stuck.last_stat = ("as opened", 0)
    harness.server.registry.slots = lambda: [stuck]
    try:
        assert harness.tick_until(lambda: fs.calls[STUCK] == 1)
        harness.ticks(3 * poller_module.STAT_BOUND_SECONDS)
        fs.release()
        assert harness.tick_until(lambda: stuck.manager.refreshes == 1)  # type: ignore[union-attr]
        assert stuck.last_stat == MISSING and fs.calls[STUCK] == 1  # the hung stat's answer
    finally:
        fs.release()


def test_a_look_that_goes_on_past_a_stuck_file_queues_every_refresh_before_any_tells(
    file_system: _FileSystem,
) -> None:
    """Round 41's order holds in the look that goes on without the stuck file: no session of it
    tells of a change before the refresh of every session whose change it found is queued."""
    slots: list[Slot] = []
    harness = _Harness(slots)
    second_queued = threading.Event()
    told_before_second_queued: list[str] = []
    notify = harness.server.notify

    def notify_noting_order(method: str, params: dict[str, Any]) -> None:
        if not second_queued.is_set():
            told_before_second_queued.append(params["session"])
        notify(method, params)

    harness.server.notify = notify_noting_order
    stuck = harness.slot("s0", STUCK)
    first = harness.slot("s1", "/w/s.jsonl")
    recording = RecordingQueue(harness.pool.queue("s2"), second_queued)
    second = harness.slot("s2", "/w/link-to-s.jsonl", recording)  # type: ignore[arg-type]
    for slot in (stuck, first, second):
        slot.last_stat = ("as opened", 0)
    slots.append(stuck)
    assert harness.tick_until(lambda: file_system.calls[STUCK] == 1)
    slots += [first, second]
    assert harness.tick_until(lambda: {"s1", "s2"} <= set(harness.told))
    assert told_before_second_queued == []


def test_files_stuck_by_the_dozen_on_a_mount_hold_a_few_look_threads_and_the_others_go_on(
    file_system: _FileSystem,
) -> None:
    """Each stuck file holds a thread until its stat answers: they are the looks' own, so the
    threads the sessions' requests run on stay free; once half of them are held, no file last seen
    on the stuck device is looked at (no more threads held), while the files elsewhere go on being
    looked at; once the mount answers every change is taken in."""
    harness = _Harness([])
    sessions_pool_used = threading.Event()
    harness.pool.schedule = lambda _queue: sessions_pool_used.set()  # type: ignore[method-assign,assignment]
    stuck = [f"{STUCK_MOUNT}{n}.jsonl" for n in range(3 * poller_module.LOOK_THREADS)]
    changes: Counter[str] = Counter()
    for path in stuck:  # each last seen on the mount's device
        harness.poller.follow(path, path, lambda path=path: changes.update([path]), ("stuck", 1))  # type: ignore[misc]
    harness.poller.follow("good", "/w/good.jsonl", lambda: changes.update(["good"]))
    harness.ticks(poller_module.LOOK_THREADS * (poller_module.STAT_BOUND_SECONDS + 2 * TICK) + 1)
    hanging = sum(file_system.running[path] for path in stuck)
    assert hanging == poller_module.LOOK_THREADS // 2
    assert all(file_system.calls[path] <= 1 for path in stuck)
    looked = changes["good"]
    assert harness.tick_until(lambda: changes["good"] >= looked + 5)
    file_system.release()
    assert harness.tick_until(lambda: set(changes) == {*stuck, "good"})
    assert not sessions_pool_used.is_set()


def test_a_file_on_the_device_of_one_stuck_stat_is_still_looked_at(file_system: _FileSystem) -> None:
    """A file system may hang one file and answer for the others (FUSE): while the look threads
    are plenty, a stuck stat holds its own file only."""
    harness = _Harness([])
    changes: Counter[str] = Counter()
    harness.poller.follow("stuck", STUCK, lambda: changes.update(["stuck"]), ("stuck", 1))
    harness.poller.follow("sibling", "/w/sibling.jsonl", lambda: changes.update(["sibling"]), ("stuck", 1))
    assert harness.tick_until(lambda: file_system.calls[STUCK] == 1)
    harness.ticks(3 * poller_module.STAT_BOUND_SECONDS)
    looked = changes["sibling"]
    assert harness.tick_until(lambda: changes["sibling"] >= looked + 5)
    assert changes["stuck"] == 0


class _BrokenOnce(_FileSystem):
    """A file system whose stat of ``STUCK`` raises something no stat should (a bug of ours or of a
    file system's binding), once: after hanging past the bound when ``hang_first``."""

    def __init__(self, hang_first: bool) -> None:
        super().__init__()
        self.hang_first = hang_first

    def stat_signature(self, path: str) -> Any:
        if path == STUCK and self.calls[STUCK] == 0:
            self.calls[STUCK] += 1
            if self.hang_first:
                self._released.wait(WAIT * 3)
            raise RuntimeError("not a file system's answer")
        if path == STUCK:
            self.calls[STUCK] += 1
            return ("stuck", 2)
        return super().stat_signature(path)


@pytest.mark.parametrize("hang_first", [False, True], ids=["at once", "after the look went on"])
def test_a_stat_that_raises_leaves_the_file_to_the_next_look_never_unlooked(
    monkeypatch: pytest.MonkeyPatch, hang_first: bool
) -> None:
    fs = _BrokenOnce(hang_first)
    monkeypatch.setattr(poller_module, "stat_signature", fs.stat_signature)
    harness = _Harness([])
    changes: Counter[str] = Counter()
    harness.poller.follow("stuck", STUCK, lambda: changes.update(["stuck"]), ("stuck", 1))
    harness.poller.follow("good", "/w/good.jsonl", lambda: changes.update(["good"]))
    try:
        assert harness.tick_until(lambda: fs.calls[STUCK] == 1)
        if hang_first:
            harness.ticks(3 * poller_module.STAT_BOUND_SECONDS)
            fs.release()
        # the failed stat is neither a change nor the end of looking at the file: the next stat is
        assert harness.tick_until(lambda: changes["stuck"] == 1)
        assert fs.calls[STUCK] == 2
        assert changes["good"] >= 1  # the other file's look went on past the failure
    finally:
        fs.release()


def test_new_files_by_the_dozen_on_a_dead_mount_never_hold_every_look_thread(
    file_system: _FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files never looked at before (sessions just opened or created there: no device known yet)
    flood in on a mount whose stats hang. Each stuck one holds a thread; once half of them are
    held, no other new file on that mount is looked at, so the looks go on for the files
    elsewhere, known and new, and once the mount answers every file is taken in."""
    mounts = ["/", STUCK_MOUNT.rstrip("/")]
    monkeypatch.setattr(poller_module, "mount_points", lambda: mounts)
    harness = _Harness([])
    stuck = [f"{STUCK_MOUNT}{n}.jsonl" for n in range(3 * poller_module.LOOK_THREADS)]
    changes: Counter[str] = Counter()
    for path in stuck:  # never looked at: no signature, no device
        harness.poller.follow(path, path, lambda path=path: changes.update([path]))  # type: ignore[misc]
    harness.poller.follow("good", "/w/good.jsonl", lambda: changes.update(["good"]), ("/w", 1))
    harness.poller.follow("new", "/w/new.jsonl", lambda: changes.update(["new"]))
    harness.ticks(poller_module.LOOK_THREADS * (poller_module.STAT_BOUND_SECONDS + 2 * TICK) + 1)
    hanging = sum(file_system.running[path] for path in stuck)
    assert hanging <= poller_module.LOOK_THREADS // 2 + 1
    assert all(file_system.calls[path] <= 1 for path in stuck)
    looked = changes["good"], changes["new"]
    assert harness.tick_until(lambda: changes["good"] >= looked[0] + 5 and changes["new"] >= looked[1] + 5)
    file_system.release()
    assert harness.tick_until(lambda: set(changes) == {*stuck, "good", "new"})


def test_the_mount_table_is_read_with_its_escapes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "mounts"
    table.write_text(
        "sysfs /sys sysfs rw 0 0\nserver:/export /mnt/my\\040share nfs rw 0 0\n/dev/sda1 / ext4 rw 0 0\n"
    )
    monkeypatch.setattr(poller_module, "MOUNT_TABLE", str(table))
    assert poller_module.mount_points() == ["/sys", "/mnt/my share", "/"]
    monkeypatch.setattr(poller_module, "MOUNT_TABLE", str(tmp_path / "none"))
    assert poller_module.mount_points() == []
