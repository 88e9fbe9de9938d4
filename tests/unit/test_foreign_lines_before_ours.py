"""Another program (pi) appends whole lines to a session file, and our next append lands after
them before we looked at the file: those lines are entries before ours, reported by the next
refresh as "appended" (a front end fetches just them), not "reloaded" (it would fetch everything).
Whatever the file holds that an append cannot tell (a line cut short, one that is not an entry, an
id the session has, a rewrite) is still read again whole. Either way the session is what a fresh
open of the file gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import builders as S
import pytest

from pi_session_server.session import SessionManager
from pi_session_server.session.tree import preorder


def _session(tmp_path: Path) -> tuple[SessionManager, str]:
    """A session with a user and an assistant message, held open as the server holds it."""
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([S.header(), S.user("u0000001", None, "hello"), S.assistant("a0000001", "u0000001", "hi")])
        + "\n",
        encoding="utf-8",
    )
    return SessionManager.open(str(path)), str(path)


def _append_elsewhere(path: str, *lines: str) -> None:
    """Another program's appends: plain writes at the end of the file, without our lock."""
    with open(path, "a", encoding="utf-8") as file:
        for line in lines:
            file.write(line)
            file.flush()


def _state(manager: SessionManager) -> dict[str, Any]:
    """What a front end reads of a session."""
    entries = manager.get_entries()
    return {
        "entries": [(e.id, e.line, e.value) for e in entries],
        "leaf": manager.get_leaf_id(),
        "branch": [e.id for e in manager.get_branch()],
        "tree": [(depth, n.entry.id, n.label) for depth, n in preorder(manager.get_tree())],
        "context": manager.build_session_context(),
        "name": manager.get_session_name(),
        "at_lines": [getattr(manager.entry_at_line(e.line), "id", None) for e in entries],
        "children": [e.id for e in manager.get_children("u0000001")],
    }


def _as_a_fresh_open(manager: SessionManager, path: str) -> None:
    assert _state(manager) == _state(SessionManager.open(path))


def test_whole_lines_before_ours_are_appended_entries_before_ours(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    # pi, in another process, goes on from its own leaf: a new branch from the first message
    _append_elsewhere(
        path,
        S.user("f0000001", "u0000001", "from pi") + "\n",
        S.assistant("f0000002", "f0000001", "pi's answer") + "\n",
        S.label("f0000003", "f0000002", "u0000001", "theirs") + "\n",
        S.session_info("f0000004", "f0000003", "named by pi") + "\n",
    )
    mine = manager.append_message(S.user_message("mine", 1))
    assert [event.expected_size < event.found_size for event in manager.drain_events()] == [True]
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids, change.leaf_id) == (
        "appended",
        ["f0000001", "f0000002", "f0000003", "f0000004"],
        mine,
    )
    _as_a_fresh_open(manager, path)
    assert manager.get_branch()[-2].id == "a0000001"  # ours goes on from our leaf
    assert manager.get_label("u0000001") == "theirs" and manager.get_session_name() == "named by pi"
    # nothing more to tell; our next appends are ours alone
    assert manager.refresh_from_disk().kind == "unchanged"
    manager.append_label_change("u0000001", "ours")
    assert not manager.drain_events() and manager.refresh_from_disk().kind == "unchanged"
    _as_a_fresh_open(manager, path)
    assert manager.get_label("u0000001") == "ours"


def test_their_lines_and_lines_they_append_after_ours_come_in_one_change(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    _append_elsewhere(path, S.user("f0000001", "a0000001", "before") + "\n")
    mine = manager.append_message(S.user_message("mine", 1))
    _append_elsewhere(path, S.user("f0000002", mine, "after") + "\n")
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids, change.leaf_id) == (
        "appended",
        ["f0000001", "f0000002"],
        "f0000002",
    )
    _as_a_fresh_open(manager, path)


def test_their_line_and_ours_under_one_entry_are_its_children_in_the_files_order(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    _append_elsewhere(path, S.user("f0000001", "a0000001", "theirs") + "\n")
    mine = manager.append_message(S.user_message("mine", 1))  # (from our leaf: their line's parent)
    assert [e.id for e in manager.get_children("a0000001")] == ["f0000001", mine]
    _as_a_fresh_open(manager, path)


def test_a_label_of_ours_after_theirs_on_the_same_entry_wins_as_in_the_file(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    _append_elsewhere(path, S.label("f0000001", "a0000001", "u0000001", "theirs") + "\n")
    manager.append_label_change("u0000001", "ours")
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("appended", ["f0000001"])
    assert manager.get_label("u0000001") == "ours"
    _as_a_fresh_open(manager, path)


def test_lines_taken_in_by_an_append_rolled_back_come_again_from_the_file(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    _append_elsewhere(path, S.user("f0000001", "a0000001", "before") + "\n")
    with pytest.raises(RuntimeError), manager.transaction():
        manager.append_message(S.user_message("mine", 1))
        raise RuntimeError("the caller changed its mind")
    change = manager.refresh_from_disk()
    assert (
        change.kind == "appended" and change.new_entry_ids[0] == "f0000001" and len(change.new_entry_ids) == 2
    )
    _as_a_fresh_open(manager, path)


_CUT_LINE = S.user("f0000001", "a0000001", "cut")[:40]


@pytest.mark.parametrize(
    "theirs",
    [
        pytest.param([_CUT_LINE], id="a line cut short"),
        pytest.param([S.user("f0000001", "a0000001") + "\n", "{not json\n"], id="a line that is not JSON"),
        pytest.param(
            [S.user("a0000001", "u0000001", "same id as our leaf") + "\n"], id="an id of the leaf's path"
        ),
        pytest.param(
            [S.user("u0000009", "u0000001") + "\n", S.user("u0000009", None) + "\n"], id="an id twice"
        ),
        pytest.param([S.header() + "\n"], id="a second header"),
    ],
)
def test_what_an_append_cannot_tell_is_read_again_whole(tmp_path: Path, theirs: list[str]) -> None:
    manager, path = _session(tmp_path)
    _append_elsewhere(path, *theirs)
    manager.append_message(S.user_message("mine", 1))
    assert manager.drain_events()
    assert manager.refresh_from_disk().kind == "reloaded"
    _as_a_fresh_open(manager, path)


def test_a_rewrite_that_grew_the_file_is_read_again_whole(tmp_path: Path) -> None:
    manager, path = _session(tmp_path)
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines(keepends=True)
    lines[2] = S.assistant("a0000001", "u0000001", "an edited answer, longer than it was") + "\n"
    Path(path).write_text("".join([*lines, S.user("f0000001", "a0000001") + "\n"]), encoding="utf-8")
    manager.append_message(S.user_message("mine", 1))
    assert manager.refresh_from_disk().kind == "reloaded"
    _as_a_fresh_open(manager, path)
    assert "an edited answer" in str(manager.get_entry("a0000001")["message"])


def test_a_rewrite_in_place_of_our_last_bytes_before_their_lines_is_read_again_whole(tmp_path: Path) -> None:
    """An editor saved the file in place, the same length, with our last line's end edited, then
    pi appended: the lines after what we knew are whole entries, the bytes before them are not ours."""
    manager, path = _session(tmp_path)
    data = Path(path).read_bytes()
    assert data.endswith(b'"timestamp":2}}\n')
    edited = data[: -len(b"2}}\n")] + b"7}}\n"
    with open(path, "r+b") as file:
        file.write(edited)
    _append_elsewhere(path, S.user("f0000001", "a0000001") + "\n")
    manager.append_message(S.user_message("mine", 1))
    assert manager.refresh_from_disk().kind == "reloaded"
    _as_a_fresh_open(manager, path)
    assert manager.get_entry("a0000001")["message"]["timestamp"] == 7
