"""A pi/delete cancelled in the same breath as it was sent (the cancel read with it, before its
work began) leaves nothing behind that later requests of its file wait for or trip on."""

from __future__ import annotations

import json
from pathlib import Path

from reliability_helpers import new_session_file
from reliability_rpc import RawServer, encode, file_uri, frame

REQUEST_CANCELLED = -32800


def test_a_delete_cancelled_before_it_began_holds_up_no_open_of_its_file(server: RawServer, tmp_path: Path):
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    delete_id, open_id = server.next_id(), server.next_id()
    for msg_id in (delete_id, open_id):
        server.expect_id(msg_id)
    # one write: the server reads the three messages together, the cancel before the delete's work
    server.send_bytes(
        frame(encode({"jsonrpc": "2.0", "id": delete_id, "method": "pi/delete", "params": {"path": path}}))
        + frame(encode({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": delete_id}}))
        + frame(encode({"jsonrpc": "2.0", "id": open_id, "method": "pi/open", "params": {"path": path}}))
    )
    deleted = server.wait_reply(delete_id, timeout=10)
    assert deleted.get("error", {}).get("code") == REQUEST_CANCELLED or "result" in deleted, deleted
    opened = server.wait_reply(open_id, timeout=10)  # not held up for ever by the cancelled delete
    assert "result" in opened, opened
    # and the file's uri finds a session, not one the delete closed and left behind
    count = server.call("pi/getEntryCount", {"uri": file_uri(path)})
    assert isinstance(count, int), json.dumps(count)
    assert session != opened["result"]["session"]
