"""The scanner gives the same entries, problems and positions whatever the chunk size: lines that
run across one or many chunks (joined from the chunk before or read again), a final line without
newline, broken lines at chunk edges."""

from __future__ import annotations

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
