"""analysis/lone_cr.py: session lines (split on "\\n") against the LSP's lines ("\\n", "\\r\\n" and a
lone "\\r" end a line), checked against a plain splitter on random texts and random edits."""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.analysis import lone_cr
from pi_session_server.analysis.lone_cr import LoneCarriageReturns, lone_cr_offsets, lone_crs_of_file


@dataclass
class Line:
    raw: bytes


def session_lines(text: bytes) -> list[Line]:
    return [Line(raw) for raw in text.split(b"\n")]


def lsp_starts(text: bytes) -> list[int]:
    """Byte offsets in ``text`` where each LSP line starts."""
    return [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", text)]


def offsets_of_lines(text: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\n", text)]


texts = st.lists(st.sampled_from([b"a", b"\xc3\xa9", b"\r", b"\n", b"\r\n", b"{}", b" "]), max_size=40).map(
    b"".join
)


def check(text: bytes, crs: LoneCarriageReturns) -> None:
    starts = lsp_starts(text)
    line_starts = offsets_of_lines(text)
    for line, line_start in enumerate(line_starts):
        raw = text.split(b"\n")[line]
        for offset in range(len(raw) + 1):
            absolute = line_start + offset
            lsp_line = max(k for k, s in enumerate(starts) if s <= absolute)
            # an offset on a "\r" of "\r\n" belongs to the line that "\r\n" ends
            got_line, segment_start = crs.to_lsp(line, offset)
            assert got_line == lsp_line, (text, line, offset)
            assert line_start + segment_start == starts[lsp_line]
        # the number texts give the line: the client's line (from 1) where the session line starts
        assert crs.line_number(line) == max(k for k, s in enumerate(starts) if s <= line_start) + 1
    for lsp_line, start in enumerate(starts):
        line, segment_start, segment_end = crs.from_lsp(lsp_line)
        assert line_starts[line] + segment_start == start, (text, lsp_line)
        if segment_end >= 0:
            assert text[line_starts[line] + segment_end] == 13  # ends at its "\r"


@settings(max_examples=300, deadline=None)
@given(texts)
def test_the_mapping_agrees_with_the_lsp_lines(text: bytes) -> None:
    crs = LoneCarriageReturns()
    crs.scan(session_lines(text))
    check(text, crs)


def test_a_text_without_lone_carriage_returns_maps_to_itself() -> None:
    crs = LoneCarriageReturns()
    crs.scan(session_lines(b"a\r\nb\nc\r\n"))
    assert not crs
    assert crs.to_lsp(2, 1) == (2, 0) and crs.from_lsp(7) == (7, 0, -1)


def test_lone_carriage_returns_of_a_line() -> None:
    assert lone_cr_offsets(b"a\rb\r", last=False) == [2]  # the last "\r" is the "\r\n" one
    assert lone_cr_offsets(b"a\rb\r", last=True) == [2, 4]


@settings(max_examples=200, deadline=None)
@given(texts, st.randoms(use_true_random=False))
def test_edits_keep_the_mapping_true(text: bytes, rnd: random.Random) -> None:
    lines = session_lines(text)
    crs = LoneCarriageReturns()
    crs.scan(lines)
    for _ in range(5):
        joined = b"\n".join(line.raw for line in lines)
        start = rnd.randrange(len(joined) + 1)
        end = rnd.randrange(start, len(joined) + 1)
        inserted = rnd.choice([b"", b"\r", b"\n", b"x\ry", b"\r\n", b"z"])
        first = joined[:start].count(b"\n")
        removed = joined[start:end].count(b"\n") + 1
        new = joined[:start] + inserted + joined[end:]
        before = len(lines)
        lines[:] = session_lines(new)
        crs.edited(lines, first, removed, removed + len(lines) - before)
        check(new, crs)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(1, 5), st.integers(0, 45))
def test_a_file_read_in_chunks_has_the_lone_carriage_returns_of_its_lines(
    text: bytes, chunk: int, end: int
) -> None:
    """A file searched chunk by chunk (a "\\r" cut from its "\\n" at a chunk's end among them),
    whole or to a byte ``end``, maps lines as its lines scanned one by one do; and says which of
    its lines hold lone "\\r" (a client numbers its lines from that)."""
    saved = lone_cr._CHUNK
    lone_cr._CHUNK = chunk
    try:
        for read_to, part in ((None, text), (end, text[:end])):
            found = lone_crs_of_file(io.BytesIO(text), read_to)
            check(part, found)
            scanned = LoneCarriageReturns()
            scanned.scan(session_lines(part))
            assert found.by_line() == scanned.by_line()
    finally:
        lone_cr._CHUNK = saved


def test_the_lines_that_hold_lone_carriage_returns() -> None:
    found = lone_crs_of_file(io.BytesIO(b"a\r\nb\rc\rd\ne\nf\r"))
    assert found.by_line() == [(1, 2), (3, 1)]  # ("\\r\\n" ends line 0; the last byte is lone)
