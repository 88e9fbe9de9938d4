"""The sidecar writes the index an open made after the open is answered.

* An open in ``scan_index.index_writes_deferred`` writes no index: it hands back a write, which
  writes the index of the lines as they were scanned, whatever the session did since (its header
  put first among its entries, entries appended); the next open uses it.
* A deferred write that cannot be made is no error: False, nothing raised.
* The server's IndexKeeper writes once no request is in flight, or at once at shutdown.
* ``pi-session serve``: the index of a first open is written by the time the process ends, the
  next process uses it (the same replies, the index file not written again), and an index that
  cannot be written is no error to the client and nothing in the log.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import builders as S
import pytest
from requests_in_flight import RequestsInFlight
from server_process import Replies, talk

from pi_session_server.server import quiet_jobs
from pi_session_server.server.index_keeping import IndexKeeper
from pi_session_server.server.workers import WorkerPool
from pi_session_server.session import SessionManager, cache_dir, scan_index

pytestmark = pytest.mark.usefixtures("files_settle_at_once")
# how long a file the server opens must be left alone for its index not to be racy (the server
# process's rule, whatever a test patches in this one)
SETTLED_AFTER = cache_dir.RACY_NS / 1e9 + 0.1

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"


def _session(path: Path, entries: int = 40) -> Path:
    lines = [S.header()]
    parent = None
    for n in range(entries):
        entry_id = f"e{n:04d}"
        lines.append(S.user(entry_id, parent, f"message {n}"))
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)


def _ids(manager: SessionManager) -> list[Any]:
    return [entry["id"] for entry in manager.get_entries()]


@pytest.mark.usefixtures("indexed")
def test_a_deferred_write_writes_the_lines_scanned_and_the_next_open_uses_it(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    index_dir = tmp_path / "index"
    with scan_index.index_writes_deferred() as writes:
        manager = SessionManager.open(str(path), index=str(index_dir))
    assert len(writes) == 1 and not index_dir.exists()  # nothing written yet
    scanned = _ids(manager)
    manager.append_message(S.user_message("after the open", 1))
    assert writes[0]() is True
    manager.close()
    reopened = SessionManager.open(str(path), read_only=True, index=str(index_dir))
    assert scan_index.last_outcome.read == "grown"  # the index holds the lines scanned; one was appended
    assert _ids(reopened)[: len(scanned)] == scanned and len(_ids(reopened)) == len(scanned) + 1
    unchanged = SessionManager.open(str(path), read_only=True, index=False)
    assert [e.value for e in reopened.get_entries()] == [e.value for e in unchanged.get_entries()]


@pytest.mark.usefixtures("indexed")
def test_an_open_outside_the_block_still_writes_its_index_at_once(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    with scan_index.index_writes_deferred() as writes:
        pass
    SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index"))
    assert writes == [] and scan_index.last_outcome.written
    SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index"))
    assert scan_index.last_outcome.read == "used"


@pytest.mark.usefixtures("indexed")
def test_a_deferred_write_that_cannot_be_made_is_no_error(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with scan_index.index_writes_deferred() as writes:
        SessionManager.open(str(path), read_only=True, index=str(not_a_directory / "index"))
    assert [write() for write in writes] == [False]


@pytest.mark.usefixtures("indexed")
def test_the_keeper_writes_once_no_request_is_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quiet_jobs, "QUIET_SECONDS", 0.02)
    path, index_dir = _session(tmp_path / "s.jsonl"), tmp_path / "index"
    requests = RequestsInFlight()
    requests.begin()
    keeper = IndexKeeper(WorkerPool(), requests.quiet_seconds)
    with keeper.after_reply():
        SessionManager.open(str(path), read_only=True, index=str(index_dir))
    time.sleep(0.3)
    assert not index_dir.exists()  # a request in flight all along
    requests.answer()
    deadline = time.monotonic() + 10
    while not index_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert keeper.finish(10)
    assert len(_index_files(index_dir)) == 1


@pytest.mark.usefixtures("indexed")
def test_the_keeper_writes_at_once_at_shutdown_past_a_write_that_fails(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    index_dir = tmp_path / "index"
    keeper = IndexKeeper(WorkerPool(), lambda: 0.0)  # never quiet
    with keeper.after_reply():
        SessionManager.open(str(_session(tmp_path / "a.jsonl")), read_only=True, index=str(not_a_directory))
        SessionManager.open(str(_session(tmp_path / "b.jsonl")), read_only=True, index=str(index_dir))
    assert not index_dir.exists()
    started = time.monotonic()
    assert keeper.finish(10)
    assert len(_index_files(index_dir)) == 1 and time.monotonic() - started < 5


# ---------------------------------------------------------------------- pi-session serve

SERVE = """
import json, sys
from pi_session_server.cli import main
try:
    code = main(["serve"])
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code}), file=sys.stderr)
"""


def _tree_view(path: Path, *, shutdown: bool = True) -> list[Any]:
    def first_window(replies: Replies) -> dict[str, Any]:
        window = {"filter": "default", "form": "flat", "activeBranchFirst": True, "chain": True}
        session = replies[1]["result"]["session"]
        params = {"session": session, **window, "offset": 0, "limit": 200}
        return {"jsonrpc": "2.0", "id": 2, "method": "pi/getTree", "params": params}

    messages: list[Any] = [{"jsonrpc": "2.0", "id": 1, "method": "pi/open", "params": {"path": str(path)}}]
    messages.append(first_window)
    if shutdown:
        messages.append({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None})
        messages.append({"jsonrpc": "2.0", "method": "exit"})
    return messages


def _serve(messages: list[Any], index: Path, log: Path) -> tuple[Replies, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SESSION_")}
    env.update(PI_SESSION_INDEX_DIR=str(index), PI_SESSION_INDEX_MIN_SIZE="0")
    script = SERVE.replace('main(["serve"])', f'main(["serve", "--log-file", {str(log)!r}])')
    return talk(script, messages, env=env, cwd=ROOT)


def _index_files(index: Path) -> list[os.stat_result]:
    return [entry.stat() for entry in index.iterdir() if entry.name.endswith(".pi-index")]


@pytest.mark.parametrize("shutdown", [True, False], ids=["exit", "input-closed"])
def test_the_first_opens_index_is_written_before_the_process_ends(tmp_path: Path, shutdown: bool) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    time.sleep(SETTLED_AFTER)  # settled: its index serves the next open unchanged
    index, log = tmp_path / "index", tmp_path / "log"
    first, ended = _serve(_tree_view(path, shutdown=shutdown), index, log)
    assert ended == {"code": 0}
    [written] = _index_files(index)
    again, _ended = _serve(_tree_view(path), index, log)
    [used] = _index_files(index)
    assert used.st_ino == written.st_ino  # read, not written again
    assert again[2] == first[2] and again[2]["result"]["nodes"]
    assert {k: v for k, v in again[1]["result"].items() if k != "session"} == {
        k: v for k, v in first[1]["result"].items() if k != "session"
    }
    assert log.read_text() == ""


def test_an_index_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    log = tmp_path / "log"
    replies, ended = _serve(_tree_view(path), not_a_directory / "index", log)
    assert "result" in replies[1] and replies[2]["result"]["nodes"] and replies[3]["result"] is None
    assert ended == {"code": 0}
    assert log.read_text() == ""
