"""D15 for every line of a small session file (within ``loader.KEEP_BYTES_LIMIT``): the lines
another program appends, taken in by ``refresh_from_disk()`` or by an append of ours that finds
them, and a last line without its newline (pi cut short after it) keep their bytes as the other
lines of a load do, so a rewrite of the file afterwards (an editor saving in place, a shell's
``>``) leaves them as they were read, as pi's values stay. Found by the sidecar's model fuzz
(tests/lsp/test_sidecar_fuzz_model.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import message_entry, user_message

from pi_session_server.errors import StaleFileError
from pi_session_server.session import SessionManager, loader

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _line(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _text(entry: object) -> str:
    return entry.to_json()["message"]["content"][0]["text"]  # type: ignore[attr-defined]


def _held(tmp_path: Path) -> tuple[SessionManager, Path]:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        _line(HEADER)
        + _line(message_entry("00000001", None, user_message([{"type": "text", "text": "ours"}], 1)))
    )
    return SessionManager.open(str(path)), path


def _appended_by_pi(path: Path) -> None:
    entry = message_entry("0000000a", "00000001", user_message([{"type": "text", "text": "from pi"}], 2))
    with path.open("ab") as f:
        f.write(_line(entry))


def _rewritten_in_place(path: Path) -> None:
    """An editor saving in place: the same inode, other bytes (here: the header taken out)."""
    data = path.read_bytes().split(b"\n", 1)[1].replace(b"from pi", b"FROM PI")
    with path.open("r+b") as f:
        f.write(data)
        f.truncate()


def test_lines_a_refresh_took_in_stay_as_read_after_a_rewrite_in_place(tmp_path: Path) -> None:
    manager, path = _held(tmp_path)
    _appended_by_pi(path)
    assert manager.refresh_from_disk().new_entry_ids == ["0000000a"]
    _rewritten_in_place(path)
    assert [_text(entry) for entry in manager.get_entries()] == ["ours", "from pi"]
    manager.close()


def test_lines_an_append_of_ours_took_in_stay_as_read_after_a_rewrite_in_place(tmp_path: Path) -> None:
    manager, path = _held(tmp_path)
    _appended_by_pi(path)
    manager.append_message(
        {"role": "user", "content": [{"type": "text", "text": "ours again"}], "timestamp": 3}
    )
    _rewritten_in_place(path)
    assert [_text(entry) for entry in manager.get_entries()] == ["ours", "from pi", "ours again"]
    manager.close()


def test_lines_taken_in_past_the_limit_are_read_again_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a big file keeps only envelopes (D15): a rewrite that changes a line's envelope is told
    manager, path = _held(tmp_path)
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    _appended_by_pi(path)
    manager.refresh_from_disk()
    _rewritten_in_place(path)
    with pytest.raises(StaleFileError):
        [_text(entry) for entry in manager.get_entries()]
    manager.close()


def _without_last_newline(path: Path) -> None:
    """pi cut short while writing a line after the last: a shell's ``head -c`` leaves it so."""
    path.write_bytes(path.read_bytes().rstrip(b"\n"))


def test_a_last_line_without_its_newline_stays_as_read_after_a_rewrite(tmp_path: Path) -> None:
    _, path = _held(tmp_path)
    _appended_by_pi(path)
    _without_last_newline(path)
    manager = SessionManager.open(str(path), read_only=True)  # (read-only: no newline repaired)
    path.write_bytes(b"")  # a shell's `> FILE`, about to write it again
    assert [_text(entry) for entry in manager.get_entries()] == ["ours", "from pi"]
    manager.close()


def test_a_last_line_without_its_newline_a_reload_read_stays_as_read(tmp_path: Path) -> None:
    manager, path = _held(tmp_path)
    _without_last_newline(path)  # (shorter than the session left it: read again whole)
    assert manager.refresh_from_disk().kind == "reloaded"
    _rewritten_in_place(path)
    assert [_text(entry) for entry in manager.get_entries()] == ["ours"]
    manager.close()
