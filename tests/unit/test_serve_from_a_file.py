"""``pi-session serve < FILE``: a stdin the event loop cannot watch (a regular file, ``/dev/null``,
which epoll refuses) is read on a thread to its end, each request answered, and the server ends
with it; it used to log the refusal and wait for ever."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from pi_session_server.server.framing import encode_frame, read_frames
from pi_session_server.server.jsonrpc import loop_can_watch

EXAMPLE = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"


def serve(stdin: object, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", "serve"],
        stdin=stdin,
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PI_SESSION_INDEX_DIR": str(tmp_path / "index")},
    )


def test_requests_in_a_file_are_answered_and_the_server_ends_with_the_file(tmp_path: Path) -> None:
    requests = tmp_path / "requests"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/open", "params": {"path": str(EXAMPLE)}},
        {"jsonrpc": "2.0", "id": 2, "method": "pi/getLeaf", "params": {"uri": EXAMPLE.as_uri()}},
        {"jsonrpc": "2.0", "id": 3, "method": "pi/noSuchMethod", "params": {}},
    ]
    requests.write_bytes(b"".join(encode_frame(json.dumps(m).encode()) for m in messages))
    with open(requests, "rb") as stdin:
        done = serve(stdin, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    replies = {r["id"]: r for r in map(json.loads, read_frames(io.BytesIO(done.stdout)))}
    assert set(replies) == {1, 2, 3}
    assert "result" in replies[1] and replies[2]["result"]["leafId"] == "e2f3a4b5"
    assert replies[3]["error"]["code"] == -32601


def test_an_empty_stdin_ends_the_server_at_once(tmp_path: Path) -> None:
    with open(os.devnull, "rb") as stdin:
        done = serve(stdin, tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert b"Traceback" not in done.stderr and b"PermissionError" not in done.stderr


def test_what_the_loop_can_watch(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    left, right = socket.socketpair()
    try:
        assert loop_can_watch(read_end) and loop_can_watch(left.fileno())
        with open(tmp_path / "f", "wb") as regular, open(os.devnull, "rb") as null:
            assert not loop_can_watch(regular.fileno()) and not loop_can_watch(null.fileno())
    finally:
        for fd in (read_end, write_end):
            os.close(fd)
        left.close()
        right.close()
