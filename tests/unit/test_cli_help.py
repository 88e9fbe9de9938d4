"""``pi-session --help`` and each command's: every option says what it does, and a help that
cannot be written is one line on stderr, not a Python traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from pi_session_server.cli import COMMANDS, build_parser


def _arguments_without_help(help_text: str) -> list[str]:
    """The arguments a help lists with no text after them: an argument is a line indented by two
    spaces, its help follows on that line after two spaces or on the next lines, indented deeper."""
    lines = help_text.splitlines()
    silent = []
    for number, line in enumerate(lines):
        if not re.match(r"  \S", line):
            continue
        said_here = re.search(r"\S  +\S", line[2:]) is not None
        following = lines[number + 1] if number + 1 < len(lines) else ""
        said_below = re.match(r"   +\S", following) is not None
        if not said_here and not said_below:
            silent.append(line.strip())
    return silent


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_every_command_has_help_text(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        build_parser([name, "--help"]).parse_args([name, "--help"])
    shown = capsys.readouterr().out
    assert "options:" in shown and "--help" in shown
    assert _arguments_without_help(shown) == []


def _pi_session(argv: list[str], stdout: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # (the cli's main: ``python -m pi_session_server`` takes options alone for the server's)
        [sys.executable, "-c", "import sys; from pi_session_server.cli import main; sys.exit(main())", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["--help"], "pi-session"),
        (["--version"], "pi-session"),
        (["tree", "--help"], "pi-session tree"),
        (["repair", "--help"], "pi-session repair"),
    ],
)
def test_a_help_written_to_a_full_disk_is_one_line_on_stderr(argv: list[str], name: str) -> None:
    with open("/dev/full", "w") as full:
        done = _pi_session(argv, full)
    assert (done.returncode, done.stderr) == (2, f"{name}: No space left on device\n")


def test_a_help_whose_reader_is_gone_ends_quietly() -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _pi_session(["tree", "--help"], write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (128 + 13, "")
