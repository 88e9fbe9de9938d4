"""A last line pi is still writing (no newline yet, its JSON cut short) is said to be what it is by
``tree``, ``context`` and ``stats``, in ``check``'s words (a truncated last line, PI002), not
counted among the damaged lines pi skips with a repair to run: a user watching a live session is
not told the file is damaged."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.commands._common import open_to_look, report_skipped_lines

CUT = '{"type":"message","id":"cccc0003","parentId":"bbbb0002","timestamp":"2026-01-0'
TRUNCATED = (
    "line 4: truncated last line (no final newline, at end of line: Unterminated string);"
    " pi skips it: a line its writer is writing, or one it stopped in"
)


def _session(path: Path, *lines: str, last: str = CUT) -> Path:
    whole = [S.header(), S.user("aaaa0001", None, "first"), S.assistant("bbbb0002", "aaaa0001", "second")]
    path.write_text("".join(line + "\n" for line in [*whole, *lines]) + last, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["tree", "context", "stats"])
def test_a_last_line_cut_short_is_named_as_check_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = _session(tmp_path / "live.jsonl")
    assert main([command, "--no-index", str(path)]) == 0
    err = capsys.readouterr().err
    assert err == f"pi-session {command}: {path}: {TRUNCATED}\n"  # no lines "skipped", no repair to run


def test_the_other_lines_pi_skips_are_listed_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _session(tmp_path / "live.jsonl", "{")  # (line 4 the invalid one, the cut line 5)
    assert main(["stats", "--no-index", str(path)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"pi-session stats: {path}: {TRUNCATED.replace('line 4', 'line 5')}"
    assert lines[1] == f"pi-session stats: {path}: 1 line skipped, as pi skips them:"
    assert lines[2].startswith("  line 4: invalid JSON")
    assert "pi-session repair" in lines[3]


def test_a_last_line_that_fails_before_its_end_is_a_skipped_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a raw tab in a string: JSON.parse fails there, not for want of the rest (check: PI001)
    path = _session(tmp_path / "bad.jsonl", last='{"type":"message","id":"x\ty","parentId":null}')
    assert main(["tree", "--no-index", str(path)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"pi-session tree: {path}: 1 line skipped, as pi skips them:"
    assert lines[1].startswith("  line 4: invalid JSON: Bad control character in string literal")


def test_a_last_line_finished_since_it_was_read_was_being_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _session(tmp_path / "live.jsonl")
    manager = open_to_look(str(path), index=False)
    with path.open("a", encoding="utf-8") as file:  # pi finishes the line
        file.write('1T00:00:00.000Z","message":{"role":"user","content":"third"}}\n')
    assert report_skipped_lines("tree", str(path), manager) == 1
    assert capsys.readouterr().err == (
        f"pi-session tree: {path}: lines were appended while it was read; what it held at the start"
        " was read (its last line, still being written then, is left for the next look)\n"
    )


def test_a_last_line_cut_short_is_found_in_a_session_read_from_its_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_SESSION_INDEX_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
    path = _session(tmp_path / "live.jsonl")
    for _ in range(2):  # (the index written, then read)
        assert main(["stats", str(path)]) == 0
        assert capsys.readouterr().err == f"pi-session stats: {path}: {TRUNCATED}\n"
    assert any((tmp_path / "cache").iterdir())
