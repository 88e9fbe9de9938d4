"""A session opened to look at (``read_only``) is made writable in place when it holds the file as
an open for writing would (``SessionManager.make_writable``), and the sidecar's first write to a
session opened by uri keeps that manager, and all it keeps beside it: its totals are added to, not
counted afresh (a second open of a big session held it twice at once and counted it all again).
When the look left a write undone (a last line a crash cut, an empty file, a version 2 file) or
the file changed since, nothing changes and the file is to be opened again for writing."""

from __future__ import annotations

import os
from pathlib import Path

import builders as S
import pytest
from in_process_server import InProcess

from pi_session_server.server import session_stats
from pi_session_server.session.manager import SessionManager


def _write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def _session(tmp_path: Path) -> Path:
    return _write(tmp_path / "s.jsonl", S.chat(3))


def test_a_look_at_an_unchanged_file_becomes_writable_keeping_what_it_holds(tmp_path):
    path = _session(tmp_path)
    manager = SessionManager.open(str(path), read_only=True)
    manager.branch("t1z")
    held = manager.get_entry("t0u")
    assert manager.make_writable() is True
    assert manager.read_only is False and manager.get_leaf_id() == "t1z"
    assert manager.get_entry("t0u") is held  # the same entries, not read again
    entry_id = manager.append_message(S.user_message("more"))
    last = SessionManager.open(str(path), read_only=True)
    assert last.get_entry(entry_id).parent_id == "t1z"
    assert last.entry_count() == 13


def _open_tail(tmp_path: Path) -> Path:
    return _write(tmp_path / "s.jsonl", S.chat(1), end="")  # a crash cut the last newline


def _empty(tmp_path: Path) -> Path:
    return _write(tmp_path / "s.jsonl", [], end="")


def _version_2(tmp_path: Path) -> Path:
    return _write(tmp_path / "s.jsonl", [S.header(version=2), S.user("a0000001", None)])


@pytest.mark.parametrize("made", [_open_tail, _empty, _version_2], ids=["open tail", "empty", "version 2"])
def test_a_look_that_left_a_write_undone_stays_a_look(tmp_path, made):
    path = made(tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(str(path), read_only=True)
    assert manager.make_writable() is False
    assert manager.read_only is True
    assert path.read_bytes() == before


def _appended(path: Path) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(S.user("x0000001", "t2z") + "\n")


def _rewritten_in_place(path: Path) -> None:
    data = path.read_bytes()
    with path.open("r+b") as file:
        file.write(data.replace(b"question 0", b"question 9"))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _replaced(path: Path) -> None:
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)


@pytest.mark.parametrize(
    "change", [_appended, _rewritten_in_place, _replaced], ids=["appended", "rewritten", "replaced"]
)
def test_a_look_at_a_file_changed_since_stays_a_look(tmp_path, change):
    path = _session(tmp_path)
    manager = SessionManager.open(str(path), read_only=True)
    change(path)
    assert manager.make_writable() is False
    assert manager.read_only is True


def test_the_first_write_by_uri_keeps_the_session_and_its_totals(tmp_path, monkeypatch):
    path = _session(tmp_path)
    uri = path.as_uri()
    counts = []
    count_afresh = session_stats._counted_afresh

    def counted_afresh(*args):
        counts.append(args[-1])
        return count_afresh(*args)

    monkeypatch.setattr(session_stats, "_counted_afresh", counted_afresh)
    running = InProcess()
    try:
        assert running.request("pi/getStats", {"uri": uri})["result"]["entryCount"] == 12
        (slot,) = running.server.registry.slots()
        looked = slot.manager
        assert slot.read_only
        message = S.user_message("more")
        reply = running.request("pi/append", {"uri": uri, "kind": "message", "message": message})
        assert "result" in reply, reply
        assert slot.manager is looked and not slot.read_only
        stats = running.request("pi/getStats", {"uri": uri})["result"]
        assert stats["entryCount"] == 13 and stats["roles"]["user"] == 4
        assert counts == [12]  # the appended entry added to the totals, nothing counted again
    finally:
        running.close()
