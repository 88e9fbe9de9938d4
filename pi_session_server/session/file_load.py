"""How a manager loads its session file: an empty one started, a current one read (lazily, from
the persistent index where there is one), an older one migrated and, unless read-only, rewritten
as pi does, while other programs may be writing it."""

from __future__ import annotations

import builtins
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import InvalidSessionFileError, StaleFileError
from ..format.entry import Entry
from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, get
from ..format.scan import LineProblem
from . import loader, storage
from .cache_dir import IndexSettings
from .entry_index import EntryIndex
from .entry_values import line_bytes
from .file_tracking import FileTracking
from .loader import (
    ExactLoad,
    ValueNotWrittenBack,
    is_valid_header,
    load_exact,
    load_lazy,
    migrated_rewrite_chunks,
    open_for_reading,
    peek_header,
    rewrite_chunks,
)
from .migrate import (
    LaterValueNeeded,
    StreamedMigration,
    becomes_current,
    migrate_to_current_version,
    needs_migration,
    not_an_entry,
    session_version,
)
from .paths import StrPath, resolve_path
from .rewrites import FileState, LockedFile, Replaced, rewritten_after

# A migration that finds the file changed when it is about to rename reads it again; a file that
# changes each time is left alone after this many tries.
_MIGRATION_ATTEMPTS = 5


# An open that finds the file empty writes its header only while it is still empty: a file another
# program wrote meanwhile is read again; one emptied and written again each time is left alone after
# this many reads.
_EMPTY_FILE_ATTEMPTS = 5


# How long (seconds, at least and at most) a migration watches its file for a pi that read it just
# before the rename: twice as long as the migration itself took, within these bounds.
_MIGRATION_GRACE = (0.1, 2.0)


class FileLoading(EntryIndex, FileTracking):
    """Loading the session file into the index. A base of :class:`.manager.SessionManager`, whose
    ``__init__`` sets this state (declared here for the type checker)."""

    read_only: bool
    _on_progress: Callable[[int, int], Any] | None
    _index: IndexSettings | None
    _session_id: Any
    problems: builtins.list[LineProblem]
    _flushed: bool
    _load_writes_skipped: bool

    if TYPE_CHECKING:

        def new_session(self, options: Any = ABSENT) -> Any: ...

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
        header = line_bytes(self._file_entries[0].value)
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
