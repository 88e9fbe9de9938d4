"""All of a buffer written to a binary stream, whatever kind of stream it is.

A buffered stream (``sys.stdout.buffer`` normally) takes the whole buffer in one call. A raw one
does not: under ``python -u`` or ``PYTHONUNBUFFERED=1`` (set by many launchers and IDEs),
``sys.stdout.buffer`` is the raw file, whose ``write`` is one write() call. That call takes less
than it was given when a signal interrupts it once some bytes went through (the process stopped
with Ctrl-Z and continued, a debugger or profiler attaching), and nothing (None) when the
descriptor is non-blocking and full. Both ask the caller to write the rest: a reply cut short
leaves a JSON-RPC client waiting for bytes that never come, a command's output ends early.
"""

from __future__ import annotations

import select
from typing import BinaryIO


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
