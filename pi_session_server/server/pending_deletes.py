"""The files pi/delete requests are deleting, and the requests sent after one that wait for it.

pi does one thing at a time: a request sent after a delete finds the file gone. The server answers
requests in parallel, so a request that would open or read a file (by ``uri`` or path), or list the
files of a directory, and that arrives while a delete of that file is pending, starts once the
delete answered (:meth:`PendingDeletes.ordered`): it never reads the file being deleted, and answers
as for a file that is not there.

A file is known by what it is, not by how a request spells it (a symlink, a symlinked directory,
``..``): the delete and each request on a file while one is pending have their paths looked at by
a worker (:func:`file_keys`: the path resolved, with symlinks resolved, the directory entry it
names, and the device and inode of the file where there is one), and a request waits for the
deletes whose keys it shares. Each look runs on a worker of its own: a stat that hangs (a stuck
network mount) holds the request whose look it is and the later ones on the same path
(:class:`Waiting`), never those on other files. Until a worker has looked at what a delete
deletes (and resolved its path: ``~`` with ``$HOME`` unset is the home of the user's password
entry), it may be of any file: every request that names a file or a session waits for that look,
for at most ``LOOK_LIMIT_SECONDS`` counted from the look's start on its worker (:class:`LookLimit`:
a look that waited for a thread, all of them busy, has not hung); a delete not looked at by then
answers that the file system did not answer (:func:`look_timed_out`), deleting nothing. A request
by ``uri`` that no session holds by that path looks at its file on a worker
(:meth:`PendingDeletes.looked_first`: a session may hold it through another spelling), and the
requests on a file or a session sent after it wait for that look in the same way, for the same
bounded time; past it, the request orders itself by its file from that look once it answers (the
file is not looked at again: another thread would hang on the same stat).

Everything else here runs on the event loop. A request waits on the futures of the deletes pending
as it arrives and starts from their done callbacks, which the loop runs before it reads the next
requests: the requests sent after the delete's answer never pass those that waited for it. The
requests on a session, and those on a file, start in the order they arrived: each takes its place
as it arrives (:meth:`PendingDeletes.arrived`), and waits for those before it on the same session
(by handle, or the session a ``uri`` names, once known), or that name its file by the same path,
or whose looks found the same file. A request whose look has not answered is not waited for by the
requests on files of other names (it cannot be known to be of their file: a look that hangs would
hold them all).
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import os
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from pi_session_server.errors import PiSessionError
from pi_session_server.session.environment import Environment

from .errors import PiRpcError, from_os_error
from .locations import FileKeys, file_keys, resolved_on_the_loop
from .workers import CancelToken, Job, SerialQueue, WorkerPool, on_loop

#: how long the requests behind a look at a file (a delete's, a ``uri``'s) wait for it (a stat may hang)
LOOK_LIMIT_SECONDS = 2.0

#: ``paths`` of a request that reads every file of some directories (a listing): it waits for every delete
EVERY_FILE = None


def look_timed_out(path: str) -> PiRpcError:
    """The reply of a pi/delete whose file a worker could not look at within ``LOOK_LIMIT_SECONDS``
    (a stat on a stuck network mount): FsError ETIMEDOUT, as Node reports a network file system
    that gave up; nothing was deleted or closed."""
    return from_os_error(OSError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT)), "stat", path)


def deleted_as(path: str, env: Environment) -> str | None:
    """``path`` as pi/delete resolves it, where that is done on the loop; None where it is not (a
    request on it then waits for every delete) or cannot be (the request's job answers why)."""
    try:
        return resolved_on_the_loop(path, env)
    except (PiSessionError, OSError):
        return None


class PendingDelete(msgspec.Struct, eq=False):
    """A pi/delete from its arrival until it answered (:meth:`PendingDeletes.end`)."""

    done: asyncio.Future[None]  # answered or cancelled: those waiting for it go on
    known: asyncio.Future[None]  # its file looked at (and its sessions' closes queued)
    keys: FileKeys = msgspec.field(default_factory=frozenset)  # what its file is, once known


class Waiting(msgspec.Struct, eq=False):
    """A request on files or a session (:meth:`PendingDeletes.ordered`) from its arrival until it
    started."""

    started: asyncio.Future[None]  # it started (or was cancelled): those behind it on its file go on
    session: str | None = None  # the handle of the session it is on, once known
    every_session: bool = False  # on every session (pi/sessions): after every request before it
    paths: frozenset[str] = frozenset()  # its files, resolved as the request arrived
    keys: FileKeys | None = None  # what its files are, once a worker looked

    def goes_after(self, other: Waiting) -> bool:
        """Known to be on a session or a file of ``other``: by a handle, a path, or by what the
        looks found."""
        if self.every_session or (self.session is not None and self.session == other.session):
            return True
        if self.paths & other.paths:
            return True
        return self.keys is not None and other.keys is not None and bool(self.keys & other.keys)


class LookLimit:
    """The bound of a look at a file: armed as the look starts on its worker (a look that waited
    for a thread, all of them busy, has not hung), ``passed()`` on the loop once the look has run
    for ``LOOK_LIMIT_SECONDS`` without answering (unless disarmed first)."""

    def __init__(self, passed: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._passed = passed
        self._timer: asyncio.TimerHandle | None = None
        self._disarmed = False

    def arm_from_worker(self) -> None:
        self._loop.call_soon_threadsafe(self._arm)

    def disarm(self) -> None:
        """The look answered (or what waited for it no longer does)."""
        self._disarmed = True
        if self._timer is not None:
            self._timer.cancel()

    def _arm(self) -> None:
        if not self._disarmed and self._timer is None:
            self._timer = self._loop.call_later(LOOK_LIMIT_SECONDS, self._pass)

    def _pass(self) -> None:
        if not self._disarmed:
            self._disarmed = True
            self._passed()


class PendingDeletes:
    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool  # each look at a file runs on a queue of its own
        self._deletes: list[PendingDelete] = []
        self._waiting: list[Waiting] = []  # requests on files or sessions not started yet, in arrival order

    def __bool__(self) -> bool:
        return bool(self._deletes or self._waiting)

    def arrived(self, session: str | None = None) -> Waiting:
        """A request on a session (``session``: its handle, where known as it arrives) in its place
        among those waiting: the requests on its session or its files sent after it start after
        it. Hand it to :meth:`ordered` (through :meth:`looked_first` for one that looks first)."""
        waiting = Waiting(asyncio.get_running_loop().create_future(), session)
        self._waiting.append(waiting)
        return waiting

    def ordered(
        self,
        paths: Iterable[str | None] | None,
        start: Callable[[], Any],
        *,
        session: str | None = None,
        every_session: bool = False,
        waiting: Waiting | None = None,
        looked: tuple[str, asyncio.Future[Any]] | None = None,
    ) -> Any:
        """``start()`` (what a handler returns) now, or a future of its outcome started once the
        deletes of the files at ``paths`` (resolved; None for one that could not be resolved on
        the loop, which may be any file) pending now answered; ``EVERY_FILE``: once all did. A
        request on no file (``paths`` empty: on a session) waits until every pending delete's
        file is known, and its sessions closed. It starts after the requests before it on its
        files, and on its session (``session``: its handle; or its place, ``waiting``, taken as it
        arrived: :meth:`arrived`); ``every_session``: after every request before it. ``looked``: a path of ``paths`` and the future of a look at it
        already made (not made again)."""
        if not self and waiting is None:
            return start()
        wanted = [None] if paths is EVERY_FILE else list(paths)
        resolved = frozenset(path for path in wanted if path is not None)
        every_file = None in wanted
        loop = asyncio.get_running_loop()
        reply = loop.create_future()
        if waiting is None:
            waiting = self.arrived(session)
            waiting.every_session = every_session
        before = list(self._deletes)  # (not those sent after this request)
        ahead = self._waiting[: self._waiting.index(waiting)] if waiting in self._waiting else []
        waiting.paths = resolved
        reply.add_done_callback(lambda _reply: self._started(waiting))  # (cancelled: the others go on)

        def begin() -> Any:
            # after the requests on its session or its file that arrived before it, as now known
            # (a look that answered since may have found this file)
            first = [other.started for other in ahead if waiting.goes_after(other)]
            if any(not started.done() for started in first):
                return self.after(first, begin)
            self._started(waiting)
            return start()

        def known(keys: FileKeys | None) -> None:
            if reply.done():  # cancelled meanwhile
                return
            waiting.keys = keys
            unknown = [delete.known for delete in before if not delete.known.done()]
            if resolved and not every_file and unknown and keys is not None:
                # a delete sent before whose file is not known yet: it may be of these files
                self.after(unknown, lambda: known(keys))
                return
            waits = _waits(before, None if every_file else resolved, keys)
            settle(reply, lambda: self.after(waits, begin))

        if every_file or not resolved or not (before or ahead):
            known(None)  # (nothing to compare its files with)
        else:
            self._look_at(resolved, looked, known)
        return reply

    def _look_at(
        self,
        paths: frozenset[str],
        looked: tuple[str, asyncio.Future[Any]] | None,
        then: Callable[[FileKeys | None], None],
    ) -> None:
        """``then(what the files at paths are)``, None if a look failed: each a look on a worker,
        but the one of ``looked`` (a path and its look, made already)."""
        answers: list[asyncio.Future[Any]] = []
        if looked is not None and looked[0] in paths:
            answers.append(looked[1])
            paths = paths - {looked[0]}
        if paths:
            answers.append(self.look(lambda: frozenset().union(*map(file_keys, paths))))
        gathered = asyncio.gather(*answers)

        def found(future: asyncio.Future[list[Any]]) -> None:
            values = future.result()
            then(None if any(value is None for value in values) else frozenset().union(*values))

        gathered.add_done_callback(found)

    def _started(self, waiting: Waiting) -> None:
        if not waiting.started.done():
            waiting.started.set_result(None)
        if waiting in self._waiting:
            self._waiting.remove(waiting)

    def looked_first(
        self, work: Callable[[], Any], start: Callable[[Any, asyncio.Future[Any]], Any], waiting: Waiting
    ) -> asyncio.Future[Any]:
        """A future of the outcome of ``start(work(), the look's future)``, ``work`` done on a
        worker: a request (in its place, ``waiting``) that must look at a file before it knows
        which session it addresses. The requests on a file or a session sent after it wait for
        that look, as for a delete's (none passes it); it deletes nothing. A look that fails, or
        has run for ``LOOK_LIMIT_SECONDS`` without answering (a stat on a stuck mount), starts
        ``start(None, ...)``: those behind it wait no longer (the look's future answers once the
        look does)."""
        loop = asyncio.get_running_loop()
        looking = self.begin()
        reply: asyncio.Future[Any] = loop.create_future()
        reply.add_done_callback(lambda _reply: self.end(looking))  # (cancelled: the others go on)
        reply.add_done_callback(lambda _reply: self._started(waiting))

        def go_on(value: Any) -> None:
            if looking.known.done():  # (the limit passed first, or the request was cancelled)
                return
            limit.disarm()
            # those waiting for the look go on from callbacks the loop runs after this one
            self.end(looking)
            if not reply.done():
                settle(reply, lambda: start(value, answer))

        limit = LookLimit(lambda: go_on(None))
        answer = self.look(work, limit)
        answer.add_done_callback(lambda _answer: go_on(_answer.result()))
        return reply

    def look(self, work: Callable[[], Any], limit: LookLimit | None = None) -> asyncio.Future[Any]:
        """A future of ``work()``, run on a worker queue of its own (a look that hangs holds no
        other); None for a failure, which the caller's own job meets again. ``limit`` is armed as
        the work starts, disarmed as it answers."""
        loop = asyncio.get_running_loop()
        queue: SerialQueue = self._pool.queue("a look at a file")

        def run(_token: CancelToken) -> Any:
            if limit is not None:
                limit.arm_from_worker()
            return work()

        job = queue.submit(run, interruptible=False)
        answer: asyncio.Future[Any] = loop.create_future()

        def finished(future: asyncio.Future[Any]) -> None:
            if limit is not None:
                limit.disarm()
            failed = future.cancelled() or future.exception() is not None
            answer.set_result(None if failed else future.result())

        on_loop(job, loop).add_done_callback(finished)
        return answer

    def after(self, waits: list[asyncio.Future[None]], start: Callable[[], Any]) -> Any:
        """``start()`` now if ``waits`` are done, else a future of its outcome, started once they are
        (not at all if the future is cancelled first: the request was)."""
        waits = [wait for wait in waits if not wait.done()]
        if not waits:
            return start()
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        left = len(waits)

        def one_done(_wait: asyncio.Future[None]) -> None:
            nonlocal left
            left -= 1
            if not left and not reply.done():
                settle(reply, start)

        for wait in waits:
            wait.add_done_callback(one_done)
        return reply

    def looks_unanswered(self) -> list[asyncio.Future[None]]:
        """What the deletes and the looks of requests at a file pending now wait to know (see
        :meth:`looked_first`): once these are done, every request that arrived until now knows
        which session it addresses."""
        return [delete.known for delete in self._deletes if not delete.known.done()]

    def begin(self) -> PendingDelete:
        """A delete arrived: until :meth:`known`, every request on a file or a session waits for it;
        :meth:`end` it once it answered."""
        loop = asyncio.get_running_loop()
        delete = PendingDelete(loop.create_future(), loop.create_future())
        self._deletes.append(delete)
        return delete

    def known(self, delete: PendingDelete, keys: FileKeys) -> list[asyncio.Future[None]]:
        """What the file of ``delete`` is: the requests on other files go on. The deletes of the
        same file that arrived before it, which it waits for."""
        delete.keys = keys
        if not delete.known.done():
            delete.known.set_result(None)
        earlier = self._deletes[: self._deletes.index(delete)] if delete in self._deletes else []
        return [other.done for other in earlier if other.keys & keys or not other.known.done()]

    def end(self, delete: PendingDelete) -> None:
        """``delete`` answered (or was cancelled): those waiting for it go on."""
        for future in (delete.known, delete.done):
            if not future.done():
                future.set_result(None)
        if delete in self._deletes:
            self._deletes.remove(delete)


def _waits(before: list[PendingDelete], paths: frozenset[str] | None, keys: FileKeys | None) -> list[Any]:
    """What a request on the files at ``paths`` (None: every file; empty: on a session only),
    which ``keys`` say what they are (None: not known), waits for of the deletes sent ``before``
    it: those of its files answered; on a session, those known (its sessions' closes queued)."""
    if paths is None:
        return [delete.done for delete in before]
    if not paths:
        return [delete.known for delete in before]
    return [delete.done for delete in before if keys is None or keys & delete.keys]


def settle(reply: asyncio.Future[Any], start: Callable[[], Any]) -> None:
    """``reply`` settled as what ``start()`` returns settles (its failure: the request's)."""
    try:
        outcome = start()
    except Exception as error:  # noqa: BLE001 - the request's failure is its reply
        reply.set_exception(error)
        return
    _forward(outcome, reply, asyncio.get_running_loop())


def _forward(outcome: Any, reply: asyncio.Future[Any], loop: asyncio.AbstractEventLoop) -> None:
    """``reply`` settled as what a handler returned (a value, a Job or an awaitable) settles;
    cancelling ``reply`` cancels it."""
    if isinstance(outcome, Job):
        outcome = on_loop(outcome, loop)
    if not inspect.isawaitable(outcome):
        reply.set_result(outcome)
        return
    inner = asyncio.ensure_future(outcome)

    def copy(finished: asyncio.Future[Any]) -> None:
        if reply.done():
            return
        if finished.cancelled():
            reply.cancel()
        elif (error := finished.exception()) is not None:
            reply.set_exception(error)
        else:
            reply.set_result(finished.result())

    def cancel_inner(done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            inner.cancel()

    inner.add_done_callback(copy)
    reply.add_done_callback(cancel_inner)
