"""What a session's preview cache knows of its silent turns (``_silences``) is held no longer
than the session holds the messages: a reload lets the entries before it go, however often the
session is reloaded, and the messages of the file are kept one byte each, not an item each."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_silent_turns import MESSAGES, _assistants, _expected, _write

from pi_session_server.format.entry import Entry
from pi_session_server.session import SessionManager, preview_cache
from pi_session_server.session.preview_cache import PreviewCache


def _known(cache: PreviewCache) -> list[Entry]:
    return [entry for entry, _silent in cache._silences.items()]


@pytest.fixture(autouse=True)
def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 4)
    monkeypatch.setattr(preview_cache, "SILENCE_BATCH", 16)


def test_a_reloaded_session_lets_the_silences_of_its_entries_before_go(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", MESSAGES)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        cache = PreviewCache(entries=manager.get_entries, entry_count=manager.entry_count)
        before: list[Entry] = []
        for reload in range(4):
            entries = _assistants(manager, from_file=True)
            assert [cache.silent_turn(e) for e in entries] == _expected(entries)
            known = _known(cache)
            assert len(known) == len(entries) and {id(e) for e in known} == {id(e) for e in entries}
            assert not any(e is old for e in known for old in before)
            before = entries
            _write(path, MESSAGES[reload + 1 :] + MESSAGES[: reload + 1])  # rewritten: reloaded
            assert manager.refresh_from_disk().kind == "reloaded"


def test_the_silences_of_a_file_are_kept_beside_its_messages_in_file_order(tmp_path: Path) -> None:
    """Not an item of a dict each (a big session has hundreds of thousands of them)."""
    path = _write(tmp_path / "s.jsonl", MESSAGES * 2)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        cache = PreviewCache(entries=manager.get_entries, entry_count=manager.entry_count)
        entries = _assistants(manager, from_file=True)
        assert [cache.silent_turn(e) for e in entries] == _expected(entries)
        order = cache._silences.order
        assert order is not None and order.listed == entries and all(order.states)
        assert not cache._silences._alone  # (those read before the order was made moved into it)
        assert [cache.silent_turn(e) for e in entries] == _expected(entries)


def test_a_session_appended_to_keeps_the_silences_of_its_entries_alone(tmp_path: Path) -> None:
    """The messages appended after the file's order was made are known alone, as many as they are."""
    path = _write(tmp_path / "s.jsonl", MESSAGES)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        cache = PreviewCache(entries=manager.get_entries, entry_count=manager.entry_count)
        for turn in range(3):
            entries = _assistants(manager, from_file=True)
            for _ in range(2):
                assert [cache.silent_turn(e) for e in entries] == _expected(entries)
            assert {id(e) for e in _known(cache)} == {id(e) for e in entries}
            assert len(_known(cache)) == len(entries)
            _write(path, MESSAGES + MESSAGES[: turn + 1])  # (the same lines, then one more each time)
            assert manager.refresh_from_disk().kind == "appended"
