"""pi/getTree ``levels`` with ``since`` over the wire: a tree view following a session another
program appends to gets what changed, and what it then holds is what a fresh load shows."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import builders as S
import pytest
from sidecar_support import RpcFailure, Sidecar, sidecar_fixture  # noqa: F401  (fixture)

LEVEL_ROWS = 3  # few rows per level: most of a small session's rows are outside the pages


def _random_session(rnd: random.Random, entries: int) -> tuple[list[str], list[str]]:
    """(the lines, the ids): a tree whose entries mostly continue the one before, some branching
    from an older one; the last line is the leaf."""
    lines, ids = [S.header()], []
    for n in range(entries):
        entry_id = f"e{n:04d}"
        parent = None if not ids else ids[-1] if rnd.random() < 0.8 else rnd.choice(ids)
        lines.append(_random_entry(rnd, entry_id, parent, ids))
        ids.append(entry_id)
    return lines, ids


def _random_entry(rnd: random.Random, entry_id: str, parent: str | None, older: list[str]) -> str:
    """An entry of any kind pi writes (messages of each role, labels set and cleared, a name,
    settings entries, summaries); tool results name a call of an older assistant message or none."""
    kind = rnd.choice(
        ["user", "assistant", "calls", "result", "label", "unlabel", "name", "model", "compaction", "summary"]
    )
    target = rnd.choice(older) if older else entry_id
    if kind == "user":
        return S.user(entry_id, parent, f"question {entry_id}")
    if kind == "assistant":
        return S.assistant(
            entry_id, parent, f"answer {entry_id}", thinking="hmm" if rnd.random() < 0.3 else None
        )
    if kind == "calls":
        return S.assistant(
            entry_id, parent, "", calls=((f"call-{entry_id}", "bash", {"command": f"ls {entry_id}"}),)
        )
    if kind == "result":
        calls = [f"call-{e}" for e in older[-4:]] or ["call-none"]
        return S.tool_result(entry_id, parent, rnd.choice(calls), f"out {entry_id}", name="bash")
    if kind == "label":
        return S.label(entry_id, parent, target, f"mark {entry_id}")
    if kind == "unlabel":
        return S.label(entry_id, parent, target, None)
    if kind == "name":
        return S.session_info(entry_id, parent, f"name {entry_id}")
    if kind == "model":
        return S.model_change(entry_id, parent, model_id=f"m-{entry_id}")
    if kind == "compaction":
        return S.compaction(entry_id, parent, target)
    return S.branch_summary(entry_id, parent, target)


def _append(path: Path, lines: list[str]) -> None:
    """As pi appends: whole lines, one write each."""
    with path.open("a", encoding="utf-8") as file:
        for line in lines:
            file.write(line + "\n")
            file.flush()


async def _appended(sidecar: Sidecar, path: Path, last_id: str) -> str:
    """Until the sidecar took in the lines appended up to ``last_id``; the leaf then."""
    change = await sidecar.wait_for(
        "pi/didChange", lambda p: p.get("uri") == path.as_uri() and last_id in p.get("newEntryIds", [])
    )
    return str(change["leafId"])


class HeldView:
    """What a tree view holds: the levels down to the leaf (each level's page), and rows of its
    lists outside them (a scrolled list, an opened branch: here the whole tree's rows)."""

    def __init__(self, levels: dict[str, Any], whole: list[dict[str, Any]]) -> None:
        self.reply = levels
        self.levels: list[dict[str, Any]] = levels["levels"]
        self.revision: str = levels["revision"]
        self.rows = {json.dumps(row["id"]): row for row in whole}
        self.lists: list[list[dict[str, Any]]] | None = None  # each level's whole list, when known

    def take(
        self,
        delta: dict[str, Any],
        resent_lists: list[list[dict[str, Any]]],
        shown_parents: dict[str, Any],
    ) -> None:
        """A delta reply: the stale lists go (every row below the row each hangs under, as the view
        held them: ``shown_parents``, each row's shown parent then), the levels after the kept ones
        replace the view's (with what it held of their lists), the relabelled rows and those whose
        place on the leaf's path changed are changed wherever held."""
        stale = {json.dumps(entry_id) for entry_id in delta.get("staleLists", [])}
        for key in [key for key in self.rows if _below_any(key, stale, shown_parents)]:
            del self.rows[key]
        kept = delta["keptLevels"]
        if self.lists is not None:  # a list sent again replaces what the view held of it
            resent = set(_hung_under([*self.levels[:kept], *delta["levels"]])[kept:])
            held_lists = zip(_hung_under(self.levels)[kept:], self.lists[kept:], strict=True)
            resent_lists = [*(rows for under, rows in held_lists if under in resent), *resent_lists]
        self.levels = self.levels[:kept] + delta["levels"]
        self.revision = delta["revision"]
        self.reply = {k: v for k, v in delta.items() if k not in DELTA_MEMBERS}
        self.reply["levels"] = self.levels
        for rows in resent_lists:
            for row in rows:
                self.rows.pop(json.dumps(row["id"]), None)
        self._mark(delta)

    def _mark(self, delta: dict[str, Any]) -> None:
        """The rows of a delta's ``relabelled``, ``leftLeafPath`` and ``joinedLeafPath`` changed
        wherever held."""
        for changed in delta.get("relabelled", []):
            held = [self.rows.get(json.dumps(changed["id"]))]
            held += [row for level in self.levels for row in level["nodes"] if row["id"] == changed["id"]]
            for row in held:
                if row is None:
                    continue
                row.pop("label", None)
                row.pop("labelTimestamp", None)
                row.update({k: v for k, v in changed.items() if k != "id"})
        for entry_id in delta.get("leftLeafPath", []):
            row = self.rows.get(json.dumps(entry_id))
            if row is not None:
                row.update(onLeafPath=False, isLeaf=False)
        for entry_id in delta.get("joinedLeafPath", []):
            row = self.rows.get(json.dumps(entry_id))
            if row is not None:
                row["onLeafPath"] = True


def _hung_under(levels: list[dict[str, Any]]) -> list[str]:
    """The row each level's list hangs under in the view (the row on the path one level up), the
    top list's None: a list sent again replaces what the view held under its row, the lists of a
    path that left the leaf's path stay held under theirs."""
    rows = [level["nodes"][level["aroundIndex"] - level["offset"]]["id"] for level in levels[:-1]]
    return [json.dumps(None), *map(json.dumps, rows)]


DELTA_MEMBERS = ("keptLevels", "relabelled", "leftLeafPath", "joinedLeafPath", "staleLists")


def _below_any(key: str, stale: set[str], shown_parents: dict[str, Any]) -> bool:
    """Whether the row of ``key`` hangs below one of the rows ``stale`` (keys), in a tree whose rows'
    shown parents are ``shown_parents``."""
    seen = set()
    while key in shown_parents and key not in seen:
        seen.add(key)
        key = json.dumps(shown_parents[key])
        if key in stale:
            return True
    return False


def _shown_parents(whole: list[dict[str, Any]]) -> dict[str, Any]:
    return {json.dumps(row["id"]): row.get("visibleParentId") for row in whole}


async def _fresh(
    sidecar: Sidecar, path: Path, tmp_path: Path, round_: int, view: dict[str, Any], leaf: str
) -> Any:
    """The levels and the whole tree as a client that loads anew gets them: from a copy of the file,
    opened for this (nothing kept of the session followed)."""
    copy = tmp_path / f"fresh-{round_}-{_name(view)}.jsonl"
    shutil.copyfile(path, copy)
    base = {"uri": copy.as_uri(), **view}
    levels = await sidecar.request(
        "pi/getTree", {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS}
    )
    whole = await sidecar.request("pi/getTree", base)
    return base, levels, whole["nodes"]


async def _lists(
    sidecar: Sidecar, base: dict[str, Any], levels: dict[str, Any]
) -> list[list[dict[str, Any]]]:
    """The whole list of each level (its window without a limit)."""
    lists = []
    for level in levels["levels"]:
        window = {k: level[k] for k in ("rootId", "chain", "depth") if k in level}
        lists.append((await sidecar.request("pi/getTree", {**base, **window}))["nodes"])
    return lists


def _without_revision(reply: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in reply.items() if k != "revision"}


FACTS = (
    "parentId",
    "childIds",
    "type",
    "role",
    "label",
    "labelTimestamp",
    "preview",
    "timestamp",
    "line",
    "isLeaf",
    "onLeafPath",
    "isBranchPoint",
)


def _name(view: dict[str, Any]) -> str:
    return f"{view['filter']}-{view.get('search', '')}"


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
async def test_levels_since_after_appends_equal_a_fresh_load(sidecar, tmp_path, seed):
    """Turns pi appends below the leaf, and branches to an older entry with a turn there (pi's
    /tree), labels set and cleared, in views of every filter (those that read labels too)."""
    rnd = random.Random(seed)
    lines, ids = _random_session(rnd, 40)
    # views of other filters of one session, their requests interleaved (two editors' tree views)
    groups = (
        ({"filter": "default"}, {"filter": "no-tools"}, {"filter": "none"}),
        ({"filter": "user-only"}, {"filter": "all"}),
        ({"filter": "labeled-only"}, {"filter": "default", "search": "mark"}),
    )
    views = [{**view, "form": "flat", "activeBranchFirst": True} for group in groups for view in group]
    paths = {_name(view): tmp_path / f"live-{n}.jsonl" for n, group in enumerate(groups) for view in group}
    for path in set(paths.values()):
        path.write_text("\n".join(lines) + "\n")
    held: dict[str, HeldView] = {}
    parents: dict[str, dict[str, Any]] = {}
    leaf = ids[-1]
    for view in views:
        path = paths[_name(view)]
        base = {"uri": path.as_uri(), **view}
        levels = await sidecar.request(
            "pi/getTree", {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS}
        )
        whole = await sidecar.request("pi/getTree", base)
        held[_name(view)] = HeldView(levels, whole["nodes"])
        parents[_name(view)] = _shown_parents(whole["nodes"])
        fresh_base, _levels, _whole = await _fresh(sidecar, path, tmp_path, -1, view, leaf)
        held[_name(view)].lists = await _lists(sidecar, fresh_base, levels)
    deltas = moves = 0
    for round_ in range(8):
        new = []
        # now and then pi's /tree first: the turn goes below an older entry
        below = rnd.choice(ids) if rnd.random() < 0.4 else leaf
        moves += below != leaf
        for _ in range(rnd.randint(1, 4)):
            entry_id = f"a{round_}{len(new)}{len(ids):04d}"
            new.append(_random_entry(rnd, entry_id, below if not new else ids[-1], ids))
            ids.append(entry_id)
            leaf = entry_id
        for path in set(paths.values()):
            _append(path, new)
            assert await _appended(sidecar, path, ids[-1]) == leaf
        for view in views:
            path = paths[_name(view)]
            mine = held[_name(view)]
            base = {"uri": path.as_uri(), **view}
            delta = await sidecar.request(
                "pi/getTree",
                {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS, "since": mine.revision},
            )
            assert "reload" not in delta, (round_, view)  # appended below an older entry: always a delta
            assert delta["keptLevels"] <= len(mine.levels)
            fresh_base, fresh_levels, fresh_whole = await _fresh(sidecar, path, tmp_path, round_, view, leaf)
            lists = await _lists(sidecar, fresh_base, fresh_levels)
            mine.take(delta, lists[delta["keptLevels"] :], parents[_name(view)])
            parents[_name(view)] = _shown_parents(fresh_whole)
            mine.lists = lists
            assert _without_revision(mine.reply) == _without_revision(fresh_levels), (round_, view)
            fresh_rows = {json.dumps(row["id"]): row for row in fresh_whole}
            for key, row in mine.rows.items():  # the older rows held outside the levels sent
                assert {k: row.get(k) for k in FACTS} == {k: fresh_rows[key].get(k) for k in FACTS}, (
                    round_,
                    view,
                    key,
                )
            for key, row in fresh_rows.items():
                mine.rows.setdefault(key, row)  # (the view opens the new rows as it shows them)
            deltas += 1
    assert deltas == 8 * len(views)
    assert moves


async def test_a_delta_is_small_and_leaves_out_the_levels_the_view_holds(sidecar, tmp_path):
    lines, ids = [S.header()], []
    for n in range(300):  # branch points all the way down: many levels
        entry_id = f"e{n:04d}"
        lines.append(S.user(entry_id, ids[-1] if ids else None, f"q {n}"))
        if n % 3 == 0 and ids:
            lines.append(S.user(f"s{n:04d}", ids[-1], "side"))
        ids.append(entry_id)
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    base = {"uri": path.as_uri(), "levels": True, "limit": LEVEL_ROWS, "activeBranchFirst": True}
    full = await sidecar.request("pi/getTree", {**base, "aroundId": ids[-1]})
    assert len(full["levels"]) > 100
    _append(path, [S.assistant("new00001", ids[-1], "answer"), S.user("new00002", "new00001", "more")])
    leaf = await _appended(sidecar, path, "new00002")
    delta = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": full["revision"]})
    # a turn: only the leaf's level changed (its new rows, the old leaf's)
    assert delta["keptLevels"] == len(full["levels"]) - 1 and len(delta["levels"]) == 1
    assert "relabelled" not in delta
    assert [row["id"] for row in delta["levels"][0]["nodes"]][-2:] == ["new00001", "new00002"]
    assert len(json.dumps(delta)) * 50 < len(json.dumps(full))
    again = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": delta["revision"]})
    assert again["keptLevels"] == len(full["levels"]) and again["levels"] == [] and "relabelled" not in again
    # a label of an older entry, set then cleared: its row, wherever the view holds it
    label = S.label("new00003", leaf, "e0001", "here")
    _append(path, [label])
    leaf = await _appended(sidecar, path, "new00003")
    labelled = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": again["revision"]})
    stamp = json.loads(label)["timestamp"]
    assert labelled["relabelled"] == [{"id": "e0001", "label": "here", "labelTimestamp": stamp}]
    # (the top level shows the row: kept all the same, its row relabelled where the view holds it)
    assert labelled["keptLevels"] >= len(full["levels"]) - 1
    _append(path, [S.label("new00004", leaf, "e0001", None)])
    leaf = await _appended(sidecar, path, "new00004")
    cleared = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": labelled["revision"]})
    assert cleared["relabelled"] == [{"id": "e0001"}]
    assert cleared["keptLevels"] >= len(full["levels"]) - 1
    # a label of the path's row in a level half way down: the levels below it are not sent again
    middle = full["levels"][len(full["levels"]) // 2]
    target = middle["nodes"][middle["aroundIndex"] - middle["offset"]]["id"]
    _append(path, [S.label("new00005", leaf, target, "middle")])
    leaf = await _appended(sidecar, path, "new00005")
    mid = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": cleared["revision"]})
    assert [row["id"] for row in mid["relabelled"]] == [target]
    assert mid["keptLevels"] >= len(full["levels"]) - 1
    assert len(json.dumps(mid)) * 50 < len(json.dumps(full))


async def test_a_rewrite_or_a_revision_not_kept_answers_reload(sidecar, tmp_path):
    lines = [
        S.header(),
        S.user("u1", None),
        S.assistant("a1", "u1"),
        S.user("u2", "a1"),
        S.assistant("a2", "u2"),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    base = {"uri": path.as_uri(), "levels": True, "limit": LEVEL_ROWS}

    async def levels(around: str, **more: Any) -> Any:
        return await sidecar.request("pi/getTree", {**base, "aroundId": around, **more})

    held = await levels("a2")
    unknown = await levels("a2", since="not-a-revision")
    assert unknown == {"reload": True, "revision": held["revision"]}
    # a branch to an older entry, then a turn there (pi's /tree): the rows that left the path
    _append(path, [S.user("b1", "a1", "other way")])
    leaf = await _appended(sidecar, path, "b1")
    reply = await levels(leaf, since=held["revision"])
    assert reply["leftLeafPath"] == ["u2", "a2"] and reply["joinedLeafPath"] == []
    held = await levels(leaf)
    # a rewrite: the file made anew with other entries
    path.write_text("\n".join([*lines[:3], S.user("r1", "a1", "rewritten")]) + "\n")
    change = await sidecar.wait_for("pi/didChange", lambda p: p.get("kind") != "appended")
    assert change["uri"] == path.as_uri()
    reply = await levels("r1", since=held["revision"])
    assert reply["reload"] is True


async def test_a_branch_to_an_older_entry_names_the_rows_that_left_the_path(sidecar, tmp_path):
    """pi's /tree, then a turn there: the levels above the branch point are kept, the rows that
    left the leaf's path are named, and the list that held the old leaf, a silent turn the filter
    showed while it was the leaf, is stale."""
    lines = [
        S.header(),
        S.user("u1", None),
        S.user("s1", "u1", "aside"),
        S.assistant("a1", "u1"),
        S.user("y1", "a1", "the other way"),
        S.user("x1", "a1"),
        S.assistant("x2", "x1"),
        S.user("x3", "x2"),
        S.assistant("a2", "x3", ""),  # a turn without text: shown while it is the leaf
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    base = {"uri": path.as_uri(), "levels": True, "limit": LEVEL_ROWS, "activeBranchFirst": True}
    base["filter"] = "default"
    held = await sidecar.request("pi/getTree", {**base, "aroundId": "a2"})
    assert [row["id"] for row in held["levels"][-1]["nodes"]] == ["x2", "x3", "a2"]
    _append(path, [S.assistant("y2", "y1")])
    leaf = await _appended(sidecar, path, "y2")
    delta = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": held["revision"]})
    # the top list (u1) is kept; u1's branches are sent again (a1's row lists its own in another order)
    assert delta["keptLevels"] == 1
    assert [row["id"] for row in delta["levels"][1]["nodes"]] == ["a1", "y1", "x1"]
    assert delta["leftLeafPath"] == ["x1", "x2", "x3"] and delta["joinedLeafPath"] == ["y1"]
    # a2 is hidden now: the chain under x1 (x3's row with it) is dropped, loaded anew when opened
    assert delta["staleLists"] == ["x3", "x1"]


async def test_a_label_that_shows_a_row_names_the_lists_around_it(sidecar, tmp_path):
    """In a filter that reads labels a label shows or hides a row: the lists that hold the rows
    around it (its shown parent's, the one that holds that parent) are named stale."""
    lines = [S.header(), S.user("u1", None), S.label("l1", "u1", "u1", "top")]
    for n in range(2, 8):
        lines.append(S.user(f"u{n}", f"u{n - 1}" if n > 2 else "l1"))
    lines.append(S.label("l2", "u7", "u3", "shown"))
    lines.append(S.user("side", "u3", "a branch"))
    lines.append(S.label("l3", "side", "side", "side"))
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    base = {"uri": path.as_uri(), "levels": True, "limit": LEVEL_ROWS, "filter": "labeled-only"}
    held = await sidecar.request("pi/getTree", {**base, "aroundId": "l3"})
    _append(path, [S.label("l4", "l3", "u5", "now shown")])
    leaf = await _appended(sidecar, path, "l4")
    delta = await sidecar.request("pi/getTree", {**base, "aroundId": leaf, "since": held["revision"]})
    assert "reload" not in delta
    assert [row["id"] for row in delta["relabelled"]] == ["u5"]
    # u3 (u1's chain, the top list) shows two branches now, u5 and side: the list under u3 and the
    # one that holds it (a root's: the chain under it, or the top list, sent again) are stale
    assert delta["staleLists"] == ["u3", "u1"]
    assert delta["keptLevels"] == 0
    assert [row["id"] for row in delta["levels"][0]["nodes"]] == ["u1", "u3"]
    assert [row["id"] for row in delta["levels"][1]["nodes"]] == ["u3", "u5", "side"]


async def test_since_is_of_levels_alone(sidecar, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([S.header(), S.user("u1", None)]) + "\n")
    for params in (
        {"since": "1"},
        {"since": "1", "aroundId": "u1", "limit": 2},
        {"since": "1", "levels": True, "aroundId": "u1", "revision": "1"},
        {"since": 3, "levels": True, "aroundId": "u1"},
    ):
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getTree", {"uri": path.as_uri(), **params})
        assert failure.value.code == -32602, params


async def _fresh_at(
    sidecar: Sidecar, path: Path, tmp_path: Path, round_: int, view: dict[str, Any], leaf: Any, around: str
) -> Any:
    """:func:`_fresh` of a session whose leaf is ``leaf`` (moved from the file's last entry, or none),
    its levels down to ``around``."""
    copy = tmp_path / f"fresh-{round_}-{_name(view)}.jsonl"
    shutil.copyfile(path, copy)
    base = {"uri": copy.as_uri(), **view}
    if leaf is None:
        await sidecar.request("pi/resetLeaf", {"uri": copy.as_uri()})
    else:
        await sidecar.request("pi/branch", {"uri": copy.as_uri(), "entryId": leaf})
    levels = await sidecar.request(
        "pi/getTree", {**base, "levels": True, "aroundId": around, "limit": LEVEL_ROWS}
    )
    whole = await sidecar.request("pi/getTree", base)
    return base, levels, whole["nodes"]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_leaf_moves_without_appends_equal_a_fresh_load(sidecar, tmp_path, seed):
    """The editor's tree view picks an older entry (pi/branch), the leaf is reset (pi/resetLeaf), a
    branch is summarized (pi/branchWithSummary), between turns another program appends: each is a
    delta to every view of the session (of filters that read labels too), and what the view then
    holds is what a fresh load of the session with that leaf shows."""
    rnd = random.Random(seed)
    lines, ids = _random_session(rnd, 40)
    views = [
        {"filter": mode, "form": "flat", "activeBranchFirst": True, **more}
        for mode, more in (
            ("default", {}),
            ("no-tools", {}),
            ("labeled-only", {}),
            ("default", {"search": "mark"}),
        )
    ]
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join(lines) + "\n")
    uri = path.as_uri()
    leaf: Any = ids[-1]
    around = leaf
    held: dict[str, HeldView] = {}
    parents: dict[str, dict[str, Any]] = {}
    for view in views:
        base = {"uri": uri, **view}
        levels = await sidecar.request(
            "pi/getTree", {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS}
        )
        whole = await sidecar.request("pi/getTree", base)
        held[_name(view)] = HeldView(levels, whole["nodes"])
        parents[_name(view)] = _shown_parents(whole["nodes"])
        fresh_base, _levels, _whole = await _fresh_at(sidecar, path, tmp_path, -1, view, leaf, leaf)
        held[_name(view)].lists = await _lists(sidecar, fresh_base, levels)
    kinds = set()
    for round_ in range(10):
        kind = rnd.choice(["branch", "branch", "branch", "reset", "summary", "turn"])
        if leaf is None and kind in ("turn", "summary"):
            kind = "branch"  # (an append with no leaf starts a new root: loaded anew)
        kinds.add(kind)
        if kind == "branch":
            leaf = (await sidecar.request("pi/branch", {"uri": uri, "entryId": rnd.choice(ids)}))["leafId"]
        elif kind == "reset":
            leaf = (await sidecar.request("pi/resetLeaf", {"uri": uri}))["leafId"]
            assert leaf is None
        elif kind == "summary":
            summary = await sidecar.request(
                "pi/branchWithSummary", {"uri": uri, "branchFromId": rnd.choice(ids), "summary": "went back"}
            )
            leaf = summary["id"]
            ids.append(leaf)
        else:
            entry_id = f"t{round_:04d}"
            _append(path, [S.user(entry_id, leaf, f"question {entry_id}")])
            leaf = await _appended(sidecar, path, entry_id)
            ids.append(entry_id)
        around = around if leaf is None else leaf  # (no leaf: the view stays on the row it showed)
        for view in views:
            mine = held[_name(view)]
            base = {"uri": uri, **view}
            delta = await sidecar.request(
                "pi/getTree",
                {**base, "levels": True, "aroundId": around, "limit": LEVEL_ROWS, "since": mine.revision},
            )
            assert "reload" not in delta, (round_, kind, view)
            fresh_base, fresh_levels, fresh_whole = await _fresh_at(
                sidecar, path, tmp_path, round_, view, leaf, around
            )
            lists = await _lists(sidecar, fresh_base, fresh_levels)
            mine.take(delta, lists[delta["keptLevels"] :], parents[_name(view)])
            parents[_name(view)] = _shown_parents(fresh_whole)
            mine.lists = lists
            assert _without_revision(mine.reply) == _without_revision(fresh_levels), (round_, kind, view)
            fresh_rows = {json.dumps(row["id"]): row for row in fresh_whole}
            for key, row in mine.rows.items():
                assert {k: row.get(k) for k in FACTS} == {k: fresh_rows[key].get(k) for k in FACTS}, (
                    round_,
                    kind,
                    view,
                    key,
                )
            for key, row in fresh_rows.items():
                mine.rows.setdefault(key, row)
    assert "branch" in kinds
