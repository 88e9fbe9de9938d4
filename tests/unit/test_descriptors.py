"""OwnedDescriptor: a descriptor closed once, by close() or with its holder (the session's appender,
the cache directory's files)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from pi_session_server.session import cache_dir, storage
from pi_session_server.session.descriptors import OwnedDescriptor


def _is_open(fd: int) -> bool:
    return os.path.lexists(f"/proc/self/fd/{fd}")  # (a look that opens no descriptor itself)


def _holder(tmp_path: Path, kind: str) -> OwnedDescriptor:
    if kind == "appender":
        appender = storage.Appender(str(tmp_path / "s.jsonl"))
        appender.append(b"{}\n")  # (opens the file)
        return appender
    if kind == "spooled parts":
        return cache_dir.SpooledParts(str(tmp_path))
    return OwnedDescriptor(os.open(tmp_path, os.O_RDONLY))


HOLDERS = ["descriptor", "appender", "spooled parts"]


@pytest.mark.parametrize("kind", HOLDERS)
def test_a_second_close_leaves_the_file_given_the_number_alone(tmp_path: Path, kind: str) -> None:
    owned = _holder(tmp_path, kind)
    fd = owned.fd
    owned.close()
    assert owned.fd == -1 and not _is_open(fd)
    other = os.open(tmp_path, os.O_RDONLY)
    if other != fd:  # another file given the number
        os.dup2(other, fd)
        os.close(other)
    try:
        owned.close()
        assert _is_open(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize("kind", HOLDERS)
def test_a_holder_collected_unclosed_closes_its_descriptor(tmp_path: Path, kind: str) -> None:
    owned = _holder(tmp_path, kind)
    fd = owned.fd
    assert _is_open(fd)
    del owned
    gc.collect()
    assert not _is_open(fd)


def test_a_descriptor_closed_behind_its_back_is_no_error() -> None:
    read, write = os.pipe()
    owned = OwnedDescriptor(read)
    os.close(read)
    owned.close()
    os.close(write)
    assert owned.fd == -1


def test_spooled_parts_that_cannot_make_their_file_leave_no_error_at_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a cache directory that is a file, PI_SESSION_INDEX_DIR=FILE: the command printed "Exception
    # ignored in OwnedDescriptor.__del__" on stderr)
    unraisable: list[object] = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with pytest.raises(OSError):
        cache_dir.SpooledParts(str(not_a_directory))
    gc.collect()
    assert unraisable == []
