"""Reading session files line by line, the way the reference loader sees them, without decoding bodies.

The reference (``loadEntriesFromFile``) decodes the file as UTF-8, splits on ``"\\n"`` only, skips
JS-blank lines, lines ``JSON.parse`` rejects and falsy values, and keeps the rest. We do the same on
bytes (a ``"\\n"`` byte never sits inside a multi-byte sequence, so splitting bytes first and decoding
each line with replacement gives the same text), in bounded chunks, and keep for every kept line
only its envelope and where it is; large bodies are decoded again on demand.

Every line that is not kept is reported as a :class:`LineProblem` with its line number and column,
for diagnostics.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import StaleFileError
from .entry import (
    ENVELOPE_DECODER,
    OBSERVED_ENVELOPE_DECODER,
    SHARED_HEADS,
    Entry,
    LineBytes,
    decode_open_envelope,
)
from .jsjson import JsonSyntaxError, parse, parse_bytes
from .jstext import as_displayed, is_js_blank
from .jsvalue import ABSENT, as_js_number

if TYPE_CHECKING:
    from types import ModuleType

    from .glued import Piece

# Small enough that a chunk is still in the CPU cache when msgspec reads it after the kernel's copy
# (larger chunks open a large session slower).
CHUNK_SIZE = 1024 * 1024
# A buffer grown for a long line is kept up to this many chunks: sessions with screenshots hold many
# lines of about a MB, and shrinking after each one made a fresh buffer whose first touch is a page
# fault per 4 KB.
KEEP_GROWN_CHUNKS = 8
PROGRESS_STEP = 16 * 1024 * 1024  # report scan progress every this many bytes
# Lines up to this size keep their decoded value in memory; longer ones are re-read on demand.
HOLD_LIMIT = 512
# The length of a line shorter than this is not kept with its entry (0): reading it again takes the
# bytes up to its newline (see line_at), one read as a rule, and the entry holds one int less.
SHORT_LINE = 64 * 1024
SLOW_HOLD_LIMIT = 4 * 1024 * 1024
_ASCII_BLANK = b" \t\r\x0b\x0c"


_decode_envelope = ENVELOPE_DECODER.decode
_decode_observed_envelope = OBSERVED_ENVELOPE_DECODER.decode
_NO_ID = object()  # "no entry just before" (no parentId is this object)

# What a scan hands each entry it decodes in its hot loop, with the bytes of the entry's line (see
# observing_lines). A context variable rather than an argument: scans are reached through the
# session's loader and its index, which have no business knowing who looks at the lines.
LineObserver = Callable[[Entry, memoryview], Any]
_line_observer: ContextVar[LineObserver | None] = ContextVar("line_observer", default=None)


@contextlib.contextmanager
def observing_lines(observer: LineObserver) -> Iterator[None]:
    """Within the block, every scan of entries (``scan_entries`` after the header) of this context
    calls ``observer(entry, line)`` for each entry decoded in its hot loop, once the entry is
    placed: a caller that needs more of every line than its envelope reads it while it is in
    memory, instead of reading the file again. The entry's head is then the one decoded, an
    :class:`~.entry.ObservedHead` (with the fields a message's preview shows). ``line`` is a view
    of the scan's buffer, valid only during the call: keep nothing that refers to it (msgspec.Raw
    included, the head's content among them). Entries whose line
    takes the slow path (an envelope the decoder rejects, a last line without its newline) are not
    observed."""
    token = _line_observer.set(observer)
    try:
        yield
    finally:
        _line_observer.reset(token)


class LineProblem(msgspec.Struct):
    """A physical line that is not an entry, or another problem found while reading."""

    line: int  # 0-based physical line number
    column: int  # 0-based character column (in the line's decoded text)
    # "malformed" | "glued" (malformed: lines glued together) | "falsy" | "non_object" | "no_newline"
    # | "bom"
    kind: str
    message: str
    offset: int = 0  # byte offset of the line in the file
    length: int = 0  # byte length of the line (without "\n")

    @property
    def skipped(self) -> bool:
        """Is this a line pi skips? (A missing final newline or a byte order mark loses nothing.)"""
        return self.kind in SKIPPED_KINDS

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "kind": self.kind, "message": self.message}


SKIPPED_KINDS = frozenset({"malformed", "glued", "falsy", "non_object"})


class RawLine(msgspec.Struct):
    """A physical line as the reference's loader classifies it."""

    line: int
    offset: int
    data: bytes  # without the "\n"
    kind: str  # "kept" | "blank" | "malformed" | "falsy"
    value: Any = ABSENT
    error: JsonSyntaxError | None = None


def iter_physical_lines(
    fd: int, start: int = 0, first_line: int = 0, *, chunk_size: int = CHUNK_SIZE, end: int | None = None
) -> Iterator[tuple[int, int, bytes, bool]]:
    """Yield ``(line_number, offset, bytes, terminated)`` for every physical line from ``start``.

    ``terminated`` is False only for a final line without ``"\\n"`` (yielded only if non-empty).
    Reads with ``pread`` in bounded chunks; a line longer than a chunk is assembled once.
    """
    pos = start
    line_no = first_line
    parts: list[bytes] = []
    line_start = start
    while end is None or pos < end:
        want = chunk_size if end is None else min(chunk_size, end - pos)
        chunk = os.pread(fd, want, pos)
        if not chunk:
            break
        chunk_pos = pos
        pos += len(chunk)
        i = 0
        while True:
            j = chunk.find(b"\n", i)
            if j < 0:
                if i < len(chunk):
                    parts.append(chunk[i:] if i else chunk)
                break
            if parts:
                parts.append(chunk[i:j])
                data = b"".join(parts)
                parts.clear()
            else:
                data = chunk[i:j]
            yield line_no, line_start, data, True
            line_no += 1
            i = j + 1
            line_start = chunk_pos + i
    if parts:
        data = b"".join(parts)
        if data:
            yield line_no, line_start, data, False


def is_blank_line(data: bytes) -> bool:
    """JS ``!line.trim()`` on the decoded line."""
    stripped = data.strip(_ASCII_BLANK)
    if not stripped:
        return True
    if stripped[0] < 0x80 and stripped[-1] < 0x80:
        return False
    return is_js_blank(data.decode("utf-8", "replace"))


def classify_line(line_no: int, offset: int, data: bytes) -> RawLine:
    """Parse one physical line fully, exactly as the reference's loader would."""
    if is_blank_line(data):
        return RawLine(line_no, offset, data, "blank")
    try:
        value = parse_bytes(data)
    except JsonSyntaxError as err:
        return RawLine(line_no, offset, data, "malformed", error=err)
    if not _truthy_json(value):
        return RawLine(line_no, offset, data, "falsy", value)
    return RawLine(line_no, offset, data, "kept", value)


def _truthy_json(value: Any) -> bool:
    if value is None or value is False or value == "":
        return False
    return not (type(value) in (int, float) and value == 0)


def problem_for(raw: RawLine) -> LineProblem:
    """The diagnostic fact for a line that is not an entry."""
    if raw.kind == "malformed":
        err = raw.error
        column = err.pos if err is not None else 0
        text = as_displayed(err.msg) if err is not None else "invalid JSON"
        pieces = _glued().glued_pieces(raw.data)
        if pieces is not None:  # what a crash leaves: say so, and what pi loses with the line
            return _glued_problem(raw.line, raw.offset, raw.data, pieces)
        return LineProblem(raw.line, column, "malformed", f"invalid JSON: {text}", raw.offset, len(raw.data))
    if raw.kind == "falsy":
        return LineProblem(
            raw.line, 0, "falsy", "line is a falsy JSON value and is ignored", raw.offset, len(raw.data)
        )
    return LineProblem(
        raw.line, 0, "non_object", "line is not a JSON object and is ignored", raw.offset, len(raw.data)
    )


_glued_module: ModuleType | None = None


def _glued() -> ModuleType:
    """The module that splits lines glued together, imported when a line first needs it: reading a
    file with no malformed line (the sidecar's start) does without it. (Once, not per line: an
    import statement costs as much as splitting a line.)"""
    global _glued_module
    if _glued_module is None:
        from . import glued

        _glued_module = glued
    return _glued_module


def _glued_problem(line_no: int, offset: int, data: bytes, pieces: tuple[Piece, ...]) -> LineProblem:
    """The problem of a line that is ``pieces`` glued together: what pi loses with it."""
    glued = _glued()
    lost = glued.lost_ids(pieces)
    message = f"{len(pieces)} lines glued together ({glued.describe(pieces)}): pi skips the whole line"
    if lost:
        message += f", and with it entr{'y' if len(lost) == 1 else 'ies'} {', '.join(lost)}"
    # the column where the second line was glued on
    return LineProblem(line_no, pieces[1].column, "glued", message, offset, len(data))


class IdIndex(msgspec.Struct):
    """What a scan notes for the session's id index while each entry is in hand (a second pass
    over tens of thousands of entries costs more than a dict store per line): entries by id, a
    later line replacing an earlier one with the same id, and the entries that are not messages,
    in file order. ``complete`` is False once some entry's id was not a string: the caller then
    indexes the entries itself."""

    by_id: dict[str, Entry] = msgspec.field(default_factory=dict)
    non_messages: list[Entry] = msgspec.field(default_factory=list)
    complete: bool = True
    # Positions in ``entries`` where a chain begins. Any other entry's parentId is the id of the
    # entry just before it, the very same string object; a listed one may or may not be (listing
    # too many is safe). Walks to the root then go a chain at a time (session.chains).
    chain_starts: list[int] = msgspec.field(default_factory=list)

    def add(self, entry: Entry, position: int) -> None:
        """An entry read outside the scanner's hot loop, at ``position`` in ``entries``."""
        if entry.type != "message":
            self.non_messages.append(entry)
        if type(entry.id) is str:
            self.by_id[entry.id] = entry
        else:
            self.complete = False
        self.chain_starts.append(position)


class ScanResult(msgspec.Struct):
    """What a lazy scan of (part of) a file found."""

    header: Any = ABSENT  # the first kept value (the header if valid)
    header_line: int = -1
    entries: list[Entry] = msgspec.field(default_factory=list)
    problems: list[LineProblem] = msgspec.field(default_factory=list)
    lines: int = 0  # physical lines seen (a final unterminated line counts)
    end: int = 0  # byte offset just after the last complete ("\n"-terminated) line
    tail: bytes = b""  # an unterminated final line (not yet an entry when scanning incrementally)
    size: int = 0  # bytes read in total
    index: IdIndex = msgspec.field(default_factory=IdIndex)  # of ``entries`` (scans after the header only)
    # the entries as the rows of a persistent index, made on demand (session.index_rows), when
    # ``entries`` is empty for that reason (session.scan_index.scan_with_index with ``lazy``)
    rows: Any = None


def scan_entries(
    fd: int,
    source: Any,
    *,
    start: int = 0,
    first_line: int = 0,
    have_header: bool = False,
    include_tail: bool = True,
    end: int | None = None,
    on_progress: Callable[[int, int], Any] | None = None,
    keep_bytes: bool = False,
) -> ScanResult:
    """Scan physical lines from ``start``; kept JSON objects become lazy or held :class:`Entry` objects.

    ``have_header`` tells that the header was already seen (incremental reads after a load): then
    every kept object is an entry and non-objects are skipped (D3). Otherwise the first kept value
    becomes ``header`` and nothing else is decided about it here. With ``include_tail`` False, a final
    line without ``"\\n"`` is left unread (it may still be being written) and returned in ``tail``.
    """
    if have_header:
        return _scan_entry_lines(fd, source, start, first_line, include_tail, end, on_progress, keep_bytes)
    result = ScanResult(end=start)
    result.index.complete = False  # this path leaves the index to the caller
    need_header = not have_header
    total = end if end is not None else os.fstat(fd).st_size
    next_report = start + PROGRESS_STEP if on_progress is not None else -1
    for line_no, offset, data, terminated in iter_physical_lines(fd, start, first_line, end=end):
        if 0 <= next_report <= offset and on_progress is not None:
            on_progress(offset, total)
            next_report = offset + PROGRESS_STEP
        result.lines = line_no + 1 - first_line
        if not terminated:
            result.tail = data
            if not include_tail:
                result.lines -= 1
                break
        else:
            result.end = offset + len(data) + 1
        length = len(data)
        if need_header:
            need_header = not _took_header(result, line_no, offset, data)
            continue
        entry = entry_from_line(line_no, offset, data, length, source)
        if isinstance(entry, Entry):
            result.entries.append(entry)
        elif entry is not None:
            result.problems.append(entry)
    return result


def _took_header(result: ScanResult, line_no: int, offset: int, data: bytes) -> bool:
    """A line read while the header is still to come: True when it is the header (the first kept
    value); any other line but a blank one is a problem."""
    raw = classify_line(line_no, offset, data)
    if raw.kind == "kept":
        result.header = raw.value
        result.header_line = line_no
        return True
    if raw.kind != "blank":
        result.problems.append(problem_for(raw))
    return False


def _scan_entry_lines(  # noqa: C901 - the hot loop over every line of a session
    fd: int,
    source: Any,
    start: int,
    first_line: int,
    include_tail: bool,
    end: int | None,
    on_progress: Callable[[int, int], Any] | None,
    keep_bytes: bool = False,
    index: IdIndex | None = None,
) -> ScanResult:
    """The hot loop of opening a file: every line after the header.

    The file is read with ``preadv`` into one buffer of ``CHUNK_SIZE`` bytes, on the calling thread
    (a reader thread gained nothing on two busy cores: the GIL passes back and forth for every
    chunk). The unfinished line at the end of a read moves to the front of the buffer and the next
    read lands right after it, so every byte is read once; a line longer than the buffer grows it
    for as long as it lasts. Each line's envelope is decoded straight from a memoryview slice of the
    buffer: a GB of base64 images is only ever touched by the kernel's copy and msgspec's scan.
    Lines the envelope decoder rejects take the exact slow path. Plain reads rather than mmap: a
    file truncated by another process while we read must not kill us with SIGBUS. (The loop reads
    its chunks itself: the same loop with a reader object for the chunks scanned slower.)
    ``index`` is the one to fill (a new one by default).
    """
    result = ScanResult(end=start) if index is None else ScanResult(end=start, index=index)
    entries = result.entries
    add_entry = entries.append
    problems = result.problems
    index = result.index  # IdIndex.add(), inlined in the loop below
    by_id = index.by_id
    non_messages = index.non_messages
    chain_starts = index.chain_starts
    observe = _line_observer.get()
    # (an observer has the fields of a tool result's head too: see entry.ObservedHead)
    decode = _decode_envelope if observe is None else _decode_observed_envelope
    decode_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    shared_heads = SHARED_HEADS
    line_no = first_line
    previous_id: Any = _NO_ID  # id of the entry just before, when it came through the hot loop
    total = end if end is not None else os.fstat(fd).st_size
    buf = bytearray(CHUNK_SIZE)
    base = start  # file offset of buf[0]
    kept = 0  # buf[:kept] is the start of a line whose end is not read yet
    while True:
        buf, got = read_chunk(fd, buf, base, kept, end)
        if not got:
            break
        fill = kept + got
        view = memoryview(buf)
        find = buf.find
        i = 0
        j = find(b"\n", kept, fill)  # buf[:kept] holds no newline
        while j >= 0:
            length = j - i
            offset = base + i
            line = view[i:j]
            try:
                entry = decode(line)
            except decode_errors as err:
                found = _undecodable_line(line_no, offset, bytes(line), source, err, keep_bytes)
                if type(found) is Entry:
                    entries.append(found)
                    index.add(found, len(entries) - 1)
                    previous_id = _NO_ID
                elif found is not None:
                    problems.append(found)  # type: ignore[arg-type]
            else:
                # _placed(), inlined: this runs once per line. (_body is at its default: a line
                # cannot set it, see entry.NotFromJson.)
                entry.line = line_no
                entry.offset = offset
                if length >= SHORT_LINE:  # shorter: read again to its newline (see line_at)
                    entry.length = length
                entry._source = source
                if keep_bytes:
                    entry._body = LineBytes(line)
                entry_id = entry.id
                parent_id = entry.parent_id
                if parent_id == previous_id and type(entry_id) is str and type(entry.timestamp) is str:
                    # Most lines answer the line before (previous_id is a string: so is parent_id).
                    # One string object for both ids saves memory, and later lookups of this
                    # parentId match by identity.
                    entry.parent_id = previous_id
                    by_id[entry_id] = entry
                    previous_id = entry_id
                elif type(entry_id) is str and type(parent_id) is str and type(entry.timestamp) is str:
                    chain_starts.append(len(entries))
                    by_id[entry_id] = entry
                    previous_id = entry_id
                else:
                    _normalize_numbers(entry)
                    chain_starts.append(len(entries))
                    if type(entry.id) is str:
                        by_id[entry.id] = entry
                        previous_id = entry.id
                    else:
                        index.complete = False
                        previous_id = _NO_ID
                if entry.type != "message":
                    non_messages.append(entry)
                add_entry(entry)
                if observe is not None:
                    observe(entry, line)
                head = entry.message
                if head is not None:
                    # the head shared by its role's entries: the one decoded (an ObservedHead,
                    # for the observer) is not held per entry
                    entry.message = shared_heads[head.role]
            line_no += 1
            i = j + 1
            j = find(b"\n", i, fill)
        kept = fill - i
        if kept and i:
            view[:kept] = view[i:fill]  # the unfinished line to the front
        view.release()
        base += i
        if len(buf) > KEEP_GROWN_CHUNKS * CHUNK_SIZE and kept <= CHUNK_SIZE // 2:  # after a huge line
            buf = _grown(buf, CHUNK_SIZE, kept)
        if on_progress is not None:
            on_progress(base + kept, total)
    result.lines = line_no - first_line
    result.end = base
    tail = bytes(buf[:kept])
    if tail:
        result.tail = tail
        if include_tail:
            _add_line(result, memoryview(tail), line_no, base, source, keep_bytes)
            result.lines += 1
    return result


def read_chunk(fd: int, buf: bytearray, base: int, kept: int, end: int | None) -> tuple[bytearray, int]:
    """Read the file on from the ``kept`` bytes of an unfinished line at the front of ``buf`` (the
    bytes at ``base``), up to ``end`` if given: the buffer (grown when that line fills it) and how
    many bytes came (0: the end)."""
    if kept == len(buf):  # a line longer than the buffer
        buf = _grown(buf, 2 * len(buf), kept)
    want = len(buf) - kept if end is None else min(len(buf) - kept, end - base - kept)
    if want <= 0:
        return buf, 0
    with memoryview(buf) as whole:
        return buf, os.preadv(fd, [whole[kept : kept + want]], base + kept)


def _grown(buf: bytearray, size: int, keep: int) -> bytearray:
    """A new buffer of ``size`` bytes that starts with ``buf[:keep]``."""
    new = bytearray(size)
    new[:keep] = memoryview(buf)[:keep]
    return new


def _add_line(
    result: ScanResult, line: memoryview, line_no: int, offset: int, source: Any, keep_bytes: bool
) -> None:
    """A line read outside the hot loop (the final line, when it has no newline)."""
    found = entry_from_line(line_no, offset, line, len(line), source, keep_bytes)
    if type(found) is Entry:
        result.entries.append(found)
        result.index.add(found, len(result.entries) - 1)
    elif found is not None:
        result.problems.append(found)  # type: ignore[arg-type]


def entry_from_line(
    line_no: int, offset: int, data: bytes | memoryview, length: int, source: Any, keep_bytes: bool = False
) -> Entry | LineProblem | None:
    """The lazy entry of one line: its envelope decoded (bodies skipped), or why it is not an entry."""
    try:
        entry = _decode_envelope(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as err:
        return _undecodable_line(line_no, offset, bytes(data), source, err, keep_bytes)
    return _placed(entry, line_no, offset, length, source, bytes(data) if keep_bytes else None)


def _placed(entry: Entry, line_no: int, offset: int, length: int, source: Any, raw: bytes | None) -> Entry:
    """Where the entry's line is and how to read it again (its body is not held unless ``raw`` is
    given: ``_body`` keeps its default otherwise, which no line can set, see entry.NotFromJson)."""
    entry.line = line_no
    entry.offset = offset
    entry.length = length
    entry._source = source
    if raw is not None:
        entry._body = LineBytes(raw)
    _normalize_numbers(entry)
    return entry


def _undecodable_line(
    line_no: int,
    offset: int,
    data: bytes,
    source: Any,
    error: BaseException | None = None,
    keep_bytes: bool = False,
) -> Entry | LineProblem | None:
    """A line the envelope decoder rejected: a type or role it does not know, not an entry (why),
    blank, or valid JSON msgspec would not take."""
    if isinstance(error, msgspec.ValidationError):
        try:
            entry = decode_open_envelope(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
        else:
            return _placed(entry, line_no, offset, len(data), source, data if keep_bytes else None)
    pieces = _glued().glued_entries(data)
    if pieces is not None:  # invalid JSON for sure: no need to parse it again to word an error
        return _glued_problem(line_no, offset, data, pieces)
    raw = classify_line(line_no, offset, data)
    if raw.kind == "blank":
        return None
    if raw.kind != "kept" or not isinstance(raw.value, dict):
        return problem_for(raw)
    # Valid JSON that msgspec would not take (lone surrogates, huge numbers, deep nesting, bad UTF-8):
    # decoding it again would take the slow exact parser, so hold it unless it is really large.
    entry = Entry.of(raw.value, source=source, line=line_no, offset=offset, length=len(data))
    if len(data) > SLOW_HOLD_LIMIT:
        entry._body = ABSENT  # keep memory bounded: re-read on demand
    return entry


def _normalize_numbers(entry: Entry) -> None:
    """Envelope numbers as JSON.parse holds them (rare: ids and timestamps are strings in pi's files)."""
    entry.id = as_js_number(entry.id)
    entry.parent_id = as_js_number(entry.parent_id)
    entry.timestamp = as_js_number(entry.timestamp)


def line_at(fd: int, offset: int, length: int) -> bytes:
    """The bytes of the line at ``offset`` (without its newline): ``length`` of them, or, when its
    length was not kept (0), those up to the next newline or the end of the file."""
    if length:
        return os.pread(fd, length, offset)
    size = 16 * 1024  # most lines of a session are shorter: one read
    while True:
        data = os.pread(fd, size, offset)
        end = data.find(b"\n")
        if end >= 0:
            return data[:end]
        if len(data) < size:
            return data
        size *= 4


class FileLineSource:
    """Re-reads lines of one open file by offset (the fd stays on the inode we scanned)."""

    # whether lines another program appends are taken in as lines of this file (else a follower
    # reads the file again whole)
    reads_appended = True

    # no descriptor yet: what ``__del__`` finds when the open in ``__init__`` failed
    fd = -1

    def __init__(self, path: str, fd: int | None = None) -> None:
        self.path = path
        self.fd = fd if fd is not None else os.open(path, os.O_RDONLY)
        # the directory of the file's persistent indexes, when it was opened with one (see
        # session.scan_index): what else is kept of the file (the tree's previews) goes there too
        self.index_dir: str | None = None
        # what to do, once, when a line read is not the entry loaded from it: set where the
        # entries came from the file's index (session.scan_index), which may have lied
        self.when_other_line: Callable[[], None] | None = None

    def read_line(self, offset: int, length: int) -> Any:
        data = line_at(self.fd, offset, length)
        if length and len(data) != length:
            self.found_other_line()
            raise StaleFileError(f"session file changed underneath: {self.path}")
        try:
            return parse_bytes(data)
        except JsonSyntaxError as err:
            self.found_other_line()
            raise StaleFileError(f"session file changed underneath: {self.path}") from err

    def scanning(self) -> contextlib.AbstractContextManager[None]:
        """The block a scan of this file's lines runs in: nothing to set up here, where a line's
        bytes are its value (a source whose values are not its lines' own hides them from the
        scan's observers)."""
        return contextlib.nullcontext()

    def skipped_by_scan(self, problems: list[LineProblem]) -> None:
        """Told before :meth:`conform_scanned` the lines a scan of this file found no entry on
        (``problems``): nothing to do here, where no such line changes what an entry is."""

    def conform_scanned(self, entries: list[Entry]) -> None:
        """Make ``entries``, as a scan of this file's lines made them, say what their values read
        through :meth:`read_line` say (nothing to do here: those values are the lines' own)."""

    def found_other_line(self) -> None:
        """A line read is not the entry loaded from it: the file changed underneath, or the index
        the entries came from lied (see ``when_other_line``)."""
        told, self.when_other_line = self.when_other_line, None
        if told is not None:
            told()

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            finally:
                self.fd = -1

    def __del__(self) -> None:
        # a manager nobody closed must not keep its file open: a process may open thousands of
        # sessions (listing, searching), and the default limit is often 1,024 descriptors
        with contextlib.suppress(OSError):
            self.close()


def parse_text_line(text: str) -> Any:
    """Parse a decoded line (exported for tools that already hold text)."""
    return parse(text)
