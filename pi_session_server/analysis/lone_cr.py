"""Where an editor's lines and session lines part: a lone carriage return.

A session file's lines end at ``\\n`` only (pi splits on it; ``\\r\\n`` leaves a ``\\r`` that
JSON reads as white space). The LSP counts ``\\n``, ``\\r\\n`` *and a lone* ``\\r`` as line breaks,
and a client that follows it (VS Code) numbers its lines so. The rule of the server: **positions on
the wire follow the LSP** (a lone ``\\r`` starts a new line); the analysis keeps pi's lines. This
module maps between the two for a document or a file on disk; with no lone ``\\r`` in it (every
session pi writes), both numberings are the same and nothing is done. (Beside :mod:`.positions`,
outside the server: ``pi-session check`` places problems as the language server does without
importing it.)

A lone ``\\r`` is one not followed by the ``\\n`` that ends its line; at the very end of a document
without a final ``\\n``, a ``\\r`` is lone too.
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Final, Protocol

from ..regular_file import open_regular, open_regular_status
from ..session import cache_dir
from .positions import to_column

#: how much of a file :func:`search_lone_crs` reads at a time
_CHUNK: Final = 1 << 20


class _Line(Protocol):
    raw: bytes


def lone_cr_offsets(raw: bytes, last: bool) -> list[int]:
    """Byte offsets just after each lone ``\\r`` of a line's bytes (``last``: the document's last
    line, which no ``\\n`` ends)."""
    offsets = []
    at = raw.find(b"\r")
    end = len(raw) - 1
    while at >= 0:
        if at < end or last:
            offsets.append(at + 1)
        at = raw.find(b"\r", at + 1)
    return offsets


class LoneCarriageReturns:
    """The lone ``\\r`` of one document, by session line: ``{line number: offsets}``."""

    def __init__(self) -> None:
        self._by_line: dict[int, list[int]] = {}
        self._lines: list[int] = []  # sorted line numbers
        self._before: list[int] = []  # extra LSP lines before each of them

    def __bool__(self) -> bool:
        return bool(self._by_line)

    def scan(self, lines: Sequence[_Line], numbers: Iterable[int] | None = None) -> None:
        """Find the lone ``\\r`` of ``lines`` (all, or the lines ``numbers`` after an edit; lines
        an edit moved are given by :meth:`shift` first)."""
        last = len(lines) - 1
        todo = range(len(lines)) if numbers is None else numbers
        if numbers is None:
            self._by_line = {}
        for n in todo:
            if 0 <= n <= last:
                offsets = lone_cr_offsets(lines[n].raw, n == last) if b"\r" in lines[n].raw else []
                if offsets:
                    self._by_line[n] = offsets
                else:
                    self._by_line.pop(n, None)
        self._index()

    def edited(self, lines: Sequence[_Line], first: int, removed: int, added: int) -> None:
        """Lines ``first .. first + removed - 1`` became ``added`` new lines."""
        if self._by_line:
            shift = added - removed
            moved: dict[int, list[int]] = {}
            for n, offsets in self._by_line.items():
                if n < first:
                    moved[n] = offsets
                elif n >= first + removed:
                    moved[n + shift] = offsets
            self._by_line = moved
        # the last two lines too: which line is last (its trailing "\r" lone) may have changed
        self.scan(lines, [*range(first, first + added), len(lines) - 2, len(lines) - 1])

    @classmethod
    def of_offsets(cls, by_line: dict[int, list[int]]) -> LoneCarriageReturns:
        """The lone ``\\r`` found elsewhere: ``{line number: offsets just after each}``."""
        found = cls()
        found._by_line = by_line
        found._index()
        return found

    def by_line(self) -> list[tuple[int, int]]:
        """(session line, how many lone ``\\r`` it holds), by line: what a client that breaks
        lines there needs to number a session's lines as its editor does."""
        return [(n, len(self._by_line[n])) for n in self._lines]

    def _index(self) -> None:
        self._lines = sorted(self._by_line)
        self._before = []
        total = 0
        for n in self._lines:
            self._before.append(total)
            total += len(self._by_line[n])

    def _extra_before(self, line: int) -> int:
        """Extra LSP lines (lone ``\\r``) in the session lines before ``line``."""
        k = bisect_left(self._lines, line)
        if k == 0:
            return 0
        previous = self._lines[k - 1]
        return self._before[k - 1] + len(self._by_line[previous])

    def to_lsp(self, line: int, offset: int) -> tuple[int, int]:
        """(LSP line, byte offset where that LSP line starts in the session line) of a byte offset."""
        if not self._by_line:
            return line, 0
        offsets = self._by_line.get(line, [])
        k = bisect_right(offsets, offset)
        return line + self._extra_before(line) + k, offsets[k - 1] if k else 0

    def line_number(self, line: int) -> int:
        """The number (from 1) the client gives the first of its lines in session line ``line``:
        the "line N" of the texts it is shown (the analysis' :attr:`SessionDocument.line_number`)."""
        return self.to_lsp(line, 0)[0] + 1

    def from_lsp(self, lsp_line: int) -> tuple[int, int, int]:
        """(session line, byte offset where the LSP line starts, where it ends or -1 for the
        session line's end) of an LSP line."""
        if not self._by_line:
            return lsp_line, 0, -1
        # the session line: the last one whose first LSP line is at or before lsp_line
        low, high = 0, len(self._lines)
        while low < high:  # lines with lone "\r" that start at or before lsp_line
            mid = (low + high) // 2
            n = self._lines[mid]
            if n + self._before[mid] <= lsp_line:
                low = mid + 1
            else:
                high = mid
        if low == 0:
            return lsp_line, 0, -1
        n = self._lines[low - 1]
        offsets = self._by_line[n]
        first = n + self._before[low - 1]
        inside = lsp_line - first
        if inside <= len(offsets):
            start = offsets[inside - 1] if inside else 0
            end = offsets[inside] - 1 if inside < len(offsets) else -1
            return n, start, end
        return lsp_line - self._before[low - 1] - len(offsets), 0, -1


@dataclass(frozen=True)
class LoneCrSearch:
    """The lone ``\\r`` of a file searched up to byte ``end`` (``{line number: offsets just after
    each}``), and where the search stopped: a search of the bytes appended since goes on from there
    (:func:`search_lone_crs`)."""

    by_line: dict[int, list[int]]  # (never changed: a search that goes on from this one copies it)
    end: int  # bytes searched
    line: int  # the line at ``end``
    line_start: int  # where it starts
    ends_with_cr: bool  # the last byte searched is a "\\r": lone only while nothing follows it

    def found(self) -> LoneCarriageReturns:
        return LoneCarriageReturns.of_offsets(dict(self.by_line))  # (which an edit may change)


def search_lone_crs(
    file: BinaryIO, since: LoneCrSearch | None = None, end: int | None = None
) -> LoneCrSearch:
    """The lone ``\\r`` of a file read from its position to its end (or to byte ``end``), without
    keeping its lines: a file pi wrote has none, and is only searched for a ``\\r``. Given ``since``
    (a search of the file's first ``since.end`` bytes), the file is read on from byte ``since.end``
    (its position then), and the finds of ``since`` are kept but for a ``\\r`` that was its last
    byte, which a ``\\n`` read now makes a CRLF."""
    # the line being read, where it starts, where ``data`` starts, and a "\\r" that ended the last
    # chunk (``held``: whether it is lone is told by the next byte)
    by_line, line, line_start, position, held = _going_on_from(since)
    ends_with_cr = False
    while True:
        size = _CHUNK if end is None else min(_CHUNK, end - position - len(held))
        chunk = file.read(size) if size > 0 else b""
        data = held + chunk
        if not data:
            break
        at_end = not chunk
        ends_with_cr = data.endswith(b"\r")
        held = b"" if at_end or not ends_with_cr else b"\r"
        scanned = len(data) - len(held)
        at = data.find(b"\r", 0, scanned)
        searched = 0
        while at >= 0:
            newlines = data.count(b"\n", searched, at)
            if newlines:
                line += newlines
                line_start = position + data.rfind(b"\n", searched, at) + 1
            searched = at
            if at + 1 == len(data) or data[at + 1] != 10:  # (the file's last byte: lone too)
                by_line.setdefault(line, []).append(position + at + 1 - line_start)
            at = data.find(b"\r", at + 1, scanned)
        newlines = data.count(b"\n", searched, scanned)
        if newlines:
            line += newlines
            line_start = position + data.rfind(b"\n", searched, scanned) + 1
        position += scanned
        if at_end:
            break
    return LoneCrSearch(by_line, position, line, line_start, ends_with_cr)


def _going_on_from(since: LoneCrSearch | None) -> tuple[dict[int, list[int]], int, int, int, bytes]:
    """Where :func:`search_lone_crs` starts: its finds, the line, where it starts, the position of
    the data read next and the ``"\\r"`` held before it."""
    if since is None:
        return {}, 0, 0, 0, b""
    by_line = dict(since.by_line)
    line = since.line
    if line in by_line:  # (the only line found more in: since's own list stays as it is)
        by_line[line] = by_line[line][:-1] if since.ends_with_cr else list(by_line[line])
        if not by_line[line]:
            del by_line[line]
    if since.ends_with_cr:  # judged again with the bytes after it
        return by_line, line, since.line_start, since.end - 1, b"\r"
    return by_line, line, since.line_start, since.end, b""


def lone_crs_of_file(file: BinaryIO, end: int | None = None) -> LoneCarriageReturns:
    """:func:`search_lone_crs` of the file from its position to its end (or to byte ``end``)."""
    return search_lone_crs(file, end=end).found()


def lone_crs_of_path(path: str, end: int | None = None) -> LoneCarriageReturns:
    """:func:`lone_crs_of_file` of the file at ``path``; none where it cannot be read (a FIFO is not
    waited on)."""
    try:
        with open(open_regular(path), "rb") as file:
            return lone_crs_of_file(file, end)
    except OSError:
        return LoneCarriageReturns()


@dataclass(frozen=True)
class SearchedFile:
    """The lone ``\\r`` of a file on disk, and what tells whether it only grew since
    (:func:`cache_dir.still_describes`); no ``stamp`` when it changed while it was read."""

    search: LoneCrSearch
    stamp: cache_dir.LinesStamp | None

    @property
    def identity(self) -> cache_dir.Identity | None:
        """The file's :func:`cache_dir.identity` when it was searched."""
        stamp = self.stamp
        return None if stamp is None else (stamp.dev, stamp.ino, stamp.size, stamp.mtime_ns, stamp.ctime_ns)


def search_file(path: str, before: SearchedFile | None = None) -> SearchedFile | None:
    """The lone ``\\r`` of the file at ``path``. When ``before`` searched the same file and it was
    only appended to since (session files are: same inode, the same bytes where the persistent
    index looks), only the bytes after ``before``'s end are read; else (shrunk, rewritten, renamed
    over) the whole file. None where it cannot be read (a FIFO is not waited on)."""
    try:
        fd, st = open_regular_status(path)
        with open(fd, "rb") as file:
            since = None
            if (
                before is not None
                and before.stamp is not None
                and cache_dir.still_describes(before.stamp, fd)
            ):
                since = before.search
                file.seek(since.end)
            search = search_lone_crs(file, since, st.st_size)  # (not bytes appended while it is read)
            stamp = cache_dir.stamp_lines(fd, search.end, st)
            if cache_dir.identity(os.fstat(fd)) != cache_dir.identity(st):
                return SearchedFile(search, None)  # changed while it was read: of two states maybe
            return SearchedFile(search, stamp)
    except (OSError, cache_dir.NotUsable):
        return None


def editor_line_end(raw: bytes, last: bool) -> int:
    """Where the editor's text of a session line (its bytes ``raw``; ``last``: the document's last
    line) ends: before the CR of a CRLF, which ends the line to the editor (a column past the
    line's end is the line's end, as the LSP says, never a place between the CR and the LF)."""
    if raw.endswith(b"\r") and not last:
        return len(raw) - 1
    return len(raw)


def lsp_position(
    lone_cr: LoneCarriageReturns, line: int, raw: bytes, offset: int, encoding: str, errors: str
) -> tuple[int, int]:
    """(LSP line, character in ``encoding``) of byte ``offset`` of session line ``line`` (its bytes
    ``raw``, the offset within what the editor shows of it)."""
    lsp_line, start = lone_cr.to_lsp(line, offset)
    return lsp_line, to_column(raw[start:] if start else raw, offset - start, encoding, errors)
