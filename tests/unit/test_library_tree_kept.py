"""The library's tree of a session is kept across a branch (the leaf moves, the tree does not show
it): a tree view's "Branch Here" does not build the whole tree again, and its windows after it are
those of a session opened at that leaf."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE

from pi_session_server.server import library_tree, methods_read, tree_pages
from pi_session_server.server import params as P
from pi_session_server.session import SessionManager


def _window(manager: SessionManager, **params: Any) -> dict[str, Any]:
    p = P.parse({"session": "s", "filter": "default", "form": "flat", **params}, P.GetTreeParams)
    return json.loads(bytes(methods_read._tree(manager, p)))


def test_a_branch_keeps_the_library_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages())
    monkeypatch.setattr(methods_read, "_tree_pages", tree_pages.FlatTreePages())
    path = tmp_path / "example.jsonl"
    shutil.copy(EXAMPLE, path)
    manager = SessionManager.open(str(path), read_only=True, index=False)
    built: list[int] = []
    get_tree = manager.get_tree
    monkeypatch.setattr(manager, "get_tree", lambda: built.append(1) or get_tree())
    leaf = manager.get_leaf_id()
    _window(manager, levels=True, aroundId=leaf)
    roots = library_tree.library_tree(manager)
    other = next(e.id for e in manager.get_entries() if e.id not in {x.id for x in manager.get_branch()})
    for at in (other, leaf):
        manager.branch(at)
        answer = _window(manager, levels=True, aroundId=at)
        assert library_tree.library_tree(manager) is roots and built == [1]
        with SessionManager.open(str(path), read_only=True, index=False) as fresh:
            fresh.branch(at)
            monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages())
            assert _window(fresh, levels=True, aroundId=at) == answer
