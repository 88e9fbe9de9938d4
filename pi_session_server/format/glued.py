"""Lines glued together: the pieces of a physical line that holds more than one of pi's lines.

A writer that dies in the middle of a line leaves it without its newline; the next line written to
the file (by pi after a restart, by a second process, by a tool that appends) then lands right after
the cut-off part. Two writers that each split a line into several writes can interleave the same
way. pi reads such a line as one line that ``JSON.parse`` rejects and skips it whole, so every
entry in it is gone for pi, and the entries after it lose their parent.

:func:`glued_pieces` finds the pieces: whole entries (a JSON object with a string ``type`` and a
``timestamp``, as every line pi writes has) and the cut-off parts between them. It only runs on lines
that are not valid JSON, and it only looks where pi's lines start: ``{"type":`` (``JSON.stringify``
writes ``type`` first in every entry and in the header). Inside a JSON string such bytes cannot
appear unescaped, so each candidate is the start of some object; nested ones (content blocks) are
told apart by what a whole entry needs.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

import msgspec

from .jsjson import JsonSyntaxError, parse_bytes
from .jstext import is_js_blank
from .jsvalue import ABSENT

_LINE_START = b'{"type":'
# A JSON string (its escapes included) or a bracket: enough to find where an object ends without
# building it, so that a glued line of a 10 MB image costs no copies of it.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]', re.DOTALL)
_OPEN = frozenset(b"{[")
# Tokens (strings and brackets) the search may visit: a few passes over any real line (whose
# strings are long), a bounded time on a line built of nothing but nested objects.
_BYTES_PER_TOKEN = 4
_BUDGET_BASE = 100_000
_PASSES = 4
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_QUOTE = ord('"')
_JSON_SPACE = b" \t\r"  # (a line holds no "\n")
_BRACE = ord("{")
_CLOSE_BRACE = ord("}")
_TRAILING = re.compile(r"JSON is malformed: trailing characters \(byte (\d+)\)")


def _msgspec_tells_where_values_end() -> bool:
    """Whether msgspec words "a value, then more" as :data:`_TRAILING` reads it, with the byte the
    decoding of a glued line relies on. Its messages are no API: a release that words them
    otherwise turns that decoding off (the search then decides, at its cost), never another answer."""
    try:
        msgspec.json.decode(b'{"a":1}{')
    except msgspec.DecodeError as err:
        found = _TRAILING.fullmatch(str(err))
        return found is not None and int(found[1]) == len(b'{"a":1}') + 1
    return False


_DECODING_TOLD = _msgspec_tells_where_values_end()


class _Head(msgspec.Struct):
    """What tells an entry from a content block; every other member is validated and skipped."""

    type: Any = ABSENT
    id: Any = ABSENT
    timestamp: Any = ABSENT


_decode_head = msgspec.json.Decoder(_Head).decode


class Piece(msgspec.Struct, frozen=True, gc=False):
    """One part of a glued line: ``start``/``end`` are byte offsets in the line, ``column`` the
    character column where it starts. A whole piece is an entry pi would read on a line of its own;
    the others are cut-off parts of lines. (A Struct the collector does not track: two or more per
    glued line, and a file glued everywhere has hundreds of thousands; its values are JSON's, in
    no cycle.)"""

    start: int
    end: int
    column: int
    whole: bool
    type: Any = ABSENT  # of a whole piece
    id: Any = ABSENT


def glued_pieces(raw: bytes) -> tuple[Piece, ...] | None:
    """The pieces of ``raw`` (a line that is not valid JSON, without its newline) when it is two or
    more lines glued together with at least one whole entry among them; otherwise None."""
    return glued_read(raw).all_pieces(raw)


def glued_entries(raw: bytes) -> tuple[Piece, ...] | None:
    """The pieces of ``raw`` (a line without its newline) when it is lines glued together and
    msgspec finds the line invalid JSON (its first piece a whole entry with more after it, or an
    object cut off where the next line starts): such a line is one JSON.parse rejects, which this
    tells without parsing it in Python. None when the line is anything else, or what only the
    exact parser can tell: then it is for :func:`glued_pieces`, once the line is known to be
    invalid."""
    return glued_read(raw).entries()


class GluedRead(msgspec.Struct, frozen=True, gc=False):
    """What msgspec's decoding of a line tells of its pieces (:func:`glued_read`): the answers of
    :func:`glued_entries` and :func:`glued_pieces` from one decoding, for a line that asks the one,
    then the other (a cut-off line holding content blocks: the second decoded it all again)."""

    pieces: tuple[Piece, ...] | None  # of a line of lines glued together, as far as msgspec tells
    invalid: bool  # msgspec found the line invalid JSON
    told: bool  # msgspec told every candidate, so ``pieces`` are those the search would find

    def entries(self) -> tuple[Piece, ...] | None:
        """:func:`glued_entries` of the line read."""
        return self.pieces if self.invalid else None

    def all_pieces(self, raw: bytes) -> tuple[Piece, ...] | None:
        """:func:`glued_pieces` of the line read, ``raw``: searched for only when msgspec could not tell."""
        return self.pieces if self.told else _glued(raw, _searched_spans(raw))


_NOT_GLUED = GluedRead(None, False, True)


def glued_read(raw: bytes) -> GluedRead:
    """What msgspec tells of ``raw`` (a line without its newline) as lines glued together."""
    if raw.find(_LINE_START, 1) < 0:
        return _NOT_GLUED
    decoded = _decoded_spans(raw)
    if decoded is None:
        return GluedRead(None, False, False)
    return GluedRead(_glued(raw, decoded[0]), decoded[1], True)


_Span = tuple[int, int, "_Head | None"]


def _glued(raw: bytes, spans: list[_Span] | None) -> tuple[Piece, ...] | None:
    """The pieces of ``spans`` when they are lines glued together (two or more, one whole)."""
    if spans is None or len(spans) < 2 or all(head is None for _, _, head in spans):
        return None
    return _pieces(raw, spans)


def _pieces(raw: bytes, spans: list[_Span]) -> tuple[Piece, ...]:
    pieces = []
    column = 0
    previous = 0
    ascii_only = raw.isascii()  # (then a column is the byte offset)
    for start, end, head in spans:
        # (each piece after the first starts with an ASCII "{": its prefix decodes alone as it
        # does within the line, so the columns add up without decoding the line again per piece)
        column = start if ascii_only else column + len(raw[previous:start].decode("utf-8", "replace"))
        previous = start
        pieces.append(
            Piece(
                start,
                end,
                column,
                head is not None,
                head.type if head is not None else ABSENT,
                head.id if head is not None else ABSENT,
            )
        )
    return tuple(pieces)


class _Unvouched(Exception):
    """msgspec cannot tell what the exact parser would (invalid UTF-8, lone surrogates, deep
    nesting), or the decoding has read the line too many times over."""


_ERROR_AT = re.compile(r"\(byte (\d+)\)$")


def _decoded_spans(raw: bytes) -> tuple[list[_Span], bool] | None:
    """The spans of ``raw`` as :func:`_searched_spans` finds them, each whole entry found by
    msgspec where it ends (its "trailing characters"), and each candidate that is none told by
    where msgspec stops reading it: no Python loop over the line's strings. With them, whether
    msgspec found the line invalid JSON (the first piece a whole object with more after it, or
    an object msgspec rejects). None when msgspec cannot vouch for some candidate (the exact
    parser's cases), or when the candidates have cost a few readings of the line (objects nested
    by the thousand that never close), or when msgspec does not word its errors as this reads
    them (:data:`_DECODING_TOLD`): the search then decides."""
    if not _DECODING_TOLD:
        return None
    n = len(raw)
    spans: list[_Span] = []
    reading = _Reading(n)
    p = 0
    invalid = False
    try:
        with memoryview(raw) as view:
            whole = _brace_to_brace(raw, view)
            if whole is not None:
                return whole, True  # (a value, then more)
            while p < n:
                start = _object_start(raw, p)
                found = _decoded_entry(raw, view, start, reading) if start is not None else None
                if p == 0:
                    invalid = start is not None and reading.rejected
                if found is None:
                    q = raw.find(_LINE_START, p + 1)
                    while q >= 0 and (found := _decoded_entry(raw, view, q, reading)) is None:
                        q = raw.find(_LINE_START, q + 1)
                    end = q if q >= 0 else n
                    spans.append((p, end, None))
                    p = end
                    if found is None:
                        continue
                piece_end = _piece_end(raw, found[0])
                spans.append((p, piece_end, found[1]))
                p = piece_end
    except _Unvouched:
        return None
    return spans, invalid


_GLUE = b'}{"type":'


def _brace_to_brace(raw: bytes, view: memoryview) -> list[_Span] | None:
    """The spans of ``raw`` when it is whole entries glued brace to brace (``}{"type":``, what a
    writer that died before its newline leaves), each piece decoded once, whole; None when the
    line is anything else. (``}{`` is in no JSON value but inside a string, where ``{"type":`` is
    not: the pieces that decode whole between those places are the entries the search finds.)"""
    glued_at = raw.find(_GLUE)
    if glued_at < 0 or raw[:1] != b"{":
        return None
    spans: list[_Span] = []
    start = 0
    while True:
        end = glued_at + 1 if glued_at >= 0 else len(raw)
        try:
            head = _decode_head(view[start:end])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        if not isinstance(head.type, str) or head.timestamp is ABSENT:
            return None
        spans.append((start, end, head))
        if glued_at < 0:
            return spans
        start = end
        glued_at = raw.find(_GLUE, start)


class _Reading:
    """The bytes msgspec may still read for one line: a few times the line (each candidate is
    read from its own start, so objects nested in objects are read again)."""

    __slots__ = ("left", "rejected")

    def __init__(self, n: int) -> None:
        self.left = _PASSES * n + _BUDGET_BASE
        # the last candidate read is no value alone: msgspec rejected it, or found more after it
        self.rejected = False

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise _Unvouched


def _decoded_entry(raw: bytes, view: memoryview, start: int, reading: _Reading) -> tuple[int, _Head] | None:
    """(where it ends, head) of the whole entry msgspec decodes at ``start``, or None when no
    entry starts there (as :func:`_entry_at` finds); raises :class:`_Unvouched` when msgspec
    cannot tell."""
    reading.rejected = True
    try:
        head = _decode_head(view[start:])
        end = _before_space(raw, len(raw))
        reading.rejected = False
        reading.spend(end - start)
    except msgspec.DecodeError as err:
        message = str(err)
        found = _TRAILING.fullmatch(message)
        if found is None:
            at = _ERROR_AT.search(message)
            reading.spend(int(at[1]) if at is not None else len(raw) - start)
            if _for_the_exact_parser(message, view[start:]):
                raise _Unvouched from None
            return None  # JSON.parse rejects the object too
        # msgspec names the byte just past the first one after the value and its white space
        following = start + int(found[1]) - 1
        if not start < following < len(raw) or raw[following] in _JSON_SPACE:
            raise _Unvouched from None
        end = _before_space(raw, following)
        if raw[end - 1] != _CLOSE_BRACE:
            raise _Unvouched from None
        reading.spend(2 * (end - start))
        try:
            head = _decode_head(view[start:end])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Unvouched from None
    except (msgspec.ValidationError, RecursionError):
        raise _Unvouched from None
    if not isinstance(head.type, str) or head.timestamp is ABSENT:
        return None
    return end, head


def _before_space(raw: bytes, end: int) -> int:
    """``end`` moved back over the JSON white space before it."""
    while end > 0 and raw[end - 1] in _JSON_SPACE:
        end -= 1
    return end


def _searched_spans(raw: bytes) -> list[_Span] | None:
    """The spans of ``raw``, each a whole entry (with its head) or a cut-off part (None), found by
    scanning its strings and brackets from each place a line may start; None when the line is
    built to make that search quadratic."""
    n = len(raw)
    spans: list[_Span] = []
    budget = _Budget(raw)
    p = 0
    try:
        while p < n:
            found = _entry_at(raw, p, budget)
            if found is not None:
                end, head = found
                spans.append((p, end, head))
                p = end
                continue
            q = raw.find(_LINE_START, p + 1)
            while q >= 0 and _entry_at(raw, q, budget) is None:
                q = raw.find(_LINE_START, q + 1)
            end = q if q >= 0 else n
            spans.append((p, end, None))
            p = end
    except _OverBudget:
        return None  # a line built to make the search quadratic: it stays plain invalid JSON
    return spans


class _OverBudget(Exception):
    pass


class _Budget:
    """Tokens the search may still visit. Each candidate is scanned from its own start (a cut-off
    string before it must not pair its quotes), so objects nested in objects are scanned again:
    a few times the line in real files, but quadratic in a line of thousands of nested
    ``{"type":`` objects that never close. The search gets a quarter token per byte first (lines
    of long strings), then, once, the line's own token count a few times over: never more than a
    few passes over the line."""

    __slots__ = ("extended", "left", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.left = len(raw) // _BYTES_PER_TOKEN + _BUDGET_BASE
        self.extended = False

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left >= 0:
            return
        if self.extended:
            raise _OverBudget
        self.extended = True
        tokens = sum(1 for _ in _TOKEN.finditer(self.raw))
        self.left += _PASSES * tokens
        if self.left < 0:
            raise _OverBudget


def _entry_at(raw: bytes, p: int, budget: _Budget) -> tuple[int, _Head] | None:
    """(end, head) when a whole entry starts at ``p``: an object with a string ``type`` and a
    ``timestamp`` that ``JSON.parse`` accepts on its own. Its piece runs to the end of the line when
    only whitespace follows (a CRLF line's "\\r" stays with it)."""
    start = _object_start(raw, p)
    if start is None:
        return None
    closed = _object_end(raw, start, budget)
    if closed is None:
        return None
    end, children = closed
    head = _head(raw, start, end, children)
    if head is None or not isinstance(head.type, str) or head.timestamp is ABSENT:
        return None
    return _piece_end(raw, end), head


def _object_start(raw: bytes, p: int) -> int | None:
    """Where the object of a piece at ``p`` starts (the blanks at the start of the line skipped),
    or None when no object starts there."""
    start = p
    if p == 0:
        while start < len(raw) and raw[start] in b" \t\r\x0b\x0c":
            start += 1
    return start if raw[start : start + 1] == b"{" else None


def _piece_end(raw: bytes, end: int) -> int:
    """Where the piece of an entry whose object ends at ``end`` ends."""
    # JSON white space after it up to the next piece's "{" stays with it: no piece of its own (a
    # split would leave a blank line of it, and the line would count one glued line too many)
    after = end
    while after < len(raw) and raw[after] in _JSON_SPACE:
        after += 1
    if after < len(raw) and raw[after] == _BRACE:
        return after
    # (a piece glued after it starts with "{": the rest of the line is not copied to learn that)
    if end < len(raw) and raw[end] != _BRACE and is_js_blank(raw[end:].decode("utf-8", "replace")):
        return len(raw)
    return end


def _object_end(raw: bytes, start: int, budget: _Budget) -> tuple[int, array[int]] | None:
    """Where the object starting at ``start`` ends, if its brackets close (strings skipped), and
    where its members' objects and arrays start and end (in pairs): its top level is read from
    them without reading what they hold again (:func:`_top_level_is_no_entry`)."""
    depth = 0
    tokens = 0
    children = array("q")
    try:
        for match in _TOKEN.finditer(raw, start):
            tokens += 1
            first = raw[match.start()]
            if first == _QUOTE:
                continue
            if first in _OPEN:
                depth += 1
                if depth == 2:
                    children.append(match.start())
            else:
                depth -= 1
                if depth == 1:
                    children.append(match.end())
                elif depth == 0:
                    return match.end(), children
        return None
    finally:
        budget.spend(tokens)


def _head(raw: bytes, start: int, end: int, children: array[int]) -> _Head | None:
    """The head of the object at ``raw[start:end]`` if JSON.parse takes it (``children``: where its
    members' objects and arrays are, see :func:`_object_end`). msgspec checks it without building
    it; what msgspec refuses but JSON.parse may take (invalid UTF-8, lone surrogates, deep
    nesting) goes to the exact parser (an object nested deeper than msgspec reads, only once its
    top level makes it an entry's)."""
    with memoryview(raw) as view:
        piece = view[start:end]
        try:
            return _decode_head(piece)
        except msgspec.ValidationError as err:
            if str(err).startswith("Expected `object`"):
                return None  # valid JSON, not an object
        except msgspec.DecodeError as err:
            # (copying a 10 MB piece to learn what msgspec knows is what this avoids)
            if not _for_the_exact_parser(str(err), piece):
                return None
        except RecursionError:
            if _top_level_is_no_entry(view, start, end, children):
                return None
    try:
        value = parse_bytes(raw[start:end])
    except (JsonSyntaxError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return _Head(value.get("type", ABSENT), value.get("id", ABSENT), value.get("timestamp", ABSENT))


def _top_level_is_no_entry(view: memoryview, start: int, end: int, children: array[int]) -> bool:
    """Whether the top level of the object at ``view[start:end]``, nested deeper than msgspec
    reads, tells that no entry starts there: it is invalid JSON (the object is then, too) or no
    entry's head, read with its members' objects and arrays each standing in for a value (a
    ``0``). False leaves it to the exact parser: an entry's head, which holds only if what its
    members hold is valid too (and whose id may be one of them), or what msgspec cannot vouch for.
    (Each object nested in a line that is no entry is tried by the search: read so, the line's
    bytes are read about once, not once for each object around them.)"""
    bounds = [start, *children, end]
    top = b"0".join(view[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2))
    try:
        head = _decode_head(top)
    except msgspec.DecodeError as err:
        return not _for_the_exact_parser(str(err), memoryview(top))
    except (msgspec.ValidationError, RecursionError):
        return False
    return not isinstance(head.type, str) or head.timestamp is ABSENT


def _for_the_exact_parser(message: str, piece: memoryview) -> bool:
    """msgspec rejected ``piece`` with ``message`` where JSON.parse may take it: invalid UTF-8 (which
    JSON.parse reads replaced), or a lone surrogate escape, which msgspec reports as truncated
    input or as a surrogate pair cut short. Anything else msgspec calls malformed JSON.parse
    rejects too."""
    if message.startswith("Invalid UTF-8"):
        return True
    return (message.startswith("Input data was truncated") or "surrogate" in message) and bool(
        _SURROGATE_ESCAPE.search(piece)
    )


def describe(pieces: tuple[Piece, ...]) -> str:
    """``pieces`` in words, e.g. "a cut-off line, then entry `1e2f3a4b` (message)". No columns: a
    problem's place is its structured position (0-based in the library and on the wire, 1-based in
    ``pi-session check``), which a number in its words would contradict in one of them."""
    return ", then ".join(map(piece_words, pieces))


def piece_words(piece: Piece) -> str:
    """One piece in the words of :func:`describe`."""
    if not piece.whole:
        return "a cut-off line"
    if piece.type == "session":
        return "the session header"
    kind = piece.type if isinstance(piece.type, str) else "?"
    if isinstance(piece.id, str):
        return f"entry `{piece.id[:16]}` ({kind})"
    return f"entry ({kind})"


def lost_ids(pieces: tuple[Piece, ...]) -> list[str]:
    """The string ids of the whole entries among ``pieces`` (what pi loses with the line; a header's
    id is the session's, not an entry's)."""
    return [p.id for p in pieces if p.whole and p.type != "session" and isinstance(p.id, str)]


def holds_header(pieces: tuple[Piece, ...]) -> bool:
    """A session header is one of the whole ``pieces``."""
    return any(p.whole and p.type == "session" for p in pieces)


__all__ = ["Piece", "describe", "glued_entries", "glued_pieces", "holds_header", "lost_ids", "piece_words"]
