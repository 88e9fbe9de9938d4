"""``pi-session check``: text and JSON output, exit codes, directories, pi's session directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest
from terminal_output import open_terminal, read_until_closed

from pi_session_server.cli import main

GOOD = S.header() + "\n" + S.user("a", None) + "\n"
BAD = S.header() + "\n" + S.user("a", None, "😀 数据") + "\n" + S.user("b", "gone") + "\n{oops\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_text_output_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.jsonl", GOOD)
    bad = write(tmp_path / "bad.jsonl", BAD)
    assert main(["check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: ok\n1 file checked: ok\n"
    assert main(["check", str(bad), str(good)]) == 1
    out = capsys.readouterr().out.splitlines()
    col = BAD.split("\n")[2].index('"gone"') + 1
    assert (
        out[0]
        == f"{bad}:3:{col}: warning PI031 parentId `gone` names no entry: pi shows this entry as a root and its context stops here"
    )
    assert out[1] == f"{bad}:4:2: error PI001 invalid JSON: Expected property name or '}}'"
    assert out[2] == f"{bad}: 1 error, 1 warning"
    assert out[-1] == "2 files checked: 1 error, 1 warning"


def test_columns_count_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = '{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"user","content":"😀😀数据", x}}'
    path = write(tmp_path / "s.jsonl", S.header() + "\n" + line + "\n")
    main(["check", str(path)])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{path}:2:{line.index('x}') + 1}: error PI001")


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "d" / "bad.jsonl", BAD)
    write(tmp_path / "d" / "sub" / "good.jsonl", GOOD)
    write(tmp_path / "d" / "notes.txt", "not a session")
    assert main(["check", "--json", str(tmp_path / "d")]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in report["files"]] == [str(bad), str(tmp_path / "d" / "sub" / "good.jsonl")]
    first = report["files"][0]
    assert first["summary"]["error"] == 1 and first["summary"]["warning"] == 1
    assert first["diagnostics"][0] == {
        "line": 3,
        "column": BAD.split("\n")[2].index('"gone"') + 1,
        "endColumn": BAD.split("\n")[2].index('"gone"') + 7,
        "severity": "warning",
        "code": "PI031",
        "message": "parentId `gone` names no entry: pi shows this entry as a root and its context stops here",
        "range": {
            "start": {"line": 2, "character": BAD.split("\n")[2].index('"gone"')},
            "end": {"line": 2, "character": BAD.split("\n")[2].index('"gone"') + 6},
        },
    }
    assert report["totals"] == {
        "files": 2,
        "filesWithErrors": 1,
        "error": 1,
        "warning": 1,
        "information": 0,
        "hint": 0,
    }


def test_min_severity_and_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "bad.jsonl", BAD)
    good = write(tmp_path / "good.jsonl", GOOD)
    assert main(["check", "-q", "--min-severity", "error", str(bad), str(good)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[1][:11] for line in out[:-1]] == ["error PI001", "1 error"]
    assert out[-1] == "2 files checked: 1 error"


@pytest.mark.parametrize("level", ["info", "information"])
def test_min_severity_takes_the_name_the_text_form_prints(
    level: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = write(tmp_path / "s.jsonl", GOOD + "\n")  # a blank line: a hint
    assert main(["check", "--min-severity", "hint", str(session)]) == 0
    assert " hint " in capsys.readouterr().out
    assert main(["check", "--min-severity", level, str(session)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{session}: ok", "1 file checked: ok"]


def test_an_unknown_min_severity_is_refused_in_the_names_help_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = write(tmp_path / "s.jsonl", GOOD)
    with pytest.raises(SystemExit) as stopped:
        main(["check", "--min-severity", "bogus", str(session)])
    assert stopped.value.code == 2
    refusal = capsys.readouterr().err.splitlines()[-1]
    assert refusal.endswith("invalid choice: 'bogus' (choose from 'error', 'warning', 'info', 'hint')")


def test_missing_path_and_default_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["check", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    bad = write(tmp_path / "bad.jsonl", BAD)  # a missing path among others: those are checked
    assert main(["check", "--json", str(bad), str(tmp_path / "nope.jsonl")]) == 2
    captured = capsys.readouterr()
    assert "nope.jsonl: no such file or directory" in captured.err
    assert [f["path"] for f in json.loads(captured.out)["files"]] == [str(bad)]
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    session = write(tmp_path / "agent" / "sessions" / "--proj--" / "2026-11-30T09-13-48-180Z_x.jsonl", BAD)
    assert main(["check"]) == 1
    assert f"{session}: 1 error, 1 warning" in capsys.readouterr().out


def test_directories_without_a_session_file_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary of "0 files checked: ok" alone reads as if what was asked had been checked."""
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("no session")
    bad = write(tmp_path / "full" / "bad.jsonl", BAD)
    assert main(["check", str(tmp_path / "empty"), str(tmp_path / "full")]) == 1
    out, err = capsys.readouterr()
    assert err == f"pi-session check: {tmp_path / 'empty'}: no session file (*.jsonl) in it\n"
    assert f"{bad}: 1 error" in out and out.endswith("1 file checked: 1 error, 1 warning\n")
    assert main(["check", "--json", str(tmp_path / "empty")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["totals"]["files"] == 0 and "no session file (*.jsonl) in it" in err
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))  # pi saved no session yet
    assert main(["check"]) == 0
    out, err = capsys.readouterr()
    sessions = tmp_path / "agent" / "sessions"
    assert (out, err) == (
        "0 files checked: ok\n",
        f"pi-session check: {sessions}: no such directory (where pi keeps its sessions)\n",
    )


def test_progress_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(3):
        write(tmp_path / f"s{i}.jsonl", GOOD)
    assert main(["check", "--progress", "-q", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "[0/3]" in captured.err and captured.out == "3 files checked: ok\n"


EDITS = (
    S.header()
    + "\n"
    + S.user("a", None)
    + "\n"
    + S.context_edit("e1", "a", "a", None)
    + "\n"
    + S.context_edit("e2", "e1", "a", {"content": 5})
    + "\n"
)


def test_pi_chooses_how_context_edits_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "edits.jsonl", EDITS)
    col = EDITS.split("\n")[3].index("5}") + 1
    assert main(["check", str(path)]) == 1  # pi 1.6.0 by default: the malformed edit is an error
    assert (
        capsys.readouterr()
        .out.splitlines()[0]
        .startswith(f"{path}:4:{col}: error PI027 `replacement.content` is a number")
    )
    assert main(["check", "--pi", "0.86.1", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[1][:10] for line in out[:2]] == ["info PI020", "info PI020"]
    assert "unknown entry type `context_edit` for pi 0.86.1" in out[0]
    assert out[-1] == "1 file checked: 2 infos"
    with pytest.raises(SystemExit):
        main(["check", "--pi", "0.5", str(path)])
    assert "invalid choice" in capsys.readouterr().err


def test_json_names_a_file_that_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As docs/DIAGNOSTICS.md says: an `error` text instead of diagnostics, counted as one error."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert main(["check", "--json", str(fifo)]) == 1
    found = json.loads(capsys.readouterr().out)["files"]
    assert found == [
        {
            "path": str(fifo),
            "summary": {"error": 1, "warning": 0, "information": 0, "hint": 0},
            "diagnostics": [],
            "error": "is a FIFO, not a session file",
        }
    ]


def test_a_path_not_found_is_in_the_summary_not_called_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What was asked was not all checked: the last line says so (exit status 2, as documented)."""
    gone = tmp_path / "gone.jsonl"
    assert main(["check", str(gone)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (
        "0 files checked; 1 path not found\n",
        f"pi-session check: {gone}: no such file or directory\n",
    )
    good, bad = write(tmp_path / "good.jsonl", GOOD), write(tmp_path / "bad.jsonl", BAD)
    assert main(["check", str(gone), str(good), str(tmp_path / "also-gone")]) == 2
    assert capsys.readouterr().out.endswith("\n1 file checked; 2 paths not found\n")
    assert main(["check", str(bad), str(gone)]) == 2
    assert capsys.readouterr().out.endswith("\n1 file checked: 1 error, 1 warning; 1 path not found\n")


def _check_with_stderr_on_a_terminal(*args: str, columns: int = 200) -> tuple[str, str]:
    """(stdout, what a terminal ``columns`` wide on stderr showed) of ``pi-session check``."""
    leader, follower = open_terminal(columns)
    env = {**os.environ, "PI_SESSION_NO_INDEX": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "check", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    shown = read_until_closed(leader)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    process.stdout.close()
    assert process.wait(timeout=120) == 0
    return out, shown.decode()


def test_one_file_shows_progress_on_a_terminal_and_none_in_a_pipe(tmp_path: Path) -> None:
    """A session of hundreds of megabytes takes seconds to analyse: a terminal is told which file
    is being checked, and the line is cleared before the results; a pipe gets nothing of it."""
    path = tmp_path / "s.jsonl"
    write(path, GOOD)
    out, shown = _check_with_stderr_on_a_terminal("--no-index", str(path))
    assert out == f"{path}: ok\n1 file checked: ok\n"
    line = shown.split("\r")[1]
    assert line.startswith("[0/1] ") and line.endswith("s.jsonl") and str(path).endswith(line[7:])
    assert shown == f"\r{line}\r{' ' * len(line)}\r"  # cleared before the results
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "check", "--no-index", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, out, "")


def test_the_progress_line_fits_the_terminal(tmp_path: Path) -> None:
    """A line wider than the terminal wraps, and the carriage return that overwrites it goes back
    to the start of its last row only: the rows above would stay on the screen."""
    for name in ("a", "b"):
        write(tmp_path / f"{name * 50}.jsonl", GOOD)
    out, shown = _check_with_stderr_on_a_terminal("--no-index", "-q", str(tmp_path), columns=30)
    assert out == "2 files checked: ok\n"
    lines = [line for line in shown.split("\r") if line.strip()]
    assert lines and lines[0].startswith("[0/2] …") and all(len(line) <= 29 for line in lines)
