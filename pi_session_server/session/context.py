"""Context building (docs/API.md §7): the path to a leaf, compaction-aware entry selection, entries ->
messages.

These are the same in every pi release; :mod:`.projection` puts them together as the chosen release
does (``buildSessionContext``, pi 1.6.0's ``buildSessionProjection``).

Bodies are decoded only for the entries whose messages are returned (plus the latest compaction);
the model and thinking level come from envelopes and small held entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice, repeat
from operator import attrgetter, indexOf
from typing import Any, NamedTuple

from ..errors import cannot_read_property
from ..format.dates import ms
from ..format.entry import Entry
from ..format.jsjson import js_key_order
from ..format.jsvalue import ABSENT, get, index_key, is_object, js_string_of, strict_equal, truthy
from .chains import path_by_chains
from .fields import build_index, field, id_of, model_ref_of, parent_of, role_of, type_of, value_of
from .index_rows import RowPath


def build_session_path(
    entries: list[Any],
    leaf_id: Any = ABSENT,
    by_id: dict[Any, Any] | None = None,
    *,
    plain_index: bool | None = None,
    chain_starts: list[int] | None = None,
) -> list[Any]:
    """The path from the root to the leaf (docs/API.md §7.1), with D1: a parent cycle ends the walk.

    ``plain_index``: what :func:`is_plain_index` says of ``by_id``, when the caller knows it;
    ``chain_starts``: where chains start in ``entries`` (see :mod:`.chains`), when known.
    """
    index = by_id if by_id is not None else build_index(entries)
    if leaf_id is None:
        return []
    leaf: Any = ABSENT
    if truthy(leaf_id):
        leaf = index.get(index_key(leaf_id), ABSENT)
    if leaf is ABSENT:
        if not entries:
            return []
        leaf = entries[-1]
    return walk_to_root(leaf, index, plain_index=plain_index, chains=(entries, chain_starts))


def is_plain_index(index: dict[Any, Any]) -> bool:
    """Is every key a non-empty string? (pi's own files: ids are 8 hex digits.)

    Then looking a parentId up as it is gives the reference's answer for any parentId: an empty,
    null or non-string one finds nothing, as ``parentId ? byId.get(parentId) : undefined`` does
    when no id is empty or non-string.
    """
    return "" not in index and set(map(type, index)) <= {str}


def walk_to_root(
    start: Any,
    index: dict[Any, Any],
    *,
    plain_index: bool | None = None,
    chains: tuple[list[Any], list[int] | None] | None = None,
) -> list[Any]:
    """Collect ``start`` and its ancestors, root-most first; stop before revisiting an entry (D1).

    Without a cycle the walk meets each indexed entry at most once, so it takes at most
    ``len(index)`` steps; only a walk that takes more (it is in a cycle) pays for remembering what
    it visited. Over a plain index of :class:`Entry` objects (the manager's), each step is one
    lookup: the path of a long chat is tens of thousands of steps. With ``chains`` (the entries
    ``index`` holds and where chains start in them) it goes a chain at a time.
    """
    if type(start) is Entry and (plain_index if plain_index is not None else is_plain_index(index)):
        found = _walk_entries(start, index, chains)
        if found is not None:
            return found
    path = [start]
    append = path.append
    current = start
    lookup = index.get
    for _ in range(len(index)):
        parent_id = current.parent_id if type(current) is Entry else parent_of(current)
        if type(parent_id) is str:
            if not parent_id:
                break
            parent = lookup(parent_id, ABSENT)
        else:
            if not truthy(parent_id):
                break
            parent = lookup(index_key(parent_id), ABSENT)
        if parent is ABSENT:
            break
        append(parent)
        current = parent
    else:
        if len(path) > len(index):  # more steps than entries: a cycle
            return _walk_to_root_remembering(start, index)
    path.reverse()
    return path


def _walk_entries(
    start: Entry, index: dict[Any, Any], chains: tuple[list[Any], list[int] | None] | None
) -> list[Any] | None:
    """walk_to_root over a plain index: a chain at a time when ``chains`` knows where they start,
    else one lookup a step; None when neither can answer (the general walk then decides)."""
    path = None
    if chains is not None and chains[1] is not None:
        path = path_by_chains(start, chains[0], chains[1], index)
    if path is None:
        path = _walk_plain(start, index)
    return path


def _walk_plain(start: Entry, index: dict[Any, Any]) -> list[Any] | None:
    """walk_to_root over a plain index; None when a value is not an Entry or a parentId cannot be
    looked up (unhashable): the general walk then decides."""
    path = [start]
    append = path.append
    lookup = index.get
    current: Any = start
    try:
        for _ in repeat(None, len(index)):
            current = lookup(current.parent_id)
            if current is None:
                break
            append(current)
        else:
            if len(path) > len(index):  # more steps than entries: a cycle
                return _walk_to_root_remembering(start, index)
    except (AttributeError, TypeError):
        return None
    path.reverse()
    return path


def _walk_to_root_remembering(start: Any, index: dict[Any, Any]) -> list[Any]:
    path = [start]
    collected = {id(start)}
    current = start
    lookup = index.get
    while True:
        parent_id = current.parent_id if type(current) is Entry else parent_of(current)
        if not truthy(parent_id):
            break
        parent = lookup(parent_id if type(parent_id) is str else index_key(parent_id), ABSENT)
        if parent is ABSENT or id(parent) in collected:
            break
        path.append(parent)
        collected.add(id(parent))
        current = parent
    path.reverse()
    return path


def context_settings(path: Sequence[Any]) -> tuple[Any, Any]:  # noqa: C901 - one backward pass, Entry fast path inline
    """(thinkingLevel, model) over the whole path (docs/API.md §7.4): the last setting of each wins, so the
    path is read from its end and the walk stops once both are known (a long chat has an assistant
    message near its end). Of a path of the index's rows only the entries that may set either are
    looked at (found in its code columns)."""
    unknown = _UNKNOWN
    thinking_level: Any = unknown
    model: Any = unknown
    indexes: Iterable[int] = range(len(path) - 1, -1, -1)
    if type(path) is RowPath:
        indexes = path.backward(len(path), _SETTING_TYPES, assistant=True)
    for i in indexes:
        e = path[i]
        if type(e) is Entry:
            etype = e.type
            if etype == "message":
                head = e.message
                if model is unknown and head is not None and head.role == "assistant":
                    ref = e.model_ref
                    if ref is not None:
                        model = _object(provider=ref[0], modelId=ref[1])
                        if thinking_level is unknown:  # the usual case: one setting early in a long chat
                            thinking_level = _last_thinking_level(path, i)
                        break
                continue
        else:
            etype = type_of(e)
            if etype == "message":
                ref = model_ref_of(e)
                if model is unknown and ref is not None:
                    model = _object(provider=ref[0], modelId=ref[1])
                continue
        if etype == "thinking_level_change":
            if thinking_level is unknown:
                thinking_level = field(e, "thinkingLevel")
        elif etype == "model_change":
            if model is unknown:
                model = _object(provider=field(e, "provider"), modelId=field(e, "modelId"))
        else:
            continue
        if model is not unknown and thinking_level is not unknown:
            break
    return ("off" if thinking_level is unknown else thinking_level), (None if model is unknown else model)


_UNKNOWN = object()  # not yet seen while reading a path backwards
_TYPE = attrgetter("type")
_SETTING_TYPES = frozenset({"thinking_level_change", "model_change"})


def _last_thinking_level(path: Sequence[Any], stop: int) -> Any:
    """``thinkingLevel`` of the last thinking_level_change in ``path[:stop]``, or ``_UNKNOWN``.

    Searched in C (a long chat has one such entry near its start and tens of thousands of
    messages after it); a path that is not all :class:`Entry` objects takes the plain loop."""
    if type(path) is RowPath:
        at = next(path.backward(stop, frozenset({"thinking_level_change"})), -1)
        return _UNKNOWN if at < 0 else field(path[at], "thinkingLevel")
    before = islice(reversed(path), len(path) - stop, None)  # path[stop - 1], path[stop - 2], ...
    try:
        back = indexOf(map(_TYPE, before), "thinking_level_change")
    except ValueError:
        return _UNKNOWN
    except AttributeError:
        for e in islice(reversed(path), len(path) - stop, None):
            if type_of(e) == "thinking_level_change":
                return field(e, "thinkingLevel")
        return _UNKNOWN
    return field(path[stop - 1 - back], "thinkingLevel")


def _first_index_with_id(path: Sequence[Any], wanted: Any, stop: int) -> int:
    """Index of the first element of ``path[:stop]`` whose id is strictly equal to ``wanted``, or -1."""
    if type(wanted) is str:  # str == anything-else is False, so == is strict here
        for i in range(stop):
            e = path[i]
            if (e.id if type(e) is Entry else id_of(e)) == wanted:
                return i
        return -1
    for i in range(stop):
        if strict_equal(id_of(path[i]), wanted):
            return i
    return -1


def select_context_entries(path: Sequence[Any]) -> list[Any]:
    """``buildContextEntries`` (docs/API.md §7.2) on a path computed by :func:`build_session_path`.

    Every element of such a path except the last (the start) was fetched from the id index, so their
    ids are pairwise distinct: the first element carrying the compaction's id is the compaction
    itself unless it is the start, and at most one element before it carries firstKeptEntryId. That
    lets both searches run from the compaction backwards instead of over the whole path.
    """
    if type(path) is RowPath:
        return _select_row_entries(path)
    compaction: Any = None
    position = -1
    for i in range(len(path) - 1, -1, -1):
        e = path[i]
        if (e.type if type(e) is Entry else type_of(e)) == "compaction":
            compaction, position = e, i
            break
    if compaction is None:
        return path if isinstance(path, list) else list(path)
    compaction_index = position
    if position == len(path) - 1:  # the start may share its id with an earlier element
        compaction_index = _first_index_with_id(path, id_of(compaction), len(path))
    first_kept = field(compaction, "firstKeptEntryId")
    first = -1
    for i in range(compaction_index - 1, -1, -1):
        if strict_equal(id_of(path[i]), first_kept):
            first = i
            break
    return _selected(path, compaction, compaction_index, first)


class ContextSelection(NamedTuple):
    """A path to a leaf (:func:`build_session_path`) and its context entries
    (:func:`select_context_entries`): what a context is built from, walked and selected once for a
    caller that also measures it."""

    path: Sequence[Any]
    entries: list[Any]


def select_context(path: Sequence[Any]) -> ContextSelection:
    """``path`` with its context entries."""
    return ContextSelection(path, select_context_entries(path))


def _select_row_entries(path: RowPath) -> list[Any]:
    """select_context_entries of a path of the index's rows: the compaction found in the type
    column, the kept entry by the ids column (every id on it is a distinct string)."""
    compaction_index = next(path.backward(len(path), frozenset({"compaction"})), -1)
    if compaction_index < 0:
        return list(path)
    compaction = path[compaction_index]
    first_kept = field(compaction, "firstKeptEntryId")
    first = -1
    if type(first_kept) is str:  # (no id is anything else)
        for i in range(compaction_index - 1, -1, -1):
            if path.id_at(i) == first_kept:
                first = i
                break
    return _selected(path, compaction, compaction_index, first)


def _selected(path: Sequence[Any], compaction: Any, compaction_index: int, first: int) -> list[Any]:
    """The compaction, the entries kept from ``first`` on (system messages left out), and the
    entries after it."""
    result = [compaction]
    if first >= 0:
        for e in path[first:compaction_index]:
            if not (type_of(e) == "message" and role_of(e) == "system"):
                result.append(e)
    result.extend(path[compaction_index + 1 :])
    return result


def build_context_entries(
    entries: list[Any], leaf_id: Any = ABSENT, by_id: dict[Any, Any] | None = None
) -> list[Any]:
    """The exported ``buildContextEntries``."""
    return select_context_entries(build_session_path(entries, leaf_id, by_id))


def session_entry_to_context_messages(entry: Any) -> list[Any]:
    """Entry to messages, docs/API.md §7.3 (with D6: a null/missing message produces nothing)."""
    etype = type_of(entry)
    if etype == "message":
        return _message_of_entry(entry)
    if etype == "custom_message":
        value = value_of(entry)
        content = get(value, "content")
        return [
            _object(
                role="custom",
                customType=get(value, "customType"),
                content=[] if content is None or content is ABSENT else content,
                display=get(value, "display"),
                details=get(value, "details"),
                timestamp=ms(get(value, "timestamp")),
            )
        ]
    if etype == "branch_summary":
        value = value_of(entry)
        summary = get(value, "summary")
        if not truthy(summary):
            return []
        return [
            _object(
                role="branchSummary",
                summary=summary,
                fromId=get(value, "fromId"),
                timestamp=ms(get(value, "timestamp")),
            )
        ]
    if etype == "compaction":
        value = value_of(entry)
        summary = _object(
            role="compactionSummary",
            summary=get(value, "summary"),
            tokensBefore=get(value, "tokensBefore"),
            timestamp=ms(get(value, "timestamp")),
        )
        system_message = get(value, "systemMessage")
        return [system_message, summary] if truthy(system_message) else [summary]
    return []


def _message_of_entry(entry: Any) -> list[Any]:
    """The message of a message entry (none when it is null or missing; content an empty one)."""
    message = field(entry, "message")
    if message is None or message is ABSENT:
        return []
    if isinstance(message, dict):
        role = message.get("role", ABSENT)
        content = message.get("content", ABSENT)
        if content is None or content is ABSENT:
            if role == "system":
                return [{**message, "content": ""}]
            if role in ("user", "assistant", "toolResult"):
                return [{**message, "content": []}]
    return [message]


def get_latest_compaction_entry(entries: list[Any]) -> Any:
    for e in reversed(entries):
        if e is None or e is ABSENT:  # (pi reads the type of each, from the last)
            raise cannot_read_property(e, "type")
        if type_of(e) == "compaction":
            return e
    return None


def current_system_message(messages: list[Any]) -> dict[str, Any] | None:
    """pi-ai's ``getCurrentSystemMessage`` with D6 tolerance (docs/API.md §7.7)."""
    systems = [m for m in messages if get(m, "role") == "system"]
    content, sections, timestamp = _system_texts(systems)
    tools = _system_tools(systems)
    if timestamp is ABSENT and not tools:
        return None
    result: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        result["sections"] = sections
    if tools:
        result["toolsAdded"] = list(tools.values())
    result["timestamp"] = 0 if timestamp is ABSENT or timestamp is None else timestamp
    return result


def _system_texts(systems: list[Any]) -> tuple[list[str], dict[str, Any], Any]:
    """The texts of the system messages, their sections (a later one wins, null removes), and the
    first timestamp that is not null."""
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = ABSENT
    for message in systems:
        if timestamp is ABSENT or timestamp is None:
            timestamp = get(message, "timestamp")
        text = _system_content_text(get(message, "content"))
        if text:
            content.append(text)
        raw_sections = get(message, "sections")
        if is_object(raw_sections):
            for name, section_value in js_key_order(raw_sections.items()):
                if section_value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = section_value
    return content, sections, timestamp


def _system_tools(systems: list[Any]) -> dict[Any, Any]:
    """The tools the system messages leave added, by name."""
    tools: dict[Any, Any] = {}
    for message in systems:
        removed = get(message, "toolsRemoved")
        for tool in removed if isinstance(removed, list) else []:
            if is_object(tool):
                tools.pop(index_key(get(tool, "name")), None)
        added = get(message, "toolsAdded")
        for tool in added if isinstance(added, list) else []:
            if is_object(tool):
                tools[index_key(get(tool, "name"))] = tool
    return tools


def _system_content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if is_object(block) and get(block, "type") == "text":
            text = get(block, "text")
            parts.append("" if text is ABSENT or text is None else js_string_of(text))
    return "\n".join(parts)


def _object(**members: Any) -> dict[str, Any]:
    """A JS object literal: members whose value is ABSENT (undefined) are left out."""
    return {k: v for k, v in members.items() if v is not ABSENT}
