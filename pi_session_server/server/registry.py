"""The sessions a sidecar holds open: handles, per-session and per-file locks, uri lookups.

A *slot* is one ``SessionManager`` behind a handle (``"s1"``, ``"s2"``, ...). Handles come from the
opening methods (``pi/open``, ``pi/create``, ...); a method addressed by ``uri`` uses the newest slot
bound to that file, or opens one on demand (an *implicit* slot).

Locks: every operation on a slot holds the slot's lock, so requests on one session run one after
another in arrival order (``asyncio.Lock`` is FIFO and the handlers take it before their first
suspension point). Writes also hold the lock of the file path, so two handles on one file never
interleave their appends.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

from pi_session_server.format.jsvalue import ABSENT

from .errors import unknown_session


@dataclass(eq=False)
class Slot:
    handle: str
    manager: Any
    implicit: bool = False  # opened on demand for a ``uri``
    view_path: str | None = None  # loaded without writing (a look must never write the file)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_stat: Any = None  # the watcher's last (ino, size, mtime_ns) of the file, or "missing"
    closed: bool = False

    @property
    def path(self) -> str | None:
        """The file this slot follows (None for an in-memory session without a file)."""
        if self.view_path is not None:
            return self.view_path
        if not self.manager.is_persisted():
            return None
        session_file = self.manager.get_session_file()
        return None if session_file is ABSENT or not session_file else str(session_file)


class Registry:
    def __init__(self) -> None:
        self._slots: dict[str, Slot] = {}
        self._next = 1
        self._path_locks: dict[str, asyncio.Lock] = {}

    def add(self, manager: Any, *, implicit: bool = False, view_path: str | None = None) -> Slot:
        handle = f"s{self._next}"
        self._next += 1
        slot = Slot(handle, manager, implicit=implicit, view_path=view_path)
        self._slots[handle] = slot
        return slot

    def get(self, handle: str) -> Slot:
        slot = self._slots.get(handle)
        if slot is None:
            raise unknown_session(handle)
        return slot

    def remove(self, handle: str) -> Slot:
        slot = self.get(handle)
        del self._slots[handle]
        slot.closed = True
        close = getattr(slot.manager, "close", None)
        if callable(close):
            close()
        return slot

    def slots(self) -> list[Slot]:
        return list(self._slots.values())

    def find_by_path(self, path: str) -> Slot | None:
        """The newest slot bound to ``path`` (compared after resolving symlinks)."""
        wanted = _same_file_key(path)
        for slot in reversed(self._slots.values()):
            slot_path = slot.path
            if slot_path is not None and (slot_path == path or _same_file_key(slot_path) == wanted):
                return slot
        return None

    def slots_for_path(self, path: str) -> list[Slot]:
        wanted = _same_file_key(path)
        return [s for s in self._slots.values() if s.path is not None and _same_file_key(s.path) == wanted]

    def path_lock(self, path: str | None, slot: Slot) -> asyncio.Lock:
        """The write lock of a file (of the slot itself when it has no file)."""
        key = _same_file_key(path) if path else f"handle:{slot.handle}"
        lock = self._path_locks.get(key)
        if lock is None:
            lock = self._path_locks[key] = asyncio.Lock()
        return lock


_real_paths: dict[str, str] = {}


def _same_file_key(path: str) -> str:
    """``realpath`` of a path, memoized (the lookup runs on every write)."""
    key = _real_paths.get(path)
    if key is None:
        if len(_real_paths) > 10_000:
            _real_paths.clear()
        key = _real_paths[path] = os.path.realpath(path)
    return key
