"""pi/getTree ``levels`` with ``since`` when the walk the reply was cut from is gone (server/tree_since.py):
a view idle for longer than the server keeps walks, or whose walk other views' walks pushed out, still
gets a delta, and what it then holds is what a fresh load gives."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import random_session

from pi_session_server.server import library_tree, methods_read, tree_held, tree_pages, tree_since
from pi_session_server.server import params as P
from pi_session_server.server.tree_since import KEPT_VIEWS
from pi_session_server.session import SessionManager


class Clock:
    """A clock the test moves (no sleeps)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The kept walks (the views' shapes, the library's trees) on a clock of the test's."""
    fake = Clock()
    monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages(clock=fake, walks=KEPT_VIEWS))
    monkeypatch.setattr(methods_read, "_tree_pages", tree_pages.FlatTreePages(clock=fake))
    for name in ("_trees", "_shown_trees", "_tool_calls"):
        monkeypatch.setattr(
            library_tree, name, tree_pages.FlatTreePages(clock=fake, state=tree_pages.entries_state)
        )
    return fake


def _idle(clock: Clock, seconds: float) -> None:
    """``seconds`` pass without a request: the sweeps the timers would run then."""
    clock.now += seconds
    for pages in (methods_read._tree_shapes, methods_read._tree_pages, *_library_pages()):
        pages._sweep()


def _library_pages() -> list[Any]:
    return [library_tree._trees, library_tree._shown_trees, library_tree._tool_calls]


@pytest.fixture
def session(tmp_path: Path) -> SessionManager:
    path = tmp_path / "random.jsonl"
    random_session(random.Random(11), path)
    m = SessionManager.open(str(path))
    for n in range(30):  # branch points down the path: many levels
        if n % 3 == 0:
            m.branch(m.get_branch()[-2].id)
        _turn(m, 100 + n)
    return m


def levels(m: SessionManager, **params: Any) -> dict[str, Any]:
    """A levels reply as the sidecar makes it (the handler's job, without the transport)."""
    p = P.parse(
        {"session": "s", "levels": True, "aroundId": m.get_leaf_id(), "limit": 3, **params}, P.GetTreeParams
    )
    return json.loads(bytes(methods_read._tree_reply(m, p)))


def take(held: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """What a client holds after a delta: the kept levels (their rows relabelled), then the new ones."""
    assert "reload" not in delta
    kept = held["levels"][: delta["keptLevels"]]
    for changed in delta.get("relabelled", []):
        for row in (row for level in kept for row in level["nodes"] if row["id"] == changed["id"]):
            row.pop("label", None)
            row.pop("labelTimestamp", None)
            row.update({k: v for k, v in changed.items() if k != "id"})
    now = {k: v for k, v in delta.items() if k not in ("keptLevels", "relabelled")}
    return {**now, "levels": [*kept, *delta["levels"]]}


def _turn(m: SessionManager, n: int) -> None:
    m.append_message({"role": "user", "content": f"turn {n}", "timestamp": n})
    m.append_message(
        {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}], "timestamp": n}
    )


@pytest.mark.parametrize("view", [{"filter": "default"}, {"filter": "no-tools", "search": "n"}])
def test_a_view_idle_past_the_kept_walks_gets_a_delta(
    session: SessionManager, clock: Clock, view: dict[str, Any]
) -> None:
    held = levels(session, **view)
    for n in range(3):
        _idle(clock, 2 * tree_pages.IDLE_SECONDS)
        assert methods_read._tree_shapes.kept(session) is None  # the walk was let go
        _turn(session, n)
        delta = levels(session, since=held["revision"], **view)
        assert delta["keptLevels"] > 0, n
        held = take(held, delta)
        assert held == levels(session, **view), n


def test_a_label_while_idle_is_relabelled_in_the_levels_kept(session: SessionManager, clock: Clock) -> None:
    held = levels(session)
    middle = held["levels"][len(held["levels"]) // 2]
    target = middle["nodes"][middle["aroundIndex"] - middle["offset"]]["id"]
    _idle(clock, 2 * tree_pages.IDLE_SECONDS)
    session.append_label_change(target, "while away")
    _turn(session, 1)
    delta = levels(session, since=held["revision"])
    assert [row["id"] for row in delta["relabelled"]] == [target]
    assert delta["keptLevels"] >= len(held["levels"]) - 1
    assert take(held, delta) == levels(session)


def test_views_past_the_kept_walks_each_get_deltas(session: SessionManager, clock: Clock) -> None:
    """More views than walks kept (their walks push each other out, every one made anew per turn):
    each view still gets a delta while its replies are kept."""
    views = [{"filter": mode} for mode in ("default", "no-tools", "user-only", "all")]
    held = [levels(session, **view) for view in views]
    for n in range(3):
        _turn(session, n)
        methods_read._tree_shapes.forget(session)  # (as if a fifth view's walks pushed them out)
        for at, view in enumerate(views):
            delta = levels(session, since=held[at]["revision"], **view)
            held[at] = take(held[at], delta)
            assert held[at] == levels(session, **view), (n, view)


def test_replies_kept_share_their_levels_when_walks_are_made_anew(
    session: SessionManager, clock: Clock
) -> None:
    """The replies a delta starts from are kept while the session is open: each kept once, however
    often the walk (which encodes every level anew) was made again."""
    held = levels(session)
    for n in range(3):
        _idle(clock, 2 * tree_pages.IDLE_SECONDS)
        _turn(session, n)
        held = take(held, levels(session, since=held["revision"]))
    (kept,) = tree_since._sent._sessions[session].values()
    replies = list(kept.values())
    assert len(replies) == 4
    for before, after in itertools.pairwise(replies):
        same = [(now, then) for now, then in zip(after.levels, before.levels, strict=False) if now == then]
        assert len(same) > len(after.levels) // 2
        assert all(now is then for now, then in same)


def test_a_branch_that_moves_more_rows_than_the_bound_answers_reload(
    session: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A branch far up a long session would name as many rows as the levels hold: loaded anew."""
    held = levels(session)
    old_path = [entry.id for entry in session.get_branch()]
    session.branch(old_path[-6])
    _turn(session, 1)
    monkeypatch.setattr(tree_held, "MOST_MOVED_ROWS", 4)
    assert levels(session, since=held["revision"])["reload"] is True
    monkeypatch.setattr(tree_held, "MOST_MOVED_ROWS", 5)
    delta = levels(session, since=held["revision"])
    assert delta["leftLeafPath"] == old_path[-5:] and delta["joinedLeafPath"] == []
    assert take(held, {k: v for k, v in delta.items() if "LeafPath" not in k}) == levels(session)


def _flat(m: SessionManager, **params: Any) -> list[dict[str, Any]]:
    p = P.parse({"session": "s", "form": "flat", **params}, P.GetTreeParams)
    nodes: list[dict[str, Any]] = json.loads(bytes(methods_read._tree_reply(m, p)))["nodes"]
    return nodes


def _lists(m: SessionManager, held: dict[str, Any], **view: Any) -> list[list[dict[str, Any]]]:
    """The whole list of each level (its window without a limit)."""
    windows = ({k: level[k] for k in ("rootId", "chain", "depth") if k in level} for level in held["levels"])
    return [_flat(m, **view, **window) for window in windows]


def _hung_under(levels: list[dict[str, Any]]) -> list[str]:
    """The row each level's list hangs under (the row on the path one level up; the top's: none)."""
    rows = [level["nodes"][level["aroundIndex"] - level["offset"]]["id"] for level in levels[:-1]]
    return [json.dumps(None), *map(json.dumps, rows)]


def _below_stale(rows: dict[str, dict[str, Any]], stale: set[str]) -> set[str]:
    """The rows that hang (through their shown parents) below one of the rows ``stale``."""
    below = set()
    for key in rows:
        seen, at = set(), key
        while at in rows and at not in seen:
            seen.add(at)
            at = json.dumps(rows[at].get("visibleParentId"))
            if at in stale:
                below.add(key)
                break
    return below


def _moved_leaf(m: SessionManager, rnd: random.Random) -> None:
    """The leaf moved with nothing appended: to an older entry (the editor's tree view, pi's /tree
    before its turn), back up its own path, down to a descendant, or reset."""
    entries = m.get_entries()
    path = m.get_branch()
    how = rnd.random()
    if how < 0.5 or not path:
        m.branch(rnd.choice(entries).id)
    elif how < 0.75:
        m.branch(path[rnd.randrange(len(path))].id)
    elif how < 0.95:
        below = [e for e in entries if e.parent_id == path[-1].id]
        m.branch((rnd.choice(below) if below else rnd.choice(entries)).id)
    else:
        m.reset_leaf()


class HeldRows:
    """The rows a view holds outside the levels (here: every row of the tree, as if opened), changed
    by a delta as the editors change them: the stale lists dropped, the lists sent again replaced,
    the leaf's marks and the labels changed by id."""

    def __init__(self, m: SessionManager, held: dict[str, Any], view: dict[str, Any]) -> None:
        self.rows = {json.dumps(row["id"]): row for row in _flat(m, **view)}
        self.lists = _lists(m, held, **view)

    def take(
        self, m: SessionManager, before: dict[str, Any], delta: dict[str, Any], view: dict[str, Any]
    ) -> None:
        stale = {json.dumps(entry_id) for entry_id in delta.get("staleLists", [])}
        for key in _below_stale(self.rows, stale):
            del self.rows[key]
        kept = delta["keptLevels"]
        now = [*before["levels"][:kept], *delta["levels"]]
        lists = _lists(m, {"levels": now}, **view)
        resent = set(_hung_under(now)[kept:])
        held = zip(_hung_under(before["levels"])[kept:], self.lists[kept:], strict=True)
        for rows in [*(rows for under, rows in held if under in resent), *lists[kept:]]:
            for row in rows:
                self.rows.pop(json.dumps(row["id"]), None)
        self.lists = lists
        for entry_id in delta.get("leftLeafPath", []):
            self.rows.get(json.dumps(entry_id), {}).update(onLeafPath=False, isLeaf=False)
        for entry_id in delta.get("joinedLeafPath", []):
            self.rows.get(json.dumps(entry_id), {}).update(onLeafPath=True)
        for changed in delta.get("relabelled", []):
            row = self.rows.get(json.dumps(changed["id"]), {})
            row.pop("label", None)
            row.pop("labelTimestamp", None)
            row.update({k: v for k, v in changed.items() if k != "id"})

    def check(self, m: SessionManager, view: dict[str, Any]) -> None:
        """What the view holds is what a fresh load shows; then it opens the rows it lacks."""
        fresh = {json.dumps(row["id"]): row for row in _flat(m, **view)}
        for key, row in self.rows.items():
            assert {k: row.get(k) for k in _FACTS} == {k: fresh[key].get(k) for k in _FACTS}, key
        self.rows = {**fresh, **self.rows}


_FACTS = ("parentId", "childIds", "label", "labelTimestamp", "isLeaf", "onLeafPath", "isBranchPoint")


@pytest.mark.parametrize(
    "view",
    [
        {"filter": "default"},
        {"filter": "no-tools"},
        {"filter": "user-only"},
        {"filter": "all"},
        {"filter": "labeled-only"},
        {"filter": "default", "search": "n"},
    ],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_leaf_moves_without_appends_are_deltas_equal_to_a_fresh_load(
    session: SessionManager, view: dict[str, Any], seed: int
) -> None:
    """pi/branch, pi/resetLeaf (the leaf moved, nothing appended), interleaved with turns and labels:
    each a delta, and the levels and the rows the view holds outside them are what a fresh load
    gives."""
    rnd = random.Random(seed)
    view = {**view, "activeBranchFirst": True}  # (as the editors' views ask: the path's branch first)
    held = levels(session, **view)
    rows = HeldRows(session, held, view)
    moves = 0
    for n in range(24):
        what = rnd.random()
        if what < 0.6 or session.get_leaf_id() is None:  # (an append then would start a new root)
            _moved_leaf(session, rnd)
            moves += 1
        elif what < 0.8:
            _turn(session, 1000 + n)
        else:
            target = rnd.choice(session.get_entries()).id
            session.append_label_change(target, rnd.choice(["mark", None]))
        if session.get_leaf_id() is None:  # (reset: the view's levels go down to a row it showed)
            view.setdefault("aroundId", held["levels"][-1]["nodes"][0]["id"])
        else:
            view.pop("aroundId", None)
        delta = levels(session, since=held["revision"], **view)
        assert "reload" not in delta, n
        rows.take(session, held, delta, view)
        plain = {k: v for k, v in delta.items() if k not in ("leftLeafPath", "joinedLeafPath", "staleLists")}
        held = take(held, plain)
        assert held == levels(session, **view), n
        rows.check(session, view)
    assert moves


def test_a_leaf_moved_alone_names_the_rows_that_left_or_joined_the_path(session: SessionManager) -> None:
    """pi/branch up the leaf's own path, pi/resetLeaf, then pi/branch from no leaf: each a delta
    that names the rows off the path now, or on it now (from no leaf: every shown row of the path)."""
    held = levels(session)
    old_path = [entry.id for entry in session.get_branch()]
    session.branch(old_path[-4])
    delta = levels(session, since=held["revision"])
    assert delta["leftLeafPath"] == old_path[-3:] and delta["joinedLeafPath"] == []
    assert delta["keptLevels"] == len(held["levels"]) - 1
    plain = {k: v for k, v in delta.items() if k not in ("leftLeafPath", "joinedLeafPath", "staleLists")}
    assert take(held, plain) == levels(session)
    shown = {json.dumps(row["id"]) for row in _flat(session)}
    on_path = [entry.id for entry in session.get_branch() if json.dumps(entry.id) in shown]
    session.reset_leaf()
    around = {"aroundId": old_path[-4]}  # (no leaf: the view's levels go down to a row it shows)
    reset = levels(session, since=delta["revision"], **around)
    assert reset["leftLeafPath"] == on_path and reset["joinedLeafPath"] == []
    session.branch(old_path[-1])
    delta = levels(session, since=reset["revision"], **around)
    on_path = [entry.id for entry in session.get_branch() if json.dumps(entry.id) in shown]
    assert delta["leftLeafPath"] == [] and delta["joinedLeafPath"] == on_path
