"""One physical line: what it is (its envelope) and what is wrong with it on its own.

:func:`scan_line` is the hot loop of analysing a file: a line that decodes as a typed record
(``format.records``) in one msgspec pass yields its envelope (type, id, parentId, timestamp, role,
tool-call ids, references) and, apart from timestamps, stop reasons and image sizes, has no field
problems. Only lines msgspec rejects take the slow path: the exact ``JSON.parse`` (for the error
column), then :func:`analysis.fields.check_fields` naming every problem.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Final, cast

import msgspec

from ..format import records as rec
from ..format.dates import ms
from ..format.glued import GluedRead, Piece, glued_read, holds_header, piece_words
from ..format.jsjson import JsonSyntaxError, parse
from ..format.jstext import as_displayed, is_js_blank
from ..format.jsvalue import ABSENT, get, index_key, truthy
from ..session.projection import is_edit_replacement
from . import codes
from .fields import Path, check_fields, json_kind
from .positions import char_end, text_end

# line kinds
BLANK: Final = 0  # empty or JS whitespace only
MALFORMED: Final = 1  # JSON.parse fails
NON_OBJECT: Final = 2  # valid JSON, not an object (D3); ``kept`` when truthy
HEADER: Final = 3  # an object with type "session"
ENTRY: Final = 4  # any other object

#: base64 characters from which an inline image is reported (about 750 KB of image data)
HUGE_IMAGE_CHARS: int = 1_000_000

# (ASCII: ``\d`` would take any script's digits, which JavaScript's Date does not read)
_CANONICAL_TIME = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)


@dataclass(slots=True, eq=False)
class Problem:
    """One thing wrong, placed on a line: at the value under ``path`` (its key when ``on_key``),
    or at an explicit byte ``span``, or (neither) on the whole line. ``related``: other lines that
    matter, ``notes``: places in this line that matter (byte spans), each with what is there."""

    code: str
    message: str
    path: Path | None = None
    span: tuple[int, int] | None = None
    on_key: bool = False
    v1_expected: bool = False
    related: tuple[tuple[LineInfo, str], ...] = ()
    missing: str | None = None  # the field a FIELD_MISSING problem is about
    resolved: tuple[int, int] | None = field(default=None, repr=False)  # cached byte span
    pieces: tuple[Piece, ...] | None = None  # of a GLUED_LINES problem: the glued lines
    notes: tuple[tuple[int, int, str], ...] = ()
    # of an INVALID_JSON problem: the parser ran out of text, so the line is the start of some
    # JSON text (what a write cut short leaves), not text with a wrong character in it
    ran_out: bool = False


class LineInfo:
    """The facts of one physical line; the document keeps one per line, renumbered on edits."""

    __slots__ = (
        "call_blocks",
        "call_ids",
        "etype",
        "id",
        "kept",
        "key",
        "kind",
        "line",
        "parent_id",
        "pkey",
        "problems",
        "raw",
        "ref",
        "result_call_id",
        "role",
        "source",
        "timestamp",
        "version",
    )

    def __init__(self, raw: bytes):
        self.raw = raw  # the line's bytes, without "\n"
        self.line = -1
        self.kind = BLANK
        self.kept = False  # a kept value of the file (docs/FORMAT.md §1.1): parses and is truthy
        self.etype: Any = ABSENT  # "type" of an object line
        self.id: Any = ABSENT
        self.key: Any = ABSENT  # index key of id (JS Map semantics)
        self.parent_id: Any = ABSENT
        self.pkey: Any = None  # index key of a truthy parentId, else None (the walk stops)
        self.timestamp: Any = ABSENT
        self.role: Any = ABSENT  # message.role of a message entry
        self.call_ids: tuple[str, ...] = ()  # toolCall ids of an assistant message
        self.call_blocks: tuple[int, ...] = ()  # their indices in message.content
        self.result_call_id: str | None = None  # toolCallId of a toolResult
        self.ref: Any = ABSENT  # targetId / firstKeptEntryId / fromId, by etype
        self.version: Any = ABSENT  # header version
        self.problems: tuple[Problem, ...] = ()

    #: where a line that reads its bytes again reads them (set on analysis.line_bytes.FileLineInfo only)
    source: Any
    #: the file's first line, read past its byte order mark (a :class:`BomLineInfo`): a class
    #: attribute, as a slot would cost every line for the one that can have it
    bom: bool = False

    def __repr__(self) -> str:
        return f"<LineInfo {self.line}: kind={self.kind} type={self.etype!r} id={self.id!r}>"

    @property
    def byte_length(self) -> int:
        """``len(raw)`` (a line of a file on disk answers without reading its bytes again)."""
        return len(self.raw)

    def last_bytes(self, count: int) -> bytes:
        """The last ``count`` bytes of ``raw`` or all of them (a line of a file on disk reads only
        those)."""
        return self.raw[-count:] if count > 0 else b""


class BomLineInfo(LineInfo):
    """The file's first line, which starts with a byte order mark its facts were read past."""

    __slots__ = ()
    bom = True


_decoder = msgspec.json.Decoder(rec.SessionLine)
_TAG_OF: dict[type, str] = {}
for _cls in (*rec.SessionLine.__args__, *rec.Message.__args__):
    _TAG_OF[_cls] = _cls.__struct_config__.tag
_IMAGE_CONTENT_ROLES = (rec.UserMessage, rec.ToolResultMessage, rec.CustomMessage, rec.HookMessage)
#: the field by which an entry of each type names another entry (``LineInfo.ref``)
REF_FIELD = {
    "label": "targetId",
    "context_edit": "targetId",
    "compaction": "firstKeptEntryId",
    "branch_summary": "fromId",
}
#: the fields a ``context_edit`` has beyond every entry's (what a release without edits ignores)
EDIT_FIELDS: Final = frozenset(
    f.encode_name for f in msgspec.structs.fields(rec.ContextEditEntry)
) - frozenset(f.encode_name for f in msgspec.structs.fields(rec.UnknownEntry))


_BLANK_PROBLEM = Problem(codes.BLANK_LINE, "blank line: pi never writes one and skips it")


_BOM = b"\xef\xbb\xbf"


def scan_line(
    raw: bytes, errors: str = "replace", first: bool = False, keep_timestamp: bool = True
) -> LineInfo:
    """Analyse one physical line (bytes without its "\\n"). ``errors``: how invalid UTF-8 decodes
    (``replace`` for files, as Node does; ``surrogatepass`` for text that came from an editor).

    ``first``: the file's first line, where a byte order mark is looked through (the document
    reports it once, PI014) instead of making the line invalid JSON.

    ``keep_timestamp``: False leaves the ``timestamp`` of an entry msgspec decodes (without a
    problem about it) unset, for a line that reads it again from its bytes when asked
    (:func:`timestamp_of`): a string per entry is much of what a large file's facts cost, and only
    hovers and repairs read it.
    """
    if first and raw.startswith(_BOM):
        info = scan_line(raw[3:], errors)
        info.raw = raw
        info.__class__ = BomLineInfo
        info.problems = tuple(_shifted(p, 3) for p in info.problems)
        return info
    info = LineInfo(raw)
    if not raw:
        info.problems = (_BLANK_PROBLEM,)
        return info
    try:
        record = _decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        _scan_slow(info, errors)
        return info
    _from_record(info, record, keep_timestamp)
    return info


def timestamp_of(raw: bytes | memoryview) -> Any:
    """The ``timestamp`` of a line msgspec decodes as a record, read again from its bytes (see
    ``keep_timestamp`` of :func:`scan_line`); ABSENT when they are no longer such a line (another
    process rewrote the file in place since it was read)."""
    try:
        return _plain(_decode_envelope(raw).timestamp)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return ABSENT


class _Envelope(msgspec.Struct):
    """Only what the tree and the line-local first pass need (see :func:`scan_envelope`)."""

    type: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    parentId: Any = msgspec.UNSET  # the JSON key
    timestamp: Any = msgspec.UNSET
    targetId: Any = msgspec.UNSET
    firstKeptEntryId: Any = msgspec.UNSET
    fromId: Any = msgspec.UNSET


_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_ENTRY_TYPES: Final = frozenset(_TAG_OF[c] for c in rec.SessionLine.__args__ if c is not rec.SessionHeader)
#: the entry types read by their envelope alone; a ``context_edit`` is always scanned in full (its
#: ``replacement`` decides whether it is an edit at all, and edits are few)
_ENVELOPE_TYPES: Final = _ENTRY_TYPES - {"context_edit"}
_MAX_SAFE = 2**53 - 1


def _plain(value: Any) -> Any:
    """msgspec's decoding of a JSON value, as JSON.parse would give it (big integers are doubles)."""
    if value is _UNSET:
        return ABSENT
    if type(value) is int and not -_MAX_SAFE <= value <= _MAX_SAFE:
        return float(value)
    return value


def scan_envelope(raw: bytes | memoryview) -> LineInfo | None:
    """The envelope facts of an ordinary entry line, without checking the rest of it, or None when
    the line needs :func:`scan_line` (anything else: not JSON, not an entry, a header, an unknown
    type, an envelope field missing, mistyped or a timestamp not in canonical form). ``raw``: the
    line's bytes, or a view of them (which the line's ``raw`` then is, for the caller to replace).

    A line returned here is *provisional*: its kind, id, parent, timestamp and reference are exact,
    its ``problems`` are empty although the full scan may find some below the envelope (field
    types, stop reasons, images), and its role and tool-call facts are not known yet. A full scan
    of it can report nothing in :data:`ENVELOPE_CODES` on an envelope path.
    """
    try:
        env = _decode_envelope(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    etype = env.type
    eid = env.id
    parent = env.parentId
    ts = env.timestamp
    if (
        etype.__class__ is not str
        or etype not in _ENVELOPE_TYPES
        or eid.__class__ is not str
        or (parent is not None and parent.__class__ is not str)
        or ts.__class__ is not str
        or _time_ok(ts) is None
    ):
        return None
    info = LineInfo(cast(bytes, raw))
    info.kept = True
    info.kind = ENTRY
    info.etype = etype
    info.id = info.key = eid
    info.parent_id = parent
    info.pkey = parent or None
    info.timestamp = ts
    if etype == "label":
        info.ref = _plain(env.targetId)
    elif etype == "compaction":
        info.ref = _plain(env.firstKeptEntryId)
    elif etype == "branch_summary":
        info.ref = _plain(env.fromId)
    return info


#: codes whose every occurrence a document of provisional lines (:func:`scan_envelope`) reports
#: exactly: file-level and syntax problems, and the tree problems that depend on ids and parents only
ENVELOPE_CODES: Final = frozenset(
    {
        codes.INVALID_JSON,
        codes.GLUED_LINES,
        codes.TRUNCATED_LAST_LINE,
        codes.NOT_AN_OBJECT,
        codes.BLANK_LINE,
        codes.NO_FINAL_NEWLINE,
        codes.MISSING_HEADER,
        codes.INVALID_HEADER,
        codes.HEADER_NOT_FIRST,
        codes.DUPLICATE_HEADER,
        codes.BOM,
        codes.OLD_VERSION,
        codes.UNKNOWN_VERSION,
        codes.UNKNOWN_ENTRY_TYPE,
        codes.FIELD_MISSING,
        codes.FIELD_WRONG_TYPE,
        codes.BAD_TIMESTAMP,
        codes.DUPLICATE_ID,
        codes.DANGLING_PARENT,
        codes.PARENT_CYCLE,
        codes.LABEL_TARGET_MISSING,
        codes.FIRST_KEPT_NOT_ON_PATH,
        codes.FROM_ID_UNKNOWN,
    }
)
#: the envelope fields: of a line's field problems (PI020-PI022, PI025) only those about these are
#: envelope problems (at their path, or at the line's top level for a missing one)
ENVELOPE_FIELDS: Final = frozenset({"type", "id", "parentId", "timestamp"})
ENVELOPE_PATHS: Final = frozenset((f,) for f in ENVELOPE_FIELDS)
#: codes that are envelope problems only at :data:`ENVELOPE_PATHS`
FIELD_CODES: Final = frozenset(
    {codes.UNKNOWN_ENTRY_TYPE, codes.FIELD_MISSING, codes.FIELD_WRONG_TYPE, codes.BAD_TIMESTAMP}
)


def _shifted(p: Problem, n: int) -> Problem:
    if p.span is None:
        return p
    pieces = None
    if p.pieces is not None:
        pieces = tuple(
            msgspec.structs.replace(piece, start=piece.start + n, end=piece.end + n) for piece in p.pieces
        )
        pieces = (msgspec.structs.replace(pieces[0], start=0), *pieces[1:])
    notes = tuple((start + n, end + n, what) for start, end, what in p.notes)
    return Problem(p.code, p.message, span=(p.span[0] + n, p.span[1] + n), pieces=pieces, notes=notes)


# --------------------------------------------------------------------------------------------
# fast path: a conforming record
# --------------------------------------------------------------------------------------------


_Header = rec.SessionHeader
_Assistant = rec.AssistantMessage
_ToolResult = rec.ToolResultMessage
_ToolCall = rec.ToolCall
_Image = rec.ImageContent
_STOP_REASONS = rec.STOP_REASONS
_UNSET = msgspec.UNSET
_time_ok = _CANONICAL_TIME.fullmatch


def _from_record(info: LineInfo, record: Any, keep_timestamp: bool) -> None:  # noqa: C901 - the hot loop
    """The facts of a line msgspec decoded as a record (the hot loop: kept lean on purpose)."""
    info.kept = True
    cls = type(record)
    if cls is _Header:
        info.kind = HEADER
        info.etype = "session"
        info.id = record.id
        info.version = ABSENT if record.version is _UNSET else _int_if_integral(record.version)
        return
    info.kind = ENTRY
    etype = info.etype = _TAG_OF[cls]
    info.id = info.key = record.id
    parent = info.parent_id = record.parent_id
    info.pkey = parent or None
    ts = record.timestamp
    problems: list[Problem] | None = None
    if keep_timestamp:
        info.timestamp = ts
    else:
        del info.timestamp  # (LineInfo sets one)
    if _time_ok(ts) is None:
        info.timestamp = ts
        problems = []
        _check_timestamp(ts, problems)
    if etype == "message":
        message = record.message
        mcls = type(message)
        info.role = _TAG_OF[mcls]
        if mcls is _Assistant:
            blocks: list[int] | None = None
            ids: list[str] = []
            for i, b in enumerate(message.content):
                if type(b) is _ToolCall:
                    if blocks is None:
                        blocks = []
                    blocks.append(i)
                    ids.append(b.id)
            if blocks is not None:
                info.call_blocks = _shared_blocks(tuple(blocks))
                info.call_ids = tuple(ids)
            if message.stop_reason not in _STOP_REASONS:
                problems = problems if problems is not None else []
                problems.append(_stop_reason_problem(message.stop_reason))
        elif mcls in _IMAGE_CONTENT_ROLES:
            if mcls is _ToolResult:
                info.result_call_id = message.tool_call_id
            content = message.content
            if type(content) is list:
                for b in content:
                    if type(b) is _Image and len(b.data) >= HUGE_IMAGE_CHARS:
                        problems = problems if problems is not None else []
                        _typed_images(content, ("message", "content"), problems)
                        break
    elif isinstance(etype, str) and etype in REF_FIELD:
        info.ref = (
            record.target_id
            if etype == "label" or etype == "context_edit"
            else (_plain(record.first_kept_entry_id) if etype == "compaction" else record.from_id)
        )
    elif etype == "custom_message" and type(record.content) is list:
        problems = problems if problems is not None else []
        _typed_images(record.content, ("content",), problems)
    if problems:
        info.problems = tuple(problems)


#: the ``call_blocks`` tuples seen, each kept once: most messages place their calls alike
_BLOCKS_SEEN: dict[tuple[int, ...], tuple[int, ...]] = {}
_BLOCKS_KEPT = 1024


def _shared_blocks(blocks: tuple[int, ...]) -> tuple[int, ...]:
    seen = _BLOCKS_SEEN.get(blocks)
    if seen is not None:
        return seen
    if len(_BLOCKS_SEEN) < _BLOCKS_KEPT:
        _BLOCKS_SEEN[blocks] = blocks
    return blocks


def _int_if_integral(x: float) -> int | float:
    return int(x) if x.is_integer() else x


def _typed_images(content: list[Any], path: Path, problems: list[Problem]) -> None:
    for i, block in enumerate(content):
        if type(block) is rec.ImageContent and len(block.data) >= HUGE_IMAGE_CHARS:
            problems.append(_image_problem(len(block.data), block.mime_type, (*path, i)))


# --------------------------------------------------------------------------------------------
# slow path: anything msgspec rejects
# --------------------------------------------------------------------------------------------


def _scan_slow(info: LineInfo, errors: str) -> None:
    # (a glued line is not blank: it is told first, without decoding the line)
    glued = glued_read(info.raw)
    pieces = glued.entries()
    if pieces is not None:  # invalid JSON for sure: no need to parse it to word an error
        info.kind = MALFORMED
        info.problems = (_glued_problem(info.raw, pieces),)
        return
    text = info.raw.decode("utf-8", errors)
    if is_js_blank(text):
        info.problems = (_BLANK_PROBLEM,)
        return
    try:
        value = parse(text)
    except JsonSyntaxError as err:
        _malformed(info, text, err, glued)
        return
    _scan_value(info, value)


def _malformed(info: LineInfo, text: str, err: JsonSyntaxError, glued: GluedRead) -> None:
    """``info`` is a line JSON.parse rejects with ``err`` (``glued``: what msgspec told of its pieces)."""
    info.kind = MALFORMED
    pieces = glued.all_pieces(info.raw)
    if pieces is not None:
        info.problems = (_glued_problem(info.raw, pieces),)
        return
    binary = _binary_problem(info.raw)
    if binary is not None:
        info.problems = (binary,)
        return
    nul = _nul_problem(info.raw)
    if nul is not None:
        info.problems = (nul,)
        return
    pos = err.pos
    start = len(text[:pos].encode("utf-8", "surrogatepass"))
    end = start + max(1, len(text[pos : pos + 1].encode("utf-8", "surrogatepass")))
    # The range says where; a column number in the text would count in one unit (characters,
    # UTF-16 units, bytes) while each editor shows its own.
    ran_out = pos >= len(text)
    where = " at end of line" if ran_out else ""
    message = f"invalid JSON{where}: {as_displayed(err.msg)}{_unseen_character(text, pos)}"
    info.problems = (Problem(codes.INVALID_JSON, message, span=(start, end), ran_out=ran_out),)


def _unseen_character(text: str, pos: int) -> str:
    """What to add to the parser's message when what it stopped at is a control character, which
    an editor shows as nothing or as a box: which one it is, and how JSON takes it."""
    char = text[pos : pos + 1]
    if not char or ord(char) >= 0x20:
        return ""
    return f" (U+{ord(char):04X}, a control character: JSON takes it only escaped in a string, as \\u{ord(char):04x})"


_ZERO_FILLED = "the zero-filled tail a crash leaves (the file grew, its data never reached the disk)"


def only_nul_bytes(raw: bytes) -> bool:
    """The line (without its line break) is NUL bytes and nothing else."""
    body = raw[:-1] if raw.endswith(b"\r") else raw
    return bool(body) and not body.strip(b"\0")


# Control bytes no text file holds (tab, line feed, vertical tab, form feed, carriage return and
# escape may come from a terminal or an editor; NUL is a crash's zero fill).
_CONTROL_BYTES = re.compile(rb"[\x01-\x08\x0e-\x1a\x1c-\x1f]")
# A line of text may hold a few of them (a stray byte typed or written over): it is still text,
# and its problem is the parser's where the first one is. More, NUL bytes beside them, or bytes
# that are not UTF-8: the line is binary content, not a cut-off line nor the tail a crash leaves.
_STRAY_CONTROL_BYTES = 3


def _first_binary_byte(raw: bytes) -> int | None:
    """Where the first control byte of a binary line is (None: the line is text)."""
    found = _CONTROL_BYTES.finditer(raw)
    first = next(found, None)
    if first is None:
        return None
    if b"\0" in raw or sum(1 for _ in itertools.islice(found, _STRAY_CONTROL_BYTES)) == _STRAY_CONTROL_BYTES:
        return first.start()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return first.start()
    return None


def _binary_problem(raw: bytes) -> Problem | None:
    """The problem of a line of binary bytes, said as such (neither a parser's "unexpected token"
    nor a crash's zero fill, which only NUL bytes are)."""
    at = _first_binary_byte(raw)
    if at is None:
        return None
    body = raw[:-1] if raw.endswith(b"\r") else raw
    return Problem(
        codes.INVALID_JSON,
        f"not text: binary bytes (byte {at + 1} is {raw[at]:#04x}, a control byte "
        "no text holds): a binary file or one written over, not a session's line; pi skips it",
        span=(0, len(body)),
    )


def _nul_problem(raw: bytes) -> Problem | None:
    """The problem of a line that is, or ends in, NUL bytes: what a crash leaves, said as such
    (a parser's "unexpected token" names no cause)."""
    body = raw[:-1] if raw.endswith(b"\r") else raw
    text = body.rstrip(b"\0")
    count = len(body) - len(text)
    if not count:
        return None
    if not text:
        return Problem(
            codes.INVALID_JSON,
            f"{count} NUL bytes and nothing else: {_ZERO_FILLED}; they hold nothing, and pi skips the line",
            span=(0, len(body)),
        )
    return Problem(
        codes.INVALID_JSON,
        f"invalid JSON: the line is cut off, then {count} NUL bytes: {_ZERO_FILLED}",
        span=(len(text), len(body)),
    )


def _about_replacement(p: Problem) -> bool:
    if not p.path:
        return p.path == () and p.missing == "replacement"
    return p.path[0] == "replacement"


_NOT_AN_EDIT = "this tool does not count it as an edit (D10)"


def _malformed_edit(replacement: Any) -> Problem:
    """The problem of a ``context_edit`` whose ``replacement`` pi 1.6.0 applies although it is not
    an edit (D10): what pi then does."""
    if replacement is ABSENT:
        return Problem(
            codes.MALFORMED_CONTEXT_EDIT,
            "context edit without `replacement`: pi 1.6.0 throws a TypeError on every context build "
            f"that applies it, so nothing can be sent or compacted on this branch; {_NOT_AN_EDIT}",
            path=(),
        )
    content = replacement.get("content", ABSENT) if isinstance(replacement, dict) else ABSENT
    if content is not ABSENT:
        return Problem(
            codes.MALFORMED_CONTEXT_EDIT,
            f"`replacement.content` is {json_kind(content)}, not a string or an array: pi 1.6.0 sends it "
            f"as the content of the target's messages; {_NOT_AN_EDIT}",
            path=("replacement", "content"),
        )
    what = "has no `content`" if isinstance(replacement, dict) else f"is {json_kind(replacement)}"
    return Problem(
        codes.MALFORMED_CONTEXT_EDIT,
        f"`replacement` {what}, so it is neither `null` nor an object with a string or array `content`: "
        f"pi 1.6.0 sends the target's messages without content; {_NOT_AN_EDIT}",
        path=("replacement",),
    )


def is_edit_field_problem(p: Problem) -> bool:
    """``p`` is about what makes a ``context_edit`` an edit (its own fields, or PI027): nothing a
    release without context edits, which reads the line as an unknown type, would report."""
    if p.code == codes.MALFORMED_CONTEXT_EDIT:
        return True
    if not p.path:
        return p.path == () and p.missing in EDIT_FIELDS
    return p.path[0] in EDIT_FIELDS


def glued_problem(info: LineInfo) -> Problem | None:
    """The GLUED_LINES problem of ``info``, if it is lines glued together."""
    if info.kind == MALFORMED and info.problems and info.problems[0].code == codes.GLUED_LINES:
        return info.problems[0]
    return None


def _glued_problem(raw: bytes, pieces: tuple[Piece, ...]) -> Problem:
    # (one of these per glued line, as many as the lines of a file glued everywhere: each piece
    # is worded once, for the message and its note)
    words = [piece_words(p) for p in pieces]
    entries = sum(1 for p in pieces if p.whole and p.type != "session")
    lost = [] if not entries else ["that entry" if entries == 1 else f"those {entries} entries"]
    if holds_header(pieces):
        lost.insert(0, "the session header")
    where = pieces[1].start
    end = text_end(raw)
    return Problem(
        codes.GLUED_LINES,
        f"{len(pieces)} lines glued together: {', then '.join(words)}. pi skips the whole line, and with it {' and '.join(lost)}",
        span=(where, char_end(raw, where)),  # the second piece's first character
        pieces=pieces,
        # where each is (the last one without the \r of a \r\n line break)
        notes=tuple((p.start, min(p.end, end), w) for p, w in zip(pieces, words, strict=True)),
    )


def _scan_value(info: LineInfo, value: Any) -> None:
    if not isinstance(value, dict):
        info.kind = NON_OBJECT
        info.kept = truthy(value)
        what = "a falsy value" if not info.kept else json_kind(value)
        info.problems = (Problem(codes.NOT_AN_OBJECT, f"line is {what}, not an entry object: pi skips it"),)
        return
    info.kept = True
    etype = info.etype = value.get("type", ABSENT)
    info.id = get(value, "id")
    problems: list[Problem] = []
    for fp in check_fields(value):
        if etype == "session" and (fp.missing == "id" or fp.path in (("id",), ("version",))):
            continue  # the document reports an invalid header (PI011) or version (PI016) once
        problems.append(
            Problem(fp.code, fp.message, path=fp.path, v1_expected=fp.v1_expected, missing=fp.missing)
        )
    if etype == "session":
        info.kind = HEADER
        info.version = get(value, "version")
        info.problems = tuple(problems)
        return
    if etype == "context_edit" and not is_edit_replacement(replacement := value.get("replacement", ABSENT)):
        problems = [p for p in problems if not _about_replacement(p)]
        problems.append(_malformed_edit(replacement))
    info.kind = ENTRY
    info.key = index_key(info.id)
    info.parent_id = get(value, "parentId")
    info.pkey = index_key(info.parent_id) if truthy(info.parent_id) else None
    ts = info.timestamp = get(value, "timestamp")
    if isinstance(ts, str) and not _CANONICAL_TIME.fullmatch(ts):
        _check_timestamp(ts, problems)
    if etype == "message":
        _scan_message(info, value, problems)
    elif isinstance(etype, str) and etype in REF_FIELD:
        info.ref = get(value, REF_FIELD[etype])
    elif etype == "custom_message":
        _plain_images(get(value, "content"), ("content",), problems)
    info.problems = tuple(problems)


def _scan_message(info: LineInfo, value: Any, problems: list[Problem]) -> None:
    """The facts of a message entry: its role, tool calls, tool result and oversized images."""
    message = get(value, "message")
    role = get(message, "role")
    info.role = role
    content = get(message, "content")
    if role == "assistant":
        if isinstance(content, list):
            calls = [
                (i, b["id"])
                for i, b in enumerate(content)
                if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
            ]
            if calls:
                info.call_blocks = tuple(i for i, _ in calls)
                info.call_ids = tuple(c for _, c in calls)
        stop = get(message, "stopReason")
        if isinstance(stop, str) and stop not in rec.STOP_REASONS:
            problems.append(_stop_reason_problem(stop))
    else:
        if role == "toolResult" and isinstance(get(message, "toolCallId"), str):
            info.result_call_id = message["toolCallId"]
        _plain_images(content, ("message", "content"), problems)


def _plain_images(content: Any, path: Path, problems: list[Problem]) -> None:
    if not isinstance(content, list):
        return
    for i, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "image":
            data = block.get("data")
            if isinstance(data, str) and len(data) >= HUGE_IMAGE_CHARS:
                mime = block.get("mimeType")
                problems.append(
                    _image_problem(len(data), mime if isinstance(mime, str) else "image", (*path, i))
                )


# --------------------------------------------------------------------------------------------
# checks shared by both paths
# --------------------------------------------------------------------------------------------


def _check_timestamp(ts: str, problems: list[Problem]) -> None:
    t = ms(ts)
    if isinstance(t, float) and math.isnan(t):
        problems.append(
            Problem(
                codes.BAD_TIMESTAMP, f"timestamp `{ts[:40]}` is not a date pi can read", path=("timestamp",)
            )
        )


def _stop_reason_problem(stop: str) -> Problem:
    if stop == "pending":
        msg = "stopReason `pending` exists only while streaming and should never be persisted"
    else:
        msg = f"stopReason `{stop[:40]}` is not one pi persists (stop, length, toolUse, error, aborted, deferred)"
    return Problem(codes.BAD_STOP_REASON, msg, path=("message", "stopReason"))


def human_size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _image_problem(chars: int, mime: str, path: Path) -> Problem:
    decoded = chars * 3 // 4
    return Problem(
        codes.HUGE_IMAGE,
        f"inline {mime} image of {human_size(decoded)} ({human_size(chars)} of base64 in this line)",
        path=path,
    )
