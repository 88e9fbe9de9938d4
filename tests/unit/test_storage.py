"""File-level guarantees of session/storage.py and how the manager uses them (D11-D13)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pi_session_server.errors import FsError, NotRegularFileError
from pi_session_server.session import SessionManager, rewrites, storage

USER = {"role": "user", "content": "hi", "timestamp": 1}
ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "yo"}],
    "provider": "p",
    "model": "m",
    "timestamp": 2,
}


def _persisted(tmp_path) -> SessionManager:
    sm = SessionManager.create("/proj", str(tmp_path))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    return sm


def test_append_lines_writes_whole_lines_and_reports_offsets(tmp_path):
    path = str(tmp_path / "f.jsonl")
    first = storage.append_lines(path, b'{"a":1}\n')
    second = storage.append_lines(path, b'{"b":2}\n')
    assert (first.start, first.end) == (0, 8)
    assert (second.start, second.end, second.size_before) == (8, 16, 8)
    assert Path(path).read_bytes() == b'{"a":1}\n{"b":2}\n'


def test_append_after_partial_line_lands_on_its_own_line(tmp_path):
    sm = _persisted(tmp_path)
    path = sm.get_session_file()
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"half')  # another process crashed mid-line
    new_id = sm.append_message(USER)
    lines = Path(path).read_bytes().split(b"\n")
    assert lines[-2].startswith(b'{"type":"message","id":"' + new_id.encode())
    assert lines[-3] == b'{"type":"message","id":"half'
    reopened = SessionManager.open(path)
    assert reopened.get_leaf_id() == new_id


def test_append_after_same_size_save_without_final_newline_lands_on_its_own_line(tmp_path):
    """An editor saved the file in place, keeping its size but not the final newline our last line
    ended with: the size alone says "as we left it", the times tell the save."""
    path = str(tmp_path / "f.jsonl")
    with storage.Appender(path) as appender:
        appender.append(b'{"a":1}\n')
        time.sleep(0.05)  # the save comes later than our write (beyond the times' granularity)
        with open(path, "r+b") as f:
            f.write(b'{"a":12}')
        appender.append(b'{"b":2}\n')
    assert Path(path).read_bytes() == b'{"a":12}\n{"b":2}\n'


def test_append_after_reloaded_same_size_save_without_final_newline_is_not_glued(tmp_path):
    sm = _persisted(tmp_path)
    path = sm.get_session_file()
    first = sm.append_message(USER)
    edited = Path(path).read_bytes().replace(b'"yo"', b'"yo!"')[:-1]
    time.sleep(0.05)
    with open(path, "r+b") as f:
        f.write(edited)
    assert sm.refresh_from_disk().kind == "reloaded"
    second = sm.append_message(USER)
    fresh = SessionManager.open(path, read_only=True)
    assert fresh.problems == []
    assert [entry.id for entry in fresh.get_entries()][-2:] == [first, second]


def test_an_append_to_a_path_a_fifo_was_renamed_over_is_refused_unwritten(tmp_path):
    """Writing to a FIFO waits for a reader (for good, with a line bigger than the pipe): the
    appender refuses it without writing."""
    path = tmp_path / "f.jsonl"
    with storage.Appender(str(path)) as appender:
        appender.append(b'{"a":1}\n')
        fifo = tmp_path / "f.fifo"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            os.replace(fifo, path)
            with pytest.raises(NotRegularFileError, match="is a FIFO"):
                appender.append(b'{"b":2}\n')
            assert os.read(reader, 100) == b""  # nothing went into the pipe, nobody holds it open
        finally:
            os.close(reader)


def test_foreign_append_is_reported(tmp_path):
    sm = _persisted(tmp_path)
    path = sm.get_session_file()
    with open(path, "ab") as f:
        f.write(
            b'{"type":"custom","customType":"x","id":"f0reign1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}\n'
        )
    sm.append_message(USER)
    events = sm.drain_events()
    assert len(events) == 1
    assert "another process appended" in events[0].message
    assert sm.drain_events() == []


def test_rewrite_replaces_atomically_and_follows_symlinks(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    rewrites.rewrite_file(str(link), [b"new\n"])
    assert link.is_symlink()
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".pi-session-")] == []


def test_rewrite_keeps_original_when_writing_fails(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"precious\n")

    def chunks():
        yield b"partial"
        raise OSError(28, "No space left on device")

    with pytest.raises(FsError):
        rewrites.rewrite_file(str(target), chunks())
    assert target.read_bytes() == b"precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real.jsonl"]


def test_create_exclusive_refuses_existing_file(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text("keep\n")
    with pytest.raises(FsError) as info:
        storage.create_exclusive(str(path), b"new\n")
    assert info.value.code == "EEXIST"
    assert str(info.value) == f"EEXIST: file already exists, open '{path}'"
    assert path.read_text() == "keep\n"


def test_append_into_missing_directory_is_enoent(tmp_path):
    path = tmp_path / "gone" / "x.jsonl"
    with pytest.raises(FsError) as info:
        storage.append_lines(str(path), b"{}\n")
    assert info.value.code == "ENOENT"
    assert str(info.value) == f"ENOENT: no such file or directory, open '{path}'"


def test_every_append_is_a_single_write(tmp_path, monkeypatch):
    sm = _persisted(tmp_path)
    writes = []
    real_write = os.write

    def spy(fd, data):
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    sm.append_message({"role": "user", "content": "x" * 100_000, "timestamp": 3})
    assert len(writes) == 1
    assert writes[0].endswith(b"\n") and writes[0].count(b"\n") == 1
