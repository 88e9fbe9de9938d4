"""The assistant turns' usage of a session file (what ``pi/getStats`` sums), kept next to its index.

A session's totals need one thing the index does not hold: the usage of every assistant message
(tokens, cost, provider and model), so reading them means reading every assistant line of the file,
most of what the totals of a big session cost. What a line adds never changes while the line does
not, so the turns read are kept in the cache directory of the file's index (see scan_index), in a
file named like the index, and read back for the same lines: the rules of the kept previews
(preview_store), the file unchanged or longer (session files are appended to) with the same bytes at
its head and before the last line described (``cache_dir.still_describes``). Only turns read from
a whole line, as that line says them, are kept. What cannot be read, or written, is no error: the
turns are read from the file.
"""

from __future__ import annotations

from array import array
from typing import Annotated, Any, Final

import msgspec

from ..format.entry import Entry
from . import cache_dir, preview_store, scan_index

FORMAT_VERSION: Final = 3
MAGIC: Final = b"PITURNS\x00"
# Fewer turns than this are read about as fast as they are loaded: not kept, not loaded.
MIN_STORED: Final = 1000
# The values of a turn after its provider and model: its usage (session_stats.USAGE_KEYS), its cost.
USAGE_VALUES: Final = 6


NameIndex = Annotated[int, msgspec.Meta(ge=0)]


class StoredTurns(preview_store.StampedLines, array_like=True):
    offsets: bytes  # array("q"): the offset of each assistant message's line described, in file order
    # what those lines add (the values of a session_stats.Turn): the provider and model of each as
    # its place in ``names``, where each name is once (a session of GBs has hundreds of thousands of
    # turns and a few models: read back, each turn's name would be a string of its own), then the
    # usage values column by column (a column is a list of plain values, decoded at once, where a
    # list per turn would be an object each)
    names: list[Any]
    providers: list[NameIndex]
    models: list[NameIndex]
    values: list[list[Any]]

    def columns(self) -> list[list[Any]]:
        """The turns' values column by column, as session_stats sums them."""
        names = self.names
        return [[names[i] for i in self.providers], [names[i] for i in self.models], *self.values]


def _stored_names(columns: list[list[Any]]) -> tuple[list[Any], list[int], list[int]]:
    """The names of the first two ``columns`` (providers, models) once each, and each turn's as its
    place among them (a value that is not a string has a place of its own)."""
    names: list[Any] = []
    places: dict[str, int] = {}

    def place_of(value: Any) -> int:
        if value.__class__ is str:
            place = places.get(value)
            if place is None:
                place = places[value] = len(names)
                names.append(value)
            return place
        names.append(value)
        return len(names) - 1

    providers = [place_of(value) for value in columns[0]]
    return names, providers, [place_of(value) for value in columns[1]]


_encode = msgspec.msgpack.Encoder(enc_hook=scan_index.enc_hook).encode
_decode = msgspec.msgpack.Decoder(StoredTurns, ext_hook=scan_index.ext_hook).decode


class KeptTurns:
    """The turns kept for a file (:func:`load`): the offsets of their lines in file order, their
    values column by column, and where the last line they describe ends."""

    __slots__ = ("columns", "end", "offsets")

    def __init__(self, offsets: array[int], columns: list[list[Any]], end: int) -> None:
        self.offsets = offsets
        self.columns = columns
        self.end = end

    def by_offset(self) -> dict[int, tuple[Any, ...]]:
        """The turns by the offset of their line."""
        if not self.offsets:
            return {}
        return dict(zip(self.offsets, zip(*self.columns, strict=True), strict=True))


NOTHING_KEPT: Final = KeptTurns(array("q"), [], 0)


def load(held: preview_store.HeldFile, entry: Entry) -> KeptTurns:
    """The turns kept for the file ``entry`` was read from, held as ``held`` (see
    ``preview_store.hold``): :data:`NOTHING_KEPT` when none are, or they no longer describe the
    file (they go then: see ``cache_dir.read_kept``)."""
    found = preview_store.store_of([entry], cache_dir.TURNS_SUFFIX, held.fd)
    if found is None:
        return NOTHING_KEPT
    stored: StoredTurns | None = cache_dir.read_kept(found[1], held.fd, MAGIC, FORMAT_VERSION, _whole)
    if stored is None:
        return NOTHING_KEPT
    offsets = array("q")
    offsets.frombytes(stored.offsets)
    return KeptTurns(offsets, stored.columns(), stored.end)


def _whole(body: memoryview) -> StoredTurns | None:
    stored = _decode(body)
    count, rest = divmod(len(stored.offsets), 8)
    columns = (stored.providers, stored.models, *stored.values)
    if rest or len(stored.values) != USAGE_VALUES or any(len(column) != count for column in columns):
        return None  # not an array of offsets, or columns of another length
    if count and max(max(stored.providers), max(stored.models)) >= len(stored.names):
        return None  # a name that is not there
    return stored


def save(held: preview_store.HeldFile, entry: Entry, kept: KeptTurns, read: KeptTurns) -> bool:
    """Keep ``kept`` and the turns ``read`` since (their lines in file order, ``read.end`` just after
    the last) for the file ``entry`` was read from, held as ``held`` when they were read: nothing is
    written if it changed since. False when nothing was written."""
    found = preview_store.store_of([entry], cache_dir.TURNS_SUFFIX, held.fd)
    if found is None:
        return False
    try:
        st = cache_dir.settled_status(held.fd, held.identity)
        if st is None:
            return False
        offsets, columns = read.offsets, read.columns
        if kept.offsets:  # the turns kept and those read since, in file order
            by_offset = kept.by_offset()
            by_offset.update(read.by_offset())
            offsets = array("q", sorted(by_offset))
            columns = [list(column) for column in zip(*map(by_offset.__getitem__, offsets), strict=True)]
        end = max(kept.end, read.end)
        stamp = cache_dir.stamp_lines(held.fd, end, st)
        body = _encode(StoredTurns(*stamp, offsets.tobytes(), *_stored_names(columns), columns[2:]))
        cache_dir.write_whole(found[1], *cache_dir.framed(MAGIC, FORMAT_VERSION, body))
        return True
    except Exception:  # noqa: BLE001 - a best-effort cache: turns that cannot be kept (read-only, full, odd values) are no error
        return False
    finally:
        held.close()
