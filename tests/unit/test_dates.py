"""ms(x) and ISO timestamps (docs/FORMAT.md §2.5, D9), checked against Node (TZ=UTC)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.format.dates import file_timestamp, iso_from_ms, ms, now_iso, now_ms
from pi_session_server.format.jsvalue import ABSENT

CORPUS = json.loads((Path(__file__).parent / "data" / "js_text_corpus.json").read_text())


def _nan_to_none(x: int | float) -> int | float | None:
    return None if isinstance(x, float) and math.isnan(x) else x


def test_ms_matches_node_on_corpus(tz: Any) -> None:
    tz("UTC")
    legacy = set(CORPUS["legacy_dates"])
    mismatches = [(s, t, ms(s)) for s, t in CORPUS["dates"] if s not in legacy and _nan_to_none(ms(s)) != t]
    assert mismatches == []
    valid = [t for s, t in CORPUS["dates"] if t is not None]
    assert len(valid) > 150


def test_legacy_only_strings_are_nan() -> None:
    for s in CORPUS["legacy_dates"]:
        assert math.isnan(ms(s)), s


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-01-01T00:00:00Z", 1735689600000),
        ("2025-01", 1735689600000),
        ("2025-01-01T00:00:00.1234567Z", 1735689600123),
        ("2025-01-01T00:00:00+01:00", 1735686000000),
        ("2025-01-01 00:00:00z", 1735689600000),
        ("2025-01-01t01:00:00+0100", 1735689600000),
        (None, 0),
        (True, 1),
        (False, 0),
        (1.9, 1),
        (-1.9, -1),
        (-0.0, 0),
        (8.64e15, 8640000000000000),
    ],
)
def test_ms_examples(value: Any, expected: int) -> None:
    result = ms(value)
    assert result == expected and type(result) is int


@pytest.mark.parametrize(
    "value", [ABSENT, [], {}, [1], "", "x", 8.64e15 + 1, math.inf, -math.inf, math.nan, 10**30]
)
def test_ms_nan(value: Any) -> None:
    result = ms(value)
    assert isinstance(result, float) and math.isnan(result)


def test_offsetless_date_times_are_local(tz: Any) -> None:
    tz("Europe/Berlin")
    assert ms("2025-01-01T10:00") == 1735722000000
    assert ms("2025-07-01T10:00") == 1751356800000
    assert ms("2025-01-01") == 1735689600000  # date-only forms stay UTC
    assert ms("2025-03-30T02:30") == 1743298200000  # skipped hour: offset from before the change
    assert ms("2025-10-26T02:30") == 1761438600000  # repeated hour: the earlier instant
    tz("America/New_York")
    assert ms("2025-01-01 10:00") == 1735743600000
    assert ms("2025-10-26T02:30") == 1761460200000


def test_iso_from_ms_matches_node() -> None:
    for t, iso in CORPUS["iso"]:
        assert iso_from_ms(t) == iso, t
        assert iso_from_ms(float(t)) == iso, t


def test_iso_from_ms_invalid() -> None:
    assert iso_from_ms(math.nan) is None
    assert iso_from_ms(math.inf) is None
    assert iso_from_ms(8.64e15 + 1) is None
    assert iso_from_ms(1.9) == "1970-01-01T00:00:00.001Z"


def test_ms_and_iso_round_trip() -> None:
    for t, iso in CORPUS["iso"]:
        if iso is not None:
            assert ms(iso) == t


def test_now() -> None:
    before = time.time_ns() // 1_000_000
    stamp = now_iso()
    after = now_ms()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    assert before <= ms(stamp) <= after


def test_file_timestamp() -> None:
    assert file_timestamp("2026-11-30T09:13:48.180Z") == "2026-11-30T09-13-48-180Z"
