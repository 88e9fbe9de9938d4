"""analysis/lone_cr.py: session lines (split on "\\n") against the LSP's lines ("\\n", "\\r\\n" and a
lone "\\r" end a line), checked against a plain splitter on random texts and random edits; a file's
search that goes on over the bytes appended since, and one changed otherwise searched whole."""

from __future__ import annotations

import io
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lone_cr_reads import counted_searches

from pi_session_server.analysis import lone_cr
from pi_session_server.analysis.lone_cr import (
    LoneCarriageReturns,
    lone_cr_offsets,
    lone_crs_of_file,
    search_file,
    search_lone_crs,
)


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


@settings(max_examples=300, deadline=None)
@given(texts, texts, st.integers(1, 5))
def test_a_search_that_goes_on_over_bytes_appended_finds_what_a_search_of_the_whole_file_does(
    before: bytes, appended: bytes, chunk: int
) -> None:
    """The file searched, then searched on over the bytes appended since (a "\\r" that ended it,
    lone then, is half of a CRLF when a "\\n" was appended), has the lone "\\r" of the whole file."""
    saved = lone_cr._CHUNK
    lone_cr._CHUNK = chunk
    try:
        file = io.BytesIO(before + appended)
        first = search_lone_crs(file, end=len(before))
        assert first.found().by_line() == lone_crs_of_file(io.BytesIO(before)).by_line()
        went_on = search_lone_crs(file, first)
        assert went_on.found().by_line() == lone_crs_of_file(io.BytesIO(before + appended)).by_line()
        assert first.found().by_line() == lone_crs_of_file(io.BytesIO(before)).by_line()  # (unchanged)
    finally:
        lone_cr._CHUNK = saved


@pytest.fixture(name="bytes_read")
def bytes_read_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    return counted_searches(monkeypatch)


LINES = b"".join(b'{"n":%d,\r"x":"%s"}\n' % (n, b"y" * 50) for n in range(200))  # a lone "\r" each


def _searched(path: Path, before: lone_cr.SearchedFile | None = None) -> lone_cr.SearchedFile:
    searched = search_file(str(path), before)
    assert searched is not None and searched.stamp is not None
    scanned = LoneCarriageReturns()  # (line by line: no search read)
    scanned.scan(session_lines(path.read_bytes()))
    assert searched.search.found().by_line() == scanned.by_line()
    return searched


def test_a_file_appended_to_is_searched_on_from_where_its_last_search_stopped(
    tmp_path: Path, bytes_read: list[int]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINES)
    first = _searched(path)
    with path.open("ab") as file:
        file.write(b'{"n":"more",\r"x":1}\n')
    went_on = _searched(path, first)
    assert bytes_read == [len(LINES), 20]
    assert went_on.search.found().by_line()[-1] == (200, 1)
    assert _searched(path, went_on).search == went_on.search and bytes_read[-1] == 0  # unchanged


def test_a_carriage_return_that_ended_the_file_and_a_line_feed_appended_are_a_crlf(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\r\n{"b":2}\r')
    first = _searched(path)
    assert first.search.found().by_line() == [(1, 1)]  # (the last byte: lone while nothing follows)
    with path.open("ab") as file:
        file.write(b'\n{"c":\r3}\n')
    assert _searched(path, first).search.found().by_line() == [(2, 1)]


def _shrunk(path: Path) -> None:
    os.truncate(path, len(LINES) // 2)


def _shrunk_and_grown(path: Path) -> None:
    """Truncated and written again, the lone "\\r" of its last lines gone, longer than it was."""
    with path.open("r+b") as file:
        file.truncate(len(LINES) - 1000)
        file.seek(0, os.SEEK_END)
        file.write(LINES[-1000:].replace(b"\r", b" ") + LINES[:100])


def _rewritten_in_place(path: Path) -> None:
    """The same file written again from its start, the lone "\\r" of its first line gone, longer."""
    path.write_bytes(LINES.replace(b"\r", b" ", 1) + LINES[:100])


def _renamed_over(path: Path) -> None:
    """Another file renamed over it: the same bytes with two more lone "\\r" before its end, longer."""
    other = path.with_name("other.jsonl")
    other.write_bytes(LINES[:-10] + b"\r\r" + LINES[-8:] + LINES[:100])
    os.replace(other, path)


def _rewritten_with_the_same_size(path: Path) -> None:
    """The same file and size, a lone "\\r" moved from the last line to the first."""
    st = os.stat(path)
    last = LINES.rindex(b"\r")
    path.write_bytes(LINES[:3] + b"\r" + LINES[3:last] + LINES[last + 1 :])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # (a clock's tick later)
    assert os.stat(path).st_size == st.st_size


@pytest.mark.parametrize(
    "change", [_shrunk, _shrunk_and_grown, _rewritten_in_place, _renamed_over, _rewritten_with_the_same_size]
)
def test_a_file_changed_otherwise_than_appended_to_is_searched_again_whole(
    tmp_path: Path, bytes_read: list[int], change: Callable[[Path], None]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINES)
    first = _searched(path)
    change(path)
    bytes_read.clear()
    again = _searched(path, first)  # (the right lone "\r": see _searched)
    assert bytes_read[0] == os.stat(path).st_size
    assert again.search != first.search
