"""The session file as a manager last left it or found it, to notice later what other programs did
to it."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ..format.scan import FileLineSource
from . import storage
from .environment import Environment


class Headerless(msgspec.Struct):
    """The followed file as a look last found it without a session header."""

    signature: tuple[int, int, int, int, int]  # inode, size, mtime, ctime and device when looked at
    since: float  # time.monotonic() when the file was first found so (restarts when it changes)
    told: bool = False  # "unreadable" was reported (until the file changes again)


def signature_of(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev


class FileTracking:
    """What a manager knows of its file as it last left it (its identity, size, times, last bytes,
    how many lines it holds). A base of :class:`.manager.SessionManager`, whose ``__init__`` sets
    this state (declared here for the type checker)."""

    _env: Environment
    _persist: bool
    _session_file: Any
    _source: FileLineSource | None
    _known_end: int
    _line_count: int
    _identity: storage.FileIdentity | None
    _marker: bytes
    _stamp: tuple[int, int] | None
    _out_of_sync: bool
    _headerless: Headerless | None
    _open_tail: bool

    def _track_file(
        self,
        path: str,
        line_count: int,
        end: int | None = None,
        open_tail: bool = False,
        *,
        fd: int = -1,
        read_at: os.stat_result | None = None,
    ) -> None:
        """Remember the file as we leave it (``end``: how far we read it; default: all of it), to
        notice later what others did to it.

        ``fd``: the descriptor it was read through. The file it is open on is the one remembered,
        not the one the path names by now: one renamed over it while it was read is another file,
        read whole by the next refresh. ``read_at``: its status before it was read, whose times are
        those remembered: a rewrite in place while or right after it was read (keeping its size)
        then shows as other times."""
        try:
            st = os.fstat(fd) if fd >= 0 else os.stat(self._disk(path))
        except OSError:
            self._identity = None
            return
        self._identity = storage.FileIdentity.of(st)
        self._stamp = times_of(read_at if read_at is not None else st)
        self._known_end = st.st_size if end is None else min(end, st.st_size)
        self._line_count = line_count
        self._out_of_sync = False
        self._headerless = None
        self._open_tail = open_tail
        if fd >= 0:
            self._marker = storage.tail_marker(fd, self._known_end)
        else:
            self._marker = self._read_marker(path, self._known_end)

    def _read_marker(self, path: str, end: int) -> bytes:
        try:
            fd = os.open(self._disk(path), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            return storage.tail_marker(fd, end)
        finally:
            os.close(fd)

    def _release_source(self) -> None:
        self._source = None  # entries still holding it keep it alive; it closes with them

    def _disk(self, path: str) -> str:
        """Where the system finds ``path`` (a relative path is in the environment's working
        directory)."""
        return self._env.on_disk(path)


def times_of(st: os.stat_result) -> tuple[int, int]:
    """A file's modification and change times (what a rewrite in place always changes)."""
    return st.st_mtime_ns, st.st_ctime_ns
