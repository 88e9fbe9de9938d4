"""Whether assistant messages are silent turns, as a session's preview cache learnt them (see
``preview_cache.PreviewCache.silent_turn``), held no longer than the session holds the messages.

The filters ask it of every assistant message a walk passes: on a big session that is hundreds of
thousands of them. Those of the session's file, once many were read, are kept one byte each beside
the file's assistant messages in file order (which the reads need anyway), not as an item of a
dict each; the others (the first few read, those appended since, those not read from a file) by
entry. When the file's order is made anew (the file was reloaded: its entries are new objects),
what was known of the entries before is let go with the order before.
"""

from __future__ import annotations

import weakref
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any, Final, NamedTuple

from ..format.entry import Entry
from ..format.scan import FileLineSource
from .entry_facts import is_assistant

# what one byte of FileOrder.states says of its message
_NOT_KNOWN: Final = 0
_SPOKEN: Final = 1
_SILENT: Final = 2
_READ_THE_USUAL_WAY: Final = 3  # its line's pass left it out: read whole when asked
_STATE_OF: Final = {False: _SPOKEN, True: _SILENT, None: _READ_THE_USUAL_WAY}
# (whether known, whether silent: None, not known or to be read the usual way), by state
KNOWN: Final[tuple[tuple[bool, bool | None], ...]] = (
    (False, None),
    (True, False),
    (True, True),
    (True, None),
)


class FileOrder(NamedTuple):
    """The assistant messages of a file's entries in file order, their offsets, where the next
    entry of the file starts after each (0: none, the last), and what is known of each (a byte)."""

    source: weakref.ref[Any]
    listed: list[Entry]
    starts: array[int]
    ends: array[int]
    states: bytearray

    def position(self, entry: Any) -> int:
        """Where ``entry`` is in :attr:`listed` (-1: not there)."""
        if type(entry) is not Entry or entry._source is not self.source():
            return -1
        at = bisect_left(self.starts, entry.offset)
        return at if at < len(self.listed) and self.listed[at] is entry else -1


def assistants_and_next_entries(
    entries: Iterable[Entry],
) -> tuple[list[Entry], array[int], array[int]] | None:
    """The assistant messages among ``entries`` (of one file), their offsets, and where the next
    entry starts after each (0: not known, the last); None if ``entries`` are not in file order."""
    listed: list[Entry] = []
    starts, ends = array("q"), array("q")
    last = -1
    ending = False  # (the entry before was an assistant message: this one starts its end)
    for e in entries:
        offset = e.offset
        if offset < last:
            return None
        if ending:
            ends.append(offset if offset > last else 0)  # (0: two entries of one offset, no end known)
        last = offset
        ending = is_assistant(e)
        if ending:
            listed.append(e)
            starts.append(offset)
    if ending:
        ends.append(0)
    return listed, starts, ends


class KnownSilences:
    """Whether each assistant message asked about is a silent turn (None: to be read the usual
    way), by the message (the entry object itself: an entry let go is not mistaken for another
    one made at its address)."""

    __slots__ = ("_alone", "order")

    def __init__(self) -> None:
        #: the file order of the last file many were read from (see :meth:`take_order`)
        self.order: FileOrder | None = None
        # the others: id(entry) -> (entry, silent) (the entry held: its id is not reused)
        self._alone: dict[int, tuple[Any, bool | None]] = {}

    def of(self, entry: Any) -> tuple[bool, bool | None]:
        """(whether known, whether ``entry`` is a silent turn: None when not known or when it is to
        be read the usual way)."""
        order = self.order
        if order is not None:
            at = order.position(entry)
            if at >= 0:
                return KNOWN[order.states[at]]
        found = self._alone.get(id(entry))
        if found is None or found[0] is not entry:
            return KNOWN[_NOT_KNOWN]
        return (True, found[1])

    def keep(self, entry: Any, silent: bool | None, *, replace: bool = True) -> None:
        """Remember ``silent`` for ``entry`` (``replace``: also when something is known already)."""
        order = self.order
        if order is not None:
            at = order.position(entry)
            if at >= 0:
                if replace or not order.states[at]:
                    order.states[at] = _STATE_OF[silent]
                return
        alone = self._alone
        key = id(entry)
        found = alone.get(key)
        if replace or found is None or found[0] is not entry:
            alone[key] = (entry, silent)

    def take_order(self, source: Any, listed: list[Entry], starts: array[int], ends: array[int]) -> FileOrder:
        """Keep the file order of ``source``'s assistant messages (``listed``, their ``starts`` and
        ``ends``, see :class:`FileOrder`) in place of the one before, with what is known of them;
        what was known of the entries of another file, or of none, is let go."""
        order = self.order = FileOrder(weakref.ref(source), listed, starts, ends, bytearray(len(listed)))
        alone: dict[int, tuple[Any, bool | None]] = {}
        for key, (entry, silent) in self._alone.items():
            if (
                type(entry) is not Entry
                or type(entry._source) is not FileLineSource
                or entry._source is not source
            ):
                continue  # (a reload's entries are all of its file: these are no longer the session's)
            at = order.position(entry)
            if at >= 0:
                order.states[at] = _STATE_OF[silent]
            else:
                alone[key] = (entry, silent)
        self._alone = alone
        return order

    def order_of(self, source: Any) -> FileOrder | None:
        """The kept file order if it is ``source``'s."""
        order = self.order
        return order if order is not None and order.source() is source else None

    def items(self) -> Iterator[tuple[Any, bool | None]]:
        """(entry, whether a silent turn; None: to be read the usual way) of every message known."""
        order = self.order
        if order is not None:
            listed, states = order.listed, order.states
            for at, state in enumerate(states):
                if state:
                    yield listed[at], KNOWN[state][1]
        yield from self._alone.values()

    def merge(self, known: Iterable[tuple[Any, bool | None]]) -> None:
        """Keep what ``known`` says of messages nothing is known of yet."""
        for entry, silent in known:
            self.keep(entry, silent, replace=False)
