"""Where things are inside one JSON line: the byte span of a value at a path, the path at an offset.

A regular-expression tokenizer over the line's UTF-8 bytes: long strings (message text, base64
images) are single tokens, so locating a field costs little even on multi-megabyte lines. It
tolerates invalid JSON (it is only used to place diagnostics and to answer what is under the
cursor), and it never decodes string contents except for object keys.

Every search is one pass over the line whose cost does not grow with nesting: the path to the
current token is kept in place as containers open and close, and compared with the wanted path
incrementally (a line nested 100,000 deep costs what a flat line of that length costs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .fields import Path

_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[{}\[\]:,]|[^\s{}\[\]:,"]+')

_OPEN_OBJECT, _CLOSE_OBJECT, _OPEN_ARRAY, _CLOSE_ARRAY, _COLON, _COMMA, _QUOTE = b'{}[]:,"'

# what a step of a walk met
KEY = 0  # an object key
SCALAR = 1  # a string, number or literal value
CLOSED = 2  # a container, reported when it closes (its span then starts at its opening bracket)


@dataclass(frozen=True, slots=True)
class Located:
    path: Path
    start: int  # byte offsets in the line
    end: int
    is_key: bool = False


class Frame:
    """An open container: where it starts and, for an object, where its current member's key is."""

    __slots__ = ("expect_key", "index", "is_object", "key_start", "start")

    def __init__(self, is_object: bool, start: int):
        self.is_object = is_object
        self.index = 0
        self.expect_key = is_object
        self.start = start
        self.key_start = -1  # -1: no key read in this object yet


def _key_text(token: bytes) -> str:
    body = token[1:-1] if len(token) >= 2 and token.endswith(b'"') else token[1:]
    if b"\\" not in body:
        return body.decode("utf-8", "replace")
    import json

    try:
        return str(json.loads(b'"' + body + b'"'))
    except ValueError:
        return body.decode("utf-8", "replace")


class Walk:
    """The keys, scalar values and containers of a line, with the path to each kept up to date.

    ``keys[i]`` is the key (object) or index (array) of the current member of open container
    ``i``, None while an object has no key yet (right after ``{`` or ``,``). A token's path is
    ``keys`` cut at the first None (what invalid JSON leaves). Only the top container changes, so
    the first keyless container (``unkeyed``) and how many leading keys equal ``wanted``'s
    (``matched``) are updated in O(1) per token.
    """

    __slots__ = ("frames", "keys", "matched", "raw", "unkeyed", "wanted")

    def __init__(self, raw: bytes, wanted: Path = ()):
        self.raw = raw
        self.frames: list[Frame] = []
        self.keys: list[str | int | None] = []
        self.unkeyed = -1  # index of the first container without a key, -1 when none
        self.wanted = wanted
        self.matched = 0

    def steps(self) -> Iterator[tuple[int, int, int]]:
        """``(what, start, end)`` for every key, scalar value and closed container, in line order."""
        raw = self.raw
        frames = self.frames
        for m in _TOKEN.finditer(raw):
            start = m.start()
            c = raw[start]  # an int: cheaper to compare than a one-byte slice
            if c in (_OPEN_OBJECT, _OPEN_ARRAY):
                self._open(Frame(c == _OPEN_OBJECT, start))
            elif c in (_CLOSE_OBJECT, _CLOSE_ARRAY):
                if frames:
                    yield CLOSED, self._close().start, m.end()
            elif c == _COLON:
                if frames and frames[-1].is_object:
                    frames[-1].expect_key = False
            elif c == _COMMA:
                if frames:
                    self._next_member(frames[-1])
            elif frames and frames[-1].expect_key:  # (only an object expects a key)
                token = m.group()
                frames[-1].key_start = start
                self._set_key(_key_text(token) if c == _QUOTE else token.decode("utf-8", "replace"))
                yield KEY, start, m.end()
            else:
                yield SCALAR, start, m.end()

    # -- the path, kept in place ----------------------------------------------------------------

    def _open(self, frame: Frame) -> None:
        i = len(self.keys)
        self.frames.append(frame)
        self.keys.append(None if frame.is_object else 0)
        if frame.is_object and self.unkeyed < 0:
            self.unkeyed = i
        self._extend_match(i)

    def _next_member(self, top: Frame) -> None:
        """After a comma in ``top``: an object expects its next key, an array counts on."""
        if top.is_object:
            top.expect_key = True
            self._set_key(None)
        else:
            top.index += 1
            self._set_key(top.index)

    def _close(self) -> Frame:
        self.keys.pop()
        i = len(self.keys)
        self.matched = min(self.matched, i)
        if self.unkeyed == i:
            self.unkeyed = -1
        return self.frames.pop()

    def _set_key(self, key: str | int | None) -> None:
        i = len(self.keys) - 1
        self.keys[i] = key
        self.matched = min(self.matched, i)
        if key is None:
            if self.unkeyed < 0:
                self.unkeyed = i
        elif self.unkeyed == i:
            self.unkeyed = -1
        self._extend_match(i)

    def _extend_match(self, i: int) -> None:
        key = self.keys[i]
        if self.matched == i < len(self.wanted) and key is not None and key == self.wanted[i]:
            self.matched = i + 1

    def _value_depth(self) -> int:
        """Length of the path of a value read now (a scalar, or a container just closed)."""
        return len(self.keys) if self.unkeyed < 0 else self.unkeyed

    def _key_depth(self) -> int:
        """Length of the path of the key just read, without the key itself."""
        return len(self.keys) - 1 if self.unkeyed < 0 else self.unkeyed

    # -- questions about the current step -------------------------------------------------------

    def value_is_wanted(self) -> bool:
        n = len(self.wanted)
        return self._value_depth() == n and self.matched >= n

    def key_is_wanted(self) -> bool:
        n = len(self.wanted)
        return (
            n > 0
            and self._key_depth() == n - 1
            and self.matched >= n - 1
            and self.keys[-1] == self.wanted[-1]
        )

    def key_on_wanted_path(self) -> bool:
        """The key just read is one of the wanted path's, in the object where the path goes on
        (written again there, it replaces the member read before)."""
        depth = self._key_depth()
        return depth < len(self.wanted) and self.matched >= depth and self.keys[-1] == self.wanted[depth]

    def path(self, what: int) -> Path:
        """The path of the current step (built on request: O(depth)); it holds no None (the path
        is cut before the first keyless container, and the key just read is a string)."""
        if what == KEY:
            return cast(Path, (*self.keys[: self._key_depth()], self.keys[-1]))
        return cast(Path, tuple(self.keys[: self._value_depth()]))


def value_span(raw: bytes, path: Path, written_inside: int = 0) -> tuple[int, int] | None:
    """Byte span of the value at ``path`` (``()`` is the whole line's value), or None. A key
    written twice in an object is read as JSON.parse reads it: its last value counts.
    ``written_inside``: for a path of one key, how many times the line's facts say that key is a
    key inside the values of the line's object (the ``"id"`` of each of an assistant message's
    tool calls): told, its being written once at the top is decided by counting."""
    if not path:
        stripped = raw.rstrip(b" \t\r")
        lead = len(raw) - len(raw.lstrip(b" \t\r"))
        return (lead, len(stripped)) if stripped else None
    if len(path) == 1 and isinstance(path[0], str):
        early = _early_member_span(raw, path[0], written_inside)
        if early is not None:
            return early
    return _last_span(raw, path, on_key=False)


# The line's object up to the first member whose key is the one asked for, when every member
# before it is a plain key and scalar (no escapes: what the walk would read key by key). An
# entry's "id" is the second member as JSON.stringify writes it; the walk costs many times this.
_SCALAR = rb'(?:"[^"\\]*"|[^\s{}\[\]:,"]+)'
_EARLY_MEMBER = rb'\s*\{\s*(?:"[^"\\]*"\s*:\s*' + _SCALAR + rb'\s*,\s*)*?"%s"\s*:\s*(' + _SCALAR + rb")"
_early_member_patterns: dict[str, re.Pattern[bytes]] = {}


def _early_member_span(raw: bytes, key: str, written_inside: int = 0) -> tuple[int, int] | None:
    """The span of the scalar value of top-level member ``key`` found by a pattern when it is
    among the line's first members and not written again after it (the span :func:`_last_span`
    finds then, at a fraction of its cost); None when the walk must decide. ``written_inside``:
    see :func:`value_span`."""
    if not _PLAIN_KEY.fullmatch(key):
        return None
    pattern = _early_member_patterns.get(key)
    if pattern is None:
        pattern = _early_member_patterns[key] = re.compile(_EARLY_MEMBER % key.encode())
    m = pattern.match(raw)
    if m is None:
        return None
    end = m.end(1)
    quoted = b'"%s"' % key.encode()
    again = raw.find(quoted, end)
    escaped = raw.find(_ESCAPE, end) >= 0
    # (nothing after it could be the key again, the usual answer: told without _may_repeat's facts)
    if again < 0 and not escaped:
        return m.span(1)
    if escaped or raw.find(_ESCAPE, 0, end) >= 0:
        return None if _may_repeat(raw, (key,), end) else m.span(1)
    # its text written again (a tool call's "id" below an entry's) and no escape anywhere: every
    # key is written as itself, so the text after it holds each key inside a value the facts
    # count, and the key again at the top if it is: the text as many times as they count says
    # it is not (every object after the pattern's members is inside a value)
    if written_inside and raw.count(quoted, again) == written_inside:
        return m.span(1)
    if len(raw) < _KEPT_FROM:
        # what _may_repeat decides then, without its facts (which a line this short does not keep)
        return m.span(1) if _once_in_the_object(raw, quoted) else None
    return None if _may_repeat(raw, (key,), end) else m.span(1)


def scalar_value(raw: bytes, span: tuple[int, int]) -> Any:
    """The JSON scalar written at ``span`` of ``raw`` (None when it is none)."""
    try:
        return json.loads(raw[span[0] : span[1]])
    except ValueError:
        return None


def key_span(raw: bytes, path: Path) -> tuple[int, int] | None:
    """Byte span of the key token of the member at ``path`` (a path ending in a key): of its last
    occurrence, the one JSON.parse keeps."""
    if not path or not isinstance(path[-1], str):
        return None
    return _last_span(raw, path, on_key=True)


def _last_span(raw: bytes, path: Path, on_key: bool) -> tuple[int, int] | None:
    """The span of the key (``on_key``) or value at ``path`` where JSON.parse takes it from: a key
    of the path met again in the same object replaces what was found under the first one. The walk
    stops at the first one found when nothing after it can be such a key (no key of the path
    written again, no escape that could spell one)."""
    walk = Walk(raw, path)
    keys = {key for key in path if isinstance(key, str)}
    found: tuple[int, int] | None = None
    checked = False  # whether the walk must go on to the end whatever it meets
    for what, start, end in walk.steps():
        if what == KEY:
            if walk.keys[-1] not in keys or not walk.key_on_wanted_path():
                continue
            found = (start, end) if on_key and walk.key_is_wanted() else None
        elif on_key or not walk.value_is_wanted():
            continue
        else:
            found = (start, end)
        if found is not None and not checked:
            if not _may_repeat(raw, path, found[1]):
                return found
            checked = True
    return found


def is_kept(raw: bytes, loc: Located) -> bool:
    """Whether the key or value at ``loc`` is where JSON.parse takes it from: no key of its path
    is written again after it (a look at the rest of the line, without a walk), or the walk finds
    it there."""
    if not _may_repeat(raw, loc.path, loc.end):
        return True
    kept = key_span(raw, loc.path) if loc.is_key else value_span(raw, loc.path)
    return kept == (loc.start, loc.end)


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$]+")
# an escape that spells a letter, a digit, '_' or '$' (JSON.stringify writes none; control
# characters, which it writes as \u00XX, are below these)
_ESCAPED_KEY_CHARACTER = re.compile(rb"\\u00[2-7][0-9A-Fa-f]")


def _may_repeat(raw: bytes, path: Path, after: int) -> bool:
    """Whether a key of ``path`` may be written again after byte ``after``: its quoted text is
    there, or an escape that could spell it (a key that is not plain letters and digits: always).
    A key of the line's object that is also written inside values (a tool call's "id" below an
    entry's) is counted, not walked to."""
    facts = _facts_of(raw)
    written_again: bytes | None = None
    # each key looked for once: a path nested thousands deep repeats the same few
    for key in dict.fromkeys(k for k in path if isinstance(k, str)):
        if not _PLAIN_KEY.fullmatch(key):
            return True
        quoted = b'"' + key.encode() + b'"'
        if facts.found_from(quoted, after):
            if len(path) > 1:
                return True
            written_again = quoted
    if written_again is None:
        return facts.found_from(_ESCAPE, after)
    if facts.found_from(_ESCAPE, 0):
        return True
    return not facts.once_in_the_object(written_again)


# what _LineFacts looks for to find an escape that could spell a key character
_ESCAPE = b"\\u00"
_ESCAPE_LENGTH = len(b"\\u0041")  # what _ESCAPED_KEY_CHARACTER matches


class _Occurrences:
    """Where a text occurs in a line, as far as questions about it have read: the last occurrence
    found, and from where on there is none. A question reads only what these leave unknown, so
    questions about one line read each byte at most once to say "none from here", and to say
    "one from here" only up to the first."""

    __slots__ = ("last_found", "none_from")

    def __init__(self, size: int):
        self.last_found = -1
        self.none_from = size


class _LineFacts:
    """What :func:`_may_repeat` reads from a line, kept for the next question about it: where the
    keys' quoted texts and the escapes that could spell a key character occur (each question reads
    only what earlier ones did not), and whether the line's object has a key once. A hover moving
    along a line of megabytes then costs what finding its place costs, not a read of the line."""

    __slots__ = ("_occurrences", "_once", "raw")

    def __init__(self, raw: bytes):
        self.raw = raw
        self._occurrences: dict[bytes, _Occurrences] = {}
        self._once: dict[bytes, bool] = {}

    def found_from(self, text: bytes, start: int) -> bool:
        """Whether ``text`` occurs at or after byte ``start`` (``_ESCAPE``: an escape that could
        spell a key character)."""
        known = self._occurrences.get(text)
        if known is None:
            known = self._occurrences[text] = _Occurrences(len(self.raw))
        if known.last_found >= start:
            return True
        if start >= known.none_from:
            return False
        found = self._first(text, start, known.none_from)
        if found < 0:
            known.none_from = start
            return False
        known.last_found = max(known.last_found, found)
        return True

    def _first(self, text: bytes, start: int, stop: int) -> int:
        """Where the first occurrence of ``text`` starting in [start, stop) starts, or -1."""
        raw = self.raw
        if text is not _ESCAPE:
            return raw.find(text, start, stop + len(text) - 1)
        if raw.find(_ESCAPE, start, stop + len(_ESCAPE) - 1) < 0:  # (the usual answer, at memchr speed)
            return -1
        found = _ESCAPED_KEY_CHARACTER.search(raw, start, stop + _ESCAPE_LENGTH - 1)
        return found.start() if found is not None else -1

    def once_in_the_object(self, quoted: bytes) -> bool:
        found = self._once.get(quoted)
        if found is None:
            found = self._once[quoted] = _once_in_the_object(self.raw, quoted)
        return found


# A line this long keeps its facts for the next question about it: reading them again would
# cost more than comparing its bytes with those of the line they were read from.
_KEPT_FROM = 64 * 1024
_kept: _LineFacts | None = None


def _facts_of(raw: bytes) -> _LineFacts:
    """The facts of ``raw``: those kept, when they are of the same bytes (a line read again from
    its file is other bytes that are equal), else new ones (kept for a long line: one line's, the
    latest asked about, at a time)."""
    global _kept
    kept = _kept
    if kept is not None and (kept.raw is raw or (len(kept.raw) == len(raw) and kept.raw == raw)):
        return kept
    facts = _LineFacts(raw)
    if len(raw) >= _KEPT_FROM:
        _kept = facts
    return facts


def forget_kept_facts() -> None:
    """Let go of the facts kept for a long line, and so of its bytes: its document was closed
    (whichever document's they are: a line of another one has them read again at its next
    question, as before they were kept)."""
    global _kept
    _kept = None


_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _once_in_the_object(raw: bytes, quoted: bytes) -> bool:
    """Whether the line's object has the member whose key is ``quoted`` once: every other
    occurrence of that text is inside the values JSON.parse keeps (the value of a member written
    twice is not, so its key is then counted twice). Read at C speed, values not decoded."""
    try:
        members = _MEMBERS.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return raw.count(quoted) - sum(bytes(v).count(quoted) for v in members.values()) == 1


def scalar_at(raw: bytes, offset: int) -> Located | None:
    """The key or scalar value (string, number, literal) under byte ``offset``.

    A cursor just after a token (``offset == end``) still counts as on it, as editors place it;
    a token starting there wins.
    """
    walk = Walk(raw)
    best: Located | None = None
    for what, start, end in walk.steps():
        if what == CLOSED:
            continue
        if start > offset:
            break
        if start <= offset <= end and end > start:
            best = Located(walk.path(what), start, end, what == KEY)
            if offset < end:
                return best
    return best
