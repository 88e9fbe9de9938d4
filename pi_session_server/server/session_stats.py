"""pi/getStats: what a session viewer shows at the top, the totals of the whole session.

Entries by type and message role, branch points and leaves (from the tree), the assistant turns'
tokens and cost (their ``usage``) by model, and the first and last timestamps. The usage needs the
assistant messages' bodies, read from the file: the sums are kept per session and, when the file
only grew (pi appends), only the new entries are read.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT

from .tree_pages import session_state

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value if value == value and abs(value) != float("inf") else 0  # NaN and infinities: 0


@dataclass
class UsageTotals:
    """The sums over the entries read so far (``count`` of them, the last one ``last``)."""

    count: int = 0
    last: Any = None
    types: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    cost: float = 0
    models: dict[str, dict[str, float]] = field(default_factory=dict)
    first_timestamp: Any = ABSENT
    last_timestamp: Any = ABSENT

    def copy(self) -> UsageTotals:
        """The sums in new containers; ``last`` is the same entry (a copy of an entry would copy
        the file it reads from, and close it when dropped)."""
        return UsageTotals(
            self.count,
            self.last,
            dict(self.types),
            dict(self.roles),
            dict(self.tokens),
            self.cost,
            {name: dict(values) for name, values in self.models.items()},
            self.first_timestamp,
            self.last_timestamp,
        )

    def add(self, entry: Any) -> None:
        etype = entry.type if type(entry) is Entry else entry.get("type", ABSENT)
        type_name = etype if isinstance(etype, str) else "(other)"
        self.types[type_name] = self.types.get(type_name, 0) + 1
        timestamp = entry.timestamp if type(entry) is Entry else entry.get("timestamp", ABSENT)
        if isinstance(timestamp, str):
            if self.first_timestamp is ABSENT:
                self.first_timestamp = timestamp
            self.last_timestamp = timestamp
        if etype != "message":
            return
        role = entry.role if type(entry) is Entry else ABSENT
        role_name = role if isinstance(role, str) else "(other)"
        self.roles[role_name] = self.roles.get(role_name, 0) + 1
        if role != "assistant":
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            return
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


class StatsCache:
    """The usage sums of each session (manager), brought up to date by reading only appended entries."""

    def __init__(self) -> None:
        self._kept: weakref.WeakKeyDictionary[Any, UsageTotals] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def totals(self, manager: Any) -> UsageTotals:
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
            and kept.count < count
            and kept.count > 0
            and manager.entries_slice(kept.count - 1, kept.count)[0] is kept.last
        )
        # a copy: a read that fails half-way must not leave sums counted twice next time
        totals = kept.copy() if grown and kept is not None else UsageTotals()
        start = totals.count
        for entry in manager.entries_slice(start, count):
            totals.add(entry)
        totals.count, totals.last = count, last
        with self._lock, contextlib.suppress(TypeError):
            self._kept[manager] = totals
        return totals


_stats = StatsCache()


def session_stats(manager: Any, cache: StatsCache = _stats) -> dict[str, Any]:
    """pi/getStats of a session."""
    totals = cache.totals(manager)
    branch_points, leaves = _tree_counts(manager.get_tree())
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
