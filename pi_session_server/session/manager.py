"""``SessionManager``: pi's session API over a JSONL file (or in memory), like the reference.

State and every operation follow ``docs/API.md`` for the pi release of the manager's
:attr:`SessionManager.profile` (``pi=`` on every constructor, pi 1.6.0 by default; see
:mod:`.profiles`); the deliberate differences are listed in ``docs/DEVIATIONS.md``. Beyond the reference, a persisted manager can follow a file that
another process appends to (:meth:`SessionManager.refresh_from_disk`) and reports writes by others
(:meth:`SessionManager.drain_events`).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import (
    ArgOutOfRangeError,
    ContextEditError,
    EntryNotFoundError,
    ForkError,
    InvalidArgTypeError,
    InvalidSessionFileError,
    PiSessionError,
    SessionFileReplacedError,
    StaleFileError,
    ValueTypeError,
    cannot_read_property,
)
from ..format.dates import file_timestamp, ms, now_iso
from ..format.entry import Entry
from ..format.gcpause import gc_paused
from ..format.ids import assert_valid_session_id, new_entry_id, uuid7
from ..format.jsjson import dumps_bytes, surely_encodable
from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, coalesce, get, index_key, js_string_of, strict_equal, truthy
from ..format.scan import FileLineSource, IdIndex, LineProblem, ScanResult, scan_entries
from . import loader, storage
from .cache_dir import index_settings
from .chains import Positions, entry_on_line
from .context import (
    ContextSelection,
    build_session_path,
    current_system_message,
    select_context,
    select_context_entries,
    walk_to_root,
)
from .entry_rows import entry_rows
from .environment import Environment, current
from .fields import field as entry_field
from .index_rows import IndexedRows, RowPath
from .loader import (
    ExactLoad,
    MigratingLineSource,
    ValueNotWrittenBack,
    ends_without_newline,
    is_valid_header,
    iter_kept_values,
    load_exact,
    load_lazy,
    migrated_rewrite_chunks,
    open_for_reading,
    peek_header,
    rewrite_chunks,
)
from .migrate import (
    CURRENT_SESSION_VERSION,
    LaterValueNeeded,
    StreamedMigration,
    becomes_current,
    migrate_to_current_version,
    needs_migration,
    not_an_entry,
    session_version,
)
from .paths import (
    StrPath,
    default_session_dir_path,
    make_dirs,
    node_join,
    node_received,
    normalize_path,
    path_given,
    resolve_path,
    session_dir_or_default,
)
from .profiles import DEFAULT_PI, PiVersion, Profile, profile_for, require_api
from .projection import (
    edit_target_role,
    is_edit_replacement,
    session_context_of,
    session_projection_of,
    text_blocks,
)
from .replaced_file import named_ids, require_receives
from .rewrites import FileState, LockedFile, Replaced, rewritten_after
from .row_tree import RowTree, row_tree
from .tree import TreeNode, build_tree

if TYPE_CHECKING:
    from .envelopes import Envelopes


class FileChange(msgspec.Struct):
    """What :meth:`SessionManager.refresh_from_disk` found."""

    # "unchanged" | "appended" | "reloaded" | "deleted" | "rewriting": the file is empty or has no
    # header yet, another program is writing it again in place (told once, when a look first finds
    # it so) | "unreadable": it has held still without a header for storage.UNREADABLE_AFTER seconds (a
    # shell's `>` left other text, an editor saved it with a byte order mark): it is not a session
    # now. The session stays as it was in memory through both; "reloaded" follows a header's return.
    # (The server tells a request's move of the leaf in this shape too, as "leafMoved": never a
    # refresh's.)
    kind: str
    new_entry_ids: list[Any] = msgspec.field(default_factory=list)
    leaf_id: Any = ABSENT

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "newEntryIds": self.new_entry_ids}
        if self.leaf_id is not ABSENT:
            out["leafId"] = self.leaf_id
        return out


class ForeignWrite(msgspec.Struct):
    """Another process changed the file between two of our writes."""

    path: str
    expected_size: int
    found_size: int

    @property
    def message(self) -> str:
        if self.found_size < self.expected_size:
            return f"{self.path} was truncated or rewritten by another process"
        return f"another process appended {self.found_size - self.expected_size} bytes to {self.path}"


def _now() -> str:
    return now_iso()


def _object(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not ABSENT}


def _line_bytes(value: Any) -> bytes:
    return dumps_bytes(value) + b"\n"


def _entry_line(value: dict[str, Any]) -> bytes:
    """The line of a new entry; ValueTypeError when a value in it is not one JSON can hold."""
    try:
        return _line_bytes(value)
    except (TypeError, ValueError) as err:
        raise ValueTypeError(f"{value.get('type')} entry cannot be written as JSON: {err}") from None


def _refused_or_line(value: dict[str, Any]) -> bytes | None:
    """ValueTypeError when a value in a new entry is not one JSON can hold, told without encoding
    it where a look at its values can tell (None), else by making its line (returned)."""
    return None if surely_encodable(value) else _entry_line(value)


_CR_LF_RUNS = re.compile(r"[\r\n]+")
# A migration that finds the file changed when it is about to rename reads it again; a file that
# changes each time is left alone after this many tries.
_MIGRATION_ATTEMPTS = 5
# An open that finds the file empty writes its header only while it is still empty: a file another
# program wrote meanwhile is read again; one emptied and written again each time is left alone after
# this many reads.
_EMPTY_FILE_ATTEMPTS = 5
# How many bytes of a fork's lines are appended at a time.
_FORK_BATCH = 4 * 1024 * 1024
# How long (seconds, at least and at most) a migration watches its file for a pi that read it just
# before the rename: twice as long as the migration itself took, within these bounds.
_MIGRATION_GRACE = (0.1, 2.0)


class _Headerless(msgspec.Struct):
    """The followed file as a look last found it without a session header."""

    signature: tuple[int, int, int, int, int]  # inode, size, mtime, ctime and device when looked at
    since: float  # time.monotonic() when the file was first found so (restarts when it changes)
    told: bool = False  # "unreadable" was reported (until the file changes again)


def _signature_of(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev


def _whole_number(value: Any, name: str) -> int:
    """``value``, an argument that must be a whole number, as an int (a float that is one taken, as
    JavaScript's 3.0 is 3), else Node's error for it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ArgOutOfRangeError(
            f'The value of "{name}" is out of range. It must be an integer. Received {js_string_of(value)}'
        )
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # (an int subclass: an IntEnum)
    raise InvalidArgTypeError(
        f'The "{name}" argument must be of type number. Received {node_received(value)}'
    )


class SessionManager:
    """pi's ``SessionManager``. Construct with the classmethods (``create``, ``open``, ...)."""

    def __init__(
        self,
        cwd: StrPath,
        session_dir: StrPath,
        session_file: StrPath | None = ABSENT,
        persist: bool = False,
        new_session_options: Any = ABSENT,
        preloaded_entries: Any = ABSENT,
        *,
        fsync: bool = False,
        read_only: bool = False,
        on_progress: Callable[[int, int], Any] | None = None,
        pi: PiVersion = DEFAULT_PI,
        index: bool | StrPath = True,
        env: Environment | None = None,
    ) -> None:
        #: the pi release this manager behaves like (see profiles.py)
        self.profile: Profile = profile_for(pi)
        # the working directory and variables pi would read from its process (see environment.py)
        self._env = current(env)
        self._cwd = resolve_path(cwd, env=self._env)
        self._session_dir = normalize_path(session_dir, self._env)
        self._persist = persist
        self.fsync = fsync
        # read_only: load without the reference's load-time writes (newline repair, migration
        # rewrite, header for an empty file); every write method then raises ReadOnlySessionError.
        self.read_only = read_only
        # rollback_failed_appends: an append whose write fails is taken back out of memory even under
        # a pi release that keeps it (0.86.1; the sidecar wants "after a failed request the session
        # is as it was"). pi 1.6.0 always takes it back (profile.rolls_back_failed_appends).
        self.rollback_failed_appends = False
        self._on_progress = on_progress
        # the persistent index of the session file (scan_index): True the default cache directory,
        # False none, or the directory to keep it in
        self._index = index_settings(index)
        self._session_id: Any = ""
        self._session_file: Any = ABSENT
        # The file entries and the id index. After a load from the persistent index they are made
        # when first asked for (_every_entry): until then _rows holds the entries after the header
        # (_rows_header) as the index's rows, and the context is read from the leaf's path of rows.
        self._rows: IndexedRows | None = None
        self._rows_header: Entry | None = None
        self._entry_list: builtins.list[Entry] | None = []
        self._id_map: dict[Any, Entry] | None = {}
        self._labels: dict[Any, tuple[Any, Any]] = {}  # key(targetId) -> (targetId, label)
        self._label_timestamps: dict[Any, Any] = {}
        self._leaf_id: Any = None
        self._flushed = False
        # Is there a message of a conversation role (profile.conversation_roles: the first one makes
        # a new session's file appear) among the file entries? None: not counted yet. Only the first
        # write of a new session asks, so a loaded file is not scanned for it up front.
        self._has_conversation: bool | None = False
        # The header is the first file entry and no other entry has type "session" (then
        # get_entries is a slice, not a filter over every entry).
        self._header_only_first = False
        self._plain_index = True  # context.is_plain_index(self._by_id), kept up to date
        # where chains start in get_entries() (see chains.py); None: not known
        self._chain_starts: builtins.list[int] | None = None
        self._source: FileLineSource | None = None
        self._known_end = 0
        self._line_count = 0
        self._identity: storage.FileIdentity | None = None
        self._marker = b""
        # (mtime, ctime) of the file when it last was as we know it (_known_end bytes, as we left
        # them): a rewrite in place that keeps the size and the last bytes changes them
        self._stamp: tuple[int, int] | None = None
        self._events: builtins.list[ForeignWrite] = []
        self.problems: builtins.list[LineProblem] = []
        self._appender: storage.Appender | None = None
        self._out_of_sync = False  # a foreign write was seen while appending: reload on next refresh
        # ids of the entries another program appended right before one of our appends, taken in
        # then: the next refresh reports them as appended (a new list each time: see transaction())
        self._appended_by_others: builtins.list[Any] = []
        self._headerless: _Headerless | None = None  # the file as last found without a header
        # the file ended inside a line we took in as an entry (read-only, no newline repair): what is
        # appended next finishes or changes that line, so a growing file is reloaded
        self._open_tail = False
        # a read-only load left undone a write an open for writing makes (a migration's rewrite,
        # the header of an empty file): see make_writable
        self._load_writes_skipped = False
        # (read-only: nothing is made on disk, not even the directory of a file that is not there)
        if (
            persist
            and not read_only
            and self._session_dir
            and not os.path.exists(self._disk(self._session_dir))
        ):
            make_dirs(self._disk(self._session_dir))
        if path_given(session_file):
            self._set_session_file(session_file)
        elif isinstance(preloaded_entries, (list, tuple)) and preloaded_entries:
            # (a tuple is the list it holds: the same entries, migrated in place as pi's array's)
            self._load_values(list(preloaded_entries), new_session_options)
        else:
            self.new_session(new_session_options)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def create(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        options: Any = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        env = current(env)
        directory = session_dir_or_default(session_dir, cwd, env)
        return cls(cwd, directory, ABSENT, True, options, fsync=fsync, pi=pi, env=env)

    @classmethod
    def open(
        cls,
        path: StrPath,
        session_dir: StrPath | None = ABSENT,
        cwd_override: StrPath | None = ABSENT,
        *,
        fsync: bool = False,
        read_only: bool = False,
        on_progress: Callable[[int, int], Any] | None = None,
        pi: PiVersion = DEFAULT_PI,
        index: bool | StrPath = True,
        env: Environment | None = None,
    ) -> SessionManager:
        """Open a session file. ``read_only`` loads it without writing anything (see __init__);
        ``on_progress(bytes_read, total_bytes)`` is called while a large file is scanned; ``index``:
        where the file's persistent index is kept (True: the cache directory, see
        ``cache_dir.default_index_directory``; False: no index; else the directory to use)."""
        env = current(env)
        resolved = resolve_path(path, env=env)
        header: Any = None
        if cwd_override is ABSENT and os.path.exists(resolved):
            fd = open_for_reading(resolved)
            try:
                peek = peek_header(fd)
            finally:
                os.close(fd)
            header = peek.value if is_valid_header(peek.value) else None
        header_cwd = (
            header.get("cwd") if header is not None and isinstance(header.get("cwd"), str) else ABSENT
        )
        cwd = coalesce(cwd_override, header_cwd)
        if cwd is ABSENT:
            cwd = env.working_directory()
        directory = (
            normalize_path(session_dir, env) if path_given(session_dir) else os.path.dirname(resolved) or "/"
        )
        profile = profile_for(pi)  # an unknown version fails before anything is read
        return cls(
            cwd,
            directory,
            resolved,
            True,
            fsync=fsync,
            read_only=read_only,
            on_progress=on_progress,
            pi=profile,
            index=index,
            env=env,
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        profile = profile_for(pi)
        env = current(env)
        directory = session_dir_or_default(session_dir, cwd, env)
        filter_cwd = session_dir is not ABSENT and not profile.same_directory(
            directory, default_session_dir_path(cwd, env=env), env
        )
        from . import listing  # imported when used: opening a session (the sidecar's start) lists none

        most_recent = listing.find_most_recent_session(directory, cwd if filter_cwd else ABSENT, env)
        if most_recent:
            return cls(cwd, directory, most_recent, True, fsync=fsync, pi=profile, env=env)
        return cls(cwd, directory, ABSENT, True, fsync=fsync, pi=profile, env=env)

    @classmethod
    def in_memory(
        cls,
        cwd: StrPath = ABSENT,
        options: Any = ABSENT,
        entries: Any = ABSENT,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        env = current(env)
        if cwd is ABSENT:
            cwd = env.working_directory()
        return cls(cwd, "", ABSENT, False, options, entries, pi=pi, env=env)

    @classmethod
    def fork_from(
        cls,
        source_path: StrPath,
        target_cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        options: Any = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        profile = profile_for(pi)  # an unknown version fails before anything is written
        env = current(env)
        source = resolve_path(source_path, env=env)
        target = resolve_path(target_cwd, env=env)
        fd = _open_fork_source(source)
        try:
            peek = peek_header(fd) if fd is not None else None
            if fd is None or peek is None or not is_valid_header(peek.value):
                raise ForkError(f"Cannot fork: source session file is empty or invalid: {source}")
            if ends_without_newline(fd, peek.size):
                storage.repair_trailing_newline(source)  # pi's load of the source, before all else
            directory = session_dir_or_default(session_dir, target, env)
            if not os.path.exists(env.on_disk(directory)):
                make_dirs(env.on_disk(directory))
            new_id = get(options, "id")
            if new_id is not ABSENT:
                assert_valid_session_id(new_id)
            session_id = coalesce(new_id, uuid7())
            timestamp = _now()
            new_file = node_join(directory, f"{file_timestamp(timestamp)}_{js_string_of(session_id)}.jsonl")
            header = _line_bytes(
                {
                    "type": "session",
                    "version": CURRENT_SESSION_VERSION,
                    "id": session_id,
                    "timestamp": timestamp,
                    "cwd": target,
                    "parentSession": source,
                }
            )
            storage.create_exclusive(new_file, header, fsync=fsync, env=env)
            made = os.stat(env.on_disk(new_file))
            try:
                try:
                    _append_values(new_file, _fork_source_values(fd, source, peek), fsync, env)
                except LaterValueNeeded:
                    # (a version 1 source pi did not write: the lines written so far are taken back)
                    os.truncate(env.on_disk(new_file), len(header))
                    _append_values(new_file, _fork_source_values(fd, source, peek, held=True), fsync, env)
            except BaseException:
                # the source is read as the fork is written: a fork that fails (the source cannot
                # be read on, the disk is full, Ctrl-C) leaves no part of itself to be taken for a session
                _remove_if_still(env.on_disk(new_file), made)
                raise
        finally:
            if fd is not None:
                os.close(fd)
        return cls(target, directory, new_file, True, fsync=fsync, pi=profile, env=env)

    # ------------------------------------------------------------------ listing statics

    @classmethod
    def list(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        on_progress: Callable[..., Any] | None = None,
        signal: Any = None,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> builtins.list[Any]:
        from . import listing

        return listing.list_sessions(cwd, session_dir, on_progress, signal, pi=pi, env=env)

    @classmethod
    def list_all(
        cls,
        session_dir: StrPath | Callable[..., Any] | None = ABSENT,
        on_progress: Any = None,
        signal: Any = None,
        *,
        env: Environment | None = None,
    ) -> builtins.list[Any]:
        from . import listing

        return listing.list_all_sessions(session_dir, on_progress, signal, env=env)

    @classmethod
    def find_by_id(
        cls,
        cwd: StrPath,
        session_id: Any,
        session_dir: StrPath | None = ABSENT,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> Any:
        from . import listing

        return listing.find_by_id(cwd, session_id, session_dir, pi=pi, env=env)

    # ------------------------------------------------------------------ switching sessions

    def new_session(self, options: Any = ABSENT) -> Any:
        requested = get(options, "id")
        if requested is not ABSENT:
            assert_valid_session_id(requested)
        self._session_id = coalesce(requested, uuid7())
        timestamp = _now()
        header = _object(
            type="session",
            version=CURRENT_SESSION_VERSION,
            id=self._session_id,
            timestamp=timestamp,
            cwd=self._cwd,
            parentSession=get(options, "parentSession"),
        )
        self._release_source()
        self._file_entries = [Entry.of(header)]
        self._by_id = {}
        self._labels = {}
        self._label_timestamps = {}
        self._leaf_id = None
        self._flushed = False
        self._load_writes_skipped = False
        self._has_conversation = False
        self._header_only_first = True
        self._plain_index = True
        self._chain_starts = []
        self.problems = []
        self._known_end = 0
        self._line_count = 0
        self._identity = None
        if self._persist:
            name = f"{file_timestamp(timestamp)}_{js_string_of(self._session_id)}.jsonl"
            self._session_file = node_join(self._session_dir, name)
        return self._session_file

    def set_session_file(self, path: StrPath) -> None:
        """Switch to another file; on failure the manager is exactly as before (D5)."""
        with self._all_or_nothing():
            self._set_session_file(path)

    @contextlib.contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """A load that fails leaves the manager exactly as it was."""
        saved = dict(self.__dict__)
        try:
            yield
        except BaseException:
            if self._source is not None and self._source is not saved.get("_source"):
                self._source.close()
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def _set_session_file(self, path: StrPath) -> None:
        resolved = resolve_path(path, env=self._env)
        for _ in range(_EMPTY_FILE_ATTEMPTS):
            if self._load_session_file(resolved):
                return
        raise StaleFileError(
            f"{resolved} was emptied and written again by another process each time it was read: it "
            "was left as it is"
        )

    def _load_session_file(self, resolved: str) -> bool:
        """Load ``resolved`` (a new session when there is no file). False, to be read again, when
        the file was empty and another program wrote it (or deleted it) before its header could be
        written: the file was left as that program made it."""
        if not os.path.exists(resolved):
            self.new_session()
            self._session_file = resolved
            return True
        fd = open_for_reading(resolved)
        try:
            read_at = os.fstat(fd)  # the file as it was before it was read (see _track_file)
            peek = peek_header(fd)
            if not is_valid_header(peek.value):
                if peek.size > 0:
                    raise InvalidSessionFileError(f"Session file is not a valid pi session: {resolved}")
                self.new_session()
                self._session_file = resolved
                return self._start_empty_file(fd, read_at)
            return self._load_headed(fd, resolved, peek, read_at)
        finally:
            os.close(fd)

    def _start_empty_file(self, fd: int, read_at: os.stat_result) -> bool:
        """The session of an empty file (open at ``fd``): its header is written into it, in place,
        as pi does, unless read-only; either way the file is followed from here. False, nothing
        written, when another program wrote the file (or deleted it) since it was found empty."""
        self._flushed = True
        self._load_writes_skipped = self.read_only
        path = self._session_file
        if self.read_only or not self._persist:
            self._track_file(path, 0, 0, fd=fd, read_at=read_at)
            return True
        header = _line_bytes(self._file_entries[0].value)
        with LockedFile(path, self._env) as locked:
            try:
                locked.fill_empty(header, fsync=True)
            except StaleFileError:
                return False
            self._file_entries[0].line = 0
            self._track_file(path, 1, len(header), fd=locked.fd)
        return True

    def _load_headed(self, fd: int, path: str, peek: Any, read_at: os.stat_result) -> bool:
        """Load the file at ``fd`` whose valid header is ``peek``: migrated when its version is
        older than pi's current one, as it is otherwise. True: the session is the file's."""
        with gc_paused():
            if not needs_migration([peek.value]):
                self._load_current(fd, path, peek, read_at)
            elif self._reads_migrated(peek):
                self._load_current(fd, path, peek, read_at, migrate_from=session_version([peek.value]))
            else:
                self._load_migrating(fd, path)
        self._flushed = True
        return True

    def _reads_migrated(self, peek: Any) -> bool:
        """Whether a file to migrate (its header ``peek``) is loaded as a current one, its values
        migrated as they are read (see loader.MigratingLineSource): read-only, and a file whose
        lines would not keep their bytes (D15). A smaller one's values are held, as its lines'
        bytes would be: a pi migrating it in place meanwhile takes none of them away."""
        return self.read_only and not loader.keeps_line_bytes(peek.size)

    def _load_current(
        self, fd: int, path: str, peek: Any, read_at: os.stat_result, migrate_from: float | None = None
    ) -> None:
        """Load the file at ``fd`` as a current one; ``migrate_from``: read-only, of that older
        version, its values migrated as they are read (see _reads_migrated)."""
        loaded, source = load_lazy(
            fd, path, peek, self._on_progress, self._index, lazy=True, migrate_from=migrate_from
        )
        end = loaded.end  # what was read: lines another process appends meanwhile come with the next refresh
        open_tail = loaded.needs_newline
        # the reference's load-time repair (docs/FORMAT.md §9.1 step 5), of the file read (not of
        # one renamed over it since); a newline right at our end finishes our last line
        if (
            loaded.needs_newline
            and not self.read_only
            and storage.repair_trailing_newline(path, self._env, storage.FileIdentity.of(read_at)) == end
        ):
            end += 1
            open_tail = False
            read_at = os.fstat(fd)  # (our newline changed its times)
        self._release_source()
        self._source = source
        self._session_file = path
        self._set_file_entries(loaded.entries, loaded.index, loaded.rows)
        self._session_id = loaded.header["id"]
        self.problems = loaded.problems
        # (a last line left open is told by _open_tail; a file read migrated is still to rewrite)
        self._load_writes_skipped = migrate_from is not None
        self._track_file(path, loaded.lines, end, open_tail, fd=fd, read_at=read_at)

    def _load_migrating(self, fd: int, path: str) -> None:
        """A v1/v2 file: migrated (ids derived from the file: see migrate.py) and, unless read-only,
        rewritten as pi does. The rewrite holds the file's lock from before it reads the file until
        after its rename, and is made only if nobody wrote to the file meanwhile. When somebody did
        (pi migrating and appending to it, another of our processes), the file is read again as it
        is now, so that everything they wrote is kept. A pi that read the file just before our
        rename rewrites it in place a moment later: that is waited for (about as long as our own
        migration took) before the open returns, and then its version is read.

        The rewrite is made as the file is read, a line at a time (a version 1 file's migration
        holds the ids its entries got, which later entries' parents and compactions name), and the
        file written is then loaded as a current one (its entries' values read from it when asked
        for): a session of any size is migrated in little more memory than it is opened in. A
        read-only load rewrites nothing, and holds the file's values, as does a migration that
        cannot be made a line at a time (see _rewrite_streamed); a large version 2 file is not
        loaded here when read-only (see _reads_migrated)."""
        rewrite = not self.read_only and self._persist
        for _ in range(_MIGRATION_ATTEMPTS):
            began = time.monotonic()
            locked = LockedFile(path, self._env) if rewrite else None
            replaced = exact = expected = None
            try:
                if locked is not None:
                    peek = peek_header(locked.fd) if locked.fd >= 0 else None
                    if peek is None or not (is_valid_header(peek.value) and needs_migration([peek.value])):
                        locked.close()
                        self._set_session_file(path)  # migrated (or rewritten) by another process
                        return
                    fd = locked.fd
                    expected = locked.state()
                    replaced = _rewrite_streamed(locked, peek.value, expected)
                read_at = os.fstat(fd)
                if replaced is None:
                    exact, replaced = _migrate_held(fd, locked, expected)
            except StaleFileError:
                continue  # changed under us: read it again
            finally:
                if locked is not None:
                    locked.close()
            if replaced is not None and replaced.state is not None:
                grace = min(max(2 * (time.monotonic() - began), _MIGRATION_GRACE[0]), _MIGRATION_GRACE[1])
                if rewritten_after(self._disk(path), replaced.state, grace):
                    continue  # rewritten right after us (pi's own migration): read its version
            if exact is None:
                self._set_session_file(path)  # streamed: the file written, read as a current one
            else:
                self._adopt_migrated(path, exact, replaced, fd, read_at)
            return
        raise StaleFileError(f"{path} kept changing while it was being migrated: it was left as it is")

    def _adopt_migrated(
        self, path: str, exact: ExactLoad, replaced: Replaced | None, fd: int, read_at: os.stat_result
    ) -> None:
        """The session of the file ``exact`` read through ``fd`` (as ``read_at`` found it), its
        values migrated: rewritten as ``replaced`` tells, or left as it was (None: read-only)."""
        rewritten = replaced is not None
        self._session_file = path
        entries = _entries_with_lines(exact, rewritten)
        self._release_source()
        self._set_file_entries(entries)
        self._session_id = exact.values[0]["id"]
        self.problems = exact.problems(rewritten)
        self._load_writes_skipped = not rewritten
        if replaced is None:  # (lines another program appends are read migrated too)
            self._source = loader.migrating_source(path, os.dup(fd), exact.values[0], exact.version)
        if replaced is not None:
            self._track_file(path, len(exact.lines), replaced.written)
        else:
            self._track_file(
                path, exact.physical_lines, open_tail=exact.needs_newline, fd=fd, read_at=read_at
            )

    def _load_values(self, values: builtins.list[Any], options: Any) -> None:
        """``inMemory(cwd, options, entries)`` (and the reference's preloaded entries)."""
        for value in values:
            if value is None or value is ABSENT:  # (pi reads every entry's type)
                raise not_an_entry(value, "id")
        has_header = any(get(v, "type") == "session" for v in values)
        if has_header:
            migrate_to_current_version(values)
            header = next(v for v in values if get(v, "type") == "session")
            self._session_id = get(header, "id")
            self._set_file_entries([Entry.of(v) for v in values])
        else:
            self.new_session(options)
            self._set_file_entries(self._file_entries + [Entry.of(v) for v in values])

    # ------------------------------------------------------------------ index

    @property
    def _file_entries(self) -> builtins.list[Entry]:
        entries = self._entry_list
        return entries if entries is not None else self._every_entry()[0]

    @_file_entries.setter
    def _file_entries(self, entries: builtins.list[Entry]) -> None:
        self._entry_list = entries
        self._rows = self._rows_header = None

    @property
    def _by_id(self) -> dict[Any, Entry]:
        by_id = self._id_map
        return by_id if by_id is not None else self._every_entry()[1]

    @_by_id.setter
    def _by_id(self, by_id: dict[Any, Entry]) -> None:
        self._id_map = by_id

    def _every_entry(self) -> tuple[builtins.list[Entry], dict[Any, Entry]]:
        """The file entries and the id index of a load from the index's rows, made now (the
        entries made before among them)."""
        rows, header = self._rows, self._rows_header
        assert rows is not None and header is not None
        return self._list_rows(header, *rows.every_entry())

    def _list_rows(
        self, header: Entry, entries: builtins.list[Entry], ids: builtins.list[str]
    ) -> tuple[builtins.list[Entry], dict[Any, Entry]]:
        """Hold ``header`` and ``entries``, rows' entries with their ids, as the file entries and
        the id index instead of the rows."""
        by_id = dict(zip(ids, entries, strict=True))
        entries.insert(0, header)  # in place: no second list of every entry
        self._entry_list, self._id_map = entries, by_id
        self._rows = self._rows_header = None
        return entries, by_id

    def _set_file_entries(
        self,
        entries: builtins.list[Entry],
        scanned: IdIndex | None = None,
        rows: IndexedRows | None = None,
    ) -> None:
        """``scanned``: the scanner's index of ``entries[1:]`` when ``entries[0]`` is the header;
        ``rows``: the entries after it as the index's rows (``entries`` is then the header alone)."""
        self._file_entries = entries
        self._has_conversation = None  # counted when first asked
        if rows is not None:
            self._adopt_rows(entries[0], rows)
            return
        if scanned is not None and scanned.complete and self._adopt_index(scanned):
            return
        self._build_index()

    def _adopt_rows(self, header: Entry, rows: IndexedRows) -> None:
        """A load from the index's rows (every id a distinct non-empty string, one header on top:
        see scan_index._lazy_allowed); only the label entries are made now."""
        self._entry_list = self._id_map = None
        self._rows, self._rows_header = rows, header
        self._plain_index = True
        self._header_only_first = True
        self._chain_starts = list(rows.columns.chain_starts)
        self._leaf_id = rows.id_at(rows.count - 1) if rows.count else None
        self._index_labels(map(rows.entry, rows.rows_of_type("label")))

    def _adopt_index(self, scanned: IdIndex) -> bool:
        """Take the index the scan built while reading (pi's files: string ids, one header on top).
        False when the file needs the general rules (another "session" line among the entries)."""
        others = scanned.non_messages
        if any(e.type == "session" for e in others):
            return False
        by_id = scanned.by_id
        self._by_id = by_id
        self._plain_index = "" not in by_id
        self._header_only_first = True
        self._chain_starts = scanned.chain_starts
        self._leaf_id = self._file_entries[-1].id if len(self._file_entries) > 1 else None
        self._index_labels(others)
        return True

    def _build_index(self) -> None:
        """The reference's "build index" over the file entries (one tight loop: it runs on every load)."""
        by_id: dict[Any, Entry] = {}
        headers: builtins.list[Entry] = []
        others: builtins.list[Entry] = []  # entries that are not messages (labels among them)
        plain = True  # every id a string (see context.is_plain_index)
        for entry in self._file_entries:
            if entry.type != "message":  # one comparison for the common case
                if entry.type == "session":
                    headers.append(entry)
                    continue
                others.append(entry)
            entry_id = entry.id
            if type(entry_id) is str:
                by_id[entry_id] = entry
            else:
                by_id[index_key(entry_id)] = entry
                plain = False
        self._plain_index = plain and "" not in by_id
        self._chain_starts = None
        self._header_only_first = len(headers) == 1 and headers[0] is self._file_entries[0]
        leaf: Any = None
        for entry in reversed(self._file_entries):
            if entry.type != "session":
                leaf = entry.id
                break
        self._by_id = by_id
        self._leaf_id = leaf
        self._index_labels(others)

    def _index_labels(self, others: Iterable[Entry]) -> None:
        """Labels from the non-message entries, in file order (labels only interact with each other)."""
        self._labels = {}
        self._label_timestamps = {}
        for entry in others:
            if entry.type != "label":
                continue
            aux = entry.aux
            if aux is None:
                aux = (entry_field(entry, "targetId"), entry_field(entry, "label"))
            self._apply_label(aux[0], aux[1], entry.timestamp)

    def _index_entry(self, entry: Entry) -> None:
        etype = entry.type
        if etype == "session":
            self._header_only_first = False
            self._chain_starts = None
            return
        self._note_key(entry.id)
        self._note_chain(entry)
        self._by_id[index_key(entry.id)] = entry
        self._take_in(entry)

    def _take_in(self, entry: Entry) -> None:
        """What an entry just added after the others (not a header) changes beyond the entries and
        the id index: the leaf, whether there is a conversation, the labels."""
        etype = entry.type
        self._leaf_id = entry.id
        if etype == "message" and self.profile.is_conversation(entry.role):
            self._has_conversation = True
        elif etype == "label":
            aux = entry.aux
            if aux is None:
                aux = (entry_field(entry, "targetId"), entry_field(entry, "label"))
            self._apply_label(aux[0], aux[1], entry.timestamp)

    def _add_entries(self, entries: Sequence[Entry]) -> None:
        """Take ``entries``, the lines just after the file's last (written by us or another
        program, their lines and offsets known), in as the session's last entries. After a load
        from the index they join its rows when they keep the rows' rules (every entry is made
        otherwise, as it would be for them)."""
        rows = self._rows
        if rows is not None:
            known_starts = len(rows.columns.chain_starts)
            if rows.append_scanned(entries):
                if self._chain_starts is not None:
                    self._chain_starts.extend(rows.columns.chain_starts[known_starts:])
                for entry in entries:
                    self._take_in(entry)
                return
            self._every_entry()
        for entry in entries:
            self._file_entries.append(entry)
            self._index_entry(entry)

    def _note_chain(self, entry: Entry) -> None:
        """Keep ``_chain_starts`` true for ``entry``, just appended to the file entries."""
        starts = self._chain_starts
        if starts is None or not self._header_only_first:
            return
        position = len(self._file_entries) - 2  # in get_entries(): the header is file entry 0
        while starts and starts[-1] >= position:  # left by appends taken back after a failed write
            starts.pop()
        before = self._file_entries[-2]
        parent_id = entry.parent_id
        if position == 0 or type(parent_id) is not str or parent_id != before.id:
            starts.append(position)

    def _note_key(self, entry_id: Any) -> None:
        if type(entry_id) is not str or not entry_id:
            self._plain_index = False

    def _any_conversation(self) -> bool:
        """Does any file entry hold a message of a conversation role (``profile.conversation_roles``)?
        pi writes a new session's file only then (0.86.1: an assistant message; 1.6.0: a user or
        assistant one)."""
        if self._has_conversation is None:
            is_conversation = self.profile.is_conversation
            self._has_conversation = any(
                e.type == "message" and is_conversation(e.role) for e in self._file_entries
            )
        return self._has_conversation

    def _apply_label(self, target: Any, label: Any, timestamp: Any) -> None:
        key = index_key(target)
        if truthy(label):
            previous = self._labels.get(key)
            self._labels[key] = (previous[0] if previous else target, label)
            self._label_timestamps[key] = timestamp
        else:
            self._labels.pop(key, None)
            self._label_timestamps.pop(key, None)

    # ------------------------------------------------------------------ writing

    def make_writable(self) -> bool:
        """Let a manager opened ``read_only`` write from now on, keeping all it holds (its leaf,
        its entries, what callers keep beside it: a second open of a big file costs as much memory
        again, and its entries made anew), when it holds the file as an open for writing would:
        its load left undone none of the writes such an open makes (a migration's rewrite, the
        header of an empty file, the newline that ends a last line a crash cut), and the file is
        as it was read (the same file, size and times). False, nothing changed, otherwise: the
        file is to be opened again for writing."""
        if not self.read_only:
            return True
        if not self._file_as_loaded():
            return False
        self.read_only = False
        return True

    @property
    def reload_due(self) -> bool:
        """An append of ours found the file written otherwise than by whole lines appended before
        it (rewritten, replaced, written while we wrote): the next :meth:`refresh_from_disk`
        reloads it."""
        return self._out_of_sync

    def only_appended_to(self) -> bool:
        """The file changed since it was read only by bytes appended after ours (the same file, our
        last bytes still where we left them), and the load left no write undone: refresh_from_disk()
        takes the lines in without a reload, and make_writable() then keeps all we hold."""
        return self._file_as_loaded(grown=True)

    def open_last_line(self) -> LineProblem | None:
        """The problem of the file's last line as read when that line had no newline yet and pi
        skips it (what its writer had written of it so far, or all a writer that stopped wrote of
        it), else None."""
        if not self._open_tail or not self.problems:
            return None
        last = self.problems[-1]
        return last if last.skipped and last.offset + last.length == self._known_end else None

    def _file_as_loaded(self, grown: bool = False) -> bool:
        """The session file is the one we read, as we left it (nothing written to it since), and
        its load left none of an open for writing's writes undone; with ``grown``, longer than we
        left it, our last bytes where they were."""
        if self._load_writes_skipped or self._open_tail:
            return False
        path = self._session_file
        if not self._persist or not truthy(path) or self._identity is None:
            return False
        if self._out_of_sync or self._headerless is not None:
            return False
        try:
            st = os.stat(self._disk(path))
        except OSError:
            return False
        if storage.FileIdentity.of(st) != self._identity:
            return False
        if grown:
            return st.st_size > self._known_end and self._read_marker(path, self._known_end) == self._marker
        return st.st_size == self._known_end and _times_of(st) == self._stamp

    def _append_entry(self, value: dict[str, Any]) -> Entry:
        """Append an entry made of ``value``. After a load from the index whose entries are not
        made, it joins the rows once its line is written (where it is in the file is known then),
        after lines another program appended just before it; what the session answers meanwhile
        and after a failed write is what the list of entries answers."""
        if self.read_only:
            raise ReadOnlySessionError(f"session opened read-only: {js_string_of(self._session_file)}")
        entry, line = self._new_entry(value)
        key = index_key(entry.id)
        on_rows = self._rows is not None and self._flushed
        held = None if on_rows else self._by_id.get(key)
        previous = (self._leaf_id, self._has_conversation, self._flushed)
        if not on_rows:
            self._list_entry(entry)
        self._leaf_id = entry.id
        if entry.type == "message" and self.profile.is_conversation(entry.role):
            self._has_conversation = True
        try:
            self._persist_entry(entry, line)
        except SessionFileReplacedError:
            # Not written, and never to be: the file it belonged in is gone. Taken back whatever
            # the profile, and the session read again by the next refresh (the file it names now
            # is another's, which the next append asks the same of until then).
            self._take_back_unwritten(entry, on_rows, held, previous)
            self._out_of_sync = True
            raise
        except BaseException:
            if self.rollback_failed_appends or self.profile.rolls_back_failed_appends:
                self._take_back_unwritten(entry, on_rows, held, previous)
            elif on_rows:  # kept in memory though not written (pi 0.86.1): no line to be a row of
                self._list_entry(entry)
                self._leaf_id = entry.id
            raise
        if on_rows:
            self._add_entries([entry])
        return entry

    def _take_back_unwritten(
        self, entry: Entry, on_rows: bool, held: Entry | None, previous: tuple[Any, bool | None, bool]
    ) -> None:
        """Undo what :meth:`_append_entry` did for ``entry``, whose write failed."""
        if not on_rows:
            self._file_entries.pop()
            key = index_key(entry.id)
            if held is None:
                del self._by_id[key]
            else:
                self._by_id[key] = held
        self._leaf_id, self._has_conversation, self._flushed = previous

    def _list_entry(self, entry: Entry) -> None:
        """Put ``entry`` last in the list of entries and in the id index."""
        self._note_key(entry.id)  # (a failed append leaves it False: only slower, never wrong)
        self._file_entries.append(entry)
        self._note_chain(entry)
        self._by_id[index_key(entry.id)] = entry

    def _new_entry(self, value: dict[str, Any]) -> tuple[Entry, bytes | None]:
        """The entry of ``value``, and its line where its append writes it (see _writes_now).

        A value JSON cannot hold (a set, bytes, a key that is not a string) is refused here
        (ValueTypeError), before anything changes, rather than where it is written, which for a
        session not written yet is the first conversation append, and every one after it. An
        entry that waits is encoded when the file is made, as pi serializes it then: it is only
        looked at now (encoded where a look cannot tell)."""
        line = _entry_line(value) if self._flushed else _refused_or_line(value)
        entry = Entry.of(value)
        if not self._writes_now(entry):
            return entry, None
        return entry, _line_bytes(value) if line is None else line

    def _writes_now(self, entry: Entry) -> bool:
        """Whether the append of ``entry`` (not listed yet) writes to the session file: it is
        written, or ``entry`` or one before it is a conversation message, which makes it appear.
        Otherwise the entry waits in memory for that message (or the session is not persisted)."""
        if not self._persist or not truthy(self._session_file):
            return False
        if self._flushed or self._any_conversation():
            return True
        return entry.type == "message" and self.profile.is_conversation(entry.role)

    def _persist_entry(self, entry: Entry, line: bytes | None) -> None:
        """Write ``entry``, whose line is ``line`` where its append writes (None: it does not,
        see _writes_now)."""
        if line is None:
            return
        if self._flushed:
            self._append_line(entry, line)
            return
        # pi serializes the entries that waited now, as they are now (a value a caller changed
        # since its append is written changed), so they are encoded again; ``entry`` just had its
        # line made, which nothing can have changed since.
        lines = [line if e is entry else _line_bytes(e.value) for e in self._file_entries]
        storage.create_exclusive(self._session_file, b"".join(lines), fsync=self.fsync, env=self._env)
        for i, e in enumerate(self._file_entries):
            e.line = i
        self._flushed = True
        self._track_file(self._session_file, len(self._file_entries))

    def _append_line(self, entry: Entry, data: bytes) -> None:
        appender = self._appender
        if appender is None or appender.path != self._session_file:
            if appender is not None:
                appender.close()
            appender = self._appender = storage.Appender(self._session_file, self._env)
        identity = self._identity
        tracked = identity is not None
        outcome = appender.append(
            data,
            fsync=self.fsync,
            lines_since=self._known_end if tracked else -1,
            loaded=None if identity is None else (identity.dev, identity.ino),
            receives=lambda fd: require_receives(
                fd, self._session_file, self.get_header(), named_ids(entry.value, self._has_entry)
            ),
        )
        if tracked and self._recreated_by(appender, outcome):
            # The file was deleted (or moved away) and our append made it again, as pi's
            # appendFileSync does: it holds our line alone, written by nobody else. It is followed
            # from now on, not reported as another process's nor reloaded (it has no header).
            assert appender.identity is not None
            self._identity = storage.FileIdentity(*appender.identity)
            self._marker = b""
            self._release_source()  # lines others append next are read from the new file
        elif tracked and (outcome.size_before != self._known_end or outcome.interleaved):
            # Another process wrote since we last looked (or while we wrote): report it. Whole lines
            # it appended are entries before ours; anything else has the next refresh_from_disk()
            # reload the file (either way our view then equals a fresh open).
            self._events.append(ForeignWrite(self._session_file, self._known_end, outcome.written_at))
            if not self._took_in_lines_before(entry, appender, outcome):
                self._out_of_sync = True
        elif tracked and self._stamp is not None and outcome.times_before != self._stamp:
            # Rewritten in place keeping the size since we last looked (an editor's save): what
            # refresh_from_disk() would have reloaded. Our line is in the file now; the next refresh
            # reloads it with the rewrite (our stamp below would hide the rewrite from it).
            self._out_of_sync = True
        # Number our line at once (#1): lines written by others and a separator "\n" we added come
        # before it. outcome.start is that of the valid copy when ours had to be written again (#3).
        before = outcome.newlines_before if tracked else int(outcome.repaired_newline)
        entry.line = self._line_count + before
        entry.offset = outcome.start
        entry.length = len(data) - 1
        self._line_count = entry.line + 1
        self._known_end = outcome.end
        # what refresh_from_disk expects to find just before _known_end: the end of our own line
        # (after a foreign write it is not looked at: _out_of_sync reloads, which takes a new one)
        self._marker = (self._marker + (b"\n" if outcome.repaired_newline else b"") + data)[-64:]
        # our write changed the file's times: they are ours, not another program's rewrite
        self._stamp = outcome.times_after

    def _took_in_lines_before(
        self, entry: Entry, appender: storage.Appender, outcome: storage.WriteOutcome
    ) -> bool:
        """Another program appended whole lines to our file since we last looked, and ``entry``'s
        line just went after them (pi writing the session too): take them in as the entries they
        are, before ``entry``, as a refresh_from_disk() just before our append would have, and keep
        their ids for the next refresh to report as appended. False, nothing changed, when the file
        must be read again whole instead: it was written while we wrote, rewritten, or replaced; it
        ended inside a line; a line is not a valid entry, is a header, or has the id of an entry
        of the session (the index, a leaf's path, would change under entries we hold)."""
        start, end = self._known_end, outcome.size_before
        identity = self._identity
        if (
            outcome.interleaved
            or end <= start
            or self._out_of_sync
            or self._open_tail
            or self._headerless is not None
            or identity is None
            or appender.identity != (identity.dev, identity.ino)
        ):
            return False
        path = self._session_file
        try:
            if self._marker and self._read_marker(path, start) != self._marker:
                return False  # our last bytes are not where we left them: rewritten
            found = self._scan_appended(path, start, end)
        except (OSError, PiSessionError):
            return False
        # (a line cut short ends before ``end``; our line's number counts the lines before it)
        if found.problems or found.end != end or found.lines != outcome.newlines_before:
            return False
        taken = found.entries
        keys = {index_key(entry.id)}
        for other in taken:
            key = index_key(other.id)
            if other.type == "session" or key in keys or self._has_entry(other.id):
                return False
            keys.add(key)
        if self._rows is not None:
            self._add_entries(taken)  # (ours joins them once written: _append_entry)
        else:
            entries = self._file_entries
            entries.pop()  # ours, indexed again after theirs: the file's order (the id index's too)
            del self._by_id[index_key(entry.id)]
            for other in (*taken, entry):
                entries.append(other)
                self._index_entry(other)
        self._appended_by_others = [*self._appended_by_others, *(other.id for other in taken)]
        self._marker = self._read_marker(path, end)  # what ours follows (our line is added below)
        return True

    def _recreated_by(self, appender: storage.Appender, outcome: storage.WriteOutcome) -> bool:
        """Did this append land alone in a new file at our path (not the one we know)?"""
        identity = self._identity
        return (
            identity is not None
            and outcome.size_before == 0
            and not outcome.interleaved
            and appender.identity is not None
            and appender.identity != (identity.dev, identity.ino)
        )

    def _write_new_file(self, chunks: Any) -> None:
        """Write the session file, which does not exist yet, whole (a temporary file linked to its
        name): a file another program made there meanwhile is never replaced (StaleFileError,
        nothing written)."""
        if not self._persist or not truthy(self._session_file) or self.read_only:
            return
        with LockedFile(self._session_file, self._env) as locked:
            locked.replace(chunks, None)

    def _track_file(
        self,
        path: str,
        line_count: int,
        end: int | None = None,
        open_tail: bool = False,
        *,
        fd: int = -1,
        read_at: os.stat_result | None = None,
    ) -> None:
        """Remember the file as we leave it (``end``: how far we read it; default: all of it), to
        notice later what others did to it.

        ``fd``: the descriptor it was read through. The file it is open on is the one remembered,
        not the one the path names by now: one renamed over it while it was read is another file,
        read whole by the next refresh. ``read_at``: its status before it was read, whose times are
        those remembered: a rewrite in place while or right after it was read (keeping its size)
        then shows as other times."""
        try:
            st = os.fstat(fd) if fd >= 0 else os.stat(self._disk(path))
        except OSError:
            self._identity = None
            return
        self._identity = storage.FileIdentity.of(st)
        self._stamp = _times_of(read_at if read_at is not None else st)
        self._known_end = st.st_size if end is None else min(end, st.st_size)
        self._line_count = line_count
        self._out_of_sync = False
        self._headerless = None
        self._open_tail = open_tail
        if fd >= 0:
            self._marker = storage.tail_marker(fd, self._known_end)
        else:
            self._marker = self._read_marker(path, self._known_end)

    def _read_marker(self, path: str, end: int) -> bytes:
        try:
            fd = os.open(self._disk(path), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            return storage.tail_marker(fd, end)
        finally:
            os.close(fd)

    def _release_source(self) -> None:
        self._source = None  # entries still holding it keep it alive; it closes with them

    # ------------------------------------------------------------------ appenders

    def _base(self, entry_type: str) -> dict[str, Any]:
        return {"type": entry_type, "id": self._new_id(), "parentId": self._leaf_id, "timestamp": _now()}

    def _new_id(self) -> str:
        return new_entry_id(self._has_entry)

    def append_message(self, message: Any) -> Any:
        value = self._base("message")
        value["message"] = message
        return self._finish(value)

    def append_thinking_level_change(self, thinking_level: Any) -> Any:
        value = self._base("thinking_level_change")
        value["thinkingLevel"] = thinking_level
        return self._finish(value)

    def append_model_change(self, provider: Any, model_id: Any) -> Any:
        value = self._base("model_change")
        value["provider"] = provider
        value["modelId"] = model_id
        return self._finish(value)

    def append_usage(self, kind: Any, provider: Any, model: Any, usage: Any, note: Any = ABSENT) -> Entry:
        value = self._base("usage")
        value.update(_object(kind=kind, provider=provider, model=model, usage=usage))
        if truthy(note):
            value["note"] = note
        return self._append_entry(_drop_absent(value))

    def append_compaction(
        self,
        summary: Any,
        first_kept_entry_id: Any,
        tokens_before: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        timestamp = _now()
        checkpoint = current_system_message(self.build_session_context()["messages"])
        own_id = self._new_id()
        value = {
            "type": "compaction",
            "id": own_id,
            "parentId": self._leaf_id,
            "timestamp": timestamp,
        }
        value.update(
            _object(
                summary=summary,
                firstKeptEntryId=self.profile.first_kept_entry_id(first_kept_entry_id, own_id),
                tokensBefore=tokens_before,
                details=details,
                usage=usage,
                fromHook=from_hook,
            )
        )
        if checkpoint is not None:
            checkpoint["timestamp"] = ms(timestamp)
            value["systemMessage"] = checkpoint
        return self._finish(value)

    def append_custom_entry(self, custom_type: Any, data: Any = ABSENT) -> Any:
        value = _object(
            type="custom",
            customType=custom_type,
            data=data,
            id=self._new_id(),
            parentId=self._leaf_id,
            timestamp=_now(),
        )
        return self._finish(value)

    def append_session_info(self, name: Any) -> Any:
        if not isinstance(name, str):  # (pi calls name.replace)
            if name is None or name is ABSENT:
                raise cannot_read_property(name, "replace")
            raise ValueTypeError("name.replace is not a function")
        value = self._base("session_info")
        value["name"] = js_trim(_CR_LF_RUNS.sub(" ", name))
        return self._finish(value)

    def append_custom_message_entry(
        self, custom_type: Any, content: Any, display: Any, details: Any = ABSENT
    ) -> Any:
        value = _object(
            type="custom_message",
            customType=custom_type,
            content=content,
            display=display,
            details=details,
            id=self._new_id(),
            parentId=self._leaf_id,
            timestamp=_now(),
        )
        return self._finish(value)

    def append_context_edit(self, target_id: Any, replacement: Any) -> Any:
        """pi 1.6.0's ``appendContextEdit``: a ``context_edit`` entry that omits (``None``) or
        replaces the content of the messages of ``target_id``, an earlier entry on the active branch
        that contributes user, assistant, toolResult or custom-message content. Refused, before
        anything changes and in this order: a ``replacement`` that is not ``None`` or a dict with
        string/list ``content``, an unknown target, a target off the active branch, a target with no
        editable content (D6: also a message entry whose message is null). A string replacement of
        an assistant or toolResult target is stored as one text block. Returns the new entry's id."""
        require_api(self.profile, "appendContextEdit")
        if not is_edit_replacement(replacement):
            raise ContextEditError("Context edit replacement must be null or contain string/array content")
        target = self._entry_or_none(target_id)
        if target is None:
            raise EntryNotFoundError(f"Entry {js_string_of(target_id)} not found")
        if not any(strict_equal(e.id, target_id) for e in self.get_branch()):
            raise ContextEditError(f"Entry {js_string_of(target_id)} is not on the active branch")
        role = edit_target_role(target.type, target.role)
        if role is None:
            raise ContextEditError(
                f"Entry {js_string_of(target_id)} does not contribute editable model content"
            )
        if replacement is not None and isinstance(replacement["content"], str):
            blocks = text_blocks(replacement["content"], role)
            if blocks is not replacement["content"]:
                replacement = {"content": blocks}
        value = self._base("context_edit")
        value["targetId"] = target_id
        value["replacement"] = replacement
        return self._finish(value)

    def append_label_change(self, target_id: Any, label: Any = ABSENT) -> Any:
        if not self._has_entry(target_id):
            raise EntryNotFoundError(f"Entry {js_string_of(target_id)} not found")
        value = self._base("label")
        value["targetId"] = target_id
        if label is not ABSENT:
            value["label"] = label
        entry = self._append_entry(_drop_absent(value))
        self._apply_label(target_id, label, entry.timestamp)
        return entry.id

    def _finish(self, value: dict[str, Any]) -> Any:
        return self._append_entry(_drop_absent(value)).id

    # ------------------------------------------------------------------ tree

    def get_leaf_id(self) -> Any:
        return self._leaf_id

    def get_leaf_entry(self) -> Any:
        if not truthy(self._leaf_id):
            return ABSENT
        return self.get_entry(self._leaf_id)

    def get_entry(self, entry_id: Any) -> Any:
        entry = self._entry_or_none(entry_id)
        return ABSENT if entry is None else entry

    def _entry_or_none(self, entry_id: Any) -> Entry | None:
        """The entry with ``entry_id`` (the last one when ids repeat), or None."""
        rows = self._rows
        if rows is not None:
            return rows.entry_of_id(entry_id)
        return self._by_id.get(index_key(entry_id))

    def _has_entry(self, entry_id: Any) -> bool:
        """Whether an entry has ``entry_id`` (over the index's rows: no entry made)."""
        rows = self._rows
        if rows is not None:
            return rows.row_of_id(entry_id) >= 0
        return index_key(entry_id) in self._by_id

    def get_children(self, parent_id: Any) -> builtins.list[Entry]:
        from ..format.jsvalue import strict_equal

        rows = self._rows
        if rows is not None:
            return [rows.entry(row) for row in rows.rows_under(parent_id)]
        return [e for e in self._by_id.values() if strict_equal(e.parent_id, parent_id)]

    def get_label(self, entry_id: Any) -> Any:
        found = self._labels.get(index_key(entry_id))
        return found[1] if found else ABSENT

    def get_label_timestamp(self, entry_id: Any) -> Any:
        return self._label_timestamps.get(index_key(entry_id), ABSENT)

    def get_branch(self, from_id: Any = ABSENT) -> builtins.list[Entry]:
        start = coalesce(from_id, self._leaf_id)
        if not truthy(start):
            return []
        rows = self._rows
        if rows is not None:
            row = rows.row_of_id(start)
            if row < 0:
                return []
            path = rows.path_to_root(row)
            if path is not None:
                return list(path)
        entry = self._by_id.get(index_key(start))
        if entry is None:
            return []
        return walk_to_root(entry, self._by_id, plain_index=self._plain_index, chains=self._chains())

    def _chains(self) -> tuple[builtins.list[Entry], builtins.list[int] | None] | None:
        """get_entries() and where chains start in it, for walks to the root (see chains.py)."""
        if self._chain_starts is None:
            return None
        return self.get_entries(), self._chain_starts

    def get_tree(self) -> builtins.list[TreeNode]:
        labels = {key: label for key, (_target, label) in self._labels.items()}
        with gc_paused():
            return build_tree(
                self.get_entries(),
                labels,
                self._label_timestamps,
                plain_index=self._plain_index,
                by_id=self._by_id,
                chain_starts=self._chain_starts,
            )

    def row_tree(self) -> RowTree | None:
        """:meth:`get_tree` as nodes made when reached, with the entries by id and the leaf's
        path (``by_id``, ``get_branch()``) as they are found, while the entries of a load from the
        index are not made (None otherwise, or when the rows do not give it: see row_tree)."""
        rows = self._rows
        leaf = rows.row_of_id(self._leaf_id) if rows is not None else -1
        if rows is None or leaf < 0:
            return None
        labels = {key: label for key, (_target, label) in self._labels.items()}
        return row_tree(rows, labels, dict(self._label_timestamps), leaf)

    def chain_tree(self) -> RowTree | None:
        """:meth:`row_tree`, or for a session whose entries are made (read from its file) the same
        tree over them, told by where their chains start: nodes made when reached, not one per
        entry. None when neither gives it (ids not all distinct non-empty strings, chains not
        known, a parent not above its child: see row_tree)."""
        if self._rows is not None:
            return self.row_tree()
        starts = self._chain_starts
        if starts is None or not (self._header_only_first and self._plain_index and self.has_unique_ids()):
            return None
        rows = entry_rows(self._file_entries, self._by_id, starts)
        leaf = -1 if rows is None else rows.row_of_id(self._leaf_id)
        if rows is None or leaf < 0:
            return None
        labels = {key: label for key, (_target, label) in self._labels.items()}
        return row_tree(rows, labels, dict(self._label_timestamps), leaf)

    def branch(self, branch_from_id: Any) -> None:
        if not self._has_entry(branch_from_id):
            raise EntryNotFoundError(f"Entry {js_string_of(branch_from_id)} not found")
        self._leaf_id = branch_from_id

    def reset_leaf(self) -> None:
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: Any,
        summary: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        if branch_from_id is not None and not self._has_entry(branch_from_id):
            raise EntryNotFoundError(f"Entry {js_string_of(branch_from_id)} not found")
        from_id = coalesce(self._leaf_id, "root")
        self._leaf_id = branch_from_id
        value = {
            "type": "branch_summary",
            "id": self._new_id(),
            "parentId": branch_from_id,
            "timestamp": _now(),
        }
        value.update(
            _object(fromId=from_id, summary=summary, details=details, usage=usage, fromHook=from_hook)
        )
        return self._finish(value)

    def create_branched_session(self, leaf_id: Any) -> Any:
        previous_file = self._session_file
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFoundError(f"Entry {js_string_of(leaf_id)} not found")
        if self.read_only:  # it makes and may write a new session file
            raise ReadOnlySessionError(f"session opened read-only: {js_string_of(self._session_file)}")
        kept = _branch_copies(path)
        new_id = uuid7()
        timestamp = _now()
        new_file = node_join(self._session_dir, f"{file_timestamp(timestamp)}_{new_id}.jsonl")
        header = _object(
            type="session",
            version=CURRENT_SESSION_VERSION,
            id=new_id,
            timestamp=timestamp,
            cwd=self._cwd,
            parentSession=previous_file if self._persist else ABSENT,
        )
        kept_ids = {index_key(c.get("id", ABSENT)) for c in kept}
        taken = set(kept_ids)
        label_entries: builtins.list[dict[str, Any]] = []
        label_parent = kept[-1].get("id", ABSENT) if kept else None
        if not truthy(label_parent):
            label_parent = None
        for key, (target, label) in self._labels.items():
            if key not in kept_ids:
                continue
            label_id = new_entry_id(lambda candidate: candidate in taken)
            taken.add(label_id)
            label_entries.append(
                _object(
                    type="label",
                    id=label_id,
                    parentId=label_parent,
                    timestamp=self._label_timestamps.get(key, ABSENT),
                    targetId=target,
                    label=label,
                )
            )
            label_parent = label_id
        self._release_source()
        entries = [Entry.of(header), *(Entry.of(c) for c in kept), *(Entry.of(v) for v in label_entries)]
        self._session_id = new_id
        self._set_file_entries(entries)
        self.problems = []
        if not self._persist:
            return ABSENT
        self._session_file = new_file
        self._identity = None
        if self._any_conversation():
            self._write_new_file(_line_bytes(e.value) for e in entries)
            for i, e in enumerate(entries):
                e.line = i
            self._flushed = True
            self._track_file(new_file, len(entries))
        else:
            self._flushed = False
        return new_file

    # ------------------------------------------------------------------ context

    def build_context_entries(self) -> builtins.list[Any]:
        return select_context_entries(self._session_path(self._leaf_id))

    def build_context_entries_at(self, leaf_id: Any) -> builtins.list[Any]:
        """The context entries as if the leaf were ``leaf_id`` (those :meth:`build_session_context_at`
        takes its messages from)."""
        return select_context_entries(self._session_path(leaf_id))

    def context_selection(self, leaf_id: Any = ABSENT) -> ContextSelection:
        """The path to the leaf (``leaf_id``: as if the leaf were that one) and its context entries,
        for a caller that looks at the entries before it builds the context or the projection of
        them (:meth:`build_session_context_of`, :meth:`build_session_projection_of`): one walk for both."""
        return select_context(self._session_path(self._leaf_id if leaf_id is ABSENT else leaf_id))

    def build_session_context(self) -> dict[str, Any]:
        return self.build_session_context_of(self.context_selection())

    def build_session_context_at(self, leaf_id: Any) -> dict[str, Any]:
        """The context as if the leaf were ``leaf_id`` (the leaf itself does not move)."""
        return self.build_session_context_of(select_context(self._session_path(leaf_id)))

    def build_session_context_of(self, selection: ContextSelection) -> dict[str, Any]:
        """The context built from a :meth:`context_selection` of this session."""
        return session_context_of(selection, pi=self.profile)

    def build_session_projection(self) -> dict[str, Any]:
        """pi 1.6.0's ``buildSessionProjection()``: ``{entries: [{sourceEntry, messages}], messages,
        thinkingLevel, model}``, what each context entry contributes (under 0.86.1's profile, as
        0.86.1 builds its context)."""
        return self.build_session_projection_of(self.context_selection())

    def build_session_projection_at(self, leaf_id: Any) -> dict[str, Any]:
        """The projection as if the leaf were ``leaf_id`` (the leaf itself does not move)."""
        return self.build_session_projection_of(select_context(self._session_path(leaf_id)))

    def build_session_projection_of(self, selection: ContextSelection) -> dict[str, Any]:
        """The projection built from a :meth:`context_selection` of this session."""
        return session_projection_of(selection, pi=self.profile)

    def _session_path(self, leaf_id: Any) -> builtins.list[Any] | RowPath:
        """``build_session_path`` at ``leaf_id``: walked over the index's rows while the entries are
        not made (from the row with that id, else the last row), else over the entries."""
        rows = self._rows
        if leaf_id is None and rows is not None:
            return []  # (build_session_path's answer for no leaf)
        if rows is not None and rows.count:
            # (in build_session_path, a leaf_id that is not truthy, or not found, means the last entry)
            row = rows.row_of_id(leaf_id)
            path = rows.path_to_root(row if row >= 0 else rows.count - 1)
            if path is not None:
                return path
        return build_session_path(*self._path_inputs(leaf_id), **self._path_hints())

    def _path_inputs(self, leaf_id: Any) -> tuple[builtins.list[Entry], Any, dict[Any, Entry]]:
        return self.get_entries(), leaf_id, self._by_id

    def _path_hints(self) -> dict[str, Any]:
        """What the manager knows that makes walks to the root cheap (see context.walk_to_root)."""
        return {"plain_index": self._plain_index, "chain_starts": self._chain_starts}

    # ------------------------------------------------------------------ accessors

    def get_header(self) -> Any:
        if self._rows_header is not None:
            return self._rows_header.value
        for e in self._file_entries:
            if e.type == "session":
                return e.value
        return None

    def get_entries(self) -> builtins.list[Entry]:
        if self._header_only_first:
            return self._file_entries[1:]
        return [e for e in self._file_entries if e.type != "session"]

    def get_entry_count(self) -> int:
        """pi 1.6.0's ``getEntryCount()``: the size of the id index, i.e. the number of distinct ids
        among the entries (smaller than :meth:`entry_count` when ids repeat or are missing)."""
        if self._rows is not None:
            return self._rows.count  # (every id a distinct string: see _adopt_rows)
        return len(self._by_id)

    def has_unique_ids(self) -> bool:
        """Every entry has an id no other entry has: the tree then hangs each node in one place,
        and the leaf's path is :meth:`get_branch`."""
        return self.get_entry_count() == self.entry_count()

    def entry_count(self) -> int:
        """``len(get_entries())`` without building the list."""
        if self._rows is not None:
            return self._rows.count
        if self._header_only_first:
            return len(self._file_entries) - 1
        return sum(1 for _ in self.iter_entries())

    def entries_slice(self, start: int, end: int) -> builtins.list[Entry]:
        """``get_entries()[start:end]`` (``0 <= start <= end``) without a list of every entry (nor,
        after a reopen from the index, making every entry)."""
        rows = self._rows
        if rows is not None:
            return [rows.entry(row) for row in range(start, min(end, rows.count))]
        if self._header_only_first:
            return self._file_entries[1 + start : 1 + end]
        return self.get_entries()[start:end]

    def envelopes(self, start: int, end: int) -> Envelopes:
        """The envelopes of ``get_entries()[start:end]`` (``0 <= start <= end``) as columns, for a
        pass over every entry (after a reopen from the index: from its columns, making no entry)."""
        from .envelopes import Envelopes

        rows = self._rows
        if rows is not None:
            return rows.envelopes(start, end)
        return Envelopes.of_entries(self.entries_slice(start, end), start)

    def position_of(self, entry_id: Any) -> int:
        """Where in ``get_entries()`` the last entry with this id is, or -1 (what a search from the
        end finds, without the search: the index holds the last entry of every id)."""
        rows = self._rows
        if rows is not None:
            return rows.row_of_id(entry_id)  # (every id names one row)
        entry = self._by_id.get(index_key(entry_id))
        if entry is None:
            return -1
        if self._header_only_first:
            at = Positions(self._file_entries).of(entry, len(self._file_entries))
            return at - 1 if at > 0 else -1  # file entry 0 is the header
        entries = self.get_entries()
        return next((k for k in range(len(entries) - 1, -1, -1) if entries[k] is entry), -1)

    def entry_at_line(self, line: int) -> Entry | None:
        """The entry read from (or appended to) 0-based line ``line`` of the session file, or None:
        the header, a blank or broken line, a line past the end, or an entry not written yet.
        What an editor needs for "the entry under the cursor", without building the tree. A
        ``line`` that is no number raises :class:`~pi_session_server.errors.InvalidArgTypeError`,
        one that is no whole number :class:`~pi_session_server.errors.ArgOutOfRangeError`, as
        Node's ``validateInteger`` words them."""
        if type(line) is not int:
            line = _whole_number(line, "line")
        found = entry_on_line(self._file_entries, line)
        return found if found is not None and found.type != "session" else None

    def iter_entries(self) -> Iterator[Entry]:
        return (e for e in self._file_entries if e.type != "session")

    def get_session_name(self) -> Any:
        rows = self._rows
        if rows is not None:  # found in the type column, without making every entry
            row = rows.last_of_type("session_info")
            last = rows.entry(row) if row >= 0 else None
        else:
            last = next((e for e in reversed(self._file_entries) if e.type == "session_info"), None)
        name = ABSENT if last is None else entry_field(last, "name")
        if not isinstance(name, str):
            return ABSENT
        trimmed = js_trim(name)
        return trimmed if trimmed else ABSENT

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def uses_default_session_dir(self) -> bool:
        env = self._env
        return self.profile.same_directory(
            self._session_dir, default_session_dir_path(self._cwd, env=env), env
        )

    def get_session_id(self) -> Any:
        return self._session_id

    def get_session_file(self) -> Any:
        return self._session_file

    @property
    def environment(self) -> Environment:
        """The working directory and variables the manager reads where pi reads its process's
        (``env=`` of the constructor)."""
        return self._env

    def _disk(self, path: str) -> str:
        """Where the system finds ``path`` (a relative path is in the environment's working
        directory)."""
        return self._env.on_disk(path)

    @property
    def by_id(self) -> dict[Any, Entry]:
        """The id index (for the free functions' ``byId`` argument)."""
        return self._by_id

    # ------------------------------------------------------------------ following the file

    def refresh_from_disk(self) -> FileChange:
        """Take in what other processes did to our file since we last looked.

        Appended complete lines become entries (the leaf moves to the last one, as reopening
        would), also those an append of ours found and took in before its line ("appended" then
        names them, with the leaf ours); a file that was truncated, replaced or rewritten is reloaded (read as it is, never
        written: see :meth:`_reload`); a deleted file is reported and the session stays as it is in
        memory, and so does one that is being written again ("rewriting"). A rewrite in place that
        keeps the file's size and last bytes (an editor's quick fix that swaps one id for another of
        the same length) is told by the file's modification or change time, which our own writes
        do not leave behind; a rewrite within the file system's timestamp granularity of our last
        look at the file goes unnoticed.
        """
        taken, self._appended_by_others = self._appended_by_others, []
        change = self._look_at_file()
        if not taken:
            return change
        if change.kind in ("unchanged", "appended"):
            return FileChange("appended", [*taken, *change.new_entry_ids], self._leaf_id)
        if change.kind == "reloaded":
            kept = [entry_id for entry_id in taken if self._has_entry(entry_id)]
            return FileChange("reloaded", [*kept, *change.new_entry_ids], self._leaf_id)
        self._appended_by_others = taken  # the session is as it was: told with the next change
        return change

    def take_appended_by_others(self) -> FileChange | None:
        """The whole lines another program had just appended that an append of ours took in before
        its own, as the change to tell now (``appended``, their ids, the leaf ours) instead of with
        the next :meth:`refresh_from_disk`, which then leaves them out; None when there are none.
        The file is not looked at: what came after ours is the next refresh's."""
        taken, self._appended_by_others = self._appended_by_others, []
        return FileChange("appended", taken, self._leaf_id) if taken else None

    def _look_at_file(self) -> FileChange:
        """:meth:`refresh_from_disk` but for the entries an append of ours took in."""
        path = self._session_file
        if not self._persist or not truthy(path) or not self._flushed or self._identity is None:
            return FileChange("unchanged", [], self._leaf_id)
        try:
            st = os.stat(self._disk(path))
        except FileNotFoundError:
            return self._gone()
        if not stat.S_ISREG(st.st_mode):
            # replaced by a FIFO, a device or a directory: no session file there any more (and a
            # FIFO's open would wait for a writer)
            return self._gone()
        headerless = self._headerless
        if headerless is not None and headerless.signature == _signature_of(st):
            return self._still_headerless(headerless)
        if (
            self._out_of_sync
            or (self._open_tail and st.st_size > self._known_end)
            # a file found empty (read-only, no header written): what it holds now is read whole
            or (self._known_end == 0 and st.st_size > 0)
            or storage.FileIdentity.of(st) != self._identity
            or st.st_size < self._known_end
            or (self._marker and self._read_marker(path, self._known_end) != self._marker)
        ):
            return self._reload(path)
        if st.st_size == self._known_end:
            if self._stamp is not None and _times_of(st) != self._stamp:
                return self._reload(path)  # rewritten in place, keeping the size and the last bytes
            return FileChange("unchanged", [], self._leaf_id)
        return self._ingest_appended(path, st)

    def _scan_appended(self, path: str, start: int, end: int) -> ScanResult:
        """The whole lines of our file in [``start``, ``end``), the first of them our next line,
        keeping their bytes as a load of a file of ``end`` bytes would (D15: a rewrite afterwards
        leaves them as read). StaleFileError when the path names another file by now (renamed over
        ours since we looked at it): its bytes there are not lines appended to ours."""
        fd = open_for_reading(path, self._env)
        try:
            if self._identity is not None and storage.FileIdentity.of(os.fstat(fd)) != self._identity:
                raise StaleFileError(f"{path} was replaced by another process")
            source = self._source or FileLineSource(path, os.dup(fd))
            if self._source is None:
                self._source = source
            migrated = (
                source.scanning() if isinstance(source, MigratingLineSource) else contextlib.nullcontext()
            )
            with gc_paused(), migrated:
                return scan_entries(
                    fd,
                    source,
                    start=start,
                    first_line=self._line_count,
                    have_header=True,
                    include_tail=False,
                    end=end,
                    keep_bytes=loader.keeps_line_bytes(end),
                )
        finally:
            os.close(fd)

    def _ingest_appended(self, path: str, st: os.stat_result) -> FileChange:
        if isinstance(self._source, MigratingLineSource) and not self._source.reads_appended:
            return self._reload(path)
        try:
            result = self._scan_appended(path, self._known_end, st.st_size)
        except StaleFileError:
            return self._reload(path)  # replaced since it was looked at: read whole
        if isinstance(self._source, MigratingLineSource):
            self._source.migrate_loaded(result.entries)  # (as its values are read)
        self._add_entries(result.entries)
        new_ids = [entry.id for entry in result.entries]
        self.problems.extend(result.problems)
        self._line_count += result.lines
        self._known_end = result.end
        self._marker = self._read_marker(path, self._known_end)
        self._stamp = _times_of(st)  # as it was when read (a line still being written reads later)
        if not new_ids and not result.problems:
            return FileChange("unchanged", [], self._leaf_id)
        return FileChange("appended", new_ids, self._leaf_id)

    def _reload(self, path: str) -> FileChange:
        """Load the file again as another process left it. Never writes it (no newline repair, no
        migration rewrite, no header for an empty file: those are for an open).

        A file that is empty or shrank in place is being written again by another program
        (``cat backup > FILE``, an editor saving in place: truncate, then write): it is given a
        moment, then read again. While it is still empty or has no header, the session stays as it
        was and "rewriting" is reported once (a file that goes on changing without a header is
        still being written: nothing more to tell); the next refresh looks again, and one that finds
        it unchanged :data:`.storage.UNREADABLE_AFTER` seconds on reports it "unreadable"."""
        found = storage.settle_after_shrink(self._disk(path), self._identity, self._known_end)
        if found is None:
            return self._gone()
        before = {index_key(e.id) for e in self._file_entries}
        read_only = self.read_only
        try:
            with self._all_or_nothing():
                self.read_only = True  # a reload takes the file as it is
                try:
                    loaded = self._load_if_session(path)
                finally:
                    self.read_only = read_only
        except PiSessionError:
            self._headerless = None  # (a file that cannot be read at all is not waited for)
            return FileChange("reloaded", [], self._leaf_id)
        if not loaded:
            # what the file holds next is another file's: read it whole then, never as lines
            # appended to the one held (a rewrite that ends longer keeps the old bytes' place)
            self._out_of_sync = True
            return self._found_headerless(found)
        if self._appender is not None:
            self._appender.forget_end()  # rewritten by another program: its end is not ours
        new_ids = [e.id for e in self.get_entries() if index_key(e.id) not in before]
        return FileChange("reloaded", new_ids, self._leaf_id)

    def _gone(self) -> FileChange:
        """No file at our path (or no regular one): a headerless one it replaced is not waited for."""
        self._headerless = None
        return FileChange("deleted", [], self._leaf_id)

    def _found_headerless(self, st: os.stat_result) -> FileChange:
        """A look found the file without a session header (``st``: its status before the look, so
        that a header written since changes it). "rewriting" when the file was whole before or had
        been reported unreadable; a rewrite already reported is waited for anew."""
        previous = self._headerless
        self._headerless = _Headerless(_signature_of(st), time.monotonic())
        kind = "rewriting" if previous is None or previous.told else "unchanged"
        return FileChange(kind, [], self._leaf_id)

    def _still_headerless(self, headerless: _Headerless) -> FileChange:
        """The file is as a look left it, without a header: "unreadable" once it has held still for
        :data:`.storage.UNREADABLE_AFTER` seconds (nothing is read)."""
        if headerless.told or time.monotonic() - headerless.since < storage.UNREADABLE_AFTER:
            return FileChange("unchanged", [], self._leaf_id)
        # a new record, not this one changed: a transaction that raises gives this one back
        self._headerless = msgspec.structs.replace(headerless, told=True)
        return FileChange("unreadable", [], self._leaf_id)

    @property
    def awaiting_header(self) -> bool:
        """The file was last found without a session header and not reported "unreadable" yet: a
        follower refreshes again even when the file does not change, to learn that it held still."""
        return self._headerless is not None and not self._headerless.told

    def _load_if_session(self, path: str) -> bool:
        """Load ``path`` if it starts with a session header (False, nothing changed, if not)."""
        fd = open_for_reading(path, self._env)
        try:
            read_at = os.fstat(fd)
            peek = peek_header(fd)
            if not is_valid_header(peek.value):
                return False
            return self._load_headed(fd, path, peek, read_at)
        finally:
            os.close(fd)

    def drain_events(self) -> builtins.list[ForeignWrite]:
        """Foreign writes noticed while appending since the last call."""
        events, self._events = self._events, []
        return events

    @contextlib.contextmanager
    def transaction(self) -> Iterator[SessionManager]:
        """A block of calls that changes the session in memory all or nothing::

            with manager.transaction():
                manager.branch(entry_id)
                manager.append_label_change(entry_id, "here")

        If the block raises, the manager is as it was before it: entries it appended are taken back
        out, a switch to another file or session is undone, the leaf and labels are restored (the
        reference keeps an entry whose write failed in memory; this is the opt-out). Lines that did
        reach the file stay there; the next ``refresh_from_disk()`` reads them as any other writer's.
        What the block learnt of the file goes with it: the problems of lines a refresh in it read,
        another program's write an append in it met (:meth:`drain_events`), a file found
        unreadable; the next look at the file finds and tells each again, once.

        A session whose entries are still its index's rows stays so: the block makes no entry for
        this (a sidecar's every write but an append runs in one). Only when it raises after it
        appended rows (or made every entry) is every entry made, as they were before the block.
        """
        rows = self._rows
        entries = self._file_entries if rows is None else None
        count = rows.count + 1 if rows is not None else len(self._file_entries)  # (the header first)
        saved = dict(self.__dict__)
        labels, stamps = dict(self._labels), dict(self._label_timestamps)
        # (lists the block may only extend in place: cut back to these lengths)
        problems, events = len(self.problems), len(self._events)
        try:
            yield self
        except BaseException:
            # rows the block appended (or whose entries it made) are as they were only as entries
            rows_changed = rows is not None and (rows.all_made or rows.count != count - 1)
            if entries is not None:
                self._take_back_appended(entries, count, saved["_id_map"])
            if self._source is not None and self._source is not saved["_source"]:
                self._source.close()
            drained = self._events is not saved["_events"]  # handed out (told) in the block
            self.__dict__.clear()
            self.__dict__.update(saved)
            del self.problems[problems:]
            if drained:
                self._events = []
            else:
                del self._events[events:]
            if rows is not None and rows_changed:
                self._list_rows(saved["_rows_header"], *rows.first_entries(count - 1))
            self._labels.clear()
            self._labels.update(labels)
            self._label_timestamps.clear()
            self._label_timestamps.update(stamps)
            starts = self._chain_starts
            while starts and starts[-1] >= count - 1:  # chains begun by the entries taken back
                starts.pop()
            raise

    @staticmethod
    def _take_back_appended(entries: builtins.list[Entry], count: int, by_id: dict[Any, Entry]) -> None:
        """Take the entries after the first ``count`` out of ``entries`` and the id index ``by_id``."""
        appended = entries[count:]
        del entries[count:]
        for entry in reversed(appended):
            key = index_key(entry.id)
            if by_id.get(key) is entry:
                # the id's earlier holder, if any, is indexed again (the index keeps the last)
                earlier = next((e for e in reversed(entries) if index_key(e.id) == key), None)
                if earlier is None or earlier.type == "session":
                    del by_id[key]
                else:
                    by_id[key] = earlier

    def close(self) -> None:
        """Release the descriptors held for lazy reads and appends (entries read after this fail)."""
        if self._source is not None:
            self._source.close()
            self._source = None
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReadOnlySessionError(PiSessionError):
    """A write method was called on a manager opened with ``read_only=True``."""


def _times_of(st: os.stat_result) -> tuple[int, int]:
    """A file's modification and change times (what a rewrite in place always changes)."""
    return st.st_mtime_ns, st.st_ctime_ns


def _branch_copies(path: list[Entry]) -> list[dict[str, Any]]:
    """The bodies of the entries of ``path`` but its labels, each linked to the one before; a
    compaction's ``firstKeptEntryId`` naming a label names the entry that followed it."""
    kept: list[dict[str, Any]] = []
    replacement: dict[Any, Any] = {}
    pending: list[Any] = []
    parent: Any = None
    for e in path:
        if e.type == "label":
            pending.append(e.id)
            continue
        for label_id in pending:
            replacement[index_key(label_id)] = e.id
        pending.clear()
        body = e.value
        copy = dict(body) if isinstance(body, dict) else {}
        copy["parentId"] = parent
        if e.type == "compaction":
            first_kept = copy.get("firstKeptEntryId", ABSENT)
            mapped = replacement.get(index_key(first_kept), ABSENT)
            copy["firstKeptEntryId"] = coalesce(mapped, first_kept)
            copy = _drop_absent(copy)
        kept.append(copy)
        parent = e.id
    return kept


def _drop_absent(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without its ABSENT members, but ``parentId``: pi's entry holds ``parentId:
    undefined`` where there was no leaf, and a branched copy that sets it (``{...entry, parentId}``)
    keeps the key where it was, after the id (ABSENT is left out when the entry is written)."""
    if any(v is ABSENT for v in value.values()):
        return {k: v for k, v in value.items() if v is not ABSENT or k == "parentId"}
    return value


def _migrate_held(
    fd: int, locked: LockedFile | None, expected: FileState | None
) -> tuple[ExactLoad, Replaced | None]:
    """The file at ``fd`` read whole, its values migrated together, and rewritten from them when
    ``locked`` holds it (None: read-only; nothing written)."""
    exact = load_exact(fd)
    migrate_to_current_version(exact.values, True)
    replaced = locked.replace(rewrite_chunks(exact.lines), expected) if locked is not None else None
    return exact, replaced


def _rewrite_streamed(
    locked: LockedFile, header: dict[str, Any], expected: FileState | None
) -> Replaced | None:
    """The migration's rewrite of the file ``locked`` holds, whose header is ``header``, made as its
    lines are read (see loader.migrated_rewrite_chunks); None, nothing written, when its migration
    leaves no current file (a version that is not a number), or its values cannot be migrated a
    line at a time (see migrate.LaterValueNeeded) or one would not be read back from its line."""
    migration = StreamedMigration(header)
    if not becomes_current(migration.version):
        return None
    try:
        return locked.replace(migrated_rewrite_chunks(locked.fd, migration), expected)
    except (ValueNotWrittenBack, LaterValueNeeded):
        return None


def _entries_with_lines(exact: ExactLoad, rewritten: bool) -> list[Entry]:
    """File entries of an exactly loaded file, with the physical line each one is on (after the D7
    rewrite when there was one)."""
    entries = []
    for line_no, raw in zip(exact.line_numbers(rewritten), exact.lines, strict=True):
        if raw.kind == "kept" and isinstance(raw.value, dict):
            entry = Entry.of(raw.value, line=line_no)
            entries.append(entry)
    return entries


def _open_fork_source(source: str) -> int | None:
    """A descriptor on the fork source; None when there is no file."""
    return open_for_reading(source) if os.path.exists(source) else None


def _fork_source_values(fd: int, source: str, peek: Any, held: bool = False) -> Iterator[Any]:
    """The entries of the fork source at ``fd`` (whose valid header is ``peek``) as
    ``loadEntriesFromFile`` gives them, migrated in memory (D4): an old source's values are read
    and migrated one at a time (see migrate.StreamedMigration), or, with ``held`` (a version 1
    source whose migration raised LaterValueNeeded), together."""
    if not needs_migration([peek.value]):
        loaded, _source = load_lazy(fd, source, peek, index=index_settings())
        yield from loaded.entries
    elif held:
        values = load_exact(fd).values
        migrate_to_current_version(values, True)
        yield from (v for v in values if isinstance(v, dict))
    else:
        migration = StreamedMigration(peek.value)
        for value in iter_kept_values(fd):
            migration.migrate(value)
            if isinstance(value, dict):
                yield value


def _remove_if_still(path: str, made: os.stat_result) -> None:
    """Remove the file at ``path`` if it is still the one ``made`` describes (not one another
    program put there since); never an error."""
    with contextlib.suppress(OSError):
        if os.path.samestat(os.stat(path), made):
            os.unlink(path)


def _append_values(path: str, values: Iterable[Any], fsync: bool, env: Environment) -> None:
    """Append to ``path`` the lines of ``values`` (file entries or their values) but headers', a few
    MB at a time."""
    batch: list[bytes] = []
    size = 0
    for value in values:
        if get(value, "type") == "session":
            continue
        line = _line_bytes(value.value if isinstance(value, Entry) else value)
        batch.append(line)
        size += len(line)
        if size >= _FORK_BATCH:
            storage.append_lines(path, b"".join(batch), fsync=fsync, env=env)
            batch, size = [], 0
    if batch:
        storage.append_lines(path, b"".join(batch), fsync=fsync, env=env)
