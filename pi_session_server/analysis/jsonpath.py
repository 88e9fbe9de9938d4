"""Where things are inside one JSON line: the byte span of a value at a path, the path at an offset.

A regular-expression tokenizer over the line's UTF-8 bytes: long strings (message text, base64
images) are single tokens, so locating a field costs little even on multi-megabyte lines. It
tolerates invalid JSON (it is only used to place diagnostics and to answer what is under the
cursor), and it never decodes string contents except for object keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .fields import Path

_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[{}\[\]:,]|[^\s{}\[\]:,"]+')


@dataclass(frozen=True, slots=True)
class Located:
    path: Path
    start: int  # byte offsets in the line
    end: int
    is_key: bool = False


class _Frame:
    __slots__ = ("is_object", "key", "index", "expect_key", "start")

    def __init__(self, is_object: bool, start: int):
        self.is_object = is_object
        self.key: str | None = None
        self.index = 0
        self.expect_key = is_object
        self.start = start


def _key_text(token: bytes) -> str:
    body = token[1:-1] if len(token) >= 2 and token.endswith(b'"') else token[1:]
    if b"\\" not in body:
        return body.decode("utf-8", "replace")
    import json

    try:
        return str(json.loads(b'"' + body + b'"'))
    except ValueError:
        return body.decode("utf-8", "replace")


def iter_values(raw: bytes) -> Iterator[tuple[Path, int, int, bool]]:
    """Yield ``(path, start, end, is_key)`` for every key and value of the line.

    For containers the span is reported when they close (``end`` is after the closing bracket);
    scalars are reported when read. Keys are reported with ``is_key`` true and their own path.
    """
    stack: list[_Frame] = []
    for m in _TOKEN.finditer(raw):
        tok = m.group()
        start, end = m.start(), m.end()
        c = tok[:1]
        top = stack[-1] if stack else None
        if c in (b"{", b"["):
            stack.append(_Frame(c == b"{", start))
            continue
        if c in (b"}", b"]"):
            if stack:
                frame = stack.pop()
                path = _path_of(stack)
                yield path, frame.start, end, False
            continue
        if c == b":":
            if top is not None and top.is_object:
                top.expect_key = False
            continue
        if c == b",":
            if top is not None:
                if top.is_object:
                    top.expect_key = True
                    top.key = None
                else:
                    top.index += 1
            continue
        # a string or a bare literal
        if top is not None and top.is_object and top.expect_key:
            top.key = _key_text(tok) if c == b'"' else tok.decode("utf-8", "replace")
            yield (*_path_of(stack[:-1]), top.key), start, end, True
            continue
        yield _path_of(stack), start, end, False


def _path_of(stack: list[_Frame]) -> Path:
    path: list[str | int] = []
    for frame in stack:
        if frame.is_object:
            if frame.key is None:
                break
            path.append(frame.key)
        else:
            path.append(frame.index)
    return tuple(path)


def value_span(raw: bytes, path: Path) -> tuple[int, int] | None:
    """Byte span of the value at ``path`` (``()`` is the whole line's value), or None."""
    if not path:
        stripped = raw.rstrip(b" \t\r")
        lead = len(raw) - len(raw.lstrip(b" \t\r"))
        return (lead, len(stripped)) if stripped else None
    n = len(path)
    for found, start, end, is_key in iter_values(raw):
        if is_key:
            continue
        if len(found) == n and found == path:
            return start, end
    return None


def key_span(raw: bytes, path: Path) -> tuple[int, int] | None:
    """Byte span of the key token of the member at ``path`` (a path ending in a key)."""
    if not path or not isinstance(path[-1], str):
        return None
    for found, start, end, is_key in iter_values(raw):
        if is_key and found == path:
            return start, end
    return None


def member_span(raw: bytes, path: Path) -> tuple[int, int] | None:
    """From the key to the end of the value of the member at ``path`` (for whole-member edits)."""
    key = key_span(raw, path)
    value = value_span(raw, path)
    if key is None or value is None:
        return value
    return key[0], value[1]


def scalar_at(raw: bytes, offset: int) -> Located | None:
    """The key or scalar value (string, number, literal) under byte ``offset``.

    A cursor just after a token (``offset == end``) still counts as on it, as editors place it.
    """
    best: Located | None = None
    for found, start, end, is_key in iter_values(raw):
        if start > offset:
            break
        if start <= offset <= end and end - start > 0:
            tok0 = raw[start : start + 1]
            if tok0 in (b"{", b"["):
                continue
            best = Located(found, start, end, is_key)
            if offset < end:
                return best
    return best
