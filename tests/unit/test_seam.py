"""The server's one seam to pygls (server/jsonrpc.py) and its framing codec (server/framing.py),
tested against the pygls version pyproject.toml pins.

The codec: frames cut alike whatever the chunks, a header line without end costs nothing. The seam:
pygls is used through its public API only, and the server runs in-process here so that one test
can look at what pygls keeps per request (a private table, read on purpose: pygls 2.1 leaves an
entry in it for every notification it runs as a generator or coroutine, and for every coroutine
a generator handler waits for; the seam must leave none).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from in_process_server import InProcess
from server_process import talk

from pi_session_server.server.framing import (
    MAX_HEADER_LINE,
    FrameDecoder,
    FramingError,
    encode_frame,
    read_frames,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"


# -- the codec -------------------------------------------------------------------------------------


def _bodies(items: list[bytes | FramingError]) -> list[bytes]:
    return [item for item in items if isinstance(item, bytes)]


def test_frames_are_cut_alike_whatever_the_chunks() -> None:
    bodies = [b'{"a":1}', b"", b"x" * 5000, "é😀".encode()]
    stream = b"".join(encode_frame(b) for b in bodies)
    stream += b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}"
    stream += b"content-length: 3\n\n[1]"  # bare LF, lower case
    expected = [*bodies, b"{}", b"[1]"]
    for size in (1, 2, 3, 7, 64, 4999, len(stream)):
        decoder = FrameDecoder()
        got: list[bytes] = []
        for start in range(0, len(stream), size):
            got += _bodies(decoder.feed(stream[start : start + size]))
        assert got == expected, size
        assert all(type(body) is bytes for body in got)  # a body in many pieces too
        assert decoder.missing == 0


def test_missing_tells_how_much_of_a_body_is_still_to_come() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"Content-Length: 10\r\n\r\nabc") == []
    assert decoder.missing == 7
    assert decoder.feed(b"defghij" + encode_frame(b"k")) == [b"abcdefghij", b"k"]


def test_broken_headers_frame_nothing_and_the_next_frame_still_arrives() -> None:
    decoder = FrameDecoder()
    garbage = b"Content-Length: abc\r\n\r\nContent-Length: -5\r\n\r\nX-Other: 1\r\n\r\n\r\n\r\n"
    assert decoder.feed(garbage + encode_frame(b"ok")) == [b"ok"]


def test_a_header_line_without_end_is_reported_once_and_skipped_without_being_kept() -> None:
    decoder = FrameDecoder()
    chunk = b"X" * (1 << 20)
    started = time.perf_counter()
    reported = []
    for _ in range(200):  # 200 MB of one header line
        reported += decoder.feed(chunk)
    assert time.perf_counter() - started < 10  # linear: about 0.1 s (quadratic took minutes)
    assert len(reported) == 1 and isinstance(reported[0], FramingError)
    assert str(MAX_HEADER_LINE) in str(reported[0])
    assert len(decoder._header) == 0  # nothing of it is kept
    assert decoder.feed(b"tail of the line\r\n" + encode_frame(b"next")) == [b"next"]


def test_read_frames_from_a_blocking_stream() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader, os.fdopen(write_end, "wb") as writer:

        def write() -> None:
            writer.write(encode_frame(b"1") + encode_frame(b"x" * 200_000))
            writer.close()

        threading.Thread(target=write, daemon=True).start()
        assert list(read_frames(reader)) == [b"1", b"x" * 200_000]


# -- the seam against the pinned pygls ------------------------------------------------------------


def test_pygls_is_the_pinned_version() -> None:
    major, minor = (int(part) for part in importlib.metadata.version("pygls").split(".")[:2])
    assert (major, minor) >= (2, 1) and major == 2, "pyproject.toml pins pygls~=2.1; test the seam first"


@pytest.fixture
def in_process() -> Iterator[InProcess]:
    running = InProcess()
    yield running
    running.close()


def test_pygls_keeps_nothing_for_the_requests_and_notifications_it_did_not_answer(
    in_process: InProcess, tmp_path: Path
) -> None:
    server = in_process
    result = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert result["result"]["capabilities"]["hoverProvider"] is True
    server.notify("initialized", {})
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    uri = path.as_uri()
    handle = server.request("pi/open", {"path": str(path)})["result"]["session"]
    text = EXAMPLE.read_text()
    for round_ in range(20):
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": text}},
        )
        end = {"line": text.count("\n"), "character": 0}
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": end, "end": end}, "text": ""}],
            },
        )
        hover = server.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}}
        )
        assert "result" in hover
        assert "result" in server.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert "result" in server.request("pi/getLeaf", {"session": handle})
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        server.notify("$/setTrace", {"value": "off"} if round_ else {"value": "messages"})
    assert "result" in server.request("shutdown", None)
    # pygls' table of pending requests (private, looked at on purpose: see the module docstring)
    assert in_process.server.protocol._request_futures == {}
    assert in_process.server.protocol.trace == "off"
    assert in_process.connection._pending == {}
    server.notify("exit", None)


# -- pygls made on demand ------------------------------------------------------------------------


def test_messages_for_pygls_wait_for_it_in_order_while_pi_methods_are_answered(
    in_process: InProcess, tmp_path: Path
) -> None:
    server = in_process
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    uri = path.as_uri()
    assert in_process.server.lsp is None
    handle = server.request("pi/open", {"path": str(path)})["result"]["session"]
    assert in_process.server.lsp is None  # the pi/* methods never need it
    # sent at once, without waiting for a reply: initialize starts pygls, the rest waits for it
    server.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"capabilities": {}}})
    server.notify("initialized", {})
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": EXAMPLE.read_text()}},
    )
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "hover",
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}},
        }
    )
    assert "result" in server.request("pi/getLeaf", {"session": handle})
    deadline = time.monotonic() + 60
    with server._cond:
        while not {"init", "hover"} <= server.replies.keys():
            assert time.monotonic() < deadline, "no reply to initialize or hover"
            server._cond.wait(0.1)
    assert server.replies["init"]["result"]["capabilities"]["hoverProvider"] is True
    assert server.replies["hover"]["result"] is not None  # the document was open when it was asked
    assert "result" in server.request("shutdown", None)
    server.notify("exit", None)


SIDECAR_ALONE = """
import asyncio, json, os, sys, threading
from pi_session_server.server.app import create_server
from pi_session_server.server.framing import encode_frame, read_frames

server = create_server()
to_server, from_server = os.pipe(), os.pipe()
server_in = os.fdopen(to_server[0], "rb", buffering=0)
server_out = os.fdopen(from_server[1], "wb")
client_out = os.fdopen(to_server[1], "wb")
client_in = os.fdopen(from_server[0], "rb")
threading.Thread(target=lambda: asyncio.run(server.connection.serve(server_in, server_out)), daemon=True).start()
replies = read_frames(client_in)
for number, (method, params) in enumerate(
    [("pi/open", {"path": sys.argv[1]}), ("pi/getTree", {"uri": "file://" + sys.argv[1], "chain": True})]
):
    client_out.write(encode_frame(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}).encode()))
    client_out.flush()
    assert "result" in json.loads(next(replies)), method
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in ("pygls", "lsprotocol", "cattrs") and name != "pygls.uris" and name != "pygls")))
"""


def test_a_client_of_the_pi_methods_alone_never_waits_for_pygls_to_be_imported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    done = subprocess.run(
        [sys.executable, "-c", SIDECAR_ALONE, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


SHUT_DOWN_ALONE = """
import json, sys
from pi_session_server.server.app import create_server
from pi_session_server.server.jsonrpc import run_stdio

server = create_server()
try:
    run_stdio(server, server.connection, server.poller.start)
except SystemExit as done:
    code = done.code
else:
    code = None
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs") and m not in ("pygls", "pygls.uris"))
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def _lifecycle(messages: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], dict[str, Any]]:
    """The replies (by id) of a server in a process of its own to ``messages``, each request's
    reply read before the next message is sent (as a client does before ``exit``), and how the
    process ended."""
    return talk(SHUT_DOWN_ALONE, list(messages))


def test_shutdown_and_exit_without_the_language_server_never_import_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/open", "params": {"path": str(path)}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "id": 3, "method": "pi/sessions", "params": {}},
    ]
    by_id, ended = _lifecycle([*requests, {"jsonrpc": "2.0", "method": "exit"}])
    assert "result" in by_id[1]
    assert by_id[2] == {"jsonrpc": "2.0", "id": 2, "result": None}  # after the requests before it
    assert by_id[3]["error"]["code"] == -32600  # shutting down
    assert ended == {"code": 0, "heavy": []}
    _replies, ended = _lifecycle([requests[0], {"jsonrpc": "2.0", "method": "exit"}])
    assert ended == {"code": 1, "heavy": []}  # exit without shutdown: status 1, as pygls ends it


def test_shutdown_after_the_language_server_started_is_still_its_own() -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    by_id, ended = _lifecycle(messages)
    assert by_id[1]["result"]["capabilities"]["hoverProvider"] is True
    assert by_id[2]["result"] is None
    assert ended["code"] == 0 and "pygls.server" in ended["heavy"]
