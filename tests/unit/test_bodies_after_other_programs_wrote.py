"""D15: a big session keeps only its entries' envelopes and reads a body again when asked for it,
from the descriptor it was loaded through. What other programs do to the file afterwards: a file
moved over it (an editor saving by rename) leaves the loaded entries as loaded; a save in place
that changes a body's text and keeps every line's length is read as saved.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import message_entry, user_message

from pi_session_server.session import SessionManager, loader

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


@pytest.fixture(autouse=True)
def bodies_read_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)  # as a file over the limit is loaded


def _session(path: Path, texts: list[str]) -> Path:
    lines = [HEADER]
    parent = None
    for n, text in enumerate(texts):
        entry_id = f"{n:08x}"
        lines.append(message_entry(entry_id, parent, user_message([{"type": "text", "text": text}], 1)))
        parent = entry_id
    path.write_text("".join(json.dumps(v, separators=(",", ":")) + "\n" for v in lines))
    return path


def _texts(manager: SessionManager) -> list[Any]:
    return [entry["message"]["content"][0]["text"] for entry in manager.get_entries()]


def _shell(command: str, *args: Path) -> None:
    subprocess.run(["sh", "-c", command, *map(str, args)], check=True)


def test_a_file_moved_over_a_big_session_leaves_the_loaded_entries_as_loaded(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", ["first", "second"])
    manager = SessionManager.open(str(path), read_only=True)
    # the same entries (same envelopes, same lengths), other words: the editor's save by rename
    other = _session(tmp_path / "saved.jsonl", ["FIRST", "SECOND"])
    _shell('mv "$1" "$0"', path, other)
    assert _texts(manager) == ["first", "second"]
    manager.close()


def test_a_same_length_save_in_place_of_a_big_session_is_read_as_saved(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", ["first", "second"])
    manager = SessionManager.open(str(path), read_only=True)
    edited = _session(tmp_path / "edited.jsonl", ["FIRST", "second"])
    _shell('cat "$1" > "$0"', path, edited)  # truncate and write, as an editor saving in place
    assert _texts(manager) == ["FIRST", "second"]
    manager.close()
