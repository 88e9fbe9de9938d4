"""Session and entry ids (docs/FORMAT.md §5.2, §5.3)."""

from __future__ import annotations

import re
import threading
import time
import uuid

import pytest

from pi_session_server.errors import InvalidSessionIdError
from pi_session_server.format.ids import (
    SESSION_ID_ERROR_MESSAGE,
    assert_valid_session_id,
    is_valid_session_id,
    new_entry_id,
    uuid7,
)

UUID7_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_uuid7_format_and_timestamp() -> None:
    before = time.time_ns() // 1_000_000
    value = uuid7()
    after = time.time_ns() // 1_000_000
    assert UUID7_RE.fullmatch(value)
    parsed = uuid.UUID(value)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert before <= int(value.replace("-", "")[:12], 16) <= after


def test_uuid7_strictly_increasing_within_one_millisecond() -> None:
    ids = [uuid7() for _ in range(20_000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    stamps = [i[:13] for i in ids]
    assert len(set(stamps)) < len(ids)  # many share a millisecond, yet stay ordered


def test_uuid7_thread_safe() -> None:
    results: list[list[str]] = [[] for _ in range(8)]

    def work(out: list[str]) -> None:
        out.extend(uuid7() for _ in range(2000))

    threads = [threading.Thread(target=work, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for r in results for i in r]
    assert len(set(everything)) == len(everything)
    for r in results:
        assert r == sorted(r)


def test_new_entry_id_is_8_hex() -> None:
    ids = {new_entry_id(lambda _: False) for _ in range(1000)}
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(ids) > 990


def test_new_entry_id_redraws_taken_ids() -> None:
    calls: list[str] = []

    def taken(candidate: str) -> bool:
        calls.append(candidate)
        return len(calls) <= 5

    result = new_entry_id(taken)
    assert len(calls) == 6 and result == calls[-1]


def test_new_entry_id_falls_back_to_full_uuid_after_100_collisions() -> None:
    calls = 0

    def always(_: str) -> bool:
        nonlocal calls
        calls += 1
        return True

    result = new_entry_id(always)
    assert calls == 100
    assert uuid.UUID(result).version == 4 and len(result) == 36


@pytest.mark.parametrize("value", ["abc", "a", "a.b", "a..b", "a_b-c.d", "A9", 123, None, "9", True])
def test_valid_session_ids(value: object) -> None:
    assert is_valid_session_id(value)
    assert_valid_session_id(value)


@pytest.mark.parametrize(
    "value", ["", "-a", "a-", "a b", "a\n", "ü", "a.", "_a", "\uff41", "a\u0131", 1.5e21, -1, [1, 2]]
)
def test_invalid_session_ids(value: object) -> None:
    assert not is_valid_session_id(value)
    with pytest.raises(InvalidSessionIdError) as info:
        assert_valid_session_id(value)
    assert str(info.value) == SESSION_ID_ERROR_MESSAGE


def test_session_id_message_is_verbatim() -> None:
    assert SESSION_ID_ERROR_MESSAGE == (
        "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
        "and start and end with an alphanumeric character"
    )
