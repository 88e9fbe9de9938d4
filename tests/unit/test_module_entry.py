"""``python -m pi_session_server``: the sidecar, with the server's options given alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pi_session_server.server.stdio_client import SidecarClient

ROOT = Path(__file__).resolve().parents[2]


def test_options_alone_are_the_servers(tmp_path: Path):
    log = tmp_path / "server.log"
    command = [
        sys.executable,
        "-m",
        "pi_session_server",
        "--fsync",
        "--log-file",
        str(log),
        "--log-level",
        "DEBUG",
    ]
    with SidecarClient(command, cwd=str(ROOT)) as pi:
        opened = pi.request("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path)})
        assert pi.request("pi/getHeader", {"session": opened["session"]})["cwd"] == str(tmp_path)
    assert log.stat().st_size > 0  # the log went where it was told, not to stdout


def test_a_command_or_help_is_pi_sessions():
    run = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0 and "usage: pi-session" in run.stdout and "serve" in run.stdout


def test_a_closed_client_leaves_no_pipe_open():
    """A program that starts a sidecar per task must not run out of descriptors."""

    def open_descriptors() -> set[str]:
        return set(os.listdir("/proc/self/fd"))

    before = open_descriptors()
    for _ in range(3):
        with SidecarClient([sys.executable, "-m", "pi_session_server"], cwd=str(ROOT)) as pi:
            pi.request("pi/inMemory", {})
    assert open_descriptors() <= before
