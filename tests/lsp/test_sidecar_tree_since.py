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

    def take(self, delta: dict[str, Any], resent_lists: list[list[dict[str, Any]]]) -> None:
        """A delta reply: the levels after the kept ones replace the view's (with what it held of
        their lists), the relabelled rows are changed wherever held."""
        kept = delta["keptLevels"]
        if self.lists is not None:
            resent_lists = [*self.lists[kept:], *resent_lists]
        self.levels = self.levels[:kept] + delta["levels"]
        self.revision = delta["revision"]
        self.reply = {k: v for k, v in delta.items() if k not in ("keptLevels", "relabelled")}
        self.reply["levels"] = self.levels
        for rows in resent_lists:
            for row in rows:
                self.rows.pop(json.dumps(row["id"]), None)
        for changed in delta.get("relabelled", []):
            held = [self.rows.get(json.dumps(changed["id"]))]
            held += [row for level in self.levels for row in level["nodes"] if row["id"] == changed["id"]]
            for row in held:
                if row is None:
                    continue
                row.pop("label", None)
                row.pop("labelTimestamp", None)
                row.update({k: v for k, v in changed.items() if k != "id"})


async def _fresh(
    sidecar: Sidecar, path: Path, tmp_path: Path, round_: int, view: dict[str, Any], leaf: str
) -> Any:
    """The levels and the whole tree as a client that loads anew gets them: from a copy of the file,
    opened for this (nothing kept of the session followed)."""
    copy = tmp_path / f"fresh-{round_}-{view['filter']}.jsonl"
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


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_levels_since_after_appends_equal_a_fresh_load(sidecar, tmp_path, seed):
    rnd = random.Random(seed)
    lines, ids = _random_session(rnd, 40)
    # views of other filters of one session, their requests interleaved (two editors' tree views)
    groups = (("default", "no-tools", "none"), ("user-only", "all"))
    views = [
        {"filter": mode, "form": "flat", "activeBranchFirst": True} for group in groups for mode in group
    ]
    paths = {mode: tmp_path / f"live-{n}.jsonl" for n, group in enumerate(groups) for mode in group}
    for path in set(paths.values()):
        path.write_text("\n".join(lines) + "\n")
    held: dict[str, HeldView] = {}
    leaf = ids[-1]
    for view in views:
        path = paths[view["filter"]]
        base = {"uri": path.as_uri(), **view}
        levels = await sidecar.request(
            "pi/getTree", {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS}
        )
        whole = await sidecar.request("pi/getTree", base)
        held[view["filter"]] = HeldView(levels, whole["nodes"])
        fresh_base, _levels, _whole = await _fresh(sidecar, path, tmp_path, -1, view, leaf)
        held[view["filter"]].lists = await _lists(sidecar, fresh_base, levels)
    deltas = 0
    for round_ in range(8):
        new = []
        for _ in range(rnd.randint(1, 4)):
            entry_id = f"a{round_}{len(new)}{len(ids):04d}"
            new.append(_random_entry(rnd, entry_id, leaf if not new else ids[-1], ids))
            ids.append(entry_id)
            leaf = entry_id
        for path in set(paths.values()):
            _append(path, new)
            assert await _appended(sidecar, path, ids[-1]) == leaf
        for view in views:
            path = paths[view["filter"]]
            mine = held[view["filter"]]
            base = {"uri": path.as_uri(), **view}
            delta = await sidecar.request(
                "pi/getTree",
                {**base, "levels": True, "aroundId": leaf, "limit": LEVEL_ROWS, "since": mine.revision},
            )
            assert "reload" not in delta, (round_, view)  # appended below the leaf: always a delta
            assert delta["keptLevels"] <= len(mine.levels)
            fresh_base, fresh_levels, fresh_whole = await _fresh(sidecar, path, tmp_path, round_, view, leaf)
            lists = await _lists(sidecar, fresh_base, fresh_levels)
            mine.take(delta, lists[delta["keptLevels"] :])
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


async def test_not_an_append_below_the_leaf_answers_reload(sidecar, tmp_path):
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
    # a branch to an older entry, then a turn there (pi's /tree): the old leaf's path changed
    _append(path, [S.user("b1", "a1", "other way")])
    leaf = await _appended(sidecar, path, "b1")
    reply = await levels(leaf, since=held["revision"])
    assert reply["reload"] is True and reply["revision"] != held["revision"]
    held = await levels(leaf)
    # a rewrite: the file made anew with other entries
    path.write_text("\n".join([*lines[:3], S.user("r1", "a1", "rewritten")]) + "\n")
    change = await sidecar.wait_for("pi/didChange", lambda p: p.get("kind") != "appended")
    assert change["uri"] == path.as_uri()
    reply = await levels("r1", since=held["revision"])
    assert reply["reload"] is True
    # a label that shows a row in a filter that reads labels
    held = await levels("r1", filter="labeled-only")
    _append(path, [S.label("l1", "r1", "u1", "now shown")])
    leaf = await _appended(sidecar, path, "l1")
    assert (await levels(leaf, filter="labeled-only", since=held["revision"]))["reload"] is True


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
