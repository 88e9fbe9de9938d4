"""pi/getPath over the tree of a session's own entries told by their chains (``manager.chain_tree``,
``session.entry_rows``): the pages the library's tree gives, byte for byte, with no library tree
made; after pi appends (a turn, a branch elsewhere, a label), and on sessions whose rows do not
give the tree (the library's tree serves them)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE, random_session

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server import library_tree, path_view, tree_pages
from pi_session_server.session import SessionManager

_TS = "2026-03-01T00:00:00.000Z"


def _pages(manager: SessionManager, entry_id: Any, descend: bool) -> list[bytes]:
    """The path's pages of a few entries, and its whole path in one page."""
    whole = bytes(path_view.get_path(manager, entry_id, descend, 0, 1_000, keep=False))
    total = json.loads(whole)["total"]
    return [whole] + [
        bytes(path_view.get_path(manager, entry_id, descend, offset, 3, keep=False))
        for offset in range(0, total + 1, 2)
    ]


def _same_as_the_library_s(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, built: list[int]
) -> None:
    """The pages of every entry's path (and the leaf's), from the rows (no library tree made while
    the manager has a tree of rows) and from the library's tree."""
    built.clear()
    asked = [ABSENT, *[e.id for e in manager.get_entries()]]
    from_rows = {
        (entry_id, descend): _pages(manager, entry_id, descend)
        for entry_id in asked
        for descend in (False, True)
    }
    assert manager.chain_tree() is None or not built
    with monkeypatch.context() as m:
        m.setattr(manager, "chain_tree", lambda: None)
        for (entry_id, descend), pages in from_rows.items():
            assert pages == _pages(manager, entry_id, descend), (entry_id, descend)


def _append(path: Path, *lines: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def _turn(entry_id: str, parent: Any, text: str) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": _TS,
            "message": {"role": "user", "content": text, "timestamp": 1}}  # fmt: skip


def test_the_paths_of_a_session_s_rows_are_the_library_tree_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_tree, "_trees", tree_pages.FlatTreePages())
    built: list[int] = []
    from_rows = 0
    rng = random.Random(5)
    paths = [tmp_path / "example.jsonl"]
    shutil.copy(EXAMPLE, paths[0])
    for i in range(8):
        paths.append(tmp_path / f"r{i}.jsonl")
        random_session(rng, paths[-1])
    for path in paths:
        with SessionManager.open(str(path), read_only=True, index=False) as manager:
            get_tree = manager.get_tree
            monkeypatch.setattr(manager, "get_tree", lambda get_tree=get_tree: built.append(1) or get_tree())
            rows = manager.chain_tree() is not None
            from_rows += rows
            _same_as_the_library_s(manager, monkeypatch, built)
            entries = manager.get_entries()
            leaf, earlier = manager.get_leaf_id(), entries[len(entries) // 2].id
            # pi appends a turn below the leaf, a branch off an earlier entry, and labels
            _append(path, _turn(f"t{path.stem}", leaf, "on"), _turn(f"b{path.stem}", earlier, "elsewhere"))
            _append(path, {"type": "label", "id": f"l{path.stem}", "parentId": f"b{path.stem}",
                           "timestamp": _TS, "targetId": earlier, "label": "here"})  # fmt: skip
            assert manager.refresh_from_disk().kind == "appended"
            assert (manager.chain_tree() is not None) is rows
            _same_as_the_library_s(manager, monkeypatch, built)
            manager.branch(earlier)  # (pi's /tree: the leaf moves)
            _same_as_the_library_s(manager, monkeypatch, built)
    assert from_rows >= 6  # (a random session may repeat an id: then the library's tree serves it)


def test_a_session_whose_rows_do_not_give_the_tree_has_no_tree_of_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(EXAMPLE, path)
    first = json.loads(path.read_text().splitlines()[1])["id"]
    _append(path, _turn("x1", "later", "a parent below its child"), _turn("later", first, "the parent"))
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        assert manager.chain_tree() is None
    _append(path, _turn("x1", first, "an id twice"))
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        assert manager.chain_tree() is None
