"""The names of pi's ``/tree`` filter modes, and ``none`` (every entry): what ``pi-session tree
--filter``, ``demo --filter`` and ``pi/getTree``'s ``filter`` take. A module of its own, importing
nothing: a command's options are listed before the library is imported (the filters themselves
are session/tree_filter.py)."""

from __future__ import annotations

from typing import Final

#: pi's tree selector's modes, in the order its filter key cycles through them
PI_FILTERS: Final = ("default", "no-tools", "user-only", "labeled-only", "all")
#: ``none`` first: the whole tree, nothing hidden (what getTree() itself is)
FILTERS: Final = ("none", *PI_FILTERS)
