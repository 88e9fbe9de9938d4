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

import json
from dataclasses import dataclass
from typing import Any

from ..format.jsjson import JsonSyntaxError, parse
from ..format.jstext import is_js_blank
from ..format.jsvalue import ABSENT

_LINE_START = '{"type":'
_LINE_START_BYTES = _LINE_START.encode()
_raw_decode = json.JSONDecoder().raw_decode


@dataclass(frozen=True, slots=True)
class Piece:
    """One part of a glued line: ``start``/``end`` are byte offsets in the line, ``column`` the
    character column where it starts. A whole piece is an entry pi would read on a line of its own;
    the others are cut-off parts of lines."""

    start: int
    end: int
    column: int
    whole: bool
    type: Any = ABSENT  # of a whole piece
    id: Any = ABSENT


def glued_pieces(raw: bytes) -> tuple[Piece, ...] | None:
    """The pieces of ``raw`` (a line that is not valid JSON, without its newline) when it is two or
    more lines glued together with at least one whole entry among them; otherwise None."""
    if raw.find(_LINE_START_BYTES, 1) < 0:
        return None
    # surrogateescape: every byte maps to one character and back, so offsets convert exactly
    text = raw.decode("utf-8", "surrogateescape")
    n = len(text)
    spans: list[tuple[int, int, bool, Any]] = []
    p = 0
    while p < n:
        found = _entry_at(text, p)
        if found is not None:
            end, value = found
            spans.append((p, end, True, value))
            p = end
            continue
        q = text.find(_LINE_START, p + 1)
        while q >= 0 and _entry_at(text, q) is None:
            q = text.find(_LINE_START, q + 1)
        end = q if q >= 0 else n
        spans.append((p, end, False, None))
        p = end
    if len(spans) < 2 or not any(whole for _, _, whole, _ in spans):
        return None
    return tuple(
        Piece(
            _byte_offset(text, start),
            _byte_offset(text, end),
            start,
            whole,
            value.get("type", ABSENT) if whole else ABSENT,
            value.get("id", ABSENT) if whole else ABSENT,
        )
        for start, end, whole, value in spans
    )


def _entry_at(text: str, p: int) -> tuple[int, dict[str, Any]] | None:
    """(end, value) when a whole entry starts at ``p``: an object with a string ``type`` and a
    ``timestamp`` that ``JSON.parse`` accepts on its own. Its piece runs to the end of the line when
    only whitespace follows (a CRLF line's "\\r" stays with it)."""
    start = p
    if p == 0:
        while start < len(text) and is_js_blank(text[start]):
            start += 1
    if not text.startswith("{", start):
        return None
    try:
        value, end = _raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or "timestamp" not in value:
        return None
    try:
        value = parse(text[start:end])  # Python's scanner takes NaN and the like; JSON.parse does not
    except (JsonSyntaxError, RecursionError):
        return None
    if is_js_blank(text[end:]):
        end = len(text)
    return end, value


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8", "surrogateescape"))


def describe(pieces: tuple[Piece, ...]) -> str:
    """``pieces`` in words, e.g. "a cut-off line, then entry `1e2f3a4b` (message) from column 655"."""
    parts = []
    for i, piece in enumerate(pieces):
        if piece.whole and piece.type == "session":
            what = "the session header"
        elif piece.whole:
            what = f"entry {_name(piece)}"
        else:
            what = "a cut-off line"
        where = "" if i == 0 else f" from column {piece.column + 1}"
        parts.append(what + where)
    return ", then ".join(parts)


def _name(piece: Piece) -> str:
    kind = piece.type if isinstance(piece.type, str) else "?"
    if isinstance(piece.id, str):
        return f"`{piece.id[:16]}` ({kind})"
    return f"({kind})"


def lost_ids(pieces: tuple[Piece, ...]) -> list[str]:
    """The string ids of the whole entries among ``pieces`` (what pi loses with the line; a header's
    id is the session's, not an entry's)."""
    return [p.id for p in pieces if p.whole and p.type != "session" and isinstance(p.id, str)]


__all__ = ["Piece", "describe", "glued_pieces", "lost_ids"]
