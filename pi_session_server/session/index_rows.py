"""The entries of a session read from its persistent index, made when they are asked for.

Reopening a long session from its index (:mod:`.scan_index`) gives its entries as columns: ids and
timestamps as text, type and role codes, offsets, where chains start. Making an :class:`Entry` of
every row, and the id map of all of them, is most of what such a reopen would cost, while the
context needs only the rows on the leaf's path, and of those only the ones after the last
compaction. :class:`IndexedRows` keeps the columns and makes an entry when a row is asked for (the
same object every time it is asked); :meth:`IndexedRows.every_entry` makes them all, with the ones
already made in their places, for whatever needs every entry.

The leaf's path is walked by row numbers: inside a chain (``IdIndex.chain_starts``) each row's
parent is the row before it, and the index keeps the row of each chain start's parent (the index
is only used this way when every id is a distinct non-empty string, so an id names one row).
:class:`RowPath` is that path as runs of rows; the context reads its types and roles from the
code columns and makes entries only where it looks.
"""

from __future__ import annotations

from abc import abstractmethod
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, repeat
from operator import add
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import msgspec

from ..format.entry import Entry, LineBytes, MessageHead, head_for
from ..format.jsvalue import ABSENT, strict_equal

if TYPE_CHECKING:
    from .envelopes import Envelopes

# Codes are bytes: a type or role table holds at most this many values.
MAX_CODES = 256
# What a parentId, targetId or label a row holds may be (another value is read again from its line).
PLAIN_OPTIONAL: frozenset[type] = frozenset({str, type(None), type(ABSENT)})
# Up to this many ids are looked for one by one (each a search of the ids column, until the rows'
# order of their ids is made); more, in a map of the column.
_FEW_IDS = 64
# Ids looked for in the ids column, each a search of it, before the rows' order of their ids is
# made, a sort of them all that costs about as much as this many searches; from then on an id is
# found by bisection. A session that is only read looks a few ids up; one appended to turn after
# turn, one or two per append: its first appends pay no sort, and a long run of them pays at most
# twice what knowing ahead would have.
SEARCHES_BEFORE_ORDER = 256

# A column of the rows' texts or codes: bytes as read, a bytearray once rows are appended.
TextColumn = bytes | bytearray


class RowColumns(msgspec.Struct):
    """What the index holds of every row (see scan_index.IndexHeader for the sparse parts)."""

    count: int
    ids: TextColumn  # the ids, UTF-8 (surrogates passed), joined by NUL
    id_ends: array[int]  # where each id ends in ``ids``
    timestamps: TextColumn
    timestamp_ends: array[int]
    type_codes: TextColumn
    role_codes: TextColumn
    offsets: array[int]  # of each row's line in the file
    types: list[Any]  # type code -> type
    heads: list[MessageHead | None]  # role code -> message head
    line_runs: list[tuple[int, int]]  # (row, line): rows from this one on are on consecutive lines
    parents: dict[int, Any]  # row -> parentId where it is not the id of the row before
    parent_rows: dict[int, int]  # row -> the row of its parent (-1: none) for the rows in ``parents``
    targets: dict[int, tuple[Any, Any]]  # row -> (targetId, label) where either is present
    lengths: dict[int, int]  # row -> Entry.length where it is not 0
    chain_starts: list[int]
    source: Any  # the entries' LineSource
    lines_data: bytes | None = None  # the bytes of every row's line from offsets[0] on (small files)


def _text(data: TextColumn, ends: array[int], row: int) -> str:
    start = ends[row - 1] + 1 if row else 0
    return str(data[start : ends[row]], "utf-8", "surrogatepass")


class IndexedRows:
    """The rows of an index, each made into its :class:`Entry` when first asked for."""

    __slots__ = (
        "_appended_rows",
        "_every",
        "_id_order",
        "_ids",
        "_made",
        "_missing_id",
        "_missing_parents",
        "_run_rows",
        "_searches",
        "_timestamps",
        "columns",
    )

    def __init__(self, columns: RowColumns) -> None:
        self.columns = columns
        self._made: dict[int, Entry] = {}
        # every row's entry, once every_entry made them: what a path or a node read from the rows
        # before then gives from then on (the same objects as the manager's entry list)
        self._every: list[Entry] | None = None
        self._run_rows = [row for row, _line in columns.line_runs]
        # the ids, once every entry was made or most rows' envelopes asked for, and the timestamps,
        # once every entry was made (each text column is let go of once split)
        self._ids: list[str] | None = None
        self._timestamps: list[str] | None = None
        # the string parentIds that name no row, once rows are appended (see missing_parents)
        self._missing_parents: set[str] | None = None
        # the last id row_of_id's search found no row with, until rows are appended: an append
        # looks its new id up twice (is it taken? does it repeat a row's?)
        self._missing_id: str | None = None
        # ids searched for in the column so far, then the rows in the order of their ids (see
        # SEARCHES_BEFORE_ORDER), and the row of each id appended since that order was made
        self._searches = 0
        self._id_order: array[int] | None = None
        self._appended_rows: dict[str, int] = {}

    @property
    def count(self) -> int:
        return self.columns.count

    def id_at(self, row: int) -> str:
        if self._ids is not None:
            return self._ids[row]
        columns = self.columns
        return _text(columns.ids, columns.id_ends, row)

    def _timestamp_at(self, row: int) -> str:
        if self._timestamps is not None:
            return self._timestamps[row]
        columns = self.columns
        return _text(columns.timestamps, columns.timestamp_ends, row)

    def _texts(self) -> tuple[list[str], list[str]]:
        """The ids and the timestamps of every row, each column's text let go of once it is split
        (making every entry needs no more room than with lists from the start)."""
        if self._timestamps is None:
            columns = self.columns
            self._timestamps = _texts(columns.timestamps, columns.count)
            columns.timestamps = b""
        return self._split_ids(), self._timestamps

    def _split_ids(self) -> list[str]:
        """The ids of every row (the column's text let go of)."""
        if self._ids is None:
            columns = self.columns
            self._ids = _texts(columns.ids, columns.count)
            columns.ids = b""
        return self._ids

    def entry(self, row: int) -> Entry:
        """The entry of ``row`` (``0 <= row < count``), the same object each time."""
        columns = self.columns
        if not 0 <= row < columns.count:
            raise IndexError(row)
        made = self._made_at(row)
        if made is not None:
            return made
        parent = columns.parents.get(row, ABSENT)
        if parent is ABSENT and row not in columns.parents and row:
            parent = self.id_at(row - 1)
        target, label = columns.targets.get(row, (ABSENT, ABSENT))
        entry = Entry(
            columns.types[columns.type_codes[row]],
            self.id_at(row),
            parent,
            self._timestamp_at(row),
            columns.heads[columns.role_codes[row]],
            target,
            label,
            self._line_at(row),
            columns.offsets[row],
            columns.lengths.get(row, 0),
            self._body(row),
            columns.source,
        )
        self._made[row] = entry
        return entry

    def _made_at(self, row: int) -> Entry | None:
        """The entry of ``row`` (``0 <= row < count``) if made."""
        return self._made.get(row) if self._every is None else self._every[row]

    def _line_at(self, row: int) -> int:
        """The line ``row`` is on, found in the line runs."""
        first_row, first_line = self.columns.line_runs[bisect_right(self._run_rows, row) - 1]
        return first_line + row - first_row

    def _body(self, row: int) -> Any:
        data = self.columns.lines_data
        if data is None:
            return ABSENT
        at = self.columns.offsets[row] - self.columns.offsets[0]
        return LineBytes(data[at : data.find(b"\n", at)])

    def _with_made(self, every: list[Entry]) -> list[Entry]:
        """``every``, the list of all rows' entries made at once (as scan_index makes them), with
        the entries already made put in their places: each row has one entry, whenever asked."""
        made = self._made
        for row in sorted(made):
            entry = every[row] = made[row]
            # one string object for an id and the parentId of the row after (as the scan has it)
            if row and row not in self.columns.parents:
                entry.parent_id = every[row - 1].id
            if row + 1 < len(every) and row + 1 not in self.columns.parents:
                every[row + 1].parent_id = entry.id
        return every

    def every_entry(self) -> tuple[list[Entry], list[str]]:
        """The entries of all rows (those made before among them) and the ids column."""
        columns = self.columns
        n = columns.count
        ids, timestamps = self._texts()
        parents: list[Any] = [ABSENT, *ids[:-1]] if n else []
        for row, parent in columns.parents.items():
            parents[row] = parent
        targets: Iterable[Any] = _sparse(n, ABSENT, ((row, pair[0]) for row, pair in columns.targets.items()))
        labels: Iterable[Any] = _sparse(n, ABSENT, ((row, pair[1]) for row, pair in columns.targets.items()))
        bodies: Iterable[Any] = repeat(ABSENT)
        if columns.lines_data is not None and n:
            bodies = _line_bytes(columns.lines_data, columns.offsets)
        every = list(
            map(
                Entry,
                map(columns.types.__getitem__, columns.type_codes),
                ids,
                parents,
                timestamps,
                map(columns.heads.__getitem__, columns.role_codes),
                targets,
                labels,
                _line_numbers(columns.line_runs, n),
                columns.offsets,
                _sparse(n, 0, columns.lengths.items()),
                bodies,
                repeat(columns.source),
            )
        )
        every = self._with_made(every)
        self._every, self._made = every[:], {}  # a copy: the caller's list is theirs to change
        return every, ids

    @property
    def all_made(self) -> bool:
        """Whether every_entry made every row's entry (no row is appended from then on)."""
        return self._every is not None

    def first_entries(self, count: int) -> tuple[list[Entry], list[str]]:
        """The entries and the ids of the first ``count`` rows (``count <= self.count``): the rows
        as they were before the later ones were appended. Every entry is made if it is not yet
        (those made before among them), each row's the same object as ever."""
        every, ids = self._every, self._ids
        if every is None or ids is None:  # (not all_made)
            every, ids = self.every_entry()
            del every[count:]
            return every, ids[:count]
        return every[:count], ids[:count]

    def envelopes(self, start: int, end: int) -> Envelopes:
        """The envelopes of rows ``start`` to ``end`` (``0 <= start <= end``) from the columns,
        making no entry: the same values each row's entry holds."""
        from .envelopes import Envelopes  # (only the totals ask: not on a reopen's path)

        columns = self.columns
        end = min(end, columns.count)
        start = min(start, end)
        if self._ids is None and 2 * (end - start) > columns.count:
            # most rows (the totals of a session): split the ids as every_entry does, so that the
            # entries made later share these strings with what the caller keeps of them
            self._split_ids()
        if self._ids is not None:
            ids = self._ids[start:end]
        else:
            ids = _texts_between(columns.ids, columns.id_ends, start, end)
        timestamps: Sequence[str]
        if self._timestamps is not None:
            timestamps = self._timestamps[start:end]
        else:  # (the totals read the first and the last: not a string made of each)
            timestamps = _TextRows(self, start, end)
        parents: list[Any] = [self.id_at(start - 1) if start else ABSENT, *ids[:-1]] if ids else []
        for row, parent in columns.parents.items():
            if start <= row < end:
                parents[row - start] = parent
        return Envelopes(
            start,
            list(map(columns.types.__getitem__, columns.type_codes[start:end])),
            ids,
            parents,
            timestamps,
            list(map(columns.heads.__getitem__, columns.role_codes[start:end])),
            columns.offsets[start:end],
        )

    def append_scanned(self, entries: Sequence[Entry]) -> bool:
        """Add ``entries``, the lines after the rows' (the file grew: pi appended, or the manager
        wrote them), as rows of their own, the very objects given: a reopen of a grown file, or a
        manager after an append, then still makes entries on demand. Taken only when the rows keep
        their rules (see ``scan_index._lazy_allowed``): each entry with a distinct non-empty string
        id that no row has, a string timestamp, a string type that is not a second header, a plain
        message head, parentId, targetId and label. Otherwise False, and nothing changed; also
        when every entry was made already, or the rows hold their lines' bytes (a small file, whose
        entries cost little to make)."""
        if not entries:
            return True
        columns = self.columns
        if self._every is not None or columns.lines_data is not None or not columns.count:
            return False
        tail = _tail_columns(self, entries)
        if tail is None:
            return False
        base = columns.count
        self._extend_columns(entries, *tail)
        previous_id, previous_line = self.id_at(base - 1), self._line_at(base - 1)
        new_ids = {entry.id: row for row, entry in enumerate(entries, base)}
        self._missing_id = None
        if self._id_order is not None:
            self._appended_rows.update(new_ids)
        parents = {}
        for row, entry in enumerate(entries, base):
            columns.offsets.append(entry.offset)
            if entry.line != previous_line + 1:
                columns.line_runs.append((row, entry.line))
                self._run_rows.append(row)
            parent = entry.parent_id
            if parent != previous_id or type(parent) is not str:
                parents[row] = parent
                columns.chain_starts.append(row)
            if entry.targetId is not ABSENT or entry.label is not ABSENT:
                columns.targets[row] = (entry.targetId, entry.label)
            if entry.length:
                columns.lengths[row] = entry.length
            self._made[row] = entry
            previous_id, previous_line = entry.id, entry.line
        self._link_parents(parents, new_ids, base)
        columns.count = base + len(entries)
        return True

    def _link_parents(self, parents: dict[int, Any], new_ids: dict[str, int], base: int) -> None:
        """Take the parentIds of appended rows that start chains (``parents``), each with the row
        it names among the first ``base`` rows and the new ones (``new_ids``), or -1."""
        columns = self.columns
        wanted = {parent for parent in parents.values() if type(parent) is str and parent not in new_ids}
        found = _rows_with_ids(self, wanted, base)
        missing = self.missing_parents()
        for row, parent in parents.items():
            columns.parents[row] = parent
            at = new_ids.get(parent, found.get(parent, -1)) if type(parent) is str else -1
            columns.parent_rows[row] = at
            if at < 0 and type(parent) is str:
                missing.add(parent)

    def missing_parents(self) -> set[str]:
        """The string parentIds of rows that name no row: a row appended with one of them as its
        id would be a parent below its child, which the rows' parent rows do not tell."""
        if self._missing_parents is None:
            columns = self.columns
            self._missing_parents = {
                parent
                for row, parent in columns.parents.items()
                if type(parent) is str and columns.parent_rows.get(row, -1) < 0
            }
        return self._missing_parents

    def _extend_columns(
        self,
        entries: Sequence[Entry],
        ids: bytes,
        id_ends: Sequence[int],
        timestamps: bytes,
        timestamp_ends: Sequence[int],
        type_codes: bytes,
        role_codes: bytes,
    ) -> None:
        """The text and code columns grown by those of ``entries`` (``_tail_columns``); a text
        column already split goes on as its list (its text and ends are no longer read)."""
        columns = self.columns
        if self._ids is not None:
            self._ids.extend(entry.id for entry in entries)
        else:
            columns.ids = _grown(columns.ids, ids)
            columns.id_ends.extend(id_ends)
        if self._timestamps is not None:
            self._timestamps.extend(entry.timestamp for entry in entries)
        else:
            columns.timestamps = _grown(columns.timestamps, timestamps)
            columns.timestamp_ends.extend(timestamp_ends)
        columns.type_codes = _grown(columns.type_codes, type_codes)
        columns.role_codes = _grown(columns.role_codes, role_codes)

    def rows_of_type(self, entry_type: str) -> Iterator[int]:
        """The rows whose type is ``entry_type``, in file order."""
        codes = self.columns.type_codes
        for code, value in enumerate(self.columns.types):
            if value == entry_type and type(value) is str:
                wanted = bytes((code,))
                at = codes.find(wanted)
                while at >= 0:
                    yield at
                    at = codes.find(wanted, at + 1)
                return

    def last_of_type(self, entry_type: str) -> int:
        """The last row whose type is ``entry_type``, or -1."""
        for code, value in enumerate(self.columns.types):
            if value == entry_type and type(value) is str:
                return self.columns.type_codes.rfind(bytes((code,)))
        return -1

    def row_of_id(self, entry_id: Any) -> int:
        """The row whose id is ``entry_id`` (any value: only a string is a row's), or -1 (ids are
        distinct where rows are used: see scan_index._lazy_allowed): searched in the ids column,
        until SEARCHES_BEFORE_ORDER searches made the rows' order of their ids worth making; then
        found by bisection of that order, each step comparing ``entry_id`` with an id the column
        holds (so the row found has that very id, and no other row can), or among the rows
        appended since, in the map of their ids."""
        if type(entry_id) is not str:
            return -1
        last = self.columns.count - 1
        if last >= 0 and self.id_at(last) == entry_id:  # the leaf, most often: no search
            return last
        order = self._id_order
        if order is None:
            if entry_id == self._missing_id:
                return -1
            self._searches += 1
            if self._searches <= SEARCHES_BEFORE_ORDER:
                row = self._searched_row(entry_id)
                if row < 0:
                    self._missing_id = entry_id
                return row
            order = self._ordered()
        at = bisect_left(order, entry_id, key=self.id_at)
        if at < len(order) and self.id_at(order[at]) == entry_id:
            return order[at]
        return self._appended_rows.get(entry_id, -1)

    @property
    def ordered(self) -> bool:
        """Whether an id is found by bisection (see :meth:`row_of_id`)."""
        return self._id_order is not None

    def _ordered(self) -> array[int]:
        """Make the rows' order of their ids (every row so far: none is appended since)."""
        ids = self._ids if self._ids is not None else _texts(self.columns.ids, self.columns.count)
        order = self._id_order = id_order(ids)
        self._appended_rows = {}
        return order

    def _searched_row(self, entry_id: str) -> int:
        """:meth:`row_of_id` searched in the ids (split or as their column)."""
        if self._ids is not None:
            try:
                return self._ids.index(entry_id)
            except ValueError:
                return -1
        columns = self.columns
        data, ends = columns.ids, columns.id_ends
        wanted = entry_id.encode("utf-8", "surrogatepass")
        if not wanted or b"\x00" in wanted:
            return -1
        at = data.find(wanted)
        while at >= 0:
            end = at + len(wanted)
            if (at == 0 or data[at - 1] == 0) and (end == len(data) or data[end] == 0):
                return bisect_left(ends, end)
            at = data.find(wanted, at + 1)
        return -1

    def entry_of_id(self, entry_id: Any) -> Entry | None:
        """The entry of the row whose id is ``entry_id`` (:meth:`row_of_id`), or None."""
        row = self.row_of_id(entry_id)
        return self.entry(row) if row >= 0 else None

    def rows_under(self, parent_id: Any) -> list[int]:
        """The rows whose parentId is ``parent_id`` (``===``), in file order: the row after the one
        with that id, when it goes on its chain, and the rows that name it otherwise."""
        columns = self.columns
        found = [row for row, parent in columns.parents.items() if strict_equal(parent, parent_id)]
        following = self.row_of_id(parent_id) + 1
        if following and following < columns.count and following not in columns.parents:
            found.append(following)
        return sorted(found)

    def row_of_entry(self, entry: Entry) -> int:
        """The row whose entry (made by :meth:`entry`) is ``entry``, or -1."""
        offsets = self.columns.offsets
        row = bisect_left(offsets, entry.offset)
        return row if row < len(offsets) and self._made_at(row) is entry else -1

    def path_to_root(self, row: int) -> RowPath | None:
        """The path from the root to ``row`` (``walk_to_root``), or None when it meets a row twice
        (a cycle: the caller walks it remembering what it met)."""
        return path_to_root(self, row)


class ChainColumns(Protocol):
    """What :class:`ChainRows` tell of their chains: where each starts, and for a start whose
    parent is not the row before, its parentId and the row of its parent (-1: none)."""

    @property
    def count(self) -> int: ...

    @property
    def chain_starts(self) -> list[int]: ...

    @property
    def parents(self) -> dict[int, Any]: ...

    @property
    def parent_rows(self) -> dict[int, int]: ...


class ChainRows(Protocol):
    """Entries as rows in file order, told by their chains (:class:`ChainColumns`): an index's
    (:class:`IndexedRows`), or the manager's own entries (``session.entry_rows``). What the tree
    of rows (``session.row_tree``) and a path of rows (:class:`RowPath`) read."""

    @property
    def columns(self) -> ChainColumns: ...

    @property
    def count(self) -> int: ...

    def id_at(self, row: int) -> str: ...

    def entry(self, row: int) -> Entry: ...

    def row_of_id(self, entry_id: Any) -> int: ...

    def entry_of_id(self, entry_id: Any) -> Entry | None: ...

    def row_of_entry(self, entry: Entry) -> int: ...

    def path_to_root(self, row: int) -> RowPath | None: ...


def path_to_root(rows: ChainRows, row: int) -> RowPath | None:
    """:meth:`ChainRows.path_to_root`: the path from the root to ``row`` a chain at a time."""
    columns = rows.columns
    starts = columns.chain_starts
    parent_rows = columns.parent_rows
    runs: list[tuple[int, int]] = []  # (first, end) rows, from the leaf backwards
    walked = 0
    at = row
    while at >= 0:
        first = starts[bisect_right(starts, at) - 1] if starts and starts[0] <= at else 0
        runs.append((first, at + 1))
        walked += at + 1 - first
        if walked > columns.count:
            return None
        at = parent_rows.get(first, first - 1)
    runs.reverse()
    return RowPath(rows, runs)


def _tail_columns(
    rows: IndexedRows, entries: Sequence[Entry]
) -> tuple[bytes, Sequence[int], bytes, Sequence[int], bytes, bytes] | None:
    """The text and code columns of ``entries`` as rows after ``columns``' (ids, their ends,
    timestamps, their ends, type codes, role codes), the tables of ``columns`` grown by the types
    and roles they add; None if an entry does not keep the rows' rules (``append_scanned``)."""
    columns = rows.columns
    types = {value: code for code, value in enumerate(columns.types) if type(value) is str}
    roles: dict[Any, int] = {None: 0}  # (None: no message; the head tables' first two codes)
    roles.update((head.role, code) for code, head in enumerate(columns.heads) if head is not None)
    new_types: list[str] = []
    new_heads: list[MessageHead] = []
    type_codes = bytearray()
    role_codes = bytearray()
    offset = columns.offsets[-1]
    for entry in entries:
        entry_type, head, entry_id = entry.type, entry.message, entry.id
        if (
            type(entry.offset) is not int
            or entry.offset <= offset  # (the rows are found by their offsets: in file order)
            or type(entry_type) is not str
            or entry_type == "session"
            or type(entry_id) is not str
            or not entry_id
            or "\x00" in entry_id
            or type(entry.timestamp) is not str
            or "\x00" in entry.timestamp
            or type(entry.parent_id) not in PLAIN_OPTIONAL
            or type(entry.targetId) not in PLAIN_OPTIONAL
            or type(entry.label) not in PLAIN_OPTIONAL
            or not (head is None or (type(head) is MessageHead and type(head.role) in (str, type(ABSENT))))
        ):
            return None
        code = types.get(entry_type)
        if code is None:
            code = types[entry_type] = len(columns.types) + len(new_types)
            new_types.append(entry_type)
        type_codes.append(code)
        role = None if head is None else head.role
        code = roles.get(role)
        if code is None:
            code = roles[role] = len(columns.heads) + len(new_heads)
            new_heads.append(head_for(role))
        role_codes.append(code)
        offset = entry.offset
    if len(columns.types) + len(new_types) > MAX_CODES or len(columns.heads) + len(new_heads) > MAX_CODES:
        return None
    ids = [entry.id for entry in entries]
    if len(set(ids)) != len(ids) or _rows_with_ids(rows, set(ids), columns.count):
        return None  # an id twice: the rows would no longer name one entry by an id
    if not rows.missing_parents().isdisjoint(ids):
        return None  # the parent of an earlier row, which names no row
    columns.types.extend(new_types)
    columns.heads.extend(new_heads)
    id_data, id_ends = _joined_after(columns.ids, ids)
    stamp_data, stamp_ends = _joined_after(columns.timestamps, [entry.timestamp for entry in entries])
    return id_data, id_ends, stamp_data, stamp_ends, bytes(type_codes), bytes(role_codes)


def _joined_after(column: TextColumn, texts: list[str]) -> tuple[bytes, Sequence[int]]:
    """``texts`` as they continue a text column (its separator first), and where each ends."""
    joined = "\x00".join(texts)
    return ("\x00" + joined).encode("utf-8", "surrogatepass"), ends_of(texts, joined.isascii(), len(column))


def ends_of(values: list[str], ascii: bool, written: int) -> Sequence[int]:
    """Where each of ``values`` (not empty) ends in their text column, ``written`` where the one
    before them ends: a range when they are all as long (pi's ids, its timestamps), which holds no
    number until it is written."""
    widths = set(map(len, values)) if ascii else ()
    if len(widths) == 1:
        step = widths.pop() + 1
        first = written + step
        return range(first, first + step * len(values), step)
    sizes: Iterable[int] = map(len, values)
    if not ascii:
        sizes = (len(value.encode("utf-8", "surrogatepass")) for value in values)
    running = accumulate(map(add, sizes, repeat(1)), initial=written)
    next(running)  # (the initial value)
    return array("I", running)  # (past 4 GB of text: OverflowError, and no index is written)


def _rows_with_ids(rows: IndexedRows, wanted: set[str], count: int) -> dict[str, int]:
    """The row among the first ``count`` whose id is each of ``wanted`` that one has."""
    if _one_by_one(rows, len(wanted), count):
        found = {entry_id: rows.row_of_id(entry_id) for entry_id in wanted}
        return {entry_id: row for entry_id, row in found.items() if 0 <= row < count}
    ids = rows._ids if rows._ids is not None else _texts(rows.columns.ids, rows.columns.count)
    return {entry_id: row for row, entry_id in enumerate(ids[:count]) if entry_id in wanted}


def _one_by_one(rows: IndexedRows, wanted: int, count: int) -> bool:
    """Whether ``wanted`` ids are looked up one by one among ``count`` of ``rows``, rather than in
    a map of the whole ids column (which reads them all: the lines a big file grew by, when they
    are many): a few, or, once an id is found by bisection reading about log2(count) ids, up to
    what reads fewer ids than the map."""
    return wanted <= _FEW_IDS or (rows.ordered and wanted * count.bit_length() <= count)


def id_order(ids: list[str]) -> array[int]:
    """The rows of ``ids`` (a row's id at its position) in the order of their ids: what
    :meth:`IndexedRows.row_of_id` bisects once made. Ids as Python orders strings, by code point (lone
    surrogates included), which is the order of their UTF-8 bytes too."""
    return array("I", sorted(range(len(ids)), key=ids.__getitem__))


def _grown(column: TextColumn, more: bytes) -> bytearray:
    """``column`` with ``more`` after it, grown in place from its first growth on (a bytearray):
    a manager appending one entry at a time would copy a bytes column whole each time."""
    grown = column if isinstance(column, bytearray) else bytearray(column)
    grown += more
    return grown


def _texts(data: TextColumn, count: int) -> list[str]:
    return str(data, "utf-8", "surrogatepass").split("\x00") if count else []


def _texts_between(data: TextColumn, ends: array[int], start: int, end: int) -> list[str]:
    """The values of rows ``start`` to ``end`` of a text column."""
    if start >= end:
        return []
    first = ends[start - 1] + 1 if start else 0
    return str(memoryview(data)[first : ends[end - 1]], "utf-8", "surrogatepass").split("\x00")


def _sparse(n: int, default: Any, values: Iterable[tuple[int, Any]]) -> Iterable[Any]:
    """A column of ``n`` values that are ``default`` but for the (position, value) pairs given."""
    column: list[Any] | None = None
    for position, value in values:
        if column is None:
            column = [default] * n
        column[position] = value
    return repeat(default) if column is None else column


def _line_numbers(runs: list[tuple[int, int]], count: int) -> list[int]:
    lines: list[int] = []
    for i, (position, line) in enumerate(runs):
        until = runs[i + 1][0] if i + 1 < len(runs) else count
        lines.extend(range(line, line + until - position))
    return lines


def _line_bytes(data: bytes, offsets: array[int]) -> list[LineBytes]:
    """Every row's line, from the bytes of all of them (see loader.KEEP_BYTES_LIMIT)."""
    base = offsets[0]
    find = data.find
    out = []
    for offset in offsets:
        at = offset - base
        out.append(LineBytes(data[at : find(b"\n", at)]))
    return out


_Made = TypeVar("_Made")


class MadeByRow(Sequence[_Made]):
    """A sequence of what is made of each row of a path, made when looked at: a subclass says
    which row each index is (:meth:`row_of`) and what a row makes (:meth:`made`)."""

    __slots__ = ()

    @abstractmethod
    def row_of(self, index: int) -> int: ...

    @abstractmethod
    def made(self, row: int) -> _Made: ...

    @overload
    def __getitem__(self, index: int) -> _Made: ...

    @overload
    def __getitem__(self, index: slice) -> list[_Made]: ...

    def __getitem__(self, index: int | slice) -> _Made | list[_Made]:
        if isinstance(index, slice):
            return [self.made(self.row_of(i)) for i in range(*index.indices(len(self)))]
        return self.made(self.row_of(index))


class _TextRows(MadeByRow[str]):
    """The timestamps of rows ``start`` to ``end``, each made when asked for."""

    __slots__ = ("_end", "_rows", "_start")

    def __init__(self, rows: IndexedRows, start: int, end: int) -> None:
        self._rows, self._start, self._end = rows, start, end

    def __len__(self) -> int:
        return self._end - self._start

    def row_of(self, index: int) -> int:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._start + index

    def made(self, row: int) -> str:
        return self._rows._timestamp_at(row)


class RowPath(MadeByRow[Entry]):
    """A path of rows (runs of consecutive rows, root-most first), read as a sequence of entries
    that are made as they are looked at."""

    __slots__ = ("_begins", "_by_first", "_runs", "length", "rows")

    def __init__(self, rows: ChainRows, runs: list[tuple[int, int]]) -> None:
        self.rows = rows
        self._runs = runs
        self._begins: list[int] = []  # where each run begins in the path
        length = 0
        for first, end in runs:
            self._begins.append(length)
            length += end - first
        self.length = length
        self._by_first: list[tuple[int, int]] | None = None  # the runs by first row (see __contains__)

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The path's runs of rows, ``(first, end)``, root-most first."""
        return list(self._runs)

    def __contains__(self, entry: object) -> bool:
        """Whether ``entry`` itself (one made by the rows) is on the path, found by its row."""
        if type(entry) is not Entry:
            return False
        return self.has_row(self.rows.row_of_entry(entry))

    def has_row(self, row: int) -> bool:
        """Whether ``row`` is on the path."""
        if row < 0:
            return False
        if self._by_first is None:
            self._by_first = sorted(self._runs)
        runs = self._by_first
        run = bisect_right(runs, (row, self.rows.count)) - 1
        return run >= 0 and runs[run][0] <= row < runs[run][1]

    def __len__(self) -> int:
        return self.length

    def row_of(self, index: int) -> int:
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(index)
        run = bisect_right(self._begins, index) - 1
        return self._runs[run][0] + index - self._begins[run]

    def made(self, row: int) -> Entry:
        return self.rows.entry(row)

    def __iter__(self) -> Iterator[Entry]:
        entry = self.rows.entry
        for first, end in self._runs:
            yield from map(entry, range(first, end))

    def id_at(self, index: int) -> str:
        return self.rows.id_at(self.row_of(index))

    def ids(self) -> Iterator[str]:
        """The ids on the path, root first, read from the rows (no entry made)."""
        id_at = self.rows.id_at
        for first, end in self._runs:
            yield from map(id_at, range(first, end))

    def backward(self, stop: int, types: frozenset[str], assistant: bool = False) -> Iterator[int]:
        """The indexes below ``stop``, last first, whose entry has one of ``types``, or (with
        ``assistant``) is a message whose head's role is "assistant": found in the code columns."""
        columns = self.rows.columns
        assert isinstance(columns, RowColumns)  # (the codes: an index's rows)
        type_codes, role_codes = columns.type_codes, columns.role_codes
        wanted = [
            bytes((code,))
            for code, value in enumerate(columns.types)
            if type(value) is str and value in types
        ]
        message_codes = {
            code for code, value in enumerate(columns.types) if value == "message" and type(value) is str
        }
        assistant_codes = [
            bytes((code,))
            for code, head in enumerate(columns.heads)
            if assistant and head is not None and head.role == "assistant"
        ]
        for run in range(len(self._runs) - 1, -1, -1):
            first, end = self._runs[run]
            begin = self._begins[run]
            end = min(end, first + stop - begin)
            while end > first:
                found = -1
                for code in wanted:
                    found = max(found, type_codes.rfind(code, first, end))
                for code in assistant_codes:
                    at = role_codes.rfind(code, first, end)
                    while at > found and type_codes[at] not in message_codes:
                        at = role_codes.rfind(code, first, at)
                    found = max(found, at)
                if found < 0:
                    break
                yield begin + found - first
                end = found
