"""Where a line of a :class:`.document.SessionDocument` reads its bytes again, when it does not hold
them: the text a ``quick`` load read (:class:`TextBytes`, until the document is finished), or the
file it was read from (:class:`FileBytes`, :class:`FileRanges`). A line's place in its source is
one int (:func:`text_place`, or a line number), so that a multi-GB session costs the memory of its
line facts, not of its bytes (:class:`FileLineInfo`)."""

from __future__ import annotations

import contextlib
import os
from array import array
from typing import Any

from .lines import LineInfo, timestamp_of

#: a line's place in a text is one int: its offset above these bits, its length in them (one int
#: per line costs a third of an (offset, length) pair)
_LENGTH_BITS = 48
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


class TextBytes:
    """Copies lines out of the text a ``quick`` load read (until :meth:`SessionDocument.finish`); a
    line's place is :func:`text_place`."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, place: int) -> bytes:
        offset = place >> _LENGTH_BITS
        return self.data[offset : offset + (place & _LENGTH_MASK)]

    def length(self, place: int) -> int:
        return place & _LENGTH_MASK

    def read_end(self, place: int, count: int) -> bytes:
        """The last ``count`` bytes of the line at ``place`` (or all of it)."""
        end = (place >> _LENGTH_BITS) + (place & _LENGTH_MASK)
        return self.data[end - min(count, place & _LENGTH_MASK) : end]


def text_place(offset: int, length: int) -> int:
    return offset << _LENGTH_BITS | length


class FileBytes:
    """Reads lines of one open file again (the descriptor stays on the inode analysed). A line's
    place is its number in the file when it was read, which is also its ``line`` until an edit
    above it: one int for both, the offsets in one array (an int of its own per line would cost
    several times its 8 bytes there)."""

    __slots__ = ("fd", "starts")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        #: where each line of the file starts, then where a line after the last would (past its
        #: "\n", there or not)
        self.starts = array("q")

    def read(self, place: int) -> bytes:
        offset = self.starts[place]
        length = self.starts[place + 1] - 1 - offset
        return os.pread(self.fd, length, offset) if length else b""

    def length(self, place: int) -> int:
        return self.starts[place + 1] - 1 - self.starts[place]

    def read_end(self, place: int, count: int) -> bytes:
        """The last ``count`` bytes of the line at ``place`` (or all of it)."""
        end = self.starts[place + 1] - 1
        count = min(count, end - self.starts[place])
        return os.pread(self.fd, count, end - count) if count > 0 else b""

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class FileRanges:
    """Reads lines of an open file by their byte range: the lines a splice cuts out of a line of
    the file (a glued line's pieces, each on a line of its own), read from it as the line was. A
    line's place is :func:`text_place` of its offset in the file. Holds the file's
    :class:`FileBytes`, which keeps its descriptor open."""

    __slots__ = ("file",)

    def __init__(self, file: FileBytes) -> None:
        self.file = file

    def read(self, place: int) -> bytes:
        length = place & _LENGTH_MASK
        return os.pread(self.file.fd, length, place >> _LENGTH_BITS) if length else b""

    def length(self, place: int) -> int:
        return place & _LENGTH_MASK

    def read_end(self, place: int, count: int) -> bytes:
        """The last ``count`` bytes of the line at ``place`` (or all of it)."""
        length = place & _LENGTH_MASK
        count = min(count, length)
        end = (place >> _LENGTH_BITS) + length
        return os.pread(self.file.fd, count, end - count) if count > 0 else b""


LineBytesSource = FileBytes | TextBytes | FileRanges
RAW_SLOT: Any = LineInfo.__dict__["raw"]
_TIMESTAMP_SLOT: Any = LineInfo.__dict__["timestamp"]


class FileLineInfo(LineInfo):
    """A line that keeps where it is in place of its bytes: ``raw`` reads them again (only
    diagnostics' ranges and columns ask, for the lines they are on). A line of a file on disk is
    what lets ``pi-session check`` analyse a multi-GB session in the memory of its line facts; a
    provisional line of a ``quick`` load keeps its place in the text read, so that the first pass
    copies no line (:meth:`SessionDocument.finish` gives each line its own bytes). A line of a
    file also reads its timestamp again when it did not keep it (``keep_timestamp`` of
    :func:`lines.scan_line`)."""

    __slots__ = ()

    def keep_place(self, source: LineBytesSource, place: int) -> None:
        """Read the line's bytes from ``source`` at ``place`` (as ``source`` counts) from now on."""
        self.source = source
        RAW_SLOT.__set__(self, place)

    @property
    def raw(self) -> bytes:
        stored = RAW_SLOT.__get__(self, LineInfo)
        if type(stored) is bytes:
            return stored
        source: LineBytesSource = self.source
        return source.read(stored)

    @raw.setter
    def raw(self, value: Any) -> None:
        RAW_SLOT.__set__(self, value)

    @property
    def byte_length(self) -> int:
        stored = RAW_SLOT.__get__(self, LineInfo)
        if type(stored) is bytes:
            return len(stored)
        source: LineBytesSource = self.source
        return source.length(stored)

    def last_bytes(self, count: int) -> bytes:
        stored = RAW_SLOT.__get__(self, LineInfo)
        if type(stored) is bytes:
            return stored[-count:] if count > 0 else b""
        source: LineBytesSource = self.source
        return source.read_end(stored, count)

    @property
    def timestamp(self) -> Any:
        try:
            return _TIMESTAMP_SLOT.__get__(self, LineInfo)
        except AttributeError:
            return timestamp_of(self.raw)

    @timestamp.setter
    def timestamp(self, value: Any) -> None:
        _TIMESTAMP_SLOT.__set__(self, value)
