"""``pi/setSessionFile`` onto a relative path while a pi/delete is pending, through the real server:
the path is the session's to resolve (in the working directory the session was opened with, which
a worker knows), so the switch cannot be known to be of another file than the delete's and waits
for it; onto the file being deleted, it answers as pi answers for a missing file (a new session at
that path), and the requests on the session sent after it see the switch (docs/GUARANTEES.md,
"Nothing sent after a pi/delete reads the file it deletes")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reliability_rpc import RawServer, file_uri
from test_requests_ordered_after_delete import pipelined, session_with_entries

HELD = 10
HELD_ENTRIES = HELD + 2  # (a new session file holds two messages)
DOOMED = 2000


@pytest.mark.parametrize("spelling", ["name", "dotted"])
def test_a_switch_onto_a_relative_path_waits_for_the_delete_of_its_file(
    server: RawServer, tmp_path: Path, spelling: str
):
    doomed = session_with_entries(tmp_path / "doomed", DOOMED, str(tmp_path))
    held = session_with_entries(tmp_path / "held", HELD, str(tmp_path))
    # the session's working directory is the doomed file's, not the server's (tmp_path): resolved
    # against the server's, the relative path would name another file, which is not there
    session_cwd = os.path.dirname(doomed)
    name = os.path.basename(doomed)
    relative = name if spelling == "name" else os.path.join(".", "..", "doomed", name)
    session = server.call("pi/open", {"path": held, "environment": {"cwd": session_cwd}})["session"]
    deleted, switched, counted = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/setSessionFile", {"session": session, "path": relative}),
        ("pi/getEntryCount", {"session": session}),
    )
    assert "result" in deleted, deleted
    assert switched.get("result", {}).get("sessionFile") == doomed, switched
    assert counted.get("result") == 0, counted  # a new session at the missing path: nothing was read
    assert not os.path.exists(doomed)
    assert server.call("pi/getEntryCount", {"uri": file_uri(held)}) == HELD_ENTRIES  # the held file untouched
