"""The LSP base protocol's framing: header lines, a blank line, then ``Content-Length`` bytes of body.

One codec for every side of the wire: the server's reader, :mod:`stdio_client` and the tests. It
never touches a stream itself: :class:`FrameDecoder` is fed whatever bytes arrive and hands back
the complete bodies, so a blocking reader, an asyncio reader and a test that sends broken bytes
all frame alike.

Headers are lines ending in ``\\n`` (or ``\\r\\n``); ``Content-Length`` is the only one read
(``Content-Type`` and others are accepted and ignored). A blank line ends the headers once a valid
``Content-Length`` was seen (a blank line before that is skipped). LSP headers are a few dozen
bytes: a header line longer than :data:`MAX_HEADER_LINE` is reported once as a
:class:`FramingError` and skipped up to its line break, so garbage without line breaks costs
neither memory nor time.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Protocol

#: the longest header line accepted, in bytes ("Content-Length: 2147483647\r\n" is 28)
MAX_HEADER_LINE = 1024
_CONTENT_LENGTH = b"content-length"


class FramingError(ValueError):
    """Bytes that are not a frame (a header line too long); the decoder has skipped them."""


def encode_frame(body: bytes) -> bytes:
    """One message as it goes on the wire."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameDecoder:
    """Bytes in (:meth:`feed`), message bodies out, in order."""

    def __init__(self, max_header_line: int = MAX_HEADER_LINE) -> None:
        self._max_header_line = max_header_line
        self._header = b""  # an unfinished header line
        self._length = -1  # the Content-Length of the frame whose headers are being read
        self._missing = 0  # bytes of the current body still to come
        # the current body so far, when it comes in more than one piece: copied in as each piece
        # arrives (while the next is on its way), and handed out without a copy at the end
        self._body: io.BytesIO | None = None
        self._skipping = False  # inside a header line too long to keep

    @property
    def missing(self) -> int:
        """How many bytes of the current body have not arrived yet (0 between frames): a reader
        can ask for exactly that many at once instead of chunk after chunk."""
        return self._missing

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """The bodies completed by ``data`` (and a :class:`FramingError` where bytes were skipped)."""
        out: list[bytes | FramingError] = []
        pos, end = 0, len(data)
        while pos < end:
            if self._missing:
                pos = self._take_body(data, pos, out)
            elif self._skipping:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    return out
                self._skipping = False
                pos = newline + 1
            else:
                pos = self._take_header_line(data, pos, out)
        return out

    def _take_body(self, data: bytes, pos: int, out: list[bytes | FramingError]) -> int:
        take = min(self._missing, len(data) - pos)
        self._missing -= take
        body = self._body
        if body is None:
            if not self._missing:  # the whole body in one piece
                out.append(data if pos == 0 and take == len(data) else data[pos : pos + take])
                return pos + take
            body = self._body = io.BytesIO()
        body.write(memoryview(data)[pos : pos + take])
        if not self._missing:
            self._body = None
            out.append(body.getvalue())  # CPython hands over its buffer: no copy of a big body
        return pos + take

    def _take_header_line(self, data: bytes, pos: int, out: list[bytes | FramingError]) -> int:
        newline = data.find(b"\n", pos, pos + self._max_header_line + 1 - len(self._header))
        if newline < 0:
            rest = len(data) - pos
            if len(self._header) + rest <= self._max_header_line:
                self._header += data[pos:]
                return len(data)
            self._header = b""
            self._skipping = True
            out.append(FramingError(f"header line longer than {self._max_header_line} bytes: skipped"))
            return pos + min(rest, self._max_header_line + 1)
        line = self._header + data[pos : newline + 1] if self._header else data[pos : newline + 1]
        self._header = b""
        self._header_line(line, out)
        return newline + 1

    def _header_line(self, line: bytes, out: list[bytes | FramingError]) -> None:
        if line == b"\r\n" or line == b"\n":
            if self._length < 0:
                return  # a blank line before any Content-Length: nothing to frame yet
            length, self._length = self._length, -1
            if length == 0:
                out.append(b"")
            else:
                self._missing = length
            return
        name, _, value = line.partition(b":")
        if name.strip().lower() == _CONTENT_LENGTH:
            text = value.strip()
            self._length = int(text) if text.isdigit() else -1


class _ChunkReader(Protocol):
    def read1(self, size: int = ..., /) -> bytes: ...


def read_frames(stream: _ChunkReader, chunk: int = 1 << 16) -> Iterator[bytes | FramingError]:
    """The frames of a blocking binary stream (``read1``: a pipe's ``BufferedReader``) until EOF."""
    decoder = FrameDecoder()
    while True:
        data = stream.read1(max(chunk, decoder.missing))
        if not data:
            return
        yield from decoder.feed(data)
