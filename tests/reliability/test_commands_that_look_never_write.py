"""The commands that only look at a file (``tree``, ``context``, ``stats``, ``demo``, ``check``, and
``repair`` without ``--in-place`` or ``-o``) leave every file as it was: sessions pi's own open
would write (a v1 file it migrates, a missing final newline it adds, an empty file it gives a
header), files that are no session, and a directory of them given to ``check``. Each runs as its
own process, as a user runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_helpers import sha256_tree
from test_path_safety import NEEDS_WRITE_ON_OPEN, NOT_SESSIONS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

LOOKING_COMMANDS = [["tree"], ["context"], ["stats"], ["demo"], ["check"], ["repair"], ["repair", "--all"]]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PI_SESSION_INDEX_DIR": str(tmp_path / "cache"),  # what is kept goes there, nowhere else
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path / "files"),
        env=env,
    )


@pytest.mark.parametrize("command", LOOKING_COMMANDS, ids=" ".join)
def test_a_command_that_looks_leaves_every_file_as_it_was(tmp_path: Path, command: list[str]) -> None:
    files = tmp_path / "files"
    files.mkdir()
    for name, data in {**NEEDS_WRITE_ON_OPEN, **NOT_SESSIONS}.items():
        (files / name).write_bytes(data)
    before = sha256_tree(files)
    outcomes = {}
    for name in sorted(before):
        done = _run([*command, str(files / name)], tmp_path)
        assert "Traceback" not in done.stderr, (name, done.stderr)
        outcomes[name] = done.returncode
    if command == ["check"]:
        done = _run(["check", str(files)], tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
    assert sha256_tree(files) == before, outcomes
    # a command that showed a session did so (the test ran what it claims to have run)
    assert outcomes["v1.jsonl"] in (0, 1), outcomes
