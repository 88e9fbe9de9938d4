"""Which entries of a tree lie below which, for many pairs at once: each entry numbered in a
depth-first walk, so that an entry's subtree is the range of numbers from its own to the last of
its descendants'. "Is some member of this group above that entry" is then a search in the group's
ranges, not a walk per pair (thousands of tool calls sharing one id, each compared with each
result of that id, were quadratic).

Only for a tree without cycles (every entry is then reached from a root); the caller asks the
pairs' way otherwise.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence

from .lines import LineInfo


class Subtrees:
    """The depth-first numbering of a tree given by its roots and each entry's children, with the
    groups asked about so far (a group is asked about once per member)."""

    __slots__ = ("_first", "_last", "_numbers_of", "_ranges_of")

    def __init__(self, roots: Iterable[LineInfo], kids: Callable[[LineInfo], Sequence[LineInfo]]) -> None:
        first: dict[LineInfo, int] = {}
        last: dict[LineInfo, int] = {}
        count = itertools.count()
        for root in roots:
            first[root] = next(count)
            stack = [(root, iter(kids(root)))]
            while stack:
                node, below = stack[-1]
                child = next(below, None)
                if child is None:
                    stack.pop()
                    last[node] = len(first) - 1
                elif child not in first:  # (a tree: never, unless the caller's tree has a cycle)
                    first[child] = next(count)
                    stack.append((child, iter(kids(child))))
        self._first = first
        self._last = last
        # id of a group -> (the group, what answers about it): the group is held, so its id stays its own
        self._ranges_of: dict[int, tuple[Sequence[LineInfo], tuple[list[int], list[int]] | None]] = {}
        self._numbers_of: dict[int, tuple[Sequence[LineInfo], list[int] | None]] = {}

    def any_above(self, group: Sequence[LineInfo], e: LineInfo) -> bool | None:
        """Some member of ``group`` is on ``e``'s path, strictly above it; None when the walk did
        not reach one of them."""
        at = self._first.get(e)
        ranges = self._ranges(group)
        if at is None or ranges is None:
            return None
        starts, reach = ranges
        i = bisect.bisect_left(starts, at)  # the members numbered before e
        return i > 0 and reach[i - 1] >= at

    def any_below(self, e: LineInfo, group: Sequence[LineInfo]) -> bool | None:
        """Some member of ``group`` has ``e`` on its path, strictly above it; None when the walk
        did not reach one of them."""
        at = self._first.get(e)
        numbers = self._numbers(group)
        if at is None or numbers is None:
            return None
        i = bisect.bisect_right(numbers, at)
        return i < len(numbers) and numbers[i] <= self._last[e]

    def _ranges(self, group: Sequence[LineInfo]) -> tuple[list[int], list[int]] | None:
        """The members' first numbers in order, and for each the furthest last number among the
        members up to it: a number inside any member's range is inside one that starts before it
        and reaches it."""
        kept = self._ranges_of.get(id(group))
        if kept is None:
            first, last = self._first, self._last
            ranges = sorted((first.get(m, -1), last.get(m, -1)) for m in group)
            if ranges and ranges[0][0] < 0:
                kept = (group, None)
            else:
                starts = [start for start, _ in ranges]
                reach = list(itertools.accumulate((end for _, end in ranges), max))
                kept = (group, (starts, reach))
            self._ranges_of[id(group)] = kept
        return kept[1]

    def _numbers(self, group: Sequence[LineInfo]) -> list[int] | None:
        """The members' first numbers in order."""
        kept = self._numbers_of.get(id(group))
        if kept is None:
            numbers = sorted(self._first.get(m, -1) for m in group)
            kept = self._numbers_of[id(group)] = (group, None if numbers and numbers[0] < 0 else numbers)
        return kept[1]
