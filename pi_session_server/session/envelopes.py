"""The envelopes of a run of entries as columns: what a pass over every entry reads of each.

Totals over a whole session (``pi/getStats``) look at every entry's type, role, id, parent and
timestamp, and read the assistant messages' lines by offset. Asking each entry for them costs a
call or two per field; after a reopen from the index (:mod:`.index_rows`) it would first make an
:class:`Entry` of every row, which is most of the work. :class:`Envelopes` hands the same facts
over as one list per field, made from the index's columns or from entries already made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..format.entry import Entry, MessageHead


@dataclass(slots=True)
class Envelopes:
    """Entries ``start`` to ``start + len(types)`` of a session, one list per field (position ``i``
    of each is entry ``start + i``). ``heads`` holds each entry's message head (None without one;
    only a message entry has a role: ``Entry.role``); ``offsets`` where its line starts in the
    session file (-1: not read from it)."""

    start: int
    types: Sequence[Any]
    ids: Sequence[Any]
    parents: Sequence[Any]
    timestamps: Sequence[Any]
    heads: Sequence[MessageHead | None]
    offsets: Sequence[int]

    def __len__(self) -> int:
        return len(self.types)

    @classmethod
    def of_entries(cls, entries: Sequence[Entry], start: int = 0) -> Envelopes:
        """The envelopes of ``entries``."""
        return cls(
            start,
            list(map(attrgetter("type"), entries)),
            list(map(attrgetter("id"), entries)),
            list(map(attrgetter("parent_id"), entries)),
            list(map(attrgetter("timestamp"), entries)),
            list(map(attrgetter("message"), entries)),
            list(map(attrgetter("offset"), entries)),
        )
