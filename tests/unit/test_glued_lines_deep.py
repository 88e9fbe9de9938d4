"""Lines glued together or cut off that hold values nested deeper than msgspec reads: the search
for their pieces reads each object nested in them by its top level (its members' objects and
arrays standing in for values), the exact parser only for an object whose top level makes it an
entry, so a damaged line nested thousands deep costs about one reading of it, not one for each
object around its middle. The pieces found are the ones the search found when it gave each
object to the exact parser, on random damaged lines, deep ones among them."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_glued_lines import REAL_LINES

from pi_session_server.format import glued
from pi_session_server.format.jsjson import dumps, parse_bytes
from pi_session_server.format.jsvalue import ABSENT

ENTRIES = [
    S.user("aaaa0001", None, "first").encode(),
    S.assistant("bbbb0002", "aaaa0001", "second").encode(),
    S.tool_result("dddd0004", "cccc0003", "t1").encode(),
]
# what a deep line nests, level after level: content blocks, tool call arguments, plain arrays,
# objects that look like entries (a type and a timestamp) and ones that do not
LEVELS = [
    ('[{"type":"text","text":"x","c":', "}]"),
    ('{"type":"x","a":', "}"),
    ("[", "]"),
    ('{"a":', "}"),
    ('{"type":"m","timestamp":1,"id":"i","a":', "}"),
    ('{"type":"m","timestamp":1,"id":', "}"),
    ('{"type":"m","a":[1,{"timestamp":2}],"b":', ',"timestamp":"t"}'),
]
DEPTH_MSGSPEC_REFUSES = 1200  # (with the recursion limit set below)


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """msgspec reads as deep as Python's recursion limit lets it: the depth the tests assume."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def searched_before(raw: bytes) -> list[glued._Span] | None:
    """``glued._searched_spans`` as it was: each object it tries that msgspec does not read is read
    whole by the exact parser, whatever its top level."""
    with mock.patch.object(glued, "_top_level_is_no_entry", lambda *args: False):
        return glued._searched_spans(raw)


def deep_entry(rng: random.Random, depth: int) -> bytes:
    """A message whose content is nested ``depth`` levels deep, of one or two kinds of level."""
    kinds = rng.sample(LEVELS, rng.choice([1, 2]))
    opening = b"".join(kinds[i % len(kinds)][0].encode() for i in range(depth))
    closing = b"".join(kinds[i % len(kinds)][1].encode() for i in reversed(range(depth)))
    return (
        b'{"type":"message","id":"deep0001","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:00.000Z",'
        b'"message":{"role":"user","content":' + opening + b'"x"' + closing + b',"timestamp":1}}'
    )


def damaged_line(rng: random.Random) -> bytes:
    """Two to three lines glued, each a deep entry or a real line, whole or cut off anywhere (in
    the middle of a deep one, or among its closing brackets), some with a byte JSON.parse rejects,
    invalid UTF-8 or a lone surrogate escape in them."""
    parts = []
    for _ in range(rng.randint(2, 3)):
        if rng.random() < 0.6:
            line = deep_entry(rng, rng.randint(DEPTH_MSGSPEC_REFUSES, DEPTH_MSGSPEC_REFUSES + 400))
        else:
            line = rng.choice([*REAL_LINES[:200], *ENTRIES])
        roll = rng.random()
        if roll < 0.3:
            line = line[: rng.randint(1, len(line) - 1)]
        elif roll < 0.45:
            line = line[: len(line) - rng.randint(1, min(len(line) - 1, 3 * DEPTH_MSGSPEC_REFUSES))]
        elif roll < 0.6:
            at = rng.randint(1, len(line) - 1)
            line = line[:at] + rng.choice([b"x", b"\xff", b"\\ud800", b'"', b",", b"}"]) + line[at:]
        parts.append(line + rng.choice([b"", b"", b" ", b"\r"]))
    return b"".join(parts)


def comparable(spans: list[glued._Span] | tuple[glued.Piece, ...] | None) -> list[tuple[object, ...]] | None:
    """``spans`` (or pieces), each head's id as JSON text: an id nested deeper than Python compares."""
    if spans is None:
        return None

    def text(value: object) -> object:
        return value if value is ABSENT else dumps(value)

    found: list[tuple[object, ...]] = []
    for span in spans:
        if isinstance(span, glued.Piece):
            found.append((span.start, span.end, span.column, span.whole, span.type, text(span.id)))
        else:
            start, end, head = span
            found.append(
                (start, end) if head is None else (start, end, head.type, text(head.id), head.timestamp)
            )
    return found


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_pieces_of_a_damaged_deep_line_are_those_the_exact_parser_finds(rng: random.Random) -> None:
    raw = damaged_line(rng)
    with recursion_limit(1000):
        before = searched_before(raw)
        assert comparable(glued._searched_spans(raw)) == comparable(before)
        read = glued.glued_read(raw)
        expected = read.pieces if read.told else glued._glued(raw, before)
        assert comparable(glued.glued_pieces(raw)) == comparable(expected)


@pytest.mark.parametrize("levels", [LEVELS[0], LEVELS[1], LEVELS[4]])
@pytest.mark.parametrize("cut", ["closing", "glued"])
def test_a_deep_damaged_line_is_given_to_the_exact_parser_at_most_once(
    levels: tuple[str, str], cut: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object nested in a line cut off among its closing brackets closes: the search used to
    read each of them whole with the exact parser (minutes for a line nested some ten thousand
    deep); now only the one whose top level is an entry's."""
    depth = 3000
    line = deep_entry(random.Random(0), 1).replace(
        b'"x"', levels[0].encode() * depth + b'"x"' + levels[1].encode() * depth
    )
    raw = (line[:-40] if cut == "closing" else line) + ENTRIES[1]
    exact: list[int] = []
    monkeypatch.setattr(glued, "parse_bytes", lambda data: (exact.append(len(data)), parse_bytes(data))[1])
    with recursion_limit(1000):
        before = searched_before(raw)  # (the module's parse_bytes is not the reference's)
        exact.clear()
        assert comparable(glued._searched_spans(raw)) == comparable(before)
    assert len(exact) <= 1


@pytest.mark.parametrize("damage", [b"x", b",", b"]"])
def test_a_deep_line_that_json_parse_rejects_deep_inside_is_no_entry(damage: bytes) -> None:
    """Its top level is an entry's: only the exact parser tells whether what it holds is valid."""
    line = deep_entry(random.Random(0), 1).replace(b'"x"', b"[" * 3000 + b'"x"' + damage + b"]" * 3000)
    raw = line + ENTRIES[1]
    with recursion_limit(1000):
        pieces = glued.glued_pieces(raw)
    assert pieces is not None
    assert [(p.start, p.whole, p.id) for p in pieces] == [(0, False, ABSENT), (len(line), True, "bbbb0002")]
