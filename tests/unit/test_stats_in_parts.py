"""pi/getStats of a session that nothing can be kept of (no index) is counted a part of the entries
at a time (``session_stats._ENTRIES_AT_ONCE``): the columns of one part are dropped before the next
is made, so that a session of GBs does not hold its every entry's envelope and turn at once. The
totals are those of the whole counted at once. With an index too: the turns are still kept with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_stats_packed_turns import _small_sessions_kept  # noqa: F401 - autouse: each session indexed
from test_turn_store import _kept, _plain, _store, _write

from pi_session_server.server import session_stats
from pi_session_server.session.manager import SessionManager


@pytest.fixture
def ranges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The ranges of entries whose envelopes the totals ask for, in order."""
    asked: list[tuple[int, int]] = []
    envelopes = SessionManager.envelopes

    def noted(self: SessionManager, start: int, end: int) -> Any:
        asked.append((start, end))
        return envelopes(self, start, end)

    monkeypatch.setattr(SessionManager, "envelopes", noted)
    return asked


def _session(path: Path) -> None:
    """Turns of three models, their usages odd in every way JSON allows, and a branch off an early
    turn (its parent in an earlier part)."""
    _write(path, 12)
    _write(path, 4, first=12, parent="a3")


@pytest.mark.parametrize("at_once", [1, 3, 5, 7, 16])
def test_without_an_index_the_totals_are_counted_a_part_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ranges: list[tuple[int, int]], at_once: int
):
    path = tmp_path / "s.jsonl"
    _session(path)
    whole = _plain(path)
    assert ranges == [(0, whole["entryCount"])]
    assert whole["branchPoints"] == 1 and whole["leaves"] == 2
    ranges.clear()
    monkeypatch.setattr(session_stats, "_ENTRIES_AT_ONCE", at_once)
    in_parts = _plain(path)
    assert json.dumps(in_parts) == json.dumps(whole)  # the same sums, float for float, the same order
    assert ranges[0][0] == 0 and ranges[-1][1] == whole["entryCount"]
    assert all(end - start <= at_once for start, end in ranges)
    assert all(ranges[k][1] == ranges[k + 1][0] for k in range(len(ranges) - 1))


def test_with_an_index_the_totals_are_counted_a_part_at_a_time_the_turns_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ranges: list[tuple[int, int]]
):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _session(path)
    expected = _plain(path)
    ranges.clear()
    monkeypatch.setattr(session_stats, "_ENTRIES_AT_ONCE", 3)
    assert json.dumps(_kept(path, index)) == json.dumps(expected)
    assert ranges[0][0] == 0 and ranges[-1][1] == expected["entryCount"]
    assert all(end - start <= 3 for start, end in ranges)
    assert _store(index)
    assert json.dumps(_kept(path, index)) == json.dumps(expected)


def test_appended_entries_are_added_to_the_totals_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "s.jsonl"
    _write(path, 6)
    monkeypatch.setattr(session_stats, "_ENTRIES_AT_ONCE", 4)
    cache = session_stats.StatsCache()
    with SessionManager.open(str(path), index=False) as manager:
        before = session_stats.session_stats(manager, cache)
        manager.append_message({"role": "user", "content": "more"})
        after = session_stats.session_stats(manager, cache)
    assert after["entryCount"] == before["entryCount"] + 1
    assert after["roles"]["user"] == before["roles"]["user"] + 1
    assert after["tokens"] == before["tokens"]
