"""What ``pi-session repair`` tells a user beside the repairs it made: the repairs of other codes
the repaired file still has (a line split after a crash gives back an entry whose parent was the
cut-off line: pi starts the conversation at it until it is re-parented), and its list in line order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import builders as S

HEADER = S.header()
A = S.user("aaaa0001", None, "first")
B = S.assistant("bbbb0002", "aaaa0001", "second")
C = S.user("cccc0003", "bbbb0002", "third")
D = S.user("dddd0004", "cccc0003", "fourth")


def lines(*parts: str) -> bytes:
    return ("\n".join(parts) + "\n").encode()


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", "repair", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repairs_of_other_codes_left_are_named_with_how_to_make_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER, A, B[:57] + C, D))  # B cut by a crash, C written onto it
    done = cli("--in-place", path)
    assert done.returncode == 0, done.stderr
    assert f"{path}: 1 repair of another code not made: PI031 (1); --codes PI031 or --all makes it" in (
        done.stdout
    )
    again = cli("--in-place", "--no-backup", "--codes", "PI031", path)
    assert again.returncode == 0, again.stderr
    assert "not made" not in again.stdout


def test_nothing_is_said_of_other_codes_when_none_is_left(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER, A, B + C, D))  # two whole lines glued
    done = cli("--in-place", path)
    assert done.returncode == 0, done.stderr
    assert "not made" not in done.stdout


def test_the_repairs_are_listed_in_line_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER[:30] + A, B, C))  # the header cut, the first entry written onto it
    done = cli(path)
    listed = [line.split(": ", 1)[0] for line in done.stdout.splitlines() if ": PI" in line]
    assert listed == [f"{path}:1", f"{path}:2"], done.stdout
