"""``pi-session tree [FILE]``: the session tree drawn as text (labels, branch points, the leaf)."""

from __future__ import annotations

import argparse
import sys

from ..format.jsvalue import ABSENT, js_string_of
from ..render.tree_text import TextNode, render_tree
from ..session import SessionManager
from ..session.describe import describe_entry
from ..session.tree import TreeNode
from ._common import session_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--width", type=int, default=100, help="cut entry previews to about this many characters"
    )


def text_nodes(roots: list[TreeNode], width: int) -> list[TextNode]:
    """Convert the library's tree into text nodes (iteratively: trees can be 200,000 levels deep)."""
    tool_calls: dict[str, object] = {}
    out: list[TextNode] = []
    stack: list[tuple[TreeNode, list[TextNode]]] = [(r, out) for r in reversed(roots)]
    while stack:
        node, into = stack.pop()
        entry = node.entry
        if entry.role == "assistant":
            for block in entry.get("message", {}).get("content", []) or []:
                if (
                    isinstance(block, dict)
                    and block.get("type") == "toolCall"
                    and isinstance(block.get("id"), str)
                ):
                    tool_calls[block["id"]] = block
        label = js_string_of(node.label) if node.label is not ABSENT else None
        text_node = TextNode(js_string_of(entry.id), describe_entry(entry, tool_calls, width), label)  # type: ignore[arg-type]
        into.append(text_node)
        for child in reversed(node.children):
            stack.append((child, text_node.children))
    return out


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    manager = SessionManager.open(path)
    leaf = manager.get_leaf_id()
    on_path = [js_string_of(e.id) for e in manager.get_branch()]
    name = manager.get_session_name()
    header = manager.get_header() or {}
    title = f"{path}\nsession {header.get('id')}" + (f'  "{name}"' if name is not ABSENT else "")
    print(title)
    print(f"{len(manager.get_entries())} entries, leaf {js_string_of(leaf)}\n")
    for line in render_tree(text_nodes(manager.get_tree(), args.width), js_string_of(leaf), on_path):
        print(line)
    sys.stdout.flush()
    return 0
