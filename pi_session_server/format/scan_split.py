"""Opening a large session on two cores: a forked helper scans the back part of the file.

Every line of a session must be parsed (pi drops the lines ``JSON.parse`` rejects, so the tree
depends on all of them), and msgspec, the fastest JSON validator Python has, holds the GIL: a
thread cannot share that work, a second process can. For a file of at least ``SPLIT_MIN_BYTES``
the loader forks before it reads anything (the process is then as small as it will be, so the fork
copies few page tables and the two processes fault few shared pages). The child scans the back part
in batches of ``BATCH_BYTES`` with a loop of its own, which only decodes each line and notes where
it starts (it keeps no entry, so the rest is a few passes in C over the batch), and writes each
batch to an in-memory file as columns (types and message roles as one-byte codes, ids, timestamps,
offsets, the few lengths kept), which msgpack decodes in C. The parent scans the front part meanwhile and, between its own chunks, takes
each batch as soon as it is complete: one ``map(Entry, ...)`` over the columns makes its entries in
C, with the shared message heads and each parentId inside a chain taken from the id column (the
very string of the entry before, as one scan links it), and puts them in the id index. A row costs
the parent about 1.5 us where scanning its line costs 6 (and the child 5), which is the whole gain
(2026-12-01: a 105 MB session opens in 0.15 s instead of 0.24 s on one core, 2.15 GB of text in
2.73-2.79 s instead of 4.95 s).

The split point is a guess (the helper's share, see HELPER_SHARE_SPARSE) and either process may lag
(a helper slow to start, a core busy with something else), so neither waits for the other: once
the parent is done with its front part it takes pieces of the helper's part from the end of the
file, ``BATCH_BYTES`` at a time, until the two meet. Who reads what is decided under a lock on a
small shared file: the helper claims its next batch there and stops where the parent's pieces
begin (see _Helper.claim).

Whatever goes wrong on the helper's side (no fork, the child dies or sends something unexpected)
the parent scans the back part itself: the result is the same, only slower. Entries the fast
decoder did not make (held values, entry types and roles the typed records do not know) are read
again by the parent from their line, as are labels (the columns do not carry their targetId and
label) and envelopes with values a column cannot carry.

Only on Linux, with two usable cores and unless ``PI_SESSION_SCAN_HELPER=0``. The child runs only
code that is already imported and takes no locks, so forking from a thread (the sidecar opens big
files on its thread pool) is safe; it leaves with ``os._exit``, running no handler of the parent's.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import mmap
import os
import re
import select
import signal
import struct
import sys
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, attrgetter, is_, ne, sub
from typing import Any, cast, get_args

import msgspec

from .entry import Entry, KnownRole, KnownType, MessageHead, head_for
from .jsvalue import ABSENT
from .scan import (
    CHUNK_SIZE,
    KEEP_GROWN_CHUNKS,
    SHORT_LINE,
    IdIndex,
    LineProblem,
    ScanResult,
    _entry_from_line,
    _grown,
    _scan_entry_lines,
    _undecodable_line,
    line_at,
    read_chunk,
)

log = logging.getLogger(__name__)

# Below this many bytes after the header the gain is a few ms (a 32 MB session scans in about
# 80 ms here), not worth a second process.
SPLIT_MIN_BYTES = 32 * 1024 * 1024
# The helper's part of the bytes after the header: half of a file with few lines a MB (screenshots),
# 0.55 of one dense with lines (HELPER_SHARE_DENSE lines a MB: text), and up to 0.6 of a dense file
# of HELPER_SHARE_FULL_AT bytes or more. The parent takes the helper's rows as they come, between
# its own chunks, and a row costs it about a quarter of what its line costs the helper: the more
# rows, the more the helper can take. On a small file the helper's start and its last batch, which
# the parent waits for, weigh more; in a file of screenshots there are few rows. Measured
# (2026-12-01, medians of 7 to 15 alternating opens, with the helper's own loop): 105 MB of text
# opens fastest at 0.55 (0.5: +6 %, 0.6: +8 %, 0.45: +12 %), 2.15 GB of text at 0.6 (0.56: +2 %,
# 0.64: +6 %); 2.15 GB of screenshots was 6 % slower at 0.6 than at 0.48.
HELPER_SHARE_SPARSE = 0.5
HELPER_SHARE_DENSE_SMALL = 0.55
HELPER_SHARE_LARGE = 0.6
HELPER_SHARE_FULL_AT = 2 * 1024**3
HELPER_SHARE_DENSE = 300
_SAMPLES = 8  # pieces of the file whose lines are counted to tell how dense it is
_SAMPLE_BYTES = 64 * 1024
# The helper sends its rows every this many bytes of file (about 3,000 entries of text), so that it
# holds one batch of entries at a time and the parent can take them while it scans its own part.
BATCH_BYTES = 8 * 1024 * 1024
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
# Who reads which part of the helper's region, in a small in-memory file both processes lock while
# they change it: where the helper's claimed batches end, and where the pieces the parent took
# from the end of the file begin (see _Helper.claim).
_CLAIMS = struct.Struct("<qq")
_UNCLAIMED = 2**63 - 1  # the parent took nothing yet; or the helper's last batch runs to the end
_LOCK_PATIENCE = 0.05  # how long the parent tries for the lock (the helper holds it for a read)


class _WireEntry(Entry, gc=False):
    """The entries the helper's scanner decodes: of a class of their own, so that those the fast
    decoder did not make are told apart, and with a message head (of no role) when the line has
    none, so that the roles of a batch are read in one pass (see _batch_of)."""

    message: MessageHead | None = MessageHead(cast(Any, None))


_decode_wire_envelope = msgspec.json.Decoder(_WireEntry).decode
_STAND_IN = _WireEntry()  # in the columns for an entry the fast decoder did not make

# The helper sends its entries as columns, which msgpack decodes in C into lists of strings and
# ints; the parent then makes every Entry of a batch in one map() over them, in C too: with the
# types and message heads sent as one-byte codes for the shared values, and each parentId inside
# a chain taken from the column of ids (the very string of the entry before, as one scan links
# it), a row costs the parent about 1 us (1.5 with the id index) where decoding an Entry per row
# and fixing it up cost 2 (and a message head of its own, 32 bytes, per entry).
_TYPES: tuple[str, ...] = get_args(KnownType)
_TYPE_CODES = {name: code for code, name in enumerate(_TYPES)}
_HEADS: tuple[MessageHead | None, ...] = (None, head_for(ABSENT), *map(head_for, get_args(KnownRole)))
_ROLE_CODES: dict[Any, int] = {None: 0} | {
    head.role: code for code, head in enumerate(_HEADS) if head is not None
}
_MESSAGE_CODE = _TYPE_CODES["message"]
_LABEL_CODE = _TYPE_CODES["label"]
_NOT_A_MESSAGE = re.compile(b"[^%c]" % _MESSAGE_CODE)
_REREAD = 255  # the type and head code of a row the parent reads again from its line
_TYPE_OF = (*_TYPES, *repeat(ABSENT, 256 - len(_TYPES)))
_HEAD_OF = (*_HEADS, *repeat(None, 256 - len(_HEADS)))
# What a column may carry: other values (and ABSENT, a missing member) make the row a reread.
# The parentIds a chain's first row carries: other values make the row one to read again.
_CHAIN_PARENTS = (str, type(None))


class _Batch(msgspec.Struct, array_like=True):
    """What the helper sends per batch: its entries as columns (positions count from the batch's
    first entry, lines from its first line)."""

    types: bytes  # a code in _TYPES per entry (_REREAD: read again by the parent)
    heads: bytes  # a code in _HEADS per entry
    ids: list[Any]  # None for a reread whose id a column cannot carry
    timestamps: list[Any]
    offsets: list[int]
    lengths: dict[int, int]  # the lengths kept: of lines of SHORT_LINE or more, and of rows read again
    line_numbers: list[int] | None  # None: every line of the batch is an entry (they count up)
    chain_starts: list[int]
    chain_parents: list[Any]  # the parentId of each chain's first entry (None for a reread)
    rereads: list[int]
    non_messages: list[int]
    complete: bool
    problems: list[tuple[int, int, str, str, int, int]]
    lines: int  # physical lines in the batch (its last one may have no newline)
    end: int  # offset just after its last complete line
    tail: bytes
    last: bool


_decode_batch = msgspec.msgpack.Decoder(_Batch).decode
_encode_batch = msgspec.msgpack.Encoder().encode


@dataclass(slots=True)
class _Part:
    """A batch taken by the parent, with its entries made (see _prepare)."""

    batch: _Batch
    rows: list[Entry]
    first_line: int  # the first line of the batch, counted from the helper's first line


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


def helper_share(bytes_to_scan: int, lines_per_mb: float = HELPER_SHARE_DENSE) -> float:
    """The part of ``bytes_to_scan`` the helper takes (see HELPER_SHARE_SPARSE)."""
    dense = min(1.0, lines_per_mb / HELPER_SHARE_DENSE)
    grown = min(1.0, bytes_to_scan / HELPER_SHARE_FULL_AT)
    small = HELPER_SHARE_DENSE_SMALL - HELPER_SHARE_SPARSE
    return HELPER_SHARE_SPARSE + dense * (small + (HELPER_SHARE_LARGE - HELPER_SHARE_DENSE_SMALL) * grown)


def _lines_per_mb(fd: int, start: int, total: int) -> float:
    """About how many lines a MB of the file from ``start`` holds, from a few pieces of it."""
    step = max(1, (total - start) // _SAMPLES)
    read = lines = 0
    for at in range(start, total, step):
        piece = os.pread(fd, _SAMPLE_BYTES, at)
        read += len(piece)
        lines += piece.count(b"\n")
    return lines * 1024 * 1024 / read if read else 0.0


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
    share = helper_share(total - start, _lines_per_mb(fd, start, total))
    split = _line_start_after(fd, start + int((total - start) * (1 - share)), total)
    index = IdIndex()  # the helper's rows go in as they come, the front part's as it is read
    helper = _Helper.start(fd, split, source, index.by_id) if split < total else None
    if helper is None:
        return _scan_entry_lines(fd, source, start, first_line, True, None, on_progress)
    report = None if on_progress is None else _never_back(on_progress)  # a fallback reads again
    stolen = 0  # bytes of the pieces taken from the helper's region and read here

    def between_chunks(position: int, _total: int) -> None:
        # The helper's batches are taken as they come: their rows cost this process about a
        # quarter of what scanning their lines would, and taken now they cost it no waiting.
        helper.collect()
        if report is not None:
            report(position + helper.done - split + stolen, total)

    def between_piece_chunks(position: int, _total: int) -> None:
        helper.collect()
        if report is not None:
            report(helper.done + stolen + position - piece_start, total)

    try:
        began = time.monotonic()
        result = _scan_entry_lines(fd, source, start, first_line, True, split, between_chunks, index=index)
        patience = max(MIN_PATIENCE, PATIENCE_FACTOR * (time.monotonic() - began))
        # Done before the helper: rather than wait, take pieces of its part from the end of the
        # file until the two meet (a helper slow to start, a busy core: either side may lag).
        pieces: list[tuple[int, ScanResult]] = []
        while (claimed := helper.claim()) is not None:
            piece_start, piece_end = claimed
            piece = _scan_entry_lines(fd, source, piece_start, 0, True, piece_end, between_piece_chunks)
            pieces.append((piece_start, piece))
            stolen += piece.end + len(piece.tail) - piece_start
        parts = helper.finish(patience)
    except BaseException:
        helper.kill()
        raise
    if parts is not None:
        try:
            _merge(result, parts, pieces[::-1], split, first_line)
        except _HelperFailed as why:
            _log_unusable(source, why)
        else:
            if report is not None:
                report(result.end + len(result.tail), total)
            return result
    if helper.indexed:
        _index_again(result)
    rest = _scan_entry_lines(fd, source, split, first_line + result.lines, True, None, report)
    _append(result, rest)
    return result


def _log_unusable(source: Any, why: object) -> None:
    log.warning(
        "scan helper's part of %s is unusable (%s); reading it here", getattr(source, "path", source), why
    )


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
    """The forked child, the in-memory file it writes its batches to, and the one that says who
    reads which part of the helper's region (see :meth:`claim`).

    Not a pipe: the parent looks for batches only between the chunks it scans, and a pipe holds
    64 KB, so the child would wait for us. The batches take about 45 bytes per entry (35 MB for
    2 GB of text), memory the kernel holds for the file until we close it; we read each batch once,
    as soon as it is complete, and make its entries then (see :meth:`collect`).
    """

    def __init__(
        self, pid: int, out: int, claims: int, split: int, fd: int, source: Any, by_id: dict[str, Entry]
    ) -> None:
        self.pid = pid
        self.out = out  # the file the child writes frames to
        self.claims = claims  # the file that says who reads what (see claim)
        self.fd = fd  # the session file (lines the batches cannot carry are read again from it)
        self.source = source  # what the entries made here read their bodies from
        self.by_id = by_id  # the id index the rows go into (see collect)
        self.done = split  # the end of the last batch taken (for progress)
        self.looked = 0  # offset in ``out`` of the first frame not taken yet
        self.parts: list[_Part] = []  # the batches taken, their entries made (see _prepare)
        self.lines = 0  # the lines of those batches
        self.failed: str | None = None  # why the helper's part cannot be used
        self.indexed = 0  # rows put in the id index
        self.reaped = False

    @classmethod
    def start(cls, fd: int, split: int, source: Any, by_id: dict[str, Entry]) -> _Helper | None:
        files: list[int] = []  # for the frames, for the claims
        try:
            files.append(_anonymous_file())
            files.append(_anonymous_file())
            _pwrite_all(files[1], _CLAIMS.pack(split, _UNCLAIMED), 0)
            with warnings.catch_warnings():
                # Python 3.12+ warns of forking a process with threads: our child only scans (see
                # the module's docstring) and exits.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError as err:
            log.info("no scan helper (%s)", err)
            for file in files:
                os.close(file)
            return None
        out, claims = files
        if pid == 0:  # the child: never returns
            _run_child(fd, split, out, claims)
        return cls(pid, out, claims, split, fd, source, by_id)

    def claim(self) -> tuple[int, int | None] | None:
        """A piece at the end of the helper's region for the parent to read, ``(start, end)``
        (end None: to the end of the file), once the helper has claimed its next batch and
        unless the two have met; None also once the helper failed or exited (it claims no more)
        or holds the lock for longer than a read takes (a stopped process, say)."""
        if self.failed is not None or self.claims < 0:
            return None
        self.collect()
        with contextlib.suppress(ChildProcessError):
            if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return None
        if not self._locked():
            return None
        try:
            helper_end, parent_start = _CLAIMS.unpack(os.pread(self.claims, _CLAIMS.size, 0))
            if helper_end >= parent_start:
                return None
            total = os.fstat(self.fd).st_size
            region_end = total if parent_start == _UNCLAIMED else parent_start
            start = _line_start_after(self.fd, max(helper_end, region_end - BATCH_BYTES), total)
            if not helper_end <= start < region_end:
                return None  # one line to the end of the region: the helper's
            _pwrite_all(self.claims, _CLAIMS.pack(helper_end, start), 0)
            return start, None if parent_start == _UNCLAIMED else parent_start
        finally:
            fcntl.lockf(self.claims, fcntl.LOCK_UN)

    def _locked(self) -> bool:
        """Take the claims' lock, trying for a little while (the helper holds it for a read)."""
        deadline = time.monotonic() + _LOCK_PATIENCE
        while True:
            try:
                fcntl.lockf(self.claims, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.0002)
            else:
                return True

    def collect(self) -> None:
        """Take the batches the child has completed since we last looked, their rows into the id
        index (the front part's entries go in meanwhile: _merge puts the back part's first
        again when an id is in both). A batch that cannot be used stops the helper: its whole part
        is then read here (see :attr:`failed`)."""
        if self.failed is not None:
            return
        try:
            while True:
                frame = self._next_frame()
                if frame is None:
                    return
                batch = _decode_batch(frame)
                rows = _prepare(batch, self.lines, self.fd, self.source)
                self.parts.append(_Part(batch, rows, self.lines))
                self.lines += batch.lines
                if batch.complete:  # else the id index is built again anyway (IdIndex.complete)
                    self.indexed += len(rows)  # first: a failure halfway leaves some in the index
                    self.by_id.update(zip(batch.ids, rows, strict=True))
                self.done = batch.end + len(batch.tail)
        except Exception as err:  # whatever the batch held (an unhashable id, say): read it here
            self.failed = f"{type(err).__name__}: {err}"
            self.kill()

    def _next_frame(self) -> bytes | None:
        """The next complete frame's bytes, or None (the child writes a frame's head last)."""
        if self.out < 0:
            return None
        head = os.pread(self.out, _FRAME_HEAD.size, self.looked)
        if len(head) < _FRAME_HEAD.size:
            return None
        size, _end = _FRAME_HEAD.unpack(head)
        if size == 0:  # not written yet
            return None
        frame = os.pread(self.out, size, self.looked + _FRAME_HEAD.size)
        if len(frame) < size:
            raise _HelperFailed("a cut frame")
        self.looked += _FRAME_HEAD.size + size
        return frame

    def finish(self, patience: float) -> list[_Part] | None:
        """Wait for the helper, at most ``patience`` seconds, taking its batches as they come;
        all its batches, or None when they cannot be used (a helper still running then is
        stopped, and why is logged)."""
        try:
            if not self._exited_within(patience):
                if self.failed is None:
                    log.warning("scan helper did not finish within %.1f s; stopped", patience)
                    self.kill()
                    return None
            elif not self.reaped:
                status = _reap(self.pid)
                self.reaped = True
                if status != 0:
                    log.warning("scan helper failed (exit status %s)", status)
                    return None
                self.collect()  # what it wrote last
                if self.failed is None and self._next_frame_started():
                    self.failed = "a cut frame"
            if self.failed is not None:
                _log_unusable(self.source, self.failed)
                return None
            if not self.parts:
                log.warning("scan helper sent nothing")
                return None
            if not self.parts[-1].batch.last:
                log.warning("scan helper ended before its last batch")
                return None
            return self.parts
        finally:
            self._close()

    def _next_frame_started(self) -> bool:
        """Did the child write anything past the frames taken? (It exited: then a frame was cut.)"""
        return self.out >= 0 and os.fstat(self.out).st_size > self.looked

    def _exited_within(self, seconds: float) -> bool:
        """Has the child exited, or does it within ``seconds``, taking its batches meanwhile? (Not
        reaped here; False at once when a batch could not be used.) A child can hang where no scan
        would: a library's fork handler that waits for a thread the child does not have, say."""
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
                self.collect()
                if self.failed is not None:
                    return False
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                # a batch is about 20 ms of the child's work: look for the next one every 2 ms
                if exited is not None:
                    exited.poll(max(1, math.ceil(min(left, 0.002) * 1000)))
                else:
                    time.sleep(min(0.002, left))
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
        if self.claims >= 0:
            claims, self.claims = self.claims, -1
            os.close(claims)


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("pi-session-scan", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as named:  # pragma: no cover - kernels before 3.17
        return os.dup(named.fileno())


def _reap(pid: int) -> int:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1
    return os.waitstatus_to_exitcode(status)


# -- the child ---------------------------------------------------------------------------------


def _run_child(fd: int, start: int, out: int, claims: int) -> None:
    """Scan from ``start`` in batches, send them, exit (never returns): to the end of the file, or
    to where the pieces the parent claimed begin (see _Helper.claim)."""
    status = 1  # until the last batch is written
    try:
        at = 0  # where the next frame goes in ``out``
        position = start
        buffers: list[bytearray] = []  # one read buffer for every batch (a fresh one costs faults)
        while True:
            total = os.fstat(fd).st_size
            fcntl.lockf(claims, fcntl.LOCK_EX)
            try:
                _, parent_start = _CLAIMS.unpack(os.pread(claims, _CLAIMS.size, 0))
                stop = position
                if position < parent_start:
                    stop = min(_line_start_after(fd, position + BATCH_BYTES, total), parent_start)
                last = stop >= parent_start or stop >= total
                end = None if last and parent_start == _UNCLAIMED else stop  # None: to the end
                _pwrite_all(claims, _CLAIMS.pack(_UNCLAIMED if end is None else stop, parent_start), 0)
            finally:
                fcntl.lockf(claims, fcntl.LOCK_UN)
            batch = _scan_batch(fd, position, end, last, buffers)
            frame = _encode_batch(batch)
            _write_frame(out, at, frame, batch.end)
            at += _FRAME_HEAD.size + len(frame)
            if last:
                break
            position = batch.end
        status = 0
    finally:  # whatever was raised: nothing may unwind here, the parent reads the part itself
        os._exit(status)


def _write_frame(out: int, at: int, frame: bytes, end: int) -> None:
    """Write a frame at ``at``: its bytes first, then its head, so that the parent, which reads
    while we write, takes a frame whose head is set as complete (a frame is never empty)."""
    _pwrite_all(out, frame, at + _FRAME_HEAD.size)
    _pwrite_all(out, _FRAME_HEAD.pack(len(frame), end), at)


def _pwrite_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, at)
        view = view[written:]
        at += written


def _scan_batch(
    fd: int, start: int, end: int | None, last: bool, buffers: list[bytearray] | None = None
) -> _Batch:
    """The helper's scan of the lines from ``start`` (to ``end``; lines counted from there), as
    a batch; ``buffers`` keeps the read buffer from one batch to the next.

    The parent's scanner does a dozen things per line for the entry it keeps (its place, the id
    index, the chains); the helper keeps nothing, so its loop only decodes each line and notes
    where it starts, and the rest is a few passes in C over the batch (measured on 2 GB of text:
    4.9 us a line against 6.4 for the scanner and its columns; the helper's part of the work is
    what an open of such a file waits for).
    """
    rows: list[Any] = []  # per physical line: its _WireEntry, or what _undecodable_line makes of
    offsets: list[int] = []  # a line the fast decoder rejects (another Entry, a LineProblem, None)
    slow: list[int] = []  # the lines of those
    add_row = rows.append
    add_offset = offsets.append
    decode = _decode_wire_envelope
    decode_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    # Read as scan._scan_entry_lines reads (which says why), into the buffer the batch before used
    # (grown, if it was): on these machines each new page of memory costs 5-25 us, a fresh MB up
    # to 6 ms.
    buf = buffers.pop() if buffers and len(buffers[-1]) >= CHUNK_SIZE else bytearray(CHUNK_SIZE)
    base = start
    kept = 0
    while True:
        buf, got = read_chunk(fd, buf, base, kept, end)
        if not got:
            break
        fill = kept + got
        view = memoryview(buf)
        find = buf.find
        i = 0
        j = find(b"\n", kept, fill)
        while j >= 0:
            try:
                add_row(decode(view[i:j]))
            except decode_errors as err:
                slow.append(len(rows))
                add_row(_undecodable_line(len(rows), base + i, bytes(view[i:j]), None, err))
            add_offset(base + i)
            i = j + 1
            j = find(b"\n", i, fill)
        kept = fill - i
        if kept and i:
            view[:kept] = view[i:fill]
        view.release()
        base += i
        if len(buf) > KEEP_GROWN_CHUNKS * CHUNK_SIZE and kept <= CHUNK_SIZE // 2:
            buf = _grown(buf, CHUNK_SIZE, kept)
    tail = bytes(buf[:kept])
    if buffers is not None:
        buffers.append(buf)
    ends = offsets[1:]  # where each line's successor starts
    if offsets:
        ends.append(base)
    lengths: dict[int, int] = {}  # by line: the lengths kept (see _Batch.lengths)
    if offsets and max(map(sub, ends, offsets)) > SHORT_LINE:
        lengths = {line: size - 1 for line, size in enumerate(map(sub, ends, offsets)) if size > SHORT_LINE}
    if tail:  # a last line without newline is read again by its exact length, as the scan does
        slow.append(len(rows))
        add_row(_entry_from_line(len(rows), base, tail, len(tail), None))
        add_offset(base)
        ends.append(base + len(tail) + 1)
    for line in slow:  # entries of the slow path keep their exact length, as the scanner's do
        lengths[line] = ends[line] - offsets[line] - 1
    return _batch_of(rows, offsets, lengths, slow, tail, base, last)


def _batch_of(
    rows: list[Any],
    offsets: list[int],
    lengths: dict[int, int],
    slow: list[int],
    tail: bytes,
    end: int,
    last: bool,
) -> _Batch:
    """The columns of the entries among ``rows`` (one per physical line, those at ``slow`` not
    from the fast decoder; ``lengths`` by line), each a pass in C, with the chains and the rows to
    read again as the parent's scanner would find them: an entry starts a chain unless its id and
    timestamp are strings, the entry before came from the fast decoder with a string id and its
    parentId is that id."""
    problems: list[tuple[int, int, str, str, int, int]] = []
    entries: list[Any] = rows
    line_numbers: list[int] | None = None
    wire = rows  # what the columns are read from
    odd: set[int] = set()  # entries that start chains and are read again by the parent
    if slow:
        entries, line_numbers, entry_offsets, at_line = [], [], [], {}
        for line, (row, offset) in enumerate(zip(rows, offsets, strict=True)):
            if type(row) is LineProblem:
                problems.append((row.line, row.column, row.kind, row.message, row.offset, row.length))
            elif row is not None:
                at_line[line] = len(entries)
                entries.append(row)
                line_numbers.append(line)
                entry_offsets.append(offset)
        odd = {at_line[line] for line in slow if line in at_line}
        lengths = {at_line[line]: size for line, size in lengths.items() if line in at_line}
        offsets = entry_offsets
        wire = entries.copy()
        for at in odd:  # stand-ins in the columns: the parent reads these again
            wire[at] = _STAND_IN
        if len(entries) == len(rows):
            line_numbers = None
    count = len(wire)
    ids = list(map(_ID, wire))
    timestamps = list(map(_TIMESTAMP, wire))
    parents = list(map(_PARENT, wire))
    types = bytearray(map(_TYPE_CODES.get, map(_TYPE, wire), repeat(_REREAD)))
    try:
        heads = bytearray(map(_ROLE_CODES.get, map(_ROLE, wire), repeat(_REREAD)))
    except AttributeError:  # a message of null
        roles = map(getattr, map(_MESSAGE, wire), repeat("role"), repeat(None))
        heads = bytearray(map(_ROLE_CODES.get, roles, repeat(_REREAD)))
    for at in odd:  # read again, but a message or not as the scanner tells them apart
        kind = entries[at].type
        types[at] = _TYPE_CODES.get(kind, _REREAD) if type(kind) is str else _REREAD
    string_ids = all(map(is_, map(type, ids), repeat(str)))
    if string_ids and all(map(is_, map(type, timestamps), repeat(str))):
        no_string_id: set[int] = set()
    else:
        no_string_id = {at for at in range(count) if type(ids[at]) is not str}
        odd.update(no_string_id, (at for at in range(count) if type(timestamps[at]) is not str))
    complete = string_ids and not slow or all(map(is_, map(type, map(_ID, entries)), repeat(str)))
    if parents[1:] == ids[:-1] and not odd:  # one chain (most batches of pi's files)
        chain_starts = [0] if count else []
    else:
        starts = {0, *compress(range(1, count), map(ne, parents[1:], ids[:-1])), *odd}
        starts.update(at + 1 for at in no_string_id if at + 1 < count)
        chain_starts = sorted(starts)
    non_messages = [found.start() for found in _NOT_A_MESSAGE.finditer(types)]
    starting = set(chain_starts)
    # Rows the columns cannot carry are read again by the parent from their line: those the fast
    # decoder did not make (held values; types and roles the records do not know), labels (their
    # targetId and label), envelopes with other values. All start chains or are not messages.
    rereads = [
        at
        for at in sorted(starting.union(non_messages))
        if types[at] in (_REREAD, _LABEL_CODE)
        or heads[at] == _REREAD
        or at in odd
        or (at in starting and type(parents[at]) not in _CHAIN_PARENTS)
    ]
    for at in rereads:
        types[at] = heads[at] = _REREAD
        # Kept only an id the fast decoder read (a label's inside a chain, whose next entry's
        # parentId is taken from it); any other makes the next entry start a chain.
        if at in no_string_id:
            ids[at] = None
        timestamps[at] = None
    reread = set(rereads)
    return _Batch(
        bytes(types),
        bytes(heads),
        ids,
        timestamps,
        offsets,
        lengths,
        line_numbers,
        chain_starts,
        [None if at in reread else parents[at] for at in chain_starts],
        rereads,
        non_messages,
        complete,
        problems,
        len(rows),
        end,
        tail,
        last,
    )


_consume = deque[Any](maxlen=0).extend  # runs a map for its effects, in C

# -- the parent's merge -------------------------------------------------------------------------

_ID = attrgetter("id")
_ROLE = attrgetter("message.role")  # (a _WireEntry's message is never None unless the line says so)
_PARENT = attrgetter("parent_id")
_LINE = attrgetter("line")
_TYPE = attrgetter("type")
_MESSAGE = attrgetter("message")
_TIMESTAMP = attrgetter("timestamp")


def _prepare(batch: _Batch, first_line: int, fd: int, source: Any) -> list[Entry]:
    """The entries of a batch whose first line is ``first_line`` (counted from the helper's first
    line), the lines it could not send read again here, with no line number yet (_merge sets them
    once the front part's lines are counted). Raises _HelperFailed for a batch that does not hold
    together."""
    count = len(batch.ids)
    numbers = batch.line_numbers
    columns = (batch.types, batch.heads, batch.timestamps, batch.offsets)
    if any(len(column) != count for column in columns) or (numbers is not None and len(numbers) != count):
        raise _HelperFailed("a batch's columns differ in length")
    positions = (*batch.rereads, *batch.non_messages, *batch.chain_starts, *batch.lengths)
    if positions and not 0 <= min(positions) <= max(positions) < count:
        raise _HelperFailed("a batch points past its rows")
    if count and (not batch.chain_starts or batch.chain_starts[0] != 0):
        raise _HelperFailed("a batch does not start a chain")
    if len(batch.chain_parents) != len(batch.chain_starts):
        raise _HelperFailed("a batch's chains have no parents")
    rereads = set(batch.rereads)
    for codes, known in ((batch.types, len(_TYPES)), (batch.heads, len(_HEADS))):
        if codes.count(_REREAD) != len(rereads) or any(codes[at] != _REREAD for at in rereads):
            raise _HelperFailed("a batch's rows to read again do not match")
        if max(codes.replace(bytes([_REREAD]), b""), default=0) >= known:
            raise _HelperFailed("a batch holds an unknown code")
    ids = batch.ids
    parents = [None, *ids[:-1]]  # inside a chain: the id of the entry before, that very string
    for at, parent in zip(batch.chain_starts, batch.chain_parents, strict=True):
        parents[at] = parent
    rows = list(
        map(
            Entry,
            map(_TYPE_OF.__getitem__, batch.types),
            ids,
            parents,
            batch.timestamps,
            map(_HEAD_OF.__getitem__, batch.heads),
            repeat(ABSENT),  # targetId, label: labels are read again
            repeat(ABSENT),
            repeat(-1),  # the line: set by _merge, once the front part's lines are counted
            batch.offsets,
            repeat(0),  # the length, when kept, below
            repeat(ABSENT),  # _body: read from the file on demand
            repeat(source),
        )
    )
    for at, length in batch.lengths.items():
        rows[at].length = length
    for at in batch.rereads:
        offset, length = batch.offsets[at], batch.lengths.get(at, 0)
        data = line_at(fd, offset, length)
        line = first_line + (at if numbers is None else numbers[at])  # counted from the split
        found = _entry_from_line(line, offset, data, len(data), source)
        if type(found) is not Entry or (length and len(data) != length):
            raise _HelperFailed(f"line {line + 1} after the split changed while it was read")
        found.length = length  # as the scan keeps it (0 for a short line it decoded)
        # the same id and parentId strings as the rows beside it hold (a label inside a chain)
        if found.parent_id == parents[at]:
            found.parent_id = parents[at]
        if type(found.id) is str and found.id == ids[at]:
            found.id = ids[at]
        else:
            ids[at] = found.id  # the column is the id index's keys
        rows[at] = found
    return rows


def _merge(
    result: ScanResult, parts: list[_Part], pieces: list[tuple[int, ScanResult]], split: int, first_line: int
) -> None:
    """Append the helper's batches to ``result``, the parent's scan of the front part (which began
    on line ``first_line`` and ends at ``split``), then the pieces the parent read at the end of
    the file (``(start, scan)`` in file order, their lines counted from 0). Raises _HelperFailed
    before changing anything."""
    if result.end != split or result.tail:
        raise _HelperFailed("the front part did not end where the back part starts")
    reached = split  # where the lines read so far end (-1: in a line without newline)
    for batch in (part.batch for part in parts):
        reached = batch.end if not batch.tail else -1
    for start, piece in pieces:
        if start != reached:
            raise _HelperFailed("the helper's batches and the pieces read here do not meet")
        reached = piece.end if not piece.tail else -1
    line_base = first_line + result.lines  # the helper counted lines from 0 at split
    entries = result.entries
    index = result.index
    for part in parts:
        batch, rows = part.batch, part.rows
        first = line_base + part.first_line
        if batch.line_numbers is None:  # every line an entry (pi's files): they count up
            _consume(map(setattr, rows, repeat("line"), range(first, first + len(rows))))
        else:
            _consume(map(setattr, rows, repeat("line"), map(add, batch.line_numbers, repeat(first))))
        position = len(entries)
        entries.extend(rows)
        index.complete = index.complete and batch.complete
        index.non_messages.extend(rows[at] for at in batch.non_messages)
        index.chain_starts.extend(position + at for at in batch.chain_starts)
        result.problems.extend(
            LineProblem(line + line_base + part.first_line, column, kind, message, offset, length)
            for line, column, kind, message, offset, length in batch.problems
        )
        result.lines += batch.lines
        result.end = batch.end
        result.tail = batch.tail
    # The rows went into the id index while the front part was read: an id in both parts now
    # names the front's entry, where a later line must win. With every id a string, the index
    # holds one per entry unless some id came twice; only then are the back part's put again.
    by_id = index.by_id
    if index.complete and len(by_id) != len(entries):
        for part in parts:
            by_id.update(zip(part.batch.ids, part.rows, strict=True))
    for _start, piece in pieces:  # the last lines of the file: their ids go in last
        line_base = first_line + result.lines
        _consume(
            map(
                setattr, piece.entries, repeat("line"), map(add, map(_LINE, piece.entries), repeat(line_base))
            )
        )
        for problem in piece.problems:
            problem.line += line_base
        _append(result, piece)


def _index_again(result: ScanResult) -> None:
    """The id index of the front part alone (the helper's rows went in, then its part proved
    unusable), as the scan made it: a later line wins."""
    by_id = result.index.by_id
    by_id.clear()
    for entry in result.entries:
        if type(entry.id) is str:
            by_id[entry.id] = entry


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
