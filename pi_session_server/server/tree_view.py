"""The tree as front ends show it: pi's ``/tree`` filter modes, a flat form and a nested form.

Everything here is a pure function of ``getTree()``'s nodes and the leaf id (no pygls), and
iterative: a 200,000-entry linear session is a 200,000-level tree.

The filter modes follow pi's TUI tree selector (``modes/interactive/components/tree-selector.js``
of 0.86.1, ``applyFilter``): in every mode but ``none``, ``usage`` entries are hidden, and so are
assistant messages without text that did not end in an error or abort (unless they are the leaf).
Then ``default`` hides settings entries (label, custom, model_change, thinking_level_change,
session_info); ``no-tools`` also hides tool results; ``user-only`` keeps user messages only;
``labeled-only`` keeps labelled entries only; ``all`` keeps the rest. A hidden entry's visible
descendants attach to its nearest visible ancestor, as in the TUI. ``none`` (the default of
``pi/getTree``) is ``getTree()`` itself, nothing hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, truthy
from pi_session_server.server.wire import to_wire
from pi_session_server.session.describe import (
    PreviewCache,
    ToolCalls,
    _js_str,
    collect_tool_calls,
    extract_content,
    has_text_content,
    preview_of,
)
from pi_session_server.session.fields import field, id_of, parent_of, role_of, timestamp_of, type_of

FILTERS = ("none", "default", "no-tools", "user-only", "labeled-only", "all")
_SETTINGS_TYPES = frozenset({"label", "custom", "model_change", "thinking_level_change", "session_info"})


# --- text helpers (JS semantics) -----------------------------------------------------------


def searchable_text(node: Any) -> str:
    """What the TUI's search matches against (``getSearchableText``)."""
    entry = node.entry
    parts: list[str] = []
    if truthy(node.label):
        parts.append(_js_str(node.label))
    etype = type_of(entry)
    if etype == "message":
        message = field(entry, "message")
        msg = message if isinstance(message, dict) else {}
        parts.append(_js_str(msg.get("role", ABSENT)))
        content = msg.get("content", ABSENT)
        if truthy(content):
            parts.append(extract_content(content))
        if msg.get("role", ABSENT) == "bashExecution" and truthy(msg.get("command", ABSENT)):
            parts.append(_js_str(msg.get("command")))
    elif etype == "custom_message":
        parts.append(_js_str(field(entry, "customType")))
        content = field(entry, "content")
        parts.append(content if isinstance(content, str) else extract_content(content))
    elif etype == "compaction":
        parts.append("compaction")
    elif etype == "branch_summary":
        parts.extend(["branch summary", _js_str(field(entry, "summary"))])
    elif etype == "session_info":
        parts.append("title")
        if truthy(field(entry, "name")):
            parts.append(_js_str(field(entry, "name")))
    elif etype == "model_change":
        parts.extend(["model", _js_str(field(entry, "modelId"))])
    elif etype == "thinking_level_change":
        parts.extend(["thinking", _js_str(field(entry, "thinkingLevel"))])
    elif etype == "custom":
        parts.extend(["custom", _js_str(field(entry, "customType"))])
    elif etype == "label":
        label = field(entry, "label")
        parts.extend(["label", "" if label is ABSENT or label is None else _js_str(label)])
    return " ".join(parts)


# --- filtering -----------------------------------------------------------------------------


def _passes_prefilter(entry: Any, leaf_id: Any) -> bool:
    """Hidden in every TUI mode: usage entries; text-less assistant turns that did not fail."""
    etype = type_of(entry)
    if etype == "usage":
        return False
    if (
        etype == "message"
        and role_of(entry) == "assistant"
        and not (id_of(entry) == leaf_id and leaf_id is not ABSENT)
    ):
        message = field(entry, "message")
        msg = message if isinstance(message, dict) else {}
        stop = msg.get("stopReason", ABSENT)
        failed = truthy(stop) and stop != "stop" and stop != "toolUse"
        if not has_text_content(msg.get("content", ABSENT)) and not failed:
            return False
    return True


def node_filter(mode: str, leaf_id: Any, search: str | None = None) -> Callable[[Any], bool]:
    """The visibility predicate of one of pi's ``/tree`` filter modes over tree nodes."""
    tokens = [t for t in (search or "").lower().split() if t]

    def visible(node: Any) -> bool:
        entry = node.entry
        if mode != "none":
            if not _passes_prefilter(entry, leaf_id):
                return False
            etype = type_of(entry)
            if mode == "user-only":
                ok = etype == "message" and role_of(entry) == "user"
            elif mode == "no-tools":
                ok = etype not in _SETTINGS_TYPES and not (
                    etype == "message" and role_of(entry) == "toolResult"
                )
            elif mode == "labeled-only":
                ok = node.label is not ABSENT
            elif mode == "all":
                ok = True
            else:
                ok = etype not in _SETTINGS_TYPES
            if not ok:
                return False
        if tokens:
            text = searchable_text(node).lower()
            return all(t in text for t in tokens)
        return True

    return visible


# --- the flat and nested forms -------------------------------------------------------------


def active_path_ids(entries_by_id: dict[Any, Any], leaf_id: Any) -> set[Any]:
    """Index keys of the ids from the leaf up to its root (cycle-safe)."""
    ids: set[Any] = set()
    current = leaf_id
    get = entries_by_id.get
    while truthy(current):
        key = index_key(current)
        if key in ids:
            break
        ids.add(key)
        entry = get(key)
        if entry is None:
            break
        parent = parent_of(entry)
        current = None if parent is ABSENT else parent
    return ids


def _order_active_first(roots: list[Any], leaf_id: Any) -> Callable[[list[Any]], list[Any]]:
    """The TUI's ordering: at every level the child containing the leaf comes first."""
    contains: dict[int, bool] = {}
    order: list[Any] = []
    stack = list(roots)
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        has = leaf_id is not None and leaf_id is not ABSENT and id_of(node.entry) == leaf_id
        contains[id(node)] = has or any(contains.get(id(c), False) for c in node.children)

    def ordered(nodes: list[Any]) -> list[Any]:
        return [n for n in nodes if contains.get(id(n))] + [n for n in nodes if not contains.get(id(n))]

    return ordered


def _wire_id(value: Any) -> Any:
    return None if value is ABSENT else _safe(value)


def _safe(value: Any) -> Any:
    """A value from a file as JSON builtins (the result is sent without another scan)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    return to_wire(value)


def _envelope(entry: Any) -> tuple[Any, Any, Any, Any, Any, int]:
    """(id, parentId, type, role, timestamp, line) without decoding a lazy body."""
    if type(entry) is Entry:
        return entry.id, entry.parent_id, entry.type, entry.role, entry.timestamp, entry.line
    return id_of(entry), parent_of(entry), type_of(entry), role_of(entry), timestamp_of(entry), -1


def tree_view(
    roots: list[Any],
    leaf_id: Any,
    entries_by_id: dict[Any, Any],
    *,
    mode: str = "none",
    form: str = "flat",
    search: str | None = None,
    active_branch_first: bool = False,
    previews: bool = True,
    cache: PreviewCache | None = None,
) -> dict[str, Any]:
    """``{"leafId", "nodes"}``: flat (preorder list with ``childIds``) or nested (``children``).

    One iterative preorder walk; a node that is hidden passes its position on to its children,
    which then hang under the nearest shown ancestor.
    """
    visible = None if mode == "none" and not search else node_filter(mode, leaf_id, search)
    ordered = _order_active_first(roots, leaf_id) if active_branch_first else None
    tool_calls: ToolCalls | None = None
    preview: Callable[[Any, ToolCalls], str] = preview_of
    if previews:
        if cache is None:
            tool_calls = collect_tool_calls(_walk_entries(roots))
        else:
            tool_calls = cache.collect_tool_calls(_walk_entries(roots))
            preview = cache.previews()
    on_path = active_path_ids(entries_by_id, leaf_id)
    nested = form == "nested"
    has_leaf = leaf_id is not ABSENT and leaf_id is not None

    out: list[dict[str, Any]] = []
    kids: list[list[Any]] = []  # per shown node: child ids (flat) or child dicts (nested)
    depths: list[int] = []
    top = list(roots) if ordered is None else ordered(list(roots))
    stack: list[tuple[Any, int]] = [(root, -1) for root in reversed(top)]
    while stack:
        node, ancestor = stack.pop()
        below = ancestor
        if visible is None or visible(node):
            entry = node.entry
            entry_id, parent_id, etype, role, timestamp, line = _envelope(entry)
            item: dict[str, Any] = {"id": _wire_id(entry_id)}
            if parent_id is not ABSENT:
                item["parentId"] = _safe(parent_id)
            item["visibleParentId"] = None if ancestor < 0 else out[ancestor]["id"]
            children: list[Any] = []
            item["children" if nested else "childIds"] = children
            if etype is not ABSENT:
                item["type"] = _safe(etype)
            if role is not ABSENT:
                item["role"] = _safe(role)
            if node.label is not ABSENT:
                item["label"] = _safe(node.label)
            if node.label_timestamp is not ABSENT:
                item["labelTimestamp"] = _safe(node.label_timestamp)
            if tool_calls is not None:
                item["preview"] = preview(entry, tool_calls)
            if timestamp is not ABSENT:
                item["timestamp"] = _safe(timestamp)
            if line >= 0:
                item["line"] = line
            depth = 0 if ancestor < 0 else depths[ancestor] + 1
            item["depth"] = depth
            item["isLeaf"] = has_leaf and entry_id == leaf_id
            item["onLeafPath"] = truthy(entry_id) and index_key(entry_id) in on_path
            below = len(out)
            out.append(item)
            kids.append(children)
            depths.append(depth)
            if ancestor >= 0:
                kids[ancestor].append(item if nested else item["id"])
        children_of = node.children
        if children_of:
            if ordered is not None:
                children_of = ordered(children_of)
            for child in reversed(children_of):
                stack.append((child, below))
    for item, children in zip(out, kids, strict=True):
        item["isBranchPoint"] = len(children) > 1
    nodes = [item for item, depth in zip(out, depths, strict=True) if depth == 0] if nested else out
    return {"leafId": _wire_id(leaf_id), "nodes": nodes}


def _walk_entries(roots: list[Any]) -> Iterable[Any]:
    """Every node's entry, each node once (nodes can be shared with duplicate ids)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node.entry
        stack.extend(node.children)
