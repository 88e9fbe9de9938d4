"""The in-memory index of a session's file entries: the entries (or the persistent index's rows),
the id index, the leaf, the labels and where chains start."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..format.entry import Entry
from ..format.jsvalue import index_key, truthy
from ..format.scan import IdIndex
from .fields import field as entry_field
from .index_rows import IndexedRows
from .profiles import Profile


class EntryIndex:
    """The file entries and what is kept of them to answer cheaply: the id index (or the persistent
    index's rows, their entries made when first asked for), the leaf, the labels, whether there is a
    conversation, where chains start. A base of :class:`.manager.SessionManager`, whose
    ``__init__`` sets this state (declared here for the type checker)."""

    profile: Profile
    _rows: IndexedRows | None
    _rows_header: Entry | None
    _entry_list: builtins.list[Entry] | None
    _id_map: dict[Any, Entry] | None
    _labels: dict[Any, tuple[Any, Any]]
    _label_timestamps: dict[Any, Any]
    _leaf_id: Any
    _has_conversation: bool | None
    _header_only_first: bool
    _plain_index: bool
    _chain_starts: builtins.list[int] | None

    if TYPE_CHECKING:  # pi's accessors of the index, the manager's (its API)

        def get_header(self) -> Any: ...

        def get_entries(self) -> builtins.list[Entry]: ...

        def get_entry_count(self) -> int: ...

        def iter_entries(self) -> Iterator[Entry]: ...

    @property
    def _file_entries(self) -> builtins.list[Entry]:
        entries = self._entry_list
        return entries if entries is not None else self._every_entry()[0]

    @_file_entries.setter
    def _file_entries(self, entries: builtins.list[Entry]) -> None:
        self._entry_list = entries
        self._rows = self._rows_header = None

    @property
    def _by_id(self) -> dict[Any, Entry]:
        by_id = self._id_map
        return by_id if by_id is not None else self._every_entry()[1]

    @_by_id.setter
    def _by_id(self, by_id: dict[Any, Entry]) -> None:
        self._id_map = by_id

    def _every_entry(self) -> tuple[builtins.list[Entry], dict[Any, Entry]]:
        """The file entries and the id index of a load from the index's rows, made now (the
        entries made before among them)."""
        rows, header = self._rows, self._rows_header
        assert rows is not None and header is not None
        return self._list_rows(header, *rows.every_entry())

    def _list_rows(
        self, header: Entry, entries: builtins.list[Entry], ids: builtins.list[str]
    ) -> tuple[builtins.list[Entry], dict[Any, Entry]]:
        """Hold ``header`` and ``entries``, rows' entries with their ids, as the file entries and
        the id index instead of the rows."""
        by_id = dict(zip(ids, entries, strict=True))
        entries.insert(0, header)  # in place: no second list of every entry
        self._entry_list, self._id_map = entries, by_id
        self._rows = self._rows_header = None
        return entries, by_id

    def _set_file_entries(
        self,
        entries: builtins.list[Entry],
        scanned: IdIndex | None = None,
        rows: IndexedRows | None = None,
    ) -> None:
        """``scanned``: the scanner's index of ``entries[1:]`` when ``entries[0]`` is the header;
        ``rows``: the entries after it as the index's rows (``entries`` is then the header alone)."""
        self._file_entries = entries
        self._has_conversation = None  # counted when first asked
        if rows is not None:
            self._adopt_rows(entries[0], rows)
            return
        if scanned is not None and scanned.complete and self._adopt_index(scanned):
            return
        self._build_index()

    def _adopt_rows(self, header: Entry, rows: IndexedRows) -> None:
        """A load from the index's rows (every id a distinct non-empty string, one header on top:
        see scan_index._lazy_allowed); only the label entries are made now."""
        self._entry_list = self._id_map = None
        self._rows, self._rows_header = rows, header
        self._plain_index = True
        self._header_only_first = True
        self._chain_starts = list(rows.columns.chain_starts)
        self._leaf_id = rows.id_at(rows.count - 1) if rows.count else None
        self._index_labels(map(rows.entry, rows.rows_of_type("label")))

    def _adopt_index(self, scanned: IdIndex) -> bool:
        """Take the index the scan built while reading (pi's files: string ids, one header on top).
        False when the file needs the general rules (another "session" line among the entries)."""
        others = scanned.non_messages
        if any(e.type == "session" for e in others):
            return False
        by_id = scanned.by_id
        self._by_id = by_id
        self._plain_index = "" not in by_id
        self._header_only_first = True
        self._chain_starts = scanned.chain_starts
        self._leaf_id = self._file_entries[-1].id if len(self._file_entries) > 1 else None
        self._index_labels(others)
        return True

    def _build_index(self) -> None:
        """The reference's "build index" over the file entries (one tight loop: it runs on every load)."""
        by_id: dict[Any, Entry] = {}
        headers: builtins.list[Entry] = []
        others: builtins.list[Entry] = []  # entries that are not messages (labels among them)
        plain = True  # every id a string (see context.is_plain_index)
        for entry in self._file_entries:
            if entry.type != "message":  # one comparison for the common case
                if entry.type == "session":
                    headers.append(entry)
                    continue
                others.append(entry)
            entry_id = entry.id
            if type(entry_id) is str:
                by_id[entry_id] = entry
            else:
                by_id[index_key(entry_id)] = entry
                plain = False
        self._plain_index = plain and "" not in by_id
        self._chain_starts = None
        self._header_only_first = len(headers) == 1 and headers[0] is self._file_entries[0]
        leaf: Any = None
        for entry in reversed(self._file_entries):
            if entry.type != "session":
                leaf = entry.id
                break
        self._by_id = by_id
        self._leaf_id = leaf
        self._index_labels(others)

    def _index_labels(self, others: Iterable[Entry]) -> None:
        """Labels from the non-message entries, in file order (labels only interact with each other)."""
        self._labels = {}
        self._label_timestamps = {}
        for entry in others:
            if entry.type != "label":
                continue
            aux = entry.aux
            if aux is None:
                aux = (entry_field(entry, "targetId"), entry_field(entry, "label"))
            self._apply_label(aux[0], aux[1], entry.timestamp)

    def _index_entry(self, entry: Entry) -> None:
        etype = entry.type
        if etype == "session":
            self._header_only_first = False
            self._chain_starts = None
            return
        self._note_key(entry.id)
        self._note_chain(entry)
        self._by_id[index_key(entry.id)] = entry
        self._take_in(entry)

    def _take_in(self, entry: Entry) -> None:
        """What an entry just added after the others (not a header) changes beyond the entries and
        the id index: the leaf, whether there is a conversation, the labels."""
        etype = entry.type
        self._leaf_id = entry.id
        if etype == "message" and self.profile.is_conversation(entry.role):
            self._has_conversation = True
        elif etype == "label":
            aux = entry.aux
            if aux is None:
                aux = (entry_field(entry, "targetId"), entry_field(entry, "label"))
            self._apply_label(aux[0], aux[1], entry.timestamp)

    def _add_entries(self, entries: Sequence[Entry]) -> None:
        """Take ``entries``, the lines just after the file's last (written by us or another
        program, their lines and offsets known), in as the session's last entries. After a load
        from the index they join its rows when they keep the rows' rules (every entry is made
        otherwise, as it would be for them)."""
        rows = self._rows
        if rows is not None:
            known_starts = len(rows.columns.chain_starts)
            if rows.append_scanned(entries):
                if self._chain_starts is not None:
                    self._chain_starts.extend(rows.columns.chain_starts[known_starts:])
                for entry in entries:
                    self._take_in(entry)
                return
            self._every_entry()
        for entry in entries:
            self._file_entries.append(entry)
            self._index_entry(entry)

    def _list_entry(self, entry: Entry) -> None:
        """Put ``entry`` last in the list of entries and in the id index."""
        self._note_key(entry.id)  # (a failed append leaves it False: only slower, never wrong)
        self._file_entries.append(entry)
        self._note_chain(entry)
        self._by_id[index_key(entry.id)] = entry

    def _note_chain(self, entry: Entry) -> None:
        """Keep ``_chain_starts`` true for ``entry``, just appended to the file entries."""
        starts = self._chain_starts
        if starts is None or not self._header_only_first:
            return
        position = len(self._file_entries) - 2  # in get_entries(): the header is file entry 0
        while starts and starts[-1] >= position:  # left by appends taken back after a failed write
            starts.pop()
        before = self._file_entries[-2]
        parent_id = entry.parent_id
        if position == 0 or type(parent_id) is not str or parent_id != before.id:
            starts.append(position)

    def _note_key(self, entry_id: Any) -> None:
        if type(entry_id) is not str or not entry_id:
            self._plain_index = False

    def _any_conversation(self) -> bool:
        """Does any file entry hold a message of a conversation role (``profile.conversation_roles``)?
        pi writes a new session's file only then (0.86.1: an assistant message; 1.6.0: a user or
        assistant one)."""
        if self._has_conversation is None:
            is_conversation = self.profile.is_conversation
            self._has_conversation = any(
                e.type == "message" and is_conversation(e.role) for e in self._file_entries
            )
        return self._has_conversation

    def _apply_label(self, target: Any, label: Any, timestamp: Any) -> None:
        key = index_key(target)
        if truthy(label):
            previous = self._labels.get(key)
            self._labels[key] = (previous[0] if previous else target, label)
            self._label_timestamps[key] = timestamp
        else:
            self._labels.pop(key, None)
            self._label_timestamps.pop(key, None)

    def _entry_or_none(self, entry_id: Any) -> Entry | None:
        """The entry with ``entry_id`` (the last one when ids repeat), or None."""
        rows = self._rows
        if rows is not None:
            return rows.entry_of_id(entry_id)
        return self._by_id.get(index_key(entry_id))

    def _has_entry(self, entry_id: Any) -> bool:
        """Whether an entry has ``entry_id`` (over the index's rows: no entry made)."""
        rows = self._rows
        if rows is not None:
            return rows.row_of_id(entry_id) >= 0
        return index_key(entry_id) in self._by_id
