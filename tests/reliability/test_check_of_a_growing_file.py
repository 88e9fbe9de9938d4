"""``pi-session check`` of a file another process appends to while the command runs, as a user
runs it: the command checks what the file held when it started and ends, however fast the file
grows; a last line the size at the start cut in the middle, which its writer was still writing,
is no damage to report.

The writer is cued by the command itself: a first file with a great many problems is checked
first, and its output, which the test does not read yet, fills the pipe and holds the command
there, after it took the sizes of its files and before it reads the second one. The writer
finishes the line it was writing and appends on; the test then reads the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TextIO

import builders as S
import pytest
from reliability_helpers import ForkedChild

pytestmark = pytest.mark.timeout(300)

#: the problems of the file checked first: their lines are many times what a pipe holds
DAMAGED_LINES = 20_000
#: how far the writer appends at most (a check that read on would report each of its lines)
WRITER_CAP = 32 * 1024 * 1024
JUNK = b"appended meanwhile\n"
#: the line the writer is writing when the command starts: its first part is in the file then
BEING_WRITTEN = S.user("u1", "u0", "being written").encode() + b"\n"
CUT_AT = len(BEING_WRITTEN) // 2


def _damaged_file(path: Path) -> Path:
    path.write_text(S.header() + "\n" + "not json\n" * DAMAGED_LINES, encoding="utf-8")
    return path


def _growing_file(path: Path) -> Path:
    """A session whose last line is cut in the middle: the first part of :data:`BEING_WRITTEN`."""
    head = S.header() + "\n" + S.user("u0", None, "first") + "\n"
    path.write_bytes(head.encode() + BEING_WRITTEN[:CUT_AT])
    return path


def _finish_the_line_then_append_on(out: TextIO, path: str) -> None:
    """The writer: the rest of the line being written, then lines that are no JSON, as fast as it
    can (faster than a check reads them), up to :data:`WRITER_CAP` bytes."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, BEING_WRITTEN[CUT_AT:])
    out.write("ready\n")
    flood = JUNK * 4096
    while os.fstat(fd).st_size < WRITER_CAP:
        os.write(fd, flood)
    os.close(fd)


def _check(*paths: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "check", "--no-index", *map(str, paths)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_check_ends_with_what_the_file_held_and_the_line_being_written_is_no_damage(tmp_path: Path) -> None:
    damaged = _damaged_file(tmp_path / "a-damaged.jsonl")
    growing = _growing_file(tmp_path / "b-growing.jsonl")
    check = _check(damaged, growing)
    writer = None
    try:
        assert check.stdout is not None
        first = check.stdout.read(1)  # the command has started printing the first file
        writer = ForkedChild(_finish_the_line_then_append_on, str(growing))
        assert writer.output.wait_ready(), "the writer did not start"
        out, err = check.communicate(timeout=240)
    finally:
        check.kill()
        if writer is not None:
            writer.kill()
    assert os.path.getsize(growing) > CUT_AT  # (the writer did append)
    text = (first + out).decode()
    assert check.returncode == 1, err  # (the first file's problems)
    assert f"{growing}" not in text.replace(f"{growing}: ok\n", "")  # no problem of the growing file
    assert text.endswith(f"{growing}: ok\n2 files checked: {DAMAGED_LINES:,} errors\n")
    assert err.decode() == (
        f"pi-session check: {growing}: lines were appended while it was checked; what it held at the "
        "start was checked (its last line, still being written then, is left for the next check)\n"
    )


def test_a_last_line_cut_in_a_file_nobody_appends_to_is_reported(tmp_path: Path) -> None:
    growing = _growing_file(tmp_path / "b-growing.jsonl")
    out, err = _check(growing).communicate(timeout=120)
    assert f"{growing}:3:1: error PI002 truncated last line" in out.decode()
    assert err == b""
