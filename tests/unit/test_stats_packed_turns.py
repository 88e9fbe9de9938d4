"""pi/getStats packs the turns' usage values into arrays of ints or floats where every value is one
(``session_stats._packed_onto``): a session of GBs has hundreds of thousands of turns, an int
object each per value held while they are summed and kept. The totals are those of the values as
read, whatever mix of values the turns hold, and so are those of the turns kept then read back."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest
from test_turn_store import ODD_USAGES, _kept, _plain, _store, _write

from pi_session_server.server import session_stats
from pi_session_server.session import cache_dir, turn_store

PLAIN_USAGES: list[Any] = [
    {
        "input": 1200,
        "output": 300,
        "cacheRead": 0,
        "cacheWrite": 7,
        "totalTokens": 1507,
        "cost": {"total": 0.25},
    },
    {
        "input": 10,
        "output": 3,
        "cacheRead": 40000,
        "cacheWrite": 0,
        "totalTokens": 40013,
        "cost": {"total": 0.5},
    },
]


@pytest.fixture(autouse=True)
def _small_sessions_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    monkeypatch.setattr(turn_store, "MIN_STORED", 4)
    monkeypatch.setattr(cache_dir, "RACY_NS", 0)


def test_values_are_packed_while_each_is_an_int_or_each_a_float() -> None:
    packed = turn_store.packed([1, 2, 3])
    assert packed == array("q", [1, 2, 3])
    assert turn_store.packed([0.5, 1.5]) == array("d", [0.5, 1.5])
    assert turn_store.packed([0.5, 1.5], array("q")) == array("d", [0.5, 1.5])
    assert turn_store.packed(array("q", [4]), packed) == array("q", [1, 2, 3, 4])
    # a value of another kind: a list of the values as they were, from then on
    for odd in (2.5, None, True, 2**63, "7"):
        mixed = turn_store.packed([3, odd], array("q", [1, 2]))
        assert type(mixed) is list and mixed == [1, 2, 3, odd]
        assert [type(value) for value in mixed] == [int, int, int, type(odd)]
        assert turn_store.packed([4], mixed) == [1, 2, 3, odd, 4]
    assert turn_store.packed(array("q", [5]), array("d", [0.5])) == [0.5, 5]


@pytest.mark.parametrize("usages", [PLAIN_USAGES, ODD_USAGES, PLAIN_USAGES * 3 + ODD_USAGES[:1]])
@pytest.mark.parametrize("every", [1, 2, 5])
def test_totals_of_packed_turns_are_those_read_also_kept_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usages: list[Any], every: int
) -> None:
    monkeypatch.setattr("test_turn_store.ODD_USAGES", usages)
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 14)
    expected = json.dumps(_plain(path))  # (packed once, at the end)
    monkeypatch.setattr(session_stats, "_PACKED_EVERY", every)
    assert json.dumps(_plain(path)) == expected
    assert json.dumps(_kept(path, index)) == expected  # read, and kept
    assert len(_store(index)) == 1
    assert json.dumps(_kept(path, index)) == expected  # read back
