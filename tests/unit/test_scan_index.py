"""The persistent index of a session file (session/scan_index.py): what it gives is what a scan of
the file gives, whatever the lines hold; every way a file changes after it was indexed is noticed
(the index is ignored and rebuilt, or, for an append, only the new lines are scanned); an index
that cannot be written, is damaged or of another format is no error."""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pi_session_server.errors import StaleFileError
from pi_session_server.format import scan
from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, cache_dir, loader, scan_index
from pi_session_server.session.cache_dir import IndexSettings
from pi_session_server.session.loader import open_for_reading, peek_header
from pi_session_server.session.migrate import needs_migration

# (the racy indexes of files written just before they are read: see their own tests below)
pytestmark = pytest.mark.usefixtures("files_settle_at_once")

DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"
SOURCE = object()  # stands for the file's line source: every entry must point to it


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


def _settings(directory: Path) -> IndexSettings:
    return IndexSettings(str(directory), min_size=0)


def _open_scan(path: Path, directory: Path | None, *, keep_bytes: bool = False) -> scan.ScanResult:
    """What opening ``path`` finds after its header: with the index in ``directory``, or scanned."""
    fd = open_for_reading(str(path))
    try:
        peek = peek_header(fd)
        start, first_line = peek.next_offset, peek.line + 1
        if directory is None:
            return scan.scan_entries(
                fd, SOURCE, start=start, first_line=first_line, have_header=True, keep_bytes=keep_bytes
            )
        return scan_index.scan_with_index(
            fd, SOURCE, start, first_line, _settings(directory), keep_bytes=keep_bytes
        )
    finally:
        os.close(fd)


def _facts(result: scan.ScanResult, path: Path) -> dict[str, Any]:
    """Everything a scan result tells, positions by identity. An entry's ``length`` is its line's
    length where the result keeps it (0: read to the newline, the same bytes)."""
    entries = result.entries
    position = {id(entry): at for at, entry in enumerate(entries)}
    data = path.read_bytes()

    def typed(value: Any) -> Any:
        return (type(value).__name__, value)

    def length(e: Entry) -> int:
        if e.length:
            return e.length
        end = data.find(b"\n", e.offset)
        return (len(data) if end < 0 else end) - e.offset

    return {
        "entries": [
            (
                type(e) is Entry,
                e.line,
                e.offset,
                length(e),
                typed(e.type),
                typed(e.id),
                typed(e.parent_id),
                typed(e.timestamp),
                None if e.message is None else (type(e.message).__name__, typed(e.message.role)),
                typed(e.targetId),
                typed(e.label),
                typed(e._body),
                e._source is SOURCE,
            )
            for e in entries
        ],
        "problems": [(p.line, p.column, p.kind, p.message, p.offset, p.length) for p in result.problems],
        "lines": result.lines,
        "end": result.end,
        "tail": result.tail,
        "by_id": sorted((key, position[id(e)]) for key, e in result.index.by_id.items())
        if result.index.complete
        else None,
        "non_messages": [position[id(e)] for e in result.index.non_messages],
        "complete": result.index.complete,
    }


def _assert_chains_hold(result: scan.ScanResult, single: scan.ScanResult) -> None:
    """Every chain start of one scan is listed (more are allowed), and inside a chain every entry's
    parentId is the very string object of the id before it."""
    starts = result.index.chain_starts
    assert starts == sorted(set(starts))
    assert set(single.index.chain_starts) <= set(starts)
    listed = set(starts)
    entries = result.entries
    for at in range(1, len(entries)):
        if at not in listed:
            assert entries[at].parent_id is entries[at - 1].id


def assert_index_gives_the_scan(path: Path, directory: Path, *, keep_bytes: bool = False) -> None:
    """Index ``path`` afresh, read it back, and compare both with a plain scan."""
    single = _open_scan(path, None, keep_bytes=keep_bytes)
    expected = _facts(single, path)
    written = _open_scan(path, directory, keep_bytes=keep_bytes)
    assert _facts(written, path) == expected
    outcome = scan_index.last_outcome
    assert outcome.read in ("missing", "stale") and outcome.written, outcome
    read = _open_scan(path, directory, keep_bytes=keep_bytes)
    assert scan_index.last_outcome.read == "used", scan_index.last_outcome
    assert _facts(read, path) == expected
    _assert_chains_hold(read, single)


# ---------------------------------------------------------------------- the same answers


@pytest.mark.parametrize("keep_bytes", [False, True])
@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_real_sessions_read_the_same_from_their_index(name: str, keep_bytes: bool, index_dir: Path):
    assert_index_gives_the_scan(DATA / name, index_dir, keep_bytes=keep_bytes)


def _message(n: int, parent: int | None, role: str = "user", pad: int = 40) -> bytes:
    parent_json = "null" if parent is None else f'"m{parent}"'
    return (
        f'{{"type":"message","id":"m{n}","parentId":{parent_json},"timestamp":"2025-01-01T00:00:{n % 60:02d}Z",'
        f'"message":{{"role":"{role}","content":"{"x" * pad}"}}}}'
    ).encode()


HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}'

ODD_LINES = [
    b"",
    b"   \r",
    b"{broken",
    b"[1,2]",
    b"null",
    b"0",
    b'{"type":"message","id":"s","parentId":"\\ud800","message":{"role":"user"}}',  # held value
    b'{"type":"future_entry","id":"f","parentId":"m1","timestamp":"t"}',  # unknown type
    b'{"type":"message","id":"r","parentId":"m1","message":{"role":"narrator","content":"hi"}}',
    b'{"type":"message","id":"n","parentId":"m1","message":{"content":"no role"}}',
    b'{"type":"message","id":"nr","parentId":"m1","message":{"role":null}}',
    b'{"type":"custom","id":7,"parentId":12345678901234567890,"timestamp":1.5}',  # numbers
    b'{"type":"label","id":"l","parentId":"m2","targetId":"m1","label":{"odd":[1,"two"]}}',
    b'{"type":"label","id":"l2","parentId":"l","targetId":"m1","label":null}',
    b'{"type":"label","id":"l3","parentId":"l2","targetId":"m2","label":"fine"}',
    b'{"type":"message","id":"g1","parentId":"m3","message":{"role":"user"}}{"type":"message","id":"g2"}',
    b'{"type":"session_info","id":"i","parentId":"m2","name":"\xe2\x80\xa8 \xff bad utf-8"}',
    b'{"type":"compaction","id":"m2","parentId":"m1","summary":"same id again","firstKeptEntryId":"m1"}',
    b'{"type":"thinking_level_change","id":"t","parentId":"m9","thinkingLevel":"high","_body":1}',
    b'{"type":"message","id":"z","parentId":"m1","timestamp":"t","message":null}',
    b'{"type":"model_change","id":"q","parentId":"m3","timestamp":5,"provider":"p","modelId":"m"}',
    b'{"type":"custom","id":"nul\\u0000id","parentId":"m1","timestamp":"t\\u0000s"}',  # NUL in the id
    b'{"type":"custom","id":"","parentId":"","timestamp":""}',  # empty strings
    b'{"id":"no-type","parentId":"m1","timestamp":"t"}',
    b'{"type":"session","id":"second-header","timestamp":"t"}',
    b'{"type":"message","id":"\xf0\x9f\x98\x80 \xe2\x80\xa8","parentId":"m1","message":{"role":"user"}}',
]

LINE = st.one_of(
    st.integers(0, 40).map(lambda n: _message(n, n - 1 if n else None, pad=n * 7)),
    st.sampled_from(ODD_LINES),
)


@settings(max_examples=80, deadline=None)
@example(  # an entry read again from its line (a NUL in its id) that goes on the chain before it
    lines=[_message(1, 0, pad=7), ODD_LINES[21]],
    final_newline=True,
    crlf=False,
    keep_bytes=False,
    short_line=scan.SHORT_LINE,
)
@given(
    lines=st.lists(LINE, min_size=0, max_size=60),
    final_newline=st.booleans(),
    crlf=st.booleans(),
    keep_bytes=st.booleans(),
    short_line=st.sampled_from([scan.SHORT_LINE, 100]),
)
def test_any_lines_read_the_same_from_their_index(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    final_newline: bool,
    crlf: bool,
    keep_bytes: bool,
    short_line: int,
):
    work = tmp_path_factory.mktemp("index")
    path = work / "s.jsonl"
    newline = b"\r\n" if crlf else b"\n"
    path.write_bytes(newline.join([HEADER, *lines]) + (newline if final_newline else b""))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "SHORT_LINE", short_line)  # some lines here keep their length when it is 100
        assert_index_gives_the_scan(path, work / "index", keep_bytes=keep_bytes)


def test_many_distinct_types_and_roles_beyond_the_code_tables(tmp_path: Path, index_dir: Path):
    lines = [HEADER]
    for n in range(600):
        lines.append(
            f'{{"type":"kind{n % 300}","id":"k{n}","parentId":"k{n - 1}","timestamp":"t",'
            f'"message":{{"role":"role{n % 280}"}}}}'.encode()
        )
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert_index_gives_the_scan(path, index_dir)


def _session(path: Path, count: int = 400, final_newline: bool = False) -> Path:
    """A session with branches and odd lines spread through it (by default its last line has no
    newline)."""
    lines = [HEADER]
    for n in range(count):
        lines.append(_message(n, n - 1 if n % 50 else (n - 7 if n else None), pad=n % 90))
        if n % 37 == 0:
            lines.append(ODD_LINES[n % len(ODD_LINES)])
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    return path


# ---------------------------------------------------------------------- the file changes


@pytest.fixture
def scanned_from(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The offsets scanning started from, when opening with an index."""
    starts: list[int] = []
    real = scan_index.scan_entries

    def recording(fd: int, source: Any, **kwargs: Any) -> scan.ScanResult:
        starts.append(kwargs["start"])
        return real(fd, source, **kwargs)

    monkeypatch.setattr(scan_index, "scan_entries", recording)
    yield starts


def _fresh(path: Path) -> dict[str, Any]:
    return _facts(_open_scan(path, None), path)


@pytest.mark.parametrize("final_newline", [True, False])
def test_an_appended_file_scans_only_its_new_lines(
    tmp_path: Path, index_dir: Path, scanned_from: list[int], final_newline: bool
):
    path = _session(tmp_path / "s.jsonl", final_newline=final_newline)
    _open_scan(path, index_dir)
    indexed_end = _open_scan(path, index_dir).end
    assert scan_index.last_outcome.read == "used"
    with open(path, "ab") as f:  # finishes a last line without newline, then more lines
        f.write(b"\n" + _message(900, 399) + b"\n" + _message(901, 900) + b"\n" + _message(902, 901))
    scanned_from.clear()
    result = _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "grown"
    assert scanned_from == [indexed_end]  # the indexed lines were not read again
    assert _facts(result, path) == _fresh(path)
    assert result.entries[-1].id == "m902"


def test_an_index_is_written_again_once_the_new_lines_are_many(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    settings_ = IndexSettings(str(index_dir), min_size=1000)
    fd = open_for_reading(str(path))
    peek = peek_header(fd)
    os.close(fd)

    def open_() -> scan.ScanResult:
        fd = open_for_reading(str(path))
        try:
            return scan_index.scan_with_index(
                fd, SOURCE, peek.next_offset, peek.line + 1, settings_, keep_bytes=False
            )
        finally:
            os.close(fd)

    open_()
    with open(path, "ab") as f:
        f.write(_message(900, 399) + b"\n")  # a few bytes: scanned, the index stays as it was
    open_()
    assert scan_index.last_outcome.read == "grown" and not scan_index.last_outcome.written
    with open(path, "ab") as f:
        f.write(b"".join(_message(n, n - 1) + b"\n" for n in range(901, 950)))
    open_()
    assert scan_index.last_outcome.read == "grown" and scan_index.last_outcome.written
    assert _facts(open_(), path) == _fresh(path)
    assert scan_index.last_outcome.read == "used"


def _assert_rebuilt(path: Path, index_dir: Path) -> None:
    result = _open_scan(path, index_dir)
    assert scan_index.last_outcome.read in ("stale", "missing"), scan_index.last_outcome
    assert scan_index.last_outcome.written
    assert _facts(result, path) == _fresh(path)
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "used"


def test_a_truncated_file_is_scanned_again(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.truncate(len(data) // 2)
    _assert_rebuilt(path, index_dir)


def test_a_file_truncated_and_grown_past_its_old_size_is_scanned_again(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    data = path.read_bytes()
    with open(path, "r+b") as f:  # other lines where the indexed ones ended, then more
        f.truncate(len(data) - 500)
        f.seek(0, os.SEEK_END)
        f.write(b"".join(_message(n, n - 1, pad=3) + b"\n" for n in range(700, 720)))
    _assert_rebuilt(path, index_dir)


def test_a_file_renamed_over_is_scanned_again(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    other = _session(tmp_path / "other.jsonl", count=380, final_newline=True)
    os.replace(other, path)
    result = _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "missing"  # another inode: another index
    assert _facts(result, path) == _fresh(path)


def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the file's last change be old enough for its index to hold its size (see RACY_NS)."""
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    time.sleep(0.1)


def _rewrite_keeping_size_and_mtime(path: Path, at: int, data: bytes) -> None:
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_file_rewritten_in_place_with_its_size_and_mtime_is_scanned_again(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _settled(monkeypatch)
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.written
    data = path.read_bytes()
    middle = data.index(b'"id":"m200"')
    time.sleep(0.05)  # past the file system clock's tick: the rewrite gets another ctime
    _rewrite_keeping_size_and_mtime(path, middle, b'"id":"X200"')  # head and end unchanged
    time.sleep(0.1)  # (settled again: the index rebuilt is not racy)
    _assert_rebuilt(path, index_dir)
    assert any(e.id == "X200" for e in _open_scan(path, index_dir).entries)


def test_an_unchanged_file_keeps_using_its_index(tmp_path: Path, index_dir: Path, monkeypatch: Any):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _settled(monkeypatch)
    _open_scan(path, index_dir)
    for _ in range(3):
        _open_scan(path, index_dir)
        assert scan_index.last_outcome.read == "used" and not scan_index.last_outcome.written


def _changed_lately(monkeypatch: pytest.MonkeyPatch, lately: bool) -> None:
    """Every file changed just before it is read (a racy index: see RACY_NS), or none did."""
    monkeypatch.setattr(cache_dir, "RACY_NS", 10**18 if lately else 0)


def test_an_index_made_just_after_its_file_changed_serves_only_once_the_file_grew(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """A file indexed right after it changed may change again within its clock's tick keeping its
    size, mtime and ctime (RACY_NS): its index is trusted for the lines appended to it, and the
    file unchanged is scanned again, and indexed as it then is. An edit in place made any time
    later, keeping the size, is noticed (it used to be trusted on the CRCs for good)."""
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _changed_lately(monkeypatch, True)
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.written
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "stale" and scan_index.last_outcome.written
    _changed_lately(monkeypatch, False)  # later: the file settled, and is edited in place
    data = path.read_bytes()
    _rewrite_keeping_size_and_mtime(path, data.index(b'"id":"m200"'), b'"id":"X200"')
    _assert_rebuilt(path, index_dir)
    assert any(e.id == "X200" for e in _open_scan(path, index_dir).entries)
    _changed_lately(monkeypatch, True)
    _open_scan(path, index_dir)  # (a racy index again)
    with open(path, "ab") as f:
        f.write(_message(900, 399) + b"\n")
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "grown"
    data = path.read_bytes()  # the head or the end indexed changed: noticed whenever it was
    for at in (data.index(b'"id":"s"'), data.rindex(b'"id":"m399"')):
        _rewrite_keeping_size_and_mtime(path, at, b'"id":"Z')
        _assert_rebuilt_while_racy(path, index_dir)


def _assert_rebuilt_while_racy(path: Path, index_dir: Path) -> None:
    result = _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "stale" and _facts(result, path) == _fresh(path)


def test_a_line_appended_while_the_file_is_scanned_makes_a_racy_index(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """pi appends to the session while it is scanned (a big file takes seconds): the index must
    not take the file's times from before the scan for those after it, or a later edit in place
    keeping the size would look like the lines appended since the index."""
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    real_scan = scan_index._scan

    def scan_while_pi_appends(*args: Any) -> Any:
        with open(path, "ab") as f:
            f.write(_message(900, 399) + b"\n")
        return real_scan(*args)

    monkeypatch.setattr(scan_index, "_scan", scan_while_pi_appends)
    _open_scan(path, index_dir)
    monkeypatch.setattr(scan_index, "_scan", real_scan)
    assert scan_index.last_outcome.written
    time.sleep(0.05)  # past the file system clock's tick: the edit gets another ctime
    data = path.read_bytes()
    _rewrite_keeping_size_and_mtime(path, data.index(b'"id":"m200"'), b'"id":"X200"')
    _assert_rebuilt(path, index_dir)


def test_a_file_under_the_inode_number_of_the_one_indexed_is_another_file(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """A file saved by renaming a new one over it may get the inode number of the one it replaced
    (ext4 gives a freed number out again at once), with the same head and more bytes: it looked
    appended to. The inode's generation tells them apart."""
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    real_generation = cache_dir.generation
    monkeypatch.setattr(cache_dir, "generation", lambda fd: real_generation(fd) ^ 1)
    data = path.read_bytes()
    at = data.index(b'"id":"m200"')
    path.write_bytes(data[:at] + b'"id":"X200"' + data[at + 11 :] + _message(900, 399) + b"\n")
    _assert_rebuilt(path, index_dir)


def test_the_generation_of_a_reused_inode_number_differs_where_the_file_system_keeps_one(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"first")
    with open(path, "rb") as f:
        first = (os.fstat(f.fileno()).st_ino, cache_dir.generation(f.fileno()))
    for _ in range(20):  # (the number is usually given out again at once, not always)
        path.unlink()
        path.write_bytes(b"second")
        with open(path, "rb") as f:
            again = (os.fstat(f.fileno()).st_ino, cache_dir.generation(f.fileno()))
        if again[0] == first[0]:
            break
    else:
        pytest.skip("this file system did not give the inode number out again")
    if first[1] == again[1] == 0:
        pytest.skip("this file system keeps no generation")
    assert first[1] != again[1]


# a member of the envelope of m1000 (its parent is m993), changed keeping the line's length
ENVELOPE_CHANGES = {
    "id": (b'"id":"m1000"', b'"id":"m1001"'),
    "parentId": (b'"parentId":"m993"', b'"parentId":"m994"'),
    "type": (b'"type":"message"', b'"type":"massage"'),
    "timestamp": (b'"timestamp":"2025-01-01T00:00:40Z"', b'"timestamp":"2025-01-01T00:00:41Z"'),
}


@pytest.mark.parametrize("member", ENVELOPE_CHANGES)
@pytest.mark.parametrize("count", [2000, 100_000])  # its lines' bytes kept (small), or read again
def test_a_body_read_after_the_file_changed_behind_the_index_is_refused(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch, count: int, member: str
):
    """What the CRCs cannot see (a line in the middle rewritten, and the file appended to) still
    never yields another entry's body: the line read must carry the envelope indexed, each of
    its members."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 1_000_000)
    path = _session(tmp_path / "s.jsonl", count=count, final_newline=True)
    with SessionManager.open(str(path), read_only=True, index=str(index_dir)):
        pass
    data = path.read_bytes()
    line = data.index(b'{"type":"message","id":"m1000"')
    indexed, changed = ENVELOPE_CHANGES[member]
    _rewrite_keeping_size_and_mtime(path, data.index(indexed, line), changed)
    with open(path, "ab") as f:
        f.write(_message(count, count - 1) + b"\n")
    with SessionManager.open(str(path), read_only=True, index=str(index_dir)) as sm:
        assert scan_index.last_outcome.read == "grown"  # appended to: only the CRCs are checked
        entry = sm.get_entry("m1000")
        assert entry._body is not ABSENT if count == 2000 else entry._body is ABSENT
        with pytest.raises(StaleFileError, match="changed underneath"):
            _ = entry.value


def _index_file(index_dir: Path) -> Path:
    (found,) = [p for p in index_dir.iterdir() if p.name.endswith(".pi-index")]
    return found


def test_a_damaged_index_is_ignored_and_rebuilt(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    index = _index_file(index_dir)
    good = index.read_bytes()
    for damaged in (
        b"",
        good[:10],
        good[: len(good) // 2],
        good[:-1],
        good + b"x",
        good[:200] + bytes([good[200] ^ 0xFF]) + good[201:],  # in the payload: the CRC differs
        good[:-40] + bytes([good[-40] ^ 0x01]) + good[-39:],  # in the header (at the end)
        good[:10] + bytes([good[10] ^ 0x01]) + good[11:],  # in the prefix
        os.urandom(len(good)),
        b"\x00" * len(good),
    ):
        index.write_bytes(damaged)
        _assert_rebuilt(path, index_dir)


def test_an_index_of_another_format_version_is_ignored(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    index = _index_file(index_dir)
    data = bytearray(index.read_bytes())
    struct.pack_into("<I", data, 8, scan_index.FORMAT_VERSION + 1)
    index.write_bytes(bytes(data))
    _assert_rebuilt(path, index_dir)
    data = bytearray(index.read_bytes())
    data[:8] = b"NOTANIDX"
    index.write_bytes(bytes(data))
    _assert_rebuilt(path, index_dir)


def test_an_index_written_by_other_code_is_ignored(tmp_path: Path, index_dir: Path):
    """The package changed without a new version (an editable install updated): its index is not
    used, whatever the code that wrote it would have put there."""
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    index = _index_file(index_dir)
    data = bytearray(index.read_bytes())
    struct.pack_into("<I", data, 12, cache_dir.code_stamp() ^ 1)
    index.write_bytes(bytes(data))
    _assert_rebuilt(path, index_dir)


def test_the_code_stamp_tells_any_change_of_a_python_file(tmp_path: Path):
    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 2\n")
    stamps = [cache_dir.stamp_of_code(str(package))]

    def changed() -> bool:
        stamps.append(cache_dir.stamp_of_code(str(package)))
        return stamps[-1] != stamps[-2]

    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "a.cpython.pyc").write_bytes(b"compiled")
    (package / "notes.txt").write_text("not code")
    assert not changed()
    os.utime(package / "sub" / "b.py", ns=(1, 10**18))
    assert changed()
    (package / "sub" / "b.py").write_text("B = 3\n")  # and its mtime, restored
    os.utime(package / "sub" / "b.py", ns=(1, 10**18))
    assert not changed()  # (what a size and an mtime cannot tell)
    (package / "sub" / "b.py").write_text("B = 22\n")
    os.utime(package / "sub" / "b.py", ns=(1, 10**18))
    assert changed()
    (package / "sub" / "c.py").write_text("")
    assert changed()
    (package / "sub" / "c.py").rename(package / "c.py")
    assert changed()
    assert cache_dir.code_stamp() == cache_dir.stamp_of_code(
        os.path.dirname(os.path.dirname(cache_dir.__file__))
    )


def test_an_index_that_cannot_be_written_is_no_error(tmp_path: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for directory in (blocker / "index", Path("/proc/self/no-index-here")):
        result = _open_scan(path, directory)
        assert not scan_index.last_outcome.written
        assert _facts(result, path) == _fresh(path)


def test_a_full_disk_leaves_no_index_and_no_temporary_file(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        if len(data) > 100:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(scan_index.os, "write", full)
    result = _open_scan(path, index_dir)
    assert not scan_index.last_outcome.written
    assert _facts(result, path) == _fresh(path)
    assert list(index_dir.iterdir()) == []


def test_a_read_only_index_directory_is_read_but_not_written(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _open_scan(path, index_dir)
    os.chmod(index_dir, 0o500)
    try:
        if os.access(index_dir, os.W_OK):  # root writes anyway: nothing to test here
            pytest.skip("the index directory stays writable for this user")
        with open(path, "ab") as f:
            f.write(b"".join(_message(n, n - 1) + b"\n" for n in range(900, 950)))
        result = _open_scan(path, index_dir)
        assert scan_index.last_outcome.read == "grown" and not scan_index.last_outcome.written
        assert _facts(result, path) == _fresh(path)
    finally:
        os.chmod(index_dir, 0o700)


def _open_many_times(path: str, directory: str, rounds: int, out: Any) -> None:
    try:
        for _ in range(rounds):
            result = _open_scan(Path(path), Path(directory))
            out.put([(e.id, e.line, e.offset) for e in result.entries])
    except BaseException as err:  # noqa: BLE001 - reported to the test
        out.put(repr(err))


def test_processes_writing_and_reading_one_index_at_once_all_read_the_same(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", count=3000, final_newline=True)
    expected = [(e.id, e.line, e.offset) for e in _open_scan(path, None).entries]
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    rounds = 6
    workers = [
        context.Process(target=_open_many_times, args=(str(path), str(index_dir), rounds, out))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for _ in range(len(workers) * rounds):
        assert out.get(timeout=120) == expected
    for worker in workers:
        worker.join(60)
    assert [p.name for p in index_dir.iterdir()] == [_index_file(index_dir).name]  # no temporary left


def test_old_indexes_are_pruned(tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cache_dir, "MAX_KEPT_FILES", 3)
    paths = [_session(tmp_path / f"s{n}.jsonl", count=20, final_newline=True) for n in range(5)]
    for n, path in enumerate(paths):
        _open_scan(path, index_dir)
        os.utime(_newest(index_dir), (1000 + n, 1000 + n))  # used in this order
    assert len(list(index_dir.iterdir())) == 3
    _open_scan(paths[-1], index_dir)
    assert scan_index.last_outcome.read == "used"
    _open_scan(paths[0], index_dir)
    assert scan_index.last_outcome.read == "missing"


def _newest(directory: Path) -> Path:
    return max(directory.iterdir(), key=lambda p: p.stat().st_mtime_ns)


# ---------------------------------------------------------------------- settings


def test_settings_from_the_argument_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in (cache_dir.INDEX_DIR_ENV, cache_dir.NO_INDEX_ENV, cache_dir.INDEX_MIN_SIZE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir.index_settings() == IndexSettings(
        str(tmp_path / "home" / ".cache" / "pi-session"), cache_dir.DEFAULT_MIN_SIZE
    )
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache_dir.index_settings().directory == str(tmp_path / "home" / ".cache" / "pi-session")  # type: ignore[union-attr]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir.index_settings().directory == str(tmp_path / "xdg" / "pi-session")  # type: ignore[union-attr]
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "env"))
    assert cache_dir.index_settings().directory == str(tmp_path / "env")  # type: ignore[union-attr]
    assert cache_dir.index_settings(str(tmp_path / "arg")).directory == str(tmp_path / "arg")  # type: ignore[union-attr]
    assert cache_dir.index_settings(False) is None
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    assert cache_dir.index_settings().min_size == 0  # type: ignore[union-attr]
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "lots")
    assert cache_dir.index_settings().min_size == cache_dir.DEFAULT_MIN_SIZE  # type: ignore[union-attr]
    monkeypatch.setenv(cache_dir.NO_INDEX_ENV, "1")
    assert cache_dir.index_settings() is None
    assert cache_dir.index_settings(str(tmp_path / "arg")) is None


def test_a_relative_index_directory_is_where_the_process_first_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    for name in ("first", "later", "removed"):
        (tmp_path / name).mkdir()
    relative = f"index-of-{tmp_path.name}"  # (one this process has not read before)
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, relative)
    monkeypatch.chdir(tmp_path / "first")
    assert cache_dir.default_index_directory() == str(tmp_path / "first" / relative)
    monkeypatch.chdir(tmp_path / "later")  # one cache directory, not one in each directory worked in
    assert cache_dir.default_index_directory() == str(tmp_path / "first" / relative)
    # first read where the working directory was removed: no index, and no error
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, relative + "-too")
    monkeypatch.chdir(tmp_path / "removed")
    (tmp_path / "removed").rmdir()
    assert cache_dir.default_index_directory() is None
    assert cache_dir.index_settings() is None


def test_files_smaller_than_the_threshold_are_only_scanned(tmp_path: Path, index_dir: Path):
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    fd = open_for_reading(str(path))
    try:
        peek = peek_header(fd)
        small = IndexSettings(str(index_dir), min_size=path.stat().st_size + 1)
        scan_index.scan_with_index(fd, SOURCE, peek.next_offset, peek.line + 1, small, keep_bytes=False)
    finally:
        os.close(fd)
    assert scan_index.last_outcome.read == "none" and not index_dir.exists()


# ---------------------------------------------------------------------- through the manager


def _view(sm: SessionManager) -> Any:
    entries = sm.get_entries()
    return (
        [(e.id, e.parent_id, e.type, e.timestamp, e.role, e.line) for e in entries],
        [e.value for e in entries],
        sm.get_leaf_id(),
        sm.build_session_context(),
        [(p.line, p.kind, p.message) for p in sm.problems],
        [(n.entry.id, n.label, len(n.children)) for n in _walk(sm.get_tree())],
    )


def _walk(roots: list[Any]) -> Iterator[Any]:
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_the_manager_answers_the_same_with_and_without_its_index(
    name: str, tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    path = tmp_path / name
    path.write_bytes((DATA / name).read_bytes())
    fd = open_for_reading(str(path))
    header = peek_header(fd).value
    os.close(fd)
    if needs_migration([header]):
        pytest.skip("an old version: read exactly and migrated in memory (new ids), never indexed")
    with contextlib.ExitStack() as stack:
        plain = stack.enter_context(SessionManager.open(str(path), read_only=True, index=False))
        expected = _view(plain)
        first = stack.enter_context(SessionManager.open(str(path), read_only=True, index=str(index_dir)))
        assert _view(first) == expected
        again = stack.enter_context(SessionManager.open(str(path), read_only=True, index=str(index_dir)))
        outcome = scan_index.last_outcome.read
        if plain.get_header() is not ABSENT and plain.get_header() is not None and plain.entry_count() > 0:
            assert outcome == "used", outcome
        assert _view(again) == expected


def test_a_stale_index_is_removed_even_when_no_new_one_can_be_written(
    tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """Rewritten in place, then appended to: the index of the lines before the rewrite must not
    come back when the file has grown past it (its CRCs would match again)."""
    path = _session(tmp_path / "s.jsonl", final_newline=True)
    _settled(monkeypatch)
    _open_scan(path, index_dir)
    data = path.read_bytes()
    time.sleep(0.05)
    _rewrite_keeping_size_and_mtime(path, data.index(b'"id":"m200"'), b'"id":"X200"')
    monkeypatch.setattr(scan_index, "_write_index", lambda *args: False)  # a full disk, say
    _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "stale"
    with open(path, "ab") as f:
        f.write(_message(900, 399) + b"\n")
    result = _open_scan(path, index_dir)
    assert scan_index.last_outcome.read == "missing"
    assert _facts(result, path) == _fresh(path)


def test_a_line_without_a_type_in_the_middle_of_a_chain(tmp_path: Path, index_dir: Path):
    """The scan's fast path takes it (its parent is the entry before): the type column holds none."""
    path = tmp_path / "s.jsonl"
    lines = [HEADER, _message(0, None), b'{"id":"x","parentId":"m0","timestamp":"t"}', _message(1, None)]
    lines.append(b'{"type":"message","id":"m2","parentId":"m1","timestamp":"t","message":{}}')
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert_index_gives_the_scan(path, index_dir)
    assert _open_scan(path, index_dir).entries[1].type is ABSENT


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=300))
def test_a_column_of_codes_is_checked_as_max_checks_it(codes: bytes, limit: int) -> None:
    # an index whose rows name a type or role it does not list is not used (NotUsable)
    assert scan_index._codes_below(codes, limit) == (not codes or max(codes) < limit)


def test_a_column_of_codes_reaching_the_limit_is_refused() -> None:
    assert scan_index._codes_below(bytes([0, 1, 2]), 3)
    assert not scan_index._codes_below(bytes([0, 3, 1]), 3)
    assert not scan_index._codes_below(bytes([255]), 255) and scan_index._codes_below(bytes([255]), 256)
