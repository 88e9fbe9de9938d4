"""``pi-session tree [FILE] [--pi VERSION]``: the session tree drawn as text (labels, branch points,
the leaf), the session read as pi release VERSION reads it."""

from __future__ import annotations

import argparse
import os
import sys

from ..format.jsvalue import ABSENT, js_string_of
from ..render.tree_text import TextNode, render_tree
from ..session import SessionManager
from ..session.describe import PreviewCache
from ..session.tree import TreeNode
from ._common import add_index_argument, add_pi_argument, open_to_look, report_skipped_lines, session_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--width", type=int, default=100, help="cut entry previews to about this many characters"
    )
    add_pi_argument(parser)
    add_index_argument(parser)


def text_nodes(manager: SessionManager, roots: list[TreeNode], width: int) -> list[TextNode]:
    """Convert the library's tree into text nodes (iteratively: trees can be 200,000 levels deep).
    The previews are read in one pass over the file."""
    entries = manager.get_entries()
    cache = PreviewCache()
    cache.prefetch(entries)  # every line read once, for the previews and the tool calls
    tool_calls = cache.collect_tool_calls(entries)
    preview_of = cache.previews()
    out: list[TextNode] = []
    stack: list[tuple[TreeNode, list[TextNode]]] = [(r, out) for r in reversed(roots)]
    while stack:
        node, into = stack.pop()
        # pi's selector shows nothing for a type it does not know (a newer pi's): name the type
        text = preview_of(node.entry, tool_calls) or f"[{js_string_of(node.entry.type)}]"
        if len(text) > width:
            text = text[: width - 1] + "…"
        label = js_string_of(node.label) if node.label is not ABSENT else None
        text_node = TextNode(js_string_of(node.entry.id), text, label)
        into.append(text_node)
        for child in reversed(node.children):
            stack.append((child, text_node.children))
    return out


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    manager = open_to_look(path, args.pi, index=args.index)
    if manager.get_entries() == [] and os.path.getsize(path) == 0:
        # the header shown would be one made up in memory (pi writes it when it opens the file)
        print(f"{path}\nempty file: no session in it yet")
        return 0
    report_skipped_lines("tree", path, manager)
    leaf = manager.get_leaf_id()
    on_path = [js_string_of(e.id) for e in manager.get_branch()]
    name = manager.get_session_name()
    header = manager.get_header() or {}
    title = f"{path}\nsession {header.get('id')}" + (f'  "{name}"' if name is not ABSENT else "")
    print(title)
    print(f"{len(manager.get_entries())} entries, leaf {js_string_of(leaf)}\n")
    lines = render_tree(text_nodes(manager, manager.get_tree(), args.width), js_string_of(leaf), on_path)
    sys.stdout.write("\n".join(lines) + "\n" if lines else "")
    sys.stdout.flush()
    return 0
