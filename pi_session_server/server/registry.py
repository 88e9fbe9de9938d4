"""The sessions a sidecar holds open: handles, their work queues, and lookups by file.

A *slot* is one ``SessionManager`` behind a handle (``"s1"``, ``"s2"``, ...). Handles come from the
opening methods (``pi/open``, ``pi/create``, ...); a method addressed by ``uri`` uses the newest slot
bound to that file, or opens one on demand (an *implicit* slot, read-only until a write needs it).

Every job on a slot runs on the slot's :class:`~pi_session_server.server.workers.SerialQueue`, one
after another in arrival order, never on the event loop. Writes also hold the lock of the file
(:meth:`Registry.file_lock`), so two handles on one file never interleave their appends.

The registry itself is changed from the loop and from workers (an open adds its slot before it
answers); a lock keeps it consistent. Lookups compare paths as strings, without touching the disk.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from pi_session_server.format.jsvalue import ABSENT, strict_equal
from pi_session_server.session import SessionManager

from .errors import PiRpcError, unknown_session
from .locations import FileKeys, FileNames, file_names
from .workers import CancelToken, Job, SerialQueue, WorkerPool

T = TypeVar("T")


class Slot(msgspec.Struct, eq=False):
    handle: str
    queue: SerialQueue
    manager: SessionManager | None = None  # None until the open of an implicit slot ran
    implicit: bool = False  # opened on demand for a ``uri``
    read_only: bool = False  # opened to look at, without writing (see app.PiSessionServer.writable)
    path: str | None = None  # the file, as the last job left it (read on the loop without I/O)
    real_path: str | None = None  # ``path`` with symlinks resolved (by a job)
    keys: FileKeys = msgspec.field(default_factory=frozenset)  # what the file at ``path`` is (by a job)
    failure: PiRpcError | None = None  # the open of an implicit slot failed: every job answers this
    closed: bool = False  # closed by pi/close (set in order, by a job on the queue)
    last_stat: Any = None  # the file poller's last look at the file
    refreshing: bool = False  # a refresh job is queued (the poller queues one at a time)
    # the session's leaf where it is not the file's own (its last entry, as pi has it on opening):
    # an id after pi/branch, None after pi/resetLeaf; ABSENT otherwise. An editor's lenses follow it.
    branched_leaf: Any = ABSENT
    noted_leaf: Any = ABSENT  # the leaf branched_leaf was found for (it is found again when that moves)
    last_used: float = 0.0  # time.monotonic() of the last request addressing it (see idle_slots)

    def opened(self) -> SessionManager:
        """The manager, for a job on this slot's queue (the open ran before it)."""
        if self.failure is not None:
            raise self.failure
        if self.closed or self.manager is None:
            raise unknown_session(self.handle)
        return self.manager

    def note_file(self) -> None:
        """Remember where the manager's file is now and where its leaf is (on the worker, after a job)."""
        manager = self.manager
        if manager is None:
            return
        leaf = manager.get_leaf_id()
        if leaf is not self.noted_leaf:  # a moved leaf is another object (ids are strings from JSON)
            self.noted_leaf = leaf
            self.branched_leaf = _branched_leaf(manager, leaf)
        session_file = manager.get_session_file() if manager.is_persisted() else None
        # the file itself (pi's path may be relative to the session's working directory)
        path = (
            manager.environment.on_disk(session_file)
            if isinstance(session_file, str) and session_file
            else None
        )
        if path != self.path or (path is not None and self.real_path is None):
            self.path = path
            if path is None:
                self.real_path, self.keys = None, frozenset()
            else:
                names = file_names(path)
                self.real_path, self.keys = names.real_path, names.keys


def _close(slot: Slot) -> None:
    """Close the manager of ``slot`` (a job on its queue): the jobs after this one find it closed."""
    slot.closed = True
    if slot.manager is not None:
        slot.manager.close()


def _branched_leaf(manager: SessionManager, leaf: Any) -> Any:
    count = manager.entry_count()
    last = manager.entries_slice(count - 1, count) if count else []
    if leaf is ABSENT or (last and strict_equal(last[0].id, leaf)):
        return ABSENT
    return leaf


# How many handles closed by deletes are remembered (a few dozen bytes each).
REMEMBERED_DELETED_HANDLES = 4096


class Registry:
    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool
        self._slots: dict[str, Slot] = {}
        self._next = 1
        self._lock = threading.Lock()
        self._file_locks: dict[str, threading.Lock] = {}
        # handles a pi/delete closed, the latest first out last, each with the names of the file it
        # held: a pi/close of one answers closed, a write by ``uri`` to that file, gone, is refused
        self._closed_by_delete: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._deleted_names: dict[str, str] = {}  # a name of such a file: the handle closed on it

    def add(
        self,
        manager: SessionManager | None,
        *,
        implicit: bool = False,
        path: str | None = None,
        keys: FileKeys | None = None,
    ) -> Slot:
        """A new slot (from any thread); ``path``: the file an implicit slot is about to open,
        ``keys``: what that file is, where a worker looked (the requests that spell it otherwise
        find the slot before its open ran)."""
        with self._lock:
            handle = f"s{self._next}"
            self._next += 1
            slot = Slot(
                handle,
                self._pool.queue(handle),
                manager,
                implicit=implicit,
                path=path,
                keys=keys or frozenset(),
            )
            self._slots[handle] = slot
        if manager is not None:
            slot.note_file()
        return slot

    def get(self, handle: str) -> Slot:
        slot = self._slots.get(handle)
        if slot is None:
            raise unknown_session(handle)
        return slot

    def discard(self, slot: Slot) -> None:
        """Forget ``slot``: new requests no longer find it (the jobs already queued still run)."""
        with self._lock:
            if self._slots.get(slot.handle) is slot:
                del self._slots[slot.handle]

    def discard_closed_by_delete(self, slot: Slot) -> None:
        """:meth:`discard` a slot a pi/delete closed, its handle and the names of its file remembered
        (see :meth:`closed_by_delete`, :meth:`closed_on_deleted_file`)."""
        # (names, not a device and inode: those may be given to another file once this one is gone)
        names = frozenset(name for name in (slot.path, slot.real_path, *slot.keys) if isinstance(name, str))
        with self._lock:
            self._closed_by_delete[slot.handle] = names
            self._deleted_names.update(dict.fromkeys(names, slot.handle))
            while len(self._closed_by_delete) > REMEMBERED_DELETED_HANDLES:
                handle, forgotten = self._closed_by_delete.popitem(last=False)
                for name in forgotten:
                    if self._deleted_names.get(name) == handle:
                        del self._deleted_names[name]
        self.discard(slot)

    def closed_by_delete(self, handle: str) -> bool:
        """Whether a pi/delete closed the session ``handle`` (and it was let go since). A pi/close
        sent before the delete's reply may be read after it: it still answers closed."""
        with self._lock:
            return handle in self._closed_by_delete

    def closed_on_deleted_file(self, path: str, names: FileNames) -> str | None:
        """The handle of the latest session a pi/delete closed on the file at ``path`` (``names``:
        what a worker found it called), if it is remembered: a write by ``uri`` to that file sent
        before the delete's answer may be read after it, when no session holds the file any more
        (see ``app.PiSessionServer._open_for_uri``)."""
        wanted = (path, names.real_path, names.entry)
        with self._lock:
            handles = [handle for name in wanted if (handle := self._deleted_names.get(name)) is not None]
            return max(handles, key=list(self._closed_by_delete).index) if handles else None

    def close(self, slot: Slot) -> Job[None]:
        """Forget ``slot`` at once; its manager is closed (its files released) once the jobs queued
        before this are done."""
        self.discard(slot)

        def close(_token: CancelToken) -> None:
            _close(slot)

        return slot.queue.submit(close, interruptible=False)

    def close_if(self, slot: Slot, check: Callable[[], T]) -> Job[T]:
        """Close ``slot`` once the jobs queued before this are done, if ``check()`` (run then, on
        the worker) raises nothing; the job's value is what it returned, or its failure what it
        raised (the slot then stays open). The jobs queued after this one run on a closed slot:
        they answer that the session is unknown. A slot closed so stays found (requests by ``uri``
        meet it closed, instead of opening the file again) until :meth:`discard`."""

        def close(_token: CancelToken) -> T:
            value = check()
            _close(slot)
            return value

        return slot.queue.submit(close, interruptible=False)

    def slots(self) -> list[Slot]:
        with self._lock:
            return list(self._slots.values())

    def find_by_path(self, path: str) -> Slot | None:
        """The newest slot bound to ``path`` (an absolute path; as given or with symlinks resolved)."""
        for slot in reversed(self.slots()):
            if slot.failure is None and path in (slot.path, slot.real_path):
                return slot
        return None

    def find_by_file(self, keys: FileKeys) -> Slot | None:
        """The newest slot on the file ``keys`` (:func:`~.locations.file_keys`, from a worker) say
        what it is, however it is spelled."""
        for slot in reversed(self.slots()):
            if slot.failure is None and slot.keys & keys:
                return slot
        return None

    def held_leaf(self, path: str, keys: FileKeys = frozenset()) -> Any:
        """Where the newest session held on ``path`` (or on the file ``keys`` say it is, however
        spelled) continues if that is not the file's last entry (``Slot.branched_leaf``), else
        ABSENT. No I/O: for any thread."""
        slot = self.find_by_path(path) or self.find_by_file(keys)
        return ABSENT if slot is None else slot.branched_leaf

    def slots_for_path(self, *paths: str) -> list[Slot]:
        """The slots bound to one of ``paths`` (absolute; as given or with symlinks resolved)."""
        return [slot for slot in self.slots() if slot.path in paths or slot.real_path in paths]

    def file_lock(self, real_path: str) -> threading.Lock:
        """The in-process write lock of a file (keyed by its path with symlinks resolved)."""
        lock = self._file_locks.get(real_path)
        if lock is not None:
            return lock
        with self._lock:
            return self._file_locks.setdefault(real_path, threading.Lock())
