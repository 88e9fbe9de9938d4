"""pi/list, pi/listAll, pi/findById, pi/delete: session files on disk (each a job of its own)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from pi_session_server.errors import PiSessionError, fs_error_from_oserror
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager
from pi_session_server.session.environment import Environment
from pi_session_server.session.loader import is_valid_header, open_for_reading, peek_header
from pi_session_server.session.paths import resolve_path

from . import params as P
from .errors import INTERNAL_ERROR, PiRpcError, from_job_failure, invalid_params, path_refused
from .locations import FileKeys, file_names, require_regular_file, uri_to_path
from .pending_deletes import EVERY_FILE, LookLimit, look_timed_out, settle
from .progress import Progress
from .reply_bytes import listing_bytes, refuse_past_max
from .session_dir_choice import looked_in
from .workers import CancelToken, Job, on_loop

if TYPE_CHECKING:
    from pi_session_server.session.listing import AbortSignal, SessionInfo, TextOptions

    from .app import PiSessionServer
    from .registry import Slot


def _progress_callback(progress: Progress) -> Any:
    if not progress.active:
        return None

    def on_progress(loaded: int, total: int, _partial: Any = ABSENT) -> None:
        progress.report(loaded, total, f"{loaded}/{total} session files", force=loaded == total)

    return on_progress


def is_session_file(path: str) -> bool:
    """Header discovery: the first kept line is an object with type "session" and a string id."""
    fd = open_for_reading(path)
    try:
        return is_valid_header(peek_header(fd).value)
    finally:
        os.close(fd)


def text_options(p: P.ListingParams) -> TextOptions:
    """How much text each listed session carries (``text: "all"``, the default, is the reference's)."""
    from pi_session_server.session.listing import TextOptions

    return TextOptions(
        first_message=p.text != "none",
        all_messages_text=p.text == "all",
        max_chars=None if p.max_text_chars is UNSET else p.max_text_chars,
    )


def page_of(sessions: list[Any], p: P.ListingParams) -> Any:
    """The reference's array, or with ``offset``/``limit`` one page of it and where the next begins."""
    if not p.paged:
        return sessions
    start = 0 if p.offset is UNSET else p.offset
    end = len(sessions) if p.limit is UNSET else start + p.limit
    page: dict[str, Any] = {"sessions": sessions[start:end], "total": len(sessions)}
    page["hasMore"] = end < len(sessions)
    if page["hasMore"]:
        page["nextOffset"] = end
    return page


def _with_text(
    infos: list[SessionInfo], text: TextOptions, signal: Any, env: Environment
) -> list[SessionInfo]:
    """``infos`` read again with ``text`` (an info whose file went away stays as it was)."""
    from pi_session_server.session.listing import session_info

    return [session_info(info.path, signal=signal, text=text, env=env) or info for info in infos]


def register(server: PiSessionServer) -> None:
    _register_listings(server)
    _register_session_files(server)


def _register_listings(server: PiSessionServer) -> None:
    """pi/list and pi/listAll. The listing module is imported by their first request: the sidecar's
    start (an editor's tree view waiting for its first window) does not wait for it."""
    route = server.connection.route

    def listing(p: P.ListingParams, title: str, call: Any) -> Any:
        text = text_options(p)
        # A page of a listing with text: the order needs no text, so the listing keeps none, and
        # only the page's sessions are read again for it (100 sessions of 1 MB of text each, a page
        # of 10: the text of 10 held instead of 100).
        later = p.paged and (text.first_message or text.all_messages_text)
        first = replace(text, first_message=False, all_messages_text=False) if later else text
        progress = Progress(server, p.work_done_token)
        env = server.environment_for(p)

        def job(token: CancelToken) -> Any:
            signal = _cancel_signal(token)
            progress.begin(title)
            try:
                found: list[Any] = looked_in(
                    p,
                    env,
                    lambda session_dir: call(session_dir, _progress_callback(progress), signal, first, env),
                    [],
                )
                page = page_of(found, p)
                if later:
                    page["sessions"] = _with_text(page["sessions"], text, signal, env)
            finally:
                progress.end()
            refuse_past_max(listing_bytes(page["sessions"] if p.paged else page), _LISTING_IN_PARTS)
            return page

        # a listing sent after a delete does not list the file being deleted
        return server.pending_deletes.ordered(EVERY_FILE, lambda: server.run(title, job))

    @route("pi/list")
    def pi_list(params: Any) -> Any:
        from pi_session_server.session.listing import list_sessions

        p = P.parse(params, P.ListParams)
        pi = server.profile_for(p)
        return listing(
            p,
            "Listing sessions",
            lambda session_dir, progress, signal, text, env: list_sessions(
                p.cwd, session_dir, progress, signal, text=text, pi=pi, env=env
            ),
        )

    @route("pi/listAll")
    def pi_list_all(params: Any) -> Any:
        from pi_session_server.session.listing import list_all_sessions

        p = P.parse(params, P.ListAllParams)
        return listing(
            p,
            "Listing all sessions",
            lambda session_dir, progress, signal, text, env: list_all_sessions(
                session_dir, progress, signal, text=text, env=env
            ),
        )


# what to ask for instead of a listing too large for one reply
_LISTING_IN_PARTS = (
    'ask for less text: `text` "first" or "none", or `maxTextChars` (characters per session), or for '
    "pages: `offset` and `limit`"
)


def _register_session_files(server: PiSessionServer) -> None:
    """pi/findById and pi/delete."""
    route = server.connection.route

    @route("pi/findById")
    def pi_find_by_id(params: Any) -> Any:
        p = P.parse(params, P.FindByIdParams)
        pi = server.profile_for(p)
        env = server.environment_for(p)

        def job(_token: CancelToken) -> Any:
            found = looked_in(
                p,
                env,
                lambda session_dir: SessionManager.find_by_id(p.cwd, p.id, session_dir, pi=pi, env=env),
                ABSENT,
            )
            return None if found is ABSENT else found

        return server.pending_deletes.ordered(EVERY_FILE, lambda: server.run("pi/findById", job))

    @route("pi/delete")
    def pi_delete(params: Any) -> Any:
        """The sessions open on the file closed, then the file deleted (a worker). A worker first
        resolves the path and looks at what the file is (see :mod:`.pending_deletes`; the requests
        on a file or a session sent meanwhile wait for that). Each session's close is queued then,
        before any request sent after the delete starts: after the requests sent on it before this
        one (a write sent before the delete cannot bring the file back after it) and before those
        sent after it (they find the session closed: none writes to the file being deleted). The
        first close to run checks that the file is a pi session (else none closes, and the refusal
        is the reply); with no session open on it, a worker of its own checks it."""
        p = P.parse(params, P.DeleteParams)
        if p.path is not UNSET:
            given = p.path
        elif p.uri is not UNSET:
            given = uri_to_path(p.uri)
        else:
            raise invalid_params("Invalid params: one of `path` or `uri` is required")
        return _ordered_delete(server, given, server.environment_for(p), p.permanent)


def _ordered_delete(
    server: PiSessionServer, given: str, env: Environment, permanent: bool
) -> asyncio.Future[Any]:
    """pi/delete of ``given``: resolved and looked at by a worker (see :mod:`.pending_deletes`),
    then :func:`_delete`, after the deletes of the same file sent before. A look that has run for
    ``LOOK_LIMIT_SECONDS`` without answering (a stat on a stuck mount) is the delete's failure:
    until it knows its file, every request on a file or a session waits for it."""
    pending = server.pending_deletes
    delete = pending.begin()
    reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    # (a callback of the reply: a delete cancelled before it began never runs what follows)
    reply.add_done_callback(lambda _reply: pending.end(delete))

    def passed() -> None:
        if not reply.done() and not delete.known.done():
            reply.set_exception(look_timed_out(given))

    limit = LookLimit(passed)
    reply.add_done_callback(lambda _reply: limit.disarm())

    def resolved() -> tuple[str, str, FileKeys] | PiRpcError:
        try:
            path = resolve_path(given, env=env)
            names = file_names(path)
            return path, names.entry, names.keys
        except (PiSessionError, OSError) as error:  # a NUL byte; relative without a working directory
            return from_job_failure(error)

    def looked(found: tuple[str, str, FileKeys] | PiRpcError | None) -> None:
        if reply.done():  # cancelled meanwhile, or the limit passed
            return
        if not isinstance(found, tuple):
            reply.set_exception(found or PiRpcError(INTERNAL_ERROR, "pi/delete: the file was not looked at"))
            return
        path, entry, keys = found
        # the sessions on the file are found and their closes queued in this callback, before
        # the requests that waited for the look start; a delete of the same file sent before
        # this one goes first (this one then finds the file gone)
        earlier = pending.known(delete, keys)
        start = partial(_delete, server, path, {path, entry}, permanent)
        settle(reply, start if not earlier else partial(pending.after, earlier, start))

    pending.look(resolved, limit).add_done_callback(lambda answer: looked(answer.result()))
    return reply


def _delete(server: PiSessionServer, path: str, names: set[str], permanent: bool) -> asyncio.Future[Any]:
    """pi/delete of ``path`` (resolved): the closes of the sessions on it (held by one of its
    ``names``) queued now, the file deleted after them by a task, which is what answers."""
    check = _CheckedOnce(path)
    slots = server.registry.slots_for_path(*names)
    closing = [server.registry.close_if(slot, check) for slot in slots]
    deleting = asyncio.ensure_future(_delete_after_closing(server, path, permanent, slots, closing, check))
    # (a callback of the task, not a `finally` of its coroutine: a delete cancelled before its
    # coroutine began, the cancel read with it, never runs the coroutine at all)
    deleting.add_done_callback(lambda _task: _after_delete(server, slots, closing))
    return deleting


async def _delete_after_closing(
    server: PiSessionServer,
    path: str,
    permanent: bool,
    slots: list[Slot],
    closing: list[Job[str]],
    check: _CheckedOnce,
) -> Any:
    """pi/delete once its closes are queued: the file deleted after them, if it is a pi session."""
    loop = asyncio.get_running_loop()
    if closing:
        # shielded: a delete cancelled while it waits leaves the sessions closing, not half closed
        outcomes = await asyncio.gather(
            *(asyncio.shield(on_loop(job, loop)) for job in closing), return_exceptions=True
        )
        refusal = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if refusal is not None:
            raise refusal
    else:
        await on_loop(server.run_step("pi/delete", lambda _token: check()), loop)
    closed = [slot.handle for slot in slots]
    deleting = server.run("pi/delete", lambda _token: _delete_session_file(path, permanent, closed))
    return await on_loop(deleting, loop)


def _after_delete(server: PiSessionServer, slots: list[Slot], closing: list[Job[str]]) -> None:
    """Once a pi/delete answered (or was cancelled): the sessions it closed, found (closed) until
    now so that a `uri` did not open the file again, are let go once closed (before the requests
    on the file sent after it go ahead), and once every request that arrived before knows which
    session it addresses: a request by a `uri` spelling the file otherwise looks at the file on a
    worker first, and must still find the session it held (closed), not open the file anew."""

    def let_go() -> None:
        for slot, job in zip(slots, closing, strict=True):
            job.add_done_callback(partial(_discard_if_closed, server, slot))

    if slots:
        server.pending_deletes.after(server.pending_deletes.looks_unanswered(), let_go)


def _discard_if_closed(server: PiSessionServer, slot: Slot, _close: Job[Any]) -> None:
    if slot.closed:
        server.registry.discard_closed_by_delete(slot)


class _CheckedOnce:
    """:func:`_session_file_to_delete` of ``path``, run by the first caller (on a worker) and
    answered to every caller: the sessions a delete closes all go by one look at the file."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._outcome: tuple[str | None, PiRpcError | None] | None = None

    def __call__(self) -> str:
        with self._lock:
            if self._outcome is None:
                try:
                    self._outcome = (_session_file_to_delete(self._path), None)
                except (PiSessionError, OSError) as error:
                    self._outcome = (None, from_job_failure(error))
                except PiRpcError as error:
                    self._outcome = (None, error)
            path, refusal = self._outcome
        if refusal is not None:
            raise refusal
        assert path is not None
        return path


def _session_file_to_delete(path: str) -> str:
    """``path`` if it is a pi session file; else the error pi/delete answers (on a worker)."""
    if not os.path.lexists(path):
        raise fs_error_from_oserror(FileNotFoundError(2, "No such file"), "stat", path)
    if os.path.isdir(path) or not require_regular_file(path) or not is_session_file(path):
        raise path_refused(f"Not a pi session file: {path}", path)
    return path


def _delete_session_file(path: str, permanent: bool, closed: list[str]) -> dict[str, Any]:
    """Delete the session file at ``path`` or move it to the trash (on a worker), once the sessions
    ``closed`` (their handles) that were open on it are."""
    try:
        if permanent:
            os.unlink(path)
        else:
            from send2trash import send2trash  # here: the server's start does not wait for it

            send2trash(path)
    except OSError as error:
        raise fs_error_from_oserror(error, "unlink", path) from error
    except Exception as error:  # send2trash.TrashPermissionError and friends
        raise path_refused(f"Cannot move {path} to the trash: {error}", path) from error
    return {"path": path, "trashed": not permanent, "closedSessions": closed}


def _cancel_signal(token: CancelToken) -> AbortSignal:
    """The listing's abort signal for a request: aborted once the request is cancelled."""
    return _cancel_signal_class()(token)


@cache
def _cancel_signal_class() -> Callable[[CancelToken], AbortSignal]:
    """The class of :func:`_cancel_signal`, made on first use (its base is the listing's)."""
    from pi_session_server.session.listing import AbortSignal

    class CancelSignal(AbortSignal):
        __slots__ = ("_token",)

        def __init__(self, token: CancelToken) -> None:
            super().__init__()
            self._token = token

        @property
        def aborted(self) -> bool:
            return self._token.cancelled or self._aborted

    return CancelSignal
