"""The first write of a new session (docs/API.md, session-manager.md §12.3): the entries that
waited for the first conversation message are written as pi writes them, serialized when the file
is made (as they are then, a value a caller changed since its append included), and only looked
at when they are appended (to refuse a value JSON cannot hold); every entry is encoded once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.errors import ValueTypeError
from pi_session_server.session import appends
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
def test_every_entry_of_the_first_write_is_encoded_once(tmp_path, monkeypatch, pi):
    """The entry that makes the file appear is written as the line made when it was appended; the
    entries that waited are encoded at the write alone, as pi serializes them then (their values,
    JSON's own, were looked at, not encoded, when they were appended)."""
    encoded: Counter[str] = Counter()
    line_bytes = appends.line_bytes

    def counted(value: Any) -> bytes:
        message = value.get("message")
        encoded[value["type"] if message is None else f"{message['role']} {message['timestamp']}"] += 1
        return line_bytes(value)

    monkeypatch.setattr(appends, "line_bytes", counted)
    manager = SessionManager.create(tmp_path, tmp_path / "sessions", pi=pi)
    manager.append_thinking_level_change("high")
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [], "timestamp": 2})
    manager.append_message({"role": "user", "content": "again", "timestamp": 3})  # appended to the file
    assert len(_lines(manager)) == 5
    # (pi 0.86.1 makes the file at the assistant message, 1.6.0 at the first user message)
    assert encoded == {"session": 1, "thinking_level_change": 1, "user 1": 1, "assistant 2": 1, "user 3": 1}


@pytest.mark.parametrize("pi", ["1.6.0", "0.86.1"])
def test_values_a_look_cannot_tell_are_encoded_at_their_append(tmp_path, pi):
    """An entry that waits for the first write is encoded at its append where a look at its values
    cannot tell whether JSON holds them (a list held twice, a number JSON spells otherwise, a
    value that holds itself): refused there if JSON cannot, written at the first write as pi
    writes it if it can."""
    manager = SessionManager.create(tmp_path, tmp_path / "sessions", pi=pi)
    shared = [1]
    manager.append_custom_entry("x", {"a": shared, "b": shared, "big": 2**60, "f": 1e300, "n": float("nan")})
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(ValueTypeError, match="Converting circular structure to JSON"):
        manager.append_custom_entry("x", {"held": [circular]})
    with pytest.raises(ValueTypeError, match="custom entry cannot be written as JSON"):
        manager.append_custom_entry("x", {"tags": {1}})
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [], "timestamp": 2})
    written = _lines(manager)
    assert [line["type"] for line in written] == ["session", "custom", "message", "message"]
    # (2**60 as JavaScript spells it: a double)
    assert written[1]["data"] == {"a": [1], "b": [1], "big": 1152921504606847000, "f": 1e300, "n": None}


def test_appends_to_a_session_kept_in_memory_are_not_encoded(monkeypatch):
    """A session that is not persisted never writes its entries: their values are looked at (one
    JSON cannot hold is refused all the same), not encoded."""
    encoded: list[Any] = []
    line_bytes = appends.line_bytes
    monkeypatch.setattr(appends, "line_bytes", lambda value: encoded.append(value) or line_bytes(value))
    manager = SessionManager.in_memory("/p")
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2})
    manager.append_custom_entry("x", {"n": 1})
    assert encoded == []
    with pytest.raises(ValueTypeError, match="custom entry cannot be written as JSON"):
        manager.append_custom_entry("x", {"tags": {1}})
    assert [e.type for e in manager.get_entries()] == ["message", "message", "custom"]
