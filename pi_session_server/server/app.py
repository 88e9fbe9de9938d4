"""The sidecar server: one pygls ``LanguageServer`` answering ``pi/*`` requests (and ``textDocument/*``).

Handlers stay thin: they validate params (``params.py``), call one library function inside
:meth:`PiSessionServer.session_call` or :meth:`PiSessionServer.run_blocking`, and return plain JSON
(``wire.to_wire``). Everything about locking, threads, errors and rollback lives here.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from pi_session_server import __version__
from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsvalue import ABSENT

from . import errors as rpc_errors
from .params import SessionParams
from .registry import Registry, Slot
from .rollback import rollback, snapshot
from .transport import PiProtocol
from .wire import encode_result

logger = logging.getLogger(__name__)
T = TypeVar("T")

DID_CHANGE = "pi/didChange"
FOREIGN_WRITER = "pi/foreignWriter"
SKIPPED_LISTED = 20  # lines pi skips named in a session's info (all of them: the diagnostics)


@dataclass
class ServerOptions:
    fsync: bool = False  # fsync every append (durability) instead of leaving it to the OS
    watch_interval: float = 0.15  # seconds between two stats of every held file
    inline_limit: int = 20_000  # sessions with more entries are read on a worker thread
    test_hooks: bool = False  # register $/pi/setEnvironment (conformance runs through the wire)
    # a failed write leaves the session as it was (the reference keeps a failed entry in memory)
    rollback_failed_writes: bool = True


class PiSessionServer(LanguageServer):
    """The sidecar. ``registry`` holds the open sessions."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        super().__init__("pi-session-server", __version__, protocol_cls=PiProtocol)
        self.options = options or ServerOptions()
        self.registry = Registry()
        self.watcher: Any = None

    def apply_initialization_options(self, options: Any) -> None:
        """``initializationOptions``: ``{"fsync": bool, "watchInterval": seconds, "rollbackFailedWrites": bool}``."""
        if not isinstance(options, dict):
            return
        if isinstance(options.get("fsync"), bool):
            self.options.fsync = options["fsync"]
        if isinstance(options.get("rollbackFailedWrites"), bool):
            self.options.rollback_failed_writes = options["rollbackFailedWrites"]
        interval = options.get("watchInterval")
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and 0.01 <= interval <= 10:
            self.options.watch_interval = float(interval)

    def start_background(self) -> None:
        """Called once the event loop runs: start following the held files."""
        self._loop()
        from .watcher import Watcher

        self.watcher = Watcher(self)
        self.watcher.start()

    def shutdown(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        for slot in self.registry.slots():
            with contextlib.suppress(Exception):
                self.registry.remove(slot.handle)
        super().shutdown()

    # ------------------------------------------------------------------ notifications

    def notify_threadsafe(self, method: str, params: Any) -> None:
        """Send a notification from any thread (writes happen on the event loop)."""
        loop = self._loop()
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self.protocol.notify(method, params)
        else:
            loop.call_soon_threadsafe(self.protocol.notify, method, params)

    def _loop(self) -> asyncio.AbstractEventLoop | None:
        loop = getattr(self, "_event_loop", None)
        if loop is None:
            with contextlib.suppress(RuntimeError):
                loop = self._event_loop = asyncio.get_running_loop()
        return loop

    def uri_of(self, path: str | None) -> str | None:
        return from_fs_path(path) if path else None

    def report_foreign_writes(self, slot: Slot) -> None:
        drain = getattr(slot.manager, "drain_events", None)
        if not callable(drain):
            return
        for event in drain():
            path = str(getattr(event, "path", slot.path or ""))
            self.protocol.notify(
                FOREIGN_WRITER,
                {
                    "session": slot.handle,
                    "uri": self.uri_of(path),
                    "path": path,
                    "message": str(getattr(event, "message", "another process wrote to the file")),
                    "expectedSize": getattr(event, "expected_size", None),
                    "foundSize": getattr(event, "found_size", None),
                },
            )

    # ------------------------------------------------------------------ running library code

    async def run_blocking(self, job: Callable[[], T], *, thread: bool) -> T:
        """Run ``job`` inline or on the thread pool, mapping library errors to replies."""
        try:
            if thread:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self.thread_pool, job)
            return job()
        except (PiSessionError, OSError) as error:
            raise rpc_errors.from_job_failure(error) from error

    async def resolve(self, p: SessionParams) -> Slot:
        """The slot a request addresses: ``session`` handle, or ``uri`` (opened on demand)."""
        if p.session is not UNSET:
            return self.registry.get(p.session)
        if p.uri is UNSET:
            raise rpc_errors.invalid_params("Invalid params: one of `session` or `uri` is required")
        path = uri_to_path(p.uri)
        slot = self.registry.find_by_path(path)
        if slot is not None:
            return slot
        lock = self.registry.path_lock(path, Slot("", None))
        async with lock:
            slot = self.registry.find_by_path(path)
            if slot is None:
                from .views import open_view

                manager, view_path = await self.run_blocking(
                    lambda: open_view(path), thread=_is_big_file(path)
                )
                slot = self.registry.add(manager, implicit=True, view_path=view_path)
        return slot

    async def session_call(
        self,
        p: SessionParams,
        job: Callable[[Any], Any],
        *,
        write: bool = False,
        heavy: bool = False,
        convert: Callable[[Any, Slot], Any] | None = None,
        append: bool = False,
    ) -> Any:
        """Run ``job(manager)`` on the addressed session and return its result as plain JSON.

        ``write``: the job may write the file: it runs under the file's lock, a read-only view is
        reopened for writing first, and a failure undoes the in-memory part (the session is as it
        was). ``heavy``: on a big session the job and the JSON conversion run on a worker thread.
        ``append``: the job is one library appender, which undoes its own failure
        (``rollback_failed_appends``), so no snapshot of the manager is needed.
        """
        if write and append and not heavy and p.session is not UNSET:
            slot = self.registry.get(p.session)
            if slot.view_path is None and _is_free(slot.lock):
                path_lock = self.registry.path_lock(slot.path, slot)
                if _is_free(path_lock):
                    # nothing below suspends, so no other request can run in between: taking the
                    # two (free) locks would change nothing but the cost
                    return self._append_now(slot, job, convert)
        slot = await self.resolve(p)
        async with slot.lock:
            if slot.closed:
                raise rpc_errors.unknown_session(slot.handle)
            if not write:
                return await self._call(slot, job, heavy, convert)
            async with self.registry.path_lock(slot.path, slot):
                view_path = slot.view_path
                if view_path is not None:
                    from .views import upgrade_view

                    slot.manager = await self.run_blocking(
                        lambda: upgrade_view(slot.manager, view_path), thread=False
                    )
                    slot.view_path = None
                if append:
                    return self._append_now(slot, job, convert)
                manager = slot.manager
                if self.options.fsync:
                    manager.fsync = True
                undo = self.options.rollback_failed_writes
                manager.rollback_failed_appends = undo
                try:
                    return await self._call(slot, job, False, convert, undo_on_error=undo)
                finally:
                    self.report_foreign_writes(slot)

    def _append_now(self, slot: Slot, job: Callable[[Any], Any], convert: Any) -> Any:
        """Run an appender inline; the caller holds (or may skip) the slot's and the file's locks."""
        if slot.closed:
            raise rpc_errors.unknown_session(slot.handle)
        manager = slot.manager
        if self.options.fsync:
            manager.fsync = True
        manager.rollback_failed_appends = self.options.rollback_failed_writes
        try:
            value = job(manager)
            if convert is not None:
                value = convert(value, slot)
            return msgspec.Raw(encode_result(value))
        except (PiSessionError, OSError) as error:
            raise rpc_errors.from_job_failure(error) from error
        finally:
            self.report_foreign_writes(slot)

    async def _call(
        self, slot: Slot, job: Callable[[Any], Any], heavy: bool, convert: Any, *, undo_on_error: bool = False
    ) -> Any:
        manager = slot.manager
        thread = heavy and _entry_count(manager) > self.options.inline_limit

        def work() -> Any:
            if undo_on_error:
                state = snapshot(manager)
                try:
                    value = job(manager)
                except BaseException:
                    rollback(manager, state)
                    raise
            else:
                value = job(manager)
            value = convert(value, slot) if convert is not None else value
            return msgspec.Raw(encode_result(value))

        return await self.run_blocking(work, thread=thread)

    # ------------------------------------------------------------------ session info

    def slot_info(self, slot: Slot) -> dict[str, Any]:
        """Who a session is: handle, file, ids, leaf, header (the oracle's "manager info" and more)."""
        m = slot.manager
        path = slot.path
        info: dict[str, Any] = {"session": slot.handle}
        if path:
            info["uri"] = self.uri_of(path)
        info.update(
            {
                "sessionId": m.get_session_id(),
                "sessionFile": m.get_session_file(),
                "sessionDir": m.get_session_dir(),
                "cwd": m.get_cwd(),
                "isPersisted": m.is_persisted(),
                "usesDefaultSessionDir": m.uses_default_session_dir(),
                "leafId": m.get_leaf_id(),
                "header": m.get_header(),
                "entryCount": sum(1 for _ in m.iter_entries()),
                "sessionName": m.get_session_name(),
                "readOnly": slot.view_path is not None,
            }
        )
        # pi reads a damaged file without a word; a front end should be able to say what is missing
        skipped = [problem for problem in m.problems if problem.skipped]
        info["skippedLines"] = len(skipped)
        if skipped:
            info["skipped"] = [problem.to_json() for problem in skipped[:SKIPPED_LISTED]]
        return info


def _is_free(lock: asyncio.Lock) -> bool:
    """Nobody holds ``lock`` and nobody waits for it (a woken waiter leaves it unlocked a moment)."""
    return not lock.locked() and not getattr(lock, "_waiters", None)


def _entry_count(manager: Any) -> int:
    by_id = getattr(manager, "by_id", None)
    return len(by_id) if by_id is not None else 0


def _is_big_file(path: str) -> bool:
    try:
        return os.path.getsize(path) > 4 * 1024 * 1024
    except OSError:
        return False


def uri_to_path(uri: str) -> str:
    if not uri.startswith("file:"):
        raise rpc_errors.invalid_params(f"Invalid params: `uri` must be a file: URI, got {uri!r}")
    path = to_fs_path(uri)
    if not path:
        raise rpc_errors.invalid_params(f"Invalid params: cannot turn `uri` into a path: {uri!r}")
    return path


def absent_to_none(value: Any) -> Any:
    return None if value is ABSENT else value


def create_server(options: ServerOptions | None = None) -> PiSessionServer:
    """A fresh server with every ``pi/*`` method (and the language features, when present)."""
    server = PiSessionServer(options)
    from . import methods_files, methods_open, methods_read, methods_write

    for module in (methods_open, methods_files, methods_write, methods_read):
        module.register(server)
    if server.options.test_hooks:
        from . import test_hooks

        test_hooks.register(server)
    try:
        language_features = importlib.import_module("pi_session_server.server.language_features")
    except ModuleNotFoundError as error:
        if error.name != "pi_session_server.server.language_features":
            raise
    else:
        language_features.register_language_features(server)
    return server
