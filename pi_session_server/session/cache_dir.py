"""The cache directory that holds what is kept of session files (their index, see scan_index; the
previews, see preview_store; the views drawn, see view_store), and whether what is kept still
describes the file.

Small on purpose: a command that prints what it kept from its last run of an unchanged file
imports this module and no more of the library (but descriptors.py, which imports none of it).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, overload

from .descriptors import OwnedDescriptor

if TYPE_CHECKING:  # (for annotations only: this module imports no more of the library)
    from .paths import StrPath

INDEX_DIR_ENV: Final = "PI_SESSION_INDEX_DIR"  # the cache directory
NO_INDEX_ENV: Final = "PI_SESSION_NO_INDEX"  # "1": no index is read or written
INDEX_MIN_SIZE_ENV: Final = "PI_SESSION_INDEX_MIN_SIZE"  # bytes: smaller files are just scanned
INDEX_MAX_BYTES_ENV: Final = "PI_SESSION_INDEX_MAX_BYTES"  # bytes the cache directory may hold
# Scanning a file this small takes about as long as finding, reading and checking its index.
DEFAULT_MIN_SIZE: Final = 1024 * 1024
# A file changed this shortly before it was looked at may change again within the same tick of the
# file system's clock (a second on some), keeping its mtime and ctime: its index does not hold its
# size, so it is trusted as far as the CRCs of its head and end go, like that of a file appended to.
RACY_NS = 2_000_000_000
# What the directory may hold: the files kept for the sessions used last, within both limits (the
# session used last is kept whatever its size).
MAX_KEPT_FILES: Final = 1000
DEFAULT_MAX_BYTES: Final = 2 * 1024 * 1024 * 1024
# The names of what is kept: a session's files are "<device>-<inode>" and one of these suffixes (a
# view's is followed by its kind); a file being written starts with the temporary prefix.
INDEX_SUFFIX: Final = ".pi-index"
PREVIEWS_SUFFIX: Final = ".pi-previews"
TURNS_SUFFIX: Final = ".pi-turns"
VIEW_SUFFIX: Final = ".pi-view-"
KEPT_SUFFIXES: Final = (INDEX_SUFFIX, PREVIEWS_SUFFIX, TURNS_SUFFIX, VIEW_SUFFIX)
TEMPORARY_PREFIX: Final = ".tmp-"
ABANDONED_AFTER: Final = 3600.0  # seconds: a temporary file older than this was left by a killed writer
_HASHED = 4096  # bytes of the file's head, and before the end indexed, whose CRC is kept


Identity = tuple[int, int, int, int, int]  # device, inode, size, mtime, ctime (ns)


def identity(st: os.stat_result) -> Identity:
    """What tells a file unchanged: the same device, inode, size, mtime and ctime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_FS_IOC_GETVERSION: Final = 0x80087601  # Linux's _IOR('v', 1, long)


def generation(fd: int) -> int:
    """The generation of the inode of the file open at ``fd``, where the file system keeps one (0
    elsewhere). A file system may give a freed inode number to the next file made (ext4 does, at
    once): a file saved by renaming a new one over it can get the number of the one it replaced,
    with the same head and more bytes, and look like it grew. The generation tells them apart."""
    if not sys.platform.startswith("linux"):
        return 0
    number = bytearray(8)
    try:
        fcntl.ioctl(fd, _FS_IOC_GETVERSION, number)
    except OSError:  # (tmpfs and others keep none, and do not hand a freed number out again at once)
        return 0
    return int.from_bytes(number, sys.byteorder)


def changed_lately(st: os.stat_result, now_ns: int | None = None) -> bool:
    """Did the file change less than :data:`RACY_NS` before ``now_ns`` (default: now)? It may then
    change again unseen, keeping its mtime and ctime."""
    now = time.time_ns() if now_ns is None else now_ns
    return now - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS


def stamp_of_code(root: str) -> int:
    """A CRC-32 of the relative name, size and mtime of each Python file under ``root``."""
    described: list[str] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as found:
                for item in found:
                    if item.is_dir(follow_symlinks=False) and item.name != "__pycache__":
                        pending.append(item.path)
                    elif item.name.endswith(".py"):
                        st = item.stat()
                        described.append(f"{item.path[len(root) :]}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            described.append(f"{directory[len(root) :]}\0unreadable")
    return zlib.crc32("\n".join(sorted(described)).encode("utf-8", "surrogateescape"))


@functools.cache
def code_stamp() -> int:
    """What tells this package's code from another's (:func:`stamp_of_code` of the package). What
    is kept was made by code, and code changes without its version (an editable install updated by
    ``git pull``, the same version installed again): what other code kept is not used."""
    return stamp_of_code(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class NotUsable(Exception):
    """What is kept does not describe the file as it is now."""


class IndexSettings(NamedTuple):
    """Where indexes are kept, and from which file size they are used."""

    directory: str
    min_size: int = DEFAULT_MIN_SIZE

    def wanted(self, size: int) -> bool:
        return size >= self.min_size


def default_index_directory() -> str | None:
    """``$PI_SESSION_INDEX_DIR``, else ``$XDG_CACHE_HOME/pi-session``, else ``~/.cache/pi-session``
    (None when there is no home directory to put it in)."""
    configured = os.environ.get(INDEX_DIR_ENV)
    if configured:
        expanded = os.path.expanduser(configured)
        return os.path.abspath(expanded) if os.path.isabs(expanded) else _made_absolute_once(expanded)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative path is to be ignored
        return os.path.join(xdg, "pi-session")
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isabs(home):
        return None
    return os.path.join(home, ".cache", "pi-session")


@functools.cache
def _made_absolute_once(relative: str) -> str | None:
    """A relative ``$PI_SESSION_INDEX_DIR`` in the working directory the process had when it first
    read it, as a command started there means it: a process that changes its working directory
    later keeps one cache directory (not one under each directory it works in). None when that
    working directory was removed: no index."""
    try:
        return os.path.abspath(relative)
    except OSError:
        return None


def index_settings(index: bool | StrPath = True) -> IndexSettings | None:
    """The settings for a library argument ``index``: True for the default directory, False for
    no index, or the directory to use. ``$PI_SESSION_NO_INDEX=1`` turns every index off."""
    if index is False or os.environ.get(NO_INDEX_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    directory = default_index_directory() if index is True else os.path.abspath(os.fspath(index))
    if directory is None:
        return None
    min_size = DEFAULT_MIN_SIZE
    with contextlib.suppress(ValueError):
        min_size = max(0, int(os.environ.get(INDEX_MIN_SIZE_ENV, DEFAULT_MIN_SIZE)))
    return IndexSettings(directory, min_size)


def index_path(directory: str, st: os.stat_result) -> str:
    """The index of the file ``st`` describes, in ``directory`` (named by its device and inode)."""
    return os.path.join(directory, f"{st.st_dev:x}-{st.st_ino:x}{INDEX_SUFFIX}")


def kept_path(directory: str, st: os.stat_result, suffix: str) -> str:
    """What is kept with the index of the file ``st`` describes under the name ``suffix``."""
    return index_path(directory, st).removesuffix(INDEX_SUFFIX) + suffix


def edges(fd: int, end: int) -> tuple[int, int]:
    """CRC-32 of the file's first bytes and of its last bytes before ``end``."""
    head = os.pread(fd, min(end, _HASHED), 0)
    tail_start = max(0, end - _HASHED)
    tail = head[tail_start:end] if end <= _HASHED else os.pread(fd, end - tail_start, tail_start)
    if len(head) != min(end, _HASHED) or len(tail) != end - tail_start:
        raise NotUsable("file shorter than indexed")
    return zlib.crc32(head), zlib.crc32(tail)


class LinesStamp(NamedTuple):
    """What tells whether what was kept of a file's lines up to ``end`` still describes it: the
    file's device, inode, size, mtime and ctime then, :func:`edges` at ``end``, and the inode's
    :func:`generation`."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    end: int
    head_crc: int
    tail_crc: int
    generation: int


def stamp_lines(fd: int, end: int, st: os.stat_result) -> LinesStamp:
    """The :class:`LinesStamp` of the file open at ``fd``, its lines up to ``end``, whose status
    was ``st`` (taken before: a change since shows as another mtime). Raises OSError, NotUsable."""
    head_crc, tail_crc = edges(fd, end)
    return LinesStamp(
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        end,
        head_crc,
        tail_crc,
        generation(fd),
    )


def still_describes(stamp: Any, fd: int) -> bool:
    """Whether lines kept with ``stamp`` (a :class:`LinesStamp`, or anything with its fields) are
    still the lines of the file open at ``fd``: the same file, unchanged or longer (session files
    are appended to), with the same bytes at its head and before ``stamp.end``. Raises OSError."""
    st = os.fstat(fd)
    if (stamp.dev, stamp.ino) != (st.st_dev, st.st_ino) or st.st_size < stamp.size:
        return False
    if stamp.generation != generation(fd):
        return False  # another file, under the number of the one described
    if st.st_size == stamp.size and (stamp.mtime_ns, stamp.ctime_ns) != (st.st_mtime_ns, st.st_ctime_ns):
        return False  # rewritten in place
    try:
        return edges(fd, stamp.end) == (stamp.head_crc, stamp.tail_crc)
    except NotUsable:
        return False


def settled_status(fd: int, expected: Identity | None = None) -> os.stat_result | None:
    """The status of the file open at ``fd`` for keeping what was read of it: None when its
    :func:`identity` is no longer ``expected`` (if given: what was read may not describe it) or it
    changed lately (it may change again within its clock's tick, unseen: see :data:`RACY_NS`).
    Raises OSError."""
    st = os.fstat(fd)
    if expected is not None and identity(st) != expected:
        return None
    return None if changed_lately(st) else st


def read_kept(path: str, fd: int, magic: bytes, version: int, decode: Callable[[memoryview], Any]) -> Any:
    """What is kept at ``path`` (written :func:`framed` with ``magic`` and ``version``; ``decode``:
    its body, or None when the body is not what it should be) if it still describes the lines of
    the file open at ``fd`` (:func:`still_describes`). Else None, and it goes: the file may later
    grow past the lines it described, and match again. None, and it stays, when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        body = unframed(data, magic, version)
        stored = decode(body) if body is not None else None
        if stored is not None and not still_describes(stored, fd):
            stored = None
    except (OSError, ValueError, TypeError):  # (a decoder's errors are ValueErrors)
        stored = None
    if stored is None:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return stored


_FRAME = struct.Struct("<8sIII")  # magic, format version, code_stamp(), CRC-32 of the rest


def framed(magic: bytes, version: int, body: bytes) -> tuple[bytes, bytes]:
    """``body`` with what :func:`unframed` checks before it (for :func:`write_whole`)."""
    return _FRAME.pack(magic, version, code_stamp(), zlib.crc32(body)), body


def unframed(data: bytes, magic: bytes, version: int) -> memoryview | None:
    """The body :func:`framed` wrapped in ``data``, or None when ``data`` is of another kind or
    version, was made by other code (see :func:`code_stamp`), or is damaged."""
    if len(data) < _FRAME.size:
        return None
    found_magic, found_version, found_code, crc = _FRAME.unpack_from(data)
    body = memoryview(data)[_FRAME.size :]
    if (found_magic, found_version, found_code) != (magic, version, code_stamp()) or zlib.crc32(body) != crc:
        return None
    return body


def write_whole(path: str, *parts: bytes | memoryview) -> None:
    """Write ``parts`` to ``path`` in the cache directory, whole or not at all (a temporary file
    renamed over it: readers see the old file or the new one; concurrent writers each write a whole
    file). Raises OSError."""
    _written_whole(path, lambda out: _write_parts(out, parts))


def write_framed(path: str, magic: bytes, version: int, body: Iterable[bytes | memoryview]) -> None:
    """:func:`write_whole` of the parts of ``body`` :func:`framed`, each written as it comes (a big
    body is not held whole): the frame, which holds their CRC-32, is written last, before them."""
    write_after_prefix(path, _FRAME.size, lambda crc: _FRAME.pack(magic, version, code_stamp(), crc), body)


def write_after_prefix(
    path: str, prefix_size: int, prefix_of: Callable[[int], bytes], body: Iterable[bytes | memoryview]
) -> None:
    """:func:`write_whole` of ``prefix_of(CRC-32 of the parts of body)`` (``prefix_size`` bytes)
    and the parts of ``body``, each written as it comes and gone through once (a big body, or one
    read back from a file as :class:`SpooledParts`, is not held whole): the prefix is written last,
    before them."""

    def write(out: int) -> None:
        os.lseek(out, prefix_size, os.SEEK_SET)
        crc = 0
        for part in body:
            crc = zlib.crc32(part, crc)
            _write_parts(out, (part,))
        prefix = prefix_of(crc)
        if len(prefix) != prefix_size:
            raise ValueError("a prefix of another size")
        os.pwrite(out, prefix, 0)

    _written_whole(path, write)


def total_size(parts: Sequence[bytes]) -> int:
    """How many bytes ``parts`` hold (those of :class:`SpooledParts` without reading them back)."""
    if isinstance(parts, SpooledParts):
        return parts.size
    return sum(map(len, parts))


def _write_parts(out: int, parts: Iterable[bytes | memoryview]) -> None:
    for part in parts:
        view = memoryview(part)
        while view:
            view = view[os.write(out, view) :]


def unnamed_file(directory: str) -> int:
    """A descriptor of a new file in ``directory`` (made if need be) open to read and write, with no
    name: it goes when the descriptor is closed, whatever ends the process. (Where the system has
    no unnamed files, one named as pruning expects of a temporary file, its name removed at once.)
    Raises OSError."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    if hasattr(os, "O_TMPFILE"):
        with contextlib.suppress(OSError):  # (a file system without them: named, below)
            return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    path = os.path.join(directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{os.urandom(6).hex()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with contextlib.suppress(OSError):  # (left to pruning where a file open cannot lose its name)
        os.unlink(path)
    return fd


class SpooledParts(OwnedDescriptor, Sequence[bytes]):
    """Parts written one after another, as they come, to an unnamed file in ``directory`` (see
    :func:`unnamed_file`), and read back one at a time when asked for: the parts of something to
    keep, gathered as it is made, without holding them (a view written out a batch at a time).
    Raises OSError when the file cannot be made."""

    __slots__ = ("_ends",)

    def __init__(self, directory: str) -> None:
        super().__init__()  # (no descriptor until the file is made: collected then, none to close)
        self._ends = array("q")  # where each part ends in the file
        self.fd = unnamed_file(directory)

    def append(self, data: bytes) -> None:
        _write_parts(self.fd, (data,))
        self._ends.append((self._ends[-1] if self._ends else 0) + len(data))

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def size(self) -> int:
        """The bytes of every part."""
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, at: int) -> bytes: ...
    @overload
    def __getitem__(self, at: slice) -> list[bytes]: ...
    def __getitem__(self, at: int | slice) -> bytes | list[bytes]:
        if isinstance(at, slice):
            return [self[i] for i in range(len(self))[at]]
        at = range(len(self))[at]  # (IndexError out of range, as a list's)
        start = self._ends[at - 1] if at else 0
        data = os.pread(self.fd, self._ends[at] - start, start)
        if len(data) != self._ends[at] - start:
            raise OSError("spooled part cut short")
        return data


def _written_whole(path: str, write: Callable[[int], None]) -> None:
    """``write(descriptor)`` to a temporary file, renamed over ``path`` once written (see
    :func:`write_whole`)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    # named as pruning expects of a temporary file (see prune)
    temporary = os.path.join(
        directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{os.urandom(6).hex()}{os.path.splitext(path)[1]}"
    )
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            write(out)
        finally:
            os.close(out)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def forget(directory: str, st: os.stat_result) -> None:
    """Remove what is kept of the file ``st`` describes (its index, previews, turns and views), as
    far as it can be: what was read through it did not match the file."""
    own = os.path.basename(index_path(directory, st)).removesuffix(INDEX_SUFFIX)
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith(own) and name[len(own) :].startswith(KEPT_SUFFIXES):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


def max_bytes() -> int:
    """How many bytes the cache directory may hold (``$PI_SESSION_INDEX_MAX_BYTES``, 2 GiB by
    default)."""
    with contextlib.suppress(ValueError):
        return max(0, int(os.environ.get(INDEX_MAX_BYTES_ENV, DEFAULT_MAX_BYTES)))
    return DEFAULT_MAX_BYTES


def prune(directory: str) -> None:
    """Keep what is kept for the sessions used last, within :data:`MAX_KEPT_FILES` files and
    :func:`max_bytes` bytes, and remove temporary files that writers killed before their rename left
    behind. A session's files (its index, previews and views, named by its device and inode) go
    together; a session was used when the newest of them was written or used (readers touch them).
    Best effort: nothing here is ever an error."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    sessions: dict[str, list[tuple[str, os.stat_result]]] = {}
    for name in names:
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)
        except OSError:
            continue
        if name.startswith(TEMPORARY_PREFIX):
            if now - st.st_mtime > ABANDONED_AFTER:
                with contextlib.suppress(OSError):
                    os.unlink(full)
        elif any(kept in name for kept in KEPT_SUFFIXES):
            sessions.setdefault(name.partition(".")[0], []).append((full, st))  # by "<device>-<inode>"
    newest_first = sorted(
        sessions.values(), key=lambda files: max(st.st_mtime_ns for _, st in files), reverse=True
    )
    budget, room = max_bytes(), MAX_KEPT_FILES
    keeping = True  # until a session does not fit: it and every session used before it go
    for n, files in enumerate(newest_first):
        size = sum(st.st_size for _, st in files)
        keeping = keeping and (n == 0 or (size <= budget and len(files) <= room))
        if keeping:
            budget, room = max(0, budget - size), room - len(files)
            continue
        for full, _ in files:
            with contextlib.suppress(OSError):
                os.unlink(full)
