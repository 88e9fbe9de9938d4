"""What a session's entries answer beyond pi's API: by position, by file line, a slice or its
envelopes, the tree as nodes made when reached, and the walks to the root its context is built on."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from ..errors import ArgOutOfRangeError, InvalidArgTypeError
from ..format.entry import Entry
from ..format.jsvalue import index_key, js_string_of
from .chains import Positions, entry_on_line
from .context import build_session_path
from .entry_index import EntryIndex
from .entry_rows import entry_rows
from .index_rows import RowPath
from .paths import node_received
from .row_tree import RowTree, row_tree

if TYPE_CHECKING:
    from .envelopes import Envelopes


def _whole_number(value: Any, name: str) -> int:
    """``value``, an argument that must be a whole number, as an int (a float that is one taken, as
    JavaScript's 3.0 is 3), else Node's error for it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ArgOutOfRangeError(
            f'The value of "{name}" is out of range. It must be an integer. Received {js_string_of(value)}'
        )
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # (an int subclass: an IntEnum)
    raise InvalidArgTypeError(
        f'The "{name}" argument must be of type number. Received {node_received(value)}'
    )


class EntryQueries(EntryIndex):
    """The index's answers to our own callers beyond pi's API (an editor, the server's pages of a
    large session). A base of :class:`.manager.SessionManager`."""

    @property
    def by_id(self) -> dict[Any, Entry]:
        """The id index (for the free functions' ``byId`` argument)."""
        return self._by_id

    def has_unique_ids(self) -> bool:
        """Every entry has an id no other entry has: the tree then hangs each node in one place,
        and the leaf's path is :meth:`get_branch`."""
        return self.get_entry_count() == self.entry_count()

    def entry_count(self) -> int:
        """``len(get_entries())`` without building the list."""
        if self._rows is not None:
            return self._rows.count
        if self._header_only_first:
            return len(self._file_entries) - 1
        return sum(1 for _ in self.iter_entries())

    def entries_slice(self, start: int, end: int) -> builtins.list[Entry]:
        """``get_entries()[start:end]`` (``0 <= start <= end``) without a list of every entry (nor,
        after a reopen from the index, making every entry)."""
        rows = self._rows
        if rows is not None:
            return [rows.entry(row) for row in range(start, min(end, rows.count))]
        if self._header_only_first:
            return self._file_entries[1 + start : 1 + end]
        return self.get_entries()[start:end]

    def envelopes(self, start: int, end: int) -> Envelopes:
        """The envelopes of ``get_entries()[start:end]`` (``0 <= start <= end``) as columns, for a
        pass over every entry (after a reopen from the index: from its columns, making no entry)."""
        from .envelopes import Envelopes

        rows = self._rows
        if rows is not None:
            return rows.envelopes(start, end)
        return Envelopes.of_entries(self.entries_slice(start, end), start)

    def position_of(self, entry_id: Any) -> int:
        """Where in ``get_entries()`` the last entry with this id is, or -1 (what a search from the
        end finds, without the search: the index holds the last entry of every id)."""
        rows = self._rows
        if rows is not None:
            return rows.row_of_id(entry_id)  # (every id names one row)
        entry = self._by_id.get(index_key(entry_id))
        if entry is None:
            return -1
        if self._header_only_first:
            at = Positions(self._file_entries).of(entry, len(self._file_entries))
            return at - 1 if at > 0 else -1  # file entry 0 is the header
        entries = self.get_entries()
        return next((k for k in range(len(entries) - 1, -1, -1) if entries[k] is entry), -1)

    def entry_at_line(self, line: int) -> Entry | None:
        """The entry read from (or appended to) 0-based line ``line`` of the session file, or None:
        the header, a blank or broken line, a line past the end, or an entry not written yet.
        What an editor needs for "the entry under the cursor", without building the tree. A
        ``line`` that is no number raises :class:`~pi_session_server.errors.InvalidArgTypeError`,
        one that is no whole number :class:`~pi_session_server.errors.ArgOutOfRangeError`, as
        Node's ``validateInteger`` words them."""
        if type(line) is not int:
            line = _whole_number(line, "line")
        found = entry_on_line(self._file_entries, line)
        return found if found is not None and found.type != "session" else None

    def row_tree(self) -> RowTree | None:
        """:meth:`get_tree` as nodes made when reached, with the entries by id and the leaf's
        path (``by_id``, ``get_branch()``) as they are found, while the entries of a load from the
        index are not made (None otherwise, or when the rows do not give it: see row_tree)."""
        rows = self._rows
        leaf = rows.row_of_id(self._leaf_id) if rows is not None else -1
        if rows is None or leaf < 0:
            return None
        labels = {key: label for key, (_target, label) in self._labels.items()}
        return row_tree(rows, labels, dict(self._label_timestamps), leaf)

    def chain_tree(self) -> RowTree | None:
        """:meth:`row_tree`, or for a session whose entries are made (read from its file) the same
        tree over them, told by where their chains start: nodes made when reached, not one per
        entry. None when neither gives it (ids not all distinct non-empty strings, chains not
        known, a parent not above its child: see row_tree)."""
        if self._rows is not None:
            return self.row_tree()
        starts = self._chain_starts
        if starts is None or not (self._header_only_first and self._plain_index and self.has_unique_ids()):
            return None
        rows = entry_rows(self._file_entries, self._by_id, starts)
        leaf = -1 if rows is None else rows.row_of_id(self._leaf_id)
        if rows is None or leaf < 0:
            return None
        labels = {key: label for key, (_target, label) in self._labels.items()}
        return row_tree(rows, labels, dict(self._label_timestamps), leaf)

    def _chains(self) -> tuple[builtins.list[Entry], builtins.list[int] | None] | None:
        """get_entries() and where chains start in it, for walks to the root (see chains.py)."""
        if self._chain_starts is None:
            return None
        return self.get_entries(), self._chain_starts

    def _session_path(self, leaf_id: Any) -> builtins.list[Any] | RowPath:
        """``build_session_path`` at ``leaf_id``: walked over the index's rows while the entries are
        not made (from the row with that id, else the last row), else over the entries."""
        rows = self._rows
        if leaf_id is None and rows is not None:
            return []  # (build_session_path's answer for no leaf)
        if rows is not None and rows.count:
            # (in build_session_path, a leaf_id that is not truthy, or not found, means the last entry)
            row = rows.row_of_id(leaf_id)
            path = rows.path_to_root(row if row >= 0 else rows.count - 1)
            if path is not None:
                return path
        return build_session_path(*self._path_inputs(leaf_id), **self._path_hints())

    def _path_inputs(self, leaf_id: Any) -> tuple[builtins.list[Entry], Any, dict[Any, Entry]]:
        return self.get_entries(), leaf_id, self._by_id

    def _path_hints(self) -> dict[str, Any]:
        """What the manager knows that makes walks to the root cheap (see context.walk_to_root)."""
        return {"plain_index": self._plain_index, "chain_starts": self._chain_starts}
