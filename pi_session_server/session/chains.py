"""Where entries sit in the manager's entry list, and the chains in it: runs of entries that each
answer the entry just before (a chat without branches is one chain).

A long chat's path from its leaf to the root is tens of thousands of entries but only a few chains,
so walking it a chain at a time (a slice of the entry list per chain) costs a lookup per chain
instead of one per entry. The scanner records where chains start while it reads (``IdIndex``); the
manager keeps the record up to date as entries are appended.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import attrgetter
from typing import Any

from ..format.entry import Entry

_LINE = attrgetter("line")


class Positions:
    """Where an entry sits in a list of entries in file order: found by its line number (lines
    grow down the file), confirmed by identity; entries without usable line numbers (in-memory
    sessions) are found through a map built the first time that fails."""

    def __init__(self, entries: list[Entry]) -> None:
        self._entries = entries
        self._by_identity: dict[int, int] | None = None

    def of(self, entry: Entry, before: int) -> int:
        """The position of ``entry`` among the first ``before`` entries, or -1."""
        entries = self._entries
        at = bisect_left(entries, entry.line, 0, before, key=_LINE)
        if at < before and entries[at] is entry:
            return at
        if self._by_identity is None:
            self._by_identity = {id(e): i for i, e in enumerate(entries)}
        found = self._by_identity.get(id(entry), -1)
        return found if found < before else -1


def entry_on_line(entries: list[Entry], line: int) -> Entry | None:
    """The entry of ``entries`` (in file order) whose line is ``line``, or None."""
    if line < 0:
        return None
    at = bisect_left(entries, line, key=_LINE)
    if at < len(entries) and entries[at].line == line:
        return entries[at]
    # not found by halves: none has this line, or line numbers are out of order (entries made in
    # memory have none, -1): look at each
    return next((e for e in entries if e.line == line), None)


def path_by_chains(
    start: Entry, entries: list[Entry], chain_starts: list[int], index: dict[Any, Entry]
) -> list[Entry] | None:
    """``walk_to_root(start, index)`` a chain at a time, or None when this cannot answer (the
    caller then walks entry by entry).

    ``index`` must be plain (every key a non-empty string: see ``context.is_plain_index``) and hold
    exactly ``entries`` (so ids are unique); ``chain_starts`` is sorted, and every position not in
    it holds an entry whose parentId is the id of the entry just before it.
    """
    count = len(entries)
    if count == 0 or len(index) != count or not chain_starts or chain_starts[0] != 0:
        return None
    positions = Positions(entries)
    at = count - 1 if entries[-1] is start else positions.of(start, count)
    if at < 0:
        return None  # ``start`` is not one of ``entries``
    pieces: list[tuple[int, int]] = []  # (first, end) in entries, from the start backwards
    walked = 0
    while True:
        first = chain_starts[bisect_right(chain_starts, at) - 1]
        pieces.append((first, at + 1))
        walked += at + 1 - first
        if walked > count:  # an entry met twice: a cycle, which the walk that remembers handles
            return None
        try:
            parent = index.get(entries[first].parent_id)
        except TypeError:  # an unhashable parentId
            return None
        if parent is None:
            break
        at = positions.of(parent, count)
        if at < 0:
            return None
    # Not a list per piece and then the path: a long chat's path is 800,000 entries, a piece as
    # long as that is copied once.
    first, end = pieces[-1]
    path = entries[first:end]
    for first, end in reversed(pieces[:-1]):
        path += entries[first:end]
    return path
