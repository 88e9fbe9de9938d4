"""pi/getStats keeps a session's totals and adds only what is appended (``StatsCache``): whatever is
appended, at the leaf, under an old entry, by this process or by another program (picked up as
pi/didChange picks it up, ``refresh_from_disk``), the totals are exactly those a fresh count gives.
The branch points and leaves are told by where the entries' chains start, before and after appends,
without a count of children per entry; only a tree the chains do not tell (an id twice, a parent
never written) is counted entry by entry."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stats_once import _branching, counted_entry_by_entry  # noqa: F401 - a fixture
from test_stats_packed_turns import _small_sessions_kept  # noqa: F401 - autouse: each session indexed

from pi_session_server.server import session_stats
from pi_session_server.server.library_tree import shown_tree
from pi_session_server.session import cache_dir
from pi_session_server.session.manager import SessionManager

# what is appended: by us at the leaf, by us under an old entry, by another program under an old
# entry, by another program with a parent never written, by another program with an id seen before
APPENDS = ["leaf", "branch", "theirs", "theirs-orphan", "theirs-id-twice"]


def _turn(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"role": "user", "content": "more"}
    usage = {"input": rng.randint(0, 9), "totalTokens": rng.random(), "cost": {"total": rng.random()}}
    return {"role": "assistant", "content": [], "provider": "p", "model": rng.choice("mn"), "usage": usage}


def _theirs(path: Path, entry_id: str, parent: Any, message: dict[str, Any]) -> None:
    line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t2", "message": message}
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")


def _append(rng: random.Random, manager: SessionManager, path: Path, how: str, n: int) -> None:
    ids = [entry.id for entry in manager.get_entries()]
    if how == "leaf":
        manager.append_message(_turn(rng))
    elif how == "branch":
        manager.branch(rng.choice(ids))
        manager.append_message(_turn(rng))
    else:
        parent = f"gone{n}" if how == "theirs-orphan" else rng.choice(ids)
        _theirs(path, rng.choice(ids) if how == "theirs-id-twice" else f"x{n}", parent, _turn(rng))
        manager.refresh_from_disk()


def _fresh(manager: SessionManager) -> dict[str, Any]:
    return session_stats.session_stats(manager, session_stats.StatsCache())


@pytest.fixture(autouse=True)
def _index_of_the_test(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path_factory.mktemp("index")))


# (the fixtures hold nothing of one example: the spy's count is cleared, each session is a new file)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    appends=st.lists(st.sampled_from(APPENDS), min_size=1, max_size=6),
    index=st.booleans(),
)
def test_the_totals_after_appends_are_those_of_a_fresh_count(
    tmp_path_factory: pytest.TempPathFactory,
    counted_entry_by_entry: list[int],  # noqa: F811 - the fixture (a test of hypothesis's)
    seed: int,
    appends: list[str],
    index: bool,
):
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("s") / "s.jsonl"
    _branching(rng, path, rng.randint(1, 40))
    cache = session_stats.StatsCache()
    counted_entry_by_entry.clear()
    with SessionManager.open(str(path), index=index) as manager:
        session_stats.session_stats(manager, cache)
        told_by_chains = True
        for n, how in enumerate(appends):
            _append(rng, manager, path, how, n)
            told_by_chains = told_by_chains and not how.endswith(("orphan", "twice"))
            kept = session_stats.session_stats(manager, cache)
            assert json.dumps(kept) == json.dumps(_fresh(manager)), (n, how)
            shape = session_stats._tree_counts(shown_tree(manager))  # (getTree's)
            assert (kept["branchPoints"], kept["leaves"]) == shape, (n, how)
            if told_by_chains:
                assert counted_entry_by_entry == [], (n, how)
