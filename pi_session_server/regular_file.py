"""Opening a file to read it through, never waiting on it.

A path another program may change at any time (renamed over, replaced by a symlink) can name a
FIFO, whose open waits for a writer and whose read never ends, or a device such as ``/dev/zero``,
which is read until memory runs out. Such a file is refused: looked at before the open (it is not
opened at all), and again through the descriptor (the path may have changed in between), opened
with O_NONBLOCK so that the open itself cannot wait. A directory passes: its read reports EISDIR,
as before.
"""

from __future__ import annotations

import contextlib
import os

from .session.paths import special_file_kind


class NotRegularFile(OSError):
    """The path names a FIFO, a device or a socket (``strerror`` says which)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(None, f"not a regular file (a {kind})", path)
        self.kind = kind


def _refuse(path: str, mode: int) -> None:
    kind = special_file_kind(mode)
    if kind is not None:
        raise NotRegularFile(path, kind)


def open_regular(path: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """A descriptor (close-on-exec, blocking) of the file at ``path``, opened with ``flags`` (read
    only by default; with O_CREAT a missing file is made with ``mode``). Raises NotRegularFile for
    a FIFO, a device or a socket, and the OSError of the open."""
    return open_regular_status(path, flags, mode)[0]


def open_regular_status(path: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> tuple[int, os.stat_result]:
    """:func:`open_regular`, and the status of the file opened (its fstat)."""
    with contextlib.suppress(FileNotFoundError):  # (nothing there yet: the open says so, or makes it)
        _refuse(path, os.stat(path).st_mode)
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        st = os.fstat(fd)
        _refuse(path, st.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


__all__ = ["NotRegularFile", "open_regular", "open_regular_status"]
