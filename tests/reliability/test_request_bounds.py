"""Bounds on what comes from outside, each answered with a documented error (issue 20, 8, 13, 14).

A header line without end, paths and URIs of any length or with odd characters, a wrong-typed
command argument, a page size of 0, initialization options of the wrong type: never a hang, never
memory without bound, never ``-32603`` with a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import psutil
import pytest
from reliability_helpers import new_session_file
from reliability_rpc import RawServer, file_uri, frame

pytestmark = pytest.mark.timeout(600)

PARSE_ERROR, INVALID_PARAMS, SESSION_ERROR = -32700, -32602, -32008
MB = 1 << 20
EXAMPLE = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"


def _error(reply: dict) -> dict:
    assert "error" in reply, reply
    error = reply["error"]
    assert "traceback" not in json.dumps(error).lower(), error
    return error


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's memory from /proc")
def test_a_header_line_without_end_costs_neither_memory_nor_time(server: RawServer):
    process = psutil.Process(server.process.pid)
    before = process.memory_info().rss
    chunk = b"X" * MB
    started = time.monotonic()
    for _ in range(200):  # 200 MB of one header line, as a broken client might send
        server.send_bytes(chunk)
    server.send_bytes(b"\r\n\r\n")
    reply = server.wait_unmatched(lambda m: "error" in m, timeout=60)
    assert reply["id"] is None and reply["error"]["code"] == PARSE_ERROR
    assert "header line" in reply["error"]["message"]
    handle = server.call("pi/inMemory", {"cwd": "/tmp"})["session"]  # still serving
    assert server.call("pi/getLeaf", {"session": handle})["leafId"] is None
    elapsed = time.monotonic() - started
    grown = process.memory_info().rss - before
    assert elapsed < 60 and grown < 50 * MB, f"{elapsed:.1f} s, +{grown // MB} MB"


def test_paths_and_uris_are_read_as_node_reads_them(server: RawServer, tmp_path: Path):
    # a lone surrogate in a path reaches the file system as U+FFFD (how Node encodes the string)
    odd = tmp_path / "odd\ufffd.jsonl"
    odd.write_bytes(EXAMPLE.read_bytes())
    info = server.call("pi/open", {"path": str(tmp_path / "odd\ud800.jsonl")})
    assert info["sessionFile"] == str(odd) and info["entryCount"] == 36
    # file://localhost/x is /x, as Node's fileURLToPath reads it
    plain = tmp_path / "example.jsonl"
    plain.write_bytes(EXAMPLE.read_bytes())
    local = "file://localhost" + file_uri(plain)[len("file://") :]
    assert server.call("pi/getInfo", {"uri": local})["sessionFile"] == str(plain)
    # a %00: Node's error for a path holding a NUL byte
    error = _error(server.request("pi/getLeaf", {"uri": file_uri(plain).replace("example", "exa%00mple")}))
    assert error["code"] == SESSION_ERROR and "without null bytes" in error["message"]
    assert error["data"]["code"] == "ERR_INVALID_ARG_VALUE"
    # another host, an encoded "/": Node's errors too (the schema cannot tell such a uri)
    for uri, code in (
        ("file://elsewhere/x.jsonl", "ERR_INVALID_FILE_URL_HOST"),
        ("file:///a%2Fb.jsonl", "ERR_INVALID_FILE_URL_PATH"),
    ):
        error = _error(server.request("pi/getLeaf", {"uri": uri}))
        assert error["code"] == SESSION_ERROR and error["data"] == {"name": "TypeError", "code": code}


def test_very_long_paths_and_uris_are_refused_at_once(server: RawServer):
    long_uri = "file:///" + "a/" * (1 << 20)
    long_path = "/" + "a/" * (1 << 20)
    requests = [
        ("pi/getLeaf", {"uri": long_uri}),
        ("pi/delete", {"uri": long_uri}),
        ("pi/open", {"path": long_path}),
        ("pi/create", {"cwd": long_path}),
        ("pi/list", {"cwd": long_path}),
        (
            "textDocument/hover",
            {"textDocument": {"uri": long_uri + ".jsonl"}, "position": {"line": 0, "character": 0}},
        ),
    ]
    for method, params in requests:
        started = time.monotonic()
        reply = server.request(method, params, timeout=60)
        assert time.monotonic() - started < 10, method
        if method == "textDocument/hover":
            assert reply.get("result") is None or _error(reply)["code"] == INVALID_PARAMS
        else:
            assert _error(reply)["code"] == INVALID_PARAMS, method


def test_commands_with_wrong_arguments_are_invalid_params(server: RawServer):
    for params in (
        {"command": "pi.session.extractImage", "arguments": [5, "x", {}]},
        {"command": "pi.session.extractImage", "arguments": ["file:///x.jsonl", True, []]},
        {"command": "pi.session.extractImage", "arguments": ["file:///x.jsonl"]},
        {"command": "pi.session.extractImage", "arguments": "not a list"},
        {"command": "pi.session.noSuchCommand"},
        {"command": 5},
    ):
        assert _error(server.request("workspace/executeCommand", params))["code"] == INVALID_PARAMS, params


def test_a_page_size_below_one_is_refused(server: RawServer, tmp_path: Path):
    path = new_session_file(tmp_path / "s", cwd=str(tmp_path))
    handle = server.call("pi/open", {"path": path})["session"]
    asks = [
        ("pi/getEntries", {"session": handle}),
        ("pi/getTree", {"session": handle}),
        ("pi/list", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")}),
        ("pi/listAll", {"sessionDir": str(tmp_path / "s")}),
    ]
    for method, params in asks:
        for limit in (0, -1):
            error = _error(server.request(method, {**params, "limit": limit}))
            assert error["code"] == INVALID_PARAMS and "limit" in error["message"], (method, error)
    page = server.call("pi/getEntries", {"session": handle, "limit": 1})
    assert len(page["entries"]) == 1 and page["hasMore"] is (page["total"] > 1)


def test_initialization_options_of_the_wrong_type_are_logged_and_the_defaults_stay(tmp_path: Path):
    running = RawServer(tmp_path)
    try:
        running.initialize({"watchInterval": "fast", "fsync": True})
        path = new_session_file(tmp_path / "s", cwd=str(tmp_path))
        handle = running.call("pi/open", {"path": path})["session"]
        with open(path, "ab") as f:  # another process appends: the default 0.15 s poller sees it
            f.write(
                b'{"type":"message","id":"zz000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
                b'"message":{"role":"user","content":"x","timestamp":1}}\n'
            )
        change = running.wait_notification("pi/didChange", timeout=10)
        assert change["session"] == handle and change["newEntryIds"] == ["zz000001"]
        assert "initializationOptions ignored" in running.stderr_text()
        assert "watchInterval" in running.stderr_text()
    finally:
        running.kill()


def test_a_watch_interval_of_0_in_the_initialization_options_turns_following_off(tmp_path: Path):
    """As `serve --watch-interval 0`: the options are taken (not ignored as out of range), and a file
    another process appends to is not looked at: the session keeps what it read."""
    running = RawServer(tmp_path)
    try:
        running.initialize({"watchInterval": 0})
        path = new_session_file(tmp_path / "s", cwd=str(tmp_path))
        handle = running.call("pi/open", {"path": path})["session"]
        read = running.call("pi/getInfo", {"session": handle})["entryCount"]
        with open(path, "ab") as f:
            f.write(
                b'{"type":"message","id":"zz000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
                b'"message":{"role":"user","content":"x","timestamp":1}}\n'
            )
        with pytest.raises(TimeoutError):
            running.wait_notification("pi/didChange", timeout=1)
        assert running.call("pi/getInfo", {"session": handle})["entryCount"] == read  # what it read
        assert "initializationOptions ignored" not in running.stderr_text()
    finally:
        running.kill()


def test_a_frame_that_is_not_json_is_answered_even_deep_inside(server: RawServer):
    server.unmatched.clear()
    server.send_bytes(frame(b"[" * 100_000 + b"1" + b"]" * 99_999))
    reply = server.wait_unmatched(lambda m: "error" in m, timeout=30)
    assert reply["error"]["code"] == PARSE_ERROR
