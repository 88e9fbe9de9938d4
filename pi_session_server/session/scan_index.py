"""The persistent index of a session file: what a scan of its lines found, kept in a cache directory.

Opening a session reads every line after the header to learn each entry's envelope and place
(:mod:`..format.scan`). That scan's result for the file's complete lines (entries, skipped lines,
line count, where chains start) is kept in one file of the cache directory, so the next open of
the same file reads the index instead of the lines. Session files are append-only: when the file
grew, only its new lines are scanned, and the index is written again once they are many. Whatever
does not match is ignored and rebuilt; an index that cannot be written is no error.

Which index belongs to a file: the index file is named by the session file's device and inode,
and holds the file's size, mtime and ctime once its lines were scanned, the generation of its
inode, the offset just after the last line indexed (``end``), and a CRC-32 of the file's first and
of its last bytes before ``end``. It is used when

* device, inode, generation, where the header ends and both CRCs match, the file is at least
  ``end`` bytes long and
* the file has the same size, mtime and ctime as when it was indexed (unchanged), or is longer
  (appended to: the lines after ``end`` are scanned). A file rewritten in place with the same size
  has a new ctime (``os.utime`` cannot set it back); a truncated one is shorter; one renamed over
  the path has another inode, or the number of the one it replaced with another generation
  (cache_dir.generation). A file that changed while it was scanned, or just before
  (cache_dir.RACY_NS), could change again within its clock's tick keeping its times: its index
  ("racy") serves only once the file grew; unchanged, the file is scanned again (and indexed as
  it is then).

An entry keeps its place in the file, and reading its body checks that the line read carries the
envelope the index gave (``Entry.value``), so a file changed behind the index's back yields a
``StaleFileError``, not another entry's body. When the index still matches the file as it is
then, it lied (forged, or bytes changed where its checks do not look): it is deleted, so that the
next open rebuilds it instead of believing it again.

The file: ``MAGIC``, the format version, the code that wrote it (``cache_dir.code_stamp``), the
lengths of the header and the payload and a CRC-32 of both (``_PREFIX``), then the payload: the columns of every entry, one section each (ids and
timestamps as text joined by NUL, each followed by where every value of it ends as 32-bit integers,
type and role codes one byte each, offsets as 64-bit integers, chain starts), then the header
(msgpack, :class:`IndexHeader`: the key, the tables, what is sparse, and where every id is a
distinct string, the position of each chain's parent). With the ends, one entry can be made from
the columns without the others, and with the parents' positions the leaf's path is walked without
an id map: a reopen makes only the entries it is asked for (:mod:`.index_rows`).
Entries whose envelope does not fit the columns (a number for an id, a held body: lines msgspec
rejected) are listed by position and scanned again from the file when the index is read. Writes go
to a temporary file in the cache directory, renamed over the index: concurrent processes each
write a whole index, and a reader sees one whole index or none.
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
import sys
import threading
import time
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import attrgetter, is_not, lt, ne, sub
from typing import Any, Final, NamedTuple

import msgspec

from ..format.entry import Entry, LineBytes, MessageHead, head_for
from ..format.jsvalue import ABSENT
from ..format.scan import (
    FileLineSource,
    IdIndex,
    LineProblem,
    ScanResult,
    entry_from_line,
    line_at,
    scan_entries,
)
from . import cache_dir
from .cache_dir import IndexSettings, NotUsable, edges, index_path
from .chains import Positions
from .index_rows import MAX_CODES, PLAIN_OPTIONAL, IndexedRows, RowColumns, ends_of
from .storage import write_all

# ---------------------------------------------------------------------- the scan, with an index


class IndexOutcome(msgspec.Struct):
    """What the last open did with the index (for tests and benchmarks)."""

    read: str = (
        "none"  # "none" (not looked for), "missing", "used", "grown" (used, new lines scanned), "stale"
    )
    written: bool = False


last_outcome = IndexOutcome()

# the writes an open on this thread hands back instead of making them (see index_writes_deferred)
_deferring = threading.local()


@contextlib.contextmanager
def index_writes_deferred() -> Iterator[list[Callable[[], bool]]]:
    """Opens on this thread in the block do not write the index they made: each write is added to
    the list yielded, as a call that makes it (True: written), from any thread, at any time after.
    It holds what it writes, taken when the file was scanned, not the session's state, which goes
    on changing. The index serves the next process that opens the file, not this one: the server
    answers an open first and writes its index when it is quiet (server/index_keeping.py)."""
    writes: list[Callable[[], bool]] = []
    outer = getattr(_deferring, "writes", None)
    _deferring.writes = writes
    try:
        yield writes
    finally:
        _deferring.writes = outer


def scan_with_index(
    fd: int,
    source: Any,
    start: int,
    first_line: int,
    settings: IndexSettings | None,
    *,
    keep_bytes: bool,
    on_progress: Callable[[int, int], Any] | None = None,
    lazy: bool = False,
) -> ScanResult:
    """What ``scan_entries(fd, source, start=start, first_line=first_line, have_header=True)`` finds
    (``start``: where the line after the header starts), read from the file's index where it has one
    that matches, and the index written for the next time (``settings`` None: scanned, no index).

    ``lazy``: an index that allows it (see ``_lazy_allowed``) gives its entries as
    :class:`.index_rows.IndexedRows` in ``result.rows``, with those of the lines a file grew by
    where they keep the rows' rules (``IndexedRows.append_scanned``); ``result.entries`` is then
    empty and ``result.index`` holds only the chain starts."""
    global last_outcome
    outcome = last_outcome = IndexOutcome()
    try:
        st = os.fstat(fd)
    except OSError:
        st = None
    seen_at = time.time_ns()
    if settings is None or st is None or not settings.wanted(st.st_size):
        return _scan(fd, source, start, first_line, keep_bytes, on_progress)
    path = index_path(settings.directory, st)
    cached = _read_index(path, fd, st, start, first_line, source, keep_bytes, outcome, lazy)
    belief = None
    if cached is None:
        result = _scan(fd, source, start, first_line, keep_bytes, on_progress)
        indexed = start
    else:
        if isinstance(source, FileLineSource) and isinstance(source.when_other_line, _IndexBelief):
            belief = source.when_other_line
        indexed = cached.end
        if on_progress is not None:
            on_progress(indexed, st.st_size)
        rest = _scan(fd, source, indexed, first_line + cached.lines, keep_bytes, on_progress)
        if rest.end > indexed:
            outcome.read = "grown"
        if cached.rows is not None and not cached.rows.append_scanned(rest.entries):
            # the new entries break the rows' rules (an id twice, ...): every entry, indexed as one
            # scan would index them
            every_entry(cached, cached.rows)
        result = _joined(cached, rest)
    grown = _complete_end(result) - indexed
    if cached is None or grown >= max(settings.min_size, (indexed - start) // 64, 1):
        if result.rows is not None:
            every_entry(result, result.rows)
        _write_index_or_defer(
            outcome, settings.directory, path, fd, st, seen_at, start, first_line, result, belief
        )
    return result


def _write_index_or_defer(
    outcome: IndexOutcome,
    directory: str,
    path: str,
    fd: int,
    st: os.stat_result,
    seen_at: int,
    start: int,
    first_line: int,
    result: ScanResult,
    belief: _IndexBelief | None = None,
) -> None:
    """Write the index of ``result`` now, or hand the write to the caller that defers it (see
    index_writes_deferred); ``outcome.written`` says whether it was written, once it was tried.
    ``belief``: that of the index ``result``'s rows were read from; a write that runs once it was
    found to lie makes nothing (the rows it would write hold the lie)."""
    try:  # now: the descriptor is closed by the time a deferred write runs
        crcs = edges(fd, result.end)
        scanned_st = os.fstat(fd)
        stamp = _FileStamp(
            scanned_st,
            # appended to while it was scanned, or changed just before
            cache_dir.identity(scanned_st) != cache_dir.identity(st) or cache_dir.changed_lately(st, seen_at),
            cache_dir.generation(fd),
        )
    except (NotUsable, OSError):
        return  # the file is no longer what was scanned: no index

    def write(scanned: ScanResult) -> bool:
        if belief is not None and belief.lied:
            outcome.written = False
        else:
            outcome.written = _write_index(directory, path, stamp, start, first_line, scanned, crcs)
        return outcome.written

    write_later_or_now(lambda: write(result), held=lambda: functools.partial(write, _as_scanned(result)))


def write_later_or_now(
    write: Callable[[], bool], held: Callable[[], Callable[[], bool]] | None = None
) -> None:
    """``write()`` (something kept with an index) now, or handed to the block of
    :func:`index_writes_deferred` this thread is in: it then holds what it writes (``held()``: the
    write of a copy taken now, when what ``write`` reads goes on changing)."""
    deferred = getattr(_deferring, "writes", None)
    if deferred is None:
        write()
    else:
        deferred.append(write if held is None else held())


def _as_scanned(result: ScanResult) -> ScanResult:
    """What the index of ``result`` is made from (see _encoded), as it is now: the session goes on
    with the same lists and id map (its header is put first among the entries, what it appends is
    added), and the index must describe the lines scanned."""
    index = result.index
    return ScanResult(
        entries=list(result.entries),
        problems=list(result.problems),
        lines=result.lines,
        end=result.end,
        tail=result.tail,
        index=IdIndex(
            by_id=dict(index.by_id), complete=index.complete, chain_starts=list(index.chain_starts)
        ),
    )


def _scan(
    fd: int,
    source: Any,
    start: int,
    first_line: int,
    keep_bytes: bool,
    on_progress: Callable[[int, int], Any] | None,
) -> ScanResult:
    return scan_entries(
        fd,
        source,
        start=start,
        first_line=first_line,
        have_header=True,
        on_progress=on_progress,
        keep_bytes=keep_bytes,
    )


def _joined(front: ScanResult, back: ScanResult) -> ScanResult:
    """The result of one scan of both parts (``back`` starts where ``front`` ends; when ``front``
    holds rows, ``back``'s entries are among them already: IndexedRows.append_scanned)."""
    front.problems.extend(back.problems)
    if front.rows is None:
        shift = len(front.entries)
        front.entries.extend(back.entries)
        index, more = front.index, back.index
        index.by_id.update(more.by_id)
        index.non_messages.extend(more.non_messages)
        index.complete = index.complete and more.complete
        index.chain_starts.extend(s + shift for s in more.chain_starts)
    front.lines += back.lines
    front.end = back.end
    front.tail = back.tail
    front.size += back.size
    return front


def _complete_end(result: ScanResult) -> int:
    """Where the last complete line ends (a final line without newline is not indexed: it may
    still be being written)."""
    return result.end


# ---------------------------------------------------------------------- the file format

MAGIC: Final = b"PISESIDX"
FORMAT_VERSION: Final = 3
# magic, format version, code stamp, header length, payload length, CRC-32 of the payload and the
# header (which follows the payload: it is known once the payload was written)
_PREFIX = struct.Struct("<8sIIIQI")
# codes of the role column below the role table
_NO_MESSAGE = 0  # entry.message is None
_NO_ROLE = 1  # a message head without a role
_ROLE_BASE = 2
_TEXT_PIECE = 65536  # values joined and encoded at a time when a text column is written
_SECTIONS = (
    "ids",
    "id_ends",
    "timestamps",
    "timestamp_ends",
    "type_codes",
    "role_codes",
    "offsets",
    "chain_starts",
)


class IndexHeader(msgspec.Struct, array_like=True):
    """What the index was made from, and the parts of the columns that are sparse."""

    byteorder: str
    dev: int
    ino: int
    size: int  # the file's size, mtime and ctime once its lines were scanned
    mtime_ns: int
    ctime_ns: int
    # the file changed while it was scanned or just before (cache_dir.RACY_NS): it may change
    # again keeping its size, mtime and ctime
    racy: bool
    generation: int  # of the file's inode (cache_dir.generation)
    start: int  # where the line after the header starts
    first_line: int  # its line number
    end: int  # just after the last line indexed
    lines: int  # physical lines in [start, end)
    head_crc: int  # of the file's first bytes (see cache_dir.edges)
    tail_crc: int  # of its last bytes before end
    count: int  # entries
    types: list[Any]  # type code -> type (a string, or ABSENT for a line without one)
    roles: list[str]  # role code - _ROLE_BASE -> role
    line_runs: list[tuple[int, int]]  # (position, line): entries from position on are on consecutive lines
    parents: list[tuple[int, Any]]  # parentId where it is not the id of the entry before
    targets: list[tuple[int, Any, Any]]  # (position, targetId, label) where either is present
    lengths: list[tuple[int, int]]  # Entry.length where it is not 0
    rescanned: list[int]  # positions of entries read again from the file
    problems: list[tuple[int, int, str, str, int, int]]  # LineProblem fields
    complete: bool  # the id index holds every entry (IdIndex.complete)
    unique: bool  # every id a distinct non-empty string (then an id names one entry)
    parent_rows: list[int]  # when unique: the position of each of ``parents``' parent (-1: none)
    sections: list[int]  # byte length of each payload section, in _SECTIONS order


_ABSENT_EXT = 1


def enc_hook(value: Any) -> Any:
    if value is ABSENT:
        return msgspec.msgpack.Ext(_ABSENT_EXT, b"")
    raise NotImplementedError(f"{type(value).__name__} is not kept in an index")


def ext_hook(code: int, _data: memoryview) -> Any:
    if code == _ABSENT_EXT:
        return ABSENT
    raise ValueError(f"unknown extension {code}")


_encode_header = msgspec.msgpack.Encoder(enc_hook=enc_hook).encode
_decode_header = msgspec.msgpack.Decoder(IndexHeader, ext_hook=ext_hook).decode


# ---------------------------------------------------------------------- reading


def _read_index(
    path: str,
    fd: int,
    st: os.stat_result,
    start: int,
    first_line: int,
    source: Any,
    keep_bytes: bool,
    outcome: IndexOutcome,
    lazy: bool = False,
) -> ScanResult | None:
    try:
        index_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        outcome.read = "missing"
        return None
    try:
        header, check = _read_header(index_fd)
        _check_key(header, fd, st, start, first_line)  # before the columns are read
        rows = _rows_of(header, _read_columns(index_fd, header, check), fd, source, keep_bytes)
        result = _result_of(header, rows, fd, source, keep_bytes, lazy)
    except (NotUsable, OSError, ValueError, TypeError, KeyError, IndexError, msgspec.DecodeError):
        outcome.read = "stale"
        # gone at once, not only replaced when the new index is written (which may fail): the file
        # may later grow past what it described, and then match again where its CRCs look
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    finally:
        os.close(index_fd)
    outcome.read = "used"
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: pruning removes the indexes used least recently
    if isinstance(source, FileLineSource):
        source.when_other_line = _IndexBelief(path, header, source, start, first_line)
    return result


class _IndexBelief:
    """What a line read that is not the entry the index at ``path`` gave does (once): the index
    goes when it lied (see _drop_if_believed), and ``lied`` tells the writes of an index made from
    its rows (the file grew: see scan_with_index) that run later to make none."""

    def __init__(
        self, path: str, header: IndexHeader, source: FileLineSource, start: int, first_line: int
    ) -> None:
        self.lied = False
        self._drop = functools.partial(_drop_if_believed, path, header, source, start, first_line)

    def __call__(self) -> None:
        self.lied = True
        self._drop()


def _drop_if_believed(
    path: str, header: IndexHeader, source: FileLineSource, start: int, first_line: int
) -> None:
    """A line read is not the entry the index read from ``path`` gave. When the index still
    matches the file as it is now, it lied (forged, or bytes changed where its checks do not
    look), and the next open would believe it again: it goes, and that open rebuilds it (an index
    written since in its place, from this one or from the same file, is no better). A file changed
    since as the checks see (rewritten in place, truncated, replaced) keeps it: the line read may
    be new, and the next open finds the index does not match."""
    with contextlib.suppress(OSError):
        try:
            _check_key(header, source.fd, os.fstat(source.fd), start, first_line)
        except NotUsable:
            return
        os.unlink(path)


class _Check(msgspec.Struct):
    """Where the payload is, and what the CRC-32 of the payload and the header must be."""

    header_bytes: bytes
    payload_length: int
    crc: int


def _read_header(index_fd: int) -> tuple[IndexHeader, _Check]:
    prefix = os.pread(index_fd, _PREFIX.size, 0)
    if len(prefix) < _PREFIX.size:
        raise NotUsable("too short")
    magic, version, code, header_length, payload_length, crc = _PREFIX.unpack(prefix)
    if magic != MAGIC or version != FORMAT_VERSION:
        raise NotUsable("another format")
    if code != cache_dir.code_stamp():
        raise NotUsable("written by other code")
    header_at = _PREFIX.size + payload_length
    if os.fstat(index_fd).st_size != header_at + header_length:
        raise NotUsable("cut short, or more than written")
    header_bytes = _read_exactly(index_fd, header_length, header_at)
    # (decoded before the CRC is checked, to see first whether it is this file's; nothing of it is
    # used unless the CRC matches: see _read_columns)
    return _decode_header(header_bytes), _Check(header_bytes, payload_length, crc)


def _read_columns(index_fd: int, header: IndexHeader, check: _Check) -> dict[str, Any]:
    """The payload's columns by name (as the fields of RowColumns), read a section at a time; none
    is used before the CRC of all is checked."""
    n = header.count
    lengths = header.sections
    if len(lengths) != len(_SECTIONS) or sum(lengths) != check.payload_length or min(lengths) < 0:
        raise NotUsable("sections do not add up")
    crc = 0
    at = _PREFIX.size
    decoded: dict[str, Any] = {}
    for name, length in zip(_SECTIONS, lengths, strict=True):
        data = _read_exactly(index_fd, length, at)
        at += length
        crc = zlib.crc32(data, crc)
        if name in ("id_ends", "timestamp_ends"):
            decoded[name] = _integers(data, "I", n)
        elif name == "offsets":
            decoded[name] = _integers(data, "q", n)
        elif name == "chain_starts":
            decoded[name] = _integers(data, "q").tolist()
        elif name in ("type_codes", "role_codes") and len(data) != n:
            raise NotUsable("column of another length")
        else:
            decoded[name] = data
    if zlib.crc32(check.header_bytes, crc) != check.crc:
        raise NotUsable("damaged")
    for text, ends in (("ids", "id_ends"), ("timestamps", "timestamp_ends")):
        if n and decoded[ends][-1] != len(decoded[text]):
            raise NotUsable("text of another length")
    return decoded


def _read_exactly(fd: int, length: int, offset: int) -> bytes:
    data = os.pread(fd, length, offset)
    while len(data) < length:
        more = os.pread(fd, length - len(data), offset + len(data))
        if not more:
            raise NotUsable("cut short")
        data += more
    return data


def _check_key(header: IndexHeader, fd: int, st: os.stat_result, start: int, first_line: int) -> None:
    if (
        header.byteorder != sys.byteorder
        or header.dev != st.st_dev
        or header.ino != st.st_ino
        or header.start != start
        or header.first_line != first_line
        or not start <= header.end <= st.st_size
        or st.st_size < header.size
    ):
        raise NotUsable("another file, or truncated")
    if header.generation != cache_dir.generation(fd):
        raise NotUsable("another file, under the inode number of the one indexed")
    if st.st_size == header.size:
        if (header.mtime_ns, header.ctime_ns) != (st.st_mtime_ns, st.st_ctime_ns):
            raise NotUsable("rewritten in place")
        if header.racy:
            raise NotUsable("indexed while it changed: a change since may have kept its times")
    head, tail = edges(fd, header.end)
    if head != header.head_crc or tail != header.tail_crc:
        raise NotUsable("other bytes")


def _integers(data: bytes, typecode: str, count: int | None = None) -> array[int]:
    numbers = array(typecode)
    if len(data) % numbers.itemsize:
        raise NotUsable("column of another length")
    numbers.frombytes(data)
    if count is not None and len(numbers) != count:
        raise NotUsable("column of another length")
    return numbers


def _codes_below(codes: bytes, limit: int) -> bool:
    """Every byte of ``codes`` is below ``limit``: those bytes deleted, none is left (``max`` would
    make an int of every byte, a row at a time, on every open from the index)."""
    return limit > 0xFF or not codes.translate(None, bytes(range(limit)))


def _rows_of(
    header: IndexHeader, columns: dict[str, Any], fd: int, source: Any, keep_bytes: bool
) -> IndexedRows:
    """The rows the index holds (their entries pointing to ``source``), checked against the header."""
    n = header.count
    types = header.types
    heads: list[Any] = [None, head_for(ABSENT), *(head_for(role) for role in header.roles)]
    if (
        not (
            _codes_below(columns["type_codes"], len(types))
            and _codes_below(columns["role_codes"], len(heads))
        )
        or any(type(value) is not str and value is not ABSENT for value in types)
        or any(type(value) is not str for value in header.roles)
    ):
        raise NotUsable("unknown code")
    _check_runs(header.line_runs, n)
    _check_places(header, columns)
    parents: dict[int, Any] = {}
    for position, parent in header.parents:
        if not (parent is None or parent is ABSENT or type(parent) is str) or not 0 <= position < n:
            raise NotUsable("parentId of another type")
        parents[position] = parent
    parent_rows: dict[int, int] = {}
    if header.parent_rows:
        if len(header.parent_rows) != len(header.parents) or not all(-1 <= r < n for r in header.parent_rows):
            raise NotUsable("parent rows of another length")
        parent_rows = dict(zip(parents, header.parent_rows, strict=True))
    starts = columns["chain_starts"]
    if n and (not starts or starts[0] != 0 or starts[-1] >= n):
        raise NotUsable("chain starts out of place")
    _check_chains(header, starts, parents)
    lines_data = None
    if keep_bytes and n:
        base = columns["offsets"][0]
        lines_data = os.pread(fd, header.end - base, base)
        if len(lines_data) != header.end - base or not lines_data.endswith(b"\n"):
            raise NotUsable("file shorter than indexed")
    return IndexedRows(
        RowColumns(
            count=n,
            types=types,
            heads=heads,
            line_runs=[tuple(run) for run in header.line_runs],  # type: ignore[misc]
            parents=parents,
            parent_rows=parent_rows,
            targets={p: (target, label) for p, target, label in header.targets},
            lengths=dict(header.lengths),
            source=source,
            lines_data=lines_data,
            **columns,
        )
    )


def _lazy_allowed(header: IndexHeader) -> bool:
    """Can the rows be walked by row numbers and made on demand (see index_rows)? Every id a
    distinct non-empty string, none read again from its line, no second header among them."""
    return (
        header.unique
        and header.complete
        and not header.rescanned
        and len(header.parent_rows) == len(header.parents)
        and "session" not in header.types
    )


def _result_of(
    header: IndexHeader, rows: IndexedRows, fd: int, source: Any, keep_bytes: bool, lazy: bool
) -> ScanResult:
    """The scan result the index holds: its rows (``lazy``, where the index allows), else every entry."""
    problems = [LineProblem(*fields) for fields in header.problems]
    result = ScanResult(problems=problems, lines=header.lines, end=header.end, size=header.end - header.start)
    if lazy and _lazy_allowed(header):
        result.rows = rows
        result.index = IdIndex(chain_starts=rows.columns.chain_starts, complete=True)
        return result
    every_entry(result, rows, header, fd, source, keep_bytes)
    return result


def every_entry(
    result: ScanResult,
    rows: IndexedRows,
    header: IndexHeader | None = None,
    fd: int = -1,
    source: Any = None,
    keep_bytes: bool = False,
) -> None:
    """Put every entry of ``rows`` into ``result`` (entries and the id index), and the lines the
    index did not hold (``header.rescanned``) read again from the file."""
    entries, ids = rows.every_entry()
    n = len(entries)
    for position in sorted(header.rescanned) if header is not None else ():
        entry = entries[position] = _rescanned(fd, entries[position], source, keep_bytes)
        ids[position] = entry.id
        # a chain goes on through an entry read again (see IdIndex.chain_starts): the entry names
        # the one before it, and the one after it names it, by the very same string, as the scan
        # makes them
        before = entries[position - 1].id if position else None
        if type(before) is str and entry.parent_id == before:
            entry.parent_id = before
        after = position + 1
        if after < n and type(entry.id) is str and entries[after].parent_id == entry.id:
            entries[after].parent_id = entry.id
    complete = header.complete if header is not None else True
    index = IdIndex(chain_starts=rows.columns.chain_starts, complete=complete)
    if complete:
        index.by_id = dict(zip(ids, entries, strict=True))
    if header is not None and header.rescanned:  # their type code is a stand-in's
        index.non_messages = [entry for entry in entries if entry.type != "message"]
    else:
        index.non_messages = list(
            compress(entries, rows.columns.type_codes.translate(_non_message_table(rows.columns.types)))
        )
    result.entries = entries
    result.index = index
    result.rows = None


def _non_message_table(types: list[str]) -> bytes:
    """bytes.translate table: type code -> 1 for a type that is not "message", else 0."""
    return bytes(0 if i < len(types) and types[i] == "message" else 1 for i in range(256))


def _increasing(numbers: Sequence[int]) -> bool:
    """Each number greater than the one before (for short lists: a table of the exceptions)."""
    return all(map(lt, numbers, islice(numbers, 1, None)))


# the byte of a little- or big-endian 64-bit integer that holds its sign
_SIGN_BYTE = 7 if sys.byteorder == "little" else 0
_NOT_NEGATIVE = bytes(range(0x80))


def _none_negative(numbers: array[int]) -> bool:
    """No 64-bit integer of ``numbers`` is negative: their sign bytes are looked at as bytes, in C
    (a look at each as a Python integer would cost a reopen more than it reads)."""
    signs = memoryview(numbers).cast("B")[_SIGN_BYTE :: numbers.itemsize]
    return not bytes(signs).translate(None, _NOT_NEGATIVE)


def _check_places(header: IndexHeader, columns: dict[str, Any]) -> None:
    """What a lookup takes from the index without reading the file, within the file and in order:
    the rows' lines between ``start`` and ``end`` (the first before the last, none at a negative
    offset: a read there fails), their line numbers among the lines indexed, the lines skipped
    among them. What the columns say each line holds, and where, is checked when its body is read
    (Entry.value): one look at every row's offset would cost a reopen of a long session more than
    all it reads."""
    n, start, end = header.count, header.start, header.end
    offsets = columns["offsets"]
    if n and not (
        start <= offsets[0] <= offsets[-1] < end
        and (n == 1 or offsets[0] < offsets[-1])
        and _none_negative(offsets)
    ):
        raise NotUsable("offsets out of place")
    if not max(n, 0) <= header.lines <= end - start:  # (a line is at least its "\n")
        raise NotUsable("fewer lines than rows, or more than bytes")
    last_line = header.first_line + header.lines
    runs = header.line_runs
    for (position, line), (next_position, next_line) in zip(runs, [*runs[1:], (n, last_line)], strict=False):
        if line < header.first_line or line + next_position - position > next_line:
            raise NotUsable("line runs out of place")
    _check_sparse(header, offsets, last_line)


def _check_sparse(header: IndexHeader, offsets: array[int], last_line: int) -> None:
    """:func:`_check_places` of the tables of the rows and lines that are exceptions."""
    n, end = header.count, header.end
    for position, length in header.lengths:
        if not (0 <= position < n and length >= 0 and offsets[position] + length < end):
            raise NotUsable("a line's length out of place")
    runs = header.line_runs
    run_lines = [line for _, line in runs]
    previous = header.first_line - 1
    for line, column, *_ in header.problems:
        if not previous < line < last_line or column < 0:
            raise NotUsable("a skipped line out of place")
        previous = line
        # not a row's line: the run that starts at or before it ends before it
        run = bisect_right(run_lines, line) - 1
        if run >= 0 and line < runs[run][1] + (runs[run + 1][0] if run + 1 < len(runs) else n) - runs[run][0]:
            raise NotUsable("a skipped line that is a row's")


def _check_chains(header: IndexHeader, starts: list[int], parents: dict[int, Any]) -> None:
    """A row whose parent is not the row before starts a chain (walks to the root rely on it), the
    chains in order; the rows of the tables in the rows."""
    n = header.count
    if not _increasing(starts) or not set(parents).issubset(starts):
        raise NotUsable("chain starts out of order, or a row with its own parent in none")
    if any(not 0 <= position < n for position in (*(t[0] for t in header.targets), *header.rescanned)):
        raise NotUsable("a row out of place")


def _check_runs(runs: list[tuple[int, int]], count: int) -> None:
    """Line runs that cover ``count`` entries, each after the one before."""
    previous = -1
    for position, _line in runs:
        if position <= previous or position >= count:
            raise NotUsable("line runs do not follow each other")
        previous = position
    if count and (not runs or runs[0][0] != 0):
        raise NotUsable("line runs of another length")
    if not count and runs:
        raise NotUsable("line runs of another length")


def _rescanned(fd: int, stand_in: Entry, source: Any, keep_bytes: bool) -> Entry:
    """The entry of a line whose envelope the columns do not hold, read again from the file."""
    data = line_at(fd, stand_in.offset, 0)
    found = entry_from_line(stand_in.line, stand_in.offset, data, len(data), source, keep_bytes)
    if type(found) is not Entry:
        raise NotUsable("a line indexed as an entry is not one")
    return found


# ---------------------------------------------------------------------- writing


class _FileStamp(NamedTuple):
    """The file as it was once its lines were scanned."""

    st: os.stat_result
    racy: bool  # see IndexHeader.racy
    generation: int


def _write_index(
    directory: str,
    path: str,
    stamp: _FileStamp,
    start: int,
    first_line: int,
    result: ScanResult,
    crcs: tuple[int, int],
) -> bool:
    """Write the index of ``result`` (the file as ``stamp`` describes it, ``crcs`` its edges: see
    cache_dir.edges); False when it cannot be written or the result does not fit the format (the
    file is just scanned next time). The columns are written as they are made, one at a time."""
    import tempfile  # here: a reopen reads the index and never writes one (see rewrites.py)

    temporary = None
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        out, temporary = tempfile.mkstemp(
            prefix=cache_dir.TEMPORARY_PREFIX, suffix=cache_dir.INDEX_SUFFIX, dir=directory
        )
        try:
            write_all(out, bytes(_PREFIX.size))  # the prefix, once the lengths and the CRC are known
            sections = _SectionWriter(out)
            header = _encoded(result, stamp, start, first_line, crcs, sections)
            encoded_header = _encode_header(header)
            write_all(out, encoded_header)
            crc = zlib.crc32(encoded_header, sections.crc)
            prefix = _PREFIX.pack(
                MAGIC, FORMAT_VERSION, cache_dir.code_stamp(), len(encoded_header), sections.length, crc
            )
            os.pwrite(out, prefix, 0)
        finally:
            os.close(out)
        os.replace(temporary, path)
        temporary = None
        cache_dir.prune(directory)
        return True
    except Exception:  # noqa: BLE001 - best effort: a cache that cannot be written (read-only, full, odd values) is no error
        return False
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


class _SectionWriter:
    """Writes the payload's sections one after the other, keeping their lengths and the CRC."""

    def __init__(self, out: int) -> None:
        self.out = out
        self.crc = 0
        self.length = 0
        self.lengths: list[int] = []

    def add(self, chunks: Iterable[bytes | memoryview]) -> None:
        length = 0
        for chunk in chunks:
            write_all(self.out, chunk)
            self.crc = zlib.crc32(chunk, self.crc)
            length += len(chunk)
        self.lengths.append(length)
        self.length += length


class _ColumnMaker:
    """Makes the columns of the index of ``entries``: a value a column cannot hold gets a stand-in
    there, and its position goes to ``rescanned`` (read again from its line)."""

    __slots__ = ("chain_starts", "entries", "rescanned")

    def __init__(self, entries: list[Entry], chain_starts: list[int], rescanned: set[int]) -> None:
        self.entries = entries
        self.chain_starts = chain_starts
        self.rescanned = rescanned

    def column(self, name: str, allowed: frozenset[type], stand_in: Any) -> list[Any]:
        values = list(map(attrgetter(name), self.entries))
        rescanned = self.rescanned
        for position in self.chain_starts:
            if type(values[position]) not in allowed:
                values[position] = stand_in
                rescanned.add(position)
        return values

    def text(self, values: list[Any], ends: list[Sequence[int]] | None = None) -> Iterator[bytes]:
        """The column as text joined by NUL, in pieces (a value holding a NUL gets a stand-in);
        where each value ends in it goes to ``ends``, a piece at a time (see index_rows.ends_of)."""
        rescanned = self.rescanned
        written = -1  # bytes of the text so far, but for the NUL before the next value
        for at in range(0, len(self.entries), _TEXT_PIECE):
            piece = values[at : at + _TEXT_PIECE]
            joined = "\x00".join(piece)
            if joined.count("\x00") > len(piece) - 1:  # a NUL inside a value
                for i, value in enumerate(piece):
                    if "\x00" in value:
                        values[at + i] = ""
                        rescanned.add(at + i)
                piece = values[at : at + _TEXT_PIECE]
                joined = "\x00".join(piece)
            if ends is not None:
                ends.append(ends_of(piece, joined.isascii(), written))
                written = ends[-1][-1]
            yield (("\x00" if at else "") + joined).encode("utf-8", "surrogatepass")


def _ends_section(pieces: list[Sequence[int]]) -> Iterator[memoryview]:
    """The ends of a text column as 32-bit integers, a piece at a time (past 4 GB of text:
    OverflowError, and no index is written)."""
    while pieces:
        piece = pieces.pop(0)
        yield memoryview(piece if isinstance(piece, array) else array("I", piece)).cast("B")


def _encoded(
    result: ScanResult,
    stamp: _FileStamp,
    start: int,
    first_line: int,
    crcs: tuple[int, int],
    sections: _SectionWriter,
) -> IndexHeader:
    """The index of ``result``'s complete lines. Each column is made once and encoded before the
    next is made (a list of a million entries' ids is 8 MB, plus its strings). An entry with a value
    a column cannot hold has a stand-in there, and is read again from its line when the index is.

    The scan makes every entry that does not start a chain (``IdIndex.chain_starts``) in its fast
    path: a string id and timestamp, the id before it as parentId, a type and role msgspec checked
    as pi's (or none), no value held. So only the chains' first entries are looked at one by one;
    a ``targetId`` or ``label`` may be any JSON value on any line, and text may hold a NUL (the
    text columns' separator)."""
    end = result.end
    entries = result.entries
    n = len(entries)
    if n and entries[-1].offset >= end:  # the final line without newline
        n -= 1
        entries = entries[:n]
    chain_starts = result.index.chain_starts[: bisect_left(result.index.chain_starts, n)]
    if n and (not chain_starts or chain_starts[0] != 0):  # not a scan's: look at every entry
        chain_starts = list(range(n))
    rescanned: set[int] = set()
    maker = _ColumnMaker(entries, chain_starts, rescanned)
    column, text = maker.column, maker.text
    ids = column("id", _PLAIN_TEXT, "")
    for _ in text(ids):  # stand-ins first: a parentId equal to the id before is not kept
        pass
    parents = column("parent_id", PLAIN_OPTIONAL, None)
    ends: list[Sequence[int]] = []
    sections.add(text(ids, ends))
    sections.add(_ends_section(ends))
    explicit_parents = [
        (p, parents[p]) for p in compress(range(n), map(is_not, parents, [ABSENT, *ids[:-1]]))
    ]
    by_id = result.index.by_id
    unique = (
        result.index.complete
        and "" not in by_id
        and (len(by_id) == len(result.entries) or len(set(ids)) == n)
    )
    del ids, parents
    for i, (position, parent) in enumerate(explicit_parents):
        if not _encodable(parent):  # (the header is msgpack: no lone surrogates)
            explicit_parents[i] = (position, None)
            rescanned.add(position)
    parent_rows = _parent_rows(entries, explicit_parents, by_id) if unique else []
    sections.add(text(column("timestamp", _PLAIN_TEXT, ""), ends))
    sections.add(_ends_section(ends))
    type_table, codes = _coded(column("type", _PLAIN_TYPES, "message"), rescanned, "message", {})
    sections.add([codes])
    heads = list(map(attrgetter("message"), entries))
    roles = list(map(getattr, heads, repeat("role"), repeat(_NO_HEAD)))
    for position in chain_starts:
        if type(roles[position]) not in _PLAIN_ROLES or type(heads[position]) not in _PLAIN_HEADS:
            roles[position] = _NO_HEAD
            rescanned.add(position)
    del heads
    role_table, codes = _coded(roles, rescanned, _NO_HEAD, {_NO_HEAD: _NO_MESSAGE, ABSENT: _NO_ROLE})
    sections.add([codes])
    del roles
    sections.add([array("q", map(attrgetter("offset"), entries)).tobytes()])
    sections.add([array("q", chain_starts).tobytes()])
    column("_body", _PLAIN_BODIES, ABSENT)  # a value held: read again
    targets = list(map(attrgetter("targetId"), entries))
    labels = list(map(attrgetter("label"), entries))
    with_label = set(compress(range(n), map(is_not, targets, repeat(ABSENT))))
    with_label.update(compress(range(n), map(is_not, labels, repeat(ABSENT))))
    explicit_targets = []
    for position in sorted(with_label):
        target, label = targets[position], labels[position]
        plain = type(target) in PLAIN_OPTIONAL and type(label) in PLAIN_OPTIONAL
        if not (plain and _encodable(target) and _encodable(label)):
            target = label = ABSENT
            rescanned.add(position)
        explicit_targets.append((position, target, label))
    del targets, labels
    line_numbers = list(map(attrgetter("line"), entries))
    line_runs = [(0, line_numbers[0])] if n else []
    steps = map(sub, line_numbers[1:], line_numbers[:-1])
    line_runs.extend((p, line_numbers[p]) for p in compress(range(1, n), map(ne, steps, repeat(1))))
    del line_numbers
    head_crc, tail_crc = crcs
    header = IndexHeader(
        byteorder=sys.byteorder,
        dev=stamp.st.st_dev,
        ino=stamp.st.st_ino,
        size=stamp.st.st_size,
        mtime_ns=stamp.st.st_mtime_ns,
        ctime_ns=stamp.st.st_ctime_ns,
        racy=stamp.racy,
        generation=stamp.generation,
        start=start,
        first_line=first_line,
        end=end,
        lines=result.lines - (1 if result.tail else 0),
        head_crc=head_crc,
        tail_crc=tail_crc,
        count=n,
        types=type_table,
        roles=role_table,
        line_runs=line_runs,
        parents=explicit_parents,
        targets=explicit_targets,
        lengths=[(p, entries[p].length) for p in compress(range(n), map(attrgetter("length"), entries))],
        rescanned=sorted(rescanned),
        problems=[
            (p.line, p.column, p.kind, p.message, p.offset, p.length)
            for p in result.problems
            if p.offset < end
        ],
        complete=result.index.complete,
        unique=unique,
        parent_rows=parent_rows,
        sections=sections.lengths,
    )
    return header


def _parent_rows(entries: list[Entry], parents: list[tuple[int, Any]], by_id: dict[str, Entry]) -> list[int]:
    """The position in ``entries`` of each parent (-1: none there), found by id as a walk to the
    root finds it."""
    positions = Positions(entries)
    rows = []
    for _position, parent in parents:
        found = by_id.get(parent) if type(parent) is str else None
        rows.append(-1 if found is None else positions.of(found, len(entries)))
    return rows


_PLAIN_TEXT: frozenset[type] = frozenset({str})
_PLAIN_BODIES: frozenset[type] = frozenset({type(ABSENT), LineBytes})


class _NoHead:
    """The role of an entry without a message head (told from a head whose role is null)."""


_NO_HEAD = _NoHead()
_PLAIN_ROLES: frozenset[type] = frozenset({str, type(ABSENT), _NoHead})
_PLAIN_TYPES: frozenset[type] = frozenset({str, type(ABSENT)})
_PLAIN_HEADS: frozenset[type] = frozenset({MessageHead, type(None)})


def _encodable(value: Any) -> bool:
    """Can the header hold this value (text without lone surrogates)?"""
    if type(value) is not str or value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _coded(
    values: list[Any], rescanned: set[int], stand_in: Any, reserved: dict[Any, int]
) -> tuple[list[Any], bytes]:
    """(the table, one byte per value: ``reserved`` codes, then the table's from len(reserved) on).
    Values beyond the table's room get the stand-in's code, and their entries are read again."""
    room = MAX_CODES - len(reserved) - 1  # (one code kept for the stand-in)
    table = [value for value in _table(values) if value not in reserved]
    if len(table) > room:
        kept = set(table[:room])
        if stand_in not in reserved:
            kept.add(stand_in)
        for position, value in enumerate(values):
            if value not in kept and value not in reserved:
                values[position] = stand_in
                rescanned.add(position)
        table = [value for value in _table(values) if value not in reserved]
    code = dict(reserved)
    code.update((value, i) for i, value in enumerate(table, len(reserved)))
    return table, bytes(map(code.__getitem__, values))


def _table(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _joined_text(texts: list[Any]) -> bytes:
    return "\x00".join(texts).encode("utf-8", "surrogatepass")
