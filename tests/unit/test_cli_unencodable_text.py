"""Text of a session (or a file's name) that the output's encoding cannot write is written as
escapes (``\\xe9``, ``\\u2500``, ``\\U0001f600``), as control characters are: it came out as "?",
and what it was was lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest

ASCII = {"PYTHONIOENCODING": "ascii"}
C_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
TEXT = "caf\u00e9 \u2500 \U0001f600"
SHOWN = "caf\\xe9 \\u2500 \\U0001f600"


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The command with stdout a pipe, its encoding set by ``env`` alone."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONCOERCECLOCALE"))
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        env={**base, "PI_SESSION_INDEX_DIR": str(cwd / "cache"), **env},
        cwd=str(cwd),
        timeout=120,
    )


def _session(folder: Path) -> Path:
    path = folder / "s.jsonl"
    lines = [S.header(cwd=str(folder)), S.user("u1", None, TEXT), S.assistant("a1", "u1", "done")]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
@pytest.mark.parametrize("command", ["tree", "context", "list"])
def test_session_text_the_encoding_cannot_write_is_written_as_escapes(
    tmp_path: Path, env: dict[str, str], command: str
) -> None:
    path = _session(tmp_path)
    done = _cli(command, str(path if command != "list" else tmp_path), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")
    assert SHOWN in out and "caf?" not in out
    if command != "list":  # (twice: drawn, then printed from what was kept of it)
        assert _cli(command, str(path), env=env, cwd=tmp_path).stdout == done.stdout


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_check_writes_the_text_of_a_problem_as_escapes(tmp_path: Path, env: dict[str, str]) -> None:
    path = _session(tmp_path)
    with path.open("a", encoding="utf-8") as file:
        file.write("\u00e9 is not JSON\n")  # the message quotes its first character
    done = _cli("check", str(path), env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode("ascii")
    assert "\\xe9" in out and "?" not in out


def test_a_file_name_the_encoding_cannot_write_is_written_as_escapes(tmp_path: Path) -> None:
    path = _session(tmp_path).rename(tmp_path / "s\u00e9ance.jsonl")
    done = _cli("check", str(path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("ascii").startswith(f"{tmp_path}/s\\xe9ance.jsonl: ok\n")


def test_a_lone_surrogate_is_its_escape_where_the_replacement_character_cannot_be_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    lone = '{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
    lone += '"message":{"role":"user","content":"lone \\ud800 half","timestamp":1}}'
    path.write_text(S.header(cwd=str(tmp_path)) + "\n" + lone + "\n", encoding="utf-8")
    done = _cli("list", str(tmp_path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "lone \\ud800 half" in done.stdout.decode("ascii")
