"""Draw a session tree as indented text: branch points fan out, single-child chains stay flat.

Works on a neutral node shape so that the CLI (library objects) and the demo (wire results) share
it: ``TextNode(id, text, label, children)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TextNode:
    id: str
    text: str
    label: str | None = None
    children: list[TextNode] = field(default_factory=list)


def render_tree(roots: list[TextNode], leaf_id: Any = None, on_leaf_path: Iterable[str] = ()) -> list[str]:
    """Lines of the drawn tree; ``*`` marks the path to the leaf, ``<- leaf`` the leaf itself."""
    path = set(on_leaf_path)
    lines: list[str] = []
    # (node, prefix for this line, prefix for its children, is branch child)
    stack: list[tuple[TextNode, str, str]] = []
    for i in range(len(roots) - 1, -1, -1):
        last = i == len(roots) - 1
        if len(roots) > 1:
            stack.append((roots[i], "└─ " if last else "├─ ", "   " if last else "│  "))
        else:
            stack.append((roots[i], "", ""))
    while stack:
        node, prefix, child_prefix = stack.pop()
        marker = "*" if node.id in path else " "
        parts = [f"{prefix}{marker} {node.text}"]
        if node.label:
            parts.append(f"  [{node.label}]")
        if len(node.children) > 1:
            parts.append(f"  ({len(node.children)} branches)")
        if node.id == leaf_id:
            parts.append("  <- leaf")
        lines.append("".join(parts))
        children = node.children
        if len(children) == 1:
            stack.append((children[0], child_prefix, child_prefix))
            continue
        for i in range(len(children) - 1, -1, -1):
            last = i == len(children) - 1
            stack.append(
                (
                    children[i],
                    child_prefix + ("└─ " if last else "├─ "),
                    child_prefix + ("   " if last else "│  "),
                )
            )
    return lines


def build_text_nodes(
    items: Iterable[Any],
    key: Callable[[Any], str],
    parent_key: Callable[[Any], str | None],
    text: Callable[[Any], str],
    label: Callable[[Any], str | None],
) -> list[TextNode]:
    """Text nodes from a flat preorder list of items (each with an id and its parent's id)."""
    nodes: dict[str, TextNode] = {}
    roots: list[TextNode] = []
    for item in items:
        node = TextNode(key(item), text(item), label(item))
        parent = parent_key(item)
        if parent is not None and parent in nodes:
            nodes[parent].children.append(node)
        else:
            roots.append(node)
        nodes.setdefault(node.id, node)
    return roots
