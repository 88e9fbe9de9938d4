"""pi/getStats: what a session viewer shows at the top, the totals of the whole session.

Entries by type and message role, branch points and leaves, the assistant turns' tokens and cost
(their ``usage``) by model, and the first and last timestamps. The sums are kept per session and,
when the file only grew (pi appends), only the new entries are added.

The usage needs the assistant messages' bodies: they are read from the file in one pass in file
order (a big buffer, a small decoder that skips the content), not line by line as the library reads
an entry's body (the whole JSON, a read each). Branch points and leaves are counted as entries come
(children per parent): the tree is made only for a file whose entries are not in the usual order
(a parent after its children, an id twice), where counting could disagree with ``getTree``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.session.fields import id_of, parent_of, role_of, type_of

from .tree_pages import session_state

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_CHUNK = 8 * 1024 * 1024  # bytes read at once for the pass over the assistant messages


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value if value == value and abs(value) != float("inf") else 0  # NaN and infinities: 0


class _Message(msgspec.Struct):
    role: Any = None
    provider: Any = None
    model: Any = None
    usage: Any = None


class _AssistantLine(msgspec.Struct):
    """What the totals read of an assistant message's line (the rest is skipped, not built)."""

    type: Any = None
    id: Any = None
    message: _Message | None = None


_decode_line = msgspec.json.Decoder(_AssistantLine).decode


@dataclass
class SessionTotals:
    """The sums over the entries added so far (``count`` of them, the last one ``last``)."""

    count: int = 0
    last: Any = None
    types: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    cost: float = 0
    models: dict[str, dict[str, float]] = field(default_factory=dict)
    first_timestamp: Any = ABSENT
    last_timestamp: Any = ABSENT
    # the tree, counted as entries come: children per parent key, the keys of the entries seen,
    # parent keys named before their entry came; `irregular` when that entry then came, or an id
    # repeats or is missing (getTree's answer may then differ: it is asked for instead)
    children: dict[Any, int] = field(default_factory=dict)
    seen: set[Any] = field(default_factory=set)
    forward: set[Any] = field(default_factory=set)
    branch_points: int = 0
    leaves: int = 0
    irregular: bool = False

    def add(self, entry: Any, message: Any) -> None:
        """Count an entry; ``message``: its message when it is an assistant message, else None."""
        etype = type_of(entry)
        type_name = etype if isinstance(etype, str) else "(other)"
        self.types[type_name] = self.types.get(type_name, 0) + 1
        timestamp = entry.timestamp if type(entry) is Entry else entry.get("timestamp", ABSENT)
        if isinstance(timestamp, str):
            if self.first_timestamp is ABSENT:
                self.first_timestamp = timestamp
            self.last_timestamp = timestamp
        self._add_to_tree(entry)
        if etype != "message":
            return
        role = role_of(entry)
        role_name = role if isinstance(role, str) else "(other)"
        self.roles[role_name] = self.roles.get(role_name, 0) + 1
        if isinstance(message, dict):
            self._add_usage(message)

    def _add_usage(self, message: dict[str, Any]) -> None:
        usage = message.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        for key in USAGE_KEYS:
            self.tokens[key] += _number(usage.get(key))
        cost_value = usage.get("cost")
        cost = _number(cost_value.get("total")) if isinstance(cost_value, dict) else 0
        self.cost += cost
        provider, model = message.get("provider"), message.get("model")
        name = "/".join(str(part) for part in (provider, model) if isinstance(part, str)) or "(unknown)"
        per_model = self.models.setdefault(name, {"turns": 0, "totalTokens": 0, "cost": 0})
        per_model["turns"] += 1
        per_model["totalTokens"] += _number(usage.get("totalTokens"))
        per_model["cost"] += cost

    def _add_to_tree(self, entry: Any) -> None:
        entry_id = id_of(entry)
        key = index_key(entry_id) if truthy(entry_id) else None
        if key is None or key in self.seen or key in self.forward:
            self.irregular = True
        else:
            self.seen.add(key)
            self.leaves += 1
        parent = parent_of(entry)
        if not truthy(parent):
            return
        parent_key = index_key(parent)
        if parent_key == key:
            self.irregular = True
            return
        count = self.children.get(parent_key, 0) + 1
        self.children[parent_key] = count
        if parent_key not in self.seen:
            self.forward.add(parent_key)  # an orphan, or a parent written later
        elif count == 1:
            self.leaves -= 1
        elif count == 2:
            self.branch_points += 1


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


def _is_assistant(entry: Any) -> bool:
    return bool(type_of(entry) == "message" and role_of(entry) == "assistant")


def _messages(path: Any, entries: list[Any]) -> Iterator[tuple[Any, Any]]:
    """(entry, its message for an assistant message else None), the messages read in one pass over
    the file in file order. A line that is not what its entry says (the file changed, an odd value)
    is read as the library reads it."""
    fd = -1
    if isinstance(path, str) and any(type(e) is Entry and e.offset >= 0 for e in entries):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    buffer, start = b"", 0
    try:
        for entry in entries:
            if not _is_assistant(entry):
                yield entry, None
                continue
            message: Any = ABSENT
            offset = entry.offset if type(entry) is Entry else -1
            if fd >= 0 and isinstance(offset, int) and offset >= 0:
                at = offset - start
                end = buffer.find(b"\n", at) if 0 <= at < len(buffer) else -1
                if end < 0:  # the line is not (all) in the buffer: read from it on
                    buffer, start = os.pread(fd, _CHUNK, offset), offset
                    while (end := buffer.find(b"\n")) < 0:
                        more = os.pread(fd, _CHUNK, offset + len(buffer))
                        if not more:
                            end = len(buffer)
                            break
                        buffer += more
                    at = 0
                message = _message_of(buffer[at:end], entry)
            yield entry, entry.get("message") if message is ABSENT else message
    finally:
        if fd >= 0:
            os.close(fd)


def _message_of(line: bytes, entry: Any) -> Any:
    """The fields the totals read of an assistant message's line, or ABSENT when the line does not
    decode to this entry (then the entry's own reading, with its checks, is used)."""
    try:
        decoded = _decode_line(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ABSENT
    message = decoded.message
    if decoded.type != "message" or message is None or message.role != "assistant":
        return ABSENT
    if type(decoded.id) is not str or decoded.id != id_of(entry):
        return ABSENT
    return {"provider": message.provider, "model": message.model, "usage": message.usage}


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
        totals = kept if grown and kept is not None else SessionTotals()
        # read every new message before counting any: a read that fails leaves the totals as they were
        session_file = manager.get_session_file()
        if isinstance(session_file, str):
            session_file = manager.environment.on_disk(session_file)
        new = list(_messages(session_file, manager.entries_slice(totals.count, count)))
        for entry, message in new:
            totals.add(entry, message)
        totals.count, totals.last = count, last
        with self._lock, contextlib.suppress(TypeError):
            self._kept[manager] = totals
        return totals


_stats = StatsCache()


def session_stats(manager: Any, cache: StatsCache = _stats) -> dict[str, Any]:
    """pi/getStats of a session."""
    totals = cache.totals(manager)
    if totals.irregular:
        branch_points, leaves = _tree_counts(manager.get_tree())
    else:
        branch_points, leaves = totals.branch_points, totals.leaves
    result: dict[str, Any] = {
        "entryCount": totals.count,
        "types": dict(totals.types),
        "roles": dict(totals.roles),
        "branchPoints": branch_points,
        "leaves": leaves,
        "tokens": dict(totals.tokens),
        "cost": totals.cost,
        "models": {name: dict(values) for name, values in totals.models.items()},
    }
    if totals.first_timestamp is not ABSENT:
        result["firstTimestamp"] = totals.first_timestamp
        result["lastTimestamp"] = totals.last_timestamp
    return result
