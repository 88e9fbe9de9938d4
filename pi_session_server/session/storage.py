"""File I/O for session files: whole-line appends, exclusive creation, rewrites, change detection.

Guarantees (beyond the reference, which just calls ``appendFileSync``):

* every append is one ``write()`` of whole lines on a descriptor opened with ``O_APPEND``, under an
  advisory ``flock`` (pi takes none, but two of our own processes serialize);
* an append never glues onto a partial line another process left behind: when the file does not end
  with ``"\\n"``, the line is prefixed with one (D10);
* writes by others between ours are detected (the file is not where we left it) and reported;
* rewrites go to a temporary file in the same directory and replace the target atomically (the
  reference truncates in place: a crash in the middle would lose the session).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import FsError, fs_error_from_oserror


@dataclass
class WriteOutcome:
    """Where an append landed and what we found in the file before writing."""

    start: int  # byte offset where our bytes begin (after any separator newline)
    end: int  # byte offset just after our bytes
    size_before: int  # file size seen under the lock, before writing
    repaired_newline: bool  # we wrote a "\n" first because the file ended mid-line


def _fs_error(err: OSError, syscall: str, path: str) -> FsError:
    return fs_error_from_oserror(err, syscall, path)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # e.g. a file system without flock: write unlocked, as pi does
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_lines(path: str, data: bytes, *, fsync: bool = False) -> WriteOutcome:
    """Append whole lines (``data`` ends with ``"\\n"``) to ``path`` (created if missing, like Node's 'a')."""
    with Appender(path) as appender:
        return appender.append(data, fsync=fsync)


class Appender:
    """An ``O_APPEND`` descriptor kept open across appends to one path.

    Before each append the path is stat'ed: if it now names another file (replaced, or deleted and
    created again) or nothing, the descriptor is reopened, so we never write into a file nobody can
    see any more. Each append: flock, fstat, (pread of the last byte when the size is not where we
    left it), one write(), lseek, unlock.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1
        self.identity: tuple[int, int] | None = None
        self.expected_end = -1  # where our last write ended (its last byte is "\n")

    def _open(self) -> None:
        self.close()
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise _fs_error(err, "open", self.path) from err
        st = os.fstat(self.fd)
        self.identity = (st.st_dev, st.st_ino)
        self.expected_end = -1

    def append(self, data: bytes, *, fsync: bool = False) -> WriteOutcome:
        try:
            st = os.stat(self.path)
            same = self.fd >= 0 and (st.st_dev, st.st_ino) == self.identity
        except FileNotFoundError:
            same = False
        if not same:
            self._open()
        fd = self.fd
        with _locked(fd):
            size = os.fstat(fd).st_size
            repaired = False
            if size > 0 and size != self.expected_end and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
                repaired = True
            try:
                _write_all(fd, data)
                if fsync:
                    os.fsync(fd)
            except OSError as err:
                raise _fs_error(err, "write", self.path) from err
            end = os.lseek(fd, 0, os.SEEK_CUR)
            self.expected_end = end
            start = end - len(data) + (1 if repaired else 0)
            return WriteOutcome(start, end, size, repaired)

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def create_exclusive(path: str, data: bytes, *, fsync: bool = False) -> None:
    """Create ``path`` with ``data``; EEXIST if it exists (Node's ``"wx"`` flag)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        with _locked(fd):
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
    except OSError as err:
        raise _fs_error(err, "write", path) from err
    finally:
        os.close(fd)


def rewrite_file(path: str, chunks: Iterable[bytes], *, fsync: bool = True) -> None:
    """Replace the content of ``path`` atomically (temp file + rename; symlinks are followed)."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    mode = 0o644
    with contextlib.suppress(OSError):
        mode = os.stat(target).st_mode & 0o777
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pi-session-", suffix=".tmp", dir=directory)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            if fsync:
                os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _fs_error(err, "open", path) from err


def repair_trailing_newline(path: str) -> None:
    """The reference's load-time repair: append ``"\\n"`` to a file that does not end with one."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        with _locked(fd):
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                _write_all(fd, b"\n")
    except OSError as err:
        raise _fs_error(err, "write", path) from err
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileIdentity:
    """What we remember about a file to notice changes made by others."""

    dev: int
    ino: int

    @staticmethod
    def of(st: os.stat_result) -> FileIdentity:
        return FileIdentity(st.st_dev, st.st_ino)


def tail_marker(fd: int, end: int, size: int = 64) -> bytes:
    """The last ``size`` bytes before ``end`` (to notice a rewrite that kept or grew the length)."""
    start = max(0, end - size)
    return os.pread(fd, end - start, start)
