"""Context edits (pi 1.6.0's ``context_edit`` entries) in a document: what each one does to the
context pi builds, and why one does nothing.

pi 1.6.0 applies, per target, the latest edit among the context entries of the path it builds the
context for (``buildSessionProjection``, docs/API.md §7.6): ``null`` leaves out the
target's messages, ``{content}`` replaces the content of its user, assistant, tool result and custom
messages. An edit therefore does nothing when its target is missing or not above it on its branch,
when a later edit of the same target on the path replaces it, when the newest compaction summarizes
the edit or its target, or when the target contributes no message (or, for a replacement, none whose
content pi replaces). A ``context_edit`` whose ``replacement`` is malformed is no edit at all (D10,
reported as PI027); under pi 0.86.1 the line is an unknown entry type.

What the effect is relative to: the current path when the edit is on it (what pi sends next),
otherwise the edit's own branch, as if it were the leaf.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from ..format.jsvalue import get, index_key, js_string_of, truthy
from ..render.editor_text import markdown_plain
from ..session.profiles import ignored_by
from ..session.projection import EDITABLE_ROLES, edit_target_role
from . import codes, links
from .document import SessionDocument
from .lines import LineInfo, Problem
from .preview import full_value, one_line


@dataclass(frozen=True, slots=True)
class EditEffect:
    """What one ``context_edit`` line does to the context."""

    applies: bool  # it changes the context pi builds
    short: str  # a few words, for inlay hints and code lenses on the edit
    text: str  # a sentence (Markdown), for hovers
    target: LineInfo | None  # the entry it edits, when that is above it on its branch
    on_target: str  # a few words, for hints and hovers on the target


def edits_of(doc: SessionDocument, target: LineInfo) -> list[LineInfo]:
    """The ``context_edit`` lines naming ``target``'s id, in file order (none under a release
    without context edits, nor in a version 1 file: :func:`.links.referrers`)."""
    if not doc.profile.context_edits:
        return []
    return [r for r in links.referrers(doc, target) if r.etype == "context_edit"]


def is_malformed(edit: LineInfo) -> bool:
    """The line is a ``context_edit`` whose ``replacement`` makes it no edit (D10, PI027)."""
    return any(p.code == codes.MALFORMED_CONTEXT_EDIT for p in edit.problems)


@dataclass(frozen=True, slots=True)
class Named:
    """The entries ``targetId`` names, seen from the edit: pi applies an edit to the entries with
    that id among the context entries of a path, wherever on the path they are."""

    above: LineInfo | None  # on the edit's own path, above it: where pi writes edits
    below: tuple[LineInfo, ...]  # below it (pi never writes that; paths through both still apply it)
    named: LineInfo | None  # the one the index resolves the id to (None: no entry has it)


def named_target(doc: SessionDocument, edit: LineInfo) -> Named:
    """What ``edit``'s ``targetId`` names (nothing when it is not a string)."""
    if not isinstance(edit.ref, str):
        return Named(None, (), None)
    tree = doc.tree
    candidates = tree.by_id.get(edit.ref, ())
    above = [c for c in candidates if tree.is_ancestor(c, edit)]
    below = tuple(c for c in candidates if tree.is_ancestor(edit, c))
    return Named(above[-1] if above else None, below, candidates[-1] if candidates else None)


def describe_entry(doc: SessionDocument, info: LineInfo) -> str:
    """``line 12 (toolResult message)``, ``line 3 (label)``."""
    kind = (
        f"{info.role} message"
        if info.etype == "message" and isinstance(info.role, str)
        else js_string_of(info.etype)
    )
    return f"line {doc.line_number(info.line)} ({kind})"


def _contributes(doc: SessionDocument, target: LineInfo) -> bool:
    """Does ``target`` add a message to the context (``sessionEntryToContextMessages``)?"""
    if target.etype in ("message", "custom_message", "compaction"):
        return True
    if target.etype == "branch_summary":
        return truthy(get(full_value(target, doc.errors), "summary"))
    return False


def _replaceable(target: LineInfo) -> bool:
    """Does ``target`` add a message whose content an edit replaces?"""
    role = (
        "custom" if target.etype == "custom_message" else target.role if target.etype == "message" else None
    )
    return isinstance(role, str) and role in EDITABLE_ROLES


def _replacement(doc: SessionDocument, edit: LineInfo) -> Any:
    return get(full_value(edit, doc.errors), "replacement")


def target_problem(doc: SessionDocument, edit: LineInfo) -> Problem | None:
    """PI038 for a ``context_edit`` whose target is missing, not above it on its branch, or an entry
    ``appendContextEdit`` refuses; None for a target pi could have written the edit for."""
    target_id = edit.ref
    if not isinstance(target_id, str):
        return None  # a missing or mistyped targetId is a field problem (PI021/PI022)
    found = named_target(doc, edit)
    above, named = found.above, found.named
    shown = one_line(target_id, 40)
    if named is None:
        return Problem(
            codes.CONTEXT_EDIT_TARGET,
            f"context edit target `{shown}` names no entry: the edit changes nothing",
            path=("targetId",),
        )
    if above is None:
        below = found.below[-1] if found.below else None
        consequence = (
            f"pi writes an edit only after its target, yet applies this one where the path goes on "
            f"through line {doc.line_number(below.line)}"
            if below is not None
            else "the edit changes nothing"
        )
        return Problem(
            codes.CONTEXT_EDIT_TARGET,
            f"context edit target `{shown}` ({describe_entry(doc, below or named)}) is not above this edit "
            f"on its branch: {consequence}",
            path=("targetId",),
            related=((below or named, "the entry it names"),),
        )
    if edit_target_role(above.etype, above.role) is not None:
        return None
    omits = _replacement(doc, edit) is None
    changes = _contributes(doc, above) if omits else _replaceable(above)
    consequence = (
        "still leaves its messages out of the context"
        if changes and omits
        else "still replaces their content"
        if changes
        else "changes nothing"
    )
    return Problem(
        codes.CONTEXT_EDIT_TARGET,
        f"`appendContextEdit` refuses this target ({describe_entry(doc, above)}): only user, assistant and "
        f"tool result messages and custom messages can be edited; pi never writes such an edit, and this one "
        f"{consequence}",
        path=("targetId",),
        related=((above, "the entry it names"),),
    )


# -- the effect at the leaf ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Window:
    """What of a path is in the context: everything, or (with a compaction) the compaction, its
    kept range from ``first_kept`` (None: nothing) and what follows it."""

    compaction: LineInfo | None
    first_kept: LineInfo | None


@dataclass(slots=True)
class _Memo:
    """Per document version: the newest compaction at or above each entry walked so far, and the
    window of each compaction (every walk stops where an earlier one passed: O(entries) in all)."""

    version: int
    newest: dict[LineInfo, LineInfo | None]
    windows: dict[LineInfo | None, _Window]


_MEMOS: weakref.WeakKeyDictionary[SessionDocument, _Memo] = weakref.WeakKeyDictionary()


def _window(doc: SessionDocument, tip: LineInfo) -> _Window:
    """The window of the path from the root to ``tip``."""
    memo = _MEMOS.get(doc)
    if memo is None or memo.version != doc.version:
        memo = _MEMOS[doc] = _Memo(doc.version, {}, {})
    tree = doc.tree
    newest = memo.newest
    walked: list[LineInfo] = []
    compaction: LineInfo | None = None
    for e in tree.walk_up(tip):
        if e in newest:
            compaction = newest[e]
            break
        if e.etype == "compaction":
            compaction = e
            break
        walked.append(e)
    for e in walked:
        newest[e] = compaction
    window = memo.windows.get(compaction)
    if window is None:
        first_kept = None
        if compaction is not None:
            candidates = [
                c
                for c in tree.by_id.get(index_key(compaction.ref), ())
                if c is not compaction and tree.is_ancestor(c, compaction)
            ]
            if candidates:
                first_kept = min(candidates, key=tree.depth)  # pi takes the first on the path
        window = memo.windows[compaction] = _Window(compaction, first_kept)
    return window


def _in_context(doc: SessionDocument, window: _Window, info: LineInfo) -> bool:
    """Is ``info`` (on the path the window is of) one of the context entries?"""
    tree = doc.tree
    c = window.compaction
    if c is None or info is c or tree.is_ancestor(c, info):
        return True
    k = window.first_kept
    if k is None or not (info is k or tree.is_ancestor(k, info)):
        return False
    return not (info.etype == "message" and info.role == "system")  # pi leaves those out of a kept range


def _no_effect(why: str, short: str, target: LineInfo | None = None) -> EditEffect:
    return EditEffect(False, f"no effect: {short}", f"**no effect**: {why}", target, f"no effect ({short})")


def edit_effect(doc: SessionDocument, edit: LineInfo) -> EditEffect:
    """What ``edit`` (a ``context_edit`` line) does to the context, under the document's profile."""
    unusable = _unusable(doc, edit)
    if unusable is not None:
        return unusable
    found = named_target(doc, edit)
    if found.named is None:
        return _no_effect("no entry has the id `targetId` names", "target not found")
    leaf = doc.leaf()
    on_path = leaf is not None and edit in doc.leaf_path()
    tip = leaf if on_path and leaf is not None else edit
    where = "at the leaf" if on_path else "on this edit's branch (not the current path)"
    target = found.above
    if target is None:
        target = next((c for c in reversed(found.below) if c is tip or doc.tree.is_ancestor(c, tip)), None)
    if target is None:
        what_named = markdown_plain(describe_entry(doc, found.below[-1] if found.below else found.named))
        return _no_effect(
            f"the entry it names ({what_named}) is not on the path {where}",
            "target off the branch",
            found.named,
        )
    omits = _replacement(doc, edit) is None
    what = markdown_plain(describe_entry(doc, target))  # (in the hover's Markdown: a role is the session's)
    if not _contributes(doc, target):
        return _no_effect(
            f"{what} adds no message to the context",
            f"line {doc.line_number(target.line)} adds no message",
            target,
        )
    if not omits and not _replaceable(target):
        return _no_effect(
            f"{what} has no user, assistant, tool result or custom message, whose content alone an edit replaces",
            f"line {doc.line_number(target.line)} has no editable content",
            target,
        )
    summarized = _summarized(doc, _window(doc, tip), edit, target, what, where)
    if summarized is not None:
        return summarized
    later = _replaced_by(doc, edit, tip)
    if later is not None:
        return _no_effect(
            f"the edit on line {doc.line_number(later.line)}, later on the path, replaces it ({where})",
            f"line {doc.line_number(later.line)} replaces it",
            target,
        )
    if omits:
        return EditEffect(
            True,
            f"omits line {doc.line_number(target.line)}",
            f"**leaves out** {what} of the context {where}",
            target,
            f"left out of the context {where}",
        )
    content = get(_replacement(doc, edit), "content")
    return EditEffect(
        True,
        f"replaces line {doc.line_number(target.line)}'s content",
        f"**replaces the content** of {what} {where} with {_content_words(content)}",
        target,
        f"content replaced {where}",
    )


def _unusable(doc: SessionDocument, edit: LineInfo) -> EditEffect | None:
    """Why ``edit`` cannot work whatever it names: a release without edits, a malformed edit, a
    version 1 file, a target id that is no string; None when none of these holds."""
    profile = doc.profile
    ignored = ignored_by(profile)
    if ignored is not None:
        return _no_effect(
            f"pi {profile.version} does not know `context_edit` entries; it keeps the line as a tree node",
            ignored,
        )
    if is_malformed(edit):
        problem = next(p for p in edit.problems if p.code == codes.MALFORMED_CONTEXT_EDIT)
        return _no_effect(f"not an edit (D10): {markdown_plain(problem.message)}", "malformed (D10)")
    if doc.is_v1():
        return _no_effect(
            "a version 1 file: pi's migration gives every entry a new id, so `targetId` names none",
            "version 1 file",
        )
    if not isinstance(edit.ref, str):
        return _no_effect("`targetId` is not a string id", "no target id")
    return None


def _summarized(
    doc: SessionDocument, window: _Window, edit: LineInfo, target: LineInfo, what: str, where: str
) -> EditEffect | None:
    """How the compaction of ``window`` hides the edit or its target (``what``), if it does."""
    if window.compaction is None:
        return None
    by = f"the compaction on line {doc.line_number(window.compaction.line)}"
    if not _in_context(doc, window, edit):
        return _no_effect(f"{by} summarizes this edit ({where})", "summarized", target)
    if not _in_context(doc, window, target):
        return _no_effect(f"{by} summarizes its target, {what} ({where})", "target summarized", target)
    if (
        target.etype == "compaction"
        and target is not window.compaction
        and not doc.profile.kept_compactions_speak
    ):
        return _no_effect(
            f"{what} lies inside the kept range of {by} and adds nothing to the context ({where})",
            "target adds nothing",
            target,
        )
    return None


def _replaced_by(doc: SessionDocument, edit: LineInfo, tip: LineInfo) -> LineInfo | None:
    """The last valid edit of the same target after ``edit`` on the path to ``tip``, if any."""
    tree = doc.tree
    found = None
    for other in tree.referrers.get(edit.ref, ()):
        if (
            other is not edit
            and other.etype == "context_edit"
            and not is_malformed(other)
            and tree.is_ancestor(edit, other)
            and (other is tip or tree.is_ancestor(other, tip))
            and (found is None or tree.is_ancestor(found, other))
        ):
            found = other
    return found


def _content_words(content: Any) -> str:
    if isinstance(content, str):
        return f"the text “{markdown_plain(one_line(content, 120))}”"
    blocks = content if isinstance(content, list) else []
    texts = [get(b, "text") for b in blocks if get(b, "type") == "text"]
    first = next((t for t in texts if isinstance(t, str) and t), None)
    count = f"{len(blocks)} block{'' if len(blocks) == 1 else 's'}"
    return f"{count}" + (f", starting “{markdown_plain(one_line(first, 120))}”" if first is not None else "")


__all__ = [
    "EditEffect",
    "Named",
    "describe_entry",
    "edit_effect",
    "edits_of",
    "is_malformed",
    "named_target",
    "target_problem",
]
