"""The idle close's own timer (server/idle_slots.py), at its real length: a session looked at by
``uri`` is closed once no request has addressed it for a quarter of an hour, each request starts
that quarter anew, and the timer stops once no such session is left. The loop and the clock are
stand-ins, moved by the test; the registry, its slots and their queues are the server's.

(tests/unit/test_idle_slots.py runs the real server with the time cut short: what is closed and
what is kept.)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import builders as S
import pytest

from pi_session_server.server import idle_slots
from pi_session_server.server.idle_slots import IdleSlots
from pi_session_server.server.registry import Registry, Slot
from pi_session_server.server.workers import WorkerPool
from pi_session_server.session import SessionManager

QUARTER_OF_AN_HOUR = 15 * 60.0


class _Timer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Loop:
    """``call_later`` on a clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = 10_000.0
        self.timers: list[_Timer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer

    def pending(self) -> list[_Timer]:
        return [t for t in self.timers if not t.cancelled]

    def run_until(self, when: float) -> None:
        """Fire every timer due by ``when``, in order, the clock at each one's time."""
        while True:
            due = [t for t in self.pending() if t.when <= when]
            if not due:
                break
            timer = min(due, key=lambda t: t.when)
            self.timers.remove(timer)
            self.now = timer.when
            timer.callback()
        self.now = when


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> _Loop:
    fake = _Loop()
    monkeypatch.setattr(idle_slots, "asyncio", SimpleNamespace(get_running_loop=lambda: fake))
    monkeypatch.setattr(idle_slots, "time", SimpleNamespace(monotonic=lambda: fake.now))
    return fake


@pytest.fixture
def registry() -> Registry:
    return Registry(WorkerPool())


@pytest.fixture
def session_file(tmp_path: Path) -> str:
    path = tmp_path / "s.jsonl"
    path.write_text(S.header() + "\n" + S.user("e1", None) + "\n")
    return str(path)


def _looked_at(registry: Registry, path: str) -> Slot:
    """An implicit slot as the open of a ``uri`` leaves it: read-only, its manager opened."""
    slot = registry.add(SessionManager.open(path, read_only=True), implicit=True, path=path)
    slot.read_only = True
    return slot


def _held(registry: Registry, slot: Slot) -> bool:
    return slot in registry.slots()


def test_a_session_looked_at_is_closed_a_quarter_of_an_hour_after_its_last_request(
    loop: _Loop, registry: Registry, session_file: str
):
    idle = IdleSlots(registry, lambda _slot: False)
    slot = _looked_at(registry, session_file)
    start = loop.now
    idle.used(slot)
    assert len(loop.pending()) == 1  # armed by the first request
    loop.run_until(start + QUARTER_OF_AN_HOUR)
    assert _held(registry, slot)
    loop.run_until(start + 1.1 * QUARTER_OF_AN_HOUR)
    assert not _held(registry, slot)
    assert loop.pending() == []  # no session looked at is left: the timer stops


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc/self/fd to see the descriptors")
def test_a_session_closed_for_idleness_lets_go_of_its_file(
    loop: _Loop, registry: Registry, session_file: str
):
    """Its descriptors are closed: a file deleted meanwhile gives its disk space back."""
    idle = IdleSlots(registry, lambda _slot: False)
    slot = _looked_at(registry, session_file)
    idle.used(slot)
    assert session_file in _open_files()
    os.unlink(session_file)
    loop.run_until(loop.now + 1.1 * QUARTER_OF_AN_HOUR)
    assert not _held(registry, slot)
    after_the_close = threading.Event()
    slot.queue.submit(lambda _token: None, interruptible=False).add_done_callback(
        lambda _job: after_the_close.set()
    )
    assert after_the_close.wait(60)
    assert not any(name.startswith(session_file) for name in _open_files())


def _open_files() -> list[str]:
    """What this process's descriptors name (a deleted file's name ends in " (deleted)")."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
    return names


def test_each_request_starts_the_quarter_of_an_hour_anew(loop: _Loop, registry: Registry, session_file: str):
    idle = IdleSlots(registry, lambda _slot: False)
    slot = _looked_at(registry, session_file)
    start = loop.now
    idle.used(slot)
    loop.run_until(start + 0.6 * QUARTER_OF_AN_HOUR)
    idle.used(slot)
    again = loop.now
    assert len(loop.pending()) == 1  # one timer, however many requests
    loop.run_until(again + QUARTER_OF_AN_HOUR)  # well past the first request's quarter
    assert _held(registry, slot)
    loop.run_until(again + 1.1 * QUARTER_OF_AN_HOUR)
    assert not _held(registry, slot)
    assert loop.pending() == []


def test_the_timer_runs_while_a_session_looked_at_is_kept_and_only_then(
    loop: _Loop, registry: Registry, session_file: str
):
    """A kept session (its file shown in an editor) is looked at again and again; a session opened
    with pi/open never arms the timer."""
    opened = registry.add(SessionManager.open(session_file, read_only=True), path=session_file)
    shown = {True}
    idle = IdleSlots(registry, lambda _slot: bool(shown))
    idle.used(opened)
    assert loop.pending() == []
    slot = _looked_at(registry, session_file)
    start = loop.now
    idle.used(slot)
    loop.run_until(start + 10 * QUARTER_OF_AN_HOUR)
    assert _held(registry, slot) and len(loop.pending()) == 1
    shown.clear()  # the editor closed the file
    loop.run_until(start + 11.1 * QUARTER_OF_AN_HOUR)
    assert not _held(registry, slot) and _held(registry, opened)
    assert loop.pending() == []


def test_once_stopped_the_timer_is_cancelled_and_no_request_arms_it_again(
    loop: _Loop, registry: Registry, session_file: str
):
    """The server shuts down (``stop``): a request still in flight does not arm it anew."""
    idle = IdleSlots(registry, lambda _slot: False)
    slot = _looked_at(registry, session_file)
    idle.used(slot)
    (armed,) = loop.pending()
    idle.stop()
    assert armed.cancelled and loop.pending() == []
    idle.used(slot)
    assert loop.pending() == []
    loop.run_until(loop.now + 2 * QUARTER_OF_AN_HOUR)
    assert _held(registry, slot)  # (closed by the shutdown, not here)
