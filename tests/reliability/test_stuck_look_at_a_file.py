"""A look at a file that hangs (a stat on a stuck network mount) while a pi/delete is pending,
through the real server: it holds the request whose look it is, never the requests on other files
or sessions; a delete whose own file cannot be looked at fails after a bound (FsError ETIMEDOUT),
deleting and closing nothing, and the requests behind it go on.

The server runs with a ``sitecustomize`` that makes every stat of a path under a directory named
``stuck-mount`` wait while a flag file exists: what a stuck mount does to the threads that touch it."""

from __future__ import annotations

import os
from pathlib import Path

from reliability_rpc import RawServer, file_uri
from test_requests_ordered_after_delete import session_with_entries

from pi_session_server.server import pending_deletes

APPENDED = 10
ENTRIES = APPENDED + 2  # (a new session file holds two messages)


def test_a_look_that_hangs_delays_no_request_on_another_file_or_session(
    stuck_server: RawServer, tmp_path: Path, stuck_flag: Path
):
    doomed = session_with_entries(tmp_path / "doomed", 2000, str(tmp_path))
    stuck = session_with_entries(tmp_path / "stuck-mount", APPENDED, str(tmp_path))
    other = session_with_entries(tmp_path / "other", APPENDED, str(tmp_path))
    held = session_with_entries(tmp_path / "held", APPENDED, str(tmp_path))
    session = stuck_server.call("pi/open", {"path": held})["session"]
    stuck_flag.touch()
    deleted, on_stuck, opened, by_uri, on_session = stuck_server.send_together(
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/open", {"path": stuck}),
        ("pi/open", {"path": other}),
        ("pi/getEntryCount", {"uri": file_uri(other)}),
        ("pi/getEntryCount", {"session": session}),
    )
    # (the bound: far longer than these take, far shorter than the stat's hang)
    assert "result" in stuck_server.wait_reply(deleted, timeout=20)
    assert stuck_server.wait_reply(opened, timeout=20).get("result", {}).get("entryCount") == ENTRIES
    assert stuck_server.wait_reply(by_uri, timeout=20).get("result") == ENTRIES
    assert stuck_server.wait_reply(on_session, timeout=20).get("result") == ENTRIES
    assert on_stuck not in stuck_server.replies  # its stat still hangs
    stuck_flag.unlink()
    assert stuck_server.wait_reply(on_stuck, timeout=20).get("result", {}).get("entryCount") == ENTRIES
    assert not os.path.exists(doomed)


def test_a_delete_whose_file_cannot_be_looked_at_fails_in_bounded_time_and_holds_nothing(
    stuck_server: RawServer, tmp_path: Path, stuck_flag: Path
):
    """Until a delete knows its file, it may be of any session's: every request on a file or a
    session waits for it. A delete whose look hangs answers FsError ETIMEDOUT once
    ``LOOK_LIMIT_SECONDS`` passed, having deleted and closed nothing, and those go on."""
    stuck = session_with_entries(tmp_path / "stuck-mount", APPENDED, str(tmp_path))
    held = session_with_entries(tmp_path / "held", APPENDED, str(tmp_path))
    other = session_with_entries(tmp_path / "other", APPENDED, str(tmp_path))
    session = stuck_server.call("pi/open", {"path": held})["session"]
    stuck_flag.touch()
    deleted, on_session, opened = stuck_server.send_together(
        ("pi/delete", {"path": stuck, "permanent": True}),
        ("pi/getEntryCount", {"session": session}),
        ("pi/open", {"path": other}),
    )
    limit = pending_deletes.LOOK_LIMIT_SECONDS
    error = stuck_server.wait_reply(deleted, timeout=limit + 15).get("error", {})
    assert error.get("code") == -32005, error
    assert error.get("data", {}).get("code") == "ETIMEDOUT" and error["data"].get("path") == stuck, error
    assert stuck_server.wait_reply(on_session, timeout=15).get("result") == ENTRIES
    assert stuck_server.wait_reply(opened, timeout=15).get("result", {}).get("entryCount") == ENTRIES
    stuck_flag.unlink()
    assert os.path.exists(stuck)  # nothing deleted: sent again, the delete deletes it
    assert stuck_server.call("pi/delete", {"path": stuck, "permanent": True})["path"] == stuck
    assert not os.path.exists(stuck)
