"""pi/getStats: what a session viewer shows at the top, the totals of the whole session.

Entries by type and message role, branch points and leaves, the tokens and cost of the session
counted as pi's ``getSessionStats()`` counts them (0.86.1 and 1.6.0 alike: the ``usage`` of
assistant messages, of tool results, of ``usage`` entries and of branch summaries and compactions;
its ``total`` the sum of input, output, cache reads and cache writes), the assistant turns' by model,
and the first and last timestamps. The sums are kept per session and,
when the file only grew (pi appends), only the new entries are added.

Everything but the usage comes from the entries' envelopes, taken as columns
(``SessionManager.envelopes``: after a reopen from the index, straight from its columns, no entry
made) and counted a column at a time. The usage needs the assistant messages' bodies: they are read
from the file in one pass in file order (a big buffer, a small decoder that skips the content), not
line by line as the library reads an entry's body (the whole JSON, a read each), and kept with the
file's index (session/turn_store.py): the next totals of the same lines, in this process or
another, read only the lines added since. The entries are counted a part at a time, each part's
columns dropped before the next is made (a session of GBs has hundreds of thousands of entries).

Branch points and leaves are told by where the entries' chains start (:func:`chain_counts`), which
the manager keeps up to date as entries are appended: told again after appends, nothing kept per
entry. Only a tree the chains do not tell (an id twice, a parent after its child or never written)
is counted entry by entry (children per parent, kept for appends), and the tree is made only for a
file whose entries could make that count disagree with ``getTree``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry, MessageHead
from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.regular_file import open_regular
from pi_session_server.session import cache_dir, preview_store, scan_index, turn_store
from pi_session_server.session.envelopes import Envelopes
from pi_session_server.session.index_rows import ChainColumns
from pi_session_server.session.row_tree import RowTreeOutgrown

from .library_tree import shown_tree
from .tree_pages import session_state

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
# what pi's ``tokens.total`` adds up (the recorded totalTokens is ours: older pi releases recorded none)
PI_TOTAL_KEYS = USAGE_KEYS[:4]
_CHUNK = 8 * 1024 * 1024  # bytes read at once for the pass over the assistant messages
_ENTRIES_AT_ONCE = 65_536  # entries counted at once (see _add_entries)
_PACKED_EVERY = 16_384  # turns read before their values are packed into arrays (turn_store.packed)


def _sum_onto(total: float, values: Iterable[Any]) -> float:
    """``total`` plus the values that are finite numbers, added one after the other (a JSON value
    that is not a number, a boolean, NaN or an infinity counts 0)."""
    for value in values:
        kind = value.__class__
        if kind is int or (kind is float and value - value == 0):  # (inf - inf and NaN - NaN: NaN)
            total += value
    return total


def _model_names(providers: Sequence[Any], models: Sequence[Any]) -> list[str]:
    """The name each turn's usage is summed under: "provider/model" (the parts that are strings),
    else "(unknown)"."""
    known: dict[tuple[str, str], str] = {}
    names = []
    for provider, model in zip(providers, models, strict=True):
        if provider.__class__ is str and model.__class__ is str:
            name = known.get((provider, model))
            if name is None:
                name = known[provider, model] = f"{provider}/{model}"
        else:
            name = "/".join(part for part in (provider, model) if isinstance(part, str)) or "(unknown)"
        names.append(name)
    return names


class _Cost(msgspec.Struct, gc=False):
    total: Any = None


class _Usage(msgspec.Struct, gc=False):
    input: Any = None  # the JSON keys (USAGE_KEYS)
    output: Any = None
    cacheRead: Any = None
    cacheWrite: Any = None
    totalTokens: Any = None
    cost: _Cost | None = None


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    provider: Any = None
    model: Any = None
    usage: _Usage | None = None


class _AssistantLine(msgspec.Struct, gc=False):
    """What the totals read of a line with usage (the rest is skipped, not built): an assistant
    message's or a tool result's (in ``message``), a usage entry's, a branch summary's or a
    compaction's (``usage``). A usage or cost that is not an object does not decode: that line is
    read the library's way."""

    type: Any = None
    id: Any = None
    message: _Message | None = None
    usage: _Usage | None = None


_decode_line = msgspec.json.Decoder(_AssistantLine).decode


#: What the totals add of an assistant message: (provider, model, then its usage's values in the
#: order of USAGE_KEYS, then its cost's total), the values as found (what is not a finite number
#: counts 0). A tuple: one is made per assistant message, and the totals add them column by column.
Turn = tuple[Any, Any, Any, Any, Any, Any, Any, Any]
TURN_FIELDS = 2 + len(USAGE_KEYS) + 1


#: the entry types whose own ``usage`` pi's totals add (getSessionStats: a usage entry's always, a
#: branch summary's and a compaction's when it has one)
_USAGE_ENTRY_TYPES = frozenset({"usage", "branch_summary", "compaction"})


def turn_of_message(message: Any) -> Turn | None:
    """The turn of a message value (as ``Entry.get("message")`` gives it); None for a value that
    is not an object (it adds nothing)."""
    if not isinstance(message, dict):
        return None
    return _turn_of_usage(message.get("provider"), message.get("model"), message.get("usage"))


def other_usage_of(entry: Entry) -> Turn | None:
    """What an entry that is not an assistant message adds to the totals (a tool result's message's
    usage; a usage entry's, a branch summary's or a compaction's own), as the library reads it;
    None: nothing (no usage, no object)."""
    if entry.type == "message":
        message = entry.get("message")
        return _turn_of_usage(None, None, message.get("usage")) if isinstance(message, dict) else None
    return _turn_of_usage(None, None, entry.get("usage"))


def _turn_of_usage(provider: Any, model: Any, usage: Any) -> Turn:
    get = usage.get if isinstance(usage, dict) else {}.get
    cost = get("cost")
    return (
        provider,
        model,
        get("input"),  # USAGE_KEYS
        get("output"),
        get("cacheRead"),
        get("cacheWrite"),
        get("totalTokens"),
        cost.get("total") if isinstance(cost, dict) else None,
    )


@dataclass
class SessionTotals:
    """The sums over the entries added so far (``count`` of them, the last one ``last``)."""

    count: int = 0
    last: Any = None
    types: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    cost: float = 0
    # the usage of the other entries pi's totals add (tool results, usage entries, branch summaries,
    # compactions), summed apart: the sums, float for float, are the same counted at once or a part
    # at a time (see :attr:`all_tokens`)
    other_tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    other_cost: float = 0
    models: dict[str, dict[str, float]] = field(default_factory=dict)
    first_timestamp: Any = ABSENT
    last_timestamp: Any = ABSENT
    # the tree, when its chains do not tell it (`tree_counted`, below), counted as entries come,
    # for appends to be counted alone: the children of each entry seen, by its key (one map
    # tells both what was seen and how many children: a session of GBs has hundreds of thousands
    # of entries), parent keys named before their entry came; `irregular` when that
    # entry then came, or an id repeats or is missing (getTree's answer may then differ: it is
    # asked for instead)
    children: dict[Any, int] = field(default_factory=dict)
    forward: set[Any] = field(default_factory=set)
    branch_points: int = 0
    leaves: int = 0
    irregular: bool = False
    # False: the tree is not counted here (its counts are told by the chains: see _counted_afresh)
    tree_counted: bool = True

    def add(self, entries: Envelopes, turns: Sequence[Turn]) -> None:
        """Count ``entries`` (in order); ``turns``: what the assistant messages among them add, in
        their order."""
        self.add_columns(entries, list(zip(*turns, strict=True)))

    def add_columns(self, entries: Envelopes, columns: Sequence[Sequence[Any]]) -> None:
        """:meth:`add`, the turns given column by column (empty: none)."""
        _count_into(self.types, entries.types)
        _count_into(
            self.roles, [head.role if head is not None else ABSENT for head in _message_heads(entries)]
        )
        timestamps = entries.timestamps
        first = next((t for t in timestamps if isinstance(t, str)), ABSENT)
        if first is not ABSENT:
            if self.first_timestamp is ABSENT:
                self.first_timestamp = first
            self.last_timestamp = next(t for t in reversed(timestamps) if isinstance(t, str))
        if self.tree_counted:
            self._add_to_tree(entries.ids, entries.parents)
        if columns and columns[0]:
            self._add_turns(columns)

    def add_other_usage(self, columns: Sequence[Sequence[Any]]) -> None:
        """Add the usage of entries that are not assistant turns (see :func:`other_usage_of`),
        column by column as :meth:`add_columns` takes turns: to the session's tokens and cost, not
        to a model's."""
        if columns and columns[0]:
            self.other_cost = _add_usage(self.other_tokens, self.other_cost, columns)

    @property
    def all_tokens(self) -> dict[str, float]:
        """The tokens pi's totals count: the assistant turns' and the other entries'."""
        return {key: value + self.other_tokens[key] for key, value in self.tokens.items()}

    @property
    def all_cost(self) -> float:
        return self.cost + self.other_cost

    def _add_turns(self, columns: Sequence[Sequence[Any]]) -> None:
        """Add the turns' usage (:func:`_add_usage`), and each to its model's."""
        self.cost = _add_usage(self.tokens, self.cost, columns)
        providers, models, *token_columns, costs = columns
        total_tokens = token_columns[-1]
        turns_of: dict[str, list[int]] = {}  # model name -> its turns' positions, names as they come
        for position, name in enumerate(_model_names(providers, models)):
            turns_of.setdefault(name, []).append(position)
        for name, mine in turns_of.items():
            per_model = self.models.setdefault(name, {"turns": 0, "totalTokens": 0, "cost": 0})
            per_model["turns"] += len(mine)
            per_model["totalTokens"] = _sum_onto(per_model["totalTokens"], [total_tokens[i] for i in mine])
            per_model["cost"] = _sum_onto(per_model["cost"], [costs[i] for i in mine])

    def _add_to_tree(self, ids: Sequence[Any], parents: Sequence[Any]) -> None:  # noqa: C901 - the loop over every entry
        children, forward = self.children, self.forward
        leaves, branch_points, irregular = self.leaves, self.branch_points, self.irregular
        key: Any
        for entry_id, parent in zip(ids, parents, strict=True):
            if entry_id.__class__ is str and entry_id:  # the usual id: its own key
                key = entry_id
            else:
                key = index_key(entry_id) if truthy(entry_id) else None
            if key is None or key in children or key in forward:
                irregular = True
            else:
                children[key] = 0
                leaves += 1
            if parent.__class__ is str:
                if not parent:
                    continue
                parent_key = parent
            elif truthy(parent):
                parent_key = index_key(parent)
            else:
                continue
            if parent_key == key:
                irregular = True
                continue
            count = children.get(parent_key)
            if count is None:
                forward.add(parent_key)  # an orphan, or a parent written later
                continue
            children[parent_key] = count = count + 1
            if count == 1:
                leaves -= 1
            elif count == 2:
                branch_points += 1
        self.leaves, self.branch_points, self.irregular = leaves, branch_points, irregular


def _add_usage(tokens: dict[str, float], cost: float, columns: Sequence[Sequence[Any]]) -> float:
    """Add the usage of turns given column by column onto ``tokens``, and return ``cost`` with
    theirs added; each sum growing value by value in the turns' order: the same sums, float for
    float, as adding turn after turn."""
    _providers, _models, *token_columns, costs = columns
    for key, values in zip(USAGE_KEYS, token_columns, strict=True):
        tokens[key] = _sum_onto(tokens[key], values)
    return _sum_onto(cost, costs)


def _message_heads(entries: Envelopes) -> list[MessageHead | None]:
    """The message heads of the message entries among ``entries``, in order (None: a message
    without one)."""
    return [
        head for entry_type, head in zip(entries.types, entries.heads, strict=True) if entry_type == "message"
    ]


def _count_into(counts: dict[str, int], values: Sequence[Any]) -> None:
    """Add how often each value comes to ``counts`` (a value that is not a string counts as
    "(other)"), new names in the order they first come."""
    try:
        found = Counter(values)
    except TypeError:  # an array or object among them
        found = Counter(value if isinstance(value, str) else "(other)" for value in values)
    for value, n in found.items():
        name = value if isinstance(value, str) else "(other)"
        counts[name] = counts.get(name, 0) + n


def _tree_counts(roots: list[Any]) -> tuple[int, int]:
    """(branch points, leaves) of the tree: nodes with several children, nodes with none."""
    branch_points = leaves = 0
    stack = list(roots)
    while stack:
        node = stack.pop()
        children = node.children
        if not children:
            leaves += 1
        elif len(children) > 1:
            branch_points += 1
        stack.extend(children)
    return branch_points, leaves


def _assistant_positions(entries: Envelopes) -> list[int]:
    return [
        position
        for position, (entry_type, head) in enumerate(zip(entries.types, entries.heads, strict=True))
        if entry_type == "message" and head is not None and head.role == "assistant"
    ]


def _other_usage_positions(entries: Envelopes) -> list[int]:
    """The positions of the entries whose usage pi's totals add beside the assistant turns'."""
    return [
        position
        for position, (entry_type, head) in enumerate(zip(entries.types, entries.heads, strict=True))
        if (entry_type == "message" and head is not None and head.role == "toolResult")
        or (entry_type.__class__ is str and entry_type in _USAGE_ENTRY_TYPES)
    ]


class _FileLines:
    """The lines of a file read in file order in one pass: a big buffer, read again from a line on
    when it does not hold all of it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer, self.start = b"", 0
        self.view = memoryview(self.buffer)

    def line_at(self, offset: int) -> tuple[memoryview, int]:
        """The line at ``offset`` (without its newline) and where it ends in the file with its
        newline (-1: the file ends first)."""
        at = offset - self.start
        end = self.buffer.find(b"\n", at) if 0 <= at < len(self.buffer) else -1
        if end < 0:  # the line is not (all) in the buffer: read from it on
            self.view.release()
            self.buffer = b""  # (let go before the next is read: not both held at once)
            buffer = os.pread(self.fd, _CHUNK, offset)
            while (end := buffer.find(b"\n")) < 0:
                more = os.pread(self.fd, _CHUNK, offset + len(buffer))
                if not more:
                    self.buffer, self.start, self.view = buffer, offset, memoryview(buffer)
                    return self.view, -1
                buffer += more
            self.buffer, self.start, self.view = buffer, offset, memoryview(buffer)
            at = 0
        return self.view[at:end], self.start + end + 1

    def close(self) -> None:
        self.view.release()
        os.close(self.fd)


class _ReadLines:
    """The turns read from whole lines: where each is among the turns, the offset of its line, and
    where the last of those lines ends."""

    __slots__ = ("end", "indexes", "offsets")

    def __init__(self) -> None:
        self.indexes = array("q")
        self.offsets = array("q")
        self.end = 0

    def note(self, index: int, offset: int, end: int) -> None:
        self.indexes.append(index)
        self.offsets.append(offset)
        self.end = max(self.end, end)

    def kept(self, columns: list[list[Any]]) -> turn_store.KeptTurns:
        """These turns, taken from the ``columns`` of all the turns, to keep."""
        if len(self.indexes) != len(columns[0]):
            columns = [[column[index] for index in self.indexes] for column in columns]
        return turn_store.KeptTurns(self.offsets, columns, self.end)


def _turns(  # noqa: C901 - the loop over every turn
    path: Any,
    entries: Envelopes,
    positions: list[int],
    entry_at: Callable[[int], Entry],
    kept: Mapping[int, Turn],
    read: _ReadLines | None = None,
    file_id: tuple[int, int] | None = None,
    *,
    other_usage: bool = False,
) -> list[Any]:
    """What the assistant messages at ``positions`` among ``entries`` add (``other_usage``: the
    other entries with usage there, see :func:`other_usage_of`), in order, column by
    column (a :data:`Turn`'s fields): what is ``kept`` of their line (by its offset), else their
    lines read in one pass over the file in file order. A line that is not what its entry says (the
    file changed, an odd value) is read as the library reads it (``entry_at(position)``). ``read``:
    where the turns read from whole lines are noted, when the file at ``path`` is the one
    ``file_id`` (device, inode) names. (Columns, not a tuple per turn, and each provider and model
    name held once, the values packed into arrays where they can be: a session of GBs has hundreds
    of thousands of turns, most of one model.)"""
    offsets, ids = entries.offsets, entries.ids
    columns: list[list[Any]] = [[] for _ in range(TURN_FIELDS)]
    providers, models = columns[0], columns[1]
    packed: list[Any] = [None for _ in columns[2:]]  # the values so far (see turn_store.packed)
    values = [column.append for column in columns[2:]]
    names: dict[str, str] = {}
    lines = None
    if isinstance(path, str) and any(offsets[p] >= 0 and offsets[p] not in kept for p in positions):
        # a FIFO or a device renamed over the file is not opened (the entries are then read from
        # what the session holds, as for a file that is gone)
        with contextlib.suppress(OSError):
            lines = _FileLines(open_regular(path))
    if read is not None and (lines is None or _file_id(lines.fd) != file_id):
        read = None  # lines of another file than the one kept turns describe
    try:
        for position in positions:
            offset = offsets[position]
            turn = kept.get(offset)
            if turn is None and lines is not None and offset >= 0:
                line, end = lines.line_at(offset)
                turn = _turn_of(line, ids[position], other_usage)
                line.release()  # (it holds the buffer: not to be held with the next one read)
                if turn is not None and end >= 0 and read is not None:
                    read.note(len(providers), offset, end)
            if turn is None:
                entry = entry_at(position)
                turn = other_usage_of(entry) if other_usage else turn_of_message(entry.get("message"))
            if turn is None:
                continue
            provider, model, *numbers = turn
            providers.append(names.setdefault(provider, provider) if provider.__class__ is str else provider)
            models.append(names.setdefault(model, model) if model.__class__ is str else model)
            for append, value in zip(values, numbers, strict=True):
                append(value)
            if len(providers) % _PACKED_EVERY == 0:
                _pack(packed, columns)
    finally:
        if lines is not None:
            lines.close()
    _pack(packed, columns)
    return [providers, models, *packed]


def _pack(packed: list[Any], columns: list[list[Any]]) -> None:
    """Move the values of ``columns`` (after the provider and the model) onto ``packed``."""
    for at, column in enumerate(columns[2:]):
        packed[at] = turn_store.packed(column, packed[at])
        column.clear()


def _file_id(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _turn_of(line: Any, entry_id: Any, other_usage: bool = False) -> Turn | None:
    """The turn an assistant message's line adds (``other_usage``: what the line of a tool result,
    a usage entry, a branch summary or a compaction adds), or None when the line does not decode to
    such an entry with ``entry_id`` (then the entry's own reading, with its checks, is used)."""
    try:
        decoded = _decode_line(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # (nested too deep for msgspec)
        return None
    if decoded.id.__class__ is not str or decoded.id != entry_id:
        return None
    message = decoded.message
    if not other_usage:
        if decoded.type != "message" or message is None or message.role != "assistant":
            return None
        return _turn_of_decoded(message.provider, message.model, message.usage)
    if decoded.type == "message":
        if message is None or message.role != "toolResult":
            return None
        return _turn_of_decoded(None, None, message.usage)
    if decoded.type.__class__ is not str or decoded.type not in _USAGE_ENTRY_TYPES:
        return None
    return _turn_of_decoded(None, None, decoded.usage)


def _turn_of_decoded(provider: Any, model: Any, usage: _Usage | None) -> Turn:
    if usage is None:
        return (provider, model, None, None, None, None, None, None)
    cost = usage.cost
    return (
        provider,
        model,
        usage.input,
        usage.output,
        usage.cacheRead,
        usage.cacheWrite,
        usage.totalTokens,
        cost.total if cost is not None else None,
    )


class StatsCache:
    """The totals of each session (manager), brought up to date by adding only appended entries."""

    def __init__(self) -> None:
        self._kept: weakref.WeakKeyDictionary[Any, SessionTotals] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def totals(self, manager: Any) -> SessionTotals:
        count, last, _leaf = session_state(manager)
        with self._lock:
            try:
                kept = self._kept.get(manager)
            except TypeError:  # not weakly referenceable: nothing kept
                kept = None
        if kept is not None and kept.count == count and kept.last is last:
            return kept
        grown = (
            kept is not None
            and 0 < kept.count < count
            and manager.entries_slice(kept.count - 1, kept.count)[0] is kept.last
        )
        session_file = _session_file(manager)
        if grown and kept is not None and _add_appended(kept, manager, session_file, count):
            totals = kept
        else:
            totals = _counted_afresh(manager, session_file, count)
        totals.count, totals.last = count, last
        with self._lock, contextlib.suppress(TypeError):
            self._kept[manager] = totals
        return totals


def _session_file(manager: Any) -> Any:
    session_file = manager.get_session_file()
    return manager.environment.on_disk(session_file) if isinstance(session_file, str) else session_file


def totals_once(manager: Any) -> SessionTotals:
    """The totals of a session asked for once (the command line): :func:`_counted_afresh`, the
    same as the server's first count."""
    count, last, _leaf = session_state(manager)
    totals = _counted_afresh(manager, _session_file(manager), count)
    totals.count, totals.last = count, last
    return totals


def _counted_afresh(manager: Any, session_file: Any, count: int) -> SessionTotals:
    """The totals of the first ``count`` entries of the session: counted a part of the entries at a
    time, each part's columns dropped before the next is made, and the branch points and leaves
    told by where the entries' chains start (not counted entry by entry, which keeps every entry's
    number of children) when the manager knows them."""
    tree = _counts_of_chains(manager)
    totals = SessionTotals(tree_counted=tree is None)
    _add_entries(totals, manager, session_file, 0, count, _ENTRIES_AT_ONCE)
    if tree is not None:
        totals.branch_points, totals.leaves = tree
    return totals


def _add_appended(totals: SessionTotals, manager: Any, session_file: Any, count: int) -> bool:
    """Add the entries appended after the ``totals.count`` counted to ``totals``, up to ``count``
    (in one piece: a read that fails leaves the totals as they were). Totals whose tree is told by
    the chains are told it again (the chains' starts only, kept up to date by the manager); False,
    nothing added, when the chains no longer tell it (an append with an id seen before, or a
    parent never seen): the entries are then counted afresh, entry by entry."""
    tree = None
    if not totals.tree_counted:
        tree = _counts_of_chains(manager)
        if tree is None:
            return False
    _add_entries(totals, manager, session_file, totals.count, count, count - totals.count)
    if tree is not None:
        totals.branch_points, totals.leaves = tree
    return True


def _counts_of_chains(manager: Any) -> tuple[int, int] | None:
    """(branch points, leaves) of the session's tree told by its chains (``manager.chain_tree``),
    or None when they do not tell it (ids not distinct strings, a parent not above its child...)."""
    try:
        tree = manager.chain_tree()
    except RowTreeOutgrown:  # (roots by the thousand: the tree is counted entry by entry)
        return None
    return None if tree is None else chain_counts(tree.rows.columns)


def chain_counts(columns: ChainColumns) -> tuple[int, int]:
    """(branch points, leaves) of rows whose tree ``row_tree`` tells (every chain start hangs under
    a row above it, or is a root): each row's children are the row after it, unless that starts a
    chain, and the chain starts hung under it. Counted over the chain starts alone."""
    count, starts, parents, parent_rows = (
        columns.count,
        columns.chain_starts,
        columns.parents,
        columns.parent_rows,
    )
    hung: Counter[int] = Counter()  # row -> the chain starts under it
    for start in starts:
        if start not in parents:
            hung[start - 1] += 1  # (a start whose parent is the row before)
        elif parents[start] is not None:
            hung[parent_rows[start]] += 1
    chain_ends = {start - 1 for start in starts if start}  # the rows the next row is not a child of
    chain_ends.add(count - 1)
    leaves = sum(1 for row in chain_ends if row not in hung)
    branch_points = sum(1 for row, n in hung.items() if n + (row not in chain_ends) > 1)
    return branch_points, leaves


def _add_entries(
    totals: SessionTotals, manager: Any, session_file: Any, start: int, end: int, at_once: int
) -> None:
    """Add entries ``start`` to ``end`` of the session to ``totals``, ``at_once`` at a time (each
    part's columns dropped before the next is made; a read that fails in a later part leaves the
    earlier ones added). The assistant messages' turns, and the other entries' usage, are loaded
    from and kept with the file's index, when it has one and they are worth it."""
    turns, others = _UsageReading(other_usage=False), _UsageReading(other_usage=True)
    try:
        for part in range(start, end, max(at_once, 1)):
            # read every message of the part before counting any of them
            new = manager.envelopes(part, min(end, part + at_once))
            entry_at = functools.partial(_entry_at, manager, new.start)
            more = part + at_once < end
            columns = turns.columns(session_file, new, _assistant_positions(new), entry_at, more)
            other_columns = others.columns(session_file, new, _other_usage_positions(new), entry_at, more)
            totals.add_columns(new, columns)
            totals.add_other_usage(other_columns)
    except BaseException:
        turns.let_go()
        others.let_go()
        raise
    turns.keep_read()
    others.keep_read()


class _UsageReading:
    """How the lines of one kind with usage (the assistant turns, or the other entries with usage:
    ``other_usage``) are read over the parts of a count: kept with the file's index (and loaded
    from it) once the first part finds enough of them, or more parts are to come."""

    __slots__ = ("asked", "indexed", "other_usage")

    def __init__(self, *, other_usage: bool) -> None:
        self.other_usage = other_usage
        self.asked = False
        self.indexed: _IndexedTurns | None = None

    def columns(
        self,
        session_file: Any,
        entries: Envelopes,
        positions: list[int],
        entry_at: Callable[[int], Entry],
        more: bool,
    ) -> list[Any]:
        """What the entries at ``positions`` among ``entries`` add, column by column (:func:`_turns`);
        ``more``: parts of the count are still to come."""
        if not self.asked and positions:
            self.asked = True
            if len(positions) >= turn_store.MIN_STORED or more:
                self.indexed = _IndexedTurns.of(entry_at(positions[0]), self.other_usage)
        if self.indexed is not None:
            return self.indexed.turns(session_file, entries, positions, entry_at)
        return _turns(session_file, entries, positions, entry_at, {}, other_usage=self.other_usage)

    def let_go(self) -> None:
        if self.indexed is not None:
            self.indexed.held.close()

    def keep_read(self) -> None:
        if self.indexed is not None:
            self.indexed.keep_read()


def _entry_at(manager: Any, start: int, position: int) -> Entry:
    """The entry ``start + position`` of the session, as the library reads it."""
    entry: Entry = manager.entries_slice(start + position, start + position + 1)[0]
    return entry


class _IndexedTurns:
    """The turns kept with the index of a session's file (turn_store) for a count of its entries a
    part or more at a time: loaded before the first part; what each part reads from whole lines
    gathered, kept with what was loaded after the last."""

    __slots__ = ("first", "held", "kept", "other_usage", "read_columns", "read_end", "read_offsets", "suffix")

    def __init__(self, held: preview_store.HeldFile, first: Entry, other_usage: bool = False) -> None:
        self.held, self.first = held, first
        self.other_usage = other_usage
        # (the other entries' usage kept apart: their lines are not the turns')
        self.suffix = turn_store.OTHER_USAGE_SUFFIX if other_usage else cache_dir.TURNS_SUFFIX
        self.kept = turn_store.load(held, first, self.suffix)
        self.read_offsets = array("q")
        self.read_columns: list[Any] = [[], [], *(None for _ in USAGE_KEYS), None]
        self.read_end = 0

    @classmethod
    def of(cls, first: Entry, other_usage: bool = False) -> _IndexedTurns | None:
        """Those of the file ``first`` is read from (``other_usage``: the other entries' usage, see
        :func:`other_usage_of`); None when nothing can be kept of it."""
        held = preview_store.hold([first])
        return None if held is None else cls(held, first, other_usage)

    def turns(
        self, session_file: Any, entries: Envelopes, positions: list[int], entry_at: Callable[[int], Entry]
    ) -> list[Any]:
        """What the assistant messages at ``positions`` among ``entries`` add, column by column
        (see :func:`_turns`): as kept, else read from the file (and gathered to be kept)."""
        kept = self.kept
        offsets = array("q", map(entries.offsets.__getitem__, positions))
        if offsets and kept.offsets:
            at = bisect_left(kept.offsets, offsets[0])
            upto = at + len(offsets)
            if kept.offsets[at:upto] == offsets:  # every turn kept (a reopen)
                if at == 0 and upto == len(kept.offsets):
                    return kept.columns
                return [column[at:upto] for column in kept.columns]
        read = _ReadLines()
        columns = _turns(
            session_file,
            entries,
            positions,
            entry_at,
            kept.by_offset(*_span(offsets)),
            read,
            self.held.identity[:2],
            other_usage=self.other_usage,
        )
        self._gather(read.kept(columns))
        return columns

    def _gather(self, read: turn_store.KeptTurns) -> None:
        if not read.offsets:
            return
        self.read_offsets.extend(read.offsets)
        gathered = self.read_columns
        providers, models, *values = read.columns
        gathered[0].extend(providers)
        gathered[1].extend(models)
        for at, column in enumerate(values, 2):
            gathered[at] = turn_store.packed(column, gathered[at])
        self.read_end = max(self.read_end, read.end)

    def keep_read(self) -> None:
        """Keep the turns read with those loaded (on another thread, when there is one), if they
        are enough to be worth it; else let the file go."""
        if len(self.read_offsets) < turn_store.MIN_STORED:
            self.held.close()
            return
        read = turn_store.KeptTurns(self.read_offsets, self.read_columns, self.read_end)
        scan_index.write_later_or_now(
            functools.partial(turn_store.save, self.held, self.first, self.kept, read, self.suffix)
        )


def _span(offsets: Sequence[int]) -> tuple[int, int]:
    """The first and the last offset of lines among ``offsets`` (-1: an entry not read from the
    file); (0, -1) when there is none."""
    lines = [offset for offset in offsets if offset >= 0]
    return (min(lines), max(lines)) if lines else (0, -1)


_stats = StatsCache()


def _with_pi_total(tokens: dict[str, float]) -> dict[str, float]:
    """``tokens`` and pi's ``total`` of them (getSessionStats: the four sums added, whatever
    totalTokens the messages recorded)."""
    return {**tokens, "total": sum(tokens[key] for key in PI_TOTAL_KEYS)}


def session_stats(manager: Any, cache: StatsCache | None = _stats) -> dict[str, Any]:
    """pi/getStats of a session; ``cache`` None: asked once (see :func:`totals_once`)."""
    totals = cache.totals(manager) if cache is not None else totals_once(manager)
    if totals.irregular:
        branch_points, leaves = _tree_counts(shown_tree(manager))
    else:
        branch_points, leaves = totals.branch_points, totals.leaves
    result: dict[str, Any] = {
        "entryCount": totals.count,
        "types": dict(totals.types),
        "roles": dict(totals.roles),
        "branchPoints": branch_points,
        "leaves": leaves,
        "tokens": _with_pi_total(totals.all_tokens),
        "cost": totals.all_cost,
        "models": {name: dict(values) for name, values in totals.models.items()},
    }
    if totals.first_timestamp is not ABSENT:
        result["firstTimestamp"] = totals.first_timestamp
        result["lastTimestamp"] = totals.last_timestamp
    return result
