"""Repairs: text edits that fix what a diagnostic reports, for the user to choose (never applied
silently).

Each :class:`Repair` belongs to one diagnostic code and line. Its edits are computed lazily
(``edits()``), because some are expensive (migrating a whole file) and editors ask for code
actions at every cursor move. Moving a huge image out of the file needs a binary file written
next to the session, which a text edit cannot do: that repair carries an :class:`ImageExtraction`
plan that the server executes (write the file, then apply the placeholder edit). A byte order mark
that only the file on disk has (editors hide it) is not in the text at all: that repair is made to
the file (:attr:`Repair.on_disk`), as ``pi-session repair --in-place`` makes it.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..format.dates import now_iso
from ..format.glued import Piece, holds_header
from ..format.ids import uuid7
from ..format.jsjson import JsonSyntaxError, dumps, parse, parse_bytes
from ..format.jstext import is_js_blank
from ..format.jsvalue import ABSENT, get, strict_equal
from ..format.records import ENTRY_TYPES
from ..session.environment import current
from ..session.migrate import (
    DrawnVersionOneLinks,
    LaterValueNeeded,
    StreamedMigration,
    migrates_each_value_alone,
    version_1_position,
)
from . import codes
from . import lines as L
from .byte_order_marks import BOM_BYTES, utf8_of_marked
from .diagnostics import Diagnostic, file_diagnostics, glued_entries, problem_span, reported_problems
from .document import SessionDocument
from .fields import Path
from .jsonpath import value_span
from .lines import LineInfo, Problem, human_size
from .positions import text_end


@dataclass(frozen=True, slots=True)
class TextEdit:
    start_line: int
    start: int  # byte offsets
    end_line: int
    end: int
    new_text: str


@dataclass(frozen=True, slots=True)
class ImageExtraction:
    """Write ``data`` to ``file_name`` next to the session, then apply ``edit`` (the placeholder)."""

    file_name: str
    data: bytes
    edit: TextEdit


@dataclass(frozen=True, slots=True)
class StreamedEdit:
    """A text edit whose new text comes in chunks of UTF-8 (``edit.new_text`` is empty), made
    again each time ``chunks`` is called."""

    edit: TextEdit
    chunks: Callable[[], Iterator[bytes]]


@dataclass(slots=True)
class Repair:
    title: str
    code: str
    line: int
    make_edits: Callable[[], list[TextEdit]] = field(repr=False)
    preferred: bool = False
    image: Callable[[], ImageExtraction | None] | None = field(default=None, repr=False)
    key: tuple[Any, ...] = ()  # identifies the repair again at resolve time
    # made to the file on disk, not to the text (no edits): what the text does not hold, a byte
    # order mark the editor hides (SessionDocument.disk_bom)
    on_disk: bool = False
    # its edits give the file a session header line it lacked: one pi skipped inside lines glued
    # together, or one moved to the first line (a header made up beside it would take its place)
    restores_header: bool = False
    # its edits give back entries pi skipped inside lines glued together: the tree changes, and
    # with it the problems of other entries (a parent found, a tool call on the path again)
    restores_entries: bool = False

    # its one edit, the new text made in chunks as they are written (a migration's, as long as the
    # file): for a writer that need not hold it whole; edits() gives the same edit as text
    streamed: Callable[[], StreamedEdit] | None = field(default=None, repr=False)

    def edits(self) -> list[TextEdit]:
        return self.make_edits()


def _delete_line(doc: SessionDocument, n: int) -> TextEdit:
    """Delete line ``n`` with its newline (or, for the unterminated last line, the newline before it,
    a CRLF whole: an edit that starts between its CR and LF is past the line's end to an editor)."""
    if n + 1 < doc.line_count:
        return TextEdit(n, 0, n + 1, 0, "")
    if n > 0:
        before = doc.lines[n - 1].raw
        start = len(before) - 1 if before.endswith(b"\r") else len(before)
        return TextEdit(n - 1, start, n, len(doc.lines[n].raw), "")
    return TextEdit(n, 0, n, len(doc.lines[n].raw), "")


# --------------------------------------------------------------------------------------------
# what fixes what
# --------------------------------------------------------------------------------------------


#: the codes whose every reported problem has a repair that text edits make, whatever its line
#: holds: an orphan can always be re-parented (or made a root), an entry of a parent cycle made a
#: root (or its cycle broken where pi cannot have written it), a tool result without its call
#: removed. Their problems can be counted without building those repairs (:func:`repairs_counting`).
ALWAYS_REPAIRED = frozenset({codes.DANGLING_PARENT, codes.PARENT_CYCLE, codes.ORPHAN_TOOL_RESULT})


@dataclass(slots=True)
class Found:
    """What :func:`repairs_counting` finds."""

    repairs: list[Repair]
    # the problems (code, line) of the codes only counted: each has a repair, not built
    counted: set[tuple[str, int]] = field(default_factory=set)


def repairs(
    doc: SessionDocument, first_line: int, last_line: int, path: str | None = None, cwd: str | None = None
) -> list[Repair]:
    """Repairs for the diagnostics on lines ``first_line..last_line``. ``path``: the file's path
    (used to name a new header after the file and to place extracted images). ``cwd``: for a
    document that has no file yet, the directory its session belongs to (:func:`header_for`)."""
    return repairs_counting(doc, first_line, last_line, frozenset(), path, cwd).repairs


def repairs_counting(
    doc: SessionDocument,
    first_line: int,
    last_line: int,
    count_only: frozenset[str],
    path: str | None = None,
    cwd: str | None = None,
) -> Found:
    """As :func:`repairs`, but the problems of the codes of ``count_only`` that always have a repair
    (:data:`ALWAYS_REPAIRED`) are only counted (``Found.counted``): building the repair of each of a
    damaged file's thousands of orphans, only to count them, costs more than reading the file.
    Those of the other codes are built as usual (whether they have one depends on the line)."""
    if doc.other_bom_in_text() is not None:
        # bytes of another encoding, read from disk: their lines are no lines of pi's to mend
        return Found(_reencoding(doc) if first_line <= 0 <= last_line else [])
    uncounted = count_only & ALWAYS_REPAIRED
    counted: set[tuple[str, int]] = set()
    out = [
        r
        for d in file_diagnostics(doc, first_line, last_line)
        if first_line <= d.line <= last_line
        for r in _file_repairs(doc, d, path, cwd)
    ]
    glued: dict[str, tuple[LineInfo, tuple[Piece, ...]]] | None = None
    breakers: Breakers = {}
    kept_copies: KeptCopies = {}
    for info, p in reported_problems(doc, first_line, last_line):  # none for what is not reported
        if p.code in uncounted:
            counted.add((p.code, info.line))
        elif p.code == codes.DANGLING_PARENT:
            if glued is None:
                glued = glued_entries(doc)
            out.extend(_orphan_repairs(doc, info, glued))
        else:
            out.extend(_line_repairs(doc, info, p, path, breakers, kept_copies))
    return Found(out, counted)


def _line_repairs(
    doc: SessionDocument,
    info: LineInfo,
    p: Problem,
    path: str | None,
    breakers: Breakers,
    kept_copies: KeptCopies,
) -> list[Repair]:
    """The repairs of problem ``p`` of line ``info`` (but a missing parent's)."""
    if p.code == codes.GLUED_LINES and p.pieces is not None:
        return _split_glued(info, p.pieces)
    if p.code == codes.PARENT_CYCLE:
        return _cycle_repairs(doc, info, breakers)
    if p.code == codes.ORPHAN_TOOL_RESULT:
        return _orphan_result_repairs(doc, info)
    if p.code == codes.DUPLICATE_ID:
        return _remove_repeated_line(doc, info, kept_copies)
    if p.code == codes.INVALID_JSON and L.only_nul_bytes(info.raw):
        return [_remove_nul_bytes(doc, info)]
    if p.code == codes.HUGE_IMAGE and p.path is not None:
        return [_extract_image(doc, info, p.path, path)]
    return []


#: the bytes of the copies pi's index keeps, each read once in a pass (a crash loop's thousands of
#: copies of a line are each compared with the same kept one), without a final "\r"
KeptCopies = dict[LineInfo, bytes]


def _remove_repeated_line(doc: SessionDocument, info: LineInfo, kept_copies: KeptCopies) -> list[Repair]:
    """An entry whose later copy, byte for byte, pi's index keeps (a write made twice): this line
    removed, which loses nothing and leaves pi's tree and leaf as they were. None for entries that
    share an id but differ: which one is right is the user's to say."""
    same = doc.tree.by_id.get(info.key)
    kept = same[-1] if same else None
    if kept is None or kept is info or abs(kept.byte_length - info.byte_length) > 1:  # (a "\r" aside)
        return []
    kept_bytes = kept_copies.get(kept)
    if kept_bytes is None:
        kept_bytes = kept_copies[kept] = kept.raw.removesuffix(b"\r")
    if kept_bytes != info.raw.removesuffix(b"\r"):
        return []
    n = info.line
    return [
        Repair(
            f"Remove this line: line {doc.line_number(kept.line)} holds the same entry, byte for byte (the copy pi keeps)",
            codes.DUPLICATE_ID,
            n,
            lambda: [_delete_line(doc, n)],
            preferred=True,
            key=(codes.DUPLICATE_ID, n),
        )
    ]


def _remove_nul_bytes(doc: SessionDocument, info: LineInfo) -> Repair:
    """A line of NUL bytes (a crash's zero-filled tail) deleted: it holds nothing to lose. Unended,
    it is the file's last line: the newline before it stays, to end the line before."""
    n = info.line
    last = n + 1 == doc.line_count
    return Repair(
        "Remove the NUL bytes (they hold nothing)",
        codes.INVALID_JSON,
        n,
        lambda: [TextEdit(n, 0, n, len(info.raw), "") if last else _delete_line(doc, n)],
        preferred=True,
        key=(codes.INVALID_JSON, n),
    )


def _made_to_the_file(title: str, code: str) -> Repair:
    """A repair of what the editor's text does not hold (a byte order mark, the file's encoding):
    made to the file itself (:attr:`Repair.on_disk`), no text edit."""
    return Repair(title, code, 0, lambda: [], preferred=True, key=(code, "file"), on_disk=True)


def _reencoding(doc: SessionDocument) -> list[Repair]:
    """The file in UTF-8, for a file read from disk in the UTF-16 or UTF-32 its mark names (none
    when it does not decode whole: nothing is guessed)."""
    utf8 = utf8_of_marked(doc.data())
    if utf8 is None:
        return []
    last = doc.line_count - 1
    text = utf8.decode("utf-8")
    return [
        Repair(
            "Re-encode the file as UTF-8",
            codes.NOT_UTF8,
            0,
            lambda: [TextEdit(0, 0, last, len(doc.lines[last].raw), text)],
            preferred=True,
            key=(codes.NOT_UTF8,),
        )
    ]


def _orphan_repairs(
    doc: SessionDocument, info: LineInfo, glued: dict[str, tuple[LineInfo, tuple[Piece, ...]]]
) -> list[Repair]:
    """Repairs of an entry whose parent is missing."""
    holder = glued.get(info.parent_id) if type(info.parent_id) is str else None
    if holder is not None:
        # the parent is not gone, only unreadable: splitting its line beats re-parenting
        return [_split_for_orphan(doc, info, *holder), replace(_reparent_orphan(doc, info), preferred=False)]
    return [_reparent_orphan(doc, info)]


def _file_repairs(doc: SessionDocument, d: Diagnostic, path: str | None, cwd: str | None) -> list[Repair]:
    line = d.line
    if d.code == codes.TRUNCATED_LAST_LINE:
        n = line
        return [
            Repair(
                "Remove the truncated last line",
                d.code,
                line,
                lambda: [TextEdit(n, 0, n, len(doc.lines[n].raw), "")],
                preferred=True,
                key=(d.code, n),
            )
        ]
    if d.code == codes.MISSING_HEADER:
        if not any(type(info.etype) is str and info.etype in ENTRY_TYPES for info in doc.lines):
            return []  # no line of a pi entry: a JSONL file of something else, not a session to mend
        return [
            Repair(
                "Insert a session header",
                d.code,
                line,
                lambda: [_header_insert(doc, path, cwd)],
                preferred=True,
                key=(d.code,),
            )
        ]
    if d.code == codes.HEADER_NOT_FIRST:
        n = line
        return [
            Repair(
                "Move the session header to the first line",
                d.code,
                line,
                lambda: _move_header(doc, n),
                preferred=True,
                key=(d.code, n),
                restores_header=True,
            )
        ]
    if d.code == codes.DUPLICATE_HEADER:
        n = line
        return [
            Repair(
                "Remove the duplicate session header",
                d.code,
                line,
                lambda: [_delete_line(doc, n)],
                preferred=True,
                key=(d.code, n),
            )
        ]
    if d.code == codes.NOT_UTF8:  # (an editor's decoded text: the file's bytes are read for it)
        return [_made_to_the_file("Save the file as UTF-8", d.code)]
    if d.code == codes.BOM and doc.has_bom():
        return [
            Repair(
                "Remove the byte order mark",
                d.code,
                0,
                lambda: [TextEdit(0, 0, 0, len(BOM_BYTES), "")],
                preferred=True,
                key=(d.code,),
            )
        ]
    if d.code == codes.BOM:
        return [
            _made_to_the_file("Remove the byte order mark from the file (saved as UTF-8 without BOM)", d.code)
        ]
    if d.code == codes.OLD_VERSION:
        return [
            Repair(
                "Migrate to version 3 (rewrite the file as pi would)",
                d.code,
                line,
                lambda: [migration_edit(doc)],
                key=(d.code,),
                streamed=lambda: StreamedEdit(migration_range(doc), lambda: migrated_chunks(doc)),
            )
        ]
    return []


# --------------------------------------------------------------------------------------------
# header
# --------------------------------------------------------------------------------------------

_FILE_NAME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)_(.+)\.jsonl")


def header_for(doc: SessionDocument, path: str | None, cwd: str | None = None) -> dict[str, Any]:
    """The header pi would have written: id and time from pi's file name when it has that form,
    else a fresh UUIDv7 and the first entry's time; cwd from the session directory's name (else
    the directory the file is in). Without a file (an editor's untitled document), the cwd is
    ``cwd`` (an editor's workspace folder) or, without one, this process's working directory, as
    pi writes its own. Version 3, unless no entry has an id: then the version 1 header pi wrote
    before ids, so that pi's migration gives the entries their ids and chain."""
    session_id = uuid7()
    timestamp = None
    if not path:
        cwd = cwd or current(None).cwd  # ("" when the process's was removed)
    else:
        path = os.path.abspath(path)
        name = os.path.basename(path)
        m = _FILE_NAME.fullmatch(name)
        if m:
            t = m.group(1)
            timestamp = f"{t[:13]}:{t[14:16]}:{t[17:19]}.{t[20:23]}Z"
            session_id = m.group(2)
        folder = os.path.basename(os.path.dirname(path))
        if folder.startswith("--") and folder.endswith("--") and len(folder) > 4:
            cwd = "/" + folder[2:-2].replace("-", "/")  # lossy: '-' in names cannot be told apart
        else:
            cwd = os.path.dirname(path)
    entries = list(doc.entries())
    if timestamp is None:
        first = next((e for e in entries if isinstance(e.timestamp, str)), None)
        timestamp = first.timestamp if first is not None else now_iso()
    if entries and all(e.id is ABSENT for e in entries):  # version 1 entries: no version written
        return {"type": "session", "id": session_id, "timestamp": timestamp, "cwd": cwd}
    return {"type": "session", "version": 3, "id": session_id, "timestamp": timestamp, "cwd": cwd}


def _header_insert(doc: SessionDocument, path: str | None, cwd: str | None) -> TextEdit:
    start = len(BOM_BYTES) if doc.has_bom() else 0
    return TextEdit(0, start, 0, start, dumps(header_for(doc, path, cwd)) + _line_break(doc.lines[0].raw))


def _move_header(doc: SessionDocument, n: int) -> list[TextEdit]:
    text = doc.line_text(n).removeprefix("\ufeff")
    start = len(BOM_BYTES) if doc.has_bom() else 0
    return [TextEdit(0, start, 0, start, text + "\n"), _delete_line(doc, n)]


# --------------------------------------------------------------------------------------------
# migration (v1/v2 -> v3), exactly as pi rewrites the file, keeping unparsable lines (D7)
# --------------------------------------------------------------------------------------------


def migrated_text(doc: SessionDocument) -> str:
    """The file as pi's migration rewrite leaves it, with D7: file entries re-serialized after
    migration, other non-blank lines (malformed, non-objects, falsy values) kept verbatim in place,
    JS-blank lines dropped."""
    return "".join(migrated_lines(doc))


def migrated_lines(doc: SessionDocument) -> Iterator[str]:
    """The lines of :func:`migrated_text`, each with its line break, made one at a time, one value
    parsed and migrated at a time (:class:`StreamedMigration`): a session of any size is migrated in
    little memory. A version 1 file whose migration needs a later value (see
    :class:`LaterValueNeeded`: pi writes none) is found before any line is made, and its values are
    migrated by links drawn first (:func:`_migrated_by_drawn_links`), a value at a time too."""
    header = _first_header(doc)
    migration = StreamedMigration(header)
    alone = migrates_each_value_alone(migration.version)
    if not alone and _needs_later_value(doc, header):
        yield from _migrated_by_drawn_links(doc, header)
        return
    # (from version 2 a non-object's position counts for nothing: it is not parsed)
    for kind, item in _migration_slots(doc, parse_kept_non_objects=not alone):
        if kind == _VALUE:
            migration.migrate(item)
            yield dumps(item) + "\n"
        elif kind == _KEPT_TEXT:
            migration.migrate(item[1])
            yield item[0] + "\n"
        else:
            yield item + "\n"


def _first_header(doc: SessionDocument) -> dict[str, Any]:
    """The file's first header value, the one its migration takes its version and ids from (an
    empty object when it has none: version 1, no id)."""
    for kind, item in _migration_slots(doc, parse_kept_non_objects=False):
        if kind == _VALUE and isinstance(item, dict) and item.get("type") == "session":
            return item
    return {}


def _needs_later_value(doc: SessionDocument, header: dict[str, Any]) -> bool:
    """Whether the streamed migration of version 1 ``doc``, whose first header is ``header``,
    raises :class:`LaterValueNeeded`: found by migrating, in place of each value, the little its
    links depend on (its type and id from the line's facts, a compaction parsed whole), so that
    nothing is held."""
    check = StreamedMigration(header)
    try:
        for info, text in _migration_lines(doc):
            if info.kind in (L.HEADER, L.ENTRY):
                check.migrate(_link_facts(info, text))
            elif info.kind == L.NON_OBJECT and info.kept:
                check.migrate(True)  # (a position, no id: D3)
    except LaterValueNeeded:
        return True
    return False


def _link_facts(info: LineInfo, text: str) -> Any:
    """What the version 1 links of the value on an object line (``info``, its ``text``) depend on:
    its type and id, and a compaction's ``firstKeptEntryIndex`` (the compaction is parsed)."""
    if info.etype == "compaction":
        return parse(text)
    facts = {"type": info.etype, "id": info.id}
    return {key: value for key, value in facts.items() if value is not ABSENT}


def migrated_chunks(doc: SessionDocument) -> Iterator[bytes]:
    """:func:`migrated_lines` in UTF-8, a MB or so at a time (a writer's chunks)."""
    chunk: list[bytes] = []
    size = 0
    for line in migrated_lines(doc):
        data = line.encode("utf-8", "surrogatepass")
        chunk.append(data)
        size += len(data)
        if size >= _MIGRATED_CHUNK:
            yield b"".join(chunk)
            chunk, size = [], 0
    if chunk:
        yield b"".join(chunk)


_MIGRATED_CHUNK = 1024 * 1024

# what a line of a file is to its migration: a value to migrate and write again, a text written as
# it is, or a text written as it is whose value counts as a version 1 position (D3)
_VALUE, _TEXT, _KEPT_TEXT = "value", "text", "kept text"


def _migration_lines(doc: SessionDocument) -> Iterator[tuple[LineInfo, str]]:
    """The lines of ``doc`` its migration takes, in order, each with its text: its values (objects,
    kept non-objects), each a version 1 position, and the lines it keeps as they are (malformed,
    falsy values); not its blank ones."""
    lines = doc.lines
    count = len(lines) - (1 if lines and lines[-1].raw == b"" else 0)
    for info in lines[:count]:
        text = info.raw.decode("utf-8", doc.errors)
        if info.bom:
            text = text[1:]
        if not is_js_blank(text):
            yield info, text


def _migration_slots(
    doc: SessionDocument, *, parse_kept_non_objects: bool = True
) -> Iterator[tuple[str, Any]]:
    """Each line of ``doc`` its migration takes (:func:`_migration_lines`) as it takes it, in order:
    (_VALUE, its value) for an object line, else (_TEXT, its text), or (_KEPT_TEXT, (its text, its
    value)) for a non-object pi keeps (with ``parse_kept_non_objects``: only a version 1 migration
    counts them)."""
    for info, text in _migration_lines(doc):
        if info.kind in (L.HEADER, L.ENTRY):
            try:
                yield _VALUE, parse(text)
            except JsonSyntaxError:  # cannot happen for an object line; keep it verbatim
                yield _TEXT, text
        elif info.kind == L.NON_OBJECT and info.kept and parse_kept_non_objects:
            yield _KEPT_TEXT, (text, parse(text))
        else:
            yield _TEXT, text


def _positions(doc: SessionDocument) -> Iterator[tuple[str, Any]]:
    """The version 1 positions of ``doc``'s values (:func:`_migration_slots`' values and kept
    non-objects), in order, each its kind and the id it carries, from the lines' facts alone (no
    line is read again)."""
    for info in doc.lines:
        is_object = info.kind in (L.HEADER, L.ENTRY)
        kind = version_1_position(info.kept, is_object, info.etype)
        if kind is not None:
            yield kind, info.id if is_object else ABSENT


def _migrated_by_drawn_links(doc: SessionDocument, header: dict[str, Any]) -> Iterator[str]:
    """:func:`migrated_lines` of version 1 ``doc`` (whose first header is ``header``) whose migration
    needs later values: every value's link is drawn first from the lines' facts (each value's kind
    and the id it carries: :class:`DrawnVersionOneLinks`), as the migration of the values held
    together draws them, then each value is parsed, migrated and written, one at a time."""
    links = DrawnVersionOneLinks.of_positions(header.get("id", ABSENT), list(_positions(doc)))
    position = 0
    for kind, item in _migration_slots(doc):
        if kind == _VALUE:
            links.migrate(item, position)
            position += 1
            yield dumps(item) + "\n"
        elif kind == _KEPT_TEXT:
            position += 1  # counts as a v1 position (D3) but is written verbatim
            yield item[0] + "\n"
        else:
            yield item + "\n"


def migration_edit(doc: SessionDocument) -> TextEdit:
    return replace(migration_range(doc), new_text=migrated_text(doc))


def migration_range(doc: SessionDocument) -> TextEdit:
    """What a migration replaces, the whole text (with no new text: see :func:`migrated_chunks`)."""
    last = doc.line_count - 1
    return TextEdit(0, 0, last, len(doc.lines[last].raw), "")


# --------------------------------------------------------------------------------------------
# tree repairs
# --------------------------------------------------------------------------------------------


def nearest_surviving_ancestor(doc: SessionDocument, orphan: LineInfo) -> LineInfo | None:
    """Where an entry whose parent vanished most likely belonged.

    pi appends each entry after its parent, so the missing parent (and its own ancestors) came
    before the first entry that names it. The nearest surviving ancestor is taken to be the closest
    entry before that point which is not a descendant of the orphan (which would make a cycle).
    """
    tree = doc.tree
    siblings = tree.children.get(orphan.pkey, [orphan])
    first = min((s.line for s in siblings), default=orphan.line)
    for n in range(first - 1, -1, -1):
        candidate = doc.lines[n]
        if candidate.kind != L.ENTRY or candidate not in tree.members:
            continue
        if tree.resolve(candidate.key) is not candidate or not isinstance(candidate.id, str):
            continue
        if orphan in set(tree.walk_up(candidate)):
            continue
        return candidate
    return None


def _replace_value(info: LineInfo, path: Path, value: Any) -> list[TextEdit]:
    span = value_span(info.raw, path)
    if span is None:
        return []
    return [TextEdit(info.line, span[0], info.line, span[1], dumps(value))]


def _set_parent(info: LineInfo, parent_id: Any) -> list[TextEdit]:
    """``parentId`` of the line's entry set to ``parent_id``: its value replaced or, in a line that
    has none (an entry pi would take for a root), the member added where pi writes it: after
    ``id`` (else after ``type``, else first)."""
    edits = _replace_value(info, ("parentId",), parent_id)
    if edits:
        return edits
    member = f'"parentId":{dumps(parent_id)}'
    for before in ("id", "type"):
        span = value_span(info.raw, (before,))
        if span is not None:
            return [TextEdit(info.line, span[1], info.line, span[1], "," + member)]
    whole = value_span(info.raw, ())
    if whole is None or info.raw[whole[0] : whole[0] + 1] != b"{":
        return []
    start = whole[0] + 1
    empty = info.raw[start : whole[1] - 1].strip(b" \t\r") == b""
    return [TextEdit(info.line, start, info.line, start, member if empty else member + ",")]


def _entries(count: int) -> str:
    return "entry" if count == 1 else "entries"


def _reparent_orphan(doc: SessionDocument, info: LineInfo) -> Repair:
    """Every entry naming the same missing parent moves together: they were siblings."""
    siblings = list(doc.tree.children.get(info.pkey, [info]))
    target = nearest_surviving_ancestor(doc, info)
    new_parent = target.id if target is not None else None
    others = len(siblings) - 1
    more = f" (with {others} more {_entries(others)} naming `{info.parent_id}`)" if others else ""

    def edits() -> list[TextEdit]:
        return [e for s in siblings for e in _replace_value(s, ("parentId",), new_parent)]

    key = (codes.DANGLING_PARENT, info.line)
    if target is None:
        return Repair(
            f"Make this entry a root (parentId null): no earlier entry survives{more}",
            codes.DANGLING_PARENT,
            info.line,
            edits,
            key=key,
        )
    title = f"Re-parent to `{target.id}` (line {doc.line_number(target.line)}), the nearest surviving ancestor{more}"
    return Repair(title, codes.DANGLING_PARENT, info.line, edits, preferred=True, key=key)


# --------------------------------------------------------------------------------------------
# lines glued together
# --------------------------------------------------------------------------------------------


def _split_edits(info: LineInfo, pieces: tuple[Piece, ...], keep_cut_off: bool) -> list[TextEdit]:
    """Each kept piece on a line of its own. A newline goes before every kept piece that follows
    another kept one; a dropped cut-off piece is replaced by the newline its neighbours need (a
    cut-off piece is always followed by a whole one or the end of the line), so no two edits touch.
    The newline is the line's own (``\r\n`` in a file of them), and a dropped last piece leaves it."""
    n = info.line
    raw = info.raw  # (read once: a line of a file on disk is read again each time it is asked)
    newline = _line_break(raw)
    end = text_end(raw)
    edits: list[TextEdit] = []
    kept_before = False
    for i, piece in enumerate(pieces):
        if piece.whole or keep_cut_off:
            after_dropped = i > 0 and not (pieces[i - 1].whole or keep_cut_off)
            if kept_before and not after_dropped:
                edits.append(TextEdit(n, piece.start, n, piece.start, newline))
            kept_before = True
        else:
            between = kept_before and i + 1 < len(pieces)
            edits.append(TextEdit(n, piece.start, n, min(piece.end, end), newline if between else ""))
    return edits


def _line_break(raw: bytes) -> str:
    """The line break that ends the line of ``raw`` (a ``\r\n`` line holds the ``\r``)."""
    return "\r\n" if raw.endswith(b"\r") else "\n"


def _split_glued(info: LineInfo, pieces: tuple[Piece, ...]) -> list[Repair]:
    n = info.line
    count = len(pieces)
    header = holds_header(pieces)
    out = [
        Repair(
            f"Split the glued line into its {count} lines",
            codes.GLUED_LINES,
            n,
            lambda: _split_edits(info, pieces, keep_cut_off=True),
            preferred=True,
            key=(codes.GLUED_LINES, n, "split"),
            restores_header=header,
            restores_entries=True,
        )
    ]
    cut_off = sum(1 for p in pieces if not p.whole)
    if cut_off:
        what = "part" if cut_off == 1 else f"{cut_off} parts"
        out.append(
            Repair(
                f"Split the glued line and remove the cut-off {what}",
                codes.GLUED_LINES,
                n,
                lambda: _split_edits(info, pieces, keep_cut_off=False),
                key=(codes.GLUED_LINES, n, "split-drop"),
                restores_header=header,
                restores_entries=True,
            )
        )
    return out


def _split_for_orphan(
    doc: SessionDocument, orphan: LineInfo, holder: LineInfo, pieces: tuple[Piece, ...]
) -> Repair:
    """The fix for an entry whose parent sits inside lines glued together: split that line."""
    return Repair(
        f"Split line {doc.line_number(holder.line)}, where the parent `{orphan.parent_id}` is glued to another line",
        codes.DANGLING_PARENT,
        orphan.line,
        lambda: _split_edits(holder, pieces, keep_cut_off=True),
        preferred=True,
        key=(codes.DANGLING_PARENT, orphan.line, "split-glued"),
        restores_header=holds_header(pieces),
        restores_entries=True,
    )


# --------------------------------------------------------------------------------------------
# tool results without their call on the path
# --------------------------------------------------------------------------------------------


def results_end(doc: SessionDocument, assistant: LineInfo) -> LineInfo:
    """Where the next result of ``assistant``'s calls belongs: pi chains the results of one
    assistant message one under the other, so the end of that chain (or the message itself)."""
    tree = doc.tree
    calls = set(assistant.call_ids)
    end = assistant
    seen = {assistant}
    while True:
        nxt = next(
            (k for k in tree.kids(end) if k.result_call_id in calls and k not in seen),
            None,
        )
        if nxt is None:
            return end
        seen.add(nxt)
        end = nxt


def _orphan_result_repairs(doc: SessionDocument, result: LineInfo) -> list[Repair]:
    """Move the result to the assistant message that made the call (on another branch), when there
    is one; or remove it (what it answers is gone), its children moving up to its parent."""
    tree = doc.tree
    out: list[Repair] = []
    call = result.result_call_id
    callers = [a for a in tree.calls_by_id.get(call, ()) if isinstance(a.id, str)] if call else []
    if callers:
        caller = callers[-1]
        target = results_end(doc, caller)
        if (
            isinstance(target.id, str)
            and tree.resolve(target.key) is target  # else its id names another entry (a duplicate)
            and not strict_equal(result.parent_id, target.id)  # else the move changes nothing
            and not tree.is_ancestor(result, target)
        ):
            where = (
                "" if target is caller else f", after its other results (line {doc.line_number(target.line)})"
            )
            out.append(
                Repair(
                    f"Move under the assistant message that made the call (line {doc.line_number(caller.line)}{where})",
                    codes.ORPHAN_TOOL_RESULT,
                    result.line,
                    lambda: _set_parent(result, target.id),
                    preferred=True,
                    key=(codes.ORPHAN_TOOL_RESULT, result.line, "move"),
                )
            )
    note = _result_as_note(result)
    if note is not None:
        out.append(
            Repair(
                "Keep it as a custom message: its text stays in the context, the tool result in its details",
                codes.ORPHAN_TOOL_RESULT,
                result.line,
                note,
                preferred=not out,  # (a move, when there is one, keeps it a tool result)
                key=(codes.ORPHAN_TOOL_RESULT, result.line, "note"),
            )
        )
    children = [k for k in tree.kids(result) if k is not result]  # (its own parent: a cycle)
    parent = _parent_without(doc, result)
    new_parent = parent.id if parent is not None and isinstance(parent.id, str) else None
    moved = ""
    if len(children) == 1:
        moved = "; its child entry moves up to its parent"
    elif children:
        moved = f"; its {len(children)} child entries move up to its parent"

    def remove() -> list[TextEdit]:
        edits = [
            e
            for child in children
            if not strict_equal(child.parent_id, new_parent)  # already named, as a duplicate id
            for e in _replace_value(child, ("parentId",), new_parent)
        ]
        return [*edits, _delete_line(doc, result.line)]

    out.append(
        Repair(
            f"Remove this tool result{moved}",
            codes.ORPHAN_TOOL_RESULT,
            result.line,
            remove,
            key=(codes.ORPHAN_TOOL_RESULT, result.line, "remove"),
        )
    )
    return out


# the customType of a tool result kept as a custom message (pi renders an unknown type plainly)
ORPHAN_RESULT_TYPE = "orphan-tool-result"
# the members of an entry's envelope, written after a custom message's own (pi's key order)
_ENVELOPE = ("id", "parentId", "timestamp")


def _result_as_note(result: LineInfo) -> Callable[[], list[TextEdit]] | None:
    """The edit that turns the tool result on ``result``'s line into a ``custom_message`` in its
    place (same id, parent and time: its children stay where they are): its content is what the
    model then reads as a user message, the rest of the message (call id, tool name, error flag,
    time) is kept in ``details``, which pi sends no model, and so is content that is neither text
    nor blocks: nothing is lost. Other members of the line stay. None when the line is not an
    object holding a message object."""
    try:
        value = parse_bytes(result.raw)
    except (JsonSyntaxError, RecursionError):
        return None
    message = value.get("message") if isinstance(value, dict) else None
    span = value_span(result.raw, ())
    if not isinstance(message, dict) or span is None:
        return None
    content = message.get("content")
    if isinstance(content, (str, list)):  # kept once, as the note's content
        message = {key: member for key, member in message.items() if key != "content"}
    else:
        content = ""
    note: dict[str, Any] = {
        "type": "custom_message",
        "customType": ORPHAN_RESULT_TYPE,
        "content": content,
        "display": True,
        "details": {"toolResult": message},
    }
    note.update((key, value[key]) for key in _ENVELOPE if key in value)
    note.update((key, member) for key, member in value.items() if key not in note and key != "message")
    text = dumps(note)
    return lambda: [TextEdit(result.line, span[0], result.line, span[1], text)]


def _parent_without(doc: SessionDocument, e: LineInfo) -> LineInfo | None:
    """The parent of ``e`` once its line is gone: what its ``parentId`` names then (another entry
    with the same id, when it names its own), unless that descends from ``e`` (a cycle through
    ``e``, which its children would close again)."""
    tree = doc.tree
    if e.pkey is None:
        return None
    same = [x for x in tree.by_id.get(e.pkey, ()) if x is not e]
    parent = same[-1] if same else None
    return None if parent is None or tree.is_ancestor(e, parent) else parent


# The entry each cycle is broken at, found once per call of repairs() (every line of a cycle offers
# the same break; a cycle's members share its tuple): keyed by the cycle's first member.
Breakers = dict[LineInfo, LineInfo | None]


def _cycle_repairs(doc: SessionDocument, info: LineInfo, breakers: Breakers) -> list[Repair]:
    """Repairs of ``info``, an entry in a parent cycle: the cycle broken at its link pi cannot have
    written (preferred, the same on every line of the cycle, so that it is made once), and the
    cycle broken at this entry instead."""
    cycle = doc.tree.cycles.get(info) or (info,)  # (an entry that is its own parent: a cycle alone)
    first = cycle[0]
    if first not in breakers:
        breakers[first] = _cycle_breaker(doc, cycle)
    breaker = breakers[first]
    out = [] if breaker is None else [_break_cycle_at(doc, breaker, info.line)]
    if breaker is not info or nearest_surviving_ancestor(doc, info) is not None:
        out.append(_make_root(info))
    return out


def _cycle_breaker(doc: SessionDocument, cycle: tuple[LineInfo, ...]) -> LineInfo | None:
    """The entry of ``cycle`` whose parent link points forward in the file (the first one, if
    several do): pi appends an entry after its parent, so that link was not written by pi."""
    forward = [m for m in cycle if (parent := doc.tree.parent(m)) is not None and parent.line >= m.line]
    return min(forward, key=lambda m: m.line, default=None)


def _break_cycle_at(doc: SessionDocument, breaker: LineInfo, line: int) -> Repair:
    """``breaker`` given the entry written before it (where pi would have hung it), or made a root
    when there is none. Offered on ``line``, one of the cycle's."""
    target = nearest_surviving_ancestor(doc, breaker)
    at = f"Break the cycle at line {doc.line_number(breaker.line)}"
    if target is None:
        title = f"{at}: make `{breaker.id}` a root (parentId null), no entry is before it"
    else:
        title = f"{at}: re-parent `{breaker.id}` to `{target.id}` (line {doc.line_number(target.line)}), the entry before it"
    new_parent = None if target is None else target.id
    return Repair(
        title,
        codes.PARENT_CYCLE,
        line,
        lambda: _replace_value(breaker, ("parentId",), new_parent),
        preferred=True,
        key=(codes.PARENT_CYCLE, line, "break", breaker.line),
    )


def _make_root(info: LineInfo) -> Repair:
    return Repair(
        "Break the cycle here: make this entry a root (parentId null)",
        codes.PARENT_CYCLE,
        info.line,
        lambda: _replace_value(info, ("parentId",), None),
        key=(codes.PARENT_CYCLE, info.line),
    )


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------

_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "image/bmp": "bmp",
}


def image_plan(
    doc: SessionDocument, info: LineInfo, block_path: Path, session_path: str | None
) -> ImageExtraction | None:
    """What moving the image block at ``block_path`` out of the file means: the file to write and
    the placeholder text block that replaces the image in the line."""
    from .preview import full_value

    value = full_value(info, doc.errors)
    block: Any = value
    for part in block_path:
        block = block[part] if _has(block, part) else None
    data = get(block, "data")
    mime = get(block, "mimeType")
    if not isinstance(data, str):
        return None
    decoded = _strict_base64(data)
    if decoded is None:
        return None
    span = value_span(info.raw, block_path)
    if span is None:
        return None
    stem = os.path.splitext(os.path.basename(session_path))[0] if session_path else "session"
    ext = _EXTENSIONS.get(mime if isinstance(mime, str) else "", "bin")
    entry_id = info.id if isinstance(info.id, str) else f"line{info.line + 1}"
    file_name = _image_file_name(stem, entry_id, block_path[-1], ext)
    placeholder = {
        "type": "text",
        "text": f"[image moved out of the session: {file_name} ({mime if isinstance(mime, str) else 'image'}, {human_size(len(decoded))})]",
    }
    edit = TextEdit(info.line, span[0], info.line, span[1], dumps(placeholder))
    return ImageExtraction(file_name, decoded, edit)


def _strict_base64(data: str) -> bytes | None:
    """The bytes ``data`` encodes, or None unless it is one plain base64 string that encodes them
    exactly: the placeholder replaces the whole string, so the file must hold every byte of it. A
    lenient decode drops characters outside the alphabet (base64url's '-' and '_') and stops at
    the first padding (two strings written one after the other): the rest would be lost."""
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded if base64.b64encode(decoded) == data.encode("ascii") else None


# What a part of an image's file name may hold: the id and the block's place come from the file's
# content, so a hostile file could name "../../elsewhere".
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NAME_PART_CHARS = 64


def _name_part(text: str) -> str:
    """``text`` as one harmless piece of a file name: runs of anything but letters, digits, '_' and
    '-' become one '_' (no '/', no '.', no NUL, no control character), cut to a bounded length."""
    return _UNSAFE_NAME_CHARS.sub("_", text[: _NAME_PART_CHARS * 4])[:_NAME_PART_CHARS] or "_"


# The longest file name the system takes (NAME_MAX, in bytes), and what a name cut to fit keeps
# free for the "-<n>" a taken name gets.
_NAME_MAX = 255
_CUT_NAME_BYTES = _NAME_MAX - 8


def _image_file_name(stem: str, entry_id: str, place: Any, ext: str) -> str:
    """``<session name>.<entry id>.<block index>.<ext>``: a plain name, no directory, whatever the
    file holds. The session's own name is the user's (only a '/' could not be in it anyway); a
    name longer than the system takes has the session's name cut (its end dropped) to fit."""
    rest = f".{_name_part(entry_id)}.{_name_part(str(place))}.{ext}"
    name = stem + rest
    if len(name.encode("utf-8", "surrogateescape")) <= _NAME_MAX:
        return name
    room = max(_CUT_NAME_BYTES - len(rest.encode()), 1)
    cut = stem.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore") or "session"
    return cut + rest


def _has(container: Any, part: Any) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(part, int) and isinstance(container, list) and 0 <= part < len(container)


def _extract_image(
    doc: SessionDocument, info: LineInfo, block_path: Path, session_path: str | None
) -> Repair:
    p = block_path

    def plan() -> ImageExtraction | None:
        return image_plan(doc, info, p, session_path)

    def edits() -> list[TextEdit]:
        extraction = plan()
        return [extraction.edit] if extraction is not None else []

    return Repair(
        "Move the image out of the file (write it next to the session, leave a placeholder)",
        codes.HUGE_IMAGE,
        info.line,
        edits,
        image=plan,
        key=(codes.HUGE_IMAGE, info.line, *block_path),
    )


__all__ = [
    "ALWAYS_REPAIRED",
    "Found",
    "ImageExtraction",
    "Repair",
    "StreamedEdit",
    "TextEdit",
    "header_for",
    "image_plan",
    "migrated_chunks",
    "migrated_lines",
    "migrated_text",
    "nearest_surviving_ancestor",
    "problem_span",
    "repairs",
    "repairs_counting",
]
