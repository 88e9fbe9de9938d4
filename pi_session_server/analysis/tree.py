"""The tree facts of a document, maintained incrementally as lines come and go.

Entries are linked by ``parentId`` exactly as the reference resolves it (docs/API.md §6.6):
the parent of an entry is the **last** entry carrying that id (JS Map semantics), and a
falsy ``parentId`` ends the path. Cycles end a walk before revisiting an entry (D1).

:meth:`TreeIndex.update` takes the entries that left and arrived and recomputes the cross-line
problems only of entries whose facts can have changed: the entries sharing an id with them, their
children, what refers to them (labels, compactions, branch summaries), the tool calls and results
they pair with, and, when a parent link of an entry *with descendants* changed, that subtree. An
appended line therefore costs O(1) tree work, whatever the file size.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..format.jsjson import dumps_short
from ..format.jsvalue import ABSENT, strict_equal
from . import codes
from .lines import LineInfo, Problem
from .subtrees import Subtrees

#: beyond this many changed parent links, recompute cycles and problems over the whole tree
_FULL_RECOMPUTE = 256
#: ancestors looked at directly before an ancestry test falls back to depths
_NEAR = 16
#: pairs a pass compares one at a time, beyond one per entry of the tree, before it numbers the
#: tree's subtrees (a tree of a few entries is not numbered for a few pairs)
_PAIRS_BEFORE_NUMBERING = 1024
#: the depths kept: of the entries whose depth is a multiple of this (TreeIndex.depth)
_DEPTH_STEP = 16


class Groups(Mapping[Any, Sequence[LineInfo]]):
    """Entries grouped by a key, each group in file order: a read-only mapping of key -> sequence.

    Nearly every group holds one entry (an id, the child of a parent in a linear session, a tool
    call's result), so a group of one is kept as the entry itself rather than a list of it: a list
    per entry would cost more than the entry's own facts.
    """

    __slots__ = ("_map",)

    def __init__(self) -> None:
        # key -> the LineInfo of a group of one, or the list of a group of two or more
        self._map: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Sequence[LineInfo]:
        group = self._map[key]
        return group if group.__class__ is list else (group,)

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[Any]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def last(self, key: Any) -> LineInfo | None:
        """The group's last entry (the one an id resolves to), or None."""
        group = self._map.get(key)
        return group[-1] if group.__class__ is list else group

    def append(self, key: Any, e: LineInfo) -> None:
        """Add ``e`` after every entry of its group (a bulk load in file order)."""
        group = self._map.get(key)
        if group is None:
            self._map[key] = e
        elif group.__class__ is list:
            group.append(e)
        else:
            self._map[key] = [group, e]

    def insert(self, key: Any, e: LineInfo) -> None:
        """Add ``e`` at its place in file order."""
        group = self._map.get(key)
        if group is None:
            self._map[key] = e
            return
        if group.__class__ is not list:
            group = self._map[key] = [group]
        if group[-1].line < e.line:
            group.append(e)
        else:
            bisect.insort(group, e, key=lambda x: x.line)

    def remove(self, key: Any, e: LineInfo) -> None:
        """Take ``e`` out of its group (nothing if it is not in it)."""
        group = self._map.get(key)
        if group is None:
            return
        if group.__class__ is not list:
            if group is e:
                del self._map[key]
            return
        for i in range(len(group) - 1, -1, -1):
            if group[i] is e:
                del group[i]
                break
        if len(group) == 1:
            self._map[key] = group[0]

    def shared(self) -> Iterator[tuple[Any, list[LineInfo]]]:
        """The groups of more than one entry, with their key."""
        for key, group in self._map.items():
            if group.__class__ is list:
                yield key, group


def _normalized(cycle: tuple[LineInfo, ...]) -> tuple[LineInfo, ...]:
    """The same cycle (in parent order), starting at its earliest line."""
    i = min(range(len(cycle)), key=lambda k: cycle[k].line)
    return cycle[i:] + cycle[:i]


#: related lines given with one problem (the others of a duplicate group or a cycle)
_RELATED = 20


def _first_related(group: Iterable[LineInfo], e: LineInfo, why: str) -> tuple[tuple[LineInfo, str], ...]:
    """The first few members of ``group`` other than ``e``: O(1), however large the group (each of
    its members gets such a list, so taking the whole group each time would be quadratic)."""
    return tuple(itertools.islice(((m, why) for m in group if m is not e), _RELATED))


class _SharedRelated:
    """:func:`_first_related` of the members of one group, asked one after the other: every member
    past the group's first few has the same related lines, given as one tuple (the problems of a
    crash loop's thousands of copies of a line then name one tuple, whose lines are placed once
    per pass: diagnostics.WholeLines). The group's first members are compared each time, so a
    group changed by an edit since is never answered from before."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # (group, why, its first members, their related lines)
        self._last: (
            tuple[Sequence[LineInfo], str, Sequence[LineInfo], tuple[tuple[LineInfo, str], ...]] | None
        ) = None

    def of(self, group: Sequence[LineInfo], e: LineInfo, why: str) -> tuple[tuple[LineInfo, str], ...]:
        head = group[: _RELATED + 1]
        if e in head:  # (identity: a LineInfo equals itself only)
            return _first_related(head, e, why)
        last = self._last
        if last is not None and last[0] is group and last[1] == why and last[2] == head:
            return last[3]
        related = tuple((m, why) for m in head[:_RELATED])
        self._last = (group, why, head, related)
        return related


def _short(value: Any) -> str:
    """An id quoted in a message: a string as it is, anything else as its JSON text (what the user
    sees in the file), cut short; any size or depth of value costs the same."""
    if isinstance(value, str):
        return value if len(value) <= 40 else value[:39] + "…"
    return dumps_short(value, 40)


class TreeIndex:
    def __init__(self) -> None:
        self._members: set[LineInfo] | None = None  # see members
        self._size = 0  # how many entries are indexed
        self.by_id = Groups()  # id key -> entries
        self._children: Groups | None = None  # see children
        self.referrers = Groups()  # targetId/firstKeptEntryId/fromId -> entries
        self.results_by_call = Groups()  # toolCallId -> tool results
        self.calls_by_id = Groups()  # toolCall id -> assistant messages
        self.cycles: dict[LineInfo, tuple[LineInfo, ...]] = {}  # member -> its cycle
        self.cross: dict[LineInfo, tuple[Problem, ...]] = {}  # entry -> its cross-line problems
        self._depth: dict[LineInfo, int] = {}
        self._skips: dict[LineInfo, LineInfo | None] = {}  # see _skip
        self._skips_epoch = 0  # the epoch they were found in
        self.epoch = 0  # bumped whenever a parent link of an entry with descendants changes
        self._related = _SharedRelated()  # the related lines of a large group's members
        # during a pass of _check: the pairs of entries compared, and the tree's subtrees once
        # comparing pairs came to cost more than numbering them
        self._checking = False
        self._compared = 0
        self._subtrees: Subtrees | None = None

    @property
    def members(self) -> set[LineInfo]:
        """The entries indexed. Built when first asked, as :attr:`children` is."""
        if self._members is None:
            self._members = set(self._indexed())
        return self._members

    def _indexed(self) -> Iterator[LineInfo]:
        for group in self.by_id._map.values():
            if group.__class__ is list:
                yield from group
            else:
                yield group

    @property
    def children(self) -> Groups:
        """Key of a truthy parentId -> the entries with it. Built when first asked: checking a
        whole file never asks (an index of every entry's parent costs as much as the id index)."""
        if self._children is None:
            children = Groups()
            for e in self._indexed():
                if e.pkey is not None:
                    children.insert(e.pkey, e)
            self._children = children
        return self._children

    # -- resolution ---------------------------------------------------------------------------

    def resolve(self, key: Any) -> LineInfo | None:
        return self.by_id.last(key)

    def parent(self, e: LineInfo) -> LineInfo | None:
        pk = e.pkey
        if pk is None:
            return None
        group = self.by_id._map.get(pk)
        return group[-1] if group.__class__ is list else group

    def kids(self, e: LineInfo) -> Sequence[LineInfo]:
        """Entries whose parent resolves to ``e`` (file order); none for a shadowed duplicate."""
        if e.key is ABSENT or self.resolve(e.key) is not e:
            return ()
        return self.children.get(e.key, ())

    def walk_up(self, e: LineInfo | None) -> Iterator[LineInfo]:
        """``e``, its parent, ... to the root, stopping before an entry already walked (D1)."""
        if e is None:
            return
        if not self.cycles:
            cur: LineInfo | None = e
            while cur is not None:
                yield cur
                cur = self.parent(cur)
            return
        seen: set[LineInfo] = set()
        cur = e
        while cur is not None and cur not in seen:
            yield cur
            seen.add(cur)
            cur = self.parent(cur)

    def depth(self, e: LineInfo) -> int:
        """Length of the path from ``e`` to its root, minus one (D1 for cycles).

        Kept: the depth of each entry asked (asking every entry in file order then costs a step
        each), of cycle members, and of every :data:`_DEPTH_STEP`-th entry of the path walked up
        (not all of it: checking a file asks a few entries of a long path, whose every depth
        would cost more than the entries' facts), which the next walk then stops at."""
        known = self._depth
        d = known.get(e)
        if d is not None:
            return d
        chain: list[LineInfo] = []
        cur: LineInfo | None = e
        base = -1
        limit = self._size + 1
        while cur is not None:
            cached = known.get(cur)
            if cached is not None:
                base = cached
                break
            cycle = self.cycles.get(cur)
            if cycle is not None:
                base = len(cycle) - 1
                for m in cycle:
                    known[m] = base
                break
            chain.append(cur)
            if len(chain) > limit:  # defensive: an unflagged cycle
                break
            cur = self.parent(cur)
        # chain[i] is at depth base + len(chain) - i
        for i in range((base + len(chain)) % _DEPTH_STEP, len(chain), _DEPTH_STEP):
            known[chain[i]] = base + len(chain) - i
        d = known[e] = base + len(chain)
        return d

    def is_ancestor(self, a: LineInfo, e: LineInfo) -> bool:
        """``a`` is on ``e``'s path, strictly above it."""
        if a is e:
            return False
        # the usual case, a tool result a few steps below its call, needs no depths
        cur = self.parent(e)
        for _ in range(_NEAR):
            if cur is None:
                return False
            if cur is a:
                return True
            cur = self.parent(cur)
        if self.cycles:
            return any(x is a for x in self.walk_up(self.parent(e)))
        depth, target = self.depth(e), self.depth(a)
        return depth > target and self._ancestor_at(e, depth, target) is a

    def _forget_depths(self) -> None:
        self._depth.clear()
        self._skips.clear()

    def _ancestor_at(self, e: LineInfo, depth: int, target: int) -> LineInfo | None:
        """The ancestor of ``e`` (at ``depth``, in a tree without cycles) at depth ``target``:
        reached by skips, not a parent at a time (a tool result far below or beside its call, in a
        file of thousands of them, walked the path between them for each)."""
        if self._skips_epoch != self.epoch:  # an entry of the tree held by a new line
            self._skips.clear()
            self._skips_epoch = self.epoch
        node: LineInfo | None = e
        while node is not None and depth > target:
            low = depth & -depth
            if depth - low >= target:
                node = self._skip(node, depth)
                depth -= low
            else:
                node = self.parent(node)
                depth -= 1
        return node

    def _skip(self, e: LineInfo, depth: int) -> LineInfo | None:
        """The ancestor of ``e`` (at ``depth``) at ``depth`` less its lowest set bit, kept: made of
        the skips of the ancestors between, whose lowest bits are lower (as a Fenwick tree's
        ranges), so that reaching any ancestor takes a few skips per bit of the depth."""
        low = depth & -depth
        if low == 1:
            return self.parent(e)
        if e in self._skips:
            return self._skips[e]
        node, at, target = self.parent(e), depth - 1, depth - low
        while node is not None and at > target:
            node = self._skip(node, at)
            at -= at & -at
        self._skips[e] = node
        return node

    # -- indexing -----------------------------------------------------------------------------

    def _index(self, e: LineInfo) -> None:
        self._size += 1
        if self._members is not None:
            self._members.add(e)
        self.by_id.insert(e.key, e)
        if e.pkey is not None and self._children is not None:
            self._children.insert(e.pkey, e)
        if isinstance(e.ref, str):
            self.referrers.insert(e.ref, e)
        if e.result_call_id is not None:
            self.results_by_call.insert(e.result_call_id, e)
        for c in e.call_ids:
            self.calls_by_id.insert(c, e)

    def _unindex(self, e: LineInfo) -> None:
        self._size -= 1
        if self._members is not None:
            self._members.discard(e)
        self.by_id.remove(e.key, e)
        if e.pkey is not None and self._children is not None:
            self._children.remove(e.pkey, e)
        if isinstance(e.ref, str):
            self.referrers.remove(e.ref, e)
        if e.result_call_id is not None:
            self.results_by_call.remove(e.result_call_id, e)
        for c in e.call_ids:
            self.calls_by_id.remove(c, e)
        self.cross.pop(e, None)
        self._depth.pop(e, None)
        self._skips.pop(e, None)

    # -- updates ------------------------------------------------------------------------------

    def build(self, entries: list[LineInfo]) -> None:
        """Index a whole document's entries (in file order) and compute every problem."""
        add = self.start_build()
        for e in entries:
            add(e)
        self.finish_build(entries)

    def start_build(self) -> Callable[[LineInfo], None]:  # noqa: C901 - the hot loop, kept inline on purpose
        """Empty the index for a bulk load: returns the function that indexes each entry, in file
        order, as soon as it is read (its parentId and toolCallId then give up their own string for
        the one of the id they name while it is the newest object, which the next line's strings
        take the place of: given up once every line is read, they would leave as many holes in the
        heap). :meth:`finish_build` with every entry added completes the load."""
        self.__init__()  # type: ignore[misc]
        by_id = self.by_id._map
        by_id_get = by_id.get
        referrers = self.referrers
        results = self.results_by_call
        calls = self.calls_by_id
        calls_get = calls._map.get

        def add(e: LineInfo) -> None:  # noqa: C901
            key = e.key
            group = by_id_get(key)
            if group is None:
                by_id[key] = e
            elif group.__class__ is list:
                group.append(e)
            else:
                by_id[key] = [group, e]
            pk = e.pkey
            if pk.__class__ is str and e.parent_id is pk:
                # one string for an id and every parentId naming it (each line decodes its own)
                group = by_id_get(pk)
                if group is not None:
                    e.pkey = e.parent_id = (group[0] if group.__class__ is list else group).key
            if e.ref.__class__ is str:
                referrers.append(e.ref, e)
            if e.call_ids:
                for c in e.call_ids:
                    calls.append(c, e)
            call = e.result_call_id
            if call is not None:
                callers = calls_get(call)
                if callers is not None:
                    # one string for a tool call's id and the toolCallId of its results
                    for c in (callers[0] if callers.__class__ is list else callers).call_ids:
                        if c == call:
                            call = e.result_call_id = c
                            break
                results.append(call, e)

        return add

    def finish_build(self, entries: list[LineInfo]) -> None:
        """Complete a bulk load (:meth:`start_build`) of ``entries``, every one added and numbered:
        compute every problem."""
        self._size = len(entries)
        self._check(self._build_pass(entries))

    def _build_pass(self, entries: list[LineInfo]) -> list[LineInfo]:
        """Cycles, and the entries that may have a cross-line problem.

        In a file pi wrote every parent comes before its children, so no cycle is possible; only a
        parent at or after its child (a hand edit, a duplicate id) calls for the full cycle search.
        An entry is a suspect unless every check it is subject to passes the quick way; suspects
        get the complete check (``_problems_of``), so the result is exactly what checking every
        entry would give.
        """
        suspects, backward = self._parents_found(entries)
        if backward:
            self._find_all_cycles()
            suspects.extend(self.cycles)
        for key, same_id in self.by_id.shared():
            if key is not ABSENT and key is not None:
                suspects.extend(same_id)
        for referring in self.referrers.values():
            suspects.extend(e for e in referring if e.etype in ("label", "compaction", "branch_summary"))
        suspects.extend(self._unpaired_tools())
        return suspects

    def _parents_found(self, entries: list[LineInfo]) -> tuple[list[LineInfo], bool]:
        """The entries whose parent is not found, and whether some parent comes at or after its
        child."""
        by_id_get = self.by_id._map.get
        suspects: list[LineInfo] = []
        backward = False
        for e in entries:
            pk = e.pkey
            if pk is None:
                continue
            group = by_id_get(pk)
            if group is None:
                suspects.append(e)
            elif (group[-1] if group.__class__ is list else group).line >= e.line:
                backward = True
        return suspects, backward

    def _unpaired_tools(self) -> list[LineInfo]:
        """The tool calls and results that may lack their other half."""
        suspects: list[LineInfo] = []
        # Tool calls and results pair by id; an id repeated by many calls (a model that numbers
        # its calls call_0, call_1, ... in every turn) must not make this quadratic: the
        # ancestors near each result are collected once, and calls are looked up in sets.
        calls = self.calls_by_id._map
        results_of = self.results_by_call._map
        by_id_get = self.by_id._map.get
        for c, group in results_of.items():
            callers = calls.get(c)
            if callers is None:
                suspects.extend(group if group.__class__ is list else (group,))
                continue
            if (
                group.__class__ is not list
                and group.pkey is not None
                and callers.__class__ is not list
                and by_id_get(group.pkey) is callers
            ):
                continue  # the usual pair: one call, one result, whose parent is the call (alone with its id)
            calls_of_c = set(callers) if callers.__class__ is list else {callers}
            answered: set[LineInfo] = set()  # the calls a result with their id is close below
            for r in group if group.__class__ is list else (group,):
                near = self._near_calls(r, calls_of_c)
                if not near:
                    suspects.append(r)
                else:
                    answered.update(near)
            suspects.extend(a for a in calls_of_c if a not in answered)
        for c, callers in calls.items():
            if c not in results_of:
                suspects.extend(callers if callers.__class__ is list else (callers,))
        return suspects

    def _near_calls(self, r: LineInfo, calls: set[LineInfo]) -> list[LineInfo]:
        """The members of ``calls`` among the few nearest ancestors of ``r`` (the walk stops once
        it met them all: as a rule, at the parent)."""
        found = []
        by_id_get = self.by_id._map.get
        cur = r
        for _ in range(_NEAR):
            pk = cur.pkey
            group = by_id_get(pk) if pk is not None else None
            if group is None:
                break
            cur = group[-1] if group.__class__ is list else group
            if cur in calls:
                found.append(cur)
                if len(found) == len(calls):
                    break
        return found

    def _near_ancestors(self, e: LineInfo) -> Iterator[LineInfo]:
        """The few nearest ancestors of ``e``."""
        cur = self.parent(e)
        for _ in range(_NEAR):
            if cur is None:
                return
            yield cur
            cur = self.parent(cur)

    def update(self, removed: Iterable[LineInfo], added: Iterable[LineInfo]) -> None:
        """Entries ``removed`` left the document, ``added`` arrived (already numbered)."""
        removed = [e for e in removed if e in self.members]
        added = list(added)
        if not removed and not added:
            return
        if not self._size and not removed:
            self.build(added)
            return
        keys = {e.key for e in removed} | {e.key for e in added}
        old_last = {k: self.resolve(k) for k in keys}
        broken = {e for e in removed if e in self.cycles}
        for e in removed:
            self._unindex(e)
        for e in added:
            self._index(e)

        in_place = self._rewritten_in_place(keys, old_last, removed, added)
        dirty, moved, structural = self._touched(keys, old_last, removed, added, in_place)
        if structural or broken:
            self.epoch += 1
            self._forget_depths()
        elif in_place:
            self.epoch += 1  # the same tree, an entry of it held by a new line (a path holds it)

        if structural and len(moved) > _FULL_RECOMPUTE:
            self._find_all_cycles()
            dirty = set(self.members)
        else:
            self._update_cycles(broken, moved, dirty)
            if structural:
                self._dirty_subtrees(moved, dirty)
        self.recompute(dirty)

    def _touched(
        self,
        keys: set[Any],
        old_last: dict[Any, LineInfo | None],
        removed: list[LineInfo],
        added: list[LineInfo],
        in_place: set[LineInfo],
    ) -> tuple[set[LineInfo], list[LineInfo], bool]:
        """After an update: the entries to check again, those whose parent link is new or changed,
        and whether the tree's shape changed (an id now resolves to another entry).

        An entry rewritten in place (``in_place``) leaves the shape as it was: its children keep
        their paths, so nothing below it is checked again (an edit inside a message's text, typed,
        would otherwise check every entry after it at each keystroke)."""
        dirty: set[LineInfo] = set(added)
        moved: list[LineInfo] = [e for e in added if e not in in_place]  # a new or changed parent link
        structural = False
        for k in keys:
            lst = self.by_id.get(k)
            if lst:
                dirty.update(lst)
            kids = self.children.get(k)
            if kids:
                dirty.update(kids)
                now = lst[-1] if lst else None
                if old_last.get(k) is not now and now not in in_place:
                    moved.extend(kids)
                    structural = True
            refs = self.referrers.get(k) if isinstance(k, str) else None
            if refs:
                dirty.update(refs)
        for e in (*removed, *added):
            if e.result_call_id is not None:
                dirty.update(self.calls_by_id.get(e.result_call_id, ()))
            for c in e.call_ids:
                dirty.update(self.results_by_call.get(c, ()))
        return dirty, moved, structural

    def _rewritten_in_place(
        self,
        keys: set[Any],
        old_last: dict[Any, LineInfo | None],
        removed: list[LineInfo],
        added: list[LineInfo],
    ) -> set[LineInfo]:
        """The entries ``added`` that took the place of one ``removed`` (its line edited): the
        entry their id resolved to, with the same parent link, on no cycle (a cycle through it is
        looked for again)."""
        gone = set(removed)
        new = set(added)
        out: set[LineInfo] = set()
        for k in keys:
            was, now = old_last.get(k), self.resolve(k)
            if (
                was is not None
                and now is not None
                and was in gone
                and now in new
                and was.pkey == now.pkey
                and was not in self.cycles
            ):
                out.add(now)
        return out

    def recompute(self, entries: Iterable[LineInfo]) -> None:
        members = self.members
        self._check(e for e in entries if e in members)

    def _check(self, entries: Iterable[LineInfo]) -> None:
        """Compute the cross-line problems of ``entries`` (all indexed)."""
        cross = self.cross
        # (the tree holds still during the pass: what it learns of the tree's shape is let go after)
        self._checking, self._compared, self._subtrees = True, 0, None
        try:
            for e in entries:
                problems = self._problems_of(e)
                if problems:
                    cross[e] = problems
                else:
                    cross.pop(e, None)
        finally:
            self._checking, self._subtrees = False, None

    def _dirty_subtrees(self, roots: list[LineInfo], dirty: set[LineInfo]) -> None:
        """Path facts below a changed link: compactions, tool results and the calls they answer."""
        seen: set[LineInfo] = set()
        stack = [e for e in roots if e in self.members]
        while stack:
            e = stack.pop()
            if e in seen:
                continue
            seen.add(e)
            if e.etype == "compaction" or e.call_ids:
                dirty.add(e)
            if e.result_call_id is not None:
                dirty.add(e)
                dirty.update(self.calls_by_id.get(e.result_call_id, ()))
            stack.extend(self.kids(e))

    # -- cycles -------------------------------------------------------------------------------

    def _update_cycles(self, broken: set[LineInfo], moved: list[LineInfo], dirty: set[LineInfo]) -> None:
        for e in list(self.cycles):
            cycle = self.cycles.get(e)
            if cycle is None:
                continue
            if broken.intersection(cycle) or any(m in self.cycles and self.cycles[m] is cycle for m in moved):
                for m in cycle:
                    self.cycles.pop(m, None)
                    dirty.add(m)
        for s in moved:
            if s not in self.members or s in self.cycles or not self.kids(s):
                continue  # nobody's parent: it cannot be on a cycle
            cycle = self._cycle_through(s)
            if cycle is not None:
                cycle = _normalized(cycle)
                for m in cycle:
                    self.cycles[m] = cycle
                    dirty.add(m)
                self._forget_depths()
                self.epoch += 1

    def _cycle_through(self, s: LineInfo) -> tuple[LineInfo, ...] | None:
        path = [s]
        seen = {s}
        cur = self.parent(s)
        while cur is not None:
            if cur is s:
                return tuple(path)
            if cur in seen or cur in self.cycles:
                return None
            seen.add(cur)
            path.append(cur)
            cur = self.parent(cur)
        return None

    def _find_all_cycles(self) -> None:
        self.cycles.clear()
        mark: dict[LineInfo, int] = {}
        for walk_no, e in enumerate(self._indexed(), 1):
            if e in mark:
                continue
            walk: list[LineInfo] = []
            cur: LineInfo | None = e
            while cur is not None and cur not in mark:
                mark[cur] = walk_no
                walk.append(cur)
                cur = self.parent(cur)
            if cur is not None and mark[cur] == walk_no:
                cycle = _normalized(tuple(walk[walk.index(cur) :]))
                for m in cycle:
                    self.cycles[m] = cycle
        self._forget_depths()

    # -- the cross-line checks ----------------------------------------------------------------

    def _problems_of(self, e: LineInfo) -> tuple[Problem, ...]:
        out: list[Problem] = []
        self._duplicate_id_problems(e, out)
        self._parent_problems(e, out)
        self._reference_problems(e, out)
        self._tool_problems(e, out)
        return tuple(out)

    def _duplicate_id_problems(self, e: LineInfo, out: list[Problem]) -> None:
        key = e.key
        if key is not ABSENT and key is not None:
            same = self.by_id.get(key)
            if same is not None and len(same) > 1:
                last = same[-1] is e
                note = (
                    "pi's index keeps this one"
                    if last
                    else "pi's index keeps a later one, so this entry cannot be found"
                )
                out.append(
                    Problem(
                        codes.DUPLICATE_ID,
                        f"duplicate id `{_short(e.id)}`: {len(same)} entries have it; {note}",
                        path=("id",),
                        related=self._related.of(same, e, "same id"),
                    )
                )

    def _parent_problems(self, e: LineInfo, out: list[Problem]) -> None:
        """Its own parent, a parent that is missing, or a parent cycle."""
        key = e.key
        if e.pkey is not None:
            if e.pkey == key and strict_equal(e.parent_id, e.id):
                out.append(
                    Problem(
                        codes.PARENT_CYCLE,
                        "entry is its own parent: the reference loops forever on it",
                        path=("parentId",),
                    )
                )
            elif e.pkey not in self.by_id:
                out.append(
                    Problem(
                        codes.DANGLING_PARENT,
                        f"parentId `{_short(e.parent_id)}` names no entry: pi shows this entry as a root and its context stops here",
                        path=("parentId",),
                    )
                )
            elif e in self.cycles and len(self.cycles[e]) > 1:
                cycle = self.cycles[e]
                ids = " → ".join(_short(m.id) for m in cycle[:6]) + (
                    " → …" if len(cycle) > 6 else f" → {_short(cycle[0].id)}"
                )
                out.append(
                    Problem(
                        codes.PARENT_CYCLE,
                        f"parent cycle of {len(cycle)} entries ({ids}): the reference loops forever on it",
                        path=("parentId",),
                        related=self._related.of(cycle, e, "in the cycle"),
                    )
                )

    def _reference_problems(self, e: LineInfo, out: list[Problem]) -> None:
        """A label, branch summary or compaction naming an entry that is not there."""
        etype = e.etype
        if etype == "label":
            if isinstance(e.ref, str) and e.ref not in self.by_id:
                out.append(
                    Problem(
                        codes.LABEL_TARGET_MISSING,
                        f"label target `{_short(e.ref)}` names no entry",
                        path=("targetId",),
                    )
                )
        elif etype == "branch_summary":
            if isinstance(e.ref, str) and e.ref != "root" and e.ref not in self.by_id:
                out.append(
                    Problem(
                        codes.FROM_ID_UNKNOWN,
                        f"fromId `{_short(e.ref)}` names no entry (nor `root`)",
                        path=("fromId",),
                    )
                )
        elif etype == "compaction" and isinstance(e.ref, str):
            problem = self._check_first_kept(e)
            if problem is not None:
                out.append(problem)

    def _tool_problems(self, e: LineInfo, out: list[Problem]) -> None:
        """A tool result without its call, a tool call without its result."""
        if e.result_call_id is not None and e.role == "toolResult":
            problem = self._check_result(e)
            if problem is not None:
                out.append(problem)
        if e.call_ids and e.role == "assistant":
            for i, c in enumerate(e.call_ids):
                if not self._answered(e, c):
                    out.append(
                        Problem(
                            codes.UNANSWERED_TOOL_CALL,
                            f"toolCall `{_short(c)}` has no toolResult below it on any branch: pi sends "
                            '"No result provided" in its place',
                            path=("message", "content", e.call_blocks[i], "id"),
                        )
                    )

    def _check_first_kept(self, c: LineInfo) -> Problem | None:
        target = c.ref
        if strict_equal(target, c.id):
            return None  # "keep nothing", as pi 1.6.0 writes it (FORMAT.md §6.5)
        # Is an entry with id ``target`` on the compaction's path (walked up from its parent,
        # stopping before an entry walked already, D1)? Every entry on a path is the one its id
        # resolves to, and only a string id is a string key: the only candidate is the entry
        # ``target`` resolves to, and is_ancestor answers without walking the whole path.
        where = self.resolve(target)
        if where is not None and self.is_ancestor(where, c):
            return None
        if where is None:
            msg = f"firstKeptEntryId `{_short(target)}` names no entry: the context after this compaction keeps nothing before it"
            return Problem(codes.FIRST_KEPT_NOT_ON_PATH, msg, path=("firstKeptEntryId",))
        msg = f"firstKeptEntryId `{_short(target)}` is not on this compaction's path (it is on another branch): nothing before the compaction is kept"
        return Problem(
            codes.FIRST_KEPT_NOT_ON_PATH,
            msg,
            path=("firstKeptEntryId",),
            related=((where, "the entry it names"),),
        )

    def _check_result(self, r: LineInfo) -> Problem | None:
        c = r.result_call_id
        candidates = self.calls_by_id.get(c) if c is not None else None
        if not candidates:
            return Problem(
                codes.ORPHAN_TOOL_RESULT,
                f"toolResult for `{_short(c)}`: no assistant toolCall has this id; providers reject this context",
                path=("message", "toolCallId"),
            )
        if self._any_above(candidates, r):
            return None
        return Problem(
            codes.ORPHAN_TOOL_RESULT,
            f"toolResult for `{_short(c)}`: the toolCall with this id is not on this result's path; providers reject this context",
            path=("message", "toolCallId"),
            related=_first_related(candidates, r, "the toolCall, on another branch"),
        )

    def _answered(self, a: LineInfo, c: str) -> bool:
        results = self.results_by_call.get(c, ())
        subtrees = self._subtrees_for(len(results))
        found = subtrees.any_below(a, results) if subtrees is not None else None
        if found is not None:
            return found
        return any(self.is_ancestor(a, r) for r in results)

    def _any_above(self, group: Sequence[LineInfo], e: LineInfo) -> bool:
        """Some member of ``group`` is on ``e``'s path, strictly above it."""
        subtrees = self._subtrees_for(len(group))
        found = subtrees.any_above(group, e) if subtrees is not None else None
        if found is not None:
            return found
        return any(self.is_ancestor(a, e) for a in group)

    def _subtrees_for(self, pairs: int) -> Subtrees | None:
        """The numbering of the tree's subtrees for a pass that compares an entry with ``pairs``
        others, once the pass compared as many pairs as the tree has entries (before: the pairs
        cost less than numbering the tree); None in a tree with a cycle, or outside a pass."""
        if self._subtrees is None:
            if not self._checking or self.cycles:
                return None
            self._compared += pairs
            if self._compared <= self._size + _PAIRS_BEFORE_NUMBERING:
                return None
            self._subtrees = Subtrees((e for e in self._indexed() if self.parent(e) is None), self.kids)
        return self._subtrees
