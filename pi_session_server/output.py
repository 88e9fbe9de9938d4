"""All of a buffer written to a binary stream, whatever kind of stream it is.

A buffered stream (``sys.stdout.buffer`` normally) takes the whole buffer in one call. A raw one
does not: under ``python -u`` or ``PYTHONUNBUFFERED=1`` (set by many launchers and IDEs),
``sys.stdout.buffer`` is the raw file, whose ``write`` is one write() call. That call takes less
than it was given when a signal interrupts it once some bytes went through (the process stopped
with Ctrl-Z and continued, a debugger or profiler attaching), and nothing (None) when the
descriptor is non-blocking and full. Both ask the caller to write the rest: a reply cut short
leaves a JSON-RPC client waiting for bytes that never come, a command's output ends early.
:func:`write_fully` writes the rest; :func:`buffer_raw_std_streams` does the same for what the
command line prints, at its start.
"""

from __future__ import annotations

import io
import select
import sys
from typing import BinaryIO, TextIO


def write_fully(stream: BinaryIO, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``stream``, waiting for room when it is non-blocking and full."""
    view = memoryview(data).cast("B")
    while view:
        try:
            written = stream.write(view)
        except BlockingIOError as full:  # a buffered stream on a non-blocking descriptor
            written = full.characters_written
        if not written:  # (None: a raw non-blocking stream had no room)
            _wait_for_room(stream)
            continue
        view = view[written:]


def flush_fully(stream: BinaryIO) -> None:
    """Flush ``stream``, waiting for room when it is non-blocking and full."""
    while True:
        try:
            stream.flush()
            return
        except BlockingIOError:
            _wait_for_room(stream)


def _wait_for_room(stream: BinaryIO) -> None:
    select.select([], [stream.fileno()], [])


def buffer_raw_std_streams() -> None:
    """Give stdout and stderr a buffered layer where they write to the raw file (``python -u``).

    Text printed there goes through ``TextIOWrapper``, which hands each piece to the raw file in
    one write() call and ignores how much it took: an interrupted write loses the rest of the piece
    (a line of ``check``, a chunk of ``repair -o -``'s session). A ``BufferedWriter`` writes until
    all is out. Lines still appear as they are printed (line buffering). The new layers write to a
    raw file of their own (the same descriptor, not closed with them): the original streams stay
    as they were, as ``sys.__stdout__`` and ``sys.__stderr__``.
    """
    sys.stdout = _buffered(sys.stdout)
    sys.stderr = _buffered(sys.stderr)
    # a text layer closes its buffer when collected: the server keeps stdout's buffer and points
    # sys.stdout elsewhere, so the layers live as long as the process, as the original ones do
    _std_streams.extend((sys.stdout, sys.stderr))


_std_streams: list[TextIO] = []


def _buffered(stream: TextIO) -> TextIO:
    if not isinstance(stream, io.TextIOWrapper) or not isinstance(stream.buffer, io.RawIOBase):
        return stream  # already buffered, or not a file
    stream.flush()
    raw = io.FileIO(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors, line_buffering=True
    )
