"""The context as the chosen pi release builds it: per context entry, the messages it contributes.

pi 1.6.0 calls this the session projection (``buildSessionProjection``, docs/API.md §7.6): the
compaction-aware context entries of :mod:`.context`, each projected into its messages,
with the latest valid ``context_edit`` of each target applied (``null`` omits the target's messages,
otherwise only their ``content`` is replaced) and an older compaction inside the newest one's kept
range contributing nothing. What differs between releases comes from the :class:`~.profiles.Profile`:
under pi 0.86.1 the same functions give 0.86.1's context (no edits, every compaction speaks).

D10: a ``context_edit`` whose ``replacement`` is not ``null`` or an object with string/array
``content`` (what ``appendContextEdit`` accepts) is not an edit; pi 1.6.0 applies such lines anyway
and then throws or strips the content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

from ..format.entry import Entry
from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, get, index_key, truthy
from .context import (
    ContextSelection,
    build_session_path,
    context_settings,
    select_context,
    session_entry_to_context_messages,
)
from .fields import field, id_of, type_of
from .profiles import DEFAULT_PI, PiVersion, Profile, profile_for

#: Message roles whose content an edit replaces (other messages of an edited entry stay as they are).
EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
#: Roles whose content is a block list: a string replacement becomes one text block.
BLOCK_CONTENT_ROLES = frozenset({"assistant", "toolResult"})
#: The roles of the ``message`` entries ``appendContextEdit`` accepts as targets.
EDIT_TARGET_ROLES = frozenset({"user", "assistant", "toolResult"})


def edit_target_role(entry_type: Any, message_role: Any) -> str | None:
    """The role of the content an edit of an entry of ``entry_type`` (a ``message`` entry: of
    ``message_role``) replaces, where ``appendContextEdit`` accepts the entry as a target:
    ``custom`` for a ``custom_message``, the role of a user, assistant or toolResult message. None
    for any other entry, which it refuses."""
    if entry_type == "custom_message":
        return "custom"
    if entry_type == "message" and type(message_role) is str and message_role in EDIT_TARGET_ROLES:
        return message_role
    return None


def is_edit_replacement(replacement: Any) -> bool:
    """``null``, or an object with a ``content`` member that is a string or an array: what
    ``appendContextEdit`` accepts and what the projection takes as an edit (D10)."""
    return replacement is None or (
        isinstance(replacement, Mapping) and isinstance(replacement.get("content", ABSENT), (str, list))
    )


def text_blocks(content: Any, role: Any) -> Any:
    """``content`` as a message of ``role`` holds it: a string becomes one text block for the roles
    whose content is a block list (assistant, toolResult); anything else is returned as is."""
    if type(role) is str and role in BLOCK_CONTENT_ROLES and isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content


def project_context_entry(entry: Any, edit: Any) -> list[Any]:
    """The exported ``projectContextEntry(entry, edit)``: the entry's context messages with ``edit``
    (a ``context_edit`` entry, or anything falsy for none) applied; with D10, an ``edit`` whose
    ``replacement`` is not valid counts as no edit."""
    messages = session_entry_to_context_messages(entry)
    if not truthy(edit):
        return messages
    replacement = field(edit, "replacement")
    if not is_edit_replacement(replacement):
        return messages
    if replacement is None:
        return []
    content = replacement["content"]
    projected = []
    for message in messages:
        role = get(message, "role")
        if type(role) is str and role in EDITABLE_ROLES:
            copy = dict(message)  # keeps the key order; a missing content key is appended last
            copy["content"] = text_blocks(content, role)
            projected.append(copy)
        else:
            projected.append(message)
    return projected


_TYPE = attrgetter("type")


def _has_type(entries: list[Any], wanted: str) -> bool:
    """Is some element of ``entries`` of type ``wanted``? (Searched in C over Entry objects: a long
    chat has tens of thousands of entries and usually no edit.)"""
    try:
        return wanted in map(_TYPE, entries)
    except AttributeError:  # plain values handed to the free functions
        return any(type_of(e) == wanted for e in entries)


def collect_edits(context_entries: list[Any]) -> dict[Any, Any]:
    """The latest valid ``context_edit`` among ``context_entries`` per target (keyed like a JS Map)."""
    edits: dict[Any, Any] = {}
    if not _has_type(context_entries, "context_edit"):
        return edits
    for e in context_entries:
        if (e.type if type(e) is Entry else type_of(e)) == "context_edit" and is_edit_replacement(
            field(e, "replacement")
        ):
            edits[index_key(field(e, "targetId"))] = e
    return edits


def messages_per_entry(context_entries: list[Any], profile: Profile) -> Iterable[list[Any]]:
    """The messages each of ``context_entries`` (from :func:`.context.select_context_entries`)
    contributes under ``profile``, in order (an iterator: a context keeps no list per entry)."""
    edits = collect_edits(context_entries) if profile.context_edits else {}
    # The list starts with the newest compaction when the path has one (and then only): any other
    # compaction in it lies inside that compaction's kept range.
    silent = (
        not profile.kept_compactions_speak
        and bool(context_entries)
        and type_of(context_entries[0]) == "compaction"
        and _has_type(context_entries[1:], "compaction")
    )
    if not edits and not silent:
        return map(session_entry_to_context_messages, context_entries)
    return _projected_messages(context_entries, edits, silent)


def _projected_messages(
    context_entries: list[Any], edits: dict[Any, Any], silent: bool
) -> Iterable[list[Any]]:
    for i, e in enumerate(context_entries):
        if silent and i and type_of(e) == "compaction":
            yield []
        elif edits:
            yield project_context_entry(e, edits.get(index_key(id_of(e))))
        else:
            yield session_entry_to_context_messages(e)


def build_session_projection(
    entries: list[Any],
    leaf_id: Any = ABSENT,
    by_id: dict[Any, Any] | None = None,
    *,
    pi: PiVersion = DEFAULT_PI,
    plain_index: bool | None = None,
    chain_starts: list[int] | None = None,
) -> dict[str, Any]:
    """The exported ``buildSessionProjection(entries, leafId?, byId?)``: ``{entries: [{sourceEntry,
    messages}], messages, thinkingLevel, model}`` (``plain_index``/``chain_starts``: see
    :func:`.context.build_session_path`)."""
    path = build_session_path(entries, leaf_id, by_id, plain_index=plain_index, chain_starts=chain_starts)
    return session_projection_of_path(path, pi=pi)


def session_projection_of_path(path: Sequence[Any], *, pi: PiVersion = DEFAULT_PI) -> dict[str, Any]:
    """:func:`build_session_projection` of the path it walks (a list, or the index's rows:
    :class:`.index_rows.RowPath`)."""
    return session_projection_of(select_context(path), pi=pi)


def session_projection_of(selection: ContextSelection, *, pi: PiVersion = DEFAULT_PI) -> dict[str, Any]:
    """:func:`session_projection_of_path` of a path whose context entries are selected already."""
    context_entries, thinking_level, model = _context_entries(selection)
    with gc_paused():  # an object and a list per entry, none of them in a cycle
        projected = [
            {"sourceEntry": e, "messages": contributed}
            for e, contributed in zip(
                context_entries, messages_per_entry(context_entries, profile_for(pi)), strict=True
            )
        ]
        messages = [m for p in projected for m in p["messages"]]
    return _object(entries=projected, messages=messages, thinkingLevel=thinking_level, model=model)


def build_session_context(
    entries: list[Any],
    leaf_id: Any = ABSENT,
    by_id: dict[Any, Any] | None = None,
    *,
    pi: PiVersion = DEFAULT_PI,
    plain_index: bool | None = None,
    chain_starts: list[int] | None = None,
) -> dict[str, Any]:
    """The exported ``buildSessionContext(entries, leafId?, byId?)``: ``{messages, thinkingLevel,
    model}`` of the projection."""
    path = build_session_path(entries, leaf_id, by_id, plain_index=plain_index, chain_starts=chain_starts)
    return session_context_of_path(path, pi=pi)


def session_context_of_path(path: Sequence[Any], *, pi: PiVersion = DEFAULT_PI) -> dict[str, Any]:
    """:func:`build_session_context` of the path it walks (see :func:`session_projection_of_path`)."""
    return session_context_of(select_context(path), pi=pi)


def session_context_of(selection: ContextSelection, *, pi: PiVersion = DEFAULT_PI) -> dict[str, Any]:
    """:func:`session_context_of_path` of a path whose context entries are selected already."""
    context_entries, thinking_level, model = _context_entries(selection)
    messages = list(chain.from_iterable(messages_per_entry(context_entries, profile_for(pi))))
    return _object(messages=messages, thinkingLevel=thinking_level, model=model)


def _context_entries(selection: ContextSelection) -> tuple[list[Any], Any, Any]:
    """(compaction-aware context entries, thinkingLevel, model) of a path (docs/API.md §7.1-§7.4)."""
    thinking_level, model = context_settings(selection.path)
    return selection.entries, thinking_level, model


def _object(**members: Any) -> dict[str, Any]:
    """A JS object literal: members whose value is ABSENT (undefined) are left out."""
    return {k: v for k, v in members.items() if v is not ABSENT}
