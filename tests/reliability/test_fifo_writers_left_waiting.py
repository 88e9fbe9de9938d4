"""A FIFO is never opened, not even for an instant: a program waiting to write into one (its
open of the write end blocks until a reader comes) still waits after the server looked at it. An
open and close at once would let the writer's open through and break its write (SIGPIPE)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import new_session_file
from reliability_rpc import RawServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    running = RawServer(tmp_path)
    running.initialize()
    yield running
    assert running.alive(), running.stderr_text()[-3000:]
    running.close()


def _writer_waiting_on(fifo: Path) -> subprocess.Popen[bytes]:
    """A shell whose redirection opens the FIFO's write end, once it waits there for a reader (the
    kernel's wait for the other end of a FIFO, as /proc tells it)."""
    writer = subprocess.Popen(["sh", "-c", 'printf x > "$0"', str(fifo)])
    wchan = Path(f"/proc/{writer.pid}/wchan")
    deadline = time.monotonic() + 30
    while wchan.read_text() != "wait_for_partner":
        if writer.poll() is not None or time.monotonic() > deadline:
            writer.kill()
            pytest.skip("this system does not tell a process waiting to open a FIFO (/proc/PID/wchan)")
        time.sleep(0.01)
    return writer


def test_a_followed_file_replaced_by_a_fifo_a_writer_waits_on_leaves_the_writer_waiting(
    server: RawServer, tmp_path: Path
):
    path = Path(new_session_file(tmp_path / "followed", cwd=str(tmp_path)))
    uri = path.as_uri()
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}}
    assert server.call("textDocument/hover", hover) is not None
    server.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    fifo = path.with_suffix(".fifo")
    os.mkfifo(fifo)
    writer = _writer_waiting_on(fifo)
    try:
        os.replace(fifo, path)
        server.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p["diagnostics"] == [], timeout=5
        )
        assert server.request("textDocument/hover", hover, timeout=5)["error"]["code"] == -32010
        assert writer.poll() is None, "the writer's open was let through: the FIFO was opened"
    finally:
        writer.kill()
        writer.wait()
