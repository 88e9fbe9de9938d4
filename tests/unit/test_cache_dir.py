"""The cache directory's rules (session/cache_dir.py): where what is kept of a file lives, the CRCs
that tell whether it still describes the file, and writes that land whole or not at all."""

from __future__ import annotations

import errno
import os
import zlib
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
