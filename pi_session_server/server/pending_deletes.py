"""The files pi/delete requests are deleting, and the requests sent after one that wait for it.

pi does one thing at a time: a request sent after a delete finds the file gone. The server answers
requests in parallel, so a request that would open or read a file (by ``uri`` or path), or list the
files of a directory, and that arrives while a delete of that file is pending, starts once the
delete answered (:meth:`PendingDeletes.ordered`): it never reads the file being deleted, and answers
as for a file that is not there. A delete whose path a worker is still resolving (``~`` with
``$HOME`` unset, see :func:`.locations.resolved_on_the_loop`) may be of any file: every request
that names a file or a session waits for it.

Everything here runs on the event loop. A request waits on the futures of the deletes pending as it
arrives and starts from their done callbacks, which the loop runs before it reads the next
requests: the requests sent after the delete's answer never pass those that waited for it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from pi_session_server.errors import PiSessionError
from pi_session_server.session.environment import Environment

from .locations import resolved_on_the_loop
from .workers import Job, on_loop

#: ``paths`` of a request that reads every file of some directories (a listing): it waits for every delete
EVERY_FILE = None


def deleted_as(path: str, env: Environment) -> str | None:
    """``path`` as pi/delete resolves it, where that is done on the loop; None where it is not (a
    request on it then waits for every delete) or cannot be (the request's job answers why)."""
    try:
        return resolved_on_the_loop(path, env)
    except (PiSessionError, OSError):
        return None


class PendingDeletes:
    def __init__(self) -> None:
        # resolved path -> each delete of it pending, done once it answered (a later one may be
        # cancelled before an earlier one answers)
        self._files: dict[str, list[asyncio.Future[None]]] = {}
        self._anywhere: list[asyncio.Future[None]] = []  # deletes of a path not resolved yet

    def __bool__(self) -> bool:
        return bool(self._files or self._anywhere)

    def blockers(self, paths: Iterable[str | None] | None) -> list[asyncio.Future[None]]:
        """The pending deletes a request on ``paths`` (resolved; None for one that could not be
        resolved on the loop, which may be any) waits for; ``EVERY_FILE``: all of them."""
        waits = list(self._anywhere)
        if not self._files:
            return waits
        wanted = list(paths) if paths is not EVERY_FILE else [None]
        if None in wanted:
            return waits + [done for deletes in self._files.values() for done in deletes]
        return waits + [done for path in wanted if path is not None for done in self._files.get(path, ())]

    def ordered(self, paths: Iterable[str | None] | None, start: Callable[[], Any]) -> Any:
        """``start()`` (what a handler returns) now, or a future of its outcome started once the
        deletes of ``paths`` pending now answered (see :meth:`blockers`)."""
        if not self:
            return start()
        return self.after(self.blockers(paths), start)

    def after(self, waits: list[asyncio.Future[None]], start: Callable[[], Any]) -> Any:
        """``start()`` now if ``waits`` are done, else a future of its outcome, started once they are
        (not at all if the future is cancelled first: the request was)."""
        waits = [wait for wait in waits if not wait.done()]
        if not waits:
            return start()
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        left = len(waits)

        def one_done(_wait: asyncio.Future[None]) -> None:
            nonlocal left
            left -= 1
            if left or reply.done():
                return
            try:
                outcome = start()
            except Exception as error:  # noqa: BLE001 - the request's failure is its reply
                reply.set_exception(error)
                return
            _forward(outcome, reply, loop)

        for wait in waits:
            wait.add_done_callback(one_done)
        return reply

    def begin(self, path: str) -> asyncio.Future[None]:
        """A delete of ``path`` arrived: the future later requests on it wait for (:meth:`end` it)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._files.setdefault(path, []).append(done)
        return done

    def end(self, path: str, done: asyncio.Future[None]) -> None:
        """The delete of :meth:`begin` answered (or was cancelled): those waiting for it go on."""
        if not done.done():
            done.set_result(None)
        deletes = self._files.get(path, [])
        if done in deletes:
            deletes.remove(done)
            if not deletes:
                del self._files[path]

    def begin_anywhere(self) -> asyncio.Future[None]:
        """A delete of a path a worker resolves arrived: every request on a file waits for it."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._anywhere.append(done)
        return done

    def end_anywhere(self, done: asyncio.Future[None]) -> None:
        if not done.done():
            done.set_result(None)
        if done in self._anywhere:
            self._anywhere.remove(done)


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
