"""One poller for every file the server follows: held sessions (pi appends to them) and documents
the language features read from disk.

Every ``watch_interval`` seconds (150 ms by default: well inside the 500 ms promise) one job on the
poller's own queue looks at each followed file (``stat``: inode, size, mtime). A file that changed
is handed to its owner's queue: a session takes the change in with ``refresh_from_disk()`` (only
the new bytes are read; a truncated or replaced file is reloaded) and the client gets
``pi/didChange``. Our own appends change the file too; the refresh then finds nothing new and
nothing is sent. A file found without a session header is told once as ``rewriting``, and looked at
on every tick until it either gets a header (``reloaded``) or holds still long enough to be told
``unreadable`` (see ``SessionManager.refresh_from_disk``); nothing more is sent while it stays so.
The event loop only sets the timer: no ``stat`` ever runs on it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from pi_session_server.format.jsvalue import ABSENT

from .workers import CancelToken

if TYPE_CHECKING:
    from .app import PiSessionServer
    from .registry import Slot

logger = logging.getLogger(__name__)
MISSING = "missing"
DID_CHANGE = "pi/didChange"


def stat_signature(path: str) -> Any:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return MISSING
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class FilePoller:
    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self._queue = server.pool.queue("file-poller")
        self._timer: asyncio.TimerHandle | None = None
        self._looking = False
        # other followers (documents read from disk): key -> (path, last signature, on_change)
        self._followed: dict[str, tuple[str, Any, Callable[[], None]]] = {}

    def start(self) -> None:
        """Called on the event loop once it runs."""
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def follow(self, key: str, path: str, on_change: Callable[[], None], signature: Any = None) -> None:
        """Call ``on_change()`` (on the poller's thread) whenever ``path`` changes."""
        self._followed[key] = (path, signature, on_change)

    def unfollow(self, key: str) -> None:
        self._followed.pop(key, None)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(self.server.options.watch_interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._looking:  # a look still running (a slow file system) is not doubled
            self._looking = True
            self._queue.submit(self._look)
        self._schedule(loop)

    def _look(self, _token: CancelToken) -> None:
        try:
            changed = [slot for slot in self.server.registry.slots() if self._changed(slot)]
            # Every session whose file changed has its refresh queued before any of them tells the
            # client: a request by uri sent on the first pi/didChange goes to the newest session held
            # on the file (Registry.find_by_path), which may be another than the one that told, and
            # must find that session's refresh ahead of it in its queue.
            queued = threading.Event()
            try:
                for slot in changed:
                    slot.queue.submit(partial(self._refresh, slot, queued), interruptible=False)
            finally:
                queued.set()
            for key, (path, last, on_change) in list(self._followed.items()):
                signature = stat_signature(path)
                if signature != last and key in self._followed:
                    self._followed[key] = (path, signature, on_change)
                    on_change()
        except Exception:  # one broken file must not stop the others
            logger.exception("looking at the followed files failed")
        finally:
            self._looking = False

    def _changed(self, slot: Slot) -> bool:
        """Whether the file of ``slot`` changed since it was last looked at (then a refresh is due,
        and marked as queued)."""
        path = slot.path
        if path is None or slot.manager is None or slot.closed or slot.refreshing:
            return False
        signature = stat_signature(path)
        if signature == slot.last_stat:
            return False
        # the first look at a new slot refreshes too: bytes appended between the open and now count
        slot.last_stat = signature
        slot.refreshing = True
        return True

    def _refresh(self, slot: Slot, queued: threading.Event, _token: CancelToken) -> None:
        """On the slot's queue: take in the file's change and tell the client (once the refreshes of
        the same look are all ``queued``)."""
        slot.refreshing = False
        manager = slot.manager
        if manager is None or slot.closed:
            return
        try:
            change = manager.refresh_from_disk()
        except Exception:
            logger.exception("following %s failed", slot.path)
            return
        self.server.note_slot(slot)
        if manager.awaiting_header:
            # the file was found without a session header and not yet held still long enough to be
            # told "unreadable": the next tick looks again, changed or not (an unchanged look is a stat)
            slot.last_stat = None
        if change.kind == "unchanged":
            return
        params: dict[str, Any] = {
            "session": slot.handle,
            "uri": self.server.uri_of(slot.path),
            "kind": change.kind,
            "newEntryIds": [None if i is ABSENT else i for i in change.new_entry_ids],
        }
        if change.leaf_id is not ABSENT:
            params["leafId"] = change.leaf_id
        queued.wait()  # (set right after the queueing: no I/O in between)
        self.server.notify(DID_CHANGE, params)
