"""One poller for every file the server follows: held sessions (pi appends to them) and documents
the language features read from disk.

Every ``watch_interval`` seconds (150 ms by default: well inside the 500 ms promise) one job on the
poller's own queue looks at each followed file (``stat``: inode, size, mtime). A file that changed
is handed to its owner's queue: a session takes the change in with ``refresh_from_disk()`` (only
the new bytes are read; a truncated or replaced file is reloaded) and the client gets
``pi/didChange``. Our own appends change the file too; each is told by the request that wrote it
(``appended``, before its answer, with the whole lines another program had just appended before
it, if any), so the refresh then finds nothing new and nothing more is sent. A file found without
a session header is told once as ``rewriting``, and looked at on every tick until it either gets a header (``reloaded``) or holds still long enough to be told
``unreadable`` (see ``SessionManager.refresh_from_disk``); nothing more is sent while it stays so.
The event loop only sets the timer: no ``stat`` ever runs on it.

A stat that hangs (a stuck network mount, a FUSE file system that stopped answering) holds one
file, not the look: a look stats each file in turn on its own thread, and when one stat has run
for ``STAT_BOUND_SECONDS`` the next tick leaves that thread to it and starts a new look, which
goes on without the file. The abandoned thread keeps the file's answer when it comes, and the
next look takes it in (the file is refreshed then, if it changed); until then no other stat of
that file is made, so a file that hangs holds one thread, not one per tick. The looks run on a
small pool of their own (``LOOK_THREADS``): files stuck on a dead mount by the dozen never take
the threads the sessions' requests run on. Once half of them are held, a file last seen on a device
where a stat hangs is not looked at until that stat answers (a dead mount hangs every file on it):
the other files go on being looked at, whatever the number of files stuck on a few mounts. A file
never seen yet (a session just opened or created, whose file is not written yet) has no device:
it is placed by its path, on the mount the system's mount table says holds it, so that new files
flooding in on a dead mount are held back the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from pi_session_server.format.jsvalue import ABSENT

from .workers import CancelToken, WorkerPool

if TYPE_CHECKING:
    from pi_session_server.session import FileChange

    from .app import PiSessionServer
    from .registry import Slot

logger = logging.getLogger(__name__)
MISSING = "missing"
DID_CHANGE = "pi/didChange"
#: how long a look waits for one file's stat before a new look goes on without that file
STAT_BOUND_SECONDS = 0.25
#: the threads of the looks: the running one and those left to a stat that hangs
LOOK_THREADS = 8
#: the system's mount table, read by a look, is read again after this many seconds
MOUNTS_FRESH_SECONDS = 10.0
#: where the mount table is (Linux); elsewhere there is none, and a file never seen has no place
MOUNT_TABLE = "/proc/self/mounts"


def stat_signature(path: str) -> Any:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return MISSING
    return signature_of(st)


def signature_of(st: os.stat_result) -> Any:
    """What a look at a followed file compares (see :func:`stat_signature`): the change time too,
    which a rewrite in place that keeps the size and sets the modification time back changes (as
    the session's refresh compares it)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _Look:
    """One pass over the followed files, on one thread: the stat it waits for now, if any, as
    (path, the device it was last seen on, time.monotonic() when it began, claim). The claim holds
    one item: whichever pops it, the look once the stat answered or a tick that leaves the look
    behind, decides who the answer is for (``list.pop`` is atomic: no lock taken per file)."""

    __slots__ = ("stat",)

    def __init__(self) -> None:
        self.stat: tuple[str, Any, float, list[None]] | None = None


class _LateStat:
    """The stat of a file a look went on without (last seen on ``device``): its thread sets
    ``signature`` when it answers."""

    __slots__ = ("device", "signature")

    def __init__(self, device: Any) -> None:
        self.device = device
        self.signature: Any = _UNANSWERED


_UNANSWERED = object()


class FilePoller:
    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self._pool = WorkerPool(LOOK_THREADS, name="pi-poller")
        self._queue = self._pool.queue("file-poller")
        self._timer: asyncio.TimerHandle | None = None
        self._lock = threading.Lock()  # the looks' bookkeeping below (held for no I/O)
        self._look_running: _Look | None = None
        self._late: dict[str, _LateStat] = {}  # path -> a stat some abandoned look still waits for
        # other followers (documents read from disk): key -> (path, last signature, on_change)
        self._followed: dict[str, tuple[str, Any, Callable[[], None]]] = {}
        # (time.monotonic() when read, the mount points): read and used by the looks only
        self._mounts: tuple[float, list[str]] | None = None

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

    def wrote(self, slot: Slot) -> None:
        """The session of ``slot`` wrote its file (on its worker): the next look refreshes it, whatever
        it finds. A file the session created since the last look (pi writes nothing until the first
        message) and another program deleted before the next one is missing to both looks: else
        the delete would never be told."""
        slot.last_stat = None

    def unfollow(self, key: str) -> None:
        self._followed.pop(key, None)

    def is_following(self, key: str) -> bool:
        """Whether the follower ``key`` is followed (see :meth:`follow`)."""
        return key in self._followed

    @property
    def follows(self) -> bool:
        """Whether the files are followed at all (a watch interval of 0: not; a session then keeps
        what it read, as pi's does)."""
        return self.server.options.watch_interval > 0

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.follows:
            self._timer = loop.call_later(self.server.options.watch_interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.follows:  # (the client's initializationOptions turned following off)
            return
        look = self._next_look()
        if look is not None:
            self._queue.submit(partial(self._look, look))
        self._schedule(loop)

    def _next_look(self) -> _Look | None:
        """A look to start, or None while the last one runs (a slow file system: it is not
        doubled). One stuck at a stat past the bound is left to it, on its thread: the new look
        runs on a queue of its own."""
        with self._lock:
            running = self._look_running
            if running is not None:
                stat = running.stat
                if stat is None or time.monotonic() - stat[2] < STAT_BOUND_SECONDS:
                    return None
                path, device, _, claim = stat
                try:
                    claim.pop()
                except IndexError:  # the stat answered just now: the look goes on
                    return None
                self._late[path] = _LateStat(device)
                self._queue = self._pool.queue("file-poller")
            self._look_running = look = _Look()
            return look

    def _look(self, look: _Look, _token: CancelToken) -> None:
        try:
            slots = [(slot, path) for slot in self.server.registry.slots() if (path := _followed_path(slot))]
            followed = list(self._followed.items())
            # each file is looked at once, however many sessions and documents follow it: by path,
            # its last signature
            paths = {path: last for _, (path, last, _) in followed} | {
                path: slot.last_stat for slot, path in slots
            }
            signatures = self._signatures(look, paths)
            if signatures is None:
                return  # a newer look went on without this one
            changed = [
                slot for slot, path in slots if self._changed(slot, signatures.get(path, slot.last_stat))
            ]
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
            for key, (path, last, on_change) in followed:
                signature = signatures.get(path, last)  # (not looked at: its stat is stuck)
                if signature != last and key in self._followed:
                    logger.debug("%s changed: %s, was %s", path, signature, last)
                    self._followed[key] = (path, signature, on_change)
                    on_change()
        except Exception:  # one broken file must not stop the others
            logger.exception("looking at the followed files failed")
        finally:
            with self._lock:
                if self._look_running is look:
                    self._look_running = None

    def _signatures(self, look: _Look, paths: dict[str, Any]) -> dict[str, Any] | None:
        """Each file's signature, by path (given with its last one): a stat made here, or the late
        answer of one a former look went on without; none for a file whose stat still hangs, or
        (the look threads running short) that was last seen on a device where one hangs. None if
        this look was itself left stuck at a stat meanwhile (the answer is kept for the next look)."""
        signatures: dict[str, Any] = {}
        stuck_devices = self._take_late_answers(paths, signatures) if self._late else set()
        for path, last in paths.items():
            device = _device(last)
            if device is None:
                device = self._mount_of(path)
            if device in stuck_devices:
                continue  # as if its stat hung: its device is stuck
            claim: list[None] = [None]
            look.stat = (path, device, time.monotonic(), claim)
            try:
                signature = stat_signature(path)
            except Exception:  # not a file system's answer (those are signatures): looked at again next time
                logger.exception("looking at %s failed", path)
                signature = _UNANSWERED
            try:
                claim.pop()
            except IndexError:  # left behind meanwhile (the tick holds the lock until it noted that)
                with self._lock:
                    if signature is _UNANSWERED:
                        del self._late[path]  # no answer will come: the next look stats it again
                    else:
                        self._late[path].signature = signature
                return None
            if signature is not _UNANSWERED:
                signatures[path] = signature
        look.stat = None
        return signatures

    def _mount_of(self, path: str) -> Any:
        """Where a file never seen is taken to be (on the look's thread): the mount holding
        ``path`` as the system's mount table says (read here, not stat'ed: a stat of a dead mount
        hangs), or None."""
        now = time.monotonic()
        if self._mounts is None or now - self._mounts[0] > MOUNTS_FRESH_SECONDS:
            self._mounts = (now, mount_points())
        found = None
        for mount in self._mounts[1]:
            inside = path == mount or path.startswith(mount if mount.endswith("/") else mount + "/")
            if inside and (found is None or len(mount) > len(found)):
                found = mount
        return None if found is None else ("mount", found)

    def _take_late_answers(self, paths: dict[str, Any], signatures: dict[str, Any]) -> set[Any]:
        """Into ``signatures``, the late answers of files a former look went on without; out of
        ``paths``, the files whose stat still hangs. The devices not to look at now: those where a
        stat hangs, once they hold half the look threads."""
        stuck_devices: set[Any] = set()
        hanging = 0
        with self._lock:
            late = self._late
            for path, stat in list(late.items()):
                if stat.signature is _UNANSWERED:
                    paths.pop(path, None)  # its thread still waits: no second stat of it
                    stuck_devices.add(stat.device)
                    hanging += 1
                else:
                    del late[path]
                    if path in paths:
                        signatures[path] = stat.signature
                        del paths[path]
        if hanging < LOOK_THREADS // 2:
            return set()  # threads enough: each file holds at most its own
        stuck_devices.discard(None)
        return stuck_devices

    def _changed(self, slot: Slot, signature: Any) -> bool:
        """Whether the file of ``slot`` changed since it was last looked at (then a refresh is due,
        and marked as queued). An unanswered stat passes the slot's last signature: unchanged."""
        if signature == slot.last_stat:
            return False
        logger.debug("%s (%s) changed: %s, was %s", slot.path, slot.handle, signature, slot.last_stat)
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
        logger.debug(
            "%s (%s) refreshed: %s, %d new entries",
            slot.path,
            slot.handle,
            change.kind,
            len(change.new_entry_ids),
        )
        if slot.last_stat == MISSING and change.kind != "deleted" and _exists(slot.path):
            # the look that found it missing had its stat made before the session wrote it (see
            # wrote): looked at again, not taken as missing until it is
            slot.last_stat = None
        if manager.awaiting_header:
            # the file was found without a session header and not yet held still long enough to be
            # told "unreadable": the next tick looks again, changed or not (an unchanged look is a stat)
            slot.last_stat = None
        if change.kind == "unchanged":
            return
        params = did_change_params(self.server, slot, change)
        queued.wait()  # (set right after the queueing: no I/O in between)
        self.server.notify(DID_CHANGE, params)


def did_change_params(server: PiSessionServer, slot: Slot, change: FileChange) -> dict[str, Any]:
    """The ``pi/didChange`` that tells the client what a refresh of the session of ``slot`` found."""
    params: dict[str, Any] = {
        "session": slot.handle,
        "uri": server.uri_of(slot.path),
        "kind": change.kind,
        "newEntryIds": [None if i is ABSENT else i for i in change.new_entry_ids],
    }
    if change.leaf_id is not ABSENT:
        params["leafId"] = change.leaf_id
    return params


def mount_points() -> list[str]:
    """The mount points of the system (none where there is no mount table to read)."""
    try:
        with open(MOUNT_TABLE, encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return []
    # (the table writes a space, a tab, a newline and a backslash in a path as octal escapes)
    return [
        re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        for fields in (line.split() for line in lines)
        if len(fields) > 1
    ]


def _exists(path: str | None) -> bool:
    return path is not None and os.path.exists(path)


def _device(signature: Any) -> Any:
    """The device of a file's signature (None if it was missing or never looked at)."""
    return signature[0] if isinstance(signature, tuple) else None


def _followed_path(slot: Slot) -> str | None:
    """The file of ``slot`` if the poller looks at it now (not while a refresh of it is queued)."""
    if slot.manager is None or slot.closed or slot.refreshing:
        return None
    return slot.path
