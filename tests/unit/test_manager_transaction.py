"""SessionManager.transaction(): a block of calls that changes the session in memory all or nothing
(what a failed request over the wire must leave behind)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_session_server.session import SessionManager

USER = {"role": "user", "content": "hi", "timestamp": 1}
ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "ok"}],
    "api": "a",
    "provider": "p",
    "model": "m",
    "usage": {},
    "stopReason": "stop",
    "timestamp": 2,
}


class Failed(Exception):
    pass


def state(m: SessionManager) -> tuple:
    return (
        [e.id for e in m.get_entries()],
        m.get_leaf_id(),
        m.get_session_file(),
        m.get_session_id(),
        {e.id: m.get_label(e.id) for e in m.get_entries()},
        [n.entry.id for n in m.get_tree()],
        [e.id for e in m.get_branch()],
    )


@pytest.fixture
def manager(tmp_path: Path) -> SessionManager:
    m = SessionManager.create(str(tmp_path), str(tmp_path))
    first = m.append_message(USER)
    m.append_message(ASSISTANT)
    m.append_label_change(first, "start")
    return m


def test_a_block_that_raises_leaves_the_session_as_it_was(manager: SessionManager) -> None:
    before = state(manager)
    first = manager.get_entries()[0].id
    with pytest.raises(Failed), manager.transaction():
        manager.branch(first)
        manager.append_message(USER)
        manager.append_label_change(first, "moved")
        manager.append_label_change(manager.get_leaf_id(), "new")
        raise Failed
    assert state(manager) == before
    # the manager works on as before: the next append follows the old leaf
    new = manager.append_message(USER)
    assert manager.get_entry(new).parent_id == before[1]


def test_a_switch_of_session_is_undone(manager: SessionManager, tmp_path: Path) -> None:
    before = state(manager)
    with pytest.raises(Failed), manager.transaction():
        manager.new_session()
        raise Failed
    assert state(manager) == before
    other = tmp_path / "other.jsonl"
    other.write_text(Path(manager.get_session_file()).read_text())
    with pytest.raises(Failed), manager.transaction():
        manager.set_session_file(str(other))
        raise Failed
    assert state(manager) == before


def test_a_block_that_succeeds_keeps_everything(manager: SessionManager) -> None:
    with manager.transaction():
        added = manager.append_message(USER)
    assert manager.get_leaf_id() == added and manager.get_entry(added) is not None


def test_an_entry_id_given_twice_finds_its_first_holder_again(manager: SessionManager) -> None:
    first = manager.get_entries()[0]
    with pytest.raises(Failed), manager.transaction():
        manager._append_entry({**first.to_json(), "parentId": None})  # the same id again
        raise Failed
    assert manager.get_entry(first.id).to_json() == first.to_json()
