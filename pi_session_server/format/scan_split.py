"""Opening a large session on two cores: a forked helper scans the back part of the file.

Every line of a session must be parsed (pi drops the lines ``JSON.parse`` rejects, so the tree
depends on all of them), and msgspec, the fastest JSON validator Python has, holds the GIL: a
thread cannot share that work, a second process can. For a file of at least ``SPLIT_MIN_BYTES``
the loader forks before it reads anything (the process is then as small as it will be, so the fork
copies few page tables and the two processes fault few shared pages). The child scans the back part
with the same scanner, in batches, and writes each batch's entries to an in-memory file as msgpack:
one map per entry holding only the fields its line set, which msgspec decodes straight into
:class:`Entry` objects. The parent scans the front part meanwhile, then takes the rows: a row costs
it about 1.7 us (decoding 0.8, its line number, its source and the id index the rest) where
scanning its line costs 6 us, which is the whole gain (2026-12-01: a 105 MB session opens in 0.16
s instead of 0.23 s, 2.15 GB of text in 3.4 s instead of 5.0 s).

Whatever goes wrong on the helper's side (no fork, the child dies or sends something unexpected)
the parent scans the back part itself: the result is the same, only slower. Entries the fast
decoder did not make (held values, entry types and roles the typed records do not know) are read
again by the parent from their line.

Only on Linux, with two usable cores and unless ``PI_SESSION_SCAN_HELPER=0``. The child runs only
code that is already imported and takes no locks, so forking from a thread (the sidecar opens big
files on its thread pool) is safe; it leaves with ``os._exit``, running no handler of the parent's.
"""

from __future__ import annotations

import contextlib
import logging
import math
import mmap
import os
import select
import signal
import struct
import sys
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from itertools import repeat
from operator import attrgetter
from typing import Any

import msgspec

from .entry import Entry, MessageHead
from .jsvalue import ABSENT
from .scan import LineProblem, ScanResult, _entry_from_line, _scan_entry_lines

log = logging.getLogger(__name__)

# Below this many bytes after the header the gain is a few ms (a 32 MB session scans in about
# 80 ms here), not worth a second process.
SPLIT_MIN_BYTES = 32 * 1024 * 1024
# The helper's part of the bytes after the header. A bit less than half: the parent still decodes
# the helper's rows after its own scan (measured on the 100 MB session: 0.42 to 0.52 all within
# the noise, 0.48 the best median).
HELPER_SHARE = 0.48
# The helper sends its rows every this many bytes of file, so that it holds one batch of entries at
# a time (a GB of text is 400,000 entries: 200 MB of them in one go).
BATCH_BYTES = 32 * 1024 * 1024
ENV_SWITCH = "PI_SESSION_SCAN_HELPER"
# How long the parent waits for the helper once its own part is read: the helper's part is about as
# big, so it should be done about as soon; one that takes this many times longer (and at least
# MIN_PATIENCE seconds) is stopped and its part read here.
PATIENCE_FACTOR = 3.0
MIN_PATIENCE = 2.0
# Forking copies the page tables of everything the process holds, and each page either side then
# writes first costs a fault: measured here, 0.04 s for a process of 880 MB, where the helper saves
# 0.06 s on 100 MB. No helper for a process holding more than this many times the bytes to scan.
MAX_RESIDENT_PER_BYTE = 8

_FRAME_HEAD = struct.Struct("<QQ")  # the frame's size, the offset its batch ends at


class _WireHead(MessageHead, omit_defaults=True, frozen=True, gc=False):
    """The helper's message head: encoded without a role it does not have."""


class _WireEntry(Entry, omit_defaults=True, gc=False):
    """The helper's entries: msgpack encodes them in C as maps of the fields their line set (plus
    where it is), which the parent decodes straight into Entry objects."""

    message: _WireHead | None = None


_decode_wire_envelope = msgspec.json.Decoder(_WireEntry).decode


class _Batch(msgspec.Struct, array_like=True):
    """What the helper sends per batch; lines are counted from the helper's first line."""

    rows: list[Entry]  # _WireEntry objects when sent
    rereads: list[int]  # positions in rows the parent reads again from the file
    non_messages: list[int]
    chain_starts: list[int]
    complete: bool
    problems: list[tuple[int, int, str, str, int, int]]
    lines: int  # physical lines in the batch (its last one may have no newline)
    end: int  # offset just after its last complete line
    tail: bytes
    last: bool


_decode_batch = msgspec.msgpack.Decoder(_Batch).decode
_encode_batch = msgspec.msgpack.Encoder().encode


class _HelperFailed(Exception):
    """The helper's part cannot be used: the parent scans it itself."""


def helper_wanted(bytes_after_header: int) -> bool:
    """Is the file big enough, and the machine able, for a helper process?"""
    if bytes_after_header < SPLIT_MIN_BYTES or os.environ.get(ENV_SWITCH, "1") == "0":
        return False
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        if len(os.sched_getaffinity(0)) < 2:
            return False
    except OSError:
        return False
    return _resident_bytes() <= MAX_RESIDENT_PER_BYTE * bytes_after_header


def _resident_bytes() -> int:
    """This process's resident memory (0 if unknown)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return 0


def scan_split(
    fd: int,
    source: Any,
    start: int,
    first_line: int,
    on_progress: Callable[[int, int], Any] | None = None,
) -> ScanResult:
    """``scan_entries(fd, source, start=start, first_line=first_line, have_header=True)`` with the
    back part of the file scanned by a forked helper when :func:`helper_wanted` (same result)."""
    total = os.fstat(fd).st_size
    if not helper_wanted(total - start):
        return _scan_entry_lines(fd, source, start, first_line, True, None, on_progress)
    split = _line_start_after(fd, start + int((total - start) * (1 - HELPER_SHARE)), total)
    helper = _Helper.start(fd, split) if split < total else None
    if helper is None:
        return _scan_entry_lines(fd, source, start, first_line, True, None, on_progress)
    if on_progress is not None:
        on_progress = _never_back(on_progress)  # a fallback reads the helper's part again
    try:
        report = None
        if on_progress is not None:
            progress = on_progress

            def report(position: int, _total: int) -> None:
                progress(position + helper.progress() - split, total)

        began = time.monotonic()
        result = _scan_entry_lines(fd, source, start, first_line, True, split, report)
        batches = helper.finish(max(MIN_PATIENCE, PATIENCE_FACTOR * (time.monotonic() - began)))
    except BaseException:
        helper.kill()
        raise
    if batches is not None:
        try:
            _merge(result, batches, fd, source, split, first_line)
        except _HelperFailed as why:
            log.warning(
                "scan helper's part of %s is unusable (%s); reading it here",
                getattr(source, "path", source),
                why,
            )
        else:
            if on_progress is not None:
                on_progress(result.end + len(result.tail), total)
            return result
    rest = _scan_entry_lines(fd, source, split, first_line + result.lines, True, None, on_progress)
    _append(result, rest)
    return result


def _never_back(on_progress: Callable[[int, int], Any]) -> Callable[[int, int], Any]:
    """``on_progress`` that never reports less than it already has."""
    highest = 0

    def report(done: int, total: int) -> None:
        nonlocal highest
        highest = max(highest, done)
        on_progress(highest, total)

    return report


def _line_start_after(fd: int, position: int, total: int) -> int:
    """The offset of the first line that starts at or after ``position`` (``total`` if none)."""
    if position <= 0:
        return 0
    position -= 1  # a line starts right after a newline
    while position < total:
        piece = os.pread(fd, 65536, position)
        if not piece:
            break
        found = piece.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(piece)
    return total


class _Helper:
    """The forked child and the in-memory file it writes its batches to.

    Not a pipe: the parent reads nothing until its own part is scanned, and a pipe holds 64 KB, so
    the child would wait for a thread of ours to drain it, and that thread for the GIL (5 ms a
    turn): measured, a 100 MB open spent 40 ms of the child's time so. The batches take about 90
    bytes per entry (35 MB for 2 GB of text), in memory the parent maps to decode them.
    """

    def __init__(self, pid: int, out: int, split: int) -> None:
        self.pid = pid
        self.out = out  # the file the child writes frames to
        self.done = split  # how far the helper has got, as far as we have looked (for progress)
        self.looked = 0  # offset in ``out`` of the first frame not looked at yet
        self.reaped = False

    @classmethod
    def start(cls, fd: int, split: int) -> _Helper | None:
        try:
            out = _anonymous_file()
        except OSError as err:
            log.info("no scan helper (no in-memory file: %s)", err)
            return None
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns of forking a process with threads: our child only scans (see
                # the module's docstring) and exits.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError as err:
            log.info("no scan helper (fork failed: %s)", err)
            os.close(out)
            return None
        if pid == 0:  # the child: never returns
            _run_child(fd, split, out)
        return cls(pid, out, split)

    def progress(self) -> int:
        """How far the helper has got: the end of the last batch it finished."""
        while True:
            head = os.pread(self.out, _FRAME_HEAD.size, self.looked)
            if len(head) < _FRAME_HEAD.size:
                return self.done
            size, end = _FRAME_HEAD.unpack(head)
            self.looked += _FRAME_HEAD.size + size
            self.done = end

    def finish(self, patience: float) -> list[_Batch] | None:
        """Wait for the helper, at most ``patience`` seconds; its batches, or None when they
        cannot be used (a helper still running then is stopped)."""
        try:
            if not self._exited_within(patience):
                log.warning("scan helper did not finish within %.1f s; stopped", patience)
                self.kill()
                return None
            status = _reap(self.pid)
            self.reaped = True
            if status != 0:
                log.warning("scan helper failed (exit status %s)", status)
                return None
            return _read_frames(self.out)
        finally:
            self._close()

    def _exited_within(self, seconds: float) -> bool:
        """Has the child exited, or does it within ``seconds``? (Not reaped here.) A child can
        hang where no scan would: a library's fork handler that waits for a thread the child does
        not have, say."""
        deadline = time.monotonic() + seconds
        exited = None
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # before Linux 5.3: look every few ms
            pidfd = -1
        else:  # poll, not select: a process holding 1,024 files has fds select cannot take
            exited = select.poll()
            exited.register(pidfd, select.POLLIN)
        try:
            while True:
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if exited is not None:
                    exited.poll(max(1, math.ceil(left * 1000)))
                else:
                    time.sleep(min(0.005, left))
        except ChildProcessError:  # reaped by somebody else: its batches tell whether it finished
            return True
        finally:
            if pidfd >= 0:
                os.close(pidfd)

    def kill(self) -> None:
        """Stop the helper (the parent failed): never leave a process or a zombie behind."""
        if not self.reaped:  # a reaped pid may be somebody else's by now
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            _reap(self.pid)
            self.reaped = True
        self._close()

    def _close(self) -> None:
        if self.out >= 0:  # once: the number may be another file's afterwards
            out, self.out = self.out, -1
            os.close(out)


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("pi-session-scan", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as named:  # pragma: no cover - kernels before 3.17
        return os.dup(named.fileno())


def _read_frames(out: int) -> list[_Batch] | None:
    size = os.fstat(out).st_size
    if size == 0:
        log.warning("scan helper sent nothing")
        return None
    try:
        mapped = mmap.mmap(out, size, access=mmap.ACCESS_READ)
    except OSError as err:
        log.warning("scan helper's batches cannot be mapped: %s", err)
        return None
    with mapped, memoryview(mapped) as frames:
        batches = []
        at = 0
        try:
            while at < size:
                if size - at < _FRAME_HEAD.size:
                    raise ValueError("a cut frame")
                length, _end = _FRAME_HEAD.unpack_from(frames, at)
                at += _FRAME_HEAD.size
                if size - at < length:
                    raise ValueError("a cut frame")
                batches.append(_decode_batch(frames[at : at + length]))
                at += length
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError) as err:
            log.warning("scan helper sent an unreadable batch: %s", err)
            return None
    if not batches[-1].last:
        log.warning("scan helper ended before its last batch")
        return None
    return batches


def _reap(pid: int) -> int:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)


# -- the child ---------------------------------------------------------------------------------


def _run_child(fd: int, start: int, out: int) -> None:
    """Scan from ``start`` to the end of the file in batches, send them, exit (never returns)."""
    status = 1  # until the last batch is written
    try:
        line = 0
        position = start
        while True:
            total = os.fstat(fd).st_size
            stop = _line_start_after(fd, position + BATCH_BYTES, total)
            last = stop >= total
            result = _scan_entry_lines(
                fd, None, position, line, True, None if last else stop, None, False, _decode_wire_envelope
            )
            frame = _encode_batch(_batch_of(result, last))
            _write_all(out, _FRAME_HEAD.pack(len(frame), result.end) + frame)
            if last:
                break
            line += result.lines
            position = result.end
        status = 0
    finally:  # whatever was raised: nothing may unwind here, the parent reads the part itself
        os._exit(status)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _batch_of(result: ScanResult, last: bool) -> _Batch:
    entries = result.entries
    # Entries the fast decoder did not make (lines it rejected: held values, types and roles the
    # typed records do not know) are read again by the parent; they all start chains.
    rereads = [at for at in result.index.chain_starts if type(entries[at]) is not _WireEntry]
    non_messages = [at for at, entry in enumerate(entries) if entry.type != "message"]
    for at in rereads:
        entry = entries[at]
        entries[at] = _WireEntry(line=entry.line, offset=entry.offset, length=entry.length)
    # Inside a chain an entry's parentId is the id of the one before: not sent (omitted as the
    # default), the parent links it to that very string again (as one scan does: less memory, and
    # one string fewer to decode per row).
    for first, end in _chains(result.index.chain_starts, len(entries)):
        _consume(map(setattr, entries[first + 1 : end], repeat("parent_id"), repeat(ABSENT)))
    return _Batch(
        entries,
        rereads,
        non_messages,
        result.index.chain_starts,
        result.index.complete,
        [(p.line, p.column, p.kind, p.message, p.offset, p.length) for p in result.problems],
        result.lines,
        result.end,
        result.tail,
        last,
    )


def _chains(starts: list[int], count: int) -> Iterator[tuple[int, int]]:
    """``(first, end)`` of every chain of more than one entry, given where the chains start."""
    for first, end in zip(starts, [*starts[1:], count], strict=True):
        if end - first > 1:
            yield first, end


_consume = deque[Any](maxlen=0).extend  # runs a map for its effects, in C

# -- the parent's merge -------------------------------------------------------------------------

_ID = attrgetter("id")


def _merge(
    result: ScanResult, batches: list[_Batch], fd: int, source: Any, split: int, first_line: int
) -> None:
    """Append the helper's batches to ``result``, the parent's scan of the front part (which began
    on line ``first_line`` and ends at ``split``). Raises _HelperFailed before changing anything."""
    if result.end != split or result.tail:
        raise _HelperFailed("the front part did not end where the back part starts")
    line_base = first_line + result.lines  # the helper counted lines from 0 at split
    for batch in batches:
        rows = batch.rows
        positions = (*batch.rereads, *batch.non_messages, *batch.chain_starts)
        if positions and not 0 <= min(positions) <= max(positions) < len(rows):
            raise _HelperFailed("a batch points past its rows")
        for entry in rows:
            entry.line += line_base
            entry._source = source
        for first, end in _chains(batch.chain_starts, len(rows)):
            _consume(
                map(setattr, rows[first + 1 : end], repeat("parent_id"), map(_ID, rows[first : end - 1]))
            )
        for at in batch.rereads:
            placeholder = rows[at]
            data = os.pread(fd, placeholder.length, placeholder.offset)
            found = _entry_from_line(placeholder.line, placeholder.offset, data, len(data), source)
            if type(found) is not Entry or len(data) != placeholder.length:
                raise _HelperFailed(f"line {placeholder.line + 1} changed while it was read")
            rows[at] = found
    entries = result.entries
    index = result.index
    for batch in batches:
        rows = batch.rows
        position = len(entries)
        entries.extend(rows)
        if batch.complete:
            index.by_id.update(zip(map(_ID, rows), rows, strict=True))
        else:
            index.complete = False
        index.non_messages.extend(rows[at] for at in batch.non_messages)
        index.chain_starts.extend(position + at for at in batch.chain_starts)
        result.problems.extend(
            LineProblem(line + line_base, column, kind, message, offset, length)
            for line, column, kind, message, offset, length in batch.problems
        )
        result.lines += batch.lines
        result.end = batch.end
        result.tail = batch.tail


def _append(result: ScanResult, rest: ScanResult) -> None:
    """Append a scan of the back part (made by the parent) to the front part's ``result``."""
    position = len(result.entries)
    result.entries.extend(rest.entries)
    result.problems.extend(rest.problems)
    index, more = result.index, rest.index
    index.by_id.update(more.by_id)
    index.non_messages.extend(more.non_messages)
    index.chain_starts.extend(position + at for at in more.chain_starts)
    index.complete = index.complete and more.complete
    result.lines += rest.lines
    result.end = rest.end
    result.tail = rest.tail
