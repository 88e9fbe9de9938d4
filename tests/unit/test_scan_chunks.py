"""The scanner gives the same entries, problems and positions whatever the chunk size and whether
the next chunk is read ahead on another thread: lines that run across one or many chunks, a final
line without newline, broken lines at chunk edges."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format import readahead, scan

DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"


def scanned(path: Path, *, include_tail: bool = True, keep_bytes: bool = False) -> Any:
    fd = os.open(path, os.O_RDONLY)
    try:
        result = scan.scan_entries(
            fd, None, have_header=True, include_tail=include_tail, keep_bytes=keep_bytes
        )
    finally:
        os.close(fd)
    entries = [
        (e.line, e.offset, e.length, e.type, e.id, e.parent_id, e.role, e._raw) for e in result.entries
    ]
    problems = [(p.line, p.kind, p.offset, p.length) for p in result.problems]
    return entries, problems, result.lines, result.end, result.tail


@pytest.fixture(
    params=[(7, False), (64, True), (1000, True), (1 << 20, False)], ids=lambda p: f"chunk{p[0]}-thread{p[1]}"
)
def small_chunks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    chunk, threaded = request.param
    monkeypatch.setattr(scan, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(readahead, "THREAD_MIN_BYTES", 0 if threaded else 1 << 62)


def reference_scan(path: Path, **kwargs: Any) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_SIZE", 1 << 26)
        mp.setattr(readahead, "THREAD_MIN_BYTES", 1 << 62)
        return scanned(path, **kwargs)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_real_sessions_scan_the_same_in_small_chunks(small_chunks: None, name: str):
    path = DATA / name
    assert scanned(path, keep_bytes=True) == reference_scan(path, keep_bytes=True)


LINES = st.sampled_from(
    [
        b'{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}',
        b'{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","provider":"p","model":"m"}}',
        b'{"type":"custom","id":"c","parentId":"b","data":"' + b"y" * 300 + b'"}',
        b'{"type":"label","id":"d","targetId":"a","label":"L"}',
        b"",
        b"   ",
        b"{broken",
        b"[1,2]",
        b"null",
        b'{"type":"message","id":"\\ud800","parentId":"a"}',
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINES, max_size=30), st.booleans(), st.sampled_from([1, 5, 33, 257]), st.booleans())
def test_random_lines_scan_the_same_in_any_chunking(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    final_newline: bool,
    chunk: int,
    threaded: bool,
):
    path = tmp_path_factory.mktemp("scan") / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    expected = reference_scan(path, include_tail=final_newline)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_SIZE", chunk)
        mp.setattr(readahead, "THREAD_MIN_BYTES", 0 if threaded else 1 << 62)
        assert scanned(path, include_tail=final_newline) == expected


def test_the_reader_thread_stops_when_the_caller_stops_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "s.bin"
    path.write_bytes(b"x" * 10_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = readahead.ChunkReader(fd, 0, None, 100, total=10_000)
        monkeypatch.setattr(reader, "_threaded", True)
        for buf, length in reader:
            assert bytes(buf[:length]) == b"x" * 100
            reader.release(buf)
            break
        reader.close()
        assert reader._thread is None
    finally:
        os.close(fd)


def test_a_read_error_on_the_reader_thread_reaches_the_caller(tmp_path: Path):
    fd = os.open(tmp_path, os.O_RDONLY)  # a directory: preadv fails with EISDIR
    try:
        reader = readahead.ChunkReader(fd, 0, None, 100, total=1 << 30)
        with pytest.raises(IsADirectoryError):
            list(reader)
    finally:
        os.close(fd)
