"""How a tree view's shape holds the leaf's path to tell the rows on it: down a file's entries, by
their lines in the path itself (no set of a path that can be most of a session of GBs); a path
whose lines do not grow, as a set. The answers are those of a shape that knows no leaf path."""

from __future__ import annotations

from pathlib import Path

from test_levels_held import _levels
from test_silent_turns import _branchy

from pi_session_server.format.entry import Entry
from pi_session_server.server.tree_leaf_path import EntriesOnPath
from pi_session_server.session import SessionManager


def test_a_file_s_leaf_path_is_told_by_its_lines_with_the_same_answers(tmp_path: Path) -> None:
    path = _branchy(tmp_path / "s.jsonl")
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        leaf = manager.get_leaf_id()
        expected, _ = _levels(manager, leaf, leaf_path=False)
        answer, shape = _levels(manager, leaf, leaf_path=True)
        assert answer == expected
        held = shape._path_entries
        assert isinstance(held, EntriesOnPath) and held._set is None
        branch = manager.get_branch()
        on_path = set(map(id, branch))
        for entry in manager.get_entries():
            assert (entry in held) is (id(entry) in on_path)
        with SessionManager.open(str(path), read_only=True, index=False) as again:
            # the same lines, other objects: not the entries of this path
            assert not any(entry in held for entry in again.get_branch())
        assert {"id": leaf} not in held


def _entries(lines: list[int]) -> list[Entry]:
    parent = None
    entries = []
    for n, line in enumerate(lines):
        entries.append(Entry.of({"type": "message", "id": f"e{n}", "parentId": parent}, line=line))
        parent = f"e{n}"
    return entries


def test_a_path_whose_lines_do_not_grow_is_held_as_a_set() -> None:
    for lines in ([-1, -1, -1], [3, 1, 2], [1, 1, 2]):
        path = _entries(lines)
        held = EntriesOnPath(path)
        assert held._set is not None
        assert all(entry in held for entry in path)
        assert not any(entry in held for entry in _entries(lines))


def test_a_moved_path_is_looked_at_from_where_it_parts() -> None:
    path = _entries([1, 2, 3, 4])
    held = EntriesOnPath(path)
    branch = _entries([5, 6])
    moved = [*path[:2], *branch]
    held.move(moved, 2, path[2:], branch)
    assert held._set is None
    assert [entry in held for entry in path] == [True, True, False, False]
    assert all(entry in held for entry in branch)
    # a joined entry written before the one it hangs under: held as a set from then on
    back = _entries([0])
    held.move([*moved, *back], len(moved), [], back)
    assert held._set is not None
    assert all(entry in held for entry in [*moved, *back]) and path[2] not in held
