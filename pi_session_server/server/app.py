"""The sidecar server: ``pi/*`` requests, and the language features of session documents
(``textDocument/*``) on a pygls ``LanguageServer`` made when a client first speaks LSP to it.

The event loop only parses, routes and answers: every request on a session becomes a job on the
session's serial queue (:mod:`workers`), which runs it on a worker thread, encodes the result there
and writes the reply. Requests on one session are answered in arrival order; a session stuck on a
lock another process holds delays nobody else. Handlers stay thin: they validate params
(``params.py``) and hand one library call to :meth:`PiSessionServer.session_call` (or
:meth:`PiSessionServer.run` for work on no session).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from pi_session_server import __version__
from pi_session_server.errors import PiSessionError, PiVersionError, SessionFileReplacedError
from pi_session_server.format.jsvalue import ABSENT, strict_equal
from pi_session_server.session import FileChange, SessionManager
from pi_session_server.session.environment import Environment
from pi_session_server.session.loader import is_valid_header, open_for_reading, peek_header
from pi_session_server.session.migrate import needs_migration
from pi_session_server.session.profiles import DEFAULT_PI, Profile, profile_for

from . import errors as rpc_errors
from .file_uri import from_fs_path
from .idle_slots import IdleSlots
from .index_keeping import IndexKeeper
from .jsonrpc import MESSAGE_TYPE_WARNING, WINDOW_SHOW_MESSAGE, Connection, LanguageServerPart, run_stdio
from .locations import FileKeys, file_keys, file_names, require_regular_file, uri_to_path
from .own_writes import OwnWrites
from .params import (
    EnvironmentOptions,
    LocatedParams,
    SessionParams,
    convert,
    profile_of,
    with_paths_as_the_file_system_has_them,
)
from .pending_deletes import PendingDeletes, Waiting, deleted_as
from .poller import DID_CHANGE, FilePoller, did_change_params
from .preview_keeping import PreviewKeeper
from .registry import Registry, Slot
from .wire import encoded_reply
from .workers import CancelToken, Job, WorkerPool, keep_big_blocks_out_of_the_heap

if TYPE_CHECKING:
    from .language_documents import LanguageDocuments

logger = logging.getLogger(__name__)
T = TypeVar("T")

FOREIGN_WRITER = "pi/foreignWriter"
SKIPPED_LISTED = 20  # lines pi skips named in a session's info (all of them: the diagnostics)


class ServerOptions(msgspec.Struct):
    fsync: bool = False  # fsync every append (durability) instead of leaving it to the OS
    # seconds between two looks at every followed file; 0: files are not followed (a session keeps
    # what it read, as pi's does)
    watch_interval: float = 0.15
    # a failed write leaves the session as it was (the reference keeps a failed entry in memory)
    rollback_failed_writes: bool = True
    # the pi release every session and document behaves like, unless a request asks for another
    # (``serve --pi``, ``initializationOptions.piVersion``; the one place the server chooses it)
    pi: Profile = msgspec.field(default_factory=lambda: profile_for(DEFAULT_PI))
    # the working directory and variables sessions are opened in (None: the process's at start)
    environment: Environment | None = None
    # the client's lines end at "\n" only, as pi's (Neovim's buffers), not as the LSP's, which a
    # lone CR ends too: ``initializationOptions.lineBreaks`` (positions on the wire follow them)
    lines_end_at_newline_only: bool = False


# the shortest time between two looks at the followed files (a shorter one given is taken as this)
WATCH_INTERVAL_MIN = 0.01


def watch_interval(seconds: float) -> float:
    """The time between two looks at the followed files for ``seconds`` given (``serve
    --watch-interval``, ``initializationOptions.watchInterval``): 0 is never, a shorter time
    than :data:`WATCH_INTERVAL_MIN` is that."""
    return 0 if seconds <= 0 else max(WATCH_INTERVAL_MIN, seconds)


class InitializationOptions(msgspec.Struct, rename="camel", kw_only=True):
    """``initializationOptions`` the server reads (others are ignored)."""

    fsync: bool | UnsetType = UNSET
    watch_interval: Annotated[float, msgspec.Meta(ge=0, le=10)] | UnsetType = UNSET  # (0: not followed)
    rollback_failed_writes: bool | UnsetType = UNSET
    pi_version: str | UnsetType = UNSET
    environment: EnvironmentOptions | UnsetType = UNSET
    line_breaks: Literal["lsp", "newline"] | UnsetType = UNSET


class HeldByUri(NamedTuple):
    """A request by ``uri``: its path, and the session held on that file (None: none is)."""

    path: str
    slot: Slot | None


def _handle_addressed(p: SessionParams, by_uri: HeldByUri | None) -> str | None:
    """The handle of the held session a request is on (by ``uri``: see ``by_uri``), None if it is
    not known (a ``uri`` no session holds: the request opens the file, and is ordered by it)."""
    if p.session is not UNSET:
        return p.session
    return None if by_uri is None or by_uri.slot is None else by_uri.slot.handle


class PiSessionServer:
    """The sidecar. ``registry`` holds the open sessions, ``pool`` runs their jobs, ``connection``
    talks to the client; ``lsp`` is pygls' ``LanguageServer`` (lifecycle, workspace, the
    capabilities announced), None until a client speaks LSP (see :class:`_LanguageServer`). The
    members of it the language features use are reached through this object."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        #: what pi would read from its process, for the sessions requests open (see
        #: session/environment.py); a request may give its own (``environment``)
        self.environment = self.options.environment or Environment.from_process()
        keep_big_blocks_out_of_the_heap()
        self.pool = WorkerPool()
        self.registry = Registry(self.pool)
        self.own_writes = OwnWrites()  # what our sessions wrote, not to be blamed on another process
        self.idle_slots = IdleSlots(self.registry, self._shown_in_editor)
        #: the files pi/delete requests are deleting: the requests on one sent after waits for it
        self.pending_deletes = PendingDeletes(self.pool)
        self.lsp: Any = None
        self.connection = Connection(_LanguageServer(self))
        self.preview_keeper = PreviewKeeper(self.pool, lambda: self.connection.quiet_seconds)
        self.index_keeper = IndexKeeper(self.pool, lambda: self.connection.quiet_seconds)
        self.poller = FilePoller(self)
        self.language_documents: LanguageDocuments | None = None

    # ------------------------------------------------------------------ pygls' part

    @property
    def speaks_lsp(self) -> bool:
        """Whether the client spoke LSP (initialize): its capabilities are known."""
        return self.lsp is not None

    def _language_server(self) -> Any:
        if self.lsp is None:
            raise RuntimeError("the language server is made when a client first speaks LSP")
        return self.lsp

    @property
    def protocol(self) -> Any:
        return self._language_server().protocol

    @property
    def workspace(self) -> Any:
        return self._language_server().workspace

    @property
    def client_capabilities(self) -> Any:
        return self._language_server().client_capabilities

    def feature(self, method: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
        return cast(Callable[[Callable[..., Any]], Any], self._language_server().feature(method, options))

    def command(self, name: str) -> Callable[[Callable[..., Any]], Any]:
        return cast(Callable[[Callable[..., Any]], Any], self._language_server().command(name))

    async def workspace_apply_edit_async(self, params: Any) -> Any:
        return await self._language_server().workspace_apply_edit_async(params)

    def apply_initialization_options(self, options: Any) -> None:
        """``initializationOptions``: ``{"fsync": bool, "watchInterval": seconds, "rollbackFailedWrites":
        bool, "piVersion": "1.6.0" | "0.86.1", "environment": {"cwd", "home", "agentDir"}, "lineBreaks":
        "lsp" | "newline"}``. Options that do not fit are reported in the log (an unknown pi version
        to the user too) and the defaults stay."""
        if options is None:
            return
        try:
            if isinstance(options, dict):
                options = with_paths_as_the_file_system_has_them(options)
            given = convert(options, InitializationOptions)
        except rpc_errors.PiRpcError as error:
            logger.warning("initializationOptions ignored (the defaults stay): %s", error.message)
            return
        if given.fsync is not UNSET:
            self.options.fsync = given.fsync
        if given.watch_interval is not UNSET:  # (as `serve --watch-interval` takes it)
            self.options.watch_interval = watch_interval(given.watch_interval)
        if given.rollback_failed_writes is not UNSET:
            self.options.rollback_failed_writes = given.rollback_failed_writes
        if given.pi_version is not UNSET:
            self._choose_pi(given.pi_version)
        if given.environment is not UNSET:
            self.environment = given.environment.applied_to(self.environment)
        if given.line_breaks is not UNSET:
            self.options.lines_end_at_newline_only = given.line_breaks == "newline"

    def environment_for(self, p: LocatedParams) -> Environment:
        """The environment a request finds its files in: its own ``environment`` over the server's."""
        return p.environment_in(self.environment)

    def profile_for(self, p: Any) -> Profile:
        """The pi release a request behaves like: its own ``pi`` over the server's (-32602 for one
        the server does not know)."""
        return profile_of(p, self.options.pi)

    def _choose_pi(self, version: str) -> None:
        try:
            self.options.pi = profile_for(version)
        except PiVersionError as error:
            text = (
                f"initializationOptions.piVersion: {error}; the server follows pi {self.options.pi.version}"
            )
            logger.warning("%s", text)
            self.connection.notify(
                WINDOW_SHOW_MESSAGE,
                {"type": MESSAGE_TYPE_WARNING, "message": f"pi-session: {text}"},
            )

    def serve_stdio(self) -> None:
        run_stdio(self, self.connection, self.poller.start)

    def shutdown(self) -> None:
        self.poller.stop()
        self.idle_slots.stop()
        if self.language_documents is not None:
            self.language_documents.stop()
        if self.lsp is not None:
            self.lsp.shutdown()
        self.index_keeper.hurry()  # (written while the previews are)
        self.preview_keeper.finish()
        self.index_keeper.finish()

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

    def report_foreign_writes(self, slot: Slot, before: os.stat_result | None = None) -> None:
        """Tell the client what other processes wrote while this session appended (on the worker).
        Bytes another handle of this server wrote are not another process's (``before``: the
        file as :meth:`OwnWrites.before` found it before this write)."""
        manager = slot.manager
        if manager is None:
            return
        for event in manager.drain_events():
            if slot.real_path is not None and self.own_writes.wrote(slot.real_path, before, event):
                continue
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
        return self.run_step(name, lambda token: encoded_reply(job(token)))

    def run_step(self, name: str, job: Callable[[CancelToken], Any]) -> Job[Any]:
        """:meth:`run`'s job whose value goes to the handler awaiting it, not into the reply (a
        step of a request); a library failure is the error the request answers."""

        def work(token: CancelToken) -> Any:
            try:
                return job(token)
            except (PiSessionError, OSError) as error:
                raise rpc_errors.from_job_failure(error) from error

        return self.pool.queue(name).submit(work)

    def resolve(self, p: SessionParams, keys: FileKeys | None = None, *, write: bool = False) -> Slot:
        """The slot a request addresses: ``session`` handle, or ``uri``: the session held on that
        path, or on the file ``keys`` say it is (another spelling), else one opened on demand (the
        open is the first job of the new slot, so the request waits for it in the queue; ``write``:
        the request writes, so a missing file is a new session there rather than an error)."""
        if p.session is not UNSET:
            slot = self.registry.get(p.session)
        elif p.uri is UNSET:
            raise rpc_errors.invalid_params("Invalid params: one of `session` or `uri` is required")
        else:
            path = uri_to_path(p.uri)
            found = self.registry.find_by_path(path)
            if found is None and keys:
                found = self.registry.find_by_file(keys)
            if found is None:
                slot = self.registry.add(None, implicit=True, path=path, keys=keys)
                opening = slot
                slot.queue.submit(
                    lambda _token: self._open_for_uri(opening, path, write=write), interruptible=False
                )
            else:
                slot = found
        self.idle_slots.used(slot)
        return slot

    def _shown_in_editor(self, slot: Slot) -> bool:
        """An editor has the file of ``slot`` open (a document it sent, however it spells the
        file; on the loop)."""
        documents = self.language_documents
        paths = {slot.path, slot.real_path} - {None}
        return documents is not None and any(
            not state.from_disk and (state.path in paths or bool(slot.keys & state.keys))
            for state in documents.docs.values()
        )

    def _open_for_uri(self, slot: Slot, path: str, *, write: bool) -> None:
        """The first job of an implicit slot: the file, opened to look at (nothing written). Where
        nothing is, a read fails (ENOENT): pi's open would answer a new, empty session, which
        hides a mistyped or deleted file from the front end; a write starts the session there, as
        pi's open and that write would, but on a file a pi/delete deleted while a session held it:
        that session's requests find it closed (UnknownSession), and a write by ``uri`` sent before
        the delete's answer is one of them, whether it is read before or after that answer."""
        try:
            pi = self.options.pi
            if require_regular_file(path):
                with self.index_keeper.after_reply():
                    manager = SessionManager.open(path, read_only=True, pi=pi, env=self.environment)
                slot.read_only = True
            elif not write:
                raise rpc_errors.missing_session_file(path)
            elif (closed := self.registry.closed_on_deleted_file(path, file_names(path))) is not None:
                raise rpc_errors.unknown_session(closed)
            else:  # nothing there: a new session at that path, written by the first write
                manager = SessionManager.open(path, pi=pi, env=self.environment)
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
        moves_leaf: bool = False,
        switches_file: bool = False,
        convert: Callable[[Any, Slot], Any] | None = None,
        files: Sequence[str | None] = (),
    ) -> Any:
        """Queue ``job(manager)`` on the addressed session; its result (through ``convert``) is the reply.

        ``write``: the job may write the file: it runs under the file's lock, a read-only view is
        reopened for writing first (:meth:`writable`), and a failure leaves the session as it was
        (``manager.transaction()``; ``append``: the job is one appender, which takes its own failure
        back, and returns the new entry's id). A write is never cancelled once it runs; a read is.
        An append is told as ``pi/didChange`` ``appended`` before the reply, as pi's appends are:
        every view of the session takes the entry in, not only the one that asked.

        ``moves_leaf``: the job moves the session's leaf (pi/branch, pi/resetLeaf,
        pi/branchWithSummary): a move is told as ``pi/didChange`` ``leafMoved`` before the reply, so
        that every view of the session the client shows follows it, not only the one that asked.

        ``switches_file``: the job leaves the session on another file, or on a new session
        (pi/createBranchedSession, pi/newSession, pi/setSessionFile): told as ``pi/didChange``
        ``reloaded`` (the new file's uri) before the reply, so that every view of the handle loads
        the session it shows now.

        ``files``: the other files the job opens (resolved as pi/delete resolves them, None for one
        that cannot be resolved on the loop). A request on a file a pi/delete sent before it is
        deleting starts once the delete answered (see :mod:`.pending_deletes`).
        """
        start = partial(
            self._session_call,
            p,
            job,
            write=write,
            append=append,
            moves_leaf=moves_leaf,
            switches_file=switches_file,
            convert=convert,
        )
        pending = self.pending_deletes
        by_uri = self._held_by_uri(p, None)
        unheld = by_uri.path if by_uri is not None and by_uri.slot is None else None
        if unheld is None and not pending:
            return start(keys=None)
        # its place among the requests waiting: none on its session sent after it passes it
        waiting = pending.arrived(_handle_addressed(p, by_uri))
        if unheld is not None:
            # a session may hold the file through another spelling: a worker looks at what it is
            # (the file the request opens if none does: its look is not made again)
            looked = deleted_as(unheld, self.environment) or unheld
            return pending.looked_first(
                partial(file_keys, looked),
                lambda keys, look: self._after_deletes(p, files, start, keys, waiting, (looked, look)),
                waiting,
            )
        return self._after_deletes(p, files, start, None, waiting, None)

    def _after_deletes(
        self,
        p: SessionParams,
        files: Sequence[str | None],
        start: Callable[..., Any],
        keys: FileKeys | None,
        waiting: Waiting,
        looked: tuple[str, asyncio.Future[Any]] | None,
    ) -> Any:
        """``start(keys)`` once the pi/deletes sent before the request of ``p`` that it must wait
        for answered, and the requests on its session or its files sent before it started (see
        :meth:`session_call`)."""
        by_uri = self._held_by_uri(p, keys)
        waiting.session = _handle_addressed(p, by_uri)
        opened = self._file_opened_for(by_uri)
        return self.pending_deletes.ordered(
            [*files, *opened], partial(start, keys=keys), waiting=waiting, looked=looked
        )

    def _held_by_uri(self, p: SessionParams, keys: FileKeys | None) -> HeldByUri | None:
        """For a request by ``uri``: its path and the session held on that file, by that path or by
        what the file is (``keys``; None where no worker looked yet); None for a request by handle.
        (A bad ``uri`` is refused here.)"""
        if p.session is not UNSET or p.uri is UNSET:
            return None
        path = uri_to_path(p.uri)
        slot = self.registry.find_by_path(path) or (self.registry.find_by_file(keys) if keys else None)
        return HeldByUri(path, slot)

    def _file_opened_for(self, by_uri: HeldByUri | None) -> list[str]:
        """The file a request by ``uri`` opens (resolved as pi/delete resolves it), if no session
        holds it: one a session holds is not opened again, and a delete closes that session in the
        order of its queue."""
        if by_uri is None or by_uri.slot is not None:
            return []
        target = deleted_as(by_uri.path, self.environment)
        return [] if target is None else [target]

    def _session_call(
        self,
        p: SessionParams,
        job: Callable[[SessionManager], Any],
        *,
        write: bool,
        append: bool,
        moves_leaf: bool,
        switches_file: bool,
        convert: Callable[[Any, Slot], Any] | None,
        keys: FileKeys | None = None,
    ) -> Job[Any]:
        slot = self.resolve(p, keys, write=write)

        def work(_token: CancelToken) -> Any:
            try:
                leaf_before = slot.opened().get_leaf_id() if moves_leaf else ABSENT
                value = self._write(slot, job, append) if write else job(slot.opened())
                if moves_leaf:
                    self._tell_leaf_move(slot, leaf_before)
                if switches_file:
                    self._tell_switch(slot)
                if convert is not None:
                    value = convert(value, slot)
                return encoded_reply(value)
            except (PiSessionError, OSError) as error:
                raise rpc_errors.from_job_failure(error) from error
            finally:
                self.note_slot(slot)

        return slot.queue.submit(work, interruptible=not write)

    def note_slot(self, slot: Slot) -> None:
        """After a job on ``slot`` (on its worker): remember where its file and leaf are; when the
        leaf moved, an editor showing the file redraws what follows it (the leaf's code lens)."""
        before = slot.branched_leaf
        slot.note_file()
        after = slot.branched_leaf
        if before is after or (before is not ABSENT and after is not ABSENT and strict_equal(before, after)):
            return
        documents = self.language_documents
        paths = {path for path in (slot.path, slot.real_path) if path is not None}
        keys = slot.keys
        if documents is not None and paths:
            self.loop_call(lambda: documents.held_leaf_moved(paths, keys))

    def _write(self, slot: Slot, job: Callable[[SessionManager], Any], append: bool) -> Any:
        manager = self.writable(slot)
        if self.options.fsync:
            manager.fsync = True
        undo = self.options.rollback_failed_writes
        manager.rollback_failed_appends = undo
        real_path = slot.real_path
        lock = self.registry.file_lock(real_path) if real_path else contextlib.nullcontext()
        with lock:
            shared = real_path is not None and len(self.registry.slots_for_path(real_path)) > 1
            before = self.own_writes.before(real_path, shared) if real_path is not None else None
            try:
                if append or not undo:
                    value = job(manager)
                else:
                    with manager.transaction():
                        value = job(manager)
            except SessionFileReplacedError:
                # the file that replaced the session's is read before the refusal is answered (also
                # when files are not followed: else every write is refused until the file is opened
                # again): the client is told of it first, and writes again on the session it holds
                self._tell_change(slot, manager.refresh_from_disk())
                raise
            finally:
                self.poller.wrote(slot)
                self.report_foreign_writes(slot, before)
                if real_path is not None:
                    self.own_writes.after(real_path, before)
            # what another program did to the file right before our write is told before the
            # answer: the lines it appended, which our entry follows (the client never meets an
            # entry whose parent it was not told of), or a file it rewrote, read again here (the
            # client refetches the session, our entry in it, instead of putting our entry in a
            # tree it is about to throw away). What came after ours the watcher tells.
            change = (
                manager.refresh_from_disk()
                if manager.reload_due and self.poller.follows
                else manager.take_appended_by_others()
            )
            for told in _with_own_append(change, value if append else ABSENT, manager.get_leaf_id()):
                self._tell_change(slot, told)
            return value

    def _tell_leaf_move(self, slot: Slot, leaf_before: Any) -> None:
        """``pi/didChange`` ``leafMoved`` when the leaf of the session of ``slot`` is not
        ``leaf_before`` any more (an entry a move wrote, pi/branchWithSummary's, is the session's
        own append: not told as new, as pi/append's are not)."""
        leaf = slot.opened().get_leaf_id()
        if strict_equal(leaf, leaf_before):  # (None is None: no leaf before or after)
            return
        self._tell_change(slot, FileChange("leafMoved", [], leaf))

    def _tell_switch(self, slot: Slot) -> None:
        """``pi/didChange`` ``reloaded`` for a session that a request left on another file or on a
        new session: its views load what the handle shows now (the uri is the new file's)."""
        slot.note_file()
        self._tell_change(slot, FileChange("reloaded", [], slot.opened().get_leaf_id()))

    def _tell_change(self, slot: Slot, change: FileChange) -> None:
        """``pi/didChange`` for what a refresh of the session of ``slot`` took in, if anything."""
        if change.kind != "unchanged":
            self.notify(DID_CHANGE, did_change_params(self, slot, change))

    def writable(self, slot: Slot) -> SessionManager:
        """The manager of ``slot``, made writable if it was opened to look at: in place when it holds
        the file as an open for writing would (what is kept beside it, its totals and tree views,
        stays good), or once it took in the lines another program (pi) appended since it read the
        file (:meth:`_take_in_appends`); else the file opened again for writing. A version 1 or 2
        file is not converted behind the user's back: that write is refused (ReadOnly)."""
        manager = slot.opened()
        if not slot.read_only:
            return manager
        path = slot.path
        assert path is not None  # an implicit slot is bound to its file
        require_regular_file(path)  # before anything opens it: another program may have put a FIFO there
        version = _file_version(path)
        if version is not None:
            raise rpc_errors.PiRpcError(
                rpc_errors.READ_ONLY,
                f"{path} is a version {version} session, opened by uri to look at: writing to it would "
                "rewrite the whole file in version 3 with new entry ids. Open it with pi/open (which "
                "converts it, as pi does), then write.",
                {"path": path, "version": version},
            )
        if manager.make_writable() or self._take_in_appends(slot, manager):
            slot.read_only = False
            return manager
        fresh = SessionManager.open(
            path, fsync=self.options.fsync, pi=manager.profile, env=manager.environment
        )
        _keep_leaf(fresh, manager.get_leaf_id())
        manager.close()
        slot.manager, slot.read_only = fresh, False
        return fresh

    def _take_in_appends(self, slot: Slot, manager: SessionManager) -> bool:
        """When the file only grew by lines another program appended since ``manager`` read it (pi
        writing the session): take them in as the file poller does, tell the client as it does
        (its next look then finds nothing new: they are told once), and make the manager writable
        in place. The session keeps the leaf it had, as an open for writing in its place keeps it:
        our write goes where it would have gone before pi wrote. False when the file changed
        otherwise (it is opened again for writing); what a refresh took in is told either way."""
        leaf = manager.get_leaf_id()
        while manager.only_appended_to():
            change = manager.refresh_from_disk()
            _keep_leaf(manager, leaf)
            change.leaf_id = manager.get_leaf_id()
            self._tell_change(slot, change)
            if manager.make_writable():
                return True
            if change.kind != "appended":  # a line cut short, or a change a refresh had to reload
                return False
        return False

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
                "piVersion": m.profile.version,
            }
        )
        # pi reads a damaged file without a word; a front end should be able to say what is missing
        skipped = [problem for problem in m.problems if problem.skipped]
        info["skippedLines"] = len(skipped)
        if skipped:
            info["skipped"] = [problem.to_json() for problem in skipped[:SKIPPED_LISTED]]
        return info


def _with_own_append(change: FileChange | None, own_id: Any, leaf: Any) -> list[FileChange]:
    """What a write tells (in order): ``change``, what another program did to the file right
    before it, and the entry ``own_id`` the write appended (ABSENT: none), with the session's
    ``leaf`` now. Lines another program appended before ours and ours are told as one ``appended``,
    in file order; a reload read ours with the rest of the file, and tells it."""
    told = [] if change is None or change.kind == "unchanged" else [change]
    if own_id is ABSENT or (told and told[-1].kind == "reloaded"):
        return told
    if told and told[-1].kind == "appended":
        return [FileChange("appended", [*told[-1].new_entry_ids, own_id], leaf)]
    return [*told, FileChange("appended", [own_id], leaf)]


def _keep_leaf(manager: SessionManager, leaf: Any) -> None:
    """Put the leaf of ``manager`` back at ``leaf`` (None: before the first entry) if it holds that
    entry; else it stays where the last look at the file put it."""
    if leaf is None:
        manager.reset_leaf()
    elif leaf is not ABSENT and manager.get_entry(leaf) is not ABSENT:
        manager.branch(leaf)


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


class _LanguageServer(LanguageServerPart):
    """pygls' part of the server, made on demand (see jsonrpc.LanguageServerPart): the
    ``LanguageServer`` with its ``initialize`` options and the language features."""

    def __init__(self, server: PiSessionServer) -> None:
        self.server = server

    def prepare(self) -> None:
        for module in ("pygls.lsp.server", "pygls.protocol", f"{__package__}.language_features"):
            importlib.import_module(module)

    def create(self) -> Any:
        from lsprotocol import types
        from pygls.lsp.server import LanguageServer
        from pygls.protocol import LanguageServerProtocol, default_converter

        from .language_features import register_language_features

        server = self.server
        lsp = LanguageServer(
            "pi-session-server",
            __version__,
            protocol_cls=LanguageServerProtocol,
            converter_factory=default_converter,
        )

        @lsp.feature(types.INITIALIZE)
        def initialize(params: types.InitializeParams) -> None:
            server.apply_initialization_options(params.initialization_options)

        server.lsp = lsp
        server.language_documents = register_language_features(server)
        return lsp.protocol


def create_server(options: ServerOptions | None = None) -> PiSessionServer:
    """A fresh server with every ``pi/*`` method (the language features come with pygls' part)."""
    server = PiSessionServer(options)
    from . import methods_files, methods_open, methods_read, methods_write

    for module in (methods_open, methods_files, methods_write, methods_read):
        module.register(server)
    return server
