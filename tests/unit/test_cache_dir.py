"""The cache directory's rules (session/cache_dir.py): where what is kept of a file lives, the CRCs
that tell whether it still describes the file, and writes that land whole or not at all."""

from __future__ import annotations

import errno
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_session_server.session import cache_dir


def test_what_is_kept_of_a_file_is_named_by_its_device_and_inode(tmp_path: Path):
    session = tmp_path / "s.jsonl"
    session.write_text("{}\n")
    st = os.stat(session)
    index = cache_dir.index_path("/cache", st)
    assert index == f"/cache/{st.st_dev:x}-{st.st_ino:x}.pi-index"
    assert (
        cache_dir.kept_path("/cache", st, ".pi-view-tree")
        == index.removesuffix(".pi-index") + ".pi-view-tree"
    )


def test_the_edges_are_the_crcs_of_the_first_bytes_and_of_the_last_before_the_end(tmp_path: Path):
    data = os.urandom(10_000)
    session = tmp_path / "s.jsonl"
    session.write_bytes(data)
    fd = os.open(session, os.O_RDONLY)
    try:
        assert cache_dir.edges(fd, 10_000) == (zlib.crc32(data[:4096]), zlib.crc32(data[10_000 - 4096 :]))
        assert cache_dir.edges(fd, 100) == (zlib.crc32(data[:100]), zlib.crc32(data[:100]))
        with pytest.raises(cache_dir.NotUsable):
            cache_dir.edges(fd, 20_000)  # shorter than it was when kept
    finally:
        os.close(fd)


def test_a_write_lands_whole_or_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    target = tmp_path / "cache" / "a.pi-view-tree"
    cache_dir.write_whole(str(target), b"one", memoryview(b"two"))
    assert target.read_bytes() == b"onetwo"
    assert oct(os.stat(tmp_path / "cache").st_mode & 0o777) == oct(0o700)
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o600)

    written: list[int] = []
    real_write = os.write

    def full_disk(fd: int, data: bytes | memoryview) -> int:
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(1)
        return real_write(fd, bytes(data)[:1])  # a short write first: the rest must follow

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError):
        cache_dir.write_whole(str(target), b"three")
    monkeypatch.setattr(os, "write", real_write)
    assert target.read_bytes() == b"onetwo"  # the old file, whole
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.pi-view-tree"]  # no temporary left

    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:2]))  # short writes
    cache_dir.write_whole(str(target), b"four", b"five")
    assert target.read_bytes() == b"fourfive"


# ---------------------------------------------------------------------- pruning


def _kept_files(
    directory: Path, session: int, used: int, sizes: tuple[int, ...] = (10, 20, 30)
) -> list[Path]:
    """A session's index, previews and tree view, each of the given size, last used at ``used``."""
    files = []
    for suffix, size in zip((".pi-index", ".pi-previews", ".pi-view-tree"), sizes, strict=False):
        path = directory / f"fe00-{session:x}{suffix}"
        path.write_bytes(b"x" * size)
        os.utime(path, (used, used))
        files.append(path)
    return files


def _names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_pruning_keeps_the_sessions_used_last_within_the_file_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(cache_dir, "MAX_KEPT_FILES", 7)
    sessions = {n: _kept_files(tmp_path, n, used=1000 + n) for n in range(5)}
    cache_dir.prune(str(tmp_path))
    # the two used last fit (6 files); the third would make 9: it and every older one go, views too
    assert _names(tmp_path) == {p.name for n in (3, 4) for p in sessions[n]}


def test_pruning_keeps_the_directory_within_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(cache_dir.INDEX_MAX_BYTES_ENV, "130")
    sessions = {n: _kept_files(tmp_path, n, used=1000 + n) for n in range(4)}  # 60 bytes each
    cache_dir.prune(str(tmp_path))
    assert _names(tmp_path) == {p.name for n in (2, 3) for p in sessions[n]}
    monkeypatch.setenv(cache_dir.INDEX_MAX_BYTES_ENV, "1")
    cache_dir.prune(str(tmp_path))  # the session used last stays whatever its size
    assert _names(tmp_path) == {p.name for p in sessions[3]}


def test_a_session_was_used_when_any_of_its_files_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cache_dir, "MAX_KEPT_FILES", 3)
    old = _kept_files(tmp_path, 1, used=1000)
    new = _kept_files(tmp_path, 2, used=2000)
    os.utime(old[2], (3000, 3000))  # its view was shown last (view_store.load touches it)
    cache_dir.prune(str(tmp_path))
    assert _names(tmp_path) == {p.name for p in old}
    assert not any(p.exists() for p in new)


def test_pruning_removes_abandoned_temporaries_and_leaves_other_files(tmp_path: Path):
    _kept_files(tmp_path, 1, used=2000)
    abandoned = tmp_path / ".tmp-123-abc.pi-index"
    abandoned.write_bytes(b"half")
    os.utime(abandoned, (1000, 1000))
    writing = tmp_path / ".tmp-456-def.pi-view-tree"
    writing.write_bytes(b"being written")
    other = tmp_path / "notes.txt"
    other.write_text("not ours")
    cache_dir.prune(str(tmp_path))
    assert writing.exists() and other.exists() and not abandoned.exists()
    cache_dir.prune(str(tmp_path / "missing"))  # no directory: nothing to do, no error


def test_a_body_written_framed_as_it_comes_is_the_body_framed_whole(tmp_path: Path):
    """write_framed writes the parts of a body as they come, its frame last: the same file as the
    body framed whole; a body that fails midway leaves what was there."""
    parts = [b"first", b"", memoryview(b"-second-"), b"third" * 1000]
    whole = tmp_path / "whole.pi-previews"
    cache_dir.write_whole(str(whole), *cache_dir.framed(b"MAGIC\x00\x00\x00", 3, b"".join(parts)))
    framed = tmp_path / "framed.pi-previews"
    cache_dir.write_framed(str(framed), b"MAGIC\x00\x00\x00", 3, iter(parts))
    assert framed.read_bytes() == whole.read_bytes()

    def failing() -> Iterator[bytes]:
        yield b"first"
        raise ValueError("odd value")

    with pytest.raises(ValueError):
        cache_dir.write_framed(str(framed), b"MAGIC\x00\x00\x00", 3, failing())
    assert framed.read_bytes() == whole.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["framed.pi-previews", "whole.pi-previews"]


def test_an_unnamed_file_has_no_name_in_its_directory_and_goes_when_closed(tmp_path: Path):
    directory = tmp_path / "made"
    fd = cache_dir.unnamed_file(str(directory))
    try:
        os.write(fd, b"spooled")
        assert os.pread(fd, 7, 0) == b"spooled"
        assert list(directory.iterdir()) == []
    finally:
        os.close(fd)
    assert list(directory.iterdir()) == []


def test_spooled_parts_are_read_back_as_written_and_held_in_a_file_with_no_name(tmp_path: Path):
    parts = cache_dir.SpooledParts(str(tmp_path))
    written = [b"first", b"", b"x" * 100_000, b"last"]
    for data in written:
        parts.append(data)
    assert list(tmp_path.iterdir()) == []
    assert len(parts) == 4 and list(parts) == written
    assert parts[-1] == b"last" and parts[1:3] == written[1:3] and sum(map(len, parts)) == 100_009
    with pytest.raises(IndexError):
        parts[4]
    parts.close()
