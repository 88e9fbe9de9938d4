"""The errors a front end meets before any method runs (a body that is not JSON, a message that is
not a request, a method the server does not have, a request after ``shutdown``) carry codes the
wire contract names in ``components.errors``, as a client that makes its error table from
protocol/ needs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from server_process import serve
from sidecar_support import PROTOCOL

from pi_session_server.server.framing import encode_frame, read_frames

NAMED = {
    error["code"]: name for name, error in json.loads(PROTOCOL.read_text())["components"]["errors"].items()
}


def request(request_id: int, method: str) -> bytes:
    return encode_frame(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}).encode()
    )


def test_the_codes_of_the_wire_s_own_errors_are_the_contract_s(tmp_path: Path) -> None:
    frames = [
        encode_frame(b"{not json"),
        encode_frame(b'[{"jsonrpc": "2.0", "id": 1, "method": "pi/sessions"}]'),  # a batch: not served
        request(2, "pi/noSuchMethod"),
        request(3, "shutdown"),
        request(4, "pi/sessions"),
        encode_frame(b'{"jsonrpc": "2.0", "method": "exit"}'),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "serve"],
        input=b"".join(frames),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    replies = list(map(json.loads, read_frames(io.BytesIO(done.stdout))))
    by_id = {reply["id"]: reply for reply in replies if reply["id"] is not None}
    without_id = [reply["error"]["code"] for reply in replies if reply["id"] is None]
    assert without_id == [-32700, -32600]
    assert by_id[2]["error"]["code"] == -32601 and by_id[4]["error"]["code"] == -32600
    assert {
        NAMED.get(code) for code in [*without_id, by_id[2]["error"]["code"], by_id[4]["error"]["code"]]
    } == {
        "ParseError",
        "InvalidRequest",
        "MethodNotFound",
    }


def test_a_message_with_an_id_alone_is_answered_invalid_request(tmp_path: Path) -> None:
    """``{"jsonrpc": "2.0", "id": 2}`` is neither a request (no method) nor a response (no result, no
    error): a client that sent it by mistake waits for an answer, and gets -32600 with its id,
    while the requests around it are answered as usual."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/sessions", "params": {}},
        {"jsonrpc": "2.0", "id": 2},
        {"jsonrpc": "2.0", "id": "three"},
        {"jsonrpc": "2.0", "id": 4, "method": "pi/sessions", "params": {}},
        {"jsonrpc": "2.0", "id": 5, "method": "shutdown"},
    ]
    server = serve(tmp_path)
    assert server.stdin is not None and server.stdout is not None
    frames = read_frames(server.stdout)
    by_id: dict[Any, dict[str, Any]] = {}
    try:
        server.stdin.write(b"".join(encode_frame(json.dumps(message).encode()) for message in messages))
        server.stdin.flush()  # (its input kept open: a client that closes it wants no more replies)
        while 5 not in by_id:  # shutdown is answered after every request before it
            reply = json.loads(next(frames))
            by_id[reply["id"]] = reply
        server.stdin.write(encode_frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()
    assert sorted(by_id, key=str) == [1, 2, 4, 5, "three"]
    for answered in (2, "three"):
        assert by_id[answered]["error"]["code"] == -32600, by_id[answered]
        assert "expected a method" in by_id[answered]["error"]["message"]
    assert by_id[1]["result"] == by_id[4]["result"] == [] and by_id[5]["result"] is None
