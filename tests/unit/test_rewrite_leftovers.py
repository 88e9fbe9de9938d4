"""A rewrite killed before its rename leaves no temporary file behind for good (finding #18)."""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_session_server.errors import FsError
from pi_session_server.session import rewrites


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".pi-rewrite.tmp"))


def _kill_a_rewrite_midway(target: Path) -> None:
    """A child process starts rewriting ``target`` and is SIGKILLed while it writes."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)

        def chunks() -> Iterator[bytes]:
            yield b"new content, never finished\n"
            os.write(write_end, b"x")
            time.sleep(60)

        try:
            rewrites.rewrite_file(str(target), chunks())
        finally:
            os._exit(1)
    os.close(write_end)
    assert os.read(read_end, 1) == b"x"
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read_end)


def test_the_next_rewrite_removes_what_a_killed_one_left(tmp_path):
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"old\n")
    _kill_a_rewrite_midway(target)
    assert target.read_bytes() == b"old\n"  # the old file, complete
    rewrites.rewrite_file(str(target), [b"new\n"])
    assert target.read_bytes() == b"new\n"
    assert _temporaries(tmp_path) == []


def test_a_temporary_file_another_writer_holds_is_left_alone(tmp_path):
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"old\n")
    live = tmp_path / ".other.jsonl.abc123.pi-rewrite.tmp"
    abandoned = tmp_path / ".s.jsonl.def456.pi-rewrite.tmp"
    live.write_bytes(b"being written")
    abandoned.write_bytes(b"left by a killed rewrite")
    unrelated = tmp_path / ".s.jsonl.notes"
    unrelated.write_bytes(b"not ours")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # its writer is alive
        rewrites.rewrite_file(str(target), [b"new\n"])
    finally:
        os.close(fd)
    assert _temporaries(tmp_path) == [live.name]
    assert unrelated.exists()
    assert target.read_bytes() == b"new\n"


def test_temporary_files_are_named_after_their_target(tmp_path, monkeypatch):
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"old\n")
    monkeypatch.setattr(rewrites, "_can_write_unnamed", lambda directory: False)
    seen: list[str] = []

    def chunks() -> Iterator[bytes]:
        seen.extend(_temporaries(tmp_path))
        yield b"new\n"

    rewrites.rewrite_file(str(target), chunks())
    assert len(seen) == 1 and seen[0].startswith(".s.jsonl.")
    assert _temporaries(tmp_path) == []


def test_a_rewrite_stopped_by_any_exception_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"precious\n")
    monkeypatch.setattr(rewrites, "_can_write_unnamed", lambda directory: False)

    def chunks() -> Iterator[bytes]:
        yield b"partial"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rewrites.rewrite_file(str(target), chunks())
    assert target.read_bytes() == b"precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_failing_rewrite_keeps_the_old_file_and_reports_an_fs_error(tmp_path, monkeypatch):
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"precious\n")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(FsError):
        rewrites.rewrite_file(str(target), [b"new\n"])
    assert target.read_bytes() == b"precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def _linkat_empty_path() -> object | None:
    """linkat(fd, "", ..., AT_EMPTY_PATH): names an O_TMPFILE file without /proc (needs a privilege)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.linkat
    except (OSError, AttributeError):
        return None


def test_unnamed_files_have_no_name_while_written(tmp_path, monkeypatch):
    """The O_TMPFILE path. Naming through /proc/self/fd is refused in some sandboxes (EXDEV), which the
    library probes for; here the naming goes through linkat(AT_EMPTY_PATH) when we may use it."""
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this system")
    linkat = _linkat_empty_path()
    if linkat is None:
        pytest.skip("no linkat")
    real_link = os.link

    def link(src: str, dst: str, *, follow_symlinks: bool = True) -> None:
        if not src.startswith("/proc/self/fd/"):
            real_link(src, dst, follow_symlinks=follow_symlinks)
            return
        at_fdcwd, at_empty_path = -100, 0x1000
        if linkat(int(src.rsplit("/", 1)[1]), b"", at_fdcwd, dst.encode(), at_empty_path) != 0:  # type: ignore[operator]
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), dst)

    probe = os.open(tmp_path, os.O_TMPFILE | os.O_WRONLY, 0o600)
    try:
        link(f"/proc/self/fd/{probe}", str(tmp_path / "probe"))
    except OSError:
        pytest.skip("linkat(AT_EMPTY_PATH) is not allowed here")
    finally:
        os.close(probe)
    os.unlink(tmp_path / "probe")
    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(rewrites, "_can_write_unnamed", lambda directory: True)
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o640)
    visible: list[str] = []

    def chunks() -> Iterator[bytes]:
        visible.extend(p.name for p in tmp_path.iterdir())
        yield b"new\n"

    rewrites.rewrite_file(str(target), chunks())
    assert visible == ["s.jsonl"]  # nothing to leave behind while the content is written
    assert target.read_bytes() == b"new\n"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
