"""Port of pi's ``packages/coding-agent/test/rpc-set-label.test.ts`` (it drives ``SessionManager``
directly, no RPC). Source: badlogic/pi-mono (as indexed; found via the code search).
"""

from __future__ import annotations

import pytest
from builders import user_message as user_msg

from pi_session_server.errors import EntryNotFoundError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager


def test_rpc_set_label__set_a_label_on_an_entry():
    sm = SessionManager.in_memory()
    entry_id = sm.append_message(user_msg("Hello"))
    sm.append_label_change(entry_id, "checkpoint")
    assert sm.get_label(entry_id) == "checkpoint"


def test_rpc_set_label__clear_a_label_by_passing_undefined():
    sm = SessionManager.in_memory()
    entry_id = sm.append_message(user_msg("Hello"))
    sm.append_label_change(entry_id, "checkpoint")
    assert sm.get_label(entry_id) == "checkpoint"
    label_id = sm.append_label_change(entry_id)
    assert sm.get_label(entry_id) is ABSENT
    assert "label" not in sm.get_entry(label_id)  # "not given" writes no key (docs/FORMAT.md §6.9)


def test_rpc_set_label__clear_a_label_by_passing_empty_string():
    sm = SessionManager.in_memory()
    entry_id = sm.append_message(user_msg("Hello"))
    sm.append_label_change(entry_id, "checkpoint")
    assert sm.get_label(entry_id) == "checkpoint"
    label_id = sm.append_label_change(entry_id, "")
    assert sm.get_label(entry_id) is ABSENT
    assert sm.get_entry(label_id)["label"] == ""


def test_rpc_set_label__throws_on_non_existent_entry():
    sm = SessionManager.in_memory()
    with pytest.raises(EntryNotFoundError, match=r"^Entry nonexistent not found$"):
        sm.append_label_change("nonexistent", "test")
    assert sm.get_entries() == []
