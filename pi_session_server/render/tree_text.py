"""Draw a session tree as indented text: branch points fan out, single-child chains stay flat.

Works on any node with a ``children`` list; ``row(node)`` gives a node's id and the text of its
line (a preview, its label), so that the CLI draws the library's own tree nodes without copying
them into another shape first.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from typing import Any, Protocol

from .glyphs import UNICODE, Glyphs, cut


class DrawnNode(Protocol):
    @property
    def children(self) -> Sequence[Any]: ...


# What pi's /tree says of a session without entries (a header alone), instead of a tree.
NO_ENTRIES = "No entries in session"
_NO_ROW = object()  # equal to no row's id: the path's ids were all met


def tree_text_lines(
    roots: Sequence[DrawnNode],
    row: Callable[..., tuple[Any, str]],
    leaf_id: Any = None,
    on_leaf_path: Iterable[Any] = (),
    *,
    path_in_walk_order: bool = False,
    glyphs: Glyphs = UNICODE,
    row_width: int | None = None,
) -> Iterator[str]:
    """Lines of the drawn tree, one at a time; ``*`` marks the path to the leaf (the rows whose id,
    as ``row`` gives it, is in ``on_leaf_path``), :func:`tree_leaf_mark` the leaf itself (the rows whose id
    equals ``leaf_id``). ``path_in_walk_order``: ``on_leaf_path`` is a sequence, the ids of rows
    the walk meets in that order, each once, and no other row has one of them (a path from a root
    down, in a tree whose ids are all distinct): each row's id is compared with the next of them,
    without a set of them all (a path can be hundreds of thousands of rows long). A generator: every branch point indents what follows it, so the text of a session
    with thousands of branch points on a path grows with the square of its depth (gigabytes for a
    deep one), more than a caller should hold at once. Iterative (trees can be hundreds of
    thousands of levels deep); a chain of single children keeps its prefix, so most rows cost a
    lookup and a concatenation. The branches are drawn with ``glyphs`` (render/glyphs.py).

    ``row_width``: each row fits that many columns (a terminal's width): ``row`` is called as
    ``row(node, room)``, to give a text within the ``room`` its row's indentation, mark and branch
    count leave, less :func:`tree_leaf_mark`'s columns for the leaf (``row`` tells the leaf by its id:
    each node is asked for once); a row whose indentation and marks alone are wider is cut whole."""
    if path_in_walk_order:
        ordered = on_leaf_path if isinstance(on_leaf_path, Sequence) else list(on_leaf_path)
        path: Container[Any] = ()
    else:  # (a set given is taken as it is)
        ordered = ()
        path = on_leaf_path if isinstance(on_leaf_path, (set, frozenset)) else set(on_leaf_path)
    leaf_mark = tree_leaf_mark(glyphs)
    met = 0  # how many of ``ordered`` the walk met
    following = ordered[0] if ordered else _NO_ROW
    # (node, prefix of its line and marker's place, prefix for its children)
    stack: list[tuple[Any, str, str]] = []
    push, pop = stack.append, stack.pop
    _fan_out(roots, "", push, glyphs, top=True)
    while stack:
        node, prefix, child_prefix = pop()
        on_path, off_path = prefix + "* ", prefix + "  "
        while True:  # down a chain of single children, which share their prefixes
            children = node.children
            count = len(children)
            branches = f"  ({count} branches)" if count > 1 else ""
            if row_width is None:
                node_id, text = row(node)
            else:
                node_id, text = row(node, row_width - len(on_path) - len(branches))
            if node_id == following:
                line = on_path + text
                met += 1
                following = ordered[met] if met < len(ordered) else _NO_ROW
            else:
                line = (on_path if node_id in path else off_path) + text
            line += branches + leaf_mark if node_id == leaf_id else branches
            yield line if row_width is None else _within(line, text, row_width, glyphs)
            if count != 1:
                break
            node = children[0]
            if prefix != child_prefix:
                prefix = child_prefix
                on_path, off_path = prefix + "* ", prefix + "  "
        if count:
            _fan_out(children, child_prefix, push, glyphs, top=False)


def tree_leaf_mark(glyphs: Glyphs) -> str:
    """What ends the leaf's row: its glyph (render/glyphs.py, as the demo marks it) after a gap."""
    return "  " + glyphs.leaf


def _within(line: str, text: str, row_width: int, glyphs: Glyphs) -> str:
    """``line``, a row fitted to ``row_width`` columns: its ``text`` is within the room the rest
    leaves, unless none is left (an indentation deeper than the width): the row is then cut whole
    (its text is empty: only glyphs and marks of a column each, no escape, are cut)."""
    return line if text or len(line) <= row_width else cut(line, row_width, glyphs.ellipsis)


def _fan_out(
    nodes: Sequence[Any],
    prefix: str,
    push: Callable[[tuple[Any, str, str]], None],
    glyphs: Glyphs,
    *,
    top: bool,
) -> None:
    """Push ``nodes`` (the last first: the stack pops them in order) with their branch prefixes. A
    lone root is drawn without any."""
    if not nodes:
        return
    if top and len(nodes) == 1:
        push((nodes[0], "", ""))
        return
    last = len(nodes) - 1
    push((nodes[last], prefix + glyphs.last, prefix + glyphs.gap))
    middle, under = prefix + glyphs.tee, prefix + glyphs.bar
    for i in range(last - 1, -1, -1):
        push((nodes[i], middle, under))
