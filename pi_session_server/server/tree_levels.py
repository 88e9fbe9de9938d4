"""The levels of pi's ``/tree`` layout down to an entry (:func:`tree_levels`), as a tree view nests
them, and a levels reply (:func:`encoded_tree_levels`, :func:`levels_reply`): each level a page of
the flat form of its window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.server.params import id_key
from pi_session_server.server.raw_parts import RawParts
from pi_session_server.server.wire import encode_rows

from .tree_flat_form import FlatPage, encode_page_into
from .tree_rows import Row, envelope, node_id, row_nodes, wire_id
from .tree_window import TreeWindow, index_on_path, window_tops

if TYPE_CHECKING:
    from .tree_shape import TreeShape


@dataclass(frozen=True, slots=True)
class TreeLevel:
    """One list of pi's ``/tree`` layout on the way down to an entry, as a tree view nests them:

    * ``top``: the window ``{chain}``: the root's chain, or the roots when there are several (each
      the head of a branch);
    * ``branches``: ``{rootId: a branch point, depth: 1}``: the branch point's row, then its shown
      children, each the head of a branch;
    * ``chain``: ``{rootId, chain}``: a branch's continuation, the chain from its head's only child.

    ``rows`` are the window's; ``around_index`` is where the row on the path is (None: none is)."""

    kind: str
    window: TreeWindow
    rows: Sequence[Row]
    around_index: int | None


def first_level_holding(levels: list[TreeLevel], nodes: set[int]) -> int | None:
    """The index of the first of ``levels`` (those down to the leaf) a row of which is one of
    ``nodes`` (by ``id``), the last level's if none; None when one of them is in no level. A row
    is in one level but a branch point's, also the first row of the branches level below it."""
    found: set[int] = set()
    first = len(levels) - 1
    for at in range(len(levels) - 1, -1, -1):  # (the nodes that changed are most often in the last)
        if len(found) == len(nodes):
            break
        level = levels[at]
        for index, node in enumerate(row_nodes(level.rows)):
            if id(node) in nodes:
                found.add(id(node))
                first = min(first, at - 1 if index == 0 and level.kind == "branches" else at)
    return max(first, 0) if len(found) == len(nodes) else None


class EncodedLevel(NamedTuple):
    """A level of a levels reply as it was encoded (see :func:`encode_tree_levels`): the level's
    rows (its key holds their ``id``: kept alive here), those of its page (a slice of them) and
    its JSON."""

    rows: Sequence[Row]
    shown: slice
    encoded: bytes


def level_key(level: TreeLevel, size: int) -> tuple[Any, ...]:
    """What a level's encoding in pages of ``size`` rows depends on besides its rows' nodes."""
    window = level.window
    return (id(level.rows), level.kind, window.chain, window.depth, level.around_index, size)


def tree_levels(
    shape: TreeShape, around_id: Any, max_levels: int | None = None
) -> tuple[list[TreeLevel], bool]:
    """(the levels from the top down to the row of ``around_id``, or of its deepest shown ancestor,
    whether they reach it). Each level is what a tree view gets for the window of the list under
    the path's row one level up: a branch point's branches, a head's chain (a head: a row of a
    ``branches`` level, or of a ``top`` level of several roots). At most ``max_levels``.
    Raises :class:`RootNotFoundError` when no entry has that id."""
    key = (id_key(around_id), max_levels)
    kept = shape.kept_levels
    if kept is not None and kept[0] == key:
        return list(kept[1]), kept[2]
    levels, complete = _levels_from(shape, around_id, max_levels, shape.levels_before(key))
    shape.kept_levels = (key, levels, complete)
    return list(levels), complete


def levels_hung_under(levels: list[TreeLevel]) -> list[Any]:
    """The id of the row each of ``levels`` hangs under in a tree view (the row on the path one
    level up: a branch point, a head), None for the top list."""
    hung: list[Any] = [None]
    for level in levels[:-1]:
        at = level.around_index
        hung.append(None if at is None else node_id(level.rows[at].node))
    return hung


def _levels_from(
    shape: TreeShape,
    around_id: Any,
    max_levels: int | None,
    before: tuple[list[TreeLevel], TreeLevel] | None,
) -> tuple[list[TreeLevel], bool]:
    """:func:`tree_levels`, from the window of the last of ``before`` (levels known to be the
    first ones, then the one whose window to walk again) if given."""
    levels: list[TreeLevel] = []
    kind, window = "top", TreeWindow(chain=True, around_id=around_id, paged=True)
    if before is not None:
        levels, kind, window = list(before[0]), before[1].kind, before[1].window
    wanted = index_key(around_id)
    while True:
        if max_levels is not None and len(levels) >= max_levels:
            return levels, False
        rows = shape.chain_rows(window_tops(shape.roots, shape, window), window)
        index = index_on_path(shape, rows, around_id)
        levels.append(TreeLevel(kind, window, rows, index))
        if index is None or (kind == "branches" and index == 0):  # nothing of the path below
            return levels, True
        node = rows[index].node
        entry_id = envelope(node.entry)[0]
        if truthy(entry_id) and index_key(entry_id) == wanted:
            return levels, True
        head = kind == "branches" or (kind == "top" and len(rows) > 1 and rows[1].depth == 0)
        children = shape.shown_children(node)
        if len(children) > 1:
            kind = "branches"
            window = TreeWindow(root_id=node_id(node), depth=1, around_id=around_id, paged=True)
        elif head and len(children) == 1:
            kind = "chain"
            window = TreeWindow(root_id=node_id(children[0]), chain=True, around_id=around_id, paged=True)
        else:
            return levels, True


def encode_tree_levels(
    shape: TreeShape, levels: list[TreeLevel], complete: bool, limit: int, max_nodes: int
) -> bytes:
    """``{"leafId", "levels": [...], "complete"}``: each level the result of its window (as pi/getTree
    answers it with ``aroundId``) with its ``kind``, ``rootId``, ``chain`` or ``depth`` (see
    :func:`encoded_tree_levels`), in one piece."""
    return bytes(levels_reply(shape.leaf_id, encoded_tree_levels(shape, levels, limit, max_nodes), complete))


def encoded_tree_levels(shape: TreeShape, levels: list[TreeLevel], limit: int, max_nodes: int) -> list[bytes]:
    """The JSON of each level of a levels reply: the result of its window (as pi/getTree answers it
    with ``aroundId``) with its ``kind``, ``rootId``, ``chain`` or ``depth``. A level holds ``limit``
    rows around the path's row (a ``branches`` level one more: the branch point's own row), fewer
    when the levels are many: the reply holds at most about ``max_nodes`` nodes.

    A level encoded for the shape's last levels reply is not encoded again (see
    :meth:`TreeShape.encoded_level`): a tree view that follows a session pi writes to asks for
    the levels down to each new leaf, and most of them are those down to the leaf before. Such a
    level's JSON is the very object given before, which tells a client the level is as it has it
    (see ``tree_since``)."""
    branch_points = sum(1 for level in levels if level.kind == "branches")
    per_level = min(limit, max(1, (max_nodes - branch_points) // max(1, len(levels))))
    pages: list[tuple[TreeLevel, int, FlatPage | EncodedLevel]] = []
    for level in levels:
        size = per_level + (1 if level.kind == "branches" else 0)
        known = shape.encoded_level(level, size)
        if known is not None:
            pages.append((level, size, known))
            continue
        window = TreeWindow(
            root_id=level.window.root_id,
            depth=level.window.depth,
            limit=size,
            paged=True,
            chain=level.window.chain,
            around_id=level.window.around_id,
        )
        pages.append((level, size, FlatPage(shape, level.rows, window, None, level.around_index)))
    # the rows of every level together: how many previews the reply needs is known before any
    new_pages = [page for _level, _size, page in pages if isinstance(page, FlatPage)]
    shape.read_ahead([row for page in new_pages for row in page.shown_rows()])
    encoded: list[tuple[TreeLevel, int, EncodedLevel]] = []
    for level, size, page in pages:
        if isinstance(page, EncodedLevel):
            encoded.append((level, size, page))
            continue
        out = bytearray()
        _encode_level_into(level, page, out)
        encoded.append((level, size, EncodedLevel(level.rows, slice(page.start, page.end), bytes(out))))
    shape.keep_encoded_levels(encoded)
    return [known.encoded for _level, _size, known in encoded]


def levels_reply(leaf_id: Any, levels: Sequence[bytes], complete: bool, more: bytes = b"") -> RawParts:
    """``{"leafId", "levels": [...], "complete"}`` of the levels' JSON (see
    :func:`encoded_tree_levels`), then ``more`` (members of their own, each after a comma): the
    levels as they are among its parts, not joined (they are kept for the next reply too)."""
    parts: list[bytes] = [b'{"leafId":', encode_rows(wire_id(leaf_id)), b',"levels":[']
    for index, level in enumerate(levels):
        if index:
            parts.append(b",")
        parts.append(level)
    parts += (b'],"complete":', b"true" if complete else b"false", more, b"}")
    return RawParts(parts)


def _encode_level_into(level: TreeLevel, page: FlatPage, out: bytearray) -> None:
    """Append one level of a levels reply (its window's head, then its page) to ``out``."""
    window = page.window
    head: dict[str, Any] = {"kind": level.kind}
    if window.root_id is not ABSENT:
        head["rootId"] = wire_id(window.root_id)
    if window.chain:
        head["chain"] = True
    if window.depth is not None:
        head["depth"] = window.depth
    out += encode_rows(head)[:-1] + b","
    encode_page_into(page, out)
    out += b"}"
