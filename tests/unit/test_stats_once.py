"""``pi-session stats`` asks for a session's totals once (``session_stats.totals_once``): nothing is
kept to add appended entries to, so the branch points and leaves are told by where the entries'
chains start (``session_stats.chain_counts``) instead of counted entry by entry, which holds every
entry's number of children (a session of GBs has hundreds of thousands of entries); and the entries
are counted a part at a time with the index too, the turns still loaded from and kept with it. The
totals are those the sidecar's ``pi/getStats`` answers, with or without the index."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import random_session
from test_stats_in_parts import ranges  # noqa: F401 - a fixture
from test_turn_store import (  # noqa: F401 - autouse: kept from a few turns; a fixture
    _plain,
    _small_sessions_kept,
    _store,
    _write,
    lines_read,
)

from pi_session_server.cli import main
from pi_session_server.commands._common import example_session_path
from pi_session_server.server import session_stats
from pi_session_server.session import cache_dir, turn_store
from pi_session_server.session.manager import SessionManager

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
# (id, parentId) of entries whose tree their chains do not tell: an id twice, a parent written
# after its child, an entry its own parent, an id that is no string, an orphan
ODD_TREES: list[list[tuple[Any, Any]]] = [
    [("a", None), ("b", "a"), ("b", "a"), ("c", "b")],
    [("a", None), ("b", "c"), ("c", "a"), ("d", "a")],
    [("a", None), ("b", "b"), ("c", "a")],
    [("a", None), (7, "a"), ("c", 7), ("d", "a")],
    [("a", None), ("b", "gone"), ("c", "b"), ("d", "a")],
]


@pytest.fixture(autouse=True)
def _index_of_the_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))


@pytest.fixture
def counted_entry_by_entry(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many entries the totals counted the tree of one by one (keeping each one's children)."""
    counted: list[int] = []
    add_to_tree = session_stats.SessionTotals._add_to_tree

    def spy(self: session_stats.SessionTotals, ids: Any, parents: Any) -> None:
        counted.append(len(ids))
        add_to_tree(self, ids, parents)

    monkeypatch.setattr(session_stats.SessionTotals, "_add_to_tree", spy)
    return counted


def _branching(rng: random.Random, path: Path, entries: int) -> None:
    """A session of ``entries`` entries, each under a random earlier one (most often the one
    before), some roots of their own."""
    lines: list[dict[str, Any]] = [HEADER]
    for n in range(entries):
        roll = rng.random()
        parent = None if n == 0 or roll < 0.05 else f"e{n - 1}" if roll < 0.7 else f"e{rng.randrange(n)}"
        message = {"role": "assistant", "content": [], "provider": "p", "model": "m", "usage": {"input": n}}
        if n % 2:
            message = {"role": "user", "content": f"q{n}"}
        lines.append(
            {"type": "message", "id": f"e{n}", "parentId": parent, "timestamp": "t", "message": message}
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _sessions(tmp_path: Path) -> list[Path]:
    rng = random.Random(41)
    paths = [Path(example_session_path())]
    for i in range(6):
        random_session(rng, tmp_path / f"r{i}.jsonl")
        _branching(rng, tmp_path / f"b{i}.jsonl", rng.randint(1, 60))
        paths += [tmp_path / f"r{i}.jsonl", tmp_path / f"b{i}.jsonl"]
    return paths


def _once(path: Path, index: bool) -> dict[str, Any]:
    with SessionManager.open(str(path), read_only=True, index=index) as manager:
        return session_stats.session_stats(manager, None)


def _kept_by_the_server(path: Path, index: bool) -> dict[str, Any]:
    with SessionManager.open(str(path), read_only=True, index=index) as manager:
        return session_stats.session_stats(manager, session_stats.StatsCache())


def test_the_tree_of_a_session_asked_once_is_counted_by_its_chains(
    tmp_path: Path, counted_entry_by_entry: list[int]
):
    for path in _sessions(tmp_path):
        for index in (False, True, True):  # without the index, then its first run and a reopen
            expected = _kept_by_the_server(path, index)
            with SessionManager.open(str(path), read_only=True, index=index) as manager:
                branch_points, leaves = session_stats._tree_counts(manager.get_tree())
            assert (expected["branchPoints"], expected["leaves"]) == (branch_points, leaves), path
            counted_entry_by_entry.clear()
            assert json.dumps(_once(path, index)) == json.dumps(expected), path
            assert counted_entry_by_entry == [], path


@pytest.mark.parametrize("pairs", ODD_TREES)
def test_a_tree_its_chains_do_not_tell_is_counted_entry_by_entry(
    tmp_path: Path, counted_entry_by_entry: list[int], pairs: list[tuple[Any, Any]]
):
    path = tmp_path / "odd.jsonl"
    lines = [HEADER]
    for entry_id, parent in pairs:
        message = {"role": "user", "content": "q"}
        lines.append(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message}
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        shape = session_stats._tree_counts(manager.get_tree())
    for index in (False, True):
        expected = _kept_by_the_server(path, index)
        assert (expected["branchPoints"], expected["leaves"]) == shape
        counted_entry_by_entry.clear()
        assert _once(path, index) == expected
        assert counted_entry_by_entry


def test_the_command_line_asks_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counted_entry_by_entry: list[int]
):
    path = tmp_path / "b.jsonl"
    _branching(random.Random(5), path, 40)
    expected = _kept_by_the_server(path, False)
    counted_entry_by_entry.clear()
    for _ in range(2):  # the index written, then read
        assert main(["stats", "--json", str(path)]) == 0
        assert json.loads(capsys.readouterr().out) == expected
    assert counted_entry_by_entry == []


@pytest.mark.parametrize("at_once", [3, 5, 8, 24])
def test_with_the_index_a_session_asked_once_is_counted_a_part_at_a_time_its_turns_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ranges: list[tuple[int, int]],  # noqa: F811 - the fixture imported
    lines_read: list[Any],  # noqa: F811 - the fixture imported
    at_once: int,
):
    path = tmp_path / "s.jsonl"
    last = _write(path, 12)
    expected = json.dumps(_plain(path))
    monkeypatch.setattr(session_stats, "_ENTRIES_AT_ONCE", at_once)
    ranges.clear()
    lines_read.clear()
    assert json.dumps(_once(path, True)) == expected  # the first run: every turn read, then kept
    assert len(lines_read) == 12
    assert ranges[0][0] == 0 and ranges[-1][1] == 24
    assert all(end - start <= at_once for start, end in ranges)
    assert all(ranges[k][1] == ranges[k + 1][0] for k in range(len(ranges) - 1))
    assert len(_store(tmp_path / "index")) == 1
    lines_read.clear()
    assert json.dumps(_once(path, True)) == expected and lines_read == []  # a reopen: none read
    _write(path, 5, first=12, parent=last)  # pi appends
    expected = json.dumps(_plain(path))
    lines_read.clear()
    assert json.dumps(_once(path, True)) == expected
    assert lines_read == [f"a{n}" for n in range(12, 17)]  # only the new turns read, and kept
    lines_read.clear()
    assert json.dumps(_once(path, True)) == expected and lines_read == []


def test_the_usage_values_are_kept_packed(tmp_path: Path):
    """The turns kept hold a column of ints (or of floats) as the bytes of its array: read back, a
    value costs 8 bytes, not an object; a column of values of several kinds is kept as a list."""
    path = tmp_path / "s.jsonl"
    _write(path, 12)
    expected = _plain(path)
    assert _once(path, True) == expected
    (store,) = _store(tmp_path / "index")
    body = cache_dir.unframed(store.read_bytes(), turn_store.MAGIC, turn_store.FORMAT_VERSION)
    assert body is not None
    stored = turn_store._decode(body)
    kinds = {key: type(column) for key, column in zip(session_stats.USAGE_KEYS, stored.values, strict=False)}
    # (test_turn_store's usages: the inputs, outputs and totals of several kinds; cache reads all ints)
    assert kinds["input"] is list and kinds["cacheRead"] is list
    plain = tmp_path / "plain.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        usage = line.get("message", {}).get("usage")
        if usage is not None:
            line["message"]["usage"] = {
                "input": 7,
                "output": 2,
                "cacheRead": 0,
                "cacheWrite": 1,
                "totalTokens": 10,
            }
            line["message"]["usage"]["cost"] = {"total": 0.5}
    plain.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    expected = _plain(plain)
    assert _once(plain, True) == expected
    (store,) = (s for s in _store(tmp_path / "index") if s.read_bytes() != store.read_bytes())
    stored = turn_store._decode(
        cache_dir.unframed(store.read_bytes(), turn_store.MAGIC, turn_store.FORMAT_VERSION)  # type: ignore[arg-type]
    )
    assert stored.packed == "qqqqqd" and all(type(column) is memoryview for column in stored.values)
    assert _once(plain, True) == expected  # read back
