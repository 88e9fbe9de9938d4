"""Sessions opened on demand for a ``uri`` are let go once nobody has asked about them for a while.

A client that looks at sessions by ``uri`` (the VS Code viewer, for each session the user shows)
never closes what it looked at: each such *implicit* slot held its manager, its descriptors (a
deleted file's disk space too) and the poller's look at its file for the life of the server. One
that no request has addressed for :data:`IDLE` seconds is closed, as the language server lets go
of the analysis of the documents it read from disk (``language_disk_reads.DISK_FORGET``); the next
request by ``uri`` opens the file again, as the first one did.

Only a slot that holds nothing the file does not is let go: opened to look at (``read_only``: a
write by ``uri`` reopens it for writing, and a new session's entries may not be in its file yet),
its leaf the file's own (not moved by ``pi/branch``), with no job queued or running, and no editor
showing its file (the viewer of a document on screen follows it through ``pi/didChange``). A slot
opened with ``pi/open`` and the like is the client's: it is never closed here. The close goes
through the slot's queue (``Registry.close``), after any job already there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pi_session_server.format.jsvalue import ABSENT

from .registry import Registry, Slot

#: seconds an implicit slot stays open with no request addressing it
IDLE = 900.0


class IdleSlots:
    """Closes the implicit slots of ``registry`` left unused for :data:`IDLE` seconds (on the event
    loop); ``shown(slot)``: an editor shows the slot's file (the slot is kept)."""

    def __init__(self, registry: Registry, shown: Callable[[Slot], bool]) -> None:
        self._registry = registry
        self._shown = shown
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def stop(self) -> None:
        """The server shuts down: the timer is cancelled, and no request arms it again (the
        sessions are closed by the shutdown, not by an idle close racing it)."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def used(self, slot: Slot) -> None:
        """A request addresses ``slot`` (on the loop)."""
        slot.last_used = time.monotonic()
        if slot.implicit and self._timer is None and not self._stopped:
            self._check_later()

    def _check_later(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop: the next request by uri on it arms the timer
            return
        self._timer = loop.call_later(IDLE / 10, self._close_idle)

    def _close_idle(self) -> None:
        self._timer = None
        now = time.monotonic()
        implicit = [slot for slot in self._registry.slots() if slot.implicit]
        for slot in implicit:
            if now - slot.last_used > IDLE and self._releasable(slot):
                self._registry.close(slot)
        if any(slot.implicit for slot in self._registry.slots()):
            self._check_later()

    def _releasable(self, slot: Slot) -> bool:
        """The slot holds nothing the file does not, and nothing waits on it."""
        return (
            slot.read_only
            and slot.manager is not None
            and slot.failure is None
            and not slot.closed
            and slot.branched_leaf is ABSENT
            and not slot.refreshing
            and slot.queue.idle
            and not self._shown(slot)
        )


__all__ = ["IDLE", "IdleSlots"]
