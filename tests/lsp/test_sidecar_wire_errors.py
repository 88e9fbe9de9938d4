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
