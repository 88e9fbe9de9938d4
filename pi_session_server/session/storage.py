"""File I/O for session files: whole-line appends, exclusive creation, change detection.

Guarantees (beyond the reference, which just calls ``appendFileSync``):

* every append is one ``write()`` of whole lines on a descriptor opened with ``O_APPEND``, under an
  advisory ``flock`` taken on the file the path names *after* the lock is held: a file replaced while
  we waited for its lock (a repair or migration renamed its rewrite over the path) is let go and the
  new one locked, so an append never lands in a file nobody can see any more;
* an append never glues onto a partial line another process left behind: when the file does not end
  with ``"\\n"``, the line is prefixed with one (D11); when that look caught another writer's line
  halfway through its ``write()``, the separator turns out to stand after a complete line, and is
  overwritten with a space, so it leaves no blank line;
* writes by others between ours are detected (the file is not where we left it) and reported;
* a line of ours that lands after half a line of a writer that splits its lines is written again
  on a line of its own, so it exists exactly once as a valid line.

Whole-file rewrites (temporary file, checks under the lock, rename) are in :mod:`.rewrites`.

Paths are the reference's strings: a relative one names a file in the working directory of the
``env`` given (see :mod:`.environment`), and errors name it as given, as Node's do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator

import msgspec

from ..errors import FsError, NotRegularFileError, StaleFileError, fs_error_from_oserror
from ..regular_file import NotRegularFile, open_regular_status
from .descriptors import OwnedDescriptor
from .environment import Environment, on_disk


class WriteOutcome(msgspec.Struct):
    """Where an append landed and what we found in the file before writing."""

    start: int  # byte offset where our bytes begin (after any separator; the copy that is valid)
    end: int  # byte offset just after our bytes
    size_before: int  # file size seen under the lock, before writing
    repaired_newline: bool  # we wrote a "\n" first because the file ended mid-line
    written_at: int = -1  # where our first write landed: size_before unless others wrote in between
    newlines_before: int = 0  # "\n" bytes in [lines_since, start) (see Appender.append)
    # (mtime, ctime) of the file under the lock before our write, and after it (see _times)
    times_before: tuple[int, int] = (0, 0)
    times_after: tuple[int, int] = (0, 0)

    @property
    def interleaved(self) -> bool:
        """Another process wrote between our look at the file and our write."""
        return self.written_at != self.size_before


def open_session_file(
    disk_path: str, path: str, flags: int = os.O_RDONLY, mode: int = 0o666
) -> tuple[int, os.stat_result]:
    """:func:`.regular_file.open_regular_status` of a session file (``path`` as the caller named
    it, ``disk_path`` where it is): a FIFO, a device or a socket there is NotRegularFileError, the
    library's refusal (-32010 on the wire); any other failure is the open's OSError."""
    try:
        return open_regular_status(disk_path, flags, mode)
    except NotRegularFile as err:
        raise NotRegularFileError(path, err.kind) from err


def _fs_error(err: OSError, syscall: str, path: str) -> FsError:
    return fs_error_from_oserror(err, syscall, path)


def _times(st: os.stat_result) -> tuple[int, int]:
    """A file's modification and change times: every write changes them, a rewrite in place too."""
    return st.st_mtime_ns, st.st_ctime_ns


def lock(fd: int) -> bool:
    """Take our advisory lock; False on a file system without flock (then we write unlocked, as pi does)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        return False
    return True


def unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    locked = lock(fd)
    try:
        yield
    finally:
        if locked:
            unlock(fd)


def names(path: str, fd: int) -> bool:
    """Does ``path`` name the file open as ``fd`` (not another one that replaced it, or nothing)?"""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


# A file replaced again each time we got its lock: a rewrite loop of another process. Give up after
# this many files rather than spin.
MAX_REOPENS = 100


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it was given)."""
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


def _ends_mid_line(fd: int, size: int) -> bool:
    """Does a file of ``size`` bytes end inside a line, so that a line appended now would be glued
    onto it? Not when it ends with "\\n", nor when only JSON whitespace follows its last "\\n" (a
    separator we blanked out, see :func:`repair_trailing_newline`): a line appended there parses."""
    if size == 0:
        return False
    last = os.pread(fd, 1, size - 1)
    if last == b"\n":
        return False
    if last and last in _JSON_BLANK:
        return not _starts_its_line(fd, size)
    return True


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


def append_lines(
    path: str, data: bytes, *, fsync: bool = False, env: Environment | None = None
) -> WriteOutcome:
    """Append whole lines (``data`` ends with ``"\\n"``) to ``path`` (created if missing, like Node's 'a')."""
    with Appender(path, env) as appender:
        return appender.append(data, fsync=fsync)


class Appender(OwnedDescriptor):
    """An ``O_APPEND`` descriptor kept open across appends to one path.

    Each append takes the lock, then stats the path: if it now names another file (replaced, or
    deleted and created again) or nothing, the lock is let go and the descriptor reopened, so we
    never write into a file nobody can see any more. Each append: flock, stat, fstat, (pread of the
    last byte when the file is not as our last write left it), one write(), lseek, fstat, unlock.
    Only when others wrote in between do more syscalls follow.

    "As our last write left it" is its size *and* its modification and change times: an editor that
    saves the file in place keeping its size may have dropped the final newline our line ended
    with, and only the times tell that save.
    """

    def __init__(self, path: str, env: Environment | None = None) -> None:
        super().__init__()  # (opened by the first append)
        self.path = path
        self.disk_path = on_disk(path, env)
        self.identity: tuple[int, int] | None = None
        self.expected_end = -1  # where our last write ended (its last byte is "\n")
        # (size, mtime, ctime) just after our last write when the file then ended with it: while
        # the file is found so, it ends with our "\n" and its last byte need not be read
        self.left_as: tuple[int, int, int] | None = None
        # a file that replaced the caller's and that :meth:`append`'s ``receives`` accepted
        self.accepted: tuple[int, int] | None = None

    def _lock_current(self) -> tuple[int, bool]:
        """Our descriptor, locked, on the file the path names now (reopened when it names another).

        The path is checked *after* the lock is held: a rewrite holds the lock until it has renamed
        its new file over the path, so an append that waited for it must follow the path to the new
        file instead of writing into the old one."""
        for _ in range(MAX_REOPENS):
            if self.fd < 0:
                self._open()
            fd = self.fd
            locked = lock(fd)
            try:
                st = os.stat(self.disk_path)
                if (st.st_dev, st.st_ino) == self.identity:
                    return fd, locked
            except FileNotFoundError:
                pass  # deleted: appending creates it again (Node's 'a' flag)
            except OSError:
                if locked:
                    unlock(fd)
                raise
            if locked:
                unlock(fd)
            self.close()
        raise StaleFileError(f"{self.path} is replaced again and again by another process")

    def _open(self) -> None:
        """Open the file the path names (created if missing). Another program may have put a FIFO
        or a device there (renamed over our file): it is refused (NotRegularFileError) without a
        byte written, as a write to a FIFO waits for a reader for good. It is looked at before the
        open, and the file opened is checked again (without waiting: O_NONBLOCK) in case it was
        swapped in between."""
        self.close()
        try:
            fd, st = open_session_file(self.disk_path, self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as err:
            raise _fs_error(err, "open", self.path) from err
        self.fd = fd
        self.identity = (st.st_dev, st.st_ino)
        self.forget_end()

    def forget_end(self) -> None:
        """Read the last byte before the next append (the file was read again: it may have been
        rewritten within the times' granularity of our last write)."""
        self.expected_end = -1
        self.left_as = None

    def append(
        self,
        data: bytes,
        *,
        fsync: bool = False,
        lines_since: int = -1,
        loaded: tuple[int, int] | None = None,
        receives: Callable[[int], None] | None = None,
    ) -> WriteOutcome:
        """Append whole lines (``data`` ends with ``"\\n"``), landing as one valid copy.

        ``lines_since``: an offset at or before the end of the file as the caller last knew it. The
        outcome's ``newlines_before`` then counts the "\\n" bytes between it and our line (lines
        written by others, a separator we added), read under our lock: the caller can number our
        line at once. Nothing is read when nobody else wrote (our line starts at ``lines_since``).

        ``loaded``: the file (device, inode) the caller's lines belong after. When the path names
        another one by the time the lock is held (renamed over it: another program's save, or a
        rewrite of ours whose rename this append waited for), ``receives`` is given the locked
        descriptor of that file first, and raises to refuse it: nothing is written. A file it
        accepted is not asked again (what follows the lines written there is there). An empty file
        is not asked: the path was deleted and the append makes it again, as Node's ``'a'`` does.
        """
        try:
            fd, locked = self._lock_current()
        except OSError as err:
            raise _fs_error(err, "open", self.path) from err
        try:
            if loaded is not None and receives is not None:
                self._ask_if_replaced(fd, loaded, receives)
            outcome = self._write_line(fd, data, fsync)
            if outcome.written_at != outcome.size_before:  # others wrote between fstat and write
                if outcome.repaired_newline:
                    self._drop_needless_separator(fd, outcome)
                else:
                    outcome = self._reland_if_glued(fd, data, outcome, fsync)
            if 0 <= lines_since < outcome.start:
                outcome.newlines_before = count_newlines(fd, lines_since, outcome.start)
            after = os.fstat(fd)
            outcome.times_after = _times(after)
            ours_last = after.st_size == self.expected_end
            self.left_as = (after.st_size, *outcome.times_after) if ours_last else None
        except OSError as err:
            raise _fs_error(err, "write", self.path) from err
        finally:
            if locked:
                unlock(fd)
        return outcome

    def _ask_if_replaced(self, fd: int, loaded: tuple[int, int], receives: Callable[[int], None]) -> None:
        """:meth:`append`'s look at a file that replaced the one its lines belong after."""
        if self.identity in (loaded, self.accepted) or os.fstat(fd).st_size == 0:
            return
        receives(fd)
        self.accepted = self.identity

    def _write_line(self, fd: int, data: bytes, fsync: bool, separated: bool = False) -> WriteOutcome:
        """One write() of ``data`` at the end of the file, after a "\\n" if the file ends mid-line
        (or always, when ``separated``: then nobody can glue it, at worst it follows a blank line)."""
        st = os.fstat(fd)
        size, times = st.st_size, _times(st)
        as_we_left_it = self.left_as == (size, *times)
        payload = data
        if separated or (not as_we_left_it and _ends_mid_line(fd, size)):
            payload = b"\n" + data  # D11: never glue onto a partial line left behind
        write_all(fd, payload)
        if fsync:
            os.fsync(fd)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        self.expected_end = end
        return WriteOutcome(
            end - len(data), end, size, payload is not data, end - len(payload), times_before=times
        )

    def _drop_needless_separator(self, fd: int, outcome: WriteOutcome) -> None:
        """We put a "\\n" before our line because the file seemed to end mid-line, and others wrote
        before our write landed. When that look caught a line in the middle of its ``write()`` (the
        file's size grows page by page while a big line is copied in), the line was finished by
        the time ours landed, and our separator stands after its "\\n": a blank line.
        It is overwritten with a space, which keeps our line valid (JSON.parse skips it) and every
        line where it was."""
        if not _ends_mid_line(fd, outcome.written_at):
            self._blank_out(outcome.written_at, 1)
            outcome.repaired_newline = False

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
        return (
            first
            if landing is first
            else msgspec.structs.replace(first, start=landing.start, end=landing.end)
        )

    def _blank_out(self, offset: int, length: int) -> None:
        assert self.identity is not None
        _blank_out(self.disk_path, self.identity, offset, length)

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _blank_out(disk_path: str, identity: tuple[int, int], offset: int, length: int) -> None:
    """Overwrite bytes we wrote with spaces: a glued copy of our line (its "\\n" stays) or a
    needless separator of ours.

    A glued copy's line then holds only the other writer's fragment, as if ours had never landed
    there, and no tool that splits glued lines apart can bring back a second copy of our entry. A
    space where a newline stood joins the line after it, which JSON.parse reads as before. O_APPEND
    ignores pwrite()'s offset on Linux, so this goes through a second descriptor, and only while
    the path still names the file we wrote (``identity``: device and inode).
    """
    # (O_NONBLOCK: a FIFO renamed over the path meanwhile fails at once instead of waiting)
    fd = os.open(disk_path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == identity and st.st_size >= offset + length:
            os.pwrite(fd, b" " * length, offset)
    finally:
        os.close(fd)


def create_exclusive(path: str, data: bytes, *, fsync: bool = False, env: Environment | None = None) -> None:
    """Create ``path`` with ``data``; EEXIST if it exists (Node's ``"wx"`` flag). ``fsync``: the
    file and then its directory (which holds its name: without it a power cut may lose the file)."""
    disk_path = on_disk(path, env)
    try:
        fd = os.open(disk_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise _fs_error(err, "open", path) from err
    try:
        with _locked(fd):
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
    except OSError as err:
        raise _fs_error(err, "write", path) from err
    finally:
        os.close(fd)
    if fsync:
        fsync_directory(os.path.dirname(disk_path) or ".")


def fsync_directory(directory: str) -> None:
    """``fsync`` a directory, making the names it holds durable. Never an error: the data is
    written already, and some file systems cannot sync a directory (they answer EINVAL)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# How long a partial last line is watched before it is taken for one its writer left: a write()
# under way grows the file page by page, many times in this long.
WRITER_SETTLE = 0.01


def _still_growing(fd: int, size: int) -> bool:
    """Does the file grow past ``size`` within :data:`WRITER_SETTLE` (a writer is writing its line)?"""
    time.sleep(WRITER_SETTLE)
    return os.fstat(fd).st_size != size


def repair_trailing_newline(
    path: str, env: Environment | None = None, read: FileIdentity | None = None
) -> int:
    """The reference's load-time repair: append ``"\\n"`` to a file that does not end with one.
    Returns the offset the newline was written at (-1 when none was needed). Like an append, it
    writes only into the file the path names once the lock is held; with ``read`` (the file the
    caller read), only when that is the file read: a file renamed over it since is another file,
    whose last line the caller knows nothing of (-1).

    Only JSON whitespace after the last ``"\n"`` (a newline of ours blanked out, below) is no
    partial line: a line appended there parses, where pi's repair would leave a blank line.

    A file that ends mid-line may only have been caught in the middle of another writer's
    ``write()`` of a big line (pi appends without a lock): the file grows page by page while it is
    copied in. A tail still growing is left to its writer (-1). When the writer finished its line
    between our look and our write all the same (stalled in its ``write()`` while we looked), our
    newline lands after that line's own: a blank line. It is overwritten with a space, as an
    append's needless separator is, and -1 returned (the newline finished nothing)."""
    disk_path = on_disk(path, env)
    for _ in range(MAX_REOPENS):
        try:
            fd = open_session_file(disk_path, path, os.O_RDWR | os.O_APPEND)[0]
        except OSError as err:
            raise _fs_error(err, "open", path) from err
        try:
            with _locked(fd):
                if not names(disk_path, fd):
                    continue  # replaced while we waited for the lock: look at the new file
                found = os.fstat(fd)
                if read is not None and FileIdentity.of(found) != read:
                    return -1
                size = found.st_size
                if not _ends_mid_line(fd, size) or _still_growing(fd, size):
                    return -1
                write_all(fd, b"\n")
                written_at = os.lseek(fd, 0, os.SEEK_CUR) - 1
                if written_at == size:
                    return size
                if not _ends_mid_line(fd, written_at):
                    own = os.fstat(fd)
                    _blank_out(disk_path, (own.st_dev, own.st_ino), written_at, 1)
                    return -1
                return written_at
        except OSError as err:
            raise _fs_error(err, "write", path) from err
        finally:
            os.close(fd)
    raise StaleFileError(f"{path} is replaced again and again by another process")


class FileIdentity(msgspec.Struct, frozen=True):
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


# How long a file that shrank in place is given to be written again before it is taken as it is.
REWRITE_WAIT = 0.1
REWRITE_POLL = 0.01
# How long (seconds) a followed file without a session header must hold still before it is taken
# for what it is ("unreadable": not a session now) rather than a rewrite still under way
# ("rewriting"): longer than an editor's or a shell's rewrite takes, short enough to say so soon.
UNREADABLE_AFTER = 2.0


def settle_after_shrink(path: str, identity: FileIdentity | None, known_end: int) -> os.stat_result | None:
    """``path``'s stat, after a moment's wait when it is the file we know and it is empty or
    shorter than we left it: another program is then writing it again in place (truncate, then
    write). Waits until it is as long as we left it or holds still, at most ``REWRITE_WAIT``
    seconds (an empty file is never taken as done: it is waited for to the end). None: no file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if identity is None or FileIdentity.of(st) != identity or 0 < st.st_size >= known_end:
        return st
    deadline = time.monotonic() + REWRITE_WAIT
    last = (st.st_size, st.st_mtime_ns)
    while time.monotonic() < deadline:
        time.sleep(REWRITE_POLL)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        now = (st.st_size, st.st_mtime_ns)
        if st.st_size >= known_end or (now == last and st.st_size > 0):
            break
        last = now
    return st
