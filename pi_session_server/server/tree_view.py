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

import json
import math
import os
from collections.abc import Callable, Iterable
from typing import Any

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of, truthy
from pi_session_server.server.wire import to_wire
from pi_session_server.session.fields import field, id_of, parent_of, role_of, timestamp_of, type_of

FILTERS = ("none", "default", "no-tools", "user-only", "labeled-only", "all")
_SETTINGS_TYPES = frozenset({"label", "custom", "model_change", "thinking_level_change", "session_info"})
_JS_TRIM = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
PREVIEW_LIMIT = 200


# --- text helpers (JS semantics) -----------------------------------------------------------


def js_trim(text: str) -> str:
    return text.strip(_JS_TRIM)


def utf16_slice(text: str, limit: int) -> str:
    """``text.slice(0, limit)`` counting UTF-16 code units, as JS does."""
    if len(text) <= limit // 2 or (len(text) <= limit and text.isascii()):
        return text[:limit]
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * limit:
        return text
    return units[: 2 * limit].decode("utf-16-le", "surrogatepass")


def _normalize(text: str) -> str:
    return js_trim(text.replace("\n", " ").replace("\t", " "))


def _js_str(value: Any) -> str:
    return (
        js_string_of(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None or value is ABSENT
        else "[object Object]"
    )


def extract_full_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type", ABSENT) == "text":
            parts.append(_js_str(block.get("text", ABSENT)))
    return "".join(parts)


def extract_content(content: Any) -> str:
    return utf16_slice(extract_full_content(content), PREVIEW_LIMIT)


def has_text_content(content: Any) -> bool:
    if isinstance(content, str):
        return js_trim(content) != ""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type", ABSENT) == "text":
                text = block.get("text", ABSENT)
                if truthy(text) and isinstance(text, str) and js_trim(text) != "":
                    return True
    return False


def _js_round(x: Any) -> str:
    if type(x) is bool:
        x = int(x)
    if x is None:
        x = 0
    if not isinstance(x, (int, float)) or math.isnan(x) or math.isinf(x):
        return (
            "NaN" if not (isinstance(x, float) and math.isinf(x)) else ("Infinity" if x > 0 else "-Infinity")
        )
    value = math.floor(x / 1000 + 0.5)
    return str(int(value))


def _stringify(value: Any) -> str:
    try:
        from pi_session_server.format.jsjson import dumps

        return dumps(value)
    except Exception:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _shorten_path(path: str) -> str:
    home = os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""
    if home and path.startswith(home):
        return "~" + path[len(home) :]
    return path


def _arg(args: dict[str, Any], *names: str, default: str = "") -> str:
    for name in names:
        value = args.get(name, ABSENT)
        if truthy(value):
            return _js_str(value)
    return default


def format_tool_call(name: Any, args: Any) -> str:
    """pi's one-line rendering of a tool call (``formatToolCall``)."""
    a = args if isinstance(args, dict) else {}
    if name == "read":
        display = _shorten_path(_arg(a, "path", "file_path"))
        offset, limit = a.get("offset", ABSENT), a.get("limit", ABSENT)
        if offset is not ABSENT or limit is not ABSENT:
            start = 1 if offset is ABSENT or offset is None else offset
            end: Any = ""
            if limit is not ABSENT and isinstance(start, (int, float)) and isinstance(limit, (int, float)):
                end = start + limit - 1
            display += f":{_js_str(start)}" + (f"-{_js_str(end)}" if end != "" and end != 0 else "")
        return f"[read: {display}]"
    if name in ("write", "edit"):
        return f"[{name}: {_shorten_path(_arg(a, 'path', 'file_path'))}]"
    if name == "bash":
        raw = _arg(a, "command")
        cmd = utf16_slice(js_trim(raw.replace("\n", " ").replace("\t", " ")), 50)
        return f"[bash: {cmd}{'...' if len(raw) > 50 else ''}]"
    if name == "grep":
        return f"[grep: /{_arg(a, 'pattern')}/ in {_shorten_path(_arg(a, 'path', default='.'))}]"
    if name == "find":
        return f"[find: {_arg(a, 'pattern')} in {_shorten_path(_arg(a, 'path', default='.'))}]"
    if name == "ls":
        return f"[ls: {_shorten_path(_arg(a, 'path', default='.'))}]"
    text = _stringify(args) if args is not ABSENT else ""
    return f"[{_js_str(name)}: {utf16_slice(text, 40)}{'...' if len(text) > 40 else ''}]"


ToolCalls = dict[Any, tuple[Any, Any]]


def collect_tool_calls(entries: Iterable[Any]) -> ToolCalls:
    """toolCallId -> (name, arguments) from every assistant message (the TUI's toolCallMap)."""
    calls: ToolCalls = {}
    for entry in entries:
        if type_of(entry) != "message" or role_of(entry) != "assistant":
            continue
        for key, call in tool_calls_of(entry):
            calls[key] = call
    return calls


def tool_calls_of(entry: Any) -> list[tuple[Any, tuple[Any, Any]]]:
    """(index key of the call id, (name, arguments)) of an assistant message's toolCall blocks."""
    message = field(entry, "message")
    content = message.get("content", ABSENT) if isinstance(message, dict) else ABSENT
    if not isinstance(content, list):
        return []
    return [
        (index_key(block.get("id", ABSENT)), (block.get("name", ABSENT), block.get("arguments", ABSENT)))
        for block in content
        if isinstance(block, dict) and block.get("type", ABSENT) == "toolCall"
    ]


class PreviewCache:
    """Per session: what the previews need from each entry, kept across ``pi/getTree`` calls.

    Entries never change once read or written (a reload makes new ones), so an entry's preview part
    and tool calls are computed once; items are keyed by the entry object (``id()``, checked with
    ``is``: the cache holds the entry, so the id cannot be reused). Each tree walk keeps only the
    entries it met, so entries the session dropped do not accumulate.
    """

    __slots__ = ("parts", "calls")

    def __init__(self) -> None:
        self.parts: dict[int, tuple[Any, str | _ToolResult]] = {}
        self.calls: dict[int, tuple[Any, list[tuple[Any, tuple[Any, Any]]]]] = {}

    def collect_tool_calls(self, entries: Iterable[Any]) -> ToolCalls:
        old = self.calls
        kept: dict[int, tuple[Any, list[tuple[Any, tuple[Any, Any]]]]] = {}
        calls: ToolCalls = {}
        for entry in entries:
            if type_of(entry) != "message" or role_of(entry) != "assistant":
                continue
            key = id(entry)
            found = old.get(key)
            if found is None or found[0] is not entry:
                found = (entry, tool_calls_of(entry))
            kept[key] = found
            for call_key, call in found[1]:
                calls[call_key] = call
        self.calls = kept
        return calls

    def previews(self) -> Callable[[Any, ToolCalls], str]:
        """A preview function for one walk; the walk's entries replace the cached set."""
        old = self.parts
        kept: dict[int, tuple[Any, str | _ToolResult]] = {}
        self.parts = kept

        def preview(entry: Any, tool_calls: ToolCalls) -> str:
            key = id(entry)
            found = old.get(key)
            if found is None or found[0] is not entry:
                found = (entry, preview_part(entry))
            kept[key] = found
            return finish_preview(found[1], tool_calls)

        return preview


def preview_of(entry: Any, tool_calls: ToolCalls) -> str:
    """The text pi's tree selector shows for an entry (``getEntryDisplayText`` without colours)."""
    return finish_preview(preview_part(entry), tool_calls)


class _ToolResult:
    """The part of a tool result's preview that needs the tool calls (and ``HOME``): done per call."""

    __slots__ = ("call_id", "name", "memo")

    def __init__(self, call_id: Any, name: Any) -> None:
        self.call_id = call_id
        self.name = name
        self.memo: tuple[Any, str, str] | None = None  # (call, HOME, text) of the last rendering


def finish_preview(part: str | _ToolResult, tool_calls: ToolCalls) -> str:
    if type(part) is str:
        return part
    assert isinstance(part, _ToolResult)
    call = tool_calls.get(index_key(part.call_id)) if truthy(part.call_id) else None
    if call is not None:
        # the call tuples of a cached session are the same objects from one walk to the next
        home = os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""
        memo = part.memo
        if memo is not None and memo[0] is call and memo[1] == home:
            return memo[2]
        text = format_tool_call(call[0], call[1])
        part.memo = (call, home, text)
        return text
    name = part.name
    return f"[{'tool' if name is ABSENT or name is None else _js_str(name)}]"


def preview_part(entry: Any) -> str | _ToolResult:
    """What of an entry's preview depends on the entry alone (entries never change: cacheable)."""
    etype = type_of(entry)
    value = entry.value if type(entry) is Entry else entry
    if not isinstance(value, dict):
        value = {}
    if etype == "message":
        message = value.get("message", ABSENT)
        msg = message if isinstance(message, dict) else {}
        role = msg.get("role", ABSENT)
        if role == "user":
            return "user: " + _normalize(extract_content(msg.get("content", ABSENT)))
        if role == "assistant":
            text = _normalize(extract_content(msg.get("content", ABSENT)))
            if text:
                return "assistant: " + text
            if msg.get("stopReason", ABSENT) == "aborted":
                return "assistant: (aborted)"
            error = msg.get("errorMessage", ABSENT)
            if truthy(error):
                return "assistant: " + utf16_slice(_normalize(_js_str(error)), 80)
            return "assistant: (no content)"
        if role == "toolResult":
            return _ToolResult(msg.get("toolCallId", ABSENT), msg.get("toolName", ABSENT))
        if role == "bashExecution":
            command = msg.get("command", ABSENT)
            return "[bash]: " + _normalize("" if command is ABSENT or command is None else _js_str(command))
        return f"[{_js_str(role)}]"
    if etype == "custom_message":
        content = value.get("content", ABSENT)
        text = content if isinstance(content, str) else extract_full_content(content)
        return f"[{_js_str(value.get('customType', ABSENT))}]: " + _normalize(text)
    if etype == "compaction":
        return f"[compaction: {_js_round(value.get('tokensBefore', ABSENT))}k tokens]"
    if etype == "branch_summary":
        return "[branch summary]: " + _normalize(_js_str(value.get("summary", ABSENT)))
    if etype == "model_change":
        return f"[model: {_js_str(value.get('modelId', ABSENT))}]"
    if etype == "thinking_level_change":
        return f"[thinking: {_js_str(value.get('thinkingLevel', ABSENT))}]"
    if etype == "custom":
        return f"[custom: {_js_str(value.get('customType', ABSENT))}]"
    if etype == "label":
        label = value.get("label", ABSENT)
        return f"[label: {'(cleared)' if label is ABSENT or label is None else _js_str(label)}]"
    if etype == "session_info":
        name = value.get("name", ABSENT)
        return f"[title: {_js_str(name)}]" if truthy(name) else "[title: empty]"
    return ""


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
