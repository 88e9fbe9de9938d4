"""The sidecar server: one pygls ``LanguageServer`` answering ``pi/*`` requests (and ``textDocument/*``).

The event loop only parses, routes and answers: every request on a session becomes a job on the
session's serial queue (:mod:`workers`), which runs it on a worker thread, encodes the result there
and writes the reply. Requests on one session are answered in arrival order; a session stuck on a
lock another process holds delays nobody else. Handlers stay thin: they validate params
(``params.py``) and hand one library call to :meth:`PiSessionServer.session_call` (or
:meth:`PiSessionServer.run` for work on no session).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import msgspec
from lsprotocol import types
from msgspec import UNSET, UnsetType
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.uris import from_fs_path

from pi_session_server import __version__
from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager
from pi_session_server.session.environment import Environment
from pi_session_server.session.loader import is_valid_header, open_for_reading, peek_header
from pi_session_server.session.migrate import needs_migration

from . import errors as rpc_errors
from .jsonrpc import Connection, run_stdio
from .locations import require_regular_file, uri_to_path
from .params import EnvironmentOptions, LocatedParams, SessionParams
from .poller import FilePoller
from .registry import Registry, Slot
from .wire import encode_result
from .workers import CancelToken, Job, WorkerPool, keep_big_blocks_out_of_the_heap

if TYPE_CHECKING:
    from .language_features import LanguageFeatures

logger = logging.getLogger(__name__)
T = TypeVar("T")

FOREIGN_WRITER = "pi/foreignWriter"
SKIPPED_LISTED = 20  # lines pi skips named in a session's info (all of them: the diagnostics)


@dataclass
class ServerOptions:
    fsync: bool = False  # fsync every append (durability) instead of leaving it to the OS
    watch_interval: float = 0.15  # seconds between two looks at every followed file
    # a failed write leaves the session as it was (the reference keeps a failed entry in memory)
    rollback_failed_writes: bool = True
    # the working directory and variables sessions are opened in (None: the process's at start)
    environment: Environment | None = None


class InitializationOptions(msgspec.Struct, rename="camel", kw_only=True):
    """``initializationOptions`` the server reads (others are ignored)."""

    fsync: bool | UnsetType = UNSET
    watch_interval: Annotated[float, msgspec.Meta(ge=0.01, le=10)] | UnsetType = UNSET
    rollback_failed_writes: bool | UnsetType = UNSET
    environment: EnvironmentOptions | UnsetType = UNSET


class PiSessionServer(LanguageServer):
    """The sidecar. ``registry`` holds the open sessions, ``pool`` runs their jobs, ``connection``
    talks to the client."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        super().__init__(
            "pi-session-server",
            __version__,
            protocol_cls=LanguageServerProtocol,
            converter_factory=default_converter,
        )
        self.options = options or ServerOptions()
        #: what pi would read from its process, for the sessions requests open (see
        #: session/environment.py); a request may give its own (``environment``)
        self.environment = self.options.environment or Environment.from_process()
        keep_big_blocks_out_of_the_heap()
        self.pool = WorkerPool()
        self.registry = Registry(self.pool)
        self.connection = Connection(cast(LanguageServerProtocol, self.protocol))
        self.poller = FilePoller(self)
        self.language_features: LanguageFeatures | None = None

        @self.feature(types.INITIALIZE)
        def initialize(params: types.InitializeParams) -> None:
            self.apply_initialization_options(params.initialization_options)

    def apply_initialization_options(self, options: Any) -> None:
        """``initializationOptions``: ``{"fsync": bool, "watchInterval": seconds, "rollbackFailedWrites":
        bool, "environment": {"cwd", "home", "agentDir"}}``. Options that do not fit are reported in
        the log and the defaults stay."""
        if options is None:
            return
        try:
            given = msgspec.convert(options, InitializationOptions)
        except msgspec.ValidationError as error:
            logger.warning("initializationOptions ignored (the defaults stay): %s", error)
            return
        if given.fsync is not UNSET:
            self.options.fsync = given.fsync
        if given.watch_interval is not UNSET:
            self.options.watch_interval = given.watch_interval
        if given.rollback_failed_writes is not UNSET:
            self.options.rollback_failed_writes = given.rollback_failed_writes
        if given.environment is not UNSET:
            self.environment = given.environment.applied_to(self.environment)

    def environment_for(self, p: LocatedParams) -> Environment:
        """The environment a request finds its files in: its own ``environment`` over the server's."""
        return p.environment_in(self.environment)

    def serve_stdio(self) -> None:
        run_stdio(self, self.connection, self.poller.start)

    def shutdown(self) -> None:
        self.poller.stop()
        super().shutdown()

    # ------------------------------------------------------------------ notifications

    def notify(self, method: str, params: Any) -> None:
        """A notification with plain-JSON params, from any thread."""
        self.connection.notify(method, params)

    def loop_call(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` on the event loop (from a worker)."""
        loop = self.connection.loop
        if loop is not None:
            loop.call_soon_threadsafe(callback)

    def uri_of(self, path: str | None) -> str | None:
        return from_fs_path(path) if path else None

    def report_foreign_writes(self, slot: Slot) -> None:
        """Tell the client what other processes wrote while this session appended (on the worker)."""
        manager = slot.manager
        if manager is None:
            return
        for event in manager.drain_events():
            path = str(event.path)
            self.notify(
                FOREIGN_WRITER,
                {
                    "session": slot.handle,
                    "uri": self.uri_of(manager.environment.on_disk(path)),
                    "path": path,
                    "message": event.message,
                    "expectedSize": event.expected_size,
                    "foundSize": event.found_size,
                },
            )

    # ------------------------------------------------------------------ running library code

    def run(self, name: str, job: Callable[[CancelToken], Any]) -> Job[Any]:
        """Work on no session (a listing, an open): a queue of its own, the result as a reply."""

        def work(token: CancelToken) -> Any:
            try:
                return msgspec.Raw(encode_result(job(token)))
            except (PiSessionError, OSError) as error:
                raise rpc_errors.from_job_failure(error) from error

        return self.pool.queue(name).submit(work)

    def resolve(self, p: SessionParams) -> Slot:
        """The slot a request addresses: ``session`` handle, or ``uri`` (opened on demand: the
        open is the first job of the new slot, so the request waits for it in the queue)."""
        if p.session is not UNSET:
            return self.registry.get(p.session)
        if p.uri is UNSET:
            raise rpc_errors.invalid_params("Invalid params: one of `session` or `uri` is required")
        path = uri_to_path(p.uri)
        slot = self.registry.find_by_path(path)
        if slot is None:
            slot = self.registry.add(None, implicit=True, path=path)
            opening = slot
            slot.queue.submit(lambda _token: self._open_for_uri(opening, path), interruptible=False)
        return slot

    def _open_for_uri(self, slot: Slot, path: str) -> None:
        """The first job of an implicit slot: the file, opened to look at (nothing written)."""
        try:
            if require_regular_file(path):
                manager = SessionManager.open(path, read_only=True, env=self.environment)
                slot.read_only = True
            else:  # nothing there: a new session at that path, written by the first write
                manager = SessionManager.open(path, env=self.environment)
        except rpc_errors.PiRpcError as error:
            slot.failure = error
        except (PiSessionError, OSError) as error:
            slot.failure = rpc_errors.from_job_failure(error)
        if slot.failure is not None:
            self.registry.discard(slot)
            return
        if self.options.fsync:
            manager.fsync = True
        slot.manager = manager
        slot.note_file()

    def session_call(
        self,
        p: SessionParams,
        job: Callable[[SessionManager], Any],
        *,
        write: bool = False,
        append: bool = False,
        convert: Callable[[Any, Slot], Any] | None = None,
    ) -> Job[Any]:
        """Queue ``job(manager)`` on the addressed session; its result (through ``convert``) is the reply.

        ``write``: the job may write the file: it runs under the file's lock, a read-only view is
        reopened for writing first (:meth:`writable`), and a failure leaves the session as it was
        (``manager.transaction()``; ``append``: the job is one appender, which takes its own failure
        back). A write is never cancelled once it runs; a read is.
        """
        slot = self.resolve(p)

        def work(_token: CancelToken) -> Any:
            try:
                value = self._write(slot, job, append) if write else job(slot.opened())
                if convert is not None:
                    value = convert(value, slot)
                return msgspec.Raw(encode_result(value))
            except (PiSessionError, OSError) as error:
                raise rpc_errors.from_job_failure(error) from error
            finally:
                slot.note_file()

        return slot.queue.submit(work, interruptible=not write)

    def _write(self, slot: Slot, job: Callable[[SessionManager], Any], append: bool) -> Any:
        manager = self.writable(slot)
        if self.options.fsync:
            manager.fsync = True
        undo = self.options.rollback_failed_writes
        manager.rollback_failed_appends = undo
        lock = self.registry.file_lock(slot.real_path) if slot.real_path else contextlib.nullcontext()
        with lock:
            try:
                if append or not undo:
                    return job(manager)
                with manager.transaction():
                    return job(manager)
            finally:
                self.report_foreign_writes(slot)

    def writable(self, slot: Slot) -> SessionManager:
        """The manager of ``slot``, reopened for writing if it was opened to look at. A version 1 or
        2 file is not converted behind the user's back: that write is refused (ReadOnly)."""
        manager = slot.opened()
        if not slot.read_only:
            return manager
        path = slot.path
        assert path is not None  # an implicit slot is bound to its file
        version = _file_version(path)
        if version is not None:
            raise rpc_errors.PiRpcError(
                rpc_errors.READ_ONLY,
                f"{path} is a version {version} session, opened by uri to look at: writing to it would "
                "rewrite the whole file in version 3 with new entry ids. Open it with pi/open (which "
                "converts it, as pi does), then write.",
                {"path": path, "version": version},
            )
        require_regular_file(path)
        fresh = SessionManager.open(path, fsync=self.options.fsync, env=manager.environment)
        leaf = manager.get_leaf_id()
        if leaf is None:
            fresh.reset_leaf()
        elif leaf is not ABSENT and fresh.get_entry(leaf) is not ABSENT:
            fresh.branch(leaf)
        manager.close()
        slot.manager, slot.read_only = fresh, False
        return fresh

    # ------------------------------------------------------------------ session info

    def slot_info(self, slot: Slot) -> dict[str, Any]:
        """Who a session is: handle, file, ids, leaf, header (the oracle's "manager info" and more).
        Read on the slot's worker."""
        m = slot.opened()
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
                "entryCount": m.entry_count(),
                "sessionName": m.get_session_name(),
                "readOnly": slot.read_only,
            }
        )
        # pi reads a damaged file without a word; a front end should be able to say what is missing
        skipped = [problem for problem in m.problems if problem.skipped]
        info["skippedLines"] = len(skipped)
        if skipped:
            info["skipped"] = [problem.to_json() for problem in skipped[:SKIPPED_LISTED]]
        return info


def _file_version(path: str) -> Any:
    """The version of the session in ``path`` if writing would convert it (1 or 2), else None."""
    fd = open_for_reading(path)
    try:
        header = peek_header(fd).value
    finally:
        os.close(fd)
    if not is_valid_header(header) or not needs_migration([header]):
        return None
    version = header.get("version")
    return 1 if version is None else version


def create_server(options: ServerOptions | None = None) -> PiSessionServer:
    """A fresh server with every ``pi/*`` method and the language features."""
    server = PiSessionServer(options)
    from . import language_features, methods_files, methods_open, methods_read, methods_write

    for module in (methods_open, methods_files, methods_write, methods_read):
        module.register(server)
    server.language_features = language_features.register_language_features(server)
    return server
