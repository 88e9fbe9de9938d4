"""A verdict per entry, the entries of the session's file kept one byte per line: each entry's
verdict is its own (an entry of another file at the same line, or made from a value, is not
mistaken for it) and forgetting one forgets that one alone."""

from __future__ import annotations

from pathlib import Path

from test_silent_turns import _branchy

from pi_session_server.format.entry import Entry
from pi_session_server.format.scan import FileLineSource
from pi_session_server.session import SessionManager
from pi_session_server.session.entry_verdicts import EntryVerdicts


def test_the_entries_of_a_file_are_kept_by_line_and_the_others_by_entry(tmp_path: Path) -> None:
    path = _branchy(tmp_path / "s.jsonl", turns=12)
    with (
        SessionManager.open(str(path), read_only=True, index=False) as first,
        SessionManager.open(str(path), read_only=True, index=False) as second,
    ):
        entries, again = first.get_entries(), second.get_entries()
        assert [e.line for e in entries] == [e.line for e in again]  # (the same lines)
        made = Entry.of({"type": "message", "id": "x", "parentId": None}, line=entries[0].line)
        verdicts = EntryVerdicts()
        for at, entry in enumerate(entries):
            verdicts.put(entry, at % 3 == 0)
        assert all(verdicts.get(e) is None for e in [*again, made])
        assert not verdicts._others  # (one byte per line)
        verdicts.put(again[1], True)
        verdicts.put(made, False)
        assert [verdicts.get(e) for e in entries] == [at % 3 == 0 for at in range(len(entries))]
        assert verdicts.get(again[1]) is True and verdicts.get(made) is False
        assert set(verdicts._others) == {again[1], made}

        assert verdicts.pop(entries[3]) is True and verdicts.get(entries[3]) is None
        assert verdicts.pop(entries[3]) is None
        assert verdicts.pop(entries[4]) is False and verdicts.get(entries[4]) is None
        assert verdicts.pop(made) is False and verdicts.get(made) is None
        assert verdicts.get(entries[6]) is True and verdicts.get(again[1]) is True
        verdicts.put(entries[3], False)
        assert verdicts.get(entries[3]) is False


def test_lines_far_apart_and_out_of_order_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    source = FileLineSource(str(path))
    at = [Entry.of({"type": "message"}, source=source, line=line) for line in (9, 2, 100_000, 0, 57)]
    verdicts = EntryVerdicts()
    for n, entry in enumerate(at):
        assert verdicts.get(entry) is None
        verdicts.put(entry, n % 2 == 1)
    assert [verdicts.get(e) for e in at] == [False, True, False, True, False] and not verdicts._others
    assert verdicts.get(Entry.of({"type": "message"}, source=source, line=58)) is None
    assert verdicts.get(Entry.of({"type": "message"}, source=source, line=200_000)) is None
