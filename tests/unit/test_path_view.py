"""What the session viewer and the lazy tree views read: pi/getPath pages (server/path_view.py),
pi/getStats (server/session_stats.py) and pi/getTree's ``chain`` and ``aroundId`` windows
(server/tree_window.py, tree_flat_form.py, tree_levels.py), on the pure functions and the example session."""

from __future__ import annotations

import gc
import itertools
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE, random_session

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server import path_view, session_stats
from pi_session_server.server.tree_flat_form import encode_flat_page, window_tree
from pi_session_server.server.tree_following import tree_shape
from pi_session_server.server.tree_levels import encode_tree_levels, tree_levels
from pi_session_server.server.tree_tool_calls import CallReading
from pi_session_server.server.tree_view import tree_view
from pi_session_server.server.tree_window import RootNotFoundError, TreeWindow, find_node
from pi_session_server.server.wire import encode_result
from pi_session_server.session import SessionManager, cache_dir, loader
from pi_session_server.session.entry_facts import collect_tool_calls
from pi_session_server.session.envelopes import Envelopes
from pi_session_server.session.tree_modes import FILTERS


def reply(value: Any) -> Any:
    return json.loads(encode_result(value))


@pytest.fixture
def example(tmp_path: Path) -> SessionManager:
    path = tmp_path / "example.jsonl"
    shutil.copy(EXAMPLE, path)
    return SessionManager.open(str(path))


def page(m: SessionManager, entry_id: Any = ABSENT, descend: bool = False, offset: int = 0, limit: int = 100):
    return reply(path_view.get_path(m, entry_id, descend, offset, limit, keep=False))


def ids(items: list[dict[str, Any]]) -> list[Any]:
    return [item["entry"]["id"] for item in items]


# --- pi/getPath -------------------------------------------------------------------------------


def test_the_path_to_the_leaf_is_get_branch_with_children_siblings_labels_and_lines(example: SessionManager):
    result = page(example)
    assert ids(result["items"]) == [e["id"] for e in reply(example.get_branch())]
    assert result["total"] == 28 and result["offset"] == 0 and result["hasMore"] is False
    assert result["leafId"] == result["endId"] == "e2f3a4b5" and "nextOffset" not in result
    lines = Path(example.get_session_file()).read_text().splitlines()
    by_id = {item["entry"]["id"]: item for item in result["items"]}
    for item in result["items"]:
        assert json.loads(lines[item["line"]]) == item["entry"]  # the entry as the file holds it
    assert (
        by_id["9d0e1f2a"]["childIds"] == ["b1c2d3e4", "d9e0f1a2"]
        and by_id["9d0e1f2a"]["label"] == "tests-green"
    )
    assert "labelTimestamp" in by_id["9d0e1f2a"]
    assert by_id["d9e0f1a2"]["siblingIds"] == ["b1c2d3e4", "d9e0f1a2"]  # after a branch point
    assert all("siblingIds" not in item for item in result["items"] if item["entry"]["id"] != "d9e0f1a2")
    assert by_id["e2f3a4b5"]["childIds"] == []


def test_pages_concatenate_to_the_whole_path_and_stop_at_the_byte_budget(example: SessionManager):
    whole = page(example)["items"]
    for size in (1, 5, 27):
        items, offset = [], 0
        while True:
            part = page(example, offset=offset, limit=size)
            assert len(part["items"]) <= size and part["offset"] == offset
            items.extend(part["items"])
            if not part["hasMore"]:
                break
            offset = part["nextOffset"]
        assert items == whole
    past = page(example, offset=500)
    assert past["items"] == [] and past["offset"] == 28 and past["hasMore"] is False
    path = path_view.path_nodes(example, ABSENT, False)
    small = reply(path_view.path_page(path, example.get_leaf_id(), 0, 100, page_bytes=1))
    assert (
        len(small["items"]) == 1 and small["nextOffset"] == 1
    )  # one entry at least, then the budget ends it
    budget = sum(len(encode_result(item)) for item in whole[:2]) + 1  # the third one ends the page
    assert (
        len(reply(path_view.path_page(path, example.get_leaf_id(), 0, 100, page_bytes=budget))["items"]) == 3
    )


def test_a_path_to_an_entry_and_through_a_branch_with_descend(example: SessionManager):
    to_entry = page(example, "e0f1a2b3")
    assert to_entry["endId"] == "e0f1a2b3" and ids(to_entry["items"])[-3:] == [
        "9d0e1f2a",
        "d9e0f1a2",
        "e0f1a2b3",
    ]
    # the other branch at 9d0e1f2a: down to a leaf, through the newest child at each branch point
    other = page(example, "b1c2d3e4", descend=True)
    tree = {
        n["id"]: n
        for n in reply(tree_view(example.get_tree(), example.get_leaf_id(), example.by_id))["nodes"]
    }
    walked = ids(other["items"])
    assert walked[:15] == [*ids(to_entry["items"])[:14], "b1c2d3e4"]
    for parent, child in itertools.pairwise(walked[14:]):
        assert child == tree[parent]["childIds"][-1]  # oldest first: the newest is the last
    assert tree[walked[-1]]["childIds"] == [] and other["endId"] == walked[-1]
    # descend from an entry on the leaf's path follows the leaf's path, down to the leaf
    assert page(example, "1e2f3a4b", descend=True)["endId"] == "e2f3a4b5"
    assert ids(page(example, ABSENT, descend=True)["items"]) == ids(page(example)["items"])


def test_an_unknown_entry_is_refused_and_an_empty_session_has_an_empty_path():
    m = SessionManager.open(str(EXAMPLE), read_only=True)
    with pytest.raises(RootNotFoundError) as error:
        path_view.get_path(m, "nope", False, 0, 10, keep=False)
    assert error.value.param == "entryId"
    empty = SessionManager.in_memory("/tmp")
    assert page(empty) == {
        "leafId": None,
        "endId": None,
        "total": 0,
        "offset": 0,
        "hasMore": False,
        "items": [],
    }


def test_the_kept_path_is_reused_while_the_session_stays_and_remade_after_an_append(example: SessionManager):
    kept = path_view._kept_paths
    first = reply(path_view.get_path(example, ABSENT, False, 0, 5))
    walk = kept.kept(example)
    path_view.get_path(example, ABSENT, False, 5, 5)
    assert kept.kept(example) is walk and first["total"] == 28
    example.append_message({"role": "user", "content": "one more", "timestamp": 1})
    after = reply(path_view.get_path(example, ABSENT, False, 28, 5))
    assert kept.kept(example) is not walk
    assert after["total"] == 29 and after["items"][0]["entry"]["message"]["content"] == "one more"


@pytest.mark.parametrize("rows", [True, False])
def test_the_views_share_one_library_tree_per_state_of_the_session(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch, rows: bool
):
    """The conversation view reads the tree of its entries' rows and makes no library tree; where
    the rows do not give the tree (``rows`` False), it shares the tree view's."""
    from pi_session_server.server import library_tree, methods_read, tree_pages
    from pi_session_server.server import params as P

    monkeypatch.setattr(library_tree, "_trees", tree_pages.FlatTreePages())
    monkeypatch.setattr(path_view, "_kept_paths", tree_pages.FlatTreePages())
    monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages())
    if not rows:
        monkeypatch.setattr(example, "chain_tree", lambda: None)
    built: list[Any] = []
    get_tree = example.get_tree
    monkeypatch.setattr(example, "get_tree", lambda: built.append(1) or get_tree())

    def window(**params: Any) -> dict[str, Any]:
        p = P.parse({"session": "s", "filter": "default", **params}, P.GetTreeParams)
        return json.loads(bytes(methods_read._tree(example, p)))

    path_view.get_path(example, ABSENT, False, 0, 5)  # the conversation view
    assert len(built) == (0 if rows else 1)
    window(rootId="9d0e1f2a", depth=1, offset=0, limit=10)  # the tree view's kept shape
    path_view.get_path(example, "b1c2d3e4", True, 0, 5)  # a branch switch: another path
    assert len(built) == 1
    roots = library_tree.library_tree(example)
    assert (path_view._kept_paths.kept(example).roots is roots) is not rows
    example.append_label_change("9d0e1f2a", "shared")  # a label is an entry: a new state, its tree
    window(rootId="9d0e1f2a", depth=1, offset=0, limit=10)
    grown = library_tree.library_tree(example)  # (grown from the one before by the label's node)
    assert len(built) == 1 and grown is not roots and grown.node_of("9d0e1f2a").label == "shared"
    assert path_view.get_path(example, ABSENT, False, 0, 5)
    assert (path_view._kept_paths.kept(example).roots is grown) is not rows
    assert get_tree() is not get_tree()  # the library's own getTree still makes a tree per call


def test_descend_finds_the_leaf_path_only_at_a_branch_point(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(example, "chain_tree", lambda: None)  # (the library's tree's path)
    asked: list[Any] = []
    original = path_view.active_path_ids
    monkeypatch.setattr(path_view, "active_path_ids", lambda *a: asked.append(1) or original(*a))
    down = page(example, "d9e0f1a2", descend=True)  # on the leaf's path, no branch point below
    assert down["endId"] == "e2f3a4b5" and asked == []
    assert page(example, "1e2f3a4b", descend=True)["endId"] == "e2f3a4b5" and asked == [1]


def test_random_sessions_paths_match_get_branch(tmp_path: Path):
    rng = random.Random(11)
    for i in range(6):
        path = tmp_path / f"r{i}.jsonl"
        random_session(rng, path)
        m = SessionManager.open(str(path))
        for entry in m.get_entries()[:: max(1, m.entry_count() // 7)]:
            got = page(m, entry.id, limit=1000)
            assert ids(got["items"]) == [e["id"] for e in reply(m.get_branch(entry.id))]


# --- pi/getStats ------------------------------------------------------------------------------


def expected_stats(path: str) -> dict[str, Any]:
    """The totals, summed straight from the file's lines as pi's getSessionStats() sums them: the
    usage of assistant messages and tool results, of usage entries, branch summaries and
    compactions; ``total`` the four's sum."""
    tokens = dict.fromkeys(session_stats.USAGE_KEYS, 0)
    cost, turns, types, turn_tokens, turn_cost = 0.0, 0, {}, 0, 0.0
    for line in Path(path).read_text().splitlines()[1:]:
        value = json.loads(line)
        types[value["type"]] = types.get(value["type"], 0) + 1
        message = value.get("message") or {}
        usage = None
        if value["type"] == "message" and message.get("role") in ("assistant", "toolResult"):
            turns += message["role"] == "assistant"
            usage = message.get("usage") or {}
            if message["role"] == "assistant":
                turn_tokens += usage.get("totalTokens", 0)
                turn_cost += (usage.get("cost") or {}).get("total", 0)
        elif value["type"] in ("usage", "branch_summary", "compaction"):
            usage = value.get("usage") or {}
        for key in tokens:
            tokens[key] += (usage or {}).get(key, 0)
        cost += ((usage or {}).get("cost") or {}).get("total", 0)
    tokens["total"] = sum(tokens[key] for key in session_stats.PI_TOTAL_KEYS)
    return {
        "tokens": tokens,
        "cost": cost,
        "turns": turns,
        "types": types,
        "turnTokens": turn_tokens,
        "turnCost": turn_cost,
    }


def add_as_the_library_reads(totals: session_stats.SessionTotals, entries: list[Entry]) -> None:
    """Count ``entries`` into ``totals`` with each assistant message, and each other entry with usage,
    as ``Entry.get`` reads it."""
    turns = [session_stats.turn_of_message(e.get("message")) for e in entries if e.role == "assistant"]
    totals.add(Envelopes.of_entries(entries), [turn for turn in turns if turn is not None])
    others = [
        session_stats.other_usage_of(e)
        for e in entries
        if e.role == "toolResult" or e.type in ("usage", "branch_summary", "compaction")
    ]
    totals.add_other_usage(list(zip(*[turn for turn in others if turn is not None], strict=True)))


def test_stats_sum_the_whole_session(example: SessionManager):
    stats = reply(session_stats.session_stats(example, session_stats.StatsCache()))
    expected = expected_stats(example.get_session_file())
    assert stats["entryCount"] == 36 and stats["types"] == expected["types"]
    assert stats["tokens"] == expected["tokens"] and stats["cost"] == pytest.approx(expected["cost"])
    assert stats["roles"]["assistant"] == expected["turns"] == 12
    assert stats["branchPoints"] == 2 and stats["leaves"] == 3
    assert stats["models"] == {
        "anthropic/claude-sonnet-4-5": {
            "turns": 12,
            "totalTokens": expected["turnTokens"],
            "cost": pytest.approx(expected["turnCost"]),
        }
    }
    assert stats["firstTimestamp"] < stats["lastTimestamp"]


def test_stats_after_an_append_read_only_the_new_entries(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    cache = session_stats.StatsCache()
    session_stats.session_stats(example, cache)
    added: list[Any] = []
    original = session_stats.SessionTotals.add_columns
    monkeypatch.setattr(
        session_stats.SessionTotals,
        "add_columns",
        lambda self, entries, columns: (added.extend(entries.ids), original(self, entries, columns)),
    )
    example.append_message(
        {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2,
         "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"total": 0.5}}}
    )  # fmt: skip
    stats = session_stats.session_stats(example, cache)
    assert len(added) == 1
    fresh = session_stats.session_stats(example, session_stats.StatsCache())
    assert stats == fresh and stats["models"]["p/m"] == {"turns": 1, "totalTokens": 3, "cost": 0.5}
    assert session_stats.session_stats(example, cache) == fresh and len(added) == 1 + 37  # fresh read all 37


def test_stats_read_in_one_pass_and_count_the_tree_as_get_tree_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The usage comes from one pass over the file (no entry body is read); branch points and
    leaves are those of getTree, for regular files (counted) and odd ones (the tree asked for)."""
    rng = random.Random(17)
    paths = [
        EXAMPLE,
        Path("tests/editors/fixtures/orphan-session.jsonl"),
        Path("tests/editors/fixtures/broken-session.jsonl"),
    ]
    for i in range(8):
        path = tmp_path / f"r{i}.jsonl"
        random_session(rng, path)
        paths.append(path)
    for path in paths:
        m = SessionManager.open(str(path), read_only=True)
        expected = expected_stats(str(path)) if path == EXAMPLE else None
        stats = session_stats.session_stats(m, session_stats.StatsCache())
        branch_points, leaves = session_stats._tree_counts(m.get_tree())
        assert (stats["branchPoints"], stats["leaves"]) == (branch_points, leaves), path
        fresh = session_stats.SessionTotals()
        add_as_the_library_reads(fresh, m.get_entries())
        assert (
            stats["tokens"] == session_stats._with_pi_total(fresh.all_tokens)
            and stats["cost"] == fresh.all_cost
            and stats["models"] == fresh.models
        ), path
        if expected:
            assert stats["tokens"] == expected["tokens"]
    # a big file's entries are read lazily: the pass reads none of their bodies
    big = tmp_path / "big.jsonl"
    random_session(random.Random(3), big)
    m = SessionManager.open(str(big))
    lazy = [e for e in m.get_entries() if not e.is_loaded and e.role == "assistant"]
    assert lazy
    monkeypatch.setattr(Entry, "get", lambda self, *a: pytest.fail("an entry body was read"))
    session_stats.session_stats(m, session_stats.StatsCache())


@pytest.mark.usefixtures("files_settle_at_once")
def test_stats_of_a_session_reopened_from_its_index_are_those_of_a_plain_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Reopened from its index, a session's entries are columns (no entry made): the totals read
    from them, and brought up to date after pi appends, are those of the file opened plainly."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)  # entries read from the file, as a big one's are
    on_rows = 0
    for seed in range(8):
        path, index = tmp_path / f"s{seed}.jsonl", tmp_path / f"index{seed}"
        random_session(random.Random(40 + seed), path)
        SessionManager.open(str(path), read_only=True, index=str(index)).close()
        with SessionManager.open(str(path), read_only=True, index=str(index)) as again:
            on_rows += again._rows is not None
            cache = session_stats.StatsCache()
            stats = session_stats.session_stats(again, cache)
            with SessionManager.open(str(path), read_only=True, index=False) as plain:
                assert stats == session_stats.session_stats(plain, session_stats.StatsCache()), path
            with open(path, "a", encoding="utf-8") as f:  # pi appends an assistant turn
                line = {"type": "message", "id": f"new{seed}", "parentId": again.get_leaf_id(),
                        "timestamp": "2026-01-01T00:00:00.000Z",
                        "message": {"role": "assistant", "content": [], "provider": "p", "model": "m",
                                    "usage": {"input": 2, "totalTokens": 2, "cost": {"total": 0.5}}}}  # fmt: skip
                f.write(json.dumps(line) + "\n")
            assert again.refresh_from_disk().kind == "appended"
            grown = session_stats.session_stats(again, cache)
            with SessionManager.open(str(path), read_only=True, index=False) as plain:
                assert grown == session_stats.session_stats(plain, session_stats.StatsCache()), path
            assert grown["models"]["p/m"]["turns"] == stats["models"].get("p/m", {"turns": 0})["turns"] + 1
    assert on_rows >= 6  # (a random session may repeat an id: then every entry is made)


def test_stats_after_an_append_leave_the_session_readable(tmp_path: Path):
    """The kept sums hold the last entry: bringing them up to date must not copy it (a copy of a lazy
    entry holds a copy of the file it reads from, which closes the session's descriptor when dropped)."""
    path = tmp_path / "big.jsonl"
    random_session(random.Random(3), path)
    m = SessionManager.open(str(path))
    cache = session_stats.StatsCache()
    session_stats.session_stats(m, cache)
    for i in range(3):  # pi appends (another process): the new entries are read from the file
        line = {"type": "message", "id": f"x{i}", "parentId": m.get_leaf_id(), "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "y" * 5000, "timestamp": i}}  # fmt: skip
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        assert m.refresh_from_disk().kind == "appended"
        session_stats.session_stats(m, cache)
        gc.collect()
    lazy = [e for e in m.get_entries() if not e.is_loaded]
    assert lazy, "the test needs entries read from the file"
    assert all(e.value is not None for e in lazy)  # read again from the file: its descriptor is open


def test_stats_ignore_usage_that_is_not_numbers():
    totals = session_stats.SessionTotals()
    odd = {
        "input": "7",
        "output": True,
        "cacheRead": float("nan"),
        "totalTokens": None,
        "cost": {"total": "1"},
    }
    m = SessionManager.in_memory("/tmp")
    m.append_message({"role": "assistant", "content": [], "usage": odd, "timestamp": 1})
    m.append_message({"role": "assistant", "content": [], "usage": [1, 2], "timestamp": 2})
    add_as_the_library_reads(totals, m.get_entries())
    assert totals.tokens == dict.fromkeys(session_stats.USAGE_KEYS, 0) and totals.cost == 0
    assert totals.models == {"(unknown)": {"turns": 2, "totalTokens": 0, "cost": 0}}


# --- pi/getTree: chain and aroundId -----------------------------------------------------------


def view(m: SessionManager, mode: str = "default", **window: Any) -> dict[str, Any]:
    return reply(
        tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, active_branch_first=True, previews=False,
                  window=TreeWindow(**window))
    )  # fmt: skip


@pytest.mark.parametrize("mode", FILTERS)
def test_a_chain_is_the_subtree_walk_up_to_the_first_row_without_exactly_one_child(
    example: SessionManager, mode
):
    whole = view(example, mode)["nodes"]
    tops = [n for n in whole if n["depth"] == 0]
    for root in [None, *[n["id"] for n in whole]]:
        subtree = view(example, mode, root_id=root)["nodes"] if root else whole
        chain = (
            view(example, mode, root_id=root, chain=True)["nodes"]
            if root
            else view(example, mode, chain=True)["nodes"]
        )
        if root is None and len(tops) > 1:
            assert chain == tops
            continue
        expected = []
        for node in subtree:
            expected.append(node)
            if len(node["childIds"]) != 1:
                break
        assert chain == expected, (mode, root)
        assert [n["depth"] for n in chain] == list(range(len(chain)))


def test_around_id_gives_the_page_around_the_entry_or_its_deepest_shown_ancestor(example: SessionManager):
    whole = view(example, "all")["nodes"]
    position = [n["id"] for n in whole].index("e2f3a4b5")
    around = view(example, "all", limit=6, paged=True, around_id="e2f3a4b5")
    assert around["aroundIndex"] == position and around["offset"] == min(position - 3, len(whole) - 6)
    assert around["nodes"] == whole[around["offset"] : around["offset"] + 6]
    assert around["hasMore"] == (around["offset"] + 6 < len(whole))
    # the leaf is a custom_message: the default filter shows it; user-only does not: its ancestor
    users = view(example, "user-only")["nodes"]
    hidden = view(example, "user-only", limit=2, paged=True, around_id="e2f3a4b5")
    assert users[hidden["aroundIndex"]]["id"] == "a8b9c0d1"  # the last user message above the leaf
    chain = view(example, "default", chain=True, limit=3, paged=True, around_id="e2f3a4b5")
    # the leaf is below the chain's branch point: the page is around that branch point
    assert chain["nodes"][-1]["isBranchPoint"] and chain["aroundIndex"] == chain["total"] - 1
    elsewhere = view(example, "default", root_id="b1c2d3e4", limit=3, paged=True, around_id="e2f3a4b5")
    assert elsewhere["aroundIndex"] is None and elsewhere["offset"] == 0  # not in this subtree
    with pytest.raises(RootNotFoundError):
        view(example, around_id="nope", limit=3, paged=True)


def test_the_windows_of_one_view_share_one_kept_shape_and_match_fresh_ones(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    from pi_session_server.server import methods_read, tree_pages
    from pi_session_server.server import params as P

    shapes: list[Any] = []
    original = methods_read.tree_shape
    monkeypatch.setattr(methods_read, "tree_shape", lambda *a, **k: shapes.append(1) or original(*a, **k))
    monkeypatch.setattr(methods_read, "_tree_shapes", tree_pages.FlatTreePages())
    monkeypatch.setattr(methods_read, "_tree_pages", tree_pages.FlatTreePages())

    def request(**params: Any) -> dict[str, Any]:
        p = P.parse(
            {"session": "s", "filter": "default", "activeBranchFirst": True, **params}, P.GetTreeParams
        )
        return json.loads(bytes(methods_read._tree(example, p)))

    windows = [
        {"chain": True, "limit": 50},
        {"chain": True, "limit": 3, "aroundId": "e2f3a4b5"},
        {"rootId": "9d0e1f2a", "depth": 1, "offset": 1, "limit": 10, "aroundId": "e2f3a4b5"},
        {"rootId": "d9e0f1a2", "chain": True, "limit": 50, "aroundId": "e2f3a4b5"},
        {"rootId": "b1c2d3e4", "chain": True, "limit": 50},
    ]
    for params in windows:
        got = request(**params)
        window = TreeWindow(
            root_id=params.get("rootId", ABSENT), depth=params.get("depth"), chain=params.get("chain", False),
            offset=params.get("offset", 0), limit=params["limit"], paged=True, around_id=params.get("aroundId", ABSENT),
        )  # fmt: skip
        fresh = reply(tree_view(example.get_tree(), example.get_leaf_id(), example.by_id, mode="default",
                                active_branch_first=True, window=window))  # fmt: skip
        assert got == fresh, params
    assert len(shapes) == 1
    # an append below the leaf: a new state, whose shape is the kept one following it
    example.append_message({"role": "user", "content": "more", "timestamp": 1})
    assert request(chain=True, limit=3, aroundId="e2f3a4b5")["total"] >= 1 and len(shapes) == 1
    # a branch elsewhere (no entry appended): the kept shape follows the move of the leaf too
    example.branch("b1c2d3e4")
    got = request(chain=True, limit=3, aroundId="e2f3a4b5")
    assert got["total"] >= 1 and len(shapes) == 1
    window = TreeWindow(chain=True, limit=3, paged=True, around_id="e2f3a4b5")
    fresh = reply(tree_view(example.get_tree(), example.get_leaf_id(), example.by_id, mode="default",
                            active_branch_first=True, window=window))  # fmt: skip
    assert got == fresh


def test_finding_a_node_by_its_path_is_find_node(tmp_path: Path):
    rng = random.Random(5)
    for i in range(5):
        path = tmp_path / f"r{i}.jsonl"
        random_session(rng, path)
        m = SessionManager.open(str(path))
        roots = m.get_tree()
        shape = tree_shape(roots, m.get_leaf_id(), m.by_id, previews=False)
        for entry in m.get_entries():
            assert shape.find(entry.id) is find_node(roots, entry.id)
        assert shape.find("no such id") is None


def test_windows_read_only_the_calls_their_previews_name_and_preview_as_the_whole_tree(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    whole = {
        n["id"]: n["preview"]
        for n in reply(tree_view(example.get_tree(), example.get_leaf_id(), example.by_id, mode="all"))[
            "nodes"
        ]
    }
    collected: list[int] = []
    original = collect_tool_calls
    for reads in ("tree_shape", "tree_tool_calls"):  # (the modules that read every call)
        monkeypatch.setattr(
            f"pi_session_server.server.{reads}.collect_tool_calls",
            lambda entries: collected.append(1) or original(entries),
        )
    shape = tree_shape(
        example.get_tree(),
        example.get_leaf_id(),
        example.by_id,
        mode="all",
        calls=CallReading.NEAR_EACH_RESULT,
    )
    seen = 0
    for root in [ABSENT, *whole]:
        window = TreeWindow(root_id=root, chain=True, limit=1000, paged=True)
        for node in json.loads(encode_flat_page(window_tree(shape, window), window)[0])["nodes"]:
            assert node["preview"] == whole[node["id"]]
            seen += 1
    assert seen > len(whole) and collected == []  # every tool result found its call above it
    assert any(p.startswith("[bash") or p.startswith("[read") for p in whole.values())


def test_a_tool_result_whose_call_is_not_above_it_still_names_it(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "read",
                                                      "arguments": {"path": "x.py"}}]}},
        {"type": "message", "id": "r1", "parentId": None, "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": "ok"}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    m = SessionManager.open(str(path))
    whole = {
        n["id"]: n["preview"]
        for n in reply(tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, mode="all"))["nodes"]
    }
    shape = tree_shape(m.get_tree(), m.get_leaf_id(), m.by_id, mode="all", calls=CallReading.NEAR_EACH_RESULT)
    window = TreeWindow(root_id="r1", chain=True, limit=10, paged=True)
    got = json.loads(encode_flat_page(window_tree(shape, window), window)[0])
    assert (
        got["nodes"][0]["preview"] == whole["r1"]
        and "x.py" in whole["r1"]
        and shape._session_calls is not None
    )


# --- pi/getTree: levels --------------------------------------------------------------------------


def levels_reply(m: SessionManager, mode: str, around: Any, limit: int, max_nodes: int = 50_000) -> dict:
    shape = tree_shape(m.get_tree(), m.get_leaf_id(), m.by_id, mode=mode, active_branch_first=True,
                       previews=False, calls=CallReading.NEAR_EACH_RESULT)  # fmt: skip
    levels, complete = tree_levels(shape, around, max_nodes // 2)
    return json.loads(encode_tree_levels(shape, levels, complete, limit, max_nodes))


def client_levels(m: SessionManager, mode: str, around: Any, limit: int) -> list[dict[str, Any]]:
    """What a tree view gets asking level after level (lazyTree.ts's locate): each level's window
    around the entry, then the list under the path's row (its branches, or a head's chain)."""
    out = []
    kind, window = "top", {"chain": True}
    while True:
        extra = 1 if kind == "branches" else 0
        python_window = {{"rootId": "root_id"}.get(k, k): v for k, v in window.items()}
        got = view(m, mode, paged=True, around_id=around, limit=limit + extra, **python_window)
        del got["leafId"]
        out.append({"kind": kind, **{k: v for k, v in window.items()}, **got})
        index = got["aroundIndex"]
        if index is None or index < extra:
            return out
        row = got["nodes"][index - got["offset"]]
        if row["id"] == around:
            return out
        tops = view(m, mode, chain=True)["nodes"]  # several roots: the top's rows are heads
        head = kind == "branches" or (kind == "top" and len(tops) > 1 and tops[1]["depth"] == 0)
        if row["isBranchPoint"]:
            kind, window = "branches", {"rootId": row["id"], "depth": 1}
        elif head and len(row["childIds"]) == 1:
            kind, window = "chain", {"rootId": row["childIds"][0], "chain": True}
        else:
            return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["none", "default", "user-only", "no-tools"])
def test_levels_are_the_windows_a_tree_view_asks_for_level_by_level(tmp_path: Path, mode: str):
    rng = random.Random(11)
    sessions = []
    for i in range(6):
        path = tmp_path / f"r{i}.jsonl"
        random_session(rng, path)
        sessions.append(SessionManager.open(str(path)))
    sessions.append(SessionManager.open(str(EXAMPLE)))
    for m in sessions:
        for entry in m.get_entries():
            for limit in (1, 3, 50):
                got = levels_reply(m, mode, entry.id, limit)
                assert got["complete"] is True and got["leafId"] == m.get_leaf_id()
                assert got["levels"] == client_levels(m, mode, entry.id, limit), (mode, entry.id, limit)
            last = got["levels"][-1]
            if last["aroundIndex"] is not None and any(n["id"] == entry.id for n in view(m, mode)["nodes"]):
                assert last["nodes"][last["aroundIndex"] - last["offset"]]["id"] == entry.id


def test_many_levels_share_the_reply_and_too_many_stop_short(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    m = SessionManager.open(str(path))
    m.append_message({"role": "user", "content": "start", "timestamp": 1})
    for i in range(40):  # a branch point at every step: 40 of them on the path to the leaf
        parent = m.get_leaf_id()
        m.append_message({"role": "user", "content": f"side {i}", "timestamp": 1})
        m.branch(parent)
        m.append_message({"role": "user", "content": f"main {i}", "timestamp": 1})
        m.append_message({"role": "user", "content": f"more {i}", "timestamp": 1})
    leaf = m.get_leaf_id()
    whole = levels_reply(m, "none", leaf, 50)
    assert whole["complete"] and len(whole["levels"]) == 1 + 2 * 40
    assert whole["levels"] == client_levels(m, "none", leaf, 50)
    small = levels_reply(m, "none", leaf, 50, max_nodes=200)  # 81 levels in 200 nodes: 1 row a level
    assert small["complete"] and sum(len(level["nodes"]) for level in small["levels"]) <= 200
    for level, full in zip(small["levels"], whole["levels"], strict=True):
        assert (level["kind"], level.get("rootId"), level["total"]) == (
            full["kind"],
            full.get("rootId"),
            full["total"],
        )
        index = level["aroundIndex"] - level["offset"]
        assert level["nodes"][index] == full["nodes"][full["aroundIndex"] - full["offset"]]
    short = levels_reply(m, "none", leaf, 50, max_nodes=40)  # at most 20 levels
    assert not short["complete"] and len(short["levels"]) == 20
    assert [lv.get("rootId") for lv in short["levels"]] == [lv.get("rootId") for lv in whole["levels"][:20]]
    with pytest.raises(RootNotFoundError):
        levels_reply(m, "none", "no such entry", 5)
