"""pi's ``/tree`` filter modes over tree nodes, and the tree they leave: what ``pi-session tree
--filter`` draws and ``pi/getTree`` answers (both use this module).

The modes follow pi's TUI tree selector (``modes/interactive/components/tree-selector.js``,
``applyFilter``; 0.86.1 and 1.6.0 alike but for context edits): in every mode but ``none``, ``usage`` entries are hidden,
and so are assistant messages without text that did not end in an error or abort (unless they are
the leaf). Then ``default`` hides settings entries (label, custom, model_change,
thinking_level_change, session_info, and pi 1.6.0's context_edit, which 0.86.1 shows and does not
search in: the caller says which release it follows); ``no-tools`` also hides tool
results; ``user-only`` keeps user messages only; ``labeled-only`` keeps labelled entries only;
``all`` keeps the rest. A search keeps the entries whose text holds every word of it, case aside.
A hidden entry's shown descendants hang under its nearest shown ancestor (:func:`shown_below`).
``none`` (the default of ``pi/getTree``) is ``getTree()`` itself, nothing hidden.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, Final

from ..format.entry import Entry
from ..format.jstext import JS_WHITESPACE
from ..format.jsvalue import ABSENT, strict_equal, truthy
from .describe import extract_content, is_silent_turn
from .fields import field, id_of, role_of, type_of
from .preview_cache import PreviewCache
from .preview_text import js_str
from .tree import TreeNode

#: the entry types pi's default mode hides (its ``isSettingsEntry``): pi 1.6.0's, and pi 0.86.1's,
#: which knows no context edit (it shows one, as an entry of a type it does not know)
SETTINGS_TYPES: Final = frozenset(
    {"label", "custom", "model_change", "thinking_level_change", "session_info", "context_edit"}
)
SETTINGS_TYPES_BEFORE_CONTEXT_EDITS: Final = SETTINGS_TYPES - {"context_edit"}


def settings_types(context_edits: bool) -> frozenset[str]:
    """The settings types of a release that reads context edits (``Profile.context_edits``) or not."""
    return SETTINGS_TYPES if context_edits else SETTINGS_TYPES_BEFORE_CONTEXT_EDITS


_CHILDREN: Final[Callable[[Any], list[Any]]] = attrgetter("children")
# what the selector splits a search at: JavaScript's ``/\s+/``
_SEARCH_GAPS = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def search_tokens(search: str | None) -> list[str]:
    r"""The words of a search as pi's selector takes them (``toLowerCase().split(/\s+/)``, empty
    ones dropped), each once: an entry is kept when its text holds all of them."""
    return list(dict.fromkeys(word for word in _SEARCH_GAPS.split((search or "").lower()) if word))


def searchable_text(node: Any, context_edits: bool = True) -> str:
    """What the TUI's search matches against (``getSearchableText``; a context edit has words of
    its own in a release that reads context edits)."""
    entry = node.entry
    parts: list[str] = []
    if truthy(node.label):
        parts.append(js_str(node.label))
    etype = type_of(entry)
    if etype == "message":
        _message_text(entry, parts)
    elif etype == "custom_message":
        parts.append(js_str(field(entry, "customType")))
        content = field(entry, "content")
        parts.append(content if isinstance(content, str) else extract_content(content))
    elif etype == "compaction":
        parts.append("compaction")
    elif isinstance(etype, str) and etype in _WORD_AND_FIELD:
        word, key = _WORD_AND_FIELD[etype]
        parts.extend([word, js_str(field(entry, key))])
    elif etype == "session_info":
        parts.append("title")
        if truthy(field(entry, "name")):
            parts.append(js_str(field(entry, "name")))
    elif etype == "label":
        label = field(entry, "label")
        parts.extend(["label", "" if label is ABSENT or label is None else js_str(label)])
    elif (
        etype == "context_edit" and context_edits
    ):  # (pi 1.6.0's: `replacement === null` leaves its target out)
        omits = field(entry, "replacement") is None
        parts.extend(["context edit", "omit" if omits else "replace", js_str(field(entry, "targetId"))])
    return " ".join(parts)


#: the entry types whose searchable text is a word and one field
_WORD_AND_FIELD: Final = {
    "branch_summary": ("branch summary", "summary"),
    "model_change": ("model", "modelId"),
    "thinking_level_change": ("thinking", "thinkingLevel"),
    "custom": ("custom", "customType"),
}


def _message_text(entry: Any, parts: list[str]) -> None:
    message = field(entry, "message")
    msg = message if isinstance(message, dict) else {}
    parts.append(js_str(msg.get("role", ABSENT)))
    content = msg.get("content", ABSENT)
    if truthy(content):
        parts.append(extract_content(content))
    if msg.get("role", ABSENT) == "bashExecution" and truthy(msg.get("command", ABSENT)):
        parts.append(js_str(msg.get("command")))


def _silent_turn(entry: Any) -> bool:
    return is_silent_turn(field(entry, "message"))


def node_filter(
    mode: str,
    leaf_id: Any,
    search: str | None = None,
    cache: PreviewCache | None = None,
    context_edits: bool = True,
) -> Callable[[Any], bool]:
    """The visibility predicate of one of pi's ``/tree`` filter modes over tree nodes (``cache``:
    the session's, which remembers each assistant entry's answer), as the release that reads
    context edits (``context_edits``: pi 1.6.0) or not (0.86.1) shows them."""
    tokens = search_tokens(search)
    settings = settings_types(context_edits)
    silent_turn = _silent_turn if cache is None else cache.silent_turn

    def visible(node: Any) -> bool:
        entry = node.entry
        if mode != "none":
            # read once: asked for every node (an Entry's envelope without a call for each)
            etype, role = (
                (entry.type, entry.role) if type(entry) is Entry else (type_of(entry), role_of(entry))
            )
            # hidden in every TUI mode: usage entries; text-less assistant turns that did not fail
            if etype == "usage":
                return False
            if (
                etype == "message"
                and role == "assistant"
                and not (leaf_id is not ABSENT and strict_equal(id_of(entry), leaf_id))
                and silent_turn(entry)
            ):
                return False
            if not _mode_shows(mode, etype, role, node, settings):
                return False
        if tokens:
            text = searchable_text(node, context_edits).lower()
            return all(t in text for t in tokens)
        return True

    def shown_by_default(node: Any) -> bool:
        """``visible`` of the ``default`` mode without a search (a tree view's), an Entry's inline."""
        entry = node.entry
        if type(entry) is not Entry:
            return visible(node)
        etype = entry.type
        if etype == "message":  # (most entries: shown unless a silent turn)
            return not (
                entry.role == "assistant"
                and not (leaf_id is not ABSENT and strict_equal(entry.id, leaf_id))
                and silent_turn(entry)
            )
        return etype != "usage" and etype not in settings

    return shown_by_default if mode == "default" and not tokens else visible


def _mode_shows(mode: str, etype: Any, role: Any, node: Any, settings: frozenset[str]) -> bool:
    """Whether filter ``mode`` shows the node of an entry of type ``etype`` (``role``: its
    message's), ``settings`` the types the release hides by default."""
    if mode == "user-only":
        return bool(etype == "message" and role == "user")
    if mode == "no-tools":
        return etype not in settings and not (etype == "message" and role == "toolResult")
    if mode == "labeled-only":
        return node.label is not ABSENT
    if mode == "all":
        return True
    return etype not in settings


def shown_below(
    node: Any, is_shown: Callable[[Any], bool], children_of: Callable[[Any], list[Any]]
) -> list[Any]:
    """The shown nodes that hang right under ``node`` once the hidden ones are taken out: its shown
    children, and in the place of each hidden child, that child's own (found the same way), in
    the order ``children_of`` gives. Iterative: a hidden chain can be thousands of nodes long."""
    shown: list[Any] = []
    stack = list(reversed(children_of(node)))
    while stack:
        child = stack.pop()
        if is_shown(child):
            shown.append(child)
        else:
            stack.extend(reversed(children_of(child)))
    return shown


def filtered_roots(roots: Iterable[Any], is_shown: Callable[[Any], bool]) -> list[TreeNode]:
    """The tree ``roots`` make once the nodes ``is_shown`` hides are taken out, as new nodes (the
    given ones are not changed): each shown node with its entry and label, its children those of
    :func:`shown_below`; the tops the shown roots and, for a hidden root, its shown descendants
    nearest to it. Iterative (a session can be a chain of hundreds of thousands of entries)."""
    tops: list[TreeNode] = []
    # (an original node, the list its copy goes into)
    stack: list[tuple[Any, list[TreeNode]]] = [(root, tops) for root in reversed(list(roots))]
    while stack:
        node, into = stack.pop()
        if not is_shown(node):
            stack.extend((child, into) for child in reversed(node.children))
            continue
        copy = TreeNode(node.entry, [], node.label, node.label_timestamp)
        into.append(copy)
        for child in reversed(shown_below(node, is_shown, _CHILDREN)):
            stack.append((child, copy.children))
    return tops
