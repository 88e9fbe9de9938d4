"""A client that sends ``exit`` right behind ``shutdown`` (a script piped in, or both in one write)
still gets the answers to the requests it sent before them and to ``shutdown``, and the process
ends with status 0, as the LSP specification asks after a ``shutdown``; with the language server
started too (``initialize`` first), where pygls answers ``shutdown``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from server_process import serve

from pi_session_server.server.framing import encode_frame, read_frames

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": None, "capabilities": {}},
}
SESSIONS = {"jsonrpc": "2.0", "id": 1, "method": "pi/sessions", "params": {}}


def frame(message: dict[str, Any]) -> bytes:
    return encode_frame(json.dumps(message).encode())


@pytest.mark.parametrize("first", [SESSIONS, INITIALIZE], ids=["sidecar", "language-server"])
@pytest.mark.parametrize("input_closed", [False, True], ids=["input-open", "input-closed"])
def test_exit_sent_with_shutdown_waits_for_its_answer(
    tmp_path: Path, first: dict[str, Any], input_closed: bool
) -> None:
    server = serve(tmp_path)
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(
            frame(first)
            + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            + frame({"jsonrpc": "2.0", "method": "exit"})
        )
        server.stdin.flush()
        if input_closed:
            server.stdin.close()
        status = server.wait(timeout=60)
        replies = {reply["id"]: reply for reply in map(json.loads, read_frames(server.stdout))}
    finally:
        server.kill()
    assert sorted(replies) == [1, 2], replies
    assert "result" in replies[1] and replies[2]["result"] is None
    assert status == 0
