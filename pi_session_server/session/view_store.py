"""What a command printed for a session file (``pi-session tree``'s drawing, ``pi-session context``'s
messages), kept next to the file's index.

Drawing a big session's tree, or building its context, reads the session; a file that did not change
since, shown the same way, shows the same text. That text is kept in the cache directory of the
file's index (see scan_index), in a file named like the index with the command's kind, with what it
was made from: the file's device, inode, size, mtime and ctime, CRC-32s of its first and last bytes
(see cache_dir.edges), what is printed before the text (``tree``: the session's id and name, its
entries and leaf), and the view's key (how it was made: the command, the release read as, its
options, the home directory, the output's encoding, the local time zone, the package's code: see
cache_dir.code_stamp). It is used only when all of them match, without reading the session again,
and without importing the rest of the library: this module needs only cache_dir.

The file must stay the same from before it is opened until the view is kept: the caller takes its
identity (:func:`identity_before_open`) before opening it, and a view is kept only when the file
still has that identity, which was taken when the file had not changed for a while
(cache_dir.RACY_NS: a change within the same tick of the file system's clock could keep its mtime
and ctime). Unlike previews, which hold for the lines they describe in a file that grew, a view
holds for the whole file: one appended line moves the leaf. What cannot be read, or written, is
no error: the view is made from the file.

The file: ``_PREFIX`` (magic, format version, the length of the metadata, a CRC-32 of the rest),
the metadata (JSON: identity, CRCs, key, head), then the view's bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import struct
import time
import zlib
from collections.abc import Sequence
from itertools import chain
from typing import Any, Final, NamedTuple

from . import cache_dir
from .cache_dir import Identity

FORMAT_VERSION: Final = 2
MAGIC: Final = b"PIVIEW\x00\x00"
_PREFIX = struct.Struct("<8sIII")  # magic, format version, metadata length, CRC-32 of the rest
# The largest view kept: every branch point indents what follows it, so a deep tree's text can be
# many times its session's size; such a view is made again rather than held and written out.
MAX_VIEW_BYTES: Final = 64 * 1024 * 1024

# the kinds of view, one kept per file and kind
TREE: Final = "tree"
CONTEXT: Final = "context"
CHECK: Final = "check"  # pi-session check's problems of the file (commands/check_report.py)


class KeptView(NamedTuple):
    head: str  # what is printed between the file's path and the view (tree: the session, its leaf)
    data: memoryview  # the view as written out (encoded as the key says)


class GrownView(NamedTuple):
    data: memoryview  # the view as written out (encoded as the key says)
    identity: Identity  # of the file it was made of


def suffix(kind: str) -> str:
    """The name under which a view of ``kind`` is kept beside the index."""
    return cache_dir.VIEW_SUFFIX + kind


def identity_before_open(path: str) -> Identity | None:
    """The identity of the regular file at ``path`` now, if it has not changed for a while (else
    None: a view of it is neither used nor kept)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if cache_dir.changed_lately(st):
        return None
    return cache_dir.identity(st)


def may_keep(before: Identity | None, index: bool | str = True, min_size: int | None = None) -> bool:
    """Whether a view of the file identified ``before`` could be kept (:func:`save`): views are
    kept for it, by its size. A caller that gathers a view's parts as it writes them out gathers
    none when not."""
    settings = cache_dir.index_settings(index)
    return before is not None and settings is not None and before[2] >= _least_size(settings, min_size)


def _least_size(settings: cache_dir.IndexSettings, min_size: int | None) -> int:
    """The size from which views are kept: the index's, or ``min_size`` when given and lower."""
    return settings.min_size if min_size is None else min(min_size, settings.min_size)


def _local_time_zone() -> list[Any]:
    """The time zone of this process: times without an offset in a session are local times (the
    tree's order of siblings, the context's timestamps depend on it)."""
    return [os.environ.get("TZ"), *time.tzname, time.timezone, time.altzone, time.daylight]


def _view_key(kind: str, key: tuple[Any, ...]) -> list[Any]:
    return [FORMAT_VERSION, cache_dir.code_stamp(), _local_time_zone(), kind, *key]


def _kept_path(
    path: str, before: Identity | None, kind: str, index: bool | str, min_size: int | None = None
) -> tuple[int, str] | None:
    """The file at ``path`` opened (its descriptor: the caller closes it) and where its view of
    ``kind`` is kept, when views are kept for it (of its size: ``min_size`` or more, when given
    and lower than the index's) and it is the file identified ``before``."""
    settings = cache_dir.index_settings(index)
    if before is None or settings is None or before[2] < _least_size(settings, min_size):
        return None
    # (O_NONBLOCK: a FIFO renamed over the file since ``before`` is not waited on; its identity
    # is another, and a regular file reads as without it)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if cache_dir.identity(st) == before:
            return fd, cache_dir.kept_path(settings.directory, st, suffix(kind))
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _read_kept(kept: str) -> tuple[Any, memoryview]:
    """The metadata and the view of the kept file ``kept``; raises ValueError (or OSError,
    struct.error...) when it is not one this version writes whole."""
    with open(kept, "rb") as f:
        data = f.read()
    magic, version, meta_length, crc = _PREFIX.unpack_from(data)
    body = memoryview(data)[_PREFIX.size :]
    if magic != MAGIC or version != FORMAT_VERSION or zlib.crc32(body) != crc:
        raise ValueError("not a whole view of this format")
    return json.loads(bytes(body[:meta_length])), body[meta_length:]


def load(
    path: str,
    before: Identity | None,
    kind: str,
    key: tuple[Any, ...],
    index: bool | str = True,
    min_size: int | None = None,
) -> KeptView | None:
    """The view of ``kind`` kept for the file at ``path`` made as ``key`` (str, int, bool and None
    values), when the file is the one it was made from and has been since ``before`` (see
    :func:`identity_before_open`); else None. ``index``: as SessionManager.open takes it. The
    session itself is not read."""
    try:
        place = _kept_path(path, before, kind, index, min_size)
    except (OSError, ValueError):
        return None
    if place is None:
        return None
    fd, kept = place
    try:
        meta, view = _read_kept(kept)
        if meta["identity"] != list(before or ()) or meta["key"] != _view_key(kind, key):
            return None  # another file, or made another way: left for the next save to replace
        if cache_dir.edges(fd, meta["identity"][2]) != (meta["head_crc"], meta["tail_crc"]):
            return None
        head = meta["head"]
        if type(head) is not str:
            return None
        with contextlib.suppress(OSError):
            os.utime(kept)  # used now: the cache keeps the sessions used last (cache_dir.prune)
        return KeptView(head, view)
    except (struct.error, ValueError, TypeError, KeyError, IndexError, OSError, cache_dir.NotUsable):
        return None
    finally:
        os.close(fd)


def load_grown(
    fd: int,
    st: os.stat_result,
    kind: str,
    key: tuple[Any, ...],
    index: bool | str = True,
    min_size: int | None = None,
) -> GrownView | None:
    """The view of ``kind`` made as ``key`` kept for the file open at ``fd`` (its status ``st``)
    when the file is the one it was made from, unchanged or grown since: the same device, inode
    and inode generation (see cache_dir.generation), no shorter, its mtime and ctime the same if
    its size is, and the same bytes at its head and before the size it had. Session files are
    appended to: a view of a kind made from a file's lines one by one (a listing's) is made whole
    by reading on from where the file then ended. Unlike :func:`load`, the file may have changed
    lately: what is compared is its bytes, not its times. Else None. ``index``, ``min_size``: as
    :func:`load` takes them."""
    settings = cache_dir.index_settings(index)
    if settings is None or st.st_size < _least_size(settings, min_size):
        return None
    kept = cache_dir.kept_path(settings.directory, st, suffix(kind))
    try:
        meta, view = _read_kept(kept)
        dev, ino, size, mtime_ns, ctime_ns = meta["identity"]
        if (dev, ino) != (st.st_dev, st.st_ino) or meta["key"] != _view_key(kind, key):
            return None
        if type(size) is not int or size > st.st_size:
            return None
        if size == st.st_size and (mtime_ns, ctime_ns) != (st.st_mtime_ns, st.st_ctime_ns):
            return None  # rewritten in place
        if meta.get("generation") != cache_dir.generation(fd):
            return None  # another file, under the number of the one it was made of
        if cache_dir.edges(fd, size) != (meta["head_crc"], meta["tail_crc"]):
            return None
        with contextlib.suppress(OSError):
            os.utime(kept)  # used now: the cache keeps the sessions used last (cache_dir.prune)
        return GrownView(view, (dev, ino, size, mtime_ns, ctime_ns))
    except (struct.error, ValueError, TypeError, KeyError, IndexError, OSError, cache_dir.NotUsable):
        return None


def save(
    path: str,
    before: Identity | None,
    kind: str,
    key: tuple[Any, ...],
    head: str,
    data: bytes | Sequence[bytes],
    index: bool | str = True,
    min_size: int | None = None,
) -> bool:
    """Keep ``data``, the session file at ``path`` shown as the view ``kind`` made as ``key``, and
    ``head`` (printed before it, after the file's path), when the file is still the one identified
    ``before`` it was opened. False when nothing was written (``data`` over :data:`MAX_VIEW_BYTES`
    is never kept). ``data``: the view's bytes, or its parts in order (a view written out a batch
    at a time: kept without a copy of it joined whole)."""
    parts = [data] if isinstance(data, bytes) else data
    if cache_dir.total_size(parts) > MAX_VIEW_BYTES or before is None:
        return False
    try:
        place = _kept_path(path, before, kind, index, min_size)
        if place is None:
            return False  # no views kept, or another file now, or changed since it was read
        fd, kept = place
        try:
            head_crc, tail_crc = cache_dir.edges(fd, before[2])
            meta = json.dumps(
                {
                    "identity": list(before),
                    "head_crc": head_crc,
                    "tail_crc": tail_crc,
                    "key": _view_key(kind, key),
                    "head": head,
                    "generation": cache_dir.generation(fd),  # (see load_grown)
                }
            ).encode()
            if cache_dir.identity(os.fstat(fd)) != before:
                return False  # changed while its CRCs were taken
            cache_dir.write_after_prefix(
                kept,
                _PREFIX.size,
                lambda crc: _PREFIX.pack(MAGIC, FORMAT_VERSION, len(meta), crc),
                chain((meta,), parts),  # (a view's parts spooled to a file: read back once)
            )
            return True
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - a best-effort cache: a view that cannot be kept (read-only, full, odd values) is no error
        return False
