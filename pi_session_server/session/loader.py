"""Loading a session file into entries: the lazy path for current files, the exact path for migrations.

Both follow ``loadEntriesFromFile`` (docs/FORMAT.md §9.1): blank, malformed and falsy lines are
skipped; the first kept value must be a header (object, ``type`` "session", string ``id``) or the
file is invalid; values after the header that are not objects are skipped too (D3).
"""

from __future__ import annotations

import contextlib
import math
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from ..errors import StaleFileError, fs_error_from_oserror
from ..format.entry import Entry, LineBytes, MessageHead, head_for
from ..format.jsjson import dumps_bytes
from ..format.jsvalue import ABSENT
from ..format.scan import (
    FileLineSource,
    IdIndex,
    LineProblem,
    RawLine,
    classify_line,
    iter_physical_lines,
    observing_lines,
    problem_for,
)
from .cache_dir import IndexSettings
from .environment import Environment, on_disk
from .index_rows import IndexedRows
from .migrate import (
    OTHER_POSITION,
    DrawnVersionOneLinks,
    StreamedMigration,
    kept_value_position,
    migrate_value,
    session_version,
)
from .scan_index import scan_with_index
from .storage import tail_marker


def is_valid_header(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


class HeaderPeek(msgspec.Struct):
    """The first kept value of a file and where its line ends."""

    value: Any = ABSENT
    line: int = -1
    next_offset: int = 0  # offset of the line after the header line
    size: int = 0
    problems: list[LineProblem] = msgspec.field(default_factory=list)


def open_for_reading(path: str, env: Environment | None = None) -> int:
    """A descriptor on ``path`` (relative: in ``env``'s working directory); Node's error naming
    ``path`` as given otherwise."""
    try:
        return os.open(on_disk(path, env), os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        raise fs_error_from_oserror(err, "open", path) from err


def peek_header(fd: int) -> HeaderPeek:
    """Find the first kept value (raises FsError EISDIR for a directory, as Node's read does)."""
    try:
        size = os.fstat(fd).st_size
        peek = HeaderPeek(size=size)
        for line_no, offset, data, terminated in iter_physical_lines(fd, 0, 0, chunk_size=65536):
            raw = classify_line(line_no, offset, data)
            if raw.kind == "kept":
                peek.value = raw.value
                peek.line = line_no
                peek.next_offset = offset + len(data) + (1 if terminated else 0)
                return peek
            if raw.kind != "blank":
                peek.problems.append(problem_for(raw))
        return peek
    except OSError as err:
        raise fs_error_from_oserror(err, "read", None) from err


def ends_without_newline(fd: int, size: int) -> bool:
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class LazyLoad(msgspec.Struct):
    """A current-version file: header value plus lazy entries."""

    header: Any
    entries: list[Entry]
    problems: list[LineProblem]
    lines: int  # physical lines (complete ones; an unterminated final line is counted too)
    end: int  # bytes consumed
    needs_newline: bool
    index: IdIndex | None = None  # the scan's index of entries[1:] (the header is entries[0])
    # the entries after the header, made on demand, when ``entries`` holds only the header (see
    # scan_index.scan_with_index's ``lazy``)
    rows: IndexedRows | None = None


# Files up to this size keep every line's bytes in memory (bodies are decoded from them on demand),
# so nothing another process does to the file later can take a loaded entry away. Larger files are
# re-read by offset, which is what keeps multi-GB sessions in bounded memory (D15).
KEEP_BYTES_LIMIT = 32 * 1024 * 1024


def keeps_line_bytes(size: int) -> bool:
    """Whether the lines of a file of ``size`` bytes keep their bytes once read (D15), whether a load
    reads them or they are taken in later (appended by another process)."""
    return size <= KEEP_BYTES_LIMIT


class MigratingLineSource(FileLineSource):
    """The lines of an older file whose migration changes each value alone
    (:func:`.migrate.migrates_each_value_alone`), each value migrated as it is read again: the file
    is read as its migration would leave it, without holding its values or writing it.

    What a load keeps of a line without reading its value must be what the migrated value says:
    the header is migrated as it is peeked, the entries by :meth:`conform_scanned` (version 2 to 3
    changes nothing else that an entry's envelope, the persistent index or a label holds). The
    passes that decode a line's bytes themselves (the tree's previews, the silent turns, the
    previews kept beside the index) take only a plain :class:`FileLineSource` (they check its
    type), and a scan's observer is given no line (:meth:`scanning`): what they show of an entry is
    made from its value, read through :meth:`read_line`, migrated."""

    # whether the entries' ids are the ones their lines carry (else drawn at each open: no
    # persistent index of them is read or kept)
    keeps_line_ids = True

    def __init__(self, path: str, fd: int, version: float) -> None:
        super().__init__(path, fd)
        self.version = version

    def read_line(self, offset: int, length: int) -> Any:
        value = super().read_line(offset, length)
        migrate_value(value, self.version)
        return value

    def scanning(self) -> contextlib.AbstractContextManager[None]:
        """The block a scan of this file's lines runs in: no observer of the lines a scan reads
        (see ``scan.observing_lines``) is given their bytes, which are not the migrated value (a
        tree's previews are then made from the values, read migrated)."""
        return observing_lines(_left_unobserved)

    def conform_scanned(self, entries: list[Entry]) -> None:
        """Migrate ``entries`` as a scan of this file's lines made them: a value the scan holds (a
        line its envelope decoder does not take: too deep, ...) is migrated; the others' message
        entries are given the head their migrated value carries."""
        migrated: dict[int, MessageHead] = {}  # by the head's id: most entries share a few heads
        for entry in entries:
            if type(entry._body) is LineBytes:
                entry.hold()  # (a small file's appended line: its bytes are not the migrated value)
            if entry.is_loaded:
                migrate_value(entry.value, self.version)
                entry.refresh_envelope()
                continue
            head = entry.message
            if head is None or entry.type != "message":
                continue
            new = migrated.get(id(head))
            if new is None:
                new = migrated[id(head)] = self._migrated_head(head)
            if new is not head:
                # (an index write deferred past the open holds this head: only a migrating load
                # reads a version 2 file's index, and it migrates either role to the same one)
                entry.message = new

    def _migrated_head(self, head: MessageHead) -> MessageHead:
        message = {} if head.role is ABSENT else {"role": head.role}
        migrate_value({"type": "message", "message": message}, self.version)
        role = message.get("role", ABSENT)
        return head if role is head.role else head_for(role)


class VersionOneLineSource(MigratingLineSource):
    """The lines of a version 1 file, each value migrated as it is read again (see
    :class:`MigratingLineSource`). Version 1 to 2 gives each entry an id, the entry before it as
    its parent, and a compaction the id of the entry its ``firstKeptEntryIndex`` names: the ids are
    drawn once the file's lines are scanned (:meth:`conform_scanned`), from its kept values' kinds
    in order (non-objects count as positions), as the migration of the values together draws
    them; each value read is then linked by its line's offset. Lines another program appends are
    not migrated a line at a time (a later line's id may be one drawn already): the file is read
    again whole (:attr:`reads_appended`).

    A line read again is linked by its position among the lines scanned, which every earlier line
    decides: once the file was written otherwise than by lines appended (see
    :meth:`_written_since_scan`), no line is read from it (StaleFileError) until it is read again
    whole, as a look at it does."""

    reads_appended = False
    keeps_line_ids = False

    def __init__(self, path: str, fd: int, header: dict[str, Any]) -> None:
        super().__init__(path, fd, 2.0)  # (what is left of a value's migration once it is linked)
        self._header_id = header.get("id", ABSENT)
        self._links: DrawnVersionOneLinks | None = None
        self._offsets = array("q")  # each entry's line's offset, in file order
        self._positions = array("q")  # its position among the file's kept values
        self._other_lines: list[int] = []  # the lines of the kept values that are no object
        self._scanned = os.fstat(fd)  # (before its lines are scanned)
        self._scanned_tail = tail_marker(fd, self._scanned.st_size)

    def _written_since_scan(self) -> bool:
        """Whether the file was written since its scan began otherwise than by bytes appended
        after those it had then (their last ones still there), as a look at the file tells an
        append from a rewrite."""
        now = os.fstat(self.fd)
        if not _written_since(self._scanned, now):
            return False
        end = self._scanned.st_size
        return not (now.st_size > end and tail_marker(self.fd, end) == self._scanned_tail)

    def read_line(self, offset: int, length: int) -> Any:
        if self._written_since_scan():
            self.found_other_line()
            raise StaleFileError(f"session file changed underneath: {self.path}")
        value = FileLineSource.read_line(self, offset, length)
        at = bisect_left(self._offsets, offset)
        if self._links is not None and at < len(self._offsets) and self._offsets[at] == offset:
            self._links.migrate(value, self._positions[at])
        return value

    def skipped_by_scan(self, problems: list[LineProblem]) -> None:
        """The lines the scan found no entry on: the values among them that pi keeps, which are
        no objects (``non_object``: a truthy value; a falsy, malformed or glued line pi skips),
        count as positions (D3; :meth:`conform_scanned` draws them)."""
        self._other_lines = sorted(p.line for p in problems if p.kind == "non_object")

    def conform_scanned(self, entries: list[Entry]) -> None:
        """Draw the links of ``entries`` (the scan's, after the header) and of the values that are
        no object among them (:meth:`skipped_by_scan`), give each entry the id and parent drawn,
        and migrate the values the scan holds."""
        carried = (entry.id for entry in entries if isinstance(entry.id, str))
        links = self._links = DrawnVersionOneLinks(self._header_id, carried)
        others = iter(self._other_lines)
        self._other_lines = []
        next_other = next(others, None)
        held = []
        for entry in entries:
            while next_other is not None and next_other < entry.line:
                links.draw(OTHER_POSITION)
                next_other = next(others, None)
            position = links.positions
            self._offsets.append(entry.offset)
            self._positions.append(position)
            drawn = links.draw(kept_value_position(True, entry.type), entry.id)
            if entry.is_loaded:
                held.append((entry, position))  # (its value is linked once every position is drawn)
            elif drawn is not None:
                entry.id, entry.parent_id = drawn
        while next_other is not None:  # (a compaction may name one after the last entry)
            links.draw(OTHER_POSITION)
            next_other = next(others, None)
        links.drawn()
        for entry, position in held:  # (after every position's link: a compaction names a later one)
            links.migrate(entry.value, position)
            entry.refresh_envelope()
        super().conform_scanned([entry for entry in entries if not entry.is_loaded])


def _written_since(before: os.stat_result, now: os.stat_result) -> bool:
    """Whether a file whose status was ``before`` was written since: its size or modification
    time, or, while a name still leads to it, its change time (which an editor setting the
    modification time back leaves). A file deleted or renamed over (no name leads to it) is
    written by nobody: its lines stay as they were."""
    if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        return True
    return now.st_nlink > 0 and now.st_ctime_ns != before.st_ctime_ns


def migrating_source(path: str, fd: int, header: dict[str, Any], version: float) -> MigratingLineSource:
    """The lines of the file at ``fd`` (owned by the source), of ``version``, read migrated by the
    header ``header`` (as the file holds it)."""
    if version < 2:
        return VersionOneLineSource(path, fd, header)
    return MigratingLineSource(path, fd, version)


def _left_unobserved(entry: Entry, line: memoryview) -> None:
    """(The observer of a migrated file's lines: see MigratingLineSource.scanning.)"""


def load_lazy(
    fd: int,
    path: str,
    peek: HeaderPeek,
    on_progress: Callable[[int, int], Any] | None = None,
    index: IndexSettings | None = None,
    lazy: bool = False,
    migrate_from: float | None = None,
) -> tuple[LazyLoad, FileLineSource]:
    """The entries of a current-version file after its header (``peek``), from its persistent
    index where ``index`` allows one and it matches the file (see scan_index), else scanned.
    ``lazy``: the index's rows may come as :class:`.index_rows.IndexedRows` (``LazyLoad.rows``).

    ``migrate_from``: the file is of this older version, one whose migration changes each value
    alone: its entries are given as migrated (see :class:`MigratingLineSource`), every value read
    again from its line when asked for (no line's bytes kept, no rows: each entry's head is
    migrated as it is loaded)."""
    source: FileLineSource
    ids_of_lines = True  # whether the entries' ids are those their lines carry
    if migrate_from is None:
        source = FileLineSource(path, os.dup(fd))
        keep_bytes = keeps_line_bytes(peek.size)
    else:
        source = migrating_source(path, os.dup(fd), peek.value, migrate_from)
        keep_bytes = lazy = False
        migrate_value(peek.value, source.version)
        if not source.keeps_line_ids:
            ids_of_lines = False
            index = None  # its ids are drawn at each open, as a load holding its values draws them
    if index is not None:
        source.index_dir = index.directory
    with source.scanning():
        result = scan_with_index(
            fd,
            source,
            peek.next_offset,
            peek.line + 1,
            index,
            keep_bytes=keep_bytes,
            on_progress=on_progress,
            lazy=lazy,
        )
    entries = result.entries
    source.skipped_by_scan(result.problems)
    source.conform_scanned(entries)
    entries.insert(0, Entry.of(peek.value, line=peek.line))  # in place: no second list of every entry
    total_lines = peek.line + 1 + result.lines
    return (
        LazyLoad(
            peek.value,
            entries,
            peek.problems + result.problems,
            total_lines,
            result.end if not result.tail else result.end + len(result.tail),
            ends_without_newline(fd, peek.size),
            result.index if ids_of_lines else None,
            result.rows,
        ),
        source,
    )


class ExactLoad(msgspec.Struct):
    """Every physical line classified, as the reference's loader keeps them (for migration rewrites)."""

    values: list[Any]  # every kept value (non-objects included: v1 positions count them)
    lines: list[RawLine]  # non-blank physical lines, in order (an object's without its bytes: its value)
    needs_newline: bool
    physical_lines: int = 0  # every line of the file as read, blank ones included
    version: float = 3.0  # the file's (migrate.session_version), read before its values are migrated

    def line_numbers(self, rewritten: bool) -> list[int]:
        """The line each of :attr:`lines` is on: in the file as read, or after a D7 rewrite (which
        drops blank lines)."""
        return list(range(len(self.lines))) if rewritten else [raw.line for raw in self.lines]

    def problems(self, rewritten: bool) -> list[LineProblem]:
        """What the lazy loader reports for the same lines: every non-blank line that is not an
        object entry (the header is the first kept object). After a rewrite, where the line is in
        the file written (:func:`rewrite_chunks`), as a load of that file finds it."""
        last = max((n for n, raw in enumerate(self.lines) if not _is_object(raw)), default=-1)
        problems = []
        offset = 0  # in the file written (its lines made again up to the last problem's)
        for line_no, raw in zip(self.line_numbers(rewritten)[: last + 1], self.lines, strict=False):
            written = _rewritten_line(raw) if rewritten else b""
            if not _is_object(raw):
                problem = problem_for(classify_line(line_no, offset, written[:-1]) if rewritten else raw)
                problem.line = line_no
                problems.append(problem)
            offset += len(written)
        return problems


def _is_object(raw: RawLine) -> bool:
    """Whether ``raw`` is a line of an object (an entry, a header): no problem."""
    return raw.kind == "kept" and isinstance(raw.value, dict)


def load_exact(fd: int) -> ExactLoad:
    values: list[Any] = []
    lines: list[RawLine] = []
    needs_newline = False
    line_no = -1
    try:
        for line_no, offset, data, terminated in iter_physical_lines(fd):
            if not terminated:
                needs_newline = True
            raw = classify_line(line_no, offset, data)
            if raw.kind == "blank":
                continue
            lines.append(raw)
            if raw.kind == "kept":
                values.append(raw.value)
                if isinstance(raw.value, dict):
                    raw.data = b""  # its value is what is used (rewritten, made an entry): not held twice
    except OSError as err:
        raise fs_error_from_oserror(err, "read", None) from err
    return ExactLoad(values, lines, needs_newline, line_no + 1, session_version(values[:1]))


def iter_kept_values(fd: int) -> Iterator[Any]:
    """The values ``loadEntriesFromFile`` keeps of the file at ``fd`` (the header first, values
    that are no object too), read one at a time."""
    try:
        for line_no, offset, data, _terminated in iter_physical_lines(fd):
            raw = classify_line(line_no, offset, data)
            if raw.kind == "kept":
                yield raw.value
    except OSError as err:
        raise fs_error_from_oserror(err, "read", None) from err


def rewrite_chunks(lines: list[RawLine]) -> Iterator[bytes]:
    """D7: kept objects re-serialized, every other non-blank line as the reference decoded it."""
    for raw in lines:
        yield _rewritten_line(raw)


def _rewritten_line(raw: RawLine) -> bytes:
    """The line :func:`rewrite_chunks` writes for ``raw``, its newline included."""
    if raw.kind == "kept" and isinstance(raw.value, dict):
        return dumps_bytes(raw.value) + b"\n"
    return raw.data.decode("utf-8", "replace").encode("utf-8") + b"\n"


def _holds_non_finite(value: Any) -> bool:
    """Does ``value`` hold an infinite number (JSON.stringify writes it null)? (A loop, not a
    recursion: a line's value may be nested deeper than Python recurses.)"""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float and not math.isfinite(item):
            return True
    return False


class ValueNotWrittenBack(Exception):
    """A migrated value whose line, read back, is another value (a number JSON.stringify writes
    otherwise: 1e400, which pi holds as Infinity, is written null): :func:`migrated_rewrite_chunks`
    stops before the rewrite is made."""


def migrated_rewrite_chunks(fd: int, migration: StreamedMigration) -> Iterator[bytes]:
    """:func:`rewrite_chunks` of the file at ``fd`` migrated by ``migration`` (made from its header,
    one that :func:`.migrate.becomes_current`), read, migrated and written a line at a time: no
    value of the file is held beyond its line. The file written is then read as any current one
    is, its entries' values from their lines: a value its line does not give back (rare: its line
    changed, and holds a number JSON.stringify writes otherwise) raises :class:`ValueNotWrittenBack`
    instead, as a version 1 file the migration of a value needs later ones for raises
    :class:`.migrate.LaterValueNeeded` (then the file is migrated holding its values)."""
    try:
        for line_no, offset, data, _terminated in iter_physical_lines(fd):
            raw = classify_line(line_no, offset, data)
            if raw.kind == "blank":
                continue
            if raw.kind == "kept":
                migration.migrate(raw.value)  # (a value that is no object too: it has a position)
            if raw.kind == "kept" and isinstance(raw.value, dict):
                line = _rewritten_line(raw)
                # (a line pi wrote comes out as it was, which gives its value back: only a changed
                # one may hold a number written otherwise)
                if line[:-1] != data and _holds_non_finite(raw.value):
                    raise ValueNotWrittenBack(f"line {line_no + 1}")
                yield line
            else:
                yield _rewritten_line(raw)
    except OSError as err:
        raise fs_error_from_oserror(err, "read", None) from err
