"""Whole-file rewrites of a session file: under its lock, checked just before the rename.

A rewrite (a migration, a repair, the header of a new session) writes the new content to a
temporary file in the same directory and renames it over the path, so a crash leaves the old file
or the new one, complete (D12; the reference truncates in place). Nothing another writer wrote may
be lost to it:

* it holds the ``flock`` of the file it replaces, from before the content is read until after the
  rename (:class:`LockedFile`); our appenders wait, then follow the path to the new file
  (:class:`~.storage.Appender` checks the path once it holds the lock);
* pi takes no lock. So once the new content is written and ``fsync``-ed, right before the rename,
  the file is compared with what the new content was computed from (:class:`FileState`: device,
  inode, size, mtime, change time and its last bytes). Lines appended meanwhile are copied into
  the new file when the caller allows it (a repair); any other change refuses the rewrite with
  :class:`~pi_session_server.errors.StaleFileError` and nothing is written (a migration then reads
  the file again);
* what reaches the old file in the instant between that check and the rename is found after it,
  through the descriptor still open on the old file: appended lines are appended to the new file;
  any other change (pi rewriting the file in place) puts the other writer's version back, and the
  rewrite is refused.

A rewrite killed before its rename must not leave a session-sized temporary file behind for good
either (#18):

* where the system allows it (Linux ``O_TMPFILE``), the new content goes into an unnamed file,
  which vanishes with a killed process; it gets a name only right before the rename (linkat()
  cannot replace a name), so only a kill between those two syscalls leaves a temporary file;
* elsewhere it is written under its temporary name from the start;
* every temporary file is ``flock``-ed by its writer until renamed, and before each rewrite the
  temporary files in the directory that nobody holds a lock on (their writer died) are removed.
  So what a kill left is gone with the next rewrite there (the next open of an interrupted
  migration is one), and a rewrite running in another process is never touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterable

import msgspec

from ..errors import StaleFileError, fs_error_from_oserror
from ..regular_file import open_regular
from .environment import Environment, on_disk
from .storage import MAX_REOPENS, fsync_directory, lock, names, open_session_file, tail_marker, write_all

__all__ = [
    "FileState",
    "LockedFile",
    "Replaced",
    "replace_in_place",
    "rewrite_file",
    "rewritten_after",
    "same_file",
]


class FileState(msgspec.Struct, frozen=True):
    """What new content was computed from: which file (device, inode), its size, when it last
    changed and its last bytes. A writer that touched the file since changed one of them."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    # The inode's change time, which no program can set: one that rewrites the file in place keeping
    # its size and last bytes and then sets its mtime back (``rsync --inplace -t``, ``os.utime``)
    # still moves it. A link or a rename moves it too (see :meth:`same_bytes`).
    ctime_ns: int
    tail: bytes  # the last bytes before ``size``

    @staticmethod
    def of(fd: int) -> FileState:
        st = os.fstat(fd)
        return FileState(
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, tail_marker(fd, st.st_size)
        )

    def same_bytes(self, other: FileState) -> bool:
        """The same file with the same bytes as far as its size, mtime and tail tell, whatever its
        change time: for a look after our own link or rename moved that (then a rewrite that sets
        the mtime back goes unseen, in that instant only)."""
        return msgspec.structs.replace(other, ctime_ns=self.ctime_ns) == self

    def ends_a_line(self) -> bool:
        return self.size == 0 or self.tail.endswith(b"\n")


class Replaced(msgspec.Struct):
    """What a rewrite wrote: the new content, then what others appended to the file meanwhile."""

    written: int  # bytes of the new content
    kept: int = 0  # bytes others appended meanwhile, copied after it
    state: FileState | None = None  # the new file as we left it


# How long a writer that is still at it (a line half written, a rewrite in place) is waited for.
SETTLE_POLL = 0.01
SETTLE_LIMIT = 1.0
# How long the old file must hold still before a rewrite in place found on it after our rename is
# put back: such a writer truncated the file and has its content still to write (a shell's
# `cat backup > FILE`, descheduled between the two on a busy machine, pauses far longer than an
# appender within a line).
REWRITE_STILL = 0.2
# Rounds of copying what others appended before the rename, before giving up on a file that never
# holds still for a moment.
_MAX_CATCH_UPS = 50
_COPY_CHUNK = 1 << 20


class LockedFile:
    """A session file opened and ``flock``-ed for a rewrite (symlinks followed, as pi does).

    The lock is taken first and the path checked after it: a file that was replaced while we
    waited (another rewrite renamed its result over the path) is let go and the new one locked,
    so the lock always belongs to the file the path names. A missing file is not created: ``fd``
    is -1 and :meth:`replace` creates the path only if nobody else did meanwhile.
    """

    def __init__(self, path: str, env: Environment | None = None) -> None:
        self.path = path  # as the caller spells it (relative: in ``env``'s working directory), for errors
        self.target = os.path.realpath(on_disk(path, env))
        self.fd = -1
        for _ in range(MAX_REOPENS):
            try:
                # a FIFO or a device renamed over the session file is refused, never waited on
                fd = open_session_file(self.target, path)[0]
            except FileNotFoundError:
                return
            except OSError as err:
                raise fs_error_from_oserror(err, "open", path) from err
            lock(fd)
            try:
                if names(self.target, fd):
                    self.fd = fd
                    return
            except OSError as err:
                os.close(fd)
                raise fs_error_from_oserror(err, "stat", path) from err
            os.close(fd)  # replaced while we waited: closing lets the old file's lock go
        raise StaleFileError(f"{path} is replaced again and again by another process")

    def state(self) -> FileState | None:
        """The file as it is now (None: there is none)."""
        return FileState.of(self.fd) if self.fd >= 0 else None

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # releases the lock
            self.fd = -1

    def __enter__(self) -> LockedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fill_empty(self, data: bytes, *, fsync: bool = True) -> None:
        """Write ``data`` into the file we hold, in place, only while it is still empty (pi writes
        the header of an empty file in place). Unlike a rename, this keeps whatever a program that
        rewrites the file in place (truncate, then write) writes after us: its bytes go over ours."""
        if self.fd < 0:
            raise StaleFileError(self._refusal("was deleted"))
        try:
            out = open_session_file(self.target, self.path, os.O_WRONLY | os.O_APPEND)[0]
        except OSError as err:
            raise fs_error_from_oserror(err, "open", self.path) from err
        try:
            st, held = os.fstat(out), os.fstat(self.fd)
            if (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino) or st.st_size:
                raise StaleFileError(self._refusal("was written by another process"))
            write_all(out, data)
            if fsync:
                os.fsync(out)
        except OSError as err:
            raise fs_error_from_oserror(err, "write", self.path) from err
        finally:
            os.close(out)

    # ------------------------------------------------------------------ replacing

    def replace(
        self,
        chunks: Iterable[bytes],
        expected: FileState | None,
        *,
        keep_appended: bool = False,
        fsync: bool = True,
    ) -> Replaced:
        """Replace the file with ``chunks``, computed from the file as ``expected`` describes it
        (None: no file; then the path is only created, never replaced).

        Right before the rename the file must still be ``expected``; with ``keep_appended``, lines
        appended to it meanwhile are copied after the new content (else they refuse the rewrite).
        Raises :class:`~pi_session_server.errors.StaleFileError` when the file changed otherwise;
        then nothing was written (or, after a race with a writer that rewrote the file in the
        instant of the rename, that writer's version was put back).
        """
        directory, name = os.path.split(self.target)
        directory = directory or "."
        mode = self._target_mode()
        fd, tmp = self._temporary(directory, name)
        try:
            outcome = Replaced(_write_chunks(fd, chunks))
            if fsync:
                os.fsync(fd)
            analysed = expected
            expected = self._catch_up(fd, expected, outcome, keep_appended)
            os.fchmod(fd, mode)
            if tmp is None:
                tmp = _link_unnamed(fd, directory, name)
            _name_new_file(tmp, self.target, created=expected is None, fsync=fsync)
            tmp = None
            if expected is not None:
                self._after_rename(
                    fd, expected, outcome, keep_appended, mode, copied=expected is not analysed
                )
            if fsync and outcome.kept:
                os.fsync(fd)
            outcome.state = FileState.of(fd)
            return outcome
        except BaseException as err:  # whatever stopped us (the chunks may raise too): leave nothing behind
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if isinstance(err, FileExistsError) and expected is None:
                raise StaleFileError(self._refusal("was created by another process")) from err
            if isinstance(err, OSError):  # (naming the file refused: the temporary one in the directory)
                raise fs_error_from_oserror(err, "open", err.filename or self.path) from err
            raise
        finally:
            os.close(fd)  # releases the new file's lock, after the rename

    def keep_backup(self, expected: FileState) -> tuple[str, FileState]:
        """``path.bak``, a second name for the file as ``expected`` describes it (see
        :func:`_keep_backup`), and the state to expect of the file from now on: the link moved its
        change time. A file that changed otherwise than by appends since is refused first
        (StaleFileError, no backup made)."""
        unchanged = self._growth_of_old_file(expected) is None
        backup = _keep_backup(self.path, self.fd)
        now = FileState.of(self.fd)
        return backup, (now if unchanged and now.same_bytes(expected) else expected)

    def _target_mode(self) -> int:
        """The permissions the new file gets: the old file's, else 0o644."""
        mode = 0o644
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                mode = os.fstat(self.fd).st_mode & 0o777
        return mode

    def _refusal(self, what: str) -> str:
        return f"{self.path} {what} while it was being rewritten: nothing was written"

    @staticmethod
    def _temporary(directory: str, name: str) -> tuple[int, str | None]:
        """A new temporary file, locked: it is live until renamed (see the module's notes). A named
        file is created before it is locked; a cleaner that takes it for abandoned in that
        one-syscall window makes our rename fail with ENOENT, and the target keeps its old content.
        Without flock, nothing is ever cleaned."""
        try:
            _remove_abandoned_temporaries(directory)
            fd, tmp = _create_temporary(directory, name)
        except OSError as err:
            raise fs_error_from_oserror(err, "open", os.path.join(directory, name)) from err
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        return fd, tmp

    def _catch_up(
        self, fd: int, expected: FileState | None, outcome: Replaced, keep_appended: bool
    ) -> FileState | None:
        """Check the file against ``expected`` right before the rename; copy what was appended
        meanwhile (``keep_appended``) until it holds still. Returns the state the rename replaces."""
        if expected is None:
            if os.path.lexists(self.target):
                raise StaleFileError(self._refusal("was created by another process"))
            return None
        ends_a_line = outcome.written == 0 or _last_byte(fd) == b"\n"
        analysed = expected
        for _ in range(_MAX_CATCH_UPS):
            now = self._appended_since(expected, copied=expected is not analysed)
            if now is None:
                return expected
            if not keep_appended:
                raise StaleFileError(self._refusal("was appended to by another process"))
            if not ends_a_line:  # our content ends mid-line: what follows goes on a line of its own
                os.write(fd, b"\n")
                outcome.kept += 1
                ends_a_line = True
            outcome.kept += _copy_range(self.fd, expected.size, now.size, fd)
            expected = now
            if not now.ends_a_line():
                time.sleep(SETTLE_POLL)  # a line still being written: let its writer finish it
        raise StaleFileError(self._refusal("kept growing"))

    def _appended_since(self, expected: FileState, *, copied: bool = False) -> FileState | None:
        """None when the file is still ``expected``; its state when lines were only appended to it;
        StaleFileError for any other change (replaced, deleted, truncated, rewritten). ``copied``:
        see :meth:`_growth_of_old_file`."""
        try:
            st = os.stat(self.target)
        except FileNotFoundError:
            raise StaleFileError(self._refusal("was deleted")) from None
        if (st.st_dev, st.st_ino) != (expected.dev, expected.ino):
            raise StaleFileError(self._refusal("was replaced by another process"))
        return self._growth_of_old_file(expected, copied=copied)

    def _growth_of_old_file(
        self, expected: FileState, *, copied: bool = False, renamed: bool = False
    ) -> FileState | None:
        """Like :meth:`_appended_since`, on our descriptor (whatever the path names now).

        A file that ended mid-line and grew had that line continued: refused when the new content
        was computed from it (a repair may have dropped or changed that line), taken when
        ``copied`` (the bytes up to ``expected.size`` are others' appended bytes we copied as they
        were, a line caught while its writer was writing it: its rest follows them). ``renamed``:
        our rename just unlinked the file, which moved its change time."""
        now = FileState.of(self.fd)
        if now == expected or (renamed and now.same_bytes(expected)):
            return None
        if now.size <= expected.size:
            raise StaleFileError(self._refusal("was rewritten in place by another process"))
        start = expected.size - len(expected.tail)
        if os.pread(self.fd, len(expected.tail), start) != expected.tail:
            raise StaleFileError(self._refusal("was rewritten in place by another process"))
        if not (copied or expected.ends_a_line()):
            raise StaleFileError(self._refusal("had its unfinished last line continued by another process"))
        return now

    def _after_rename(
        self,
        new_fd: int,
        expected: FileState,
        outcome: Replaced,
        keep_appended: bool,
        mode: int,
        *,
        copied: bool = False,
    ) -> None:
        """What reached the old file between the last check and the rename (pi opens the path for
        each append: one that opened it just before the rename writes into the old file; a
        ``write()`` of a big line under way goes on there). Its writer is given a moment to finish,
        then appended lines follow the new content (``copied``: the rest of a line whose start was
        copied goes right after it); any other change puts that writer's version back."""
        if FileState.of(self.fd).same_bytes(expected):
            return
        _wait_until_still(self.fd)
        try:
            now = self._growth_of_old_file(expected, copied=copied, renamed=True)
        except StaleFileError:
            _wait_until_still(self.fd, still_for=REWRITE_STILL)
            now = None
            rewritten = True
        else:
            rewritten = now is not None and not keep_appended
        if now is not None and not rewritten:
            data = _read_range(self.fd, expected.size, now.size)
            ours = outcome.written + outcome.kept
            continued = ours if not expected.ends_a_line() else -1
            outcome.kept += _append_to(self.target, new_fd, data, continues_at=continued)
            return
        if rewritten:
            put_back = self._put_back(new_fd, outcome, mode)
            raise StaleFileError(
                f"{self.path} was written by another process at the moment it was replaced: "
                + (
                    "that version was put back, ours was not kept"
                    if put_back
                    else "it was replaced again since"
                )
            )

    def _put_back(self, new_fd: int, outcome: Replaced, mode: int) -> bool:
        """Make the path hold the old file as its other writer left it, followed by whatever was
        appended to our new file since the rename (by that writer: pi appends by path). False when
        the path no longer names our new file (then it is left alone)."""
        directory, name = os.path.split(self.target)
        directory = directory or "."
        fd, tmp = self._temporary(directory, name)
        try:
            old_size = os.fstat(self.fd).st_size
            _copy_range(self.fd, 0, old_size, fd)
            ours = outcome.written + outcome.kept
            later = os.fstat(new_fd).st_size
            if later > ours:
                if old_size and _last_byte(fd) != b"\n":
                    os.write(fd, b"\n")
                _copy_range(new_fd, ours, later, fd)
            os.fsync(fd)
            os.fchmod(fd, mode)
            if tmp is None:
                tmp = _link_unnamed(fd, directory, name)
            if not names(self.target, new_fd):
                return False
            os.replace(tmp, self.target)
            tmp = None
            fsync_directory(directory)
            return True
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            os.close(fd)


def _name_new_file(tmp: str, target: str, *, created: bool, fsync: bool) -> None:
    """Give the written temporary file ``tmp`` the name ``target``: a new name (``created``: never
    over a file another process created meanwhile) or over the old file. ``fsync``: the directory
    too, else a power cut may bring back the old file (or none)."""
    if created:
        os.link(tmp, target)
        os.unlink(tmp)
    else:
        os.replace(tmp, target)
    if fsync:
        fsync_directory(os.path.dirname(target) or ".")


def same_file(path: str, state: FileState) -> bool:
    """Does ``path`` name the file ``state`` describes (its device and inode)?"""
    try:
        found = os.stat(path)
    except OSError:
        return False
    return (found.st_ino, found.st_dev) == (state.ino, state.dev)


def replace_in_place(
    path: str, before: FileState, chunks: Iterable[bytes], *, backup: bool = False
) -> Replaced:
    """Replace ``path`` atomically with ``chunks``, new content computed from the file as ``before``
    describes it (a repair of it), keeping what others append meanwhile.

    The file's lock is held from here until after the rename (our appenders wait, then follow the
    path to the new file). pi takes no lock: right before the rename (after the ``fsync``) the file
    is compared with what was analysed, and the lines it appended meanwhile are written after the
    new content, also those that reach the old file in the instant of the rename. Any other change
    leaves the file alone (StaleFileError). ``backup``: keep the original as ``path.bak`` (a second
    name for its bytes). Returns what was written: the bytes of others' lines kept, the new file's
    state as it was left."""
    with LockedFile(path) as locked:
        if locked.fd < 0 or not same_file(path, before):
            raise StaleFileError("the file was replaced or deleted while it was being repaired")
        backup_path = None
        if backup:
            backup_path, before = locked.keep_backup(before)
        try:
            return locked.replace(chunks, before, keep_appended=True)
        except BaseException:
            # nothing replaced: a backup that is a second name of the file as it still is goes
            with contextlib.suppress(OSError):
                if backup_path is not None and os.path.samefile(backup_path, path):
                    os.unlink(backup_path)
            raise


def _keep_backup(path: str, fd: int) -> str:
    """``path.bak``: a second name for the original bytes (a copy where hard links are refused)."""
    backup = path + ".bak"
    if os.path.lexists(backup):
        raise FileExistsError(0, f"{backup} exists (move it away, or use --no-backup)")
    try:
        # the file a symlink names (link() would name the symlink: a "backup" of the new bytes)
        os.link(os.path.realpath(path), backup)
        if not os.path.samestat(os.lstat(backup), os.fstat(fd)):  # another file there meanwhile
            os.unlink(backup)
            raise FileExistsError(0, "not the file being repaired")
    except OSError:
        _copy_to_new(fd, backup)
    return backup


def _copy_to_new(fd: int, path: str) -> None:
    """Copy the file open as ``fd`` to the new file ``path``, whole or not at all: a copy that fails
    part way (a full disk) is removed, lest it be taken later for a whole backup. Only the file this
    made is removed (not one another process put there meanwhile). Raises the failure, naming ``path``."""
    import shutil  # here, as tempfile below: opening a session never needs it

    out_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    made = os.fstat(out_fd)
    try:
        with open(out_fd, "wb") as out:
            os.lseek(fd, 0, os.SEEK_SET)
            with open(os.dup(fd), "rb") as source:
                shutil.copyfileobj(source, out)
    except BaseException as err:
        with contextlib.suppress(OSError):
            if os.path.samestat(os.lstat(path), made):
                os.unlink(path)
        if isinstance(err, OSError):
            err.filename = err.filename or path
        raise


def rewrite_file(path: str, chunks: Iterable[bytes], *, fsync: bool = True) -> Replaced:
    """Replace the content of ``path`` atomically (temporary file + rename; symlinks are followed),
    or create it. The file is locked from now until after the rename, and must not change
    meanwhile (:class:`~pi_session_server.errors.StaleFileError` otherwise, and nothing is
    written). Returns what was written (its bytes, the new file's state as it was left)."""
    with LockedFile(path) as locked:
        return locked.replace(chunks, locked.state(), fsync=fsync)


def rewritten_after(path: str, state: FileState, seconds: float) -> bool:
    """Did another program write ``path``, which we just left as ``state``, within ``seconds``?

    pi takes no lock: a pi that read the file just before our rename migrates what it read and then
    rewrites the file in place (truncate, then write), over ours. A migration watches for that
    before it lets anything be appended (an append made before pi's rewrite would be lost to it).
    When it happened, the writer is given a moment to finish."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return True
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) != (
            state.dev,
            state.ino,
            state.size,
            state.mtime_ns,
            state.ctime_ns,
        ):
            with contextlib.suppress(OSError):  # (NotRegularFile too: a FIFO is not waited on)
                fd = open_regular(path)
                try:
                    _wait_until_still(fd)
                finally:
                    os.close(fd)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(SETTLE_POLL)


def _write_chunks(fd: int, chunks: Iterable[bytes]) -> int:
    written = 0
    with open(fd, "wb", closefd=False) as out:
        for chunk in chunks:
            out.write(chunk)
            written += len(chunk)
    return written


def _last_byte(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, 1, size - 1) if size else b""


def _read_range(fd: int, start: int, end: int) -> bytes:
    parts = []
    while start < end:
        chunk = os.pread(fd, min(_COPY_CHUNK, end - start), start)
        if not chunk:
            break
        parts.append(chunk)
        start += len(chunk)
    return b"".join(parts)


def _copy_range(source: int, start: int, end: int, out: int) -> int:
    """Copy bytes ``[start, end)`` of ``source`` to the end of ``out``; the count copied."""
    copied = 0
    while start < end:
        chunk = os.pread(source, min(_COPY_CHUNK, end - start), start)
        if not chunk:
            break
        write_all(out, chunk)
        copied += len(chunk)
        start += len(chunk)
    return copied


def _append_to(path: str, fd: int, data: bytes, *, continues_at: int = -1) -> int:
    """Append ``data`` to the file open as ``fd`` through ``path`` (O_APPEND: pi may append by
    path at the same time), on a line of its own, unless it continues the line the file ends with
    while it is ``continues_at`` bytes long (nobody appended after it). We hold that file's lock
    already (``fd``)."""
    out = open_session_file(path, path, os.O_WRONLY | os.O_APPEND)[0]
    try:
        if not names(path, fd):
            raise StaleFileError(f"{path} was replaced by another process while it was being rewritten")
        size = os.fstat(out).st_size
        if size and size != continues_at and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        write_all(out, data)
        return len(data)
    finally:
        os.close(out)


def _wait_until_still(fd: int, *, still_for: float = SETTLE_POLL) -> None:
    """Until the file's size and mtime hold still for ``still_for`` seconds, looked at every poll
    (at most SETTLE_LIMIT seconds in all)."""
    deadline = time.monotonic() + SETTLE_LIMIT
    st = os.fstat(fd)
    last = (st.st_size, st.st_mtime_ns)
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(SETTLE_POLL)
        st = os.fstat(fd)
        now = (st.st_size, st.st_mtime_ns)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still_for:
            return


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


def _create_temporary(directory: str, target_name: str) -> tuple[int, str | None]:
    """A new file for a rewrite: unnamed (name None) where possible, else named after the target."""
    if _can_write_unnamed(directory):
        # read back too: its last byte, and what a rewrite that lost a race puts back from it
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600), None
    import tempfile  # here: importing it (shutil, random, bz2, lzma) is a part of a server's start

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
