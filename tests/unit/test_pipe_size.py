"""The server widens the pipe it reads its messages from, so a big message crosses in few reads."""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from pathlib import Path

import pytest

from pi_session_server.server.jsonrpc import PIPE_SIZE, widen_pipe
from pi_session_server.server.stdio_client import SidecarClient

pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux only")


def pipe_size(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)


def test_a_pipe_grows_to_the_size_asked_from_either_end() -> None:
    read_end, write_end = os.pipe()
    try:
        assert pipe_size(read_end) < PIPE_SIZE  # the kernel's default (64 KiB)
        assert widen_pipe(read_end) == PIPE_SIZE
        assert pipe_size(write_end) == PIPE_SIZE  # one buffer, seen from both ends
        assert widen_pipe(write_end) == PIPE_SIZE  # already wide: left as it is
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_pipe_too_full_to_shrink_or_a_size_beyond_the_limit_is_no_error() -> None:
    read_end, write_end = os.pipe()
    try:
        limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        asked = widen_pipe(read_end, size=limit * 4)  # EPERM for an unprivileged process
        assert asked is not None and asked >= pipe_size(write_end) > 0
    finally:
        os.close(read_end)
        os.close(write_end)


def test_other_streams_are_left_alone(tmp_path: Path) -> None:
    left, right = socket.socketpair()  # what libuv (VS Code, Neovim) gives a child for stdio
    try:
        assert widen_pipe(left) is None
    finally:
        left.close()
        right.close()
    with open(tmp_path / "f", "wb") as regular:
        assert widen_pipe(regular) is None
    closed_read, closed_write = os.pipe()
    os.close(closed_read)
    os.close(closed_write)
    assert widen_pipe(closed_read) is None  # EBADF: no error either
    assert widen_pipe(object()) is None  # no fileno()


def test_the_server_process_widens_the_pipe_it_reads() -> None:
    client = SidecarClient([sys.executable, "-m", "pi_session_server", "serve"])
    try:
        assert client.process.stdin is not None and client.process.stdout is not None
        client.request("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
        # the server widened it before it read its first message: the reply proves it got there
        assert pipe_size(client.process.stdin.fileno()) == PIPE_SIZE
        big = {"role": "user", "content": "x" * (4 * PIPE_SIZE), "timestamp": 1}
        session = client.request("pi/inMemory", {"cwd": "/proj"})["session"]
        client.request("pi/append", {"session": session, "kind": "message", "message": big})
        context = client.request("pi/buildSessionContext", {"session": session})
        assert context["messages"][0]["content"] == big["content"]
    finally:
        client.close()
