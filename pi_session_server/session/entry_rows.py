"""The manager's own entries read as an index's rows (:class:`.index_rows.ChainRows`), for the tree
of rows (:mod:`.row_tree`) of a session read from its file.

The tree of rows makes a node when a walk reaches it: a viewer's page of a path makes the few
hundred nodes it shows, where the library's tree makes one node and one list per entry of the
session (most of a GB's worth of memory for a session of GBs). An index's rows tell the tree's
shape by where chains start; the manager knows where its entries' chains start too (see
:mod:`.chains`), so the same tree is read from its entries: the rows are the entries after the
header, the parent of each chain start found once by its id.
"""

from __future__ import annotations

from typing import Any

from ..format.entry import Entry
from .chains import Positions
from .index_rows import RowPath, path_to_root


class EntryColumns:
    """:class:`.index_rows.ChainColumns` of the manager's entries."""

    __slots__ = ("chain_starts", "count", "parent_rows", "parents")

    def __init__(
        self, count: int, chain_starts: list[int], parents: dict[int, Any], parent_rows: dict[int, int]
    ) -> None:
        self.count = count
        self.chain_starts = chain_starts
        self.parents = parents
        self.parent_rows = parent_rows


class EntryRows:
    """The entries ``file_entries[1:]`` (the header first, alone) as rows: ``chain_starts`` where
    their chains start (rows), ``by_id`` their index (every id a distinct non-empty string: one
    entry each). Built by :func:`entry_rows`."""

    __slots__ = ("_by_id", "_file_entries", "_positions", "columns")

    def __init__(self, file_entries: list[Entry], by_id: dict[Any, Entry], columns: EntryColumns) -> None:
        self._file_entries = file_entries
        self._by_id = by_id
        self._positions = Positions(file_entries)
        self.columns = columns

    @property
    def count(self) -> int:
        return self.columns.count

    def id_at(self, row: int) -> str:
        entry_id: str = self._file_entries[row + 1].id
        return entry_id

    def entry(self, row: int) -> Entry:
        return self._file_entries[row + 1]

    def row_of_entry(self, entry: Entry) -> int:
        at = self._positions.of(entry, self.count + 1)
        return at - 1 if at > 0 else -1

    def row_of_id(self, entry_id: Any) -> int:
        entry = self._by_id.get(entry_id) if type(entry_id) is str else None
        return -1 if entry is None else self.row_of_entry(entry)

    def entry_of_id(self, entry_id: Any) -> Entry | None:
        row = self.row_of_id(entry_id)
        return self.entry(row) if row >= 0 else None

    def path_to_root(self, row: int) -> RowPath | None:
        return path_to_root(self, row)


def entry_rows(
    file_entries: list[Entry], by_id: dict[Any, Entry], chain_starts: list[int]
) -> EntryRows | None:
    """The rows of ``file_entries[1:]``, or None when ``chain_starts`` cannot be theirs (the first
    row does not start a chain). The caller vouches for the rest: the header first and alone, every
    id a distinct non-empty string indexed in ``by_id``, and ``chain_starts`` sorted, every row
    not in it answering the one before."""
    count = len(file_entries) - 1
    starts = [start for start in chain_starts if start < count]  # (appends taken back: see chains)
    if count <= 0 or not starts or starts[0] != 0:
        return None
    positions = Positions(file_entries)
    parents: dict[int, Any] = {}
    parent_rows: dict[int, int] = {}
    for start in starts:
        parent_id = file_entries[start + 1].parent_id
        if start and type(parent_id) is str and parent_id == file_entries[start].id:
            continue  # (a start whose parent is the row before: it hangs there)
        parents[start] = parent_id
        parent = by_id.get(parent_id) if type(parent_id) is str else None
        at = -1 if parent is None else positions.of(parent, count + 1)
        parent_rows[start] = at - 1 if at > 0 else -1
    return EntryRows(file_entries, by_id, EntryColumns(count, starts, parents, parent_rows))
