"""``pi-session serve`` typed at a prompt: its input is a terminal, not a client's pipe, and it
waited there saying nothing. It says on stderr what it waits for; started by a client (stdin a
pipe or a file), it says nothing, and stdout holds the protocol alone either way."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from pi_session_server.commands.serve import TYPED_AT_A_TERMINAL


def test_serve_at_a_terminal_says_what_it_waits_for(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    server = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "serve"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "PI_SESSION_INDEX_DIR": str(tmp_path / "index")},
    )
    os.close(terminal)
    try:
        assert server.stderr is not None
        # (a guard: a server that says nothing waits for ever)
        ready, _, _ = select.select([server.stderr], [], [], 60)
        said = server.stderr.readline().decode() if ready else ""
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=60)
        os.close(controller)
    assert said == TYPED_AT_A_TERMINAL + "\n"
    assert "pi-session demo" in said and "Ctrl-C" in said
    assert out == b""


def test_serve_started_by_a_client_says_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "serve"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PI_SESSION_INDEX_DIR": str(tmp_path / "index")},
    )
    assert TYPED_AT_A_TERMINAL.encode() not in done.stderr
    assert done.stdout == b""


def test_a_log_file_that_cannot_be_written_is_said_alone_at_a_terminal(tmp_path: Path) -> None:
    """It said it was waiting for a client, then that it could not write its log, and stopped."""
    controller, terminal = pty.openpty()
    log = tmp_path / "logs"
    log.mkdir()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pi_session_server", "serve", "--log-file", str(log)],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "PI_SESSION_INDEX_DIR": str(tmp_path / "index")},
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"pi-session serve: {log}: Is a directory\n"
