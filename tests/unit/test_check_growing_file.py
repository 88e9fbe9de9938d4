"""``pi-session check`` of a file another program appends to while it is read: what the file held
when the command started is checked, and the command says lines were appended meanwhile (it read
on for as long as the file grew: one growing faster than it was read was never done)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main

#: how many lines the writer appends at most (a check that reads on for ever reads them all)
WRITER_LINES = 300


@pytest.fixture(name="growing")
def growing_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A session file that another writer appends a line to before each read of it (each
    ``os.pread``: the reads of a check), up to :data:`WRITER_LINES` lines: always longer than what
    was read so far, as a file that grows faster than it is read. Its lines are not JSON: a check
    that read them would report each."""
    path = tmp_path / "growing.jsonl"
    path.write_text(S.header() + "\n" + S.user("u0", None, "first") + "\n", encoding="utf-8")
    written = [0]
    real_pread = os.pread
    writer = os.open(path, os.O_WRONLY | os.O_APPEND)

    def pread_while_the_writer_appends(fd: int, size: int, offset: int) -> bytes:
        if written[0] < WRITER_LINES:
            written[0] += 1
            os.write(writer, b"appended meanwhile\n")
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread_while_the_writer_appends)
    monkeypatch.chdir(tmp_path)
    yield path
    os.close(writer)


def test_check_reads_what_the_file_held_at_the_start_and_says_lines_came_meanwhile(
    growing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--no-index", str(growing)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{growing}: ok\n1 file checked: ok\n"
    assert err == (
        f"pi-session check: {growing}: lines were appended while it was checked; what it held at the "
        "start was checked\n"
    )
    assert len(growing.read_text(encoding="utf-8").splitlines()) > 2  # (the writer did append)


def test_check_json_says_lines_came_meanwhile(growing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-index", "--json", str(growing)]) == 0
    out, _err = capsys.readouterr()
    [file] = json.loads(out)["files"]
    assert file["appendedMeanwhile"] is True and file["diagnostics"] == []


def test_a_file_nobody_appends_to_says_nothing_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "still.jsonl"
    path.write_text(S.header() + "\n" + S.user("u0", None, "first") + "\n", encoding="utf-8")
    assert main(["check", "--no-index", "--json", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "appendedMeanwhile" not in json.loads(out)["files"][0]
