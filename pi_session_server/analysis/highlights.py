"""What to highlight around an id under the cursor: the entry (or tool call) it names, and every
reference to it in the document.

On an entry's own ``id``, on a key or value that names an entry (``parentId``, ``targetId``,
``firstKeptEntryId``, ``fromId``), on a tool call's ``id`` or on a tool result's ``toolCallId``,
the subject is the entry (or tool call) meant, as go to definition and find references have it
(:mod:`.navigation`): its own id is the declaration, the ids naming it are reads. In a version 1
file, whose entries have no ids yet, an entry's ``type`` stands for its id, a compaction's
``firstKeptEntryIndex`` names the entry it keeps, and a key naming an entry that a line carries
anyway names what pi's migration puts there (:func:`.links.named_entry`). Anywhere else, nothing:
a highlight of the whole entry at every cursor move would say nothing. Each answer costs the
subject's references (index look-ups), never a pass over the document.
"""

from __future__ import annotations

from dataclasses import dataclass

from .document import SessionDocument
from .navigation import Target, call_declarations, call_readers, entry_references, entry_target, reference_at

#: an entry's own id, or a tool call's
DECLARATION = "declaration"
#: an id naming it
REFERENCE = "reference"


@dataclass(frozen=True, slots=True)
class Highlight:
    target: Target
    kind: str  # DECLARATION or REFERENCE


def highlights(doc: SessionDocument, line: int, offset: int) -> list[Highlight]:
    """The declaration and the references of what the id under (line, byte offset) names, in
    document order; none away from an id, and none for an id that names nothing (a dangling
    ``parentId`` has no entry to show)."""
    ref = reference_at(doc, line, offset)
    if ref is None or (ref.kind != "position" and not isinstance(ref.value, str)):
        return []
    if ref.kind in ("toolCall", "toolCallId"):
        declared = call_declarations(doc, ref.value)
        if not declared:
            return []
        read = call_readers(doc, ref.value)
    else:
        subject = ref.info if ref.kind == "self" else next((t.info for t in ref.targets(doc)), None)
        if subject is None:
            return []
        declared = [entry_target(doc, subject)]
        # a duplicate id pi's index does not keep (PI030) is named by nothing: the ids naming it
        # mean the entry that shadows it
        shadowed = ref.field == "id" and doc.entry_by_id(ref.value) is not subject
        read = [] if shadowed else entry_references(doc, subject, include_declaration=False)
    found = [Highlight(t, DECLARATION) for t in declared] + [Highlight(t, REFERENCE) for t in read]
    found.sort(key=lambda h: (h.target.line, h.target.start))
    return found
