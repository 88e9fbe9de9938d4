"""What a tree view's levels keep of a session besides the tree: the rows on the path to the leaf
are told by the leaf path's entries (no set of the keys of its ids besides), and whether an entry
is shown is kept only for those whose body the filter reads, one byte per line of the file; the
answers are those of a shape that knows no leaf path (which finds the path by the ids)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_silent_turns import _branchy

from pi_session_server.server.tree_following import tree_shape
from pi_session_server.server.tree_levels import encode_tree_levels, tree_levels
from pi_session_server.server.tree_rows import ChainRows, row_nodes
from pi_session_server.server.tree_shape import TreeShape
from pi_session_server.server.tree_tool_calls import CallReading
from pi_session_server.server.tree_window import window_tops
from pi_session_server.session import SessionManager
from pi_session_server.session.preview_cache import PreviewCache


def _levels(
    manager: SessionManager, around: str, *, leaf_path: bool, search: str | None = None
) -> tuple[bytes, TreeShape]:
    shape = tree_shape(
        manager.get_tree(),
        manager.get_leaf_id(),
        manager.by_id,
        mode="default",
        search=search,
        active_branch_first=True,
        cache=PreviewCache("/home/u", entries=manager.get_entries, entry_count=manager.entry_count),
        calls=CallReading.NEAR_EACH_RESULT,
        leaf_path=manager.get_branch() if leaf_path else None,
        branch_of=manager.get_branch if leaf_path else None,
    )
    levels, complete = tree_levels(shape, around)
    return encode_tree_levels(shape, levels, complete, 5, 50_000), shape


@pytest.mark.parametrize("search", [None, "question"])
def test_the_levels_to_the_leaf_find_its_path_by_its_entries(tmp_path: Path, search: str | None) -> None:
    path = _branchy(tmp_path / "s.jsonl")
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        leaf = manager.get_leaf_id()
        expected, _ = _levels(manager, leaf, leaf_path=False, search=search)
        answer, shape = _levels(manager, leaf, leaf_path=True, search=search)
        assert answer == expected and b'"kind":"branches"' in answer
        assert shape._on_path is None  # (no set of the path's keys made)
        kept = [e for e in manager.get_entries() if shape._shown.get(e) is not None]
        assert kept and (search is not None or all(e.role == "assistant" for e in kept))
        assert not shape._shown._others  # (kept one byte per line of the file)
        elsewhere = next(
            e.id for e in manager.get_entries() if e.id not in {x.id for x in manager.get_branch()}
        )
        assert (
            _levels(manager, elsewhere, leaf_path=True)[0] == _levels(manager, elsewhere, leaf_path=False)[0]
        )


def test_a_level_of_a_chain_keeps_its_nodes_and_gives_the_rows_of_its_window(tmp_path: Path) -> None:
    """The levels kept with a tree view's shape hold each chain as its nodes (no row made and kept
    for each entry of a session's chains); a level's rows, its pages and the rows from its end are
    those of the walk of its window."""
    path = _branchy(tmp_path / "s.jsonl")
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        _answer, shape = _levels(manager, manager.get_leaf_id(), leaf_path=True)
        assert shape.kept_levels is not None
        levels = shape.kept_levels[1]
        chains = [level for level in levels if level.window.chain]
        assert chains and all(type(level.rows) is ChainRows for level in chains)
        assert any(len(level.rows) > 2 for level in chains)
        for level in levels:
            walked = list(shape.rows(window_tops(shape.roots, shape, level.window), level.window))
            rows = level.rows
            assert list(rows) == walked and len(rows) == len(walked)
            assert [rows[at] for at in range(-len(walked), len(walked))] == walked + walked
            for start in range(len(walked) + 1):
                assert rows[start:] == walked[start:] and rows[:start] == walked[:start]
                assert rows[start : start + 2] == walked[start : start + 2]
            assert rows[::2] == walked[::2]
            assert list(row_nodes(rows)) == [row.node for row in walked]
            with pytest.raises(IndexError):
                rows[len(walked)]
