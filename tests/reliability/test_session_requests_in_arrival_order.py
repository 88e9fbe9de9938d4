"""Requests on one session start in arrival order while a pi/delete is pending, through the real
server: one that waits for the delete (``pi/setSessionFile`` onto the file being deleted, or onto
a path a worker resolves) is passed by none sent after it on the same session, whichever way they
name the session (handle, ``uri``) and whatever they are (a read, a write, ``pi/close``); and
``pi/sessions`` describes the session as the switch left it."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_helpers import USER
from reliability_rpc import RawServer, file_uri
from test_requests_ordered_after_delete import UNKNOWN_SESSION, pipelined, session_with_entries

HELD = 10
HELD_ENTRIES = HELD + 2  # (a new session file holds two messages)


@pytest.mark.parametrize("by", ["session", "uri"])
def test_a_read_on_the_session_sent_after_a_switch_onto_the_deleted_file_sees_the_switch(
    server: RawServer, tmp_path: Path, by: str
):
    """The switch (by handle, or by the ``uri`` of the session's file) waits for the delete of its
    target to answer; the read by handle sent after it waits for the switch, and counts the new
    session's entries (the file is gone: none)."""
    doomed = session_with_entries(tmp_path / "doomed", 2000, str(tmp_path))
    held = session_with_entries(tmp_path / "held", HELD, str(tmp_path))
    session = server.call("pi/open", {"path": held})["session"]
    addressed = {"session": session} if by == "session" else {"uri": file_uri(held)}
    deleted, switched, counted = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/setSessionFile", {**addressed, "path": doomed}),
        ("pi/getEntryCount", {"session": session}),
    )
    assert "result" in deleted, deleted
    assert switched.get("result", {}).get("sessionFile") == doomed, switched
    assert counted.get("result") == 0, counted  # after the switch: a new session at the missing path
    assert server.call("pi/getEntryCount", {"uri": file_uri(held)}) == HELD_ENTRIES  # the held file untouched


def test_a_write_and_a_close_sent_after_a_switch_run_after_it(server: RawServer, tmp_path: Path):
    doomed = session_with_entries(tmp_path / "doomed", 2000, str(tmp_path))
    held = session_with_entries(tmp_path / "held", HELD, str(tmp_path))
    session = server.call("pi/open", {"path": held})["session"]
    deleted, switched, appended, counted, closed, after_close = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/setSessionFile", {"session": session, "path": doomed}),
        ("pi/append", {"session": session, "kind": "message", "message": USER}),
        ("pi/getEntryCount", {"session": session}),
        ("pi/close", {"session": session}),
        ("pi/getEntryCount", {"session": session}),
    )
    assert "result" in deleted, deleted
    assert switched.get("result", {}).get("sessionFile") == doomed, switched
    assert "result" in appended, appended
    assert counted.get("result") == 1, counted  # the append went to the new session
    assert closed.get("result") == {"session": session, "closed": True}, closed
    assert after_close.get("error", {}).get("code") == UNKNOWN_SESSION, after_close
    assert server.call("pi/getEntryCount", {"uri": file_uri(held)}) == HELD_ENTRIES  # the held file untouched


def test_pi_sessions_sent_after_a_switch_describes_the_session_switched(server: RawServer, tmp_path: Path):
    doomed = session_with_entries(tmp_path / "doomed", 2000, str(tmp_path))
    held = session_with_entries(tmp_path / "held", HELD, str(tmp_path))
    session = server.call("pi/open", {"path": held})["session"]
    deleted, switched, described = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/setSessionFile", {"session": session, "path": doomed}),
        ("pi/sessions", {}),
    )
    assert "result" in deleted, deleted
    assert switched.get("result", {}).get("sessionFile") == doomed, switched
    files = {info.get("session"): info.get("sessionFile") for info in described.get("result", [])}
    assert files == {session: doomed}, described
