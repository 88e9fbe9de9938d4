"""The file poller queues the refresh of every session whose file changed before any of them tells
the client: a request by ``uri`` sent on the first ``pi/didChange`` goes to the newest session held
on the file, which may not be the one that told, and must find that session's refresh ahead of it
in its queue (else it answers from the file as it was)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from pi_session_server.server import poller as poller_module
from pi_session_server.server.poller import DID_CHANGE, FilePoller
from pi_session_server.server.registry import Slot
from pi_session_server.server.workers import CancelToken, SerialQueue, WorkerPool


class _Appended:
    """A manager whose file had a line appended."""

    awaiting_header = False

    def refresh_from_disk(self) -> Any:
        return SimpleNamespace(kind="appended", new_entry_ids=["u0000009"], leaf_id="u0000009")


class RecordingQueue:
    """A slot's queue that notes when a job was queued on it."""

    def __init__(self, queue: SerialQueue, queued: threading.Event) -> None:
        self._queue, self._queued = queue, queued

    def submit(self, work: Any, **options: Any) -> Any:
        self._queued.set()
        return self._queue.submit(work, **options)


def test_no_session_tells_of_a_change_before_every_session_on_the_file_has_its_refresh_queued(
    monkeypatch: Any,
) -> None:
    pool = WorkerPool()
    second_queued = threading.Event()
    told: list[tuple[str, bool]] = []
    all_told = threading.Event()
    first = Slot("s1", pool.queue("s1"), _Appended(), path="/w/s.jsonl")  # type: ignore[arg-type]
    second = Slot(
        "s2",
        RecordingQueue(pool.queue("s2"), second_queued),  # type: ignore[arg-type]
        _Appended(),  # type: ignore[arg-type]
        path="/w/link-to-s.jsonl",  # (the same file: each spelling is looked at)
    )

    def notify(method: str, params: dict[str, Any]) -> None:
        assert method == DID_CHANGE
        told.append((params["session"], second_queued.is_set()))
        if len(told) == 2:
            all_told.set()

    server = SimpleNamespace(
        pool=pool,
        options=SimpleNamespace(watch_interval=1.0),
        registry=SimpleNamespace(slots=lambda: [first, second]),
        note_slot=lambda _slot: None,
        uri_of=lambda path: "file://" + path,
        notify=notify,
    )
    looks = iter([0.0, 0.3])  # the second session's file is looked at a while after the first's

    def slow_second_look(path: str) -> Any:
        time.sleep(next(looks))
        return ("changed", path)

    monkeypatch.setattr(poller_module, "stat_signature", slow_second_look)
    poller = FilePoller(server)  # type: ignore[arg-type]
    look = poller._next_look()
    assert look is not None
    poller._look(look, CancelToken())
    assert all_told.wait(10)
    # the first session told only once the second's refresh was queued
    assert sorted(told) == [("s1", True), ("s2", True)]
