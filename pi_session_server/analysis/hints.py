"""Inlay hints and code lenses: depth, children, label, context edits, leaf.

Inlay hints go at the end of each entry line in the requested range (``depth 12 · 3 children ·
label “x” · leaf``; on a context edit what it does, ``omits line 12``; on an edited entry, ``edited
by line 14``); code lenses mark what deserves a headline: branch points, labelled entries, entries
that context edits change, the leaf, and the header (entry count and where the leaf is). The leaf is
the document's (:meth:`SessionDocument.leaf`: where the session held on the file continues).

Lens titles carry icons as codicons (``$(git-branch)``), the LSP's convention, which VS Code draws;
other editors replace them with a glyph or drop them (:data:`ICONS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..format.jsvalue import index_key
from . import lines as L
from . import links
from .document import SessionDocument
from .edits import edit_effect, edits_of
from .hover import current_label
from .lines import LineInfo
from .pauses import CHECK_EVERY
from .preview import cut


@dataclass(frozen=True, slots=True)
class Hint:
    line: int
    offset: int  # byte offset in the line where the hint goes
    label: str
    tooltip: str


@dataclass(frozen=True, slots=True)
class Lens:
    line: int
    title: str


#: a label in a hint or a lens title is cut like an entry's preview
LABEL_LIMIT = 80

#: the codicons lens titles use, and a plain glyph for each (for editors that draw no codicons)
BRANCH_ICON = "$(git-branch)"
LEAF_ICON = "$(target)"
ICONS = {BRANCH_ICON: "⑂", LEAF_ICON: "●"}


#: how much of a line's end :func:`_line_end` reads first (a line of a file is read from disk)
_END_READ = 64


def _line_end(info: LineInfo) -> int:
    """Where the line ends before its trailing blanks and carriage return."""
    length = info.byte_length
    tail = info.last_bytes(_END_READ)
    if len(tail) < length and not tail.rstrip(b"\r \t"):  # blanks all along what was read
        tail = info.raw
    return length - len(tail) + len(tail.rstrip(b"\r \t"))


def inlay_hints(
    doc: SessionDocument,
    first_line: int = 0,
    last_line: int | None = None,
    check: Callable[[], None] | None = None,
) -> list[Hint]:
    """The hints of the lines from ``first_line`` to ``last_line``; ``check``: called every
    :data:`CHECK_EVERY` lines, it raises to stop the work (the answer is no longer wanted)."""
    last_line = doc.line_count - 1 if last_line is None else min(last_line, doc.line_count - 1)
    tree = doc.tree
    leaf = doc.leaf()
    out: list[Hint] = []
    for n in range(max(0, first_line), last_line + 1):
        if check is not None and n % CHECK_EVERY == 0:
            check()
        info = doc.lines[n]
        if info.kind != L.ENTRY or info not in tree.members:
            continue
        kids = len(links.children(doc, info))
        parts = [f"depth {links.depth(doc, info)}"]
        if kids != 1:
            parts.append("no children" if kids == 0 else f"{kids} children")
        label = current_label(doc, info)
        if label:
            parts.append(f"label “{cut(label, LABEL_LIMIT)}”")
        if info.etype == "context_edit":
            parts.append(edit_effect(doc, info).short)
        edits = edits_of(doc, info)
        if edits:
            parts.append("edited by line " + ", ".join(str(doc.line_number(e.line)) for e in edits))
        if info is leaf:
            parts.append("leaf")
        tooltip = (
            "depth in the tree · children · label · context edits · whether pi continues from this entry"
        )
        out.append(Hint(n, _line_end(info), " · ".join(parts), tooltip))
    return out


def code_lenses(doc: SessionDocument, check: Callable[[], None] | None = None) -> list[Lens]:
    """The lenses of the header and of the entries that have something to say; ``check``: as
    :func:`inlay_hints`' (every :data:`CHECK_EVERY` entries)."""
    tree = doc.tree
    out: list[Lens] = []
    leaf = doc.leaf()
    header = doc.valid_header()
    if header is not None:
        if not tree.members:  # (a header alone: pi writes its first entry with the first message)
            title = "no entries yet"
        elif leaf is not None:
            title = f"{len(tree.members):,} entries · leaf on line {doc.line_number(leaf.line)}"
        else:
            title = f"{len(tree.members):,} entries · no leaf: the next entry starts a new root"
        out.append(Lens(header.line, title))
    # the index keys of label targets: a string is its own, any other value is keyed as pi's Map
    labelled = {r.ref for r in _labels(doc)} | {index_key(r.ref) for r in doc.labels_of_other_ids}
    edited = {r.ref for r in doc.edits if isinstance(r.ref, str)} if doc.profile.context_edits else set()
    for n, info in enumerate(doc.entries()):
        if check is not None and n % CHECK_EVERY == 0:
            check()
        titles = _entry_titles(doc, info, leaf, labelled, edited)
        if titles:
            out.append(Lens(info.line, " · ".join(titles)))
    return out


def _entry_titles(
    doc: SessionDocument, info: LineInfo, leaf: LineInfo | None, labelled: set[Any], edited: set[Any]
) -> list[str]:
    """What the lens of an entry says (nothing: no lens); ``labelled``, ``edited``: the keys of
    the entries labels and context edits name."""
    kids = len(links.children(doc, info))
    titles = []
    if kids > 1:
        titles.append(f"{BRANCH_ICON} {kids} branches")
    if info.key in labelled:  # the index key: an id may be any JSON value (an array: unhashable)
        label = current_label(doc, info)
        if label:
            titles.append(f"label “{cut(label, LABEL_LIMIT)}”")
    if info.key in edited:
        titles.extend(
            f"edited by line {doc.line_number(e.line)}: {edit_effect(doc, e).on_target}"
            for e in edits_of(doc, info)
        )
    if info is leaf:
        titles.append(f"{LEAF_ICON} leaf: pi continues here")
    return titles


def _labels(doc: SessionDocument) -> list[LineInfo]:
    """The label lines naming a string id (none in a version 1 file: :func:`.links.referrers`)."""
    if not links.ids_as_written(doc):
        return []
    return [r for refs in doc.tree.referrers.values() for r in refs if r.etype == "label"]
