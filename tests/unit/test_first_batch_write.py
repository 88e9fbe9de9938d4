"""The first write of a new session (docs/API.md, session-manager.md §12.3): the entries that
waited for the first conversation message are written as pi writes them, serialized when the file
is made (as they are then, a value a caller changed since its append included); the entry that
makes the file appear is written as the line made when it was appended, not encoded again."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.session import manager as manager_module
from pi_session_server.session.manager import SessionManager


def _lines(manager: SessionManager) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(manager.get_session_file()).read_text().splitlines()]


def test_entries_that_waited_are_written_as_they_are_when_the_file_is_made(tmp_path):
    """pi 1.6.0's _persist serializes every file entry at the first write: a value changed after
    its append and before that write is written changed; one changed after the write is not."""
    manager = SessionManager.create(tmp_path, tmp_path / "sessions")
    manager.append_model_change("p", "m")
    data = {"n": 1}
    manager.append_custom_entry("x", data)
    data["n"] = 2  # changed after its append, before the first write
    message = {"role": "user", "content": "hi", "timestamp": 1}
    manager.append_message(message)  # the first conversation message: the file is made
    message["content"] = "changed after the first write"
    written = _lines(manager)
    assert [line["type"] for line in written] == ["session", "model_change", "custom", "message"]
    assert written[2]["data"] == {"n": 2}
    assert written[3]["message"] == {"role": "user", "content": "hi", "timestamp": 1}


@pytest.mark.parametrize("pi", ["1.6.0", "0.86.1"])
def test_the_entry_that_makes_the_file_appear_is_encoded_once(tmp_path, monkeypatch, pi):
    """Its line, made when it was appended (to refuse a value JSON cannot hold), is the one
    written; the entries that waited are encoded again at the write, as pi serializes them then."""
    encoded: Counter[str] = Counter()
    line_bytes = manager_module._line_bytes

    def counted(value: Any) -> bytes:
        message = value.get("message")
        encoded[value["type"] if message is None else f"{message['role']} {message['timestamp']}"] += 1
        return line_bytes(value)

    monkeypatch.setattr(manager_module, "_line_bytes", counted)
    manager = SessionManager.create(tmp_path, tmp_path / "sessions", pi=pi)
    manager.append_thinking_level_change("high")
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [], "timestamp": 2})
    manager.append_message({"role": "user", "content": "again", "timestamp": 3})  # appended to the file
    assert len(_lines(manager)) == 5
    # (pi 0.86.1 makes the file at the assistant message, 1.6.0 at the first user message)
    first_user = 2 if pi == "0.86.1" else 1
    assert encoded == {
        "session": 1,
        "thinking_level_change": 2,
        "user 1": first_user,
        "assistant 2": 1,
        "user 3": 1,
    }
