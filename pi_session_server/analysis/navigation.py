"""Links between entries: what an id value under the cursor refers to, and what refers to an entry.

References by id: ``parentId``, ``targetId`` (labels, context edits), ``firstKeptEntryId`` (compactions),
``fromId`` (branch summaries) name entries; a tool result's ``message.toolCallId`` names the
``toolCall`` block of an assistant message. Definitions go from a reference to what it names;
references go from an entry (or a tool call) to everything naming it.

A version 1 file's entries have no ids until pi's migration draws them: a compaction names the
first entry it keeps by position (``firstKeptEntryIndex``, :func:`.links.version_1_kept`), and an
entry is marked by its ``type`` where a later one has its ``id``. A key naming an entry that such a
line carries names what the migration puts there (:func:`.links.named_entry`): a ``parentId`` the
entry before it, a ``targetId`` or ``fromId`` nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import lines as L
from . import links
from .document import SessionDocument
from .jsonpath import Located, is_kept, scalar_at, scalar_value, value_span
from .lines import LineInfo
from .positions import text_end

ENTRY_REF_FIELDS = {"parentId", "targetId", "firstKeptEntryId", "fromId"}


@dataclass(frozen=True, slots=True)
class Target:
    info: LineInfo
    start: int  # byte span within the target's line
    end: int

    @property
    def line(self) -> int:
        return self.info.line


@dataclass(frozen=True, slots=True)
class Reference:
    """An id value at a position: ``kind`` is ``entry`` (names an entry), ``position`` (a version
    1 compaction's ``firstKeptEntryIndex``: names an entry by position), ``toolCallId`` (names a
    tool call), ``toolCall`` (a tool call's own id) or ``self`` (an entry's own ``id``; in a
    version 1 file, its ``type``)."""

    kind: str
    field: str
    value: Any
    info: LineInfo
    start: int
    end: int

    def targets(self, doc: SessionDocument) -> list[Target]:
        if self.kind == "entry":
            target = links.named_entry(doc, self.info, self.field, self.value)
            return [entry_target(doc, target)] if target is not None else []
        if self.kind == "position":
            kept = links.version_1_kept(doc, self.info, self.value)
            return [entry_target(doc, kept)] if kept is not None else []
        if self.kind == "toolCallId":
            return call_targets(doc, self.info, self.value)
        return []


def id_target(info: LineInfo) -> Target:
    span = value_span(info.raw, ("id",)) or (0, text_end(info.raw))
    return Target(info, *span)


def entry_target(doc: SessionDocument, info: LineInfo) -> Target:
    """Where the entry ``info`` is named: its ``id``; in a version 1 file, which has none until
    pi's migration draws them, its ``type``."""
    if not doc.is_v1():
        return id_target(info)
    span = value_span(info.raw, ("type",)) or (0, text_end(info.raw))
    return Target(info, *span)


def call_targets(doc: SessionDocument, result: LineInfo, call_id: Any) -> list[Target]:
    """The toolCall blocks with this id, those on the result's own path first."""
    if not isinstance(call_id, str):
        return []
    candidates = doc.tree.calls_by_id.get(call_id, [])
    ordered = sorted(candidates, key=lambda a: not links.is_ancestor(doc, a, result))
    return [call_block_target(a, call_id) for a in ordered]


def call_block_target(assistant: LineInfo, call_id: str) -> Target:
    index = assistant.call_blocks[assistant.call_ids.index(call_id)]
    span = value_span(assistant.raw, ("message", "content", index, "id")) or (0, text_end(assistant.raw))
    return Target(assistant, *span)


def read_span(raw: bytes, loc: Located) -> tuple[int, int] | None:
    """Where pi reads the value of the key or value ``loc``: on a key, its value; on a value that a
    key written again later in its object replaces (JSON.parse keeps the last), the value that
    replaces it, which is what pi follows (None when the path has no value pi reads)."""
    if loc.is_key or not is_kept(raw, loc):
        return value_span(raw, loc.path)
    return loc.start, loc.end


def reference_at(doc: SessionDocument, line: int, offset: int) -> Reference | None:
    """The id reference under (line, byte offset), if any."""
    if not 0 <= line < doc.line_count:
        return None
    info = doc.lines[line]
    if info.kind != L.ENTRY:
        return None
    loc = scalar_at(info.raw, offset)
    return reference_of(info, loc, doc.is_v1()) if loc is not None else None


def reference_of(info: LineInfo, loc: Located, version_1: bool) -> Reference | None:
    """The id reference that the key or value ``loc`` of ``info``'s line, in a file of version 1
    or not (``version_1``), is, if any (for a caller that has found what is under the cursor
    already: on a line of megabytes, each look reads them)."""
    if info.kind != L.ENTRY:
        return None
    path = loc.path
    raw = info.raw
    span = read_span(raw, loc)
    if span is None:
        return None
    if len(path) == 1 and path[0] in ENTRY_REF_FIELDS:
        return Reference("entry", str(path[0]), scalar_value(raw, span), info, *span)
    if version_1 and path == (links.KEPT_INDEX,) and info.etype == "compaction":
        return Reference("position", links.KEPT_INDEX, scalar_value(raw, span), info, *span)
    if path == (("type",) if version_1 else ("id",)):
        return Reference("self", str(path[0]), scalar_value(raw, span), info, *span)
    if path == ("message", "toolCallId") and info.role == "toolResult":
        return Reference("toolCallId", "toolCallId", scalar_value(raw, span), info, *span)
    if (
        len(path) == 4
        and path[:2] == ("message", "content")
        and path[3] == "id"
        and info.role == "assistant"
        and path[2] in info.call_blocks
    ):
        return Reference("toolCall", "id", scalar_value(raw, span), info, *span)
    return None


def definition(doc: SessionDocument, line: int, offset: int) -> list[Target]:
    ref = reference_at(doc, line, offset)
    if ref is None:
        return []
    return ref.targets(doc)


def references(
    doc: SessionDocument, line: int, offset: int, include_declaration: bool = True
) -> list[Target]:
    """What refers to the entry (or tool call) at the position.

    On a reference, the entry it names is the subject; on a tool call id or a ``toolCallId``, the
    tool call; anywhere else on an entry line, that entry.
    """
    if not 0 <= line < doc.line_count:
        return []
    ref = reference_at(doc, line, offset)
    if ref is not None and ref.kind in ("toolCall", "toolCallId") and isinstance(ref.value, str):
        return _call_references(doc, ref, include_declaration)
    if ref is not None and ref.kind in ("entry", "position"):
        targets = ref.targets(doc)
        if not targets:
            return []
        subject = targets[0].info
    else:
        subject = doc.lines[line]
        if subject.kind != L.ENTRY:
            return []
    return entry_references(doc, subject, include_declaration)


def entry_references(
    doc: SessionDocument, subject: LineInfo, include_declaration: bool = True
) -> list[Target]:
    out: list[Target] = []
    if include_declaration:
        out.append(entry_target(doc, subject))
    for referrer, key in links.naming(doc, subject):
        span = value_span(referrer.raw, (key,))
        if span is not None:
            out.append(Target(referrer, *span))
    out.sort(key=lambda t: (t.line, t.start))
    return out


def _call_references(doc: SessionDocument, ref: Reference, include_declaration: bool) -> list[Target]:
    call_id = ref.value
    out = call_declarations(doc, call_id) if include_declaration else []
    out.extend(call_readers(doc, call_id))
    out.sort(key=lambda t: (t.line, t.start))
    return out


def call_declarations(doc: SessionDocument, call_id: str) -> list[Target]:
    """The ids of the tool call blocks with this id."""
    return [call_block_target(a, call_id) for a in doc.tree.calls_by_id.get(call_id, ())]


def call_readers(doc: SessionDocument, call_id: str) -> list[Target]:
    """The ``toolCallId`` values of the tool results naming this tool call id."""
    out: list[Target] = []
    for r in doc.tree.results_by_call.get(call_id, ()):
        span = value_span(r.raw, ("message", "toolCallId"))
        if span is not None:
            out.append(Target(r, *span))
    return out


def children_targets(doc: SessionDocument, line: int) -> list[Target]:
    """The ids of the entries that continue from the entry on ``line`` (those whose ``parentId``
    names it; in a version 1 file, the next entry, as pi's migration links them), in file order."""
    if not 0 <= line < doc.line_count:
        return []
    info = doc.lines[line]
    if info.kind != L.ENTRY:
        return []
    return [entry_target(doc, child) for child in links.children(doc, info)]
