"""pi/open, pi/create, pi/continueRecent, pi/inMemory, pi/forkFrom, pi/close: sessions come and go."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_session_server.session import SessionManager

from . import params as P
from .progress import work_done
from .wire import to_wire

if TYPE_CHECKING:
    from .app import PiSessionServer


def register(server: PiSessionServer) -> None:
    async def open_session(
        p: P.Params, title: str, make: Callable[[], Any], *, thread: bool, path: str | None = None
    ) -> dict[str, Any]:
        async with work_done(server, p.work_done_token, title):
            manager = await server.run_blocking(make, thread=thread)
        slot = server.registry.add(manager)
        if server.options.fsync:
            manager.fsync = True
        return to_wire(server.slot_info(slot))

    @server.feature("pi/open")
    async def pi_open(params: Any) -> Any:
        p = P.parse(params, P.OpenParams)
        job = lambda: SessionManager.open(p.path, P.opt(p.session_dir), P.opt(p.cwd_override))  # noqa: E731
        return await open_session(p, f"Opening {os.path.basename(p.path)}", job, thread=_big(p.path))

    @server.feature("pi/create")
    async def pi_create(params: Any) -> Any:
        p = P.parse(params, P.CreateParams)
        job = lambda: SessionManager.create(p.cwd, P.opt(p.session_dir), P.options_dict(p.options))  # noqa: E731
        return await open_session(p, "Creating a session", job, thread=False)

    @server.feature("pi/continueRecent")
    async def pi_continue_recent(params: Any) -> Any:
        p = P.parse(params, P.ContinueRecentParams)
        job = lambda: SessionManager.continue_recent(p.cwd, P.opt(p.session_dir))  # noqa: E731
        return await open_session(p, "Opening the most recent session", job, thread=True)

    @server.feature("pi/inMemory")
    async def pi_in_memory(params: Any) -> Any:
        p = P.parse(params, P.InMemoryParams)
        job = lambda: SessionManager.in_memory(P.opt(p.cwd), P.options_dict(p.options), P.opt(p.entries))  # noqa: E731
        return await open_session(p, "Creating an in-memory session", job, thread=False)

    @server.feature("pi/forkFrom")
    async def pi_fork_from(params: Any) -> Any:
        p = P.parse(params, P.ForkFromParams)

        def job() -> Any:
            return SessionManager.fork_from(
                p.source_path, p.target_cwd, P.opt(p.session_dir), P.options_dict(p.options)
            )

        return await open_session(
            p, f"Forking {os.path.basename(p.source_path)}", job, thread=_big(p.source_path)
        )

    @server.feature("pi/close")
    async def pi_close(params: Any) -> Any:
        p = P.parse(params, P.CloseParams)
        slot = server.registry.get(p.session)
        async with slot.lock:
            server.registry.remove(p.session)
        return {"session": p.session, "closed": True}

    @server.feature("pi/sessions")
    async def pi_sessions(params: Any) -> Any:
        P.parse(params, P.Params)
        return to_wire([server.slot_info(slot) for slot in server.registry.slots()])


def _big(path: str) -> bool:
    try:
        return os.path.getsize(os.path.expanduser(path)) > 4 * 1024 * 1024
    except (OSError, ValueError):
        return False
