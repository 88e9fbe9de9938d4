"""A large file is scanned on two cores (format/scan_split.py): a forked helper reads the back part
and sends its entries as msgpack rows. Whatever the file holds and wherever it is split, the result
is the one scan of the whole file gives; when the helper fails in any way, the parent reads the
back part itself and the result is still the same."""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format import scan, scan_split
from pi_session_server.format.entry import Entry, head_for
from pi_session_server.session import SessionManager, loader

DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"
SOURCE = object()  # stands for the file's line source: every entry must point to it


def _scan(path: Path, *, split: bool, on_progress: Any = None) -> scan.ScanResult:
    fd = os.open(path, os.O_RDONLY)
    try:
        if split:
            return scan_split.scan_split(fd, SOURCE, 0, 0, on_progress)
        return scan._scan_entry_lines(fd, SOURCE, 0, 0, True, None, None)
    finally:
        os.close(fd)


def _facts(result: scan.ScanResult) -> dict[str, Any]:
    """Everything a scan result tells, positions by identity (chain starts aside: see below)."""
    entries = result.entries
    position = {id(entry): at for at, entry in enumerate(entries)}

    def typed(value: Any) -> Any:
        return (type(value).__name__, value)

    return {
        "entries": [
            (
                type(e) is Entry,
                e.line,
                e.offset,
                e.length,
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
    """The split scan may list more chain starts (each batch starts one), never fewer, and inside a
    chain every entry's parentId is the id of the entry before it."""
    starts = result.index.chain_starts
    assert starts == sorted(set(starts))
    assert set(single.index.chain_starts) <= set(starts)
    listed = set(starts)
    entries = result.entries
    for at in range(1, len(entries)):
        if at not in listed:
            assert entries[at].parent_id == entries[at - 1].id


def assert_same_as_one_scan(path: Path) -> scan.ScanResult:
    single = _scan(path, split=False)
    result = _scan(path, split=True)
    assert _facts(result) == _facts(single)
    _assert_chains_hold(result, single)
    return result


def _never_claims(helper: Any) -> None:
    return None


@pytest.fixture
def helper_always(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A helper for any file, small batches, and a parent that takes no piece of the helper's part
    (see parent_takes_pieces); yields the list of batch counts merged (one per scan)."""
    monkeypatch.setattr(scan_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(scan_split, "BATCH_BYTES", 2000)
    monkeypatch.setattr(scan_split, "helper_wanted", lambda size: True)
    monkeypatch.setattr(scan_split._Helper, "claim", _never_claims)
    merged: list[int] = []
    real_merge = scan_split._merge

    def counting_merge(result: Any, batches: list[Any], *args: Any) -> None:
        merged.append(len(batches))
        real_merge(result, batches, *args)

    monkeypatch.setattr(scan_split, "_merge", counting_merge)
    yield merged


def _slow_batches(seconds: float) -> Any:
    """The helper's batch scan, each batch ``seconds`` late (in the child)."""
    real_scan_batch = scan_split._scan_batch

    def slow_scan_batch(*args: Any) -> Any:
        time.sleep(seconds)
        return real_scan_batch(*args)

    return slow_scan_batch


@pytest.fixture
def parent_takes_pieces(helper_always: list[int], monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """helper_always with a helper slow enough that the parent, done with its front part, takes
    pieces of the helper's part from the end of the file; yields the pieces merged (one per scan)."""
    monkeypatch.setattr(scan_split._Helper, "claim", _REAL_CLAIM)
    monkeypatch.setattr(scan_split, "_scan_batch", _slow_batches(0.003))
    pieces: list[int] = []
    counting_merge = scan_split._merge

    def merge_counting_pieces(result: Any, batches: list[Any], taken: list[Any], *args: Any) -> None:
        pieces.append(len(taken))
        counting_merge(result, batches, taken, *args)

    monkeypatch.setattr(scan_split, "_merge", merge_counting_pieces)
    yield pieces


_REAL_CLAIM = scan_split._Helper.claim


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_real_sessions_read_the_same_with_a_helper(helper_always: list[int], name: str, caplog: Any):
    path = DATA / name
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not caplog.records
    if path.stat().st_size > 4000:  # the helper's part took more than one batch
        assert helper_always and helper_always[0] > 1


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_real_sessions_read_the_same_when_the_parent_takes_pieces_of_the_helpers_part(
    parent_takes_pieces: list[int], helper_always: list[int], name: str, caplog: Any
):
    path = DATA / name
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not caplog.records
    if path.stat().st_size > 8000:  # the pieces and the batches met somewhere in the helper's part
        assert parent_takes_pieces and parent_takes_pieces[0] >= 1
        assert helper_always and helper_always[0] >= 1


def _message(n: int, parent: int | None, role: str = "user", pad: int = 40) -> bytes:
    parent_json = "null" if parent is None else f'"m{parent}"'
    return (
        f'{{"type":"message","id":"m{n}","parentId":{parent_json},"timestamp":"2025-01-01T00:00:{n % 60:02d}Z",'
        f'"message":{{"role":"{role}","content":"{"x" * pad}"}}}}'
    ).encode()


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
    b'{"type":"custom","id":7,"parentId":12345678901234567890,"timestamp":1.5}',  # numbers
    b'{"type":"label","id":"l","parentId":"m2","targetId":"m1","label":{"odd":[1,"two"]}}',
    b'{"type":"label","id":"l2","parentId":"l","targetId":"m1","label":null}',
    b'{"type":"message","id":"g1","parentId":"m3","message":{"role":"user"}}{"type":"message","id":"g2"}',
    b'{"type":"session_info","id":"i","parentId":"m2","name":"\xe2\x80\xa8 \xff bad utf-8"}',
    b'{"type":"compaction","id":"m2","parentId":"m1","summary":"same id again","firstKeptEntryId":"m1"}',
    b'{"type":"thinking_level_change","id":"t","parentId":"m9","thinkingLevel":"high","_body":1}',
    b'{"type":"message","id":"z","parentId":"m1","timestamp":"t","message":null}',
    b'{"type":"model_change","id":"q","parentId":"m3","timestamp":5,"provider":"p","modelId":"m"}',
]

LINE = st.one_of(
    st.integers(0, 40).map(lambda n: _message(n, n - 1 if n else None, pad=n * 7)),
    st.sampled_from(ODD_LINES),
)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=60),
    final_newline=st.booleans(),
    crlf=st.booleans(),
    share=st.sampled_from([0.1, 0.45, 0.9]),
    batch=st.sampled_from([1, 300, 5000]),
    short_line=st.sampled_from([scan.SHORT_LINE, 100]),
    pieces=st.booleans(),
)
def test_any_lines_read_the_same_wherever_the_file_is_split(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    final_newline: bool,
    crlf: bool,
    share: float,
    batch: int,
    short_line: int,
    pieces: bool,
):
    path = tmp_path_factory.mktemp("split") / "s.jsonl"
    newline = b"\r\n" if crlf else b"\n"
    path.write_bytes(newline.join(lines) + (newline if final_newline else b""))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan_split, "helper_wanted", lambda size: True)
        mp.setattr(scan_split, "helper_share", lambda size, density: share)
        mp.setattr(scan_split, "BATCH_BYTES", batch)
        # lines this long or longer keep their length: some here do when it is 100
        mp.setattr(scan, "SHORT_LINE", short_line)
        mp.setattr(scan_split, "SHORT_LINE", short_line)
        if pieces:  # a slow helper: the parent takes pieces of its part from the end of the file
            mp.setattr(scan_split, "_scan_batch", _slow_batches(0.002))
        else:
            mp.setattr(scan_split._Helper, "claim", _never_claims)
        warned: list[Any] = []  # a helper that failed: its part read here, the same but slower
        mp.setattr(scan_split.log, "warning", lambda *args: warned.append(args))
        assert_same_as_one_scan(path)
        assert warned == []


def _session(path: Path, count: int = 400) -> Path:
    """A session with branches, odd lines spread through it and a last line without newline."""
    lines = [b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}']
    for n in range(count):
        lines.append(_message(n, n - 1 if n % 50 else (n - 7 if n else None), pad=n % 90))
        if n % 37 == 0:
            lines.append(ODD_LINES[n % len(ODD_LINES)])
    path.write_bytes(b"\n".join(lines))
    return path


def test_the_helper_really_reads_the_back_part(tmp_path: Path, helper_always: list[int]):
    path = _session(tmp_path / "s.jsonl")
    result = assert_same_as_one_scan(path)
    assert helper_always and helper_always[0] > 5
    assert result.tail  # the last line has no newline: read by the helper, kept as one scan does
    # the helper's messages share the one head per role (32 bytes less per entry)
    size = path.stat().st_size
    with open(path, "rb") as f:
        split = scan_split._line_start_after(
            f.fileno(), int(size * (1 - scan_split.helper_share(size))), size
        )
    sent = [
        e for e in result.entries if e.offset >= split and e.type == "message" and str(e.id).startswith("m")
    ]
    sent.pop()  # the last line has no newline: the parent reads it again
    assert len(sent) > 100
    assert [e for e in sent if e.message is not head_for(e.message.role)] == []


def test_the_helper_takes_half_a_sparse_file_and_more_of_one_dense_with_lines_the_more_the_larger(
    tmp_path: Path,
):
    share = scan_split.helper_share
    assert share(100 * 1024 * 1024) == pytest.approx(0.55, abs=0.005)  # text
    assert share(100 * 1024 * 1024, lines_per_mb=0) == scan_split.HELPER_SHARE_SPARSE
    assert share(2 * 1024**3) == share(20 * 1024**3) == scan_split.HELPER_SHARE_LARGE
    assert share(2 * 1024**3, lines_per_mb=30) == pytest.approx(0.51, abs=0.001)  # screenshots
    sizes = [2**n for n in range(20, 36)]
    assert [share(size) for size in sizes] == sorted(share(size) for size in sizes)
    text = tmp_path / "text.jsonl"
    text.write_bytes((b"x" * 1023 + b"\n") * 4096)
    with open(text, "rb") as f:
        assert scan_split._lines_per_mb(f.fileno(), 0, text.stat().st_size) == pytest.approx(1024)


def _child_exits(status: int) -> Any:
    def run_child(fd: int, start: int, out: int, claims: int) -> None:
        os._exit(status)

    return run_child


def _child_writes(data: bytes) -> Any:
    def run_child(fd: int, start: int, out: int, claims: int) -> None:
        os.write(out, data)
        os._exit(0)

    return run_child


def _child_sends_only_its_first_batch(fd: int, start: int, out: int, claims: int) -> None:
    batch = scan_split._scan_batch(
        fd, start, scan_split._line_start_after(fd, start + 3000, os.fstat(fd).st_size), False
    )
    frame = scan_split._encode_batch(batch)
    os.write(out, scan_split._FRAME_HEAD.pack(len(frame), batch.end) + frame)
    os._exit(0)


@pytest.mark.parametrize(
    "run_child",
    [
        _child_exits(3),
        _child_exits(0),  # and sends nothing
        _child_writes(scan_split._FRAME_HEAD.pack(100, 0) + b"cut short"),
        _child_writes(scan_split._FRAME_HEAD.pack(4, 0) + b"\xc1\xc1\xc1\xc1"),  # not msgpack
        _child_sends_only_its_first_batch,
    ],
    ids=["dies", "sends-nothing", "cut-frame", "garbage", "stops-early"],
)
def test_a_failing_helper_changes_nothing_but_the_time(
    tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch, run_child: Any, caplog: Any
):
    path = _session(tmp_path / "s.jsonl")
    monkeypatch.setattr(scan_split, "_run_child", run_child)
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not helper_always  # nothing of the helper's was merged
    assert any("scan helper" in record.getMessage() for record in caplog.records)


def _child_late(seconds: float, then_exit: int | None = None) -> Any:
    """The real helper, starting ``seconds`` late (or exiting with ``then_exit`` instead)."""
    real_run_child = scan_split._run_child

    def late_child(fd: int, start: int, out: int, claims: int) -> None:
        time.sleep(seconds)
        if then_exit is not None:
            os._exit(then_exit)
        real_run_child(fd, start, out, claims)

    return late_child


def _child_once_the_parent_took_everything(fd: int, start: int, out: int, claims: int) -> None:
    """The real helper, started once the parent's pieces reach back to its first line."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, parent_start = scan_split._CLAIMS.unpack(os.pread(claims, scan_split._CLAIMS.size, 0))
        if parent_start <= start:
            break
        time.sleep(0.005)
    _REAL_RUN_CHILD(fd, start, out, claims)


_REAL_RUN_CHILD = scan_split._run_child


def test_the_parent_takes_the_whole_part_of_a_helper_that_starts_late(
    tmp_path: Path, parent_takes_pieces: list[int], helper_always: list[int], monkeypatch: pytest.MonkeyPatch
):
    path = _session(tmp_path / "s.jsonl")
    monkeypatch.setattr(scan_split, "_run_child", _child_once_the_parent_took_everything)
    result = assert_same_as_one_scan(path)
    assert result.tail  # the last line has no newline: read in the parent's first piece
    assert parent_takes_pieces[0] > 5
    assert helper_always == [1]  # the helper's only batch: empty, where the pieces begin


def test_the_pieces_and_the_helpers_batches_meet_wherever_the_helper_stops(
    tmp_path: Path, parent_takes_pieces: list[int], helper_always: list[int], monkeypatch: pytest.MonkeyPatch
):
    # a helper that starts late but reads quickly: the two meet somewhere in the helper's part
    path = _session(tmp_path / "s.jsonl", count=2000)
    for delay in (0.0, 0.01, 0.03, 0.5):
        monkeypatch.setattr(scan_split, "_run_child", _child_late(delay))
        monkeypatch.setattr(scan_split, "_scan_batch", _slow_batches(0.0005))
        assert_same_as_one_scan(path)
    assert all(helper_always) and any(parent_takes_pieces)


def test_a_helper_that_dies_after_the_parent_took_pieces_changes_nothing_but_the_time(
    tmp_path: Path, parent_takes_pieces: list[int], monkeypatch: pytest.MonkeyPatch, caplog: Any
):
    path = _session(tmp_path / "s.jsonl")
    monkeypatch.setattr(scan_split, "_run_child", _child_late(0.2, then_exit=3))
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not parent_takes_pieces  # nothing merged: the back part was read here again
    assert any("exit status 3" in record.getMessage() for record in caplog.records)


def test_a_helper_holding_the_claims_lock_makes_the_parent_wait_instead(
    tmp_path: Path, parent_takes_pieces: list[int], monkeypatch: pytest.MonkeyPatch, caplog: Any
):
    # a helper stopped while it holds the lock: the parent does not wait for the lock, it waits
    # for the helper's batches (with its usual patience) and takes no piece
    path = _session(tmp_path / "s.jsonl")
    real_run_child = scan_split._run_child

    def child_holding_the_lock(fd: int, start: int, out: int, claims: int) -> None:
        fcntl.lockf(claims, fcntl.LOCK_EX)
        time.sleep(0.5)
        fcntl.lockf(claims, fcntl.LOCK_UN)
        real_run_child(fd, start, out, claims)

    def claim_once_the_child_holds_the_lock(helper: Any) -> Any:
        deadline = time.monotonic() + 10  # (the child may start after our front part is read)
        while time.monotonic() < deadline:
            try:
                fcntl.lockf(helper.claims, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                break  # the child holds it
            fcntl.lockf(helper.claims, fcntl.LOCK_UN)
            time.sleep(0.001)
        return _REAL_CLAIM(helper)

    monkeypatch.setattr(scan_split, "_run_child", child_holding_the_lock)
    monkeypatch.setattr(scan_split._Helper, "claim", claim_once_the_child_holds_the_lock)
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert parent_takes_pieces == [0]
    assert not caplog.records


def test_pieces_that_do_not_meet_the_helpers_batches_are_not_merged(
    tmp_path: Path, parent_takes_pieces: list[int], monkeypatch: pytest.MonkeyPatch, caplog: Any
):
    # a piece read from a line after the one it claimed (a gap the helper does not read either)
    path = _session(tmp_path / "s.jsonl")

    def claim_skipping_a_line(helper: Any) -> Any:
        claimed = _REAL_CLAIM(helper)
        if claimed is None:
            return None
        start, end = claimed
        return scan_split._line_start_after(helper.fd, start + 1, os.fstat(helper.fd).st_size), end

    monkeypatch.setattr(scan_split._Helper, "claim", claim_skipping_a_line)
    monkeypatch.setattr(scan_split, "_run_child", _child_once_the_parent_took_everything)
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert any("do not meet" in record.getMessage() for record in caplog.records)


def test_a_line_that_cannot_be_read_again_drops_the_helpers_whole_part(
    tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch, caplog: Any
):
    # lines the rows cannot carry are read again by the parent; if one of them no longer reads as
    # an entry, the merge gives up before it has changed anything (no entry twice)
    path = _session(tmp_path / "s.jsonl")
    monkeypatch.setattr(scan_split, "_entry_from_line", lambda *args: None)
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not helper_always  # given up before anything was merged
    assert any("unusable" in record.getMessage() for record in caplog.records)


def _points_past_its_rows(batch: Any) -> None:
    batch.non_messages.append(len(batch.ids) + 5)


def _columns_differ(batch: Any) -> None:
    batch.offsets.pop()


def _unknown_code(batch: Any) -> None:
    at = next(at for at in range(len(batch.ids)) if at not in batch.rereads)
    batch.heads = batch.heads[:at] + bytes([200]) + batch.heads[at + 1 :]


def _reread_not_marked(batch: Any) -> None:
    batch.rereads.append(next(at for at in range(len(batch.ids)) if at not in batch.rereads))


def _no_chain_parent(batch: Any) -> None:
    batch.chain_parents.pop()


def _unhashable_id(batch: Any) -> None:
    at = next(at for at in range(len(batch.ids)) if at not in batch.rereads)
    batch.ids[at] = ["not", "a", "key"]  # the batch still says every id is a string


@pytest.mark.parametrize(
    ("corrupt", "why"),
    [
        (_points_past_its_rows, "points past its rows"),
        (_columns_differ, "columns differ in length"),
        (_unknown_code, "unknown code"),
        (_reread_not_marked, "to read again do not match"),
        (_no_chain_parent, "chains have no parents"),
        (_unhashable_id, "TypeError"),
    ],
)
def test_a_batch_that_does_not_hold_together_is_not_merged(
    tmp_path: Path,
    helper_always: list[int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: Any,
    corrupt: Any,
    why: str,
):
    path = _session(tmp_path / "s.jsonl")
    real_scan_batch = scan_split._scan_batch

    def corrupted(fd: int, start: int, end: int | None, last: bool, *args: Any) -> Any:
        batch = real_scan_batch(fd, start, end, last, *args)
        if last:  # the part's last batch: the others were taken already
            corrupt(batch)
        return batch

    monkeypatch.setattr(scan_split, "_scan_batch", corrupted)
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert not helper_always
    assert any(why in record.getMessage() for record in caplog.records)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the helpers started, in turn."""
    pids: list[int] = []
    real_start = scan_split._Helper.start

    def recording_start(fd: int, split: int, *args: Any) -> Any:
        helper = real_start(fd, split, *args)
        if helper is not None:
            pids.append(helper.pid)
        return helper

    monkeypatch.setattr(scan_split._Helper, "start", staticmethod(recording_start))
    return pids


@pytest.fixture
def many_files_open(tmp_path: Path) -> Iterator[None]:
    """More than 1,024 files open, so that new descriptors are past what select() can take (the
    sidecar and pytest can hold that many)."""
    held = [os.open(tmp_path, os.O_RDONLY) for _ in range(1100)]
    yield
    for fd in held:
        os.close(fd)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_a_helper_that_hangs_is_stopped_and_its_part_read_here(
    tmp_path: Path,
    helper_always: list[int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: Any,
    pidfd: bool,
    many_files_open: None,
    started: list[int],
):
    # e.g. a library's fork handler waiting in the child for a thread it does not have
    path = _session(tmp_path / "s.jsonl")
    if not pidfd:  # a kernel before 5.3

        def no_pidfd(pid: int) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(scan_split.os, "pidfd_open", no_pidfd, raising=False)

    def hanging_child(fd: int, start: int, out: int, claims: int) -> None:
        time.sleep(3600)
        os._exit(0)

    monkeypatch.setattr(scan_split, "_run_child", hanging_child)
    monkeypatch.setattr(scan_split, "MIN_PATIENCE", 0.3)
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=scan_split.__name__):
        assert_same_as_one_scan(path)
    assert time.monotonic() - began < 30  # not an hour
    assert not helper_always
    assert any("did not finish" in record.getMessage() for record in caplog.records)
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(started[0], os.WNOHANG)


def test_no_fork_no_helper(tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch):
    path = _session(tmp_path / "s.jsonl")

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(scan_split.os, "fork", no_fork)
    assert_same_as_one_scan(path)
    assert not helper_always


def test_when_the_parent_fails_the_helper_is_stopped_and_reaped(
    tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch, started: list[int]
):
    path = _session(tmp_path / "s.jsonl")
    real_scan = scan_split._scan_entry_lines

    def failing_in_the_parent(fd: int, source: Any, *args: Any, **kwargs: Any) -> Any:
        if source is SOURCE:  # the parent's part (the helper scans with no source)
            raise OSError(5, "Input/output error")
        return real_scan(fd, source, *args, **kwargs)

    monkeypatch.setattr(scan_split, "_scan_entry_lines", failing_in_the_parent)
    with pytest.raises(OSError, match="Input/output"):
        _scan(path, split=True)
    assert len(started) == 1
    with pytest.raises(ChildProcessError):  # already reaped: no zombie left
        os.waitpid(started[0], os.WNOHANG)


@pytest.mark.parametrize("helper_fails", [False, True], ids=["helper", "helper-fails"])
def test_progress_counts_both_parts_and_ends_at_the_size(
    tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch, helper_fails: bool
):
    # also when the helper fails and its part is read here: progress never goes back
    path = _session(tmp_path / "s.jsonl", count=2000)
    if helper_fails:  # after a first batch: progress had counted it, and the part is read again
        monkeypatch.setattr(scan_split, "_run_child", _child_sends_only_its_first_batch)
        monkeypatch.setattr(scan, "CHUNK_SIZE", 1000)  # reports every 1,000 bytes
    reports: list[tuple[int, int]] = []
    _scan(path, split=True, on_progress=lambda done, total: reports.append((done, total)))
    size = path.stat().st_size
    assert reports[-1] == (size, size)
    done = [d for d, _ in reports]
    assert done == sorted(done) and all(total == size for _, total in reports)


def test_the_helper_is_for_large_files_on_linux_with_two_cores(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(scan_split.ENV_SWITCH, raising=False)
    monkeypatch.setattr(scan_split.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(scan_split.sys, "platform", "linux")
    resident = scan_split._resident_bytes()
    assert resident > 1024 * 1024  # read from /proc/self/statm
    monkeypatch.setattr(scan_split, "_resident_bytes", lambda: 64 * 1024 * 1024)  # a small process
    big = scan_split.SPLIT_MIN_BYTES
    assert scan_split.helper_wanted(big)
    assert not scan_split.helper_wanted(big - 1)
    monkeypatch.setenv(scan_split.ENV_SWITCH, "0")
    assert not scan_split.helper_wanted(big)
    monkeypatch.delenv(scan_split.ENV_SWITCH)
    monkeypatch.setattr(scan_split.os, "sched_getaffinity", lambda pid: {0})
    assert not scan_split.helper_wanted(big)
    monkeypatch.setattr(scan_split.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(scan_split.sys, "platform", "darwin")
    assert not scan_split.helper_wanted(big)
    monkeypatch.setattr(scan_split.sys, "platform", "linux")
    # a process holding much more than the file: the fork would cost more than the helper saves
    monkeypatch.setattr(scan_split, "_resident_bytes", lambda: scan_split.MAX_RESIDENT_PER_BYTE * big + 1)
    assert not scan_split.helper_wanted(big)
    assert scan_split.helper_wanted(big + 1)


# Files of the current version: the others are migrated on open (new ids every time), which
# reads them exactly, without the lazy scan.
CURRENT = sorted(p.name for p in DATA.glob("*.jsonl") if b'"version":3' in p.read_bytes()[:300])


@pytest.mark.parametrize("name", [*CURRENT, "generated"])
def test_sessions_opened_with_a_helper_answer_the_same(
    name: str, tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch
):
    path = str(DATA / name if name != "generated" else _session(tmp_path / "s.jsonl", count=3000))

    def answers() -> Any:
        manager = SessionManager.open(path, read_only=True)
        return (
            [dict(entry) for entry in manager.get_entries()],
            repr(manager.get_tree()),
            repr(manager.build_session_context()),
            manager.get_leaf_id(),
            [problem.to_json() for problem in manager.problems],
        )

    expected = answers()  # held lines (a small file), one scan
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", -1)  # now as a large file is read
    assert answers() == expected
    if os.path.getsize(path) > 4000:
        assert helper_always


@pytest.mark.parametrize("terminated", [True, False])
@pytest.mark.parametrize("when", ["helper-started", "parent-done"])
def test_lines_appended_while_the_helper_reads_come_with_the_next_refresh(
    tmp_path: Path, helper_always: list[int], monkeypatch: pytest.MonkeyPatch, terminated: bool, when: str
):
    # The helper reads to the end of the file as it is when it gets there; whatever it saw of an
    # append made meanwhile, the next refresh has every entry once, on its own line.
    path = _session(tmp_path / "s.jsonl", count=600)
    if terminated:
        path.write_bytes(path.read_bytes() + b"\n")
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", -1)

    appended: list[bool] = []

    def someone_appends() -> None:
        # once: a refresh that reloads the file (it ended inside a line, which the append finished)
        # opens it with a helper again
        if not appended:
            appended.append(True)
            with open(path, "ab") as f:
                f.write(
                    (b"" if terminated else b"\n") + _message(900, 599) + b"\n" + _message(901, 900) + b"\n"
                )

    if when == "helper-started":
        real_start = scan_split._Helper.start

        def start_then_append(fd: int, split: int, *args: Any) -> Any:
            helper = real_start(fd, split, *args)
            someone_appends()
            return helper

        monkeypatch.setattr(scan_split._Helper, "start", staticmethod(start_then_append))
    else:
        real_finish = scan_split._Helper.finish

        def append_then_finish(self: Any, patience: float, *args: Any) -> Any:
            someone_appends()
            return real_finish(self, patience, *args)

        monkeypatch.setattr(scan_split._Helper, "finish", append_then_finish)
    manager = SessionManager.open(str(path), read_only=True)
    manager.refresh_from_disk()
    ids = [entry.id for entry in manager.get_entries()]
    assert ids.count("m900") == 1 and ids.count("m901") == 1 and ids[-2:] == ["m900", "m901"]
    data = path.read_bytes()
    physical = data.split(b"\n")
    for entry in manager.get_entries()[1:]:
        with open(path, "rb") as f:
            assert physical[entry.line] == scan.line_at(f.fileno(), entry.offset, entry.length)
    assert helper_always
