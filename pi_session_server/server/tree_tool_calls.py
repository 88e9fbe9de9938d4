"""The tool calls a tree view's previews name: how a view reads them (:class:`CallReading`), every
call of the tree (:func:`tree_tool_calls`), and the calls previews named from the whole session
(:class:`NamedCalls`), which an appended call may change.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any

from pi_session_server.session.entry_facts import collect_tool_calls
from pi_session_server.session.tool_call_text import ToolCalls
from pi_session_server.session.tree import TreeRoots

from .tree_window import walk_nodes


class CallReading(Enum):
    """How a view reads the tool calls its tool results' previews name (``preview_of``).

    * ``UP_FRONT``: every call of the session, read before the walk (pi's tree selector; what the
      pages of a whole tree need anyway).
    * ``AT_FIRST_RESULT``: every call of the session, read when the first tool result's preview
      is made: a window without one reads no assistant message, and one with one answers as the
      whole tree does.
    * ``NEAR_EACH_RESULT``: each tool result names the call of its id in the nearest assistant
      message above it (a few entries up: parallel calls' results chain under their message),
      else the session's (every call of the session, read then): a window reads the bodies of
      what it sends (a tree view's first window of a 2 GB session would otherwise read every
      assistant message). Which call a result names depends on the session alone, never on the
      windows asked for before. By design it differs from ``UP_FRONT`` for a call id that several
      assistant messages hold: the whole tree names the last one a walk meets for every result
      of that id, a window the one above each result (telling that the id is held elsewhere too
      is reading every assistant message).
    """

    UP_FRONT = "up front"
    AT_FIRST_RESULT = "at the first result"
    NEAR_EACH_RESULT = "near each result"


class NamedCalls:
    """The keys of the tool calls the previews a shape made named from every call of the session
    (``keys`` None: every call's), one object for the shape's life (what a client holds was cut
    from it: see ``tree_since``)."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: set[Any] | None = set()

    def add(self, key: Any) -> None:
        if self.keys is not None:
            self.keys.add(key)

    def update(self, other: NamedCalls) -> None:
        """Add what ``other`` holds (the rows of another shape a client holds too)."""
        if self.keys is not None and other is not self:
            self.keys = None if other.keys is None else self.keys | other.keys


def tree_tool_calls(roots: list[Any]) -> ToolCalls:
    """Every tool call of the tree, as a walk of it meets them (a later call with an id wins)."""
    return collect_tool_calls(walk_entries(roots))


def walk_entries(roots: list[Any]) -> Iterable[Any]:
    """Every node's entry, each node once (nodes can be shared with duplicate ids), in the order of
    a walk: from the tree's builder when it knows it (``TreeRoots.in_walk_order``)."""
    in_walk_order = roots.in_walk_order if isinstance(roots, TreeRoots) else None
    if in_walk_order is not None:
        return in_walk_order()
    return (node.entry for node in walk_nodes(roots))
