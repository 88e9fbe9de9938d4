"""Crash safety: a writer killed with SIGKILL at random moments never costs an acknowledged entry.

A child process (forked: ``reliability_children.library_appender``) appends through the library and
prints every id the library returned; the parent kills it at a random moment, checks the file
(``reliability_helpers.check_session_file``), and starts the next child on the same file. The same
is done to the server process, with ``pi/append`` requests in flight. A third
of the rounds aim the kill at a multi-MB write, where the kernel can stop a write() halfway and
leave a partial last line; the next child's open must keep that line apart and append after it.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest
from reliability_children import library_appender, opener, split_line_writer
from reliability_helpers import USER, ForkedChild, assistant_message, check_session_file, new_session_file
from reliability_rpc import RawServer

from pi_session_server.format.scan import LineProblem
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(900)

ROUNDS_PER_FILE = 10  # a fresh file every few rounds keeps the per-round check cheap


def _seed() -> int:
    return int(os.environ.get("PI_RELIABILITY_SEED", "20261130"))


def _assert_connected(path: str) -> None:
    """Every entry's parent exists: a crash never leaves a dangling parentId behind."""
    manager = SessionManager.open(path, read_only=True)
    try:
        by_id = manager.by_id
        for entry in manager.get_entries():
            assert entry.parent_id is None or entry.parent_id in by_id, (
                f"entry {entry.id} points at missing parent {entry.parent_id}"
            )
    finally:
        manager.close()


@pytest.mark.slow
def test_sigkilled_library_appender_loses_no_acknowledged_entry(tmp_path: Path, long_run: bool, figures):
    kills = 300 if long_run else 30
    rng = random.Random(_seed())
    totals = {"kills": 0, "acknowledged": 0, "partial_last_lines": 0, "files": 0}
    started = time.monotonic()
    path = ""
    acknowledged: list[str] = []
    for round_no in range(kills):
        if round_no % ROUNDS_PER_FILE == 0:
            if path:
                _assert_connected(path)
            path = new_session_file(tmp_path / f"f{round_no}")
            acknowledged = []
            totals["files"] += 1
        aim_at_big_write = round_no % 3 == 2
        child = ForkedChild(
            library_appender, path, rng.randrange(1 << 30), "big" if aim_at_big_write else "small"
        )
        try:
            assert child.output.wait_ready(), "the child never opened the file"
            if aim_at_big_write:
                child.output.big.wait(60)
                time.sleep(rng.uniform(0, 0.03))
            else:
                time.sleep(rng.uniform(0.0, 0.25))
        finally:
            child.kill()
        ids = child.output.finish()
        assert child.was_killed, f"the child died on its own (status {child.status}; see captured stderr)"
        acknowledged.extend(ids)
        totals["kills"] += 1
        totals["acknowledged"] += len(ids)
        report = check_session_file(path, acknowledged)
        totals["partial_last_lines"] += int(report.partial_tail)
    _assert_connected(path)
    # The last file may end mid-line: opening it writably repairs the end, the next append is a line of its own.
    manager = SessionManager.open(path)
    new_id = manager.append_message(USER)
    manager.close()
    check_session_file(path, [*acknowledged, new_id])
    assert Path(path).read_bytes().split(b"\n")[-2].startswith(b'{"type":"message","id":"' + new_id.encode())
    totals["seconds"] = round(time.monotonic() - started, 1)
    figures["crash (library): SIGKILLs / acknowledged appends / partial last lines / files / s"] = (
        f"{totals['kills']} / {totals['acknowledged']} / {totals['partial_last_lines']} / {totals['files']} / "
        f"{totals['seconds']}"
    )


def test_partial_last_line_is_reported_and_next_append_lands_on_its_own_line(tmp_path: Path):
    """The deterministic version of what the kill loop hits by chance: a write cut off mid-line."""
    path = new_session_file(tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"cut0ff00","parentId":null,"message":{"role":"us')
    lines_before = Path(path).read_bytes().count(b"\n")
    viewer = SessionManager.open(path, read_only=True)
    problems: list[LineProblem] = viewer.problems
    assert [p.line for p in problems] == [lines_before], problems
    viewer.close()
    report = check_session_file(path)
    assert report.partial_tail and report.bad_lines == [lines_before]
    writer = SessionManager.open(path)
    new_id = writer.append_message(USER)
    writer.close()
    report = check_session_file(path, [new_id])
    assert not report.partial_tail
    assert report.bad_lines == [lines_before]  # the partial line stays, apart, reported
    lines = Path(path).read_bytes().split(b"\n")
    assert lines[lines_before] == b'{"type":"message","id":"cut0ff00","parentId":null,"message":{"role":"us'
    assert b'"id":"' + new_id.encode() + b'"' in lines[lines_before + 1]


@pytest.mark.slow
def test_kill_between_the_halves_of_a_foreign_line(tmp_path: Path, long_run: bool, figures):
    """A writer that writes a line in two pieces is killed between them; the library appends after."""
    path = new_session_file(tmp_path)
    rng = random.Random(_seed() + 1)
    rounds = 60 if long_run else 8
    acknowledged: list[str] = []
    partials = 0
    for _ in range(rounds):
        child = ForkedChild(split_line_writer, path, "f")
        assert child.output.wait_ready()
        time.sleep(rng.uniform(0.0, 0.05))
        child.kill()
        child.output.finish()
        report = check_session_file(path, acknowledged)
        partials += int(report.partial_tail)
        manager = SessionManager.open(path)
        acknowledged.append(manager.append_message(USER))
        manager.close()
        report = check_session_file(path, acknowledged)
        assert not report.partial_tail
    assert partials > 0, "no kill landed between two halves: the test did not test anything"
    figures["crash (split foreign lines): rounds / partial lines left"] = f"{rounds} / {partials}"


def _pump_appends(srv: RawServer, handle: str, stop: threading.Event, big: bool, sent: list[int]) -> None:
    """Send pi/append requests back to back, at most 32 unanswered at a time, until stopped."""
    n = 0
    try:
        while not stop.is_set():
            n += 1
            if big and n > 5:
                message = {"role": "user", "content": "x" * (2_000_000 + n), "timestamp": n}
            elif n % 2:
                message = {"role": "user", "content": f"u{n}", "timestamp": n}
            else:
                message = assistant_message(f"a{n}", n)
            sent.append(
                srv.send_request("pi/append", {"session": handle, "kind": "message", "message": message})
            )
            if len(sent) > 32:
                srv.wait_reply_kept(sent[-33], timeout=30)
    except (OSError, ConnectionError, TimeoutError):
        pass  # the server was killed


@pytest.mark.slow
def test_sigkilled_server_loses_no_acknowledged_append(tmp_path: Path, long_run: bool, figures):
    kills = 60 if long_run else 6
    rng = random.Random(_seed() + 2)
    path = new_session_file(tmp_path / "sessions")
    acknowledged: list[str] = []
    partials = 0
    started = time.monotonic()
    for round_no in range(kills):
        srv = RawServer(tmp_path)
        try:
            srv.initialize()
            handle = srv.call("pi/open", {"path": path})["session"]
            stop = threading.Event()
            sent: list[int] = []
            pump = threading.Thread(
                target=_pump_appends, args=(srv, handle, stop, round_no % 3 == 2, sent), daemon=True
            )
            pump.start()
            time.sleep(rng.uniform(0.05, 0.6))
            os.kill(srv.process.pid, signal.SIGKILL)
            srv.process.wait()
            stop.set()
            pump.join(30)
            srv.reader_done(10)
            for msg_id in sent:
                reply = srv.kept.get(msg_id) or srv.replies.get(msg_id)
                if reply is not None and "result" in reply:
                    acknowledged.append(reply["result"]["id"])
        finally:
            srv.close()
        report = check_session_file(path, acknowledged)
        partials += int(report.partial_tail)
    manager = SessionManager.open(path)
    new_id = manager.append_message(USER)
    manager.close()
    check_session_file(path, [*acknowledged, new_id])
    _assert_connected(path)
    figures["crash (server pi/append): SIGKILLs / acknowledged appends / partial last lines / s"] = (
        f"{kills} / {len(acknowledged)} / {partials} / {round(time.monotonic() - started, 1)}"
    )


def _time_to_open(directory: Path, data: bytes) -> float:
    """How long a forked child takes to open (and so migrate) a copy of ``data``."""
    directory.mkdir()
    path = directory / "v1.jsonl"
    path.write_bytes(data)
    child = ForkedChild(opener, str(path))
    assert child.output.wait_ready()
    started = time.monotonic()
    while "opened" not in child.output.lines:
        assert time.monotonic() - started < 60, "the calibration open never finished"
        time.sleep(0.001)
    elapsed = time.monotonic() - started
    child.kill()
    child.output.finish()
    return elapsed


@pytest.mark.slow
def test_kill_during_a_migration_rewrite_leaves_the_old_or_the_new_file(
    tmp_path: Path, long_run: bool, figures
):
    """D12: the rewrite goes to a temporary file that is renamed over the target, so a kill at any
    moment leaves either the untouched v1 file or the complete v3 file, never a truncated one."""
    source = Path(__file__).resolve().parent / "data" / "large-session.jsonl"
    original = source.read_bytes()
    reference = tmp_path / "reference.jsonl"
    reference.write_bytes(original)
    SessionManager.open(str(reference)).close()
    window = 1.6 * _time_to_open(tmp_path / "calibrate", original)  # kills spread over the whole rewrite
    migrated_entries = len(SessionManager.open(str(reference), read_only=True).get_entries())
    rng = random.Random(_seed() + 3)
    rounds = 100 if long_run else 12
    outcomes = {"old": 0, "new": 0}
    for round_no in range(rounds):
        directory = tmp_path / f"r{round_no}"
        directory.mkdir()
        path = directory / "v1.jsonl"
        path.write_bytes(original)
        child = ForkedChild(opener, str(path))
        assert child.output.wait_ready()
        time.sleep(rng.uniform(0.0, window))
        child.kill()
        child.output.finish()
        data = path.read_bytes()
        if data == original:
            outcomes["old"] += 1
        else:
            outcomes["new"] += 1
            assert data.endswith(b"\n") and b'"version":3' in data.split(b"\n", 1)[0]
            viewer = SessionManager.open(str(path), read_only=True)
            assert len(viewer.get_entries()) == migrated_entries
            viewer.close()
    figures["crash during migration rewrite: kills / old file kept / new file complete"] = (
        f"{rounds} / {outcomes['old']} / {outcomes['new']}"
    )


@pytest.mark.slow
def test_kill_during_a_rewrite_leaves_no_temporary_file_behind(tmp_path: Path):
    """A rewrite killed before its rename must not leave its temporary file behind for good (#18)."""
    source = Path(__file__).resolve().parent / "data" / "large-session.jsonl"
    rng = random.Random(_seed() + 4)
    window = 1.3 * _time_to_open(tmp_path / "calibrate", source.read_bytes())
    for round_no in range(12):
        directory = tmp_path / f"r{round_no}"
        directory.mkdir()
        path = directory / "v1.jsonl"
        path.write_bytes(source.read_bytes())
        child = ForkedChild(opener, str(path))
        assert child.output.wait_ready()
        time.sleep(rng.uniform(0.0, window))
        child.kill()
        child.output.finish()
        SessionManager.open(str(path)).close()  # the next open (it finishes or redoes the migration)
        leftovers = [p.name for p in directory.iterdir() if p.name != "v1.jsonl"]
        assert not leftovers, f"round {round_no}: {leftovers}"
