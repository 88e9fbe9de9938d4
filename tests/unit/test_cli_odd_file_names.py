"""A file's name may hold a line break or a terminal's escape sequence (``\\x1b]0;...\\x07`` sets the
terminal's title): the commands that print a path for a terminal write its control characters as
escapes, as ``list`` did, instead of breaking their header or ``file:line:column`` lines in two or
handing the sequence to the terminal."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main

ODD = "\x1b]0;owned\x07 two\nlines.jsonl"
SHOWN = "\\x1b]0;owned\\x07 two\\x0alines.jsonl"


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    path = tmp_path / ODD
    # a line pi skips (said on stderr with the path) and a problem check reports
    path.write_text(S.header() + "\n" + S.user("aaaa0001", None, "hi") + "\n{not json\n")
    return path


@pytest.mark.parametrize(
    "command",
    [["tree", "--no-index"], ["stats"], ["context", "--no-index"], ["check", "--no-index"], ["repair"]],
)
def test_a_path_is_printed_on_one_line_without_its_control_characters(
    command: list[str], odd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([*command, str(odd)])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text
    shown = out if command[0] != "context" else out.splitlines()[0]
    assert SHOWN in shown
    if command[0] not in ("check", "repair"):
        assert f"{SHOWN}: 1 line skipped" in err


def test_the_demo_names_the_file_without_its_control_characters(
    odd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--width", "1000", str(odd)]) == 0  # (the path whole)
    out = capsys.readouterr().out
    assert "\x1b" not in out and f"  file {odd.parent}/{SHOWN}\n" in out


def test_an_error_names_the_path_without_its_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / ODD
    assert main(["stats", str(missing)]) == 2
    assert capsys.readouterr().err == f"pi-session stats: {tmp_path}/{SHOWN}: no such file\n"
    assert main(["check", "--no-index", str(missing)]) == 2
    assert capsys.readouterr().err == f"pi-session check: {tmp_path}/{SHOWN}: no such file or directory\n"
