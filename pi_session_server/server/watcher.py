"""Following held files: another process (pi itself) appends to a session we hold.

A task on the server's event loop stats every held file every ``watch_interval`` seconds (150 ms by
default: well inside the 500 ms promise). When the file's (inode, size, mtime) changed, the session
takes in the change with ``refresh_from_disk()`` (only the new bytes are read; a truncated or
replaced file is reloaded) and the client gets ``pi/didChange``. Our own appends change the stat
too; ``refresh_from_disk`` then finds nothing new and nothing is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

from pi_session_server.format.jsvalue import ABSENT, index_key

if TYPE_CHECKING:
    from .app import PiSessionServer
    from .registry import Slot

logger = logging.getLogger(__name__)
MISSING = "missing"


def stat_signature(path: str) -> Any:
    try:
        st = os.stat(path)
    except OSError:
        return MISSING
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Watcher:
    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.server.options.watch_interval)
            for slot in self.server.registry.slots():
                try:
                    await self.check(slot)
                except asyncio.CancelledError:
                    raise
                except Exception:  # one broken file must not stop the others
                    logger.exception("watching %s failed", slot.path)

    async def check(self, slot: Slot) -> None:
        path = slot.path
        if path is None or slot.closed:
            return
        signature = stat_signature(path)
        if signature == slot.last_stat:
            return
        # the first look at a new slot refreshes too: bytes appended between the open and now count
        slot.last_stat = signature
        async with slot.lock:
            if slot.closed:
                return
            change = self.refresh(slot)
        if change is not None:
            self.server.protocol.notify("pi/didChange", change)

    def refresh(self, slot: Slot) -> dict[str, Any] | None:
        """Take in the file's change; the ``pi/didChange`` params, or None when nothing changed."""
        if slot.view_path is not None:
            return self._refresh_view(slot)
        change = slot.manager.refresh_from_disk()
        if change.kind == "unchanged":
            return None
        return self._params(slot, change.kind, change.new_entry_ids, change.leaf_id)

    def _refresh_view(self, slot: Slot) -> dict[str, Any] | None:
        from .views import open_view

        path = slot.view_path
        assert path is not None
        if stat_signature(path) == MISSING:
            return self._params(slot, "deleted", [], slot.manager.get_leaf_id())
        before = {index_key(e.id) for e in slot.manager.iter_entries()}
        manager, view_path = open_view(path)
        slot.manager, slot.view_path = manager, view_path
        new_ids = [e.id for e in manager.iter_entries() if index_key(e.id) not in before]
        return self._params(slot, "reloaded", new_ids, manager.get_leaf_id())

    def _params(self, slot: Slot, kind: str, new_ids: list[Any], leaf_id: Any) -> dict[str, Any]:
        path = slot.path
        params: dict[str, Any] = {
            "session": slot.handle,
            "uri": self.server.uri_of(path),
            "kind": kind,
            "newEntryIds": [None if i is ABSENT else i for i in new_ids],
        }
        if leaf_id is not ABSENT:
            params["leafId"] = leaf_id
        return params


async def check_now(server: PiSessionServer) -> None:
    """One immediate round (used after our own writes to other handles of the same file)."""
    watcher = server.watcher
    if watcher is None:
        return
    for slot in server.registry.slots():
        with contextlib.suppress(Exception):
            await watcher.check(slot)
