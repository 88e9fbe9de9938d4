"""A view of a session file drawn as text (``pi-session tree``), kept next to its index.

Drawing a big session's tree makes one row per entry; a file that did not change since it was last
drawn, the same way, draws the same text. That text is kept in the cache directory of the file's
index (see scan_index), in a file named like the index, with what it was drawn from: the file's
device, inode, size, mtime and ctime, CRC-32s of its first and last bytes (see scan_index.edges),
what is printed before the view (the session's id and name, its entries and leaf), and the view's
key (how it was drawn: the release read as, the
width, the home directory, the output's encoding, the package's version). It is used only when all of them match, without reading the session again.

The file must stay the same from before it is opened until the view is kept: the caller takes its
identity (:func:`identity_before_open`) before opening it, and a view is kept only when the file
still has that identity, which was taken when the file had not changed for a while
(scan_index.RACY_NS: a change within the same tick of the file system's clock could keep its mtime
and ctime). Unlike previews, which hold for the lines they describe in a file that grew, a view
holds for the whole file: one appended line moves the leaf. What cannot be read, or written, is
no error: the view is drawn from the file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import time
import zlib
from typing import Any, Final

import msgspec

from .. import __version__
from ..format.entry import Entry
from . import preview_store, scan_index

FORMAT_VERSION: Final = 1
MAGIC: Final = b"PIVIEW\x00\x00"
SUFFIX: Final = ".pi-view"
_PREFIX = struct.Struct("<8sII")  # magic, format version, CRC-32 of the rest
# The largest view kept: every branch point indents what follows it, so a deep tree's text can be
# many times its session's size; such a view is drawn again rather than held and written out.
MAX_VIEW_BYTES: Final = 64 * 1024 * 1024

Identity = tuple[int, int, int, int, int]  # device, inode, size, mtime, ctime (ns)


class StoredView(msgspec.Struct, array_like=True):
    identity: Identity
    head_crc: int
    tail_crc: int
    key: list[Any]
    head: str  # what is printed between the file's path and the view (the session, its leaf)
    data: bytes  # the view as written out (encoded as the key says)


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(StoredView).decode


def _identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def identity_before_open(path: str) -> Identity | None:
    """The identity of the regular file at ``path`` now, if it has not changed for a while (else
    None: a view of it is neither used nor kept)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < scan_index.RACY_NS:
        return None
    return _identity_of(st)


def _place(entries: list[Entry], before: Identity | None) -> tuple[int, str, Identity] | None:
    """The open file the entries come from, the path of its kept view and its identity, when it
    has an index directory and is the file identified ``before`` it was opened."""
    if before is None or len(entries) < preview_store.MIN_STORED:
        return None
    found = preview_store.store_of(entries, SUFFIX)
    if found is None:
        return None
    source, path = found
    try:
        now = _identity_of(os.fstat(source.fd))
    except OSError:
        return None
    return (source.fd, path, now) if now == before else None


def _view_key(key: tuple[Any, ...]) -> list[Any]:
    return [FORMAT_VERSION, __version__, *key]


def load(
    path: str, before: Identity | None, key: tuple[Any, ...], index: bool | str = True
) -> StoredView | None:
    """The view kept for the file at ``path`` drawn as ``key`` (str, int and None values), when
    the file is the one it was drawn from and has been since ``before`` (see
    :func:`identity_before_open`); else None. ``index``: as SessionManager.open takes it. The
    session itself is not read."""
    settings = scan_index.index_settings(index)
    if before is None or settings is None or not settings.wanted(before[2]):
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if _identity_of(st) != before:
            return None
        kept = scan_index.index_path(settings.directory, st).removesuffix(".pi-index") + SUFFIX
        with open(kept, "rb") as f:
            data = f.read()
        magic, version, crc = _PREFIX.unpack_from(data)
        body = memoryview(data)[_PREFIX.size :]
        if magic != MAGIC or version != FORMAT_VERSION or zlib.crc32(body) != crc:
            return None
        stored = _decode(body)
        if tuple(stored.identity) != before or stored.key != _view_key(key):
            return None  # another file, or drawn another way: left for the next save to replace
        if scan_index.edges(fd, before[2]) != (stored.head_crc, stored.tail_crc):
            return None
        return stored
    except (struct.error, ValueError, TypeError, OSError, msgspec.DecodeError, scan_index.NotUsable):
        return None
    finally:
        os.close(fd)


def save(entries: list[Entry], before: Identity | None, key: tuple[Any, ...], head: str, data: bytes) -> bool:
    """Keep ``data``, the session of ``entries`` drawn as ``key``, and ``head`` (printed before it,
    after the file's path), when the file is still the one identified ``before`` it was opened.
    False when nothing was written (``data`` over :data:`MAX_VIEW_BYTES` is never kept)."""
    if len(data) > MAX_VIEW_BYTES:
        return False
    place = _place(entries, before)
    if place is None:
        return False
    fd, path, identity = place
    try:
        head_crc, tail_crc = scan_index.edges(fd, identity[2])
        body = _encode(
            StoredView(
                identity,
                head_crc,
                tail_crc,
                _view_key(key),
                head,
                data,
            )
        )
        with contextlib.suppress(OSError):
            if _identity_of(os.fstat(fd)) != identity:
                return False  # changed while it was drawn
        preview_store.write_beside(path, _PREFIX.pack(MAGIC, FORMAT_VERSION, zlib.crc32(body)), body)
        return True
    except Exception:  # noqa: BLE001 - a best-effort cache: a view that cannot be kept (read-only, full, odd values) is no error
        return False
