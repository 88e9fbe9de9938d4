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

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import StaleFileError
from .entry import Entry
from .jsjson import JsonSyntaxError, parse, parse_bytes
from .jstext import is_js_blank
from .jsvalue import ABSENT

CHUNK_SIZE = 8 * 1024 * 1024
PROGRESS_STEP = 16 * 1024 * 1024  # report scan progress every this many bytes
# Lines up to this size keep their decoded value in memory; longer ones are re-read on demand.
HOLD_LIMIT = 512
SLOW_HOLD_LIMIT = 4 * 1024 * 1024
_ASCII_BLANK = b" \t\r\x0b\x0c"
_MAX_SAFE = 2**53


class _MessageHead(msgspec.Struct):
    role: Any = msgspec.UNSET
    provider: Any = msgspec.UNSET
    model: Any = msgspec.UNSET


class _Envelope(msgspec.Struct):
    type: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    parentId: Any = msgspec.UNSET  # noqa: N815 - the JSON key
    timestamp: Any = msgspec.UNSET
    message: _MessageHead | None | msgspec.UnsetType = msgspec.UNSET
    targetId: Any = msgspec.UNSET  # noqa: N815 - labels are indexed at load time
    label: Any = msgspec.UNSET


_decode_envelope = msgspec.json.Decoder(_Envelope).decode


def _js(value: Any) -> Any:
    """msgspec's decoding of an envelope field, as JSON.parse would give it."""
    if value is msgspec.UNSET:
        return ABSENT
    if type(value) is int and not -_MAX_SAFE <= value <= _MAX_SAFE:
        return float(value)
    return value


@dataclass(slots=True)
class LineProblem:
    """A physical line that is not an entry, or another problem found while reading."""

    line: int  # 0-based physical line number
    column: int  # 0-based character column (in the line's decoded text)
    kind: str  # "malformed" | "falsy" | "non_object" | "no_newline" | "bom"
    message: str
    offset: int = 0  # byte offset of the line in the file
    length: int = 0  # byte length of the line (without "\n")


@dataclass(slots=True)
class RawLine:
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
        text = err.msg if err is not None else "invalid JSON"
        return LineProblem(raw.line, column, "malformed", f"invalid JSON: {text}", raw.offset, len(raw.data))
    if raw.kind == "falsy":
        return LineProblem(
            raw.line, 0, "falsy", "line is a falsy JSON value and is ignored", raw.offset, len(raw.data)
        )
    return LineProblem(
        raw.line, 0, "non_object", "line is not a JSON object and is ignored", raw.offset, len(raw.data)
    )


@dataclass
class ScanResult:
    """What a lazy scan of (part of) a file found."""

    header: Any = ABSENT  # the first kept value (the header if valid)
    header_line: int = -1
    entries: list[Entry] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    lines: int = 0  # physical lines seen (a final unterminated line counts)
    end: int = 0  # byte offset just after the last complete ("\n"-terminated) line
    tail: bytes = b""  # an unterminated final line (not yet an entry when scanning incrementally)
    size: int = 0  # bytes read in total


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
            raw = classify_line(line_no, offset, data)
            if raw.kind == "kept":
                result.header = raw.value
                result.header_line = line_no
                need_header = False
            elif raw.kind != "blank":
                result.problems.append(problem_for(raw))
            continue
        entry = _entry_from_line(line_no, offset, data, length, source)
        if isinstance(entry, Entry):
            result.entries.append(entry)
        elif entry is not None:
            result.problems.append(entry)
    return result


def _scan_entry_lines(
    fd: int,
    source: Any,
    start: int,
    first_line: int,
    include_tail: bool,
    end: int | None,
    on_progress: Callable[[int, int], Any] | None,
    keep_bytes: bool = False,
) -> ScanResult:
    """The hot loop of opening a file: every line after the header.

    Reads into one reusable buffer (``preadv``; no per-chunk or per-line copies: a GB of base64 images
    is only ever touched by the kernel copy and by msgspec's scan) and decodes each line's envelope
    from a memoryview slice; only lines the envelope decoder rejects take the exact slow path. The
    buffer grows to the longest line. Plain reads rather than mmap: a file truncated by another
    process while we read must not kill us with SIGBUS.
    """
    result = ScanResult(end=start)
    entries = result.entries
    problems = result.problems
    total = end if end is not None else os.fstat(fd).st_size
    decode = _decode_envelope
    head_type = _MessageHead
    unset = msgspec.UNSET
    decode_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    new_lazy = Entry.lazy
    buf = bytearray(CHUNK_SIZE)
    view = memoryview(buf)
    base = start  # file offset of buf[0]
    fill = 0  # bytes of buf holding file data
    line_no = first_line
    eof = False
    while not eof:
        if fill == len(buf):  # a line longer than the buffer: grow it
            view.release()
            buf.extend(bytes(len(buf)))
            view = memoryview(buf)
        want = len(buf) - fill
        if end is not None:
            want = min(want, end - base - fill)
        got = os.preadv(fd, [view[fill : fill + want]], base + fill) if want > 0 else 0
        if got == 0:
            eof = True
            break
        fill += got
        find = buf.find
        i = 0
        while True:
            j = find(b"\n", i, fill)
            if j < 0:
                break
            length = j - i
            offset = base + i
            try:
                env = decode(view[i:j])
            except decode_errors:
                found = _entry_from_line(line_no, offset, bytes(view[i:j]), length, source)
                if type(found) is Entry:
                    entries.append(found)
                elif found is not None:
                    problems.append(found)  # type: ignore[arg-type]
            else:
                etype = env.type
                role: Any = ABSENT
                model_ref = None
                if etype == "message":
                    msg = env.message
                    if type(msg) is head_type:
                        role = msg.role
                        if role is unset:
                            role = ABSENT
                        elif role == "assistant":
                            model_ref = (_js(msg.provider), _js(msg.model))
                elif etype is unset:
                    etype = ABSENT
                eid = env.id
                if type(eid) is not str:
                    eid = _js(eid)
                parent = env.parentId
                if type(parent) is not str:
                    parent = _js(parent)
                ts = env.timestamp
                if type(ts) is not str:
                    ts = _js(ts)
                entry = new_lazy(etype, eid, parent, ts, role, model_ref, source, line_no, offset, length)
                if etype == "label":
                    entry.aux = (_js(env.targetId), _js(env.label))
                if keep_bytes:
                    entry._raw = bytes(view[i:j])
                entries.append(entry)
            line_no += 1
            i = j + 1
        if i:
            rest = fill - i
            view[:rest] = view[i:fill]
            base += i
            fill = rest
        if on_progress is not None:
            on_progress(base, total)
    result.end = base
    result.lines = line_no - first_line
    tail = bytes(view[:fill])
    view.release()
    if tail:
        result.tail = tail
        if include_tail:
            found = _entry_from_line(line_no, base, tail, len(tail), source)
            if type(found) is Entry:
                entries.append(found)
            elif found is not None:
                problems.append(found)  # type: ignore[arg-type]
            result.lines += 1
    return result


def _entry_from_line(
    line_no: int, offset: int, data: bytes, length: int, source: Any
) -> Entry | LineProblem | None:
    """The lazy entry of one line: its envelope decoded (bodies skipped), or why it is not an entry."""
    try:
        env = _decode_envelope(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        env = None
    if env is not None:
        etype = env.type
        if etype is msgspec.UNSET:
            etype = ABSENT
        role: Any = ABSENT
        model_ref = None
        if etype == "message":
            msg = env.message
            if type(msg) is _MessageHead:
                role = _js(msg.role)
                if role == "assistant":
                    model_ref = (_js(msg.provider), _js(msg.model))
        eid = env.id
        if type(eid) is not str:
            eid = _js(eid)
        parent = env.parentId
        if type(parent) is not str:
            parent = _js(parent)
        ts = env.timestamp
        if type(ts) is not str:
            ts = _js(ts)
        entry = Entry(
            ABSENT,
            envelope=(etype, eid, parent, ts, role, model_ref),
            source=source,
            line=line_no,
            offset=offset,
            length=length,
        )
        if etype == "label":
            entry.aux = (_js(env.targetId), _js(env.label))
        return entry
    raw = classify_line(line_no, offset, data)
    if raw.kind == "blank":
        return None
    if raw.kind != "kept" or not isinstance(raw.value, dict):
        return problem_for(raw)
    # Valid JSON that msgspec would not take (lone surrogates, huge numbers, deep nesting, bad UTF-8):
    # decoding it again would take the slow exact parser, so hold it unless it is really large.
    entry = Entry(raw.value, source=source, line=line_no, offset=offset, length=length)
    if length > SLOW_HOLD_LIMIT:
        entry._value = ABSENT  # keep memory bounded: re-read on demand
    return entry


class FileLineSource:
    """Re-reads lines of one open file by offset (the fd stays on the inode we scanned)."""

    def __init__(self, path: str, fd: int | None = None) -> None:
        self.path = path
        self.fd = fd if fd is not None else os.open(path, os.O_RDONLY)

    def read_line(self, offset: int, length: int) -> Any:
        data = os.pread(self.fd, length, offset)
        if len(data) != length:
            raise StaleFileError(f"session file changed underneath: {self.path}")
        try:
            return parse_bytes(data)
        except JsonSyntaxError as err:
            raise StaleFileError(f"session file changed underneath: {self.path}") from err

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            finally:
                self.fd = -1


def parse_text_line(text: str) -> Any:
    """Parse a decoded line (exported for tools that already hold text)."""
    return parse(text)
