"""Appends racing a foreign writer (findings #1 and #3 in CHANGELOG.md).

The race is made deterministic: ``storage.write_all`` is wrapped so that a foreign write lands
right before ours, that is between our look at the file (fstat, pread) and our write(), the window
a writer without a lock can always hit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, storage

USER = {"role": "user", "content": "hi", "timestamp": 1}
ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "yo"}],
    "provider": "p",
    "model": "m",
    "timestamp": 2,
}
FOREIGN = (
    b'{"type":"custom","customType":"x","id":"f0000001","parentId":null,'
    b'"timestamp":"2026-01-01T00:00:00.000Z"}\n'
)
HALF = FOREIGN[:40]  # the first write() of a writer that splits its lines


@pytest.fixture
def session(tmp_path: Path) -> Iterator[SessionManager]:
    manager = SessionManager.create("/proj", str(tmp_path))
    manager.append_message(USER)
    manager.append_message(ASSISTANT)  # the file exists from here on: appends go straight to it
    yield manager
    manager.close()


def _foreign_writes_before_ours(monkeypatch: pytest.MonkeyPatch, path: str, fragments: list[bytes]) -> None:
    """Before each of our next writes, another process appends the next fragment (no lock)."""
    real_write_all = storage.write_all
    pending = list(fragments)

    def write_all(fd: int, data: bytes) -> None:
        if pending:
            foreign = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(foreign, pending.pop(0))
            finally:
                os.close(foreign)
        real_write_all(fd, data)

    monkeypatch.setattr(storage, "write_all", write_all)


def _lines(path: str) -> list[bytes]:
    return Path(path).read_bytes().split(b"\n")


def _line_holding(path: str, entry_id: str) -> int:
    needle = b'{"type":"message","id":"' + entry_id.encode() + b'"'
    return next(n for n, line in enumerate(_lines(path)) if line.startswith(needle))


# -- #3: a line glued onto a foreign half-line is written again ------------------------------------


def test_a_line_glued_onto_a_foreign_fragment_lands_again_on_its_own_line(session, monkeypatch):
    path = session.get_session_file()
    before = len(_lines(path)) - 1
    _foreign_writes_before_ours(monkeypatch, path, [HALF])
    mine = session.append_message(USER)
    lines = _lines(path)
    # the glued copy is blanked out: its line holds the foreign fragment alone, ours follows it
    assert lines[before] == HALF + b" " * (len(lines[before]) - len(HALF))
    assert lines[before + 1].startswith(b'{"type":"message","id":"' + mine.encode())
    entry = session.get_entry(mine)
    assert entry.line == before + 1
    raw = Path(path).read_bytes()
    assert raw[entry.offset : entry.offset + entry.length + 1] == lines[before + 1] + b"\n"
    fresh = SessionManager.open(path, read_only=True)
    assert [e.id for e in fresh.get_entries()].count(mine) == 1
    assert [p.line for p in fresh.problems] == [before]
    fresh.close()


def test_the_foreign_write_in_between_is_reported_and_the_next_refresh_matches_a_fresh_open(
    session, monkeypatch
):
    path = session.get_session_file()
    size = os.path.getsize(path)
    _foreign_writes_before_ours(monkeypatch, path, [HALF])
    mine = session.append_message(USER)
    events = session.drain_events()
    assert [(e.expected_size, e.found_size) for e in events] == [(size, size + len(HALF))]
    session.refresh_from_disk()
    fresh = SessionManager.open(path, read_only=True)
    assert [(e.id, e.line) for e in session.get_entries()] == [(e.id, e.line) for e in fresh.get_entries()]
    assert session.get_entry(mine).line == _line_holding(path, mine)
    fresh.close()


def test_a_writer_in_step_with_us_is_outrun_by_a_copy_that_brings_its_own_newline(session, monkeypatch):
    """Fragments land before our first three writes: the first rewrite trusts the end of the file and
    is glued again; the second starts with its own "\\n" and cannot be glued."""
    path = session.get_session_file()
    before = len(_lines(path)) - 1
    fragments = [b'{"type":"custom","n":1,', b'{"type":"custom","n":2,', b'{"type":"custom","n":3,']
    _foreign_writes_before_ours(monkeypatch, path, fragments)
    mine = session.append_message(USER)
    lines = _lines(path)
    assert [line.rstrip(b" ") for line in lines[before : before + 3]] == fragments
    assert lines[before + 3].startswith(b'{"type":"message","id":"' + mine.encode())
    assert session.get_entry(mine).line == before + 3
    assert Path(path).read_bytes().count(mine.encode() + b'","parentId"') == 1


def test_a_fragment_of_json_whitespace_leaves_our_line_valid_where_it_is(session, monkeypatch):
    path = session.get_session_file()
    before = len(_lines(path)) - 1
    _foreign_writes_before_ours(monkeypatch, path, [b" \t "])
    mine = session.append_message(USER)
    lines = _lines(path)
    assert lines[before].startswith(b' \t {"type":"message","id":"' + mine.encode())
    assert len(lines) == before + 2  # written once
    fresh = SessionManager.open(path, read_only=True)
    assert fresh.get_entry(mine) is not ABSENT and fresh.problems == []
    fresh.close()


def test_complete_foreign_lines_in_between_are_no_glue(session, monkeypatch):
    path = session.get_session_file()
    _foreign_writes_before_ours(monkeypatch, path, [FOREIGN])
    mine = session.append_message(USER)
    assert session.get_entry(mine).line == _line_holding(path, mine)
    assert b"  " not in Path(path).read_bytes()  # nothing blanked out
    assert len(session.drain_events()) == 1


def test_storage_alone_reports_the_valid_copy(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    storage.append_lines(path, b'{"a":1}\n')
    _foreign_writes_before_ours(monkeypatch, path, [b'{"half'])
    outcome = storage.append_lines(path, b'{"b":2}\n')
    assert Path(path).read_bytes() == b'{"a":1}\n{"half       \n{"b":2}\n'
    assert (outcome.start, outcome.end, outcome.size_before, outcome.written_at) == (22, 30, 8, 14)
    assert outcome.interleaved and not outcome.repaired_newline


def test_the_fast_path_reads_nothing(tmp_path, monkeypatch):
    """Nobody else wrote: fstat, write, lseek, and no pread at all."""
    path = str(tmp_path / "f.jsonl")
    appender = storage.Appender(path)
    appender.append(b'{"a":1}\n')
    reads: list[tuple[int, int]] = []
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        reads.append((n, offset))
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    outcome = appender.append(b'{"b":2}\n', lines_since=8)
    appender.close()
    assert reads == []
    assert (outcome.start, outcome.newlines_before, outcome.interleaved) == (8, 0, False)


# -- #1: our line is numbered at once, counting the foreign lines before it ------------------------


def test_line_of_an_append_after_foreign_lines_is_right_at_once(session):
    path = session.get_session_file()
    with open(path, "ab") as f:
        f.write(FOREIGN + FOREIGN.replace(b"f0000001", b"f0000002"))
    mine = session.append_message(USER)
    assert session.get_entry(mine).line == _line_holding(path, mine)
    second = session.append_message(USER)  # and the count carries on from there
    assert session.get_entry(second).line == _line_holding(path, second)


def test_line_of_an_append_after_a_foreign_partial_line_counts_the_separator(session):
    path = session.get_session_file()
    with open(path, "ab") as f:
        f.write(FOREIGN + HALF)  # a foreign writer died mid-line
    mine = session.append_message(USER)
    assert session.get_entry(mine).line == _line_holding(path, mine)


def test_newlines_before_counts_from_the_offset_given(tmp_path):
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b"a\nb\nc")
    with storage.Appender(path) as appender:
        outcome = appender.append(b"d\n", lines_since=2)
    assert Path(path).read_bytes() == b"a\nb\nc\nd\n"
    assert (outcome.start, outcome.newlines_before, outcome.repaired_newline) == (6, 2, True)


def test_count_newlines_reads_in_chunks(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_bytes(b"x\n" * 1000)
    monkeypatch.setattr(storage, "_COUNT_CHUNK", 7)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert storage.count_newlines(fd, 3, 2000) == 999
        assert storage.count_newlines(fd, 0, 10_000) == 1000  # the file is shorter: counts what is there
    finally:
        os.close(fd)


# -- finding 15: a look that caught pi's line halfway through its write() -------------------------
# pi appends each line with one write() and no lock; the file grows page by page while a big line
# is copied in, so a look at its end can see a line that is finished a moment later.


def test_a_separator_needless_by_the_time_it_lands_becomes_a_space(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    _foreign_writes_before_ours(monkeypatch, path, [FOREIGN[len(HALF) :]])
    outcome = storage.append_lines(path, b'{"b":2}\n')
    assert Path(path).read_bytes() == b'{"a":1}\n' + FOREIGN + b' {"b":2}\n'
    assert not outcome.repaired_newline


def test_the_load_time_repair_of_a_line_finished_meanwhile_leaves_no_blank_line(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    _foreign_writes_before_ours(monkeypatch, path, [FOREIGN[len(HALF) :]])
    assert storage.repair_trailing_newline(path) == -1  # the newline finished nothing
    assert Path(path).read_bytes() == b'{"a":1}\n' + FOREIGN + b" "
    # the space needs no separator before the next line: ours and pi's (a plain append) parse
    storage.append_lines(path, b'{"b":2}\n')
    assert Path(path).read_bytes() == b'{"a":1}\n' + FOREIGN + b' {"b":2}\n'


def test_the_next_load_time_repair_leaves_a_blanked_newline_as_it_is(tmp_path, monkeypatch):
    """The next open of a file whose newline of ours was blanked out: its last "line" is that
    space. Finishing it with a newline (what pi's repair does) would leave a line of one space."""
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    _foreign_writes_before_ours(monkeypatch, path, [FOREIGN[len(HALF) :]])
    assert storage.repair_trailing_newline(path) == -1
    monkeypatch.undo()
    assert storage.repair_trailing_newline(path) == -1
    assert Path(path).read_bytes() == b'{"a":1}\n' + FOREIGN + b" "
    # whitespace of any writer after the last newline too; a line that is no blank one is finished
    for tail, repaired in [(b" \t ", b" \t "), (b"\r", b"\r"), (b" {", b" {\n")]:
        Path(path).write_bytes(b'{"a":1}\n' + tail)
        storage.repair_trailing_newline(path)
        assert Path(path).read_bytes() == b'{"a":1}\n' + repaired


def test_the_load_time_repair_still_finishes_a_line_cut_short(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    assert storage.repair_trailing_newline(path) == 8 + len(HALF)
    assert Path(path).read_bytes() == b'{"a":1}\n' + HALF + b"\n"
    # a writer that splits its lines wrote more of one meanwhile: our newline ends that line
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    _foreign_writes_before_ours(monkeypatch, path, [b'"more'])
    assert storage.repair_trailing_newline(path) == 8 + len(HALF) + 5
    assert Path(path).read_bytes() == b'{"a":1}\n' + HALF + b'"more\n'


def test_opening_a_session_while_pi_writes_a_line_leaves_no_blank_line(session, monkeypatch):
    path = session.get_session_file()
    with open(path, "ab") as f:
        f.write(HALF)  # the open reads the file while pi's write() is halfway through
    _foreign_writes_before_ours(monkeypatch, path, [FOREIGN[len(HALF) :]])
    opened = SessionManager.open(path)
    monkeypatch.undo()
    mine = opened.append_message(USER)
    assert [n for n, line in enumerate(_lines(path)[:-1]) if not line.strip()] == []
    opened.refresh_from_disk()
    fresh = SessionManager.open(path, read_only=True)
    assert fresh.problems == []
    assert [(e.id, e.line) for e in opened.get_entries()] == [(e.id, e.line) for e in fresh.get_entries()]
    ours = _lines(path)[opened.get_entry(mine).line]
    assert ours.startswith(b' {"type":"message","id":"' + mine.encode())  # after the blanked newline
    assert "f0000001" in [e.id for e in fresh.get_entries()]
    opened.close()
    fresh.close()


def test_the_load_time_repair_leaves_a_line_still_being_written_to_its_writer(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    Path(path).write_bytes(b'{"a":1}\n' + HALF)
    real_sleep = storage.time.sleep

    def writer_goes_on(seconds: float) -> None:  # the writer copies more of its line meanwhile
        with open(path, "ab") as f:
            f.write(b'"more')
        real_sleep(seconds)

    monkeypatch.setattr(storage.time, "sleep", writer_goes_on)
    assert storage.repair_trailing_newline(path) == -1
    assert Path(path).read_bytes() == b'{"a":1}\n' + HALF + b'"more'
