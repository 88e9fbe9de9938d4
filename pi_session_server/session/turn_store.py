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

import contextlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Annotated, Any, Final

import msgspec

from ..format.entry import Entry
from . import cache_dir, preview_store, scan_index

FORMAT_VERSION: Final = 4
MAGIC: Final = b"PITURNS\x00"
# Fewer turns than this are read about as fast as they are loaded: not kept, not loaded.
MIN_STORED: Final = 1000
# Where the usage of the other entries pi's totals add (tool results, usage entries, branch
# summaries, compactions) is kept, as the turns are: beside them, named like them (the kept files
# of an index go with it: cache_dir.KEPT_SUFFIXES).
OTHER_USAGE_SUFFIX: Final = cache_dir.TURNS_SUFFIX + "-other"
# The values of a turn after its provider and model: its usage (session_stats.USAGE_KEYS), its cost.
USAGE_VALUES: Final = 6


NameIndex = Annotated[int, msgspec.Meta(ge=0)]


class StoredTurns(preview_store.StampedLines, array_like=True):
    offsets: bytes  # array("q"): the offset of each assistant message's line described, in file order
    # what those lines add (the values of a session_stats.Turn): the provider and model of each as
    # its place in ``names``, where each name is once (a session of GBs has hundreds of thousands of
    # turns and a few models: read back, each turn's name would be a string of its own), then the
    # usage values column by column: a column of ints that fit in 64 bits, or of floats, as the
    # bytes of its array (typecode "q" or "d" in ``packed``: read back, 8 bytes a value, not an
    # object each; decoded as a view of what was read, not a copy), else a list of plain values
    # (typecode " ")
    names: list[Any]
    providers: list[NameIndex]
    models: list[NameIndex]
    packed: str
    values: list[list[Any] | memoryview]

    def columns(self) -> list[Any]:
        """The turns' values column by column, as session_stats sums them."""
        names = self.names
        values: list[Any] = []
        for typecode, column in zip(self.packed, self.values, strict=True):
            if isinstance(column, list):  # (typecode " ": see _whole)
                values.append(column)
            else:
                unpacked = array(typecode)
                unpacked.frombytes(column)
                values.append(unpacked)
        return [[names[i] for i in self.providers], [names[i] for i in self.models], *values]


def packed(values: Sequence[Any], onto: Any = None) -> Any:
    """``onto`` (an array of 64-bit ints, of floats, or a list; None: nothing yet) with ``values``
    after it: an array while every value is an int that fits (or every one a float), else a list.
    The same values, 8 bytes each instead of an object each (a session of GBs has hundreds of
    thousands of turns, their tokens counted in ints)."""
    if onto is None:
        onto = array("d" if values and values[0].__class__ is float else "q")
    if type(onto) is array:
        if not onto and onto.typecode == "q" and values and values[0].__class__ is float:
            onto = array("d")
        kind = int if onto.typecode == "q" else float
        if all(value.__class__ is kind for value in values):
            with contextlib.suppress(OverflowError):
                onto.extend(array(onto.typecode, values) if type(values) is not array else values)
                return onto
        onto = onto.tolist()
    onto.extend(values)
    return onto


def _stored_values(columns: Sequence[Any]) -> tuple[str, list[list[Any] | memoryview]]:
    """The usage ``columns`` as kept: each array's bytes (typecode ``q`` or ``d``: a view of them,
    not a copy, to be released once encoded), else a list (typecode blank)."""
    typecodes: list[str] = []
    values: list[list[Any] | memoryview] = []
    for column in columns:
        if type(column) is not array:
            column = packed(column)
        if type(column) is array:
            typecodes.append(column.typecode)
            values.append(memoryview(column))
        else:
            typecodes.append(" ")
            values.append(column)
    return "".join(typecodes), values


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

    def __init__(self, offsets: array[int], columns: list[Any], end: int) -> None:
        self.offsets = offsets
        self.columns = columns
        self.end = end

    def by_offset(self, low: int = 0, high: int | None = None) -> dict[int, tuple[Any, ...]]:
        """The turns by the offset of their line (those from ``low`` to ``high`` included; None:
        to the last)."""
        offsets = self.offsets
        if not offsets:
            return {}
        start = bisect_left(offsets, low)
        end = len(offsets) if high is None else bisect_right(offsets, high)
        if start == 0 and end == len(offsets):
            return dict(zip(offsets, zip(*self.columns, strict=True), strict=True))
        columns = [column[start:end] for column in self.columns]
        return dict(zip(offsets[start:end], zip(*columns, strict=True), strict=True))


NOTHING_KEPT: Final = KeptTurns(array("q"), [], 0)


def load(held: preview_store.HeldFile, entry: Entry, suffix: str = cache_dir.TURNS_SUFFIX) -> KeptTurns:
    """The turns kept for the file ``entry`` was read from, held as ``held`` (see
    ``preview_store.hold``): :data:`NOTHING_KEPT` when none are, or they no longer describe the
    file (they go then: see ``cache_dir.read_kept``). ``suffix``: of the file they are kept in
    (:data:`OTHER_USAGE_SUFFIX`: the other entries' usage)."""
    found = preview_store.store_of([entry], suffix, held.fd)
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
    if rest or len(stored.values) != USAGE_VALUES or len(stored.packed) != USAGE_VALUES:
        return None  # not an array of offsets, or another number of columns
    lengths: list[float] = [len(stored.providers), len(stored.models)]
    for typecode, column in zip(stored.packed, stored.values, strict=True):
        if typecode not in " qd" or (typecode == " ") != isinstance(column, list):
            return None
        lengths.append(len(column) if typecode == " " else len(column) / 8)
    if any(length != count for length in lengths):
        return None  # columns of another length
    if count and max(max(stored.providers), max(stored.models)) >= len(stored.names):
        return None  # a name that is not there
    return stored


def save(
    held: preview_store.HeldFile,
    entry: Entry,
    kept: KeptTurns,
    read: KeptTurns,
    suffix: str = cache_dir.TURNS_SUFFIX,
) -> bool:
    """Keep ``kept`` and the turns ``read`` since (their lines in file order, ``read.end`` just after
    the last) for the file ``entry`` was read from, held as ``held`` when they were read, in the
    file of ``suffix`` (see :func:`load`): nothing is written if it changed since. False when
    nothing was written."""
    found = preview_store.store_of([entry], suffix, held.fd)
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
        typecodes, values = _stored_values(columns[2:])
        try:
            body = _encode(StoredTurns(*stamp, offsets.tobytes(), *_stored_names(columns), typecodes, values))
        finally:
            for value in values:
                if type(value) is memoryview:
                    value.release()  # (an array a view is held of cannot grow)
        cache_dir.write_whole(found[1], *cache_dir.framed(MAGIC, FORMAT_VERSION, body))
        return True
    except Exception:  # noqa: BLE001 - a best-effort cache: turns that cannot be kept (read-only, full, odd values) are no error
        return False
    finally:
        held.close()
