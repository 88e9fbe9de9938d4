"""``repair -o OUT``: OUT is written whole or not at all, and only a regular file (or a new name) is
ever written. A FIFO would make the command wait for a reader forever; a failed write used to
truncate OUT and then unlink it, so ``--force`` onto a device that refuses the bytes removed the
device's node, and a failure writing over an existing file lost what it held."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest

HEADER = S.header()
A = S.user("aaaa0001", None, "first")
B = S.assistant("bbbb0002", "aaaa0001", "second")
C = S.user("cccc0003", "bbbb0002", "third")
GLUED = ("\n".join([HEADER, A, B[:57] + C]) + "\n").encode()


def repair(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", "repair", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def glued(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(GLUED)
    return path


def test_a_fifo_as_output_is_refused_not_waited_on(glued: Path) -> None:
    fifo = glued.parent / "out.fifo"
    os.mkfifo(fifo)
    done = repair(glued, "-o", fifo, "--force")
    assert done.returncode == 2
    assert f"{fifo}: is a FIFO" in done.stderr and "-o -" in done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_as_output_is_refused_and_left_where_it_is(glued: Path) -> None:
    full = glued.parent / "full"  # /dev/full's own node: a machine's device is never risked
    try:
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError:
        pytest.skip("making a device node needs a privilege")
    done = repair(glued, "-o", full, "--force")
    assert done.returncode == 2
    assert f"{full}: is a character device" in done.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_an_output_that_cannot_be_written_whole_keeps_what_it_held(
    glued: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_session_server.cli import main
    from pi_session_server.commands import repair as repair_command

    out = glued.parent / "fixed.jsonl"
    out.write_bytes(b"keep me\n")
    real_spliced = repair_command.spliced

    def failing_after_a_chunk(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for chunk in real_spliced(*args, **kwargs):  # type: ignore[arg-type]
            yield chunk
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(repair_command, "spliced", failing_after_a_chunk)
    assert main(["repair", str(glued), "-o", str(out), "--force"]) == 2
    assert out.read_bytes() == b"keep me\n"
    assert sorted(p.name for p in glued.parent.iterdir()) == ["fixed.jsonl", "s.jsonl"]
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"nothing was written to {out}" in err


def test_a_directory_as_output_is_named_as_what_failed(glued: Path) -> None:
    out = glued.parent / "dir"
    out.mkdir()
    done = repair(glued, "-o", out, "--force")
    assert done.returncode == 2
    assert (
        done.stderr.splitlines()[-1]
        == f"pi-session repair: {out}: Is a directory; nothing was written to {out}"
    )
