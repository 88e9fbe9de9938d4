"""SessionManager.transaction(): a block of calls that changes the session in memory all or nothing
(what a failed request over the wire must leave behind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_session_server.session import SessionManager, storage

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


# ----------------------------------------------------------------------------- what the block learnt of the file


def _append_elsewhere(m: SessionManager, *lines: str) -> None:
    """Another program's appends to the file of ``m``."""
    with open(m.get_session_file(), "a", encoding="utf-8") as file:
        file.writelines(lines)


def _theirs(entry_id: str, parent_id: str) -> str:
    value = {"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": "t", "message": USER}
    return json.dumps(value) + "\n"


def _problems(m: SessionManager) -> list[tuple]:
    return [(p.line, p.kind, p.message) for p in m.problems]


def test_what_a_refresh_in_a_failed_block_took_in_is_taken_in_and_told_again(manager: SessionManager) -> None:
    """Another program's lines a refresh in the block took in go back out of memory with their
    problems; the next refresh takes them in again and tells them, once: the session is then what a
    fresh open of the file gives."""
    before = state(manager)
    _append_elsewhere(manager, "{not json\n", _theirs("f1", manager.get_leaf_id()))
    with pytest.raises(Failed), manager.transaction():
        change = manager.refresh_from_disk()
        assert (change.kind, change.new_entry_ids, len(manager.problems)) == ("appended", ["f1"], 1)
        raise Failed
    assert state(manager) == before and manager.problems == []
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids, change.leaf_id) == ("appended", ["f1"], "f1")
    fresh = SessionManager.open(manager.get_session_file(), read_only=True)
    assert (state(manager), _problems(manager)) == (state(fresh), _problems(fresh))
    assert len(manager.problems) == 1


def test_another_programs_write_an_append_in_a_failed_block_met_is_told_by_the_next_look(
    manager: SessionManager,
) -> None:
    """An append in the block that landed after another program's line reports that write only if
    the block succeeds; taken back, the next append meets the line again and reports it, once."""
    _append_elsewhere(manager, _theirs("f1", manager.get_leaf_id()))
    with pytest.raises(Failed), manager.transaction():
        lost = manager.append_message(USER)
        raise Failed
    assert manager.drain_events() == []
    mine = manager.append_message(USER)
    assert len(manager.drain_events()) == 1
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids, change.leaf_id) == ("appended", ["f1", lost], mine)
    assert manager.drain_events() == []
    assert state(manager) == state(SessionManager.open(manager.get_session_file(), read_only=True))


def test_writes_drained_in_a_failed_block_are_not_told_again(manager: SessionManager) -> None:
    _append_elsewhere(manager, _theirs("f1", manager.get_leaf_id()))
    manager.append_message(USER)  # met their line: a write to tell
    with pytest.raises(Failed), manager.transaction():
        assert len(manager.drain_events()) == 1
        raise Failed
    assert manager.drain_events() == []


def test_a_file_found_unreadable_in_a_failed_block_is_told_again(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "UNREADABLE_AFTER", 0)
    path = Path(manager.get_session_file())
    path.write_text("notes, not a session " * (path.stat().st_size // 10) + "\n")  # (longer: no wait)
    assert manager.refresh_from_disk().kind == "rewriting"
    with pytest.raises(Failed), manager.transaction():
        assert manager.refresh_from_disk().kind == "unreadable"
        raise Failed
    assert [manager.refresh_from_disk().kind, manager.refresh_from_disk().kind] == ["unreadable", "unchanged"]
