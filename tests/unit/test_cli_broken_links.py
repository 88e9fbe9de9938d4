"""A symbolic link that leads nowhere (its target missing, or a loop of links) is named as such by
every command, with exit status 2. pi takes a path it cannot stat for a new session: ``context``
printed an empty context with status 0, ``demo`` stopped with a traceback on a loop, and ``check``,
``repair`` and ``list`` called such a path missing
(``list`` called a missing directory "not a directory": tests/unit/test_list_command.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_session_server.cli import main


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    os.symlink(tmp_path / "two.jsonl", tmp_path / "one.jsonl")
    os.symlink(tmp_path / "one.jsonl", tmp_path / "two.jsonl")
    return tmp_path / "one.jsonl"


@pytest.fixture
def dangling(tmp_path: Path) -> Path:
    link = tmp_path / "gone.jsonl"
    os.symlink(tmp_path / "deleted.jsonl", link)
    return link


LOOP_SAID = "too many levels of symbolic links"


def dangling_said(link: Path) -> str:
    return f"is a symbolic link to {os.readlink(link)}, which does not exist"


@pytest.mark.parametrize("link", ["loop", "dangling"])
@pytest.mark.parametrize("command", ["tree", "context", "stats", "demo"])
def test_a_viewing_command_says_why_a_link_leads_nowhere(
    command: str, link: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    path: Path = request.getfixturevalue(link)
    said = LOOP_SAID if link == "loop" else dangling_said(path)
    assert main([command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"pi-session {command}: {path}: {said}\n"


@pytest.mark.parametrize("command", ["check", "repair", "list"])
def test_check_repair_and_list_say_why_a_link_leads_nowhere(
    command: str, loop: Path, dangling: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for link, said in ((loop, LOOP_SAID), (dangling, dangling_said(dangling))):
        assert main([command, str(link)]) == 2
        err = capsys.readouterr().err
        assert err.splitlines()[0] == f"pi-session {command}: {link}: {said}"


@pytest.mark.parametrize("command", ["check", "repair"])
def test_check_and_repair_of_a_directory_name_a_link_that_leads_nowhere(
    command: str, dangling: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # found by the walk of the directory, not given: it used to be "No such file or directory"
    main([command, str(dangling.parent)])
    out, err = capsys.readouterr()
    assert dangling_said(dangling) in (out if command == "check" else err)
    assert "No such file or directory" not in out + err
