"""The files pi/delete requests are deleting, and the requests sent after one that wait for it.

pi does one thing at a time: a request sent after a delete finds the file gone. The server answers
requests in parallel, so a request that would open or read a file (by ``uri`` or path), or list the
files of a directory, and that arrives while a delete of that file is pending, starts once the
delete answered (:meth:`PendingDeletes.ordered`): it never reads the file being deleted, and answers
as for a file that is not there.

A file is known by what it is, not by how a request spells it (a symlink, a symlinked directory,
``..``): the delete and each request on a file while one is pending have their paths looked at by
a worker (:func:`file_keys`: the path resolved, with symlinks resolved, the directory entry it
names, and the device and inode of the file where there is one), one after another in the order
they arrived, and a request waits for the deletes whose keys it shares. Until a worker has looked
at what a delete deletes (and resolved its path: ``~`` with ``$HOME`` unset is the home of the
user's password entry), it may be of any file: every request that names a file or a session waits
for that look. A request by ``uri`` that no session holds by that path looks at its file on a
worker (:meth:`PendingDeletes.looked_first`: a session may hold it through another
spelling), and the requests on a file or a session sent after it wait for that look in the same
way, for a bounded time.

Everything else here runs on the event loop. A request waits on the futures of the deletes pending
as it arrives and starts from their done callbacks, which the loop runs before it reads the next
requests: the requests sent after the delete's answer never pass those that waited for it. While a
look is under way, every request on a file takes its turn behind it, so none passes another.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from pi_session_server.errors import PiSessionError
from pi_session_server.session.environment import Environment

from .locations import FileKeys, file_keys, resolved_on_the_loop
from .workers import Job, SerialQueue, on_loop

#: how long the requests behind a request's look at its file wait for it (a stat may hang)
LOOK_FIRST_LIMIT_SECONDS = 2.0

#: ``paths`` of a request that reads every file of some directories (a listing): it waits for every delete
EVERY_FILE = None


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


class PendingDeletes:
    def __init__(self, lookups: SerialQueue) -> None:
        self._lookups = lookups  # the worker queue of the looks at files, in arrival order
        self._deletes: list[PendingDelete] = []
        self._looking = 0  # looks at the files of requests under way

    def __bool__(self) -> bool:
        return bool(self._deletes or self._looking)

    def ordered(self, paths: Iterable[str | None] | None, start: Callable[[], Any]) -> Any:
        """``start()`` (what a handler returns) now, or a future of its outcome started once the
        deletes of the files at ``paths`` (resolved; None for one that could not be resolved on
        the loop, which may be any file) pending now answered; ``EVERY_FILE``: once all did. A
        request on no file (``paths`` empty: on a session) waits until every pending delete's
        file is known, and its sessions closed."""
        if not self:
            return start()
        wanted = [None] if paths is EVERY_FILE else list(paths)
        if None in wanted:
            return self.after([delete.done for delete in self._deletes], start)
        if not wanted:
            return self.after([delete.known for delete in self._deletes], start)
        resolved = [path for path in wanted if path is not None]
        reply = asyncio.get_running_loop().create_future()
        before = list(self._deletes)  # (not those sent after this request)

        def looked(keys: FileKeys | None) -> None:
            if reply.done():  # cancelled meanwhile
                return
            unknown = [delete.known for delete in before if not delete.known.done()]
            if unknown and keys is not None:  # a delete sent before whose file is not known yet
                self.after(unknown, lambda: looked(keys))
                return
            waits = [delete.done for delete in before if keys is None or keys & delete.keys]
            settle(reply, lambda: self.after(waits, start))

        self._looking += 1
        self.look(lambda: frozenset().union(*map(file_keys, resolved)), looked, counted=True)
        return reply

    def looked_first(
        self, work: Callable[[], Any], start: Callable[[Any], Any], queue: SerialQueue
    ) -> asyncio.Future[Any]:
        """A future of the outcome of ``start(work())``, ``work`` done on ``queue`` (on the queue of
        the looks at files while a delete is pending): a request
        that must look at a file before it knows which session it addresses. The requests on a
        file or a session sent after it wait for that look, as for a delete's (none passes it);
        it deletes nothing. A look that fails, or has not answered within
        ``LOOK_FIRST_LIMIT_SECONDS`` (a stat on a stuck mount), starts ``start(None)``: those
        behind it wait no longer."""
        loop = asyncio.get_running_loop()
        # behind the look of a delete pending (in arrival order, as every request's look), else
        # on a queue of its own: with nothing pending, a stuck look holds no other look
        on = self._lookups if self._deletes else queue
        looking = self.begin()
        reply: asyncio.Future[Any] = loop.create_future()
        reply.add_done_callback(lambda _reply: self.end(looking))  # (cancelled: the others go on)

        def looked(value: Any) -> None:
            if looking.known.done():  # (the limit passed first, or the request was cancelled)
                return
            limit.cancel()
            # those waiting for the look go on from callbacks the loop runs after this one
            self.end(looking)
            if not reply.done():
                settle(reply, lambda: start(value))

        limit = loop.call_later(LOOK_FIRST_LIMIT_SECONDS, looked, None)
        self.look(work, looked, queue=on)
        return reply

    def look(
        self,
        work: Callable[[], Any],
        then: Callable[[Any], None],
        *,
        counted: bool = False,
        queue: SerialQueue | None = None,
    ) -> Job[Any]:
        """``work()`` on the queue of the looks at files (or ``queue``), then ``then(its value)`` on
        the loop (None for a failure, which the caller's own job meets again), in the order the
        looks were asked."""
        loop = asyncio.get_running_loop()
        job = (queue or self._lookups).submit(lambda _token: work(), interruptible=False)

        def finished(future: asyncio.Future[Any]) -> None:
            if counted:
                self._looking -= 1
            then(None if future.cancelled() or future.exception() is not None else future.result())

        on_loop(job, loop).add_done_callback(finished)
        return job

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
