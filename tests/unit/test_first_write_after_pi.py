"""The first write to a session opened by uri after pi appended to its file: the manager takes pi's
lines in as the watcher does and becomes writable in place (``SessionManager.only_appended_to``),
keeping all it holds and all kept beside it; pi's lines are told once, by the write, and the
watcher's next look finds nothing more to tell. A file changed otherwise is opened again."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest
from in_process_server import InProcess

from pi_session_server.server import session_stats
from pi_session_server.server.app import ServerOptions
from pi_session_server.server.workers import CancelToken
from pi_session_server.session.manager import SessionManager

ASLEEP = 3600.0  # the watcher's own looks never come: the test makes the one it needs


def _session(tmp_path: Path, end: str = "\n") -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(S.chat(3)) + end, encoding="utf-8")
    return path


def _pi_appends(path: Path, text: str = "") -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text or S.user("x0000001", "t2z", "from pi") + "\n")


def test_a_look_at_a_file_pi_appended_to_takes_the_lines_in_and_becomes_writable(tmp_path):
    path = _session(tmp_path)
    manager = SessionManager.open(str(path), read_only=True)
    held = manager.get_entry("t0u")
    assert manager.only_appended_to() is False  # unchanged: make_writable() alone
    _pi_appends(path)
    assert manager.only_appended_to() is True and manager.make_writable() is False
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("appended", ["x0000001"])
    assert manager.make_writable() is True and manager.get_entry("t0u") is held


def _rewritten_and_grown(path: Path) -> None:
    """Rewritten in place, its last bytes changed (those a look keeps to tell a rewrite), and longer."""
    data = path.read_bytes()
    assert data.endswith(b'"stopReason":"stop","timestamp":2}}\n')
    path.write_bytes(
        data.replace(b'"stop","timestamp":2}}', b'"STOP","timestamp":2}}')
        + S.user("x0000001", "t2z").encode()
        + b"\n"
    )


def _replaced_by_a_longer_copy(path: Path) -> None:
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    _pi_appends(path)


def _truncated(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


@pytest.mark.parametrize(
    "change",
    [_rewritten_and_grown, _replaced_by_a_longer_copy, _truncated],
    ids=["rewritten", "replaced", "truncated"],
)
def test_a_file_changed_otherwise_is_not_taken_as_appended_to(tmp_path, change):
    path = _session(tmp_path)
    manager = SessionManager.open(str(path), read_only=True)
    change(path)
    assert manager.only_appended_to() is False


def test_a_look_that_left_a_cut_line_is_not_taken_as_appended_to(tmp_path):
    path = _session(tmp_path, end="")  # a crash cut the last newline: an open for writing ends it
    manager = SessionManager.open(str(path), read_only=True)
    _pi_appends(path, "\n" + S.user("x0000001", "t2z") + "\n")
    assert manager.only_appended_to() is False


def _watcher_looks(running: InProcess, uri: str) -> None:
    """One look of the watcher at every held file, and the refreshes it queued run (a request on
    the session queued after them is answered)."""
    poller = running.server.poller
    look = poller._next_look()
    assert look is not None
    poller._look(look, CancelToken())
    assert "result" in running.request("pi/getLeaf", {"uri": uri})


def test_the_first_write_by_uri_after_pi_appended_keeps_the_session_and_tells_pi_s_lines_once(tmp_path):
    path = _session(tmp_path)
    uri = path.as_uri()
    running = InProcess(ServerOptions(watch_interval=ASLEEP))
    try:
        assert running.request("pi/getStats", {"uri": uri})["result"]["entryCount"] == 12
        (slot,) = running.server.registry.slots()
        looked = slot.manager
        totals = session_stats._stats.totals(looked)  # (kept by the request: not counted here)
        _pi_appends(path)
        reply = running.request("pi/append", {"uri": uri, "kind": "message", "message": S.user_message("x")})
        assert reply["result"]["leafId"] == reply["result"]["id"]
        assert slot.manager is looked and not slot.read_only  # not opened again
        stats = running.request("pi/getStats", {"uri": uri})["result"]
        assert stats["entryCount"] == 14 and stats["roles"]["user"] == 5
        # pi's entry and ours added to the totals kept, nothing counted again
        assert session_stats._stats.totals(looked) is totals and totals.count == 14
        told = [params for method, params in running.notifications if method == "pi/didChange"]
        own = reply["result"]["id"]  # (pi's line, then ours)
        assert [(p["kind"], p["newEntryIds"], p["leafId"]) for p in told] == [
            ("appended", ["x0000001"], "t2z"),
            ("appended", [own], own),
        ]
        _watcher_looks(running, uri)
        assert slot.last_stat is not None  # it looked, and found the file changed: refreshed
        assert [params for method, params in running.notifications if method == "pi/didChange"] == told
    finally:
        running.close()


def test_a_line_pi_is_still_writing_is_not_taken_in_and_the_look_stays_a_look(tmp_path):
    """What the first write by uri does then: the refresh finds no whole line, the manager cannot
    become writable, and the file is opened again for writing (as before)."""
    path = _session(tmp_path)
    manager = SessionManager.open(str(path), read_only=True)
    _pi_appends(path, S.user("x0000001", "t2z")[:30])
    assert manager.only_appended_to() is True
    assert manager.refresh_from_disk().kind == "unchanged"
    assert manager.make_writable() is False and manager.read_only is True
