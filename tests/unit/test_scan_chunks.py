"""The scanner gives the same entries, problems and positions whatever the chunk size: lines that
run across one or many chunks (joined from the chunk before or read again), a final line without
newline, broken lines at chunk edges."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format import scan

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
        (e.line, e.offset, e.length, e.type, e.id, e.parent_id, e.role, e._body) for e in result.entries
    ]
    problems = [(p.line, p.kind, p.offset, p.length) for p in result.problems]
    return entries, problems, result.lines, result.end, result.tail


@pytest.fixture(params=[7, 64, 1000, 1 << 20], ids=lambda p: f"chunk{p}")
def small_chunks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "CHUNK_SIZE", request.param)


def reference_scan(path: Path, **kwargs: Any) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_SIZE", 1 << 26)
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


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(LINES, max_size=30), st.booleans(), st.sampled_from([1, 5, 33, 257]))
def test_random_lines_scan_the_same_in_any_chunking(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], final_newline: bool, chunk: int
):
    path = tmp_path_factory.mktemp("scan") / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    expected = reference_scan(path, include_tail=final_newline)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_SIZE", chunk)
        assert scanned(path, include_tail=final_newline) == expected


def _line(n: int, size: int) -> bytes:
    parent = "null" if n == 0 else f'"e{n - 1}"'
    head = f'{{"type":"custom","id":"e{n}","parentId":{parent},"timestamp":"t","data":"'.encode()
    return head + b"y" * (size - len(head) - 2) + b'"}'


def _scan_counting_growths(path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Scan in chunks of ``chunk`` bytes (same result as one big read) and say what sizes the
    buffer was given, in turn."""
    expected = reference_scan(path)
    sizes: list[int] = []
    real_grown = scan._grown

    def counting_grown(buf: bytearray, size: int, keep: int) -> bytearray:
        sizes.append(size)
        return real_grown(buf, size, keep)

    monkeypatch.setattr(scan, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(scan, "_grown", counting_grown)
    assert scanned(path) == expected
    return sizes


def test_a_buffer_grown_for_a_long_line_is_kept_for_the_next_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # a session of screenshots: lines a bit longer than a chunk, one after another
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_line(n, 1500) + b"\n" for n in range(12)))
    assert _scan_counting_growths(path, 1000, monkeypatch) == [2000]


def test_a_buffer_grown_beyond_its_bound_shrinks_back_to_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(_line(n, 20_000 if n == 0 else 100) + b"\n" for n in range(12)))
    sizes = _scan_counting_growths(path, 1000, monkeypatch)
    assert sizes[:-1] == [2000, 4000, 8000, 16000, 32000] and sizes[-1] == 1000
    assert scan.KEEP_GROWN_CHUNKS * 1000 < 32000


@pytest.mark.parametrize("size", [10, 16 * 1024 - 1, 16 * 1024, 70 * 1024, 300 * 1024])
@pytest.mark.parametrize("newline", [True, False])
def test_a_line_whose_length_is_not_kept_is_read_to_its_newline(tmp_path, size: int, newline: bool):
    # scan.SHORT_LINE: shorter lines keep no length (0) and are read again up to their newline
    line = b'{"type":"message","text":"' + b"x" * size + b'"}'
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"{}\n" + line + (b"\n{}\n" if newline else b""))
    with open(path, "rb") as f:
        assert scan.line_at(f.fileno(), 3, 0) == line
        assert scan.line_at(f.fileno(), 3, len(line)) == line
        assert scan.line_at(f.fileno(), 3, 5) == line[:5]


def test_only_long_lines_keep_their_length_and_every_body_reads_back(tmp_path):
    lines = [
        b'{"type":"message","id":"m%d","text":"%s"}' % (n, b"y" * size)
        for n, size in enumerate([5, 70_000, 40])
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    source = scan.FileLineSource(str(path))
    try:
        result = scan.scan_entries(source.fd, source, have_header=True)
        assert [e.length for e in result.entries] == [0, len(lines[1]), 0]
        assert [e.value["text"] for e in result.entries] == ["y" * 5, "y" * 70_000, "y" * 40]
    finally:
        source.close()


def test_a_line_source_whose_file_cannot_be_opened_raises_that_and_nothing_at_its_collection(
    tmp_path, monkeypatch
):
    # its __del__ runs on the object __init__ left half made: without a descriptor it has nothing
    # to close (it used to raise AttributeError there, which Python prints and pytest warns of)
    unraisable: list[BaseException | None] = []
    monkeypatch.setattr("sys.unraisablehook", lambda hook_args: unraisable.append(hook_args.exc_value))
    with pytest.raises(FileNotFoundError):
        scan.FileLineSource(str(tmp_path / "missing.jsonl"))
    gc.collect()
    assert unraisable == []
