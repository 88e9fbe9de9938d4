"""pi/open, pi/create, pi/continueRecent, pi/inMemory, pi/forkFrom, pi/close, pi/sessions: sessions
come and go."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from pi_session_server.session import SessionManager
from pi_session_server.session.paths import resolve_path

from . import params as P
from .errors import PiRpcError
from .locations import require_regular_file
from .pending_deletes import EVERY_FILE, deleted_as
from .progress import Progress
from .session_dir_choice import session_dir_to_keep_in
from .wire import encode_result
from .workers import CancelToken, Job, on_loop

if TYPE_CHECKING:
    from .app import PiSessionServer
    from .registry import Slot

# what opens a session: (progress callback for big files, or None) -> the manager
Make = Callable[[Callable[[int, int], None] | None], SessionManager]


def register(server: PiSessionServer) -> None:
    _register_opening(server)
    _register_held(server)


def _register_opening(server: PiSessionServer) -> None:
    """The requests that open or create a session and hold it."""
    route = server.connection.route

    @route("pi/open")
    def pi_open(params: Any) -> Any:
        p = P.parse(params, P.OpenParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)

        def make(on_progress: Callable[[int, int], None] | None) -> SessionManager:
            require_regular_file(resolve_path(p.path, env=env))
            return SessionManager.open(
                p.path,
                session_dir_to_keep_in(p, env),
                P.opt(p.cwd_override),
                on_progress=on_progress,
                pi=pi,
                env=env,
            )

        def open_it() -> Job[Any]:
            return _opening(server, p, f"Opening {os.path.basename(p.path)}", make)

        # after a pi/delete of the file sent before it: the open then finds the file gone (a new
        # session at its path), not the file the delete is about to remove, which would leave the
        # session's next write in a file without its header
        return server.pending_deletes.ordered([deleted_as(p.path, env)], open_it)

    @route("pi/create")
    def pi_create(params: Any) -> Any:
        p = P.parse(params, P.CreateParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)
        return _opening(
            server,
            p,
            "Creating a session",
            lambda _: SessionManager.create(
                p.cwd, session_dir_to_keep_in(p, env), P.options_dict(p.options), pi=pi, env=env
            ),
        )

    @route("pi/continueRecent")
    def pi_continue_recent(params: Any) -> Any:
        p = P.parse(params, P.ContinueRecentParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)
        return server.pending_deletes.ordered(
            EVERY_FILE,
            lambda: _opening(
                server,
                p,
                "Opening the most recent session",
                lambda _: SessionManager.continue_recent(
                    p.cwd, session_dir_to_keep_in(p, env), pi=pi, env=env
                ),
            ),
        )

    @route("pi/inMemory")
    def pi_in_memory(params: Any) -> Any:
        p = P.parse(params, P.InMemoryParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)
        return _opening(
            server,
            p,
            "Creating an in-memory session",
            lambda _: SessionManager.in_memory(
                P.opt(p.cwd), P.options_dict(p.options), P.opt(p.entries), pi=pi, env=env
            ),
        )

    @route("pi/forkFrom")
    def pi_fork_from(params: Any) -> Any:
        p = P.parse(params, P.ForkFromParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)

        def make(_: Any) -> SessionManager:
            require_regular_file(resolve_path(p.source_path, env=env))
            return SessionManager.fork_from(
                p.source_path,
                p.target_cwd,
                session_dir_to_keep_in(p, env),
                P.options_dict(p.options),
                fsync=server.options.fsync,
                pi=pi,
                env=env,
            )

        return server.pending_deletes.ordered(
            [deleted_as(p.source_path, env)],
            lambda: _opening(server, p, f"Forking {os.path.basename(p.source_path)}", make),
        )


def _register_held(server: PiSessionServer) -> None:
    """pi/close and pi/sessions: the sessions held."""
    route = server.connection.route

    @route("pi/close")
    def pi_close(params: Any) -> Any:
        """Answered at once: new requests no longer find the handle, and the session is closed
        (its files released) once the requests sent before this one are done. Once every
        pi/delete sent before it knows its file (and has queued the closes of its sessions)."""
        p = P.parse(params, P.CloseParams)

        def close() -> dict[str, Any]:
            try:
                slot = server.registry.get(p.session)
            except PiRpcError:
                # a delete's close, let go once the delete answered: this close may have been
                # sent before that answer and read after it
                if server.registry.closed_by_delete(p.session):
                    return {"session": p.session, "closed": True}
                raise
            server.registry.close(slot)
            return {"session": p.session, "closed": True}

        return server.pending_deletes.ordered([], close, session=p.session)

    @route("pi/sessions")
    def pi_sessions(params: Any) -> Any:
        """Every held session, each described by a job on its own queue (in parallel). The jobs are
        queued as the request arrives (not in a coroutine, which would run after the requests read
        with this one): each describes its session as the requests sent before this one left it
        (once every pi/delete sent before it knows its file: the sessions it closes are left out;
        and once the requests sent before it that wait for a delete started)."""
        P.parse(params, P.Params)

        def describe() -> Any:
            jobs = [slot.queue.submit(_describer(server, slot)) for slot in server.registry.slots()]
            return _described(jobs)

        return server.pending_deletes.ordered([], describe, every_session=True)


async def _described(jobs: list[Job[dict[str, Any]]]) -> Any:
    """The reply of pi/sessions: what its jobs told (a session closed meanwhile left out)."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.gather(*(on_loop(job, loop) for job in jobs), return_exceptions=True)
    described = [info for info in infos if isinstance(info, dict)]
    return msgspec.Raw(encode_result(described))


def _opening(server: PiSessionServer, p: P.Params, title: str, make: Make) -> Job[Any]:
    """Open on a worker (a queue of its own), then hold the session and answer who it is."""
    progress = Progress(server, p.work_done_token)

    def job(token: CancelToken) -> Any:
        def on_progress(done: int, total: int) -> None:
            token.check()  # a cancelled open of a big file stops here
            progress.report(done, total)

        progress.begin(title)
        try:
            with server.index_keeper.after_reply():
                manager = make(on_progress)
        finally:
            progress.end()
        if token.cancelled:
            manager.close()
            token.check()
        if server.options.fsync:
            manager.fsync = True
        slot = server.registry.add(manager)
        try:
            return server.slot_info(slot)
        except BaseException:  # no reply names the handle: nobody could use or close it
            server.registry.close(slot)
            raise

    return server.run(title, job)


def _describer(server: PiSessionServer, slot: Slot) -> Callable[[CancelToken], dict[str, Any]]:
    return lambda _token: server.slot_info(slot)
