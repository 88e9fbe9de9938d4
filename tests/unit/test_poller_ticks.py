"""The file poller's timer: a tick looks at the followed files only while files are followed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pi_session_server.server.poller import FilePoller
from pi_session_server.server.workers import WorkerPool


def test_a_tick_scheduled_before_following_was_turned_off_looks_at_nothing() -> None:
    """The start schedules the first look with the command line's interval; a client's
    ``initializationOptions`` (``watchInterval: 0``) may turn following off before it fires: the
    tick then neither looks nor schedules another."""
    options = SimpleNamespace(watch_interval=0.15)
    poller = FilePoller(SimpleNamespace(pool=WorkerPool(), options=options))  # type: ignore[arg-type]
    looks: list[Any] = []
    poller._queue = SimpleNamespace(submit=lambda work, **_: looks.append(work))  # type: ignore[assignment]
    scheduled: list[Any] = []
    loop = SimpleNamespace(call_later=lambda *args: scheduled.append(args))
    poller._tick(loop)  # type: ignore[arg-type]
    assert len(looks) == 1 and len(scheduled) == 1  # following: a look, and the next tick
    poller._look_running = None  # (that look done)
    options.watch_interval = 0  # (the client's options, taken after the start)
    poller._tick(loop)  # type: ignore[arg-type]
    assert len(looks) == 1 and len(scheduled) == 1
