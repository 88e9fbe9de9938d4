"""What to offer while the cursor is inside a string value that names an entry, a tool call or an
entry type.

Inside the value of ``parentId``, ``targetId``, ``firstKeptEntryId`` or ``fromId``: the ids of
the document's entries, the nearest ones before the line first (what a line usually continues
from), then those after it, nearest first (for ``parentId``, neither the entry's own id nor those
of the entries below it: a cycle), and none in a version 1 file (pi's migration gives every entry
a new id); inside a tool result's ``message.toolCallId``: the ids of the tool calls in the
assistant messages, in the same order (a result answers a call made just before it); inside
``type``: the entry types the chosen pi release knows (``session`` too on the first line). Each
item replaces the whole content of the string between its quotes; in a string not closed yet, what
is typed of it, and closes it.

What an item writes, and what the editor filters it by as the user types, is the id as the
document writes it where it is defined (a quote, a backslash, a control character, a character
written as a ``\\u`` escape: as escaped there), not as it is shown: the user types the document's
form. What is typed already narrows the list as the id it spells, escapes read.

Each request looks at a bounded number of lines around the cursor (:data:`SCAN_LINES`) and
offers a bounded number of ids (:data:`MAX_IDS`): typing in a 100 MB session costs the same as
in a small one. A cut list, or one filtered by what is typed already, says it is incomplete, so
that the editor asks again as the user types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..format.records import ENTRY_TYPES
from . import lines as L
from . import links
from .document import SessionDocument
from .fields import Path
from .jsonpath import scalar_at, value_span
from .lines import LineInfo
from .preview import quick_preview

ENTRY_ID = "entry id"
TOOL_CALL_ID = "tool call id"
ENTRY_TYPE = "entry type"

#: the keys whose string value names an entry
ENTRY_NAMING_KEYS = frozenset({"parentId", "targetId", "firstKeptEntryId", "fromId"})
#: where a tool result names the tool call it answers
TOOL_CALL_ID_PATH = ("message", "toolCallId")
#: ids offered at most by one answer
MAX_IDS = 50
#: lines looked at, before and after the cursor's, by one answer
SCAN_LINES = 20_000
#: characters of an entry's preview in an item's detail
PREVIEW_CHARS = 60

_TERMINATED = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


@dataclass(frozen=True, slots=True)
class Candidate:
    label: str  # what is offered (an id, an entry type), as shown
    detail: str
    written: str  # the label as JSON string content, as the document writes it: what is typed
    new_text: str  # what replaces the string's content: ``written``, and the quote that closes it


@dataclass(frozen=True, slots=True)
class Completions:
    start: int  # byte span of the string's content on the line: what an item replaces
    end: int
    candidates: list[Candidate]  # most useful first
    names: str  # what the candidates are: ENTRY_ID, TOOL_CALL_ID or ENTRY_TYPE
    incomplete: bool  # cut, or filtered by what is typed: ask again as the user types


def completions(doc: SessionDocument, line: int, offset: int) -> Completions | None:
    """What to offer at (line, byte offset), or None when the cursor is not inside the string
    value of a key that names an entry or a tool call, or of ``type``. The line need not be valid
    JSON (it is being typed)."""
    if not 0 <= line < doc.line_count:
        return None
    raw = doc.lines[line].raw
    loc = scalar_at(raw, offset)
    if loc is None or loc.is_key or raw[loc.start : loc.start + 1] != b'"':
        return None
    start = loc.start + 1
    terminated = _TERMINATED.fullmatch(raw, loc.start, loc.end) is not None
    end = loc.end - 1 if terminated else loc.end
    if not start <= offset <= end:
        return None  # on the opening quote, or after the closing one
    key = loc.path[0] if len(loc.path) == 1 else tuple(loc.path)
    typed = _typed_text(raw[start:offset])
    if key == "type":
        found = Completions(start, end, _entry_types(doc, line), ENTRY_TYPE, incomplete=False)
    elif key in ENTRY_NAMING_KEYS:
        if not links.ids_as_written(doc):
            return None  # a version 1 file: no id written there names an entry pi reads
        ids_of = _parent_ids_for(doc, doc.lines[line]) if key == "parentId" else _entry_id_of
        candidates, incomplete = _ids_around(doc, line, typed, ids_of, _id_path)
        found = Completions(start, end, candidates, ENTRY_ID, incomplete)
    elif key == TOOL_CALL_ID_PATH:
        candidates, incomplete = _ids_around(doc, line, typed, _call_ids_of, _call_id_path)
        found = Completions(start, end, candidates, TOOL_CALL_ID, incomplete)
    else:
        return None
    if terminated:
        return found
    # An unterminated string runs to the end of the line, over what was meant to follow it (the
    # object's closing brace): what is typed is replaced, and the string closed.
    closed = [replace(c, new_text=c.new_text + '"') for c in found.candidates]
    return replace(found, end=offset, candidates=closed)


def _entry_types(doc: SessionDocument, line: int) -> list[Candidate]:
    known = ENTRY_TYPES if doc.profile.context_edits else ENTRY_TYPES - {"context_edit"}
    found = [Candidate(t, "entry type", t, t) for t in sorted(known, key=lambda t: (t != "message", t))]
    if line == 0:
        found.insert(
            0, Candidate("session", "the session header (the file's first line)", "session", "session")
        )
    return found


def _entry_id_of(info: LineInfo) -> tuple[str, ...]:
    entry_id = info.id
    return (entry_id,) if info.kind == L.ENTRY and type(entry_id) is str else ()


def _parent_ids_for(doc: SessionDocument, child: LineInfo) -> Callable[[LineInfo], tuple[str, ...]]:
    """The ids a ``parentId`` of ``child`` may take: not its own, nor those of the entries below
    it (either would make a cycle, and pi would lose the branch from every path)."""
    if child.kind != L.ENTRY:
        return _entry_id_of  # a line being typed: where it sits in the tree is not known
    tree = doc.tree

    def ids_of(info: LineInfo) -> tuple[str, ...]:
        found = _entry_id_of(info)
        if found and (found[0] == child.id or tree.is_ancestor(child, info)):
            return ()
        return found

    return ids_of


def _call_ids_of(info: LineInfo) -> tuple[str, ...]:
    return info.call_ids if info.kind == L.ENTRY else ()


def _id_path(_info: LineInfo, _entry_id: str) -> Path:
    return ("id",)


def _call_id_path(info: LineInfo, call_id: str) -> Path:
    return ("message", "content", info.call_blocks[info.call_ids.index(call_id)], "id")


def _ids_around(
    doc: SessionDocument,
    line: int,
    typed: str,
    ids_of: Callable[[LineInfo], tuple[str, ...]],
    path_of: Callable[[LineInfo, str], Path],
) -> tuple[list[Candidate], bool]:
    """The ids (``ids_of`` a line, written at ``path_of`` the line and the id) containing
    ``typed`` (ignoring case) of the lines around ``line``: those before it, nearest first, then
    those after it; whether the list is incomplete."""
    wanted = typed.casefold()
    seen: set[str] = set()
    found: list[Candidate] = []
    filtered = False
    lines = doc.lines
    before = range(line - 1, max(line - 1 - SCAN_LINES, -1), -1)
    after = range(line + 1, min(line + 1 + SCAN_LINES, doc.line_count))
    for i in (*before, *after):
        info = lines[i]
        for found_id in ids_of(info):
            if found_id in seen:
                continue
            seen.add(found_id)
            if wanted not in found_id.casefold():
                filtered = True
                continue
            if len(found) == MAX_IDS:
                return found, True
            raw = info.raw  # read once for both: a line of a file is read again each time it is asked for
            written = _as_written(raw, found_id, path_of(info, found_id))
            found.append(Candidate(found_id, _detail(doc, info, i, raw), written, written))
    looked_at_all = line - 1 - SCAN_LINES < 0 and line + 1 + SCAN_LINES >= doc.line_count
    return found, filtered or not looked_at_all


def _detail(doc: SessionDocument, info: LineInfo, line: int, raw: bytes) -> str:
    """The entry's type and a short preview of it, with its line (``raw``: its bytes)."""
    etype = info.etype if type(info.etype) is str else "entry"
    return f"{etype} · line {doc.line_number(line)} · {quick_preview(info, PREVIEW_CHARS, raw)}"


def _as_written(raw: bytes, text: str, path: Path) -> str:
    """``text``, a string value of the line ``raw`` at ``path``, as the line writes it there (the
    content of its string token, escapes as they are: another writer may escape what JSON need
    not, an ASCII letter too); as JSON writes it (:func:`_json_content`) where the line holds no
    such value there."""
    plain = _json_content(text)
    span = value_span(raw, path)
    if span is not None:
        token = raw[span[0] : span[1]]
        try:
            if json.loads(token) == text:
                return token[1:-1].decode("utf-8")
        except ValueError:  # not a string token, or not UTF-8 (UnicodeDecodeError): not this value
            pass
    return plain


# an escape cut short at the end of what is typed, after the escaped backslashes before it: a
# backslash, or "\u" and fewer than 4 digits
_OPEN_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\(?:u[0-9a-fA-F]{0,3})?$")


def _typed_text(typed: bytes) -> str:
    """The text the user typed into a string so far (JSON string content): its escapes read, one
    still being typed left out; as it is written where it does not read as JSON."""
    try:
        return str(json.loads(b'"' + _OPEN_ESCAPE.sub(rb"\1", typed) + b'"'))
    except ValueError:  # (not valid JSON content: a raw control character, a bad escape, not UTF-8)
        return typed.decode("utf-8", "replace")


def _json_content(text: str) -> str:
    """``text`` as the content of a JSON string (escaped where JSON needs it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only an escape can write it
        return json.dumps(text)[1:-1]
    return json.dumps(text, ensure_ascii=False)[1:-1]
