"""The tree of a session reopened from its index, made as it is walked (session/row_tree.py): the
nodes, their order, labels and the leaf's path are getTree's and getBranch's; a tree view's first
window cut from it is the very reply the whole tree gives, and makes no entry it does not show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import builders as S
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index_rows import _write

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server import methods_read as R
from pi_session_server.server import params as P
from pi_session_server.server import path_view
from pi_session_server.session import SessionManager, cache_dir, row_tree, scan_index
from pi_session_server.session.tree import preorder

pytestmark = pytest.mark.usefixtures("files_settle_at_once")


@pytest.fixture(autouse=True)
def _every_size_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)


def _reopened(path: Path, index_dir: Path) -> SessionManager:
    """``path`` opened from the index an open before wrote (its entries not made)."""
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    manager = SessionManager.open(str(path), read_only=True, index=str(index_dir))
    assert scan_index.last_outcome.read == "used"
    return manager


def _shape(roots: list[Any]) -> list[tuple[int, Any, Any, Any, int]]:
    return [
        (depth, node.entry.id, node.label, node.label_timestamp, len(node.children))
        for depth, node in preorder(roots)
    ]


_TIMES = st.sampled_from([f"2024-01-01T00:00:0{n}Z" for n in range(4)] + ["not a time", ""])


@st.composite
def _sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Distinct ids; parents earlier, later, missing or null; times out of order, alike or
    unparsable (siblings sorted by them); labels set and cleared."""
    values: list[dict[str, Any]] = []
    count = draw(st.integers(1, 25))
    kinds = ["before", "before", "earlier", "earlier", "null"]
    if draw(st.booleans()):  # parents getTree finds another way (there is no tree of rows then)
        kinds += ["missing", "later"]
    for n in range(count):
        earlier = [v["id"] for v in values]
        # mostly what pi writes (the entry before, or a branch off an earlier one), at times not
        kind = draw(st.sampled_from(kinds))
        parent: Any = None
        if kind == "before" and earlier:
            parent = earlier[-1]
        elif kind == "earlier" and earlier:
            parent = draw(st.sampled_from(earlier))
        elif kind == "missing":
            parent = "nowhere"
        elif kind == "later":
            parent = f"e{min(n + 2, count - 1)}"  # one further down (or itself)
        value: dict[str, Any] = {"id": f"e{n}", "parentId": parent, "timestamp": draw(_TIMES)}
        if earlier and draw(st.booleans()) and n % 3 == 0:
            value.update(
                type="label", targetId=draw(st.sampled_from(earlier)), label=draw(st.sampled_from(["L", ""]))
            )
        else:
            value.update(type="message", message={"role": "user", "content": f"c{n}"})
        values.append(value)
    return values


@settings(max_examples=80, deadline=None)
@given(values=_sessions())
def test_the_tree_of_rows_is_get_tree_and_its_path_get_branch(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]]
):
    directory = tmp_path_factory.mktemp("rows")
    path = _write(directory / "s.jsonl", values)
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = _shape(plain.get_tree()), [e.id for e in plain.get_branch()]
        ids = [e.id for e in plain.get_entries()[1:]]
    with _reopened(path, directory / "index") as manager:
        tree = manager.row_tree()
        if tree is None:  # not from rows, or a parent getTree finds another way
            return
        assert (_shape(tree.roots), [e.id for e in tree.leaf_path]) == expected
        assert manager._rows is not None  # none of it made every entry
        for entry_id in ids:
            assert tree.by_id[entry_id].id == entry_id
        assert tree.by_id.get("e99") is None
        on_path = set(expected[1])
        for depth_node in preorder(tree.roots):
            entry = depth_node[1].entry
            assert (entry in tree.leaf_path) == (entry.id in on_path)
        # the path and its nodes read as sequences: by index from either end, and by slice
        branch, nodes = expected[1], tree.nodes_on(tree.leaf_path)
        for at in range(-len(branch), len(branch)):
            assert tree.leaf_path[at].id == nodes[at].entry.id == branch[at]
        for window in (slice(None), slice(1, None, 2), slice(None, None, -1), slice(-3, -1), slice(5, 2)):
            assert [e.id for e in tree.leaf_path[window]] == branch[window]
            assert [node.entry.id for node in nodes[window]] == branch[window]
        for beyond in (len(branch), -len(branch) - 1):
            with pytest.raises(IndexError):
                tree.leaf_path[beyond]
            with pytest.raises(IndexError):
                nodes[beyond]


@settings(max_examples=60, deadline=None)
@given(values=_sessions(), data=st.data())
def test_a_branch_and_children_on_rows_are_the_whole_sessions_without_making_every_entry(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]], data: st.DataObject
):
    """``branch`` to any entry (or to one that is not there) of a session reopened from its index:
    the leaf, its entry, the tree's leaf path, each entry's children and the context are those of
    the session read whole, and the rows stay rows."""
    directory = tmp_path_factory.mktemp("rows")
    path = _write(directory / "s.jsonl", values)
    target = data.draw(st.sampled_from([v["id"] for v in values] + ["nowhere", 7]))

    def branched(manager: SessionManager) -> Any:
        try:
            manager.branch(target)
        except Exception as error:  # noqa: BLE001 (the same refusal is expected of both)
            return type(error).__name__, str(error)
        return manager.get_leaf_id(), manager.get_leaf_entry().id

    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = branched(plain), _shape(plain.get_tree()), [e.id for e in plain.get_branch()]
        context = plain.build_session_context()
        parents = [v["id"] for v in values] + [None, "nowhere", ABSENT, 0]
        children = [[e.id for e in plain.get_children(p)] for p in parents]
    with _reopened(path, directory / "index") as manager:
        got = branched(manager)
        assert manager._rows is not None  # the branch looked the id up in the ids column
        tree = manager.row_tree()
        if tree is not None:  # (None: a parent getTree finds another way)
            assert (got, _shape(tree.roots), [e.id for e in tree.leaf_path]) == expected
            assert manager._rows is not None
        assert got == expected[0]
        assert [[e.id for e in manager.get_children(p)] for p in parents] == children
        assert manager._rows is not None or tree is None
        assert manager.build_session_context() == context
        assert [e.id for e in manager.get_branch()] == expected[2]


def _turns(lines: list[str], parent: str, first: int, count: int) -> str:
    """Assistant calls (every third with text, the others silent turns) and their results."""
    for n in range(first, first + count):
        aid, rid, call = f"a{n}", f"r{n}", f"c{n}"
        text = "" if n % 3 else f"step {n}"
        lines.append(S.assistant(aid, parent, text, calls=((call, "bash", {"command": f"ls {n}"}),)))
        lines.append(S.tool_result(rid, aid, call, f"out {n}"))
        parent = rid
    return parent


def _branchy(path: Path) -> Path:
    """A chain of turns from the top, then a branch point (its branches out of time order, the
    leaf's the later one), labels, and more turns on the leaf's branch."""
    lines = [S.header(), S.user("u0", None, "first", timestamp="2024-01-01T00:00:00Z")]
    parent = _turns(lines, "u0", 0, 12)
    lines.append(S.user("late", parent, "a later branch", timestamp="2024-01-01T00:09:00Z"))
    lines.append(S.user("early", parent, "an earlier branch", timestamp="2024-01-01T00:01:00Z"))
    lines.append(S.label("l0", "early", "r3", "the result"))
    parent = _turns(lines, "late", 12, 8)
    lines.append(S.label("l1", parent, "a4", "marked"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["default", "none", "no-tools", "user-only", "all"])
@pytest.mark.parametrize("active_branch_first", [True, False])
@pytest.mark.parametrize("leaf", [None, "early", "a3"])
def test_a_tree_views_first_window_from_rows_is_the_whole_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, active_branch_first: bool, leaf: str | None
):
    """Also after a branch to another leaf (``leaf``: off the path to the last entry, or on it)."""
    monkeypatch.setenv("HOME", "/home/u")
    path = _branchy(tmp_path / "s.jsonl")
    view = {"session": "s", "filter": mode, "form": "flat", "activeBranchFirst": active_branch_first}
    pages = [{**view, "chain": True, "offset": offset, "limit": 7} for offset in (0, 7, 14, 70)]

    def replies(manager: SessionManager) -> list[Any]:
        return [msgspec.json.decode(R._tree(manager, P.parse(p, P.GetTreeParams))) for p in pages]

    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        if leaf is not None:
            plain.branch(leaf)
        expected = replies(plain)
    with _reopened(path, tmp_path / "index") as manager:
        if leaf is not None:
            manager.branch(leaf)
        assert manager.row_tree() is not None
        first = msgspec.json.decode(R._tree(manager, P.parse(pages[0], P.GetTreeParams)))
        assert manager._rows is not None  # the window made no entry but those it looked at
        assert [first, *replies(manager)[1:]] == expected
    assert expected[0]["nodes"]


def test_the_window_around_the_leaf_after_a_first_window_from_rows_makes_no_entry_of_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A client asking for the page around the leaf on the first window's walk (the same view):
    the leaf's path is known by its rows' ids, not by making its entries."""
    monkeypatch.setenv("HOME", "/home/u")
    path = _branchy(tmp_path / "s.jsonl")
    view = {"session": "s", "filter": "all", "form": "flat", "chain": True, "limit": 5}
    first = P.parse(view, P.GetTreeParams)
    around = P.parse({**view, "aroundId": "l1"}, P.GetTreeParams)
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = msgspec.json.decode(R._tree(plain, around))
    with _reopened(path, tmp_path / "index") as manager:
        R._tree(manager, first)
        rows = manager._rows
        assert rows is not None
        made = len(rows._made)
        assert msgspec.json.decode(R._tree(manager, around)) == expected
        assert manager._rows is rows and len(rows._made) <= made + 5  # the page's rows; the path has 45
    assert expected["nodes"]


def test_a_first_window_that_goes_on_too_far_for_the_rows_is_cut_from_the_whole_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A session without branches: its top chain is the whole session."""
    monkeypatch.setenv("HOME", "/home/u")
    lines = [S.header(), S.user("u0", None, "first")]
    _turns(lines, "u0", 0, 2 * row_tree.MIN_NODES)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = P.parse({"session": "s", "filter": "default", "chain": True, "limit": 9}, P.GetTreeParams)
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = bytes(R._tree(plain, page))
    with _reopened(path, tmp_path / "index") as manager:
        tree = manager.row_tree()
        assert tree is not None
        with pytest.raises(row_tree.RowTreeOutgrown):
            preorder(tree.roots)
        assert bytes(R._tree(manager, page)) == expected
        assert manager._rows is None  # every entry made, for the whole tree


# --- pi/getPath over the rows ---------------------------------------------------------------


def _path_pages(manager: SessionManager, entry_id: Any, descend: bool, limit: int = 7) -> list[Any]:
    """Every page of the path, as a viewer scrolling through it asks for them."""
    pages, offset = [], 0
    while True:
        reply = msgspec.json.decode(path_view.get_path(manager, entry_id, descend, offset, limit))
        pages.append(reply)
        if not reply["hasMore"]:
            return pages
        offset = reply["nextOffset"]


@settings(max_examples=60, deadline=None)
@given(values=_sessions())
def test_a_path_from_the_rows_is_the_one_the_whole_tree_gives(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]]
):
    directory = tmp_path_factory.mktemp("rows")
    path = _write(directory / "s.jsonl", values)
    asked = [(ABSENT, False), (ABSENT, True)] + [(v["id"], d) for v in values for d in (False, True)]
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = [_path_pages(plain, entry_id, descend, limit=3) for entry_id, descend in asked]
    with _reopened(path, directory / "index") as manager:
        from_rows = manager.row_tree() is not None
        assert [_path_pages(manager, entry_id, descend, limit=3) for entry_id, descend in asked] == expected
        if from_rows:
            assert manager._rows is not None  # no page made every entry


def test_a_viewers_pages_and_branch_switches_from_rows_make_only_the_entries_they_show(tmp_path: Path):
    path = _branchy(tmp_path / "s.jsonl")
    asked = [(ABSENT, False), ("early", True), ("late", True), ("r3", True), ("u0", True), ("a2", False)]
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = [_path_pages(plain, entry_id, descend) for entry_id, descend in asked]
    with _reopened(path, tmp_path / "index") as manager:
        assert manager.row_tree() is not None
        assert [_path_pages(manager, entry_id, descend) for entry_id, descend in asked] == expected
        assert manager._rows is not None
    # through "early", the branch off the leaf's path, down to its end (its label); from the top,
    # through "late", the branch the leaf is on, down to the leaf
    assert {page["endId"] for page in expected[1]} == {"l0"}
    down = [item["entry"]["id"] for page in expected[4] for item in page["items"]]
    assert "late" in down and "early" not in down and down[-1] == "l1" == expected[4][0]["leafId"]


def test_a_path_that_outgrows_the_rows_is_served_on_from_the_whole_tree(tmp_path: Path):
    """A session without branches: paging through its path reaches more nodes than the rows make."""
    lines = [S.header(), S.user("u0", None, "first")]
    _turns(lines, "u0", 0, 2 * row_tree.MIN_NODES)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = _path_pages(plain, ABSENT, False, limit=100), _path_pages(plain, "a5", True, limit=100)
    with _reopened(path, tmp_path / "index") as manager:
        first = msgspec.json.decode(path_view.get_path(manager, ABSENT, False, 0, 100))
        assert manager._rows is not None  # the first page from the rows
        assert first == expected[0][0]
        assert _path_pages(manager, ABSENT, False, limit=100) == expected[0]
        assert manager._rows is None  # every entry made, for the whole tree
        assert _path_pages(manager, "a5", True, limit=100) == expected[1]
