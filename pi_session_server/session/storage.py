"""File I/O for session files: whole-line appends, exclusive creation, rewrites, change detection.

Guarantees (beyond the reference, which just calls ``appendFileSync``):

* every append is one ``write()`` of whole lines on a descriptor opened with ``O_APPEND``, under an
  advisory ``flock`` (pi takes none, but two of our own processes serialize);
* an append never glues onto a partial line another process left behind: when the file does not end
  with ``"\\n"``, the line is prefixed with one (D11);
* writes by others between ours are detected (the file is not where we left it) and reported;
* a line of ours that lands after half a line of a writer that splits its lines is written again
  on a line of its own, so it exists exactly once as a valid line (finding #3);
* rewrites go to a temporary file in the same directory and replace the target atomically (the
  reference truncates in place: a crash in the middle would lose the session); a rewrite killed
  before its rename leaves no temporary file behind for good (finding #18, see :func:`rewrite_file`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from ..errors import FsError, fs_error_from_oserror


@dataclass(slots=True)
class WriteOutcome:
    """Where an append landed and what we found in the file before writing."""

    start: int  # byte offset where our bytes begin (after any separator; the copy that is valid)
    end: int  # byte offset just after our bytes
    size_before: int  # file size seen under the lock, before writing
    repaired_newline: bool  # we wrote a "\n" first because the file ended mid-line
    written_at: int = -1  # where our first write landed: size_before unless others wrote in between
    newlines_before: int = 0  # "\n" bytes in [lines_since, start) (see Appender.append)

    @property
    def interleaved(self) -> bool:
        """Another process wrote between our look at the file and our write."""
        return self.written_at != self.size_before


def _fs_error(err: OSError, syscall: str, path: str) -> FsError:
    return fs_error_from_oserror(err, syscall, path)


def _lock(fd: int) -> bool:
    """Take our advisory lock; False on a file system without flock (then we write unlocked, as pi does)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        return False
    return True


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    locked = _lock(fd)
    try:
        yield
    finally:
        if locked:
            _unlock(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_JSON_BLANK = b" \t\r"  # what JSON.parse skips before a value ("\n" ends the line)
_GLUE_LOOKBACK = 4096
_MAX_RELANDINGS = 4  # the 2nd brings its own "\n"; more only if a write() was split (broken FS)
_COUNT_CHUNK = 1 << 20


def _starts_its_line(fd: int, start: int) -> bool:
    """Does the line holding the bytes at ``start`` still parse as those bytes alone?

    True when only JSON whitespace lies between the previous ``"\\n"`` (or the start of the file) and
    ``start``. Anything else is a fragment of a foreign line our bytes were glued onto. (A blank run
    longer than the lookback counts as a fragment too: our line is then moved to a line of its own.)
    """
    lookback = min(start, _GLUE_LOOKBACK)
    before = os.pread(fd, lookback, start - lookback).rstrip(_JSON_BLANK)
    return before.endswith(b"\n") or (not before and lookback == start)


def count_newlines(fd: int, start: int, end: int) -> int:
    """The ``"\\n"`` bytes in ``[start, end)`` of ``fd`` (read in bounded chunks)."""
    count = 0
    while start < end:
        chunk = os.pread(fd, min(_COUNT_CHUNK, end - start), start)
        if not chunk:  # the file shrank underneath us
            break
        count += chunk.count(b"\n")
        start += len(chunk)
    return count


def append_lines(path: str, data: bytes, *, fsync: bool = False) -> WriteOutcome:
    """Append whole lines (``data`` ends with ``"\\n"``) to ``path`` (created if missing, like Node's 'a')."""
    with Appender(path) as appender:
        return appender.append(data, fsync=fsync)


class Appender:
    """An ``O_APPEND`` descriptor kept open across appends to one path.

    Before each append the path is stat'ed: if it now names another file (replaced, or deleted and
    created again) or nothing, the descriptor is reopened, so we never write into a file nobody can
    see any more. Each append: flock, fstat, (pread of the last byte when the size is not where we
    left it), one write(), lseek, unlock. Only when others wrote in between do more syscalls follow.
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

    def append(self, data: bytes, *, fsync: bool = False, lines_since: int = -1) -> WriteOutcome:
        """Append whole lines (``data`` ends with ``"\\n"``), landing as one valid copy.

        ``lines_since``: an offset at or before the end of the file as the caller last knew it. The
        outcome's ``newlines_before`` then counts the "\\n" bytes between it and our line (lines
        written by others, a separator we added), read under our lock: the caller can number our
        line at once. Nothing is read when nobody else wrote (our line starts at ``lines_since``).
        """
        try:
            st = os.stat(self.path)
            same = self.fd >= 0 and (st.st_dev, st.st_ino) == self.identity
        except FileNotFoundError:
            same = False
        if not same:
            self._open()
        fd = self.fd
        locked = _lock(fd)  # not `with _locked(fd)`: a generator context costs ~1 µs per append
        try:
            outcome = self._write_line(fd, data, fsync)
            if outcome.written_at != outcome.size_before:  # others wrote between fstat and write
                outcome = self._reland_if_glued(fd, data, outcome, fsync)
            if 0 <= lines_since < outcome.start:
                outcome.newlines_before = count_newlines(fd, lines_since, outcome.start)
        except OSError as err:
            raise _fs_error(err, "write", self.path) from err
        finally:
            if locked:
                _unlock(fd)
        return outcome

    def _write_line(self, fd: int, data: bytes, fsync: bool, separated: bool = False) -> WriteOutcome:
        """One write() of ``data`` at the end of the file, after a "\\n" if the file ends mid-line
        (or always, when ``separated``: then nobody can glue it, at worst it follows a blank line)."""
        size = os.fstat(fd).st_size
        payload = data
        if separated or (size > 0 and size != self.expected_end and os.pread(fd, 1, size - 1) != b"\n"):
            payload = b"\n" + data  # D11: never glue onto a partial line left behind
        _write_all(fd, payload)
        if fsync:
            os.fsync(fd)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        self.expected_end = end
        return WriteOutcome(end - len(data), end, size, payload is not data, end - len(payload))

    def _reland_if_glued(self, fd: int, data: bytes, first: WriteOutcome, fsync: bool) -> WriteOutcome:
        """Another process wrote between our look at the file and our write. If that ends mid-line
        (a writer that splits its lines into several writes), ours is glued onto it and that line
        is malformed (#3): blank our glued copy out and write the line again, until a copy starts a
        line of its own. From the second time on it brings its own "\\n", as such a writer can fall
        into step with us and hit the same window again and again; one write() is never interleaved
        with another, so that copy cannot be glued.

        Returns ``first`` (what we found on the way in) with the offsets of the valid copy.
        """
        landing = first
        for attempt in range(_MAX_RELANDINGS):
            if _starts_its_line(fd, landing.start):
                break
            self._blank_out(landing.start, len(data) - 1)
            landing = self._write_line(fd, data, fsync, separated=attempt > 0)
        return first if landing is first else replace(first, start=landing.start, end=landing.end)

    def _blank_out(self, offset: int, length: int) -> None:
        """Overwrite a glued copy of our line with spaces (its "\\n" stays).

        Its line then holds only the other writer's fragment, as if ours had never landed there, and
        no tool that splits glued lines apart can bring back a second copy of our entry. Our line is
        then written again, on a line of its own. O_APPEND ignores pwrite()'s offset on Linux, so
        this goes through a second descriptor, and only while the path still names our file.
        """
        fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == self.identity and st.st_size >= offset + length:
                os.pwrite(fd, b" " * length, offset)
        finally:
            os.close(fd)

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


_REWRITE_SUFFIX = ".pi-rewrite.tmp"
_TARGET_NAME_IN_TEMP = 100  # characters of the target's name kept in a temporary file's name


def _temporary_prefix(target_name: str) -> str:
    """Temporary files of a rewrite are named ``.<target name>.<random>.pi-rewrite.tmp``."""
    return f".{target_name[:_TARGET_NAME_IN_TEMP]}."


# st_dev -> whether an O_TMPFILE file can be given a name there. Naming goes through linkat() of
# /proc/self/fd/N (AT_EMPTY_PATH needs a privilege), which some sandboxes refuse (EXDEV): probe once.
_unnamed_files_work: dict[int, bool] = {}


def _can_write_unnamed(directory: str) -> bool:
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return False
    device = os.stat(directory).st_dev
    works = _unnamed_files_work.get(device)
    if works is None:
        works = _unnamed_files_work[device] = _probe_unnamed(directory)
    return works


def _probe_unnamed(directory: str) -> bool:
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError:  # EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP: a file system without it
        return False
    try:
        probe = _link_unnamed(fd, directory, "probe")
    except OSError:
        return False
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def rewrite_file(path: str, chunks: Iterable[bytes], *, fsync: bool = True) -> None:
    """Replace the content of ``path`` atomically (temp file + rename; symlinks are followed).

    A kill at any moment leaves the old content or the new one, complete (the rename is atomic and
    comes last). It must not leave a session-sized temporary file behind for good either (#18):

    * where the system allows it (Linux ``O_TMPFILE``), the new content goes into an unnamed file,
      which vanishes with a killed process; it gets a name only right before the rename (linkat()
      cannot replace a name), so only a kill between those two syscalls leaves a temporary file;
    * elsewhere it is written under its temporary name from the start;
    * every temporary file is ``flock``-ed by its writer until renamed, and before each rewrite the
      temporary files in the directory that nobody holds a lock on (their writer died) are removed.
      So what a kill left is gone with the next rewrite there (the next open of an interrupted
      migration is one), and a rewrite running in another process is never touched.
    """
    target = os.path.realpath(path)
    directory, name = os.path.split(target)
    directory = directory or "."
    mode = 0o644
    with contextlib.suppress(OSError):
        mode = os.stat(target).st_mode & 0o777
    try:
        _remove_abandoned_temporaries(directory)
        fd, tmp = _create_temporary(directory, name)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        # Held until the rename: the file is live. (A named file is created before it is locked; a
        # cleaner that takes it for abandoned in that one-syscall window makes our rename fail with
        # ENOENT, and the target keeps its old content.) Without flock, nothing is ever cleaned.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        with open(fd, "wb", closefd=False) as out:
            for chunk in chunks:
                out.write(chunk)
        if fsync:
            os.fsync(fd)
        os.fchmod(fd, mode)
        if tmp is None:
            tmp = _link_unnamed(fd, directory, name)
        os.replace(tmp, target)
    except BaseException as err:  # whatever stopped us (the chunks may raise too): leave nothing behind
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(err, OSError):
            raise _fs_error(err, "open", path) from err
        raise
    finally:
        os.close(fd)  # releases the lock, after the rename


def _create_temporary(directory: str, target_name: str) -> tuple[int, str | None]:
    """A new file for a rewrite: unnamed (name None) where possible, else named after the target."""
    if _can_write_unnamed(directory):
        return os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600), None
    return tempfile.mkstemp(prefix=_temporary_prefix(target_name), suffix=_REWRITE_SUFFIX, dir=directory)


def _link_unnamed(fd: int, directory: str, target_name: str) -> str:
    """Give the unnamed file ``fd`` a fresh temporary name (linkat cannot replace an existing name)."""
    for _ in range(100):
        candidate = os.path.join(
            directory, f"{_temporary_prefix(target_name)}{os.urandom(6).hex()}{_REWRITE_SUFFIX}"
        )
        try:
            os.link(f"/proc/self/fd/{fd}", candidate, follow_symlinks=True)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


def _remove_abandoned_temporaries(directory: str) -> None:
    """Remove what killed rewrites left in ``directory`` (see :func:`rewrite_file`)."""
    try:
        with os.scandir(directory) as entries:
            names = [e.path for e in entries if e.name.startswith(".") and e.name.endswith(_REWRITE_SUFFIX)]
    except OSError:
        return
    for leftover in names:
        _remove_if_abandoned(leftover)


def _remove_if_abandoned(path: str) -> None:
    """Unlink a temporary file unless its writer is alive (it holds the file's flock until its rename)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while a writer holds it (or without flock)
        os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def repair_trailing_newline(path: str) -> int:
    """The reference's load-time repair: append ``"\\n"`` to a file that does not end with one.
    Returns the offset the newline was written at (-1 when none was needed)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        with _locked(fd):
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                _write_all(fd, b"\n")
                return size
            return -1
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
