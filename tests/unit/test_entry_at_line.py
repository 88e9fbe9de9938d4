"""SessionManager.entry_at_line: the entry on a line of the file, as the tree's nodes place it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from test_protocol_tree_filters import EXAMPLE, random_session

from pi_session_server.errors import ArgOutOfRangeError, InvalidArgTypeError
from pi_session_server.format.entry import Entry
from pi_session_server.session import SessionManager
from pi_session_server.session.chains import entry_on_line


def lines_of_tree(m: SessionManager) -> dict[int, object]:
    """line -> entry, from the tree (every node that came from a line of the file)."""
    found: dict[int, object] = {}
    stack = list(m.get_tree())
    while stack:
        node = stack.pop()
        if node.entry.line >= 0:
            found[node.entry.line] = node.entry
        stack.extend(node.children)
    return found


def test_every_line_of_random_sessions_answers_what_the_tree_places_there(tmp_path: Path) -> None:
    rng = random.Random(11)
    for i in range(6):
        path = tmp_path / f"s{i}.jsonl"
        random_session(rng, path)
        for m in (SessionManager.open(str(path)), SessionManager.open(str(path), read_only=True)):
            placed = lines_of_tree(m)
            count = len(path.read_text().splitlines())
            for line in range(-1, count + 3):
                assert m.entry_at_line(line) is placed.get(line), (path, line)


def test_header_blank_broken_and_foreign_lines_have_no_entry(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text().splitlines()
    path = tmp_path / "damaged.jsonl"
    # line 1 blank, line 3 broken, line 5 not an object: the entries after them keep their lines
    path.write_text("\n".join([lines[0], "", lines[1], "{not json", lines[2], "[1, 2]", *lines[3:]]) + "\n")
    m = SessionManager.open(str(path), read_only=True)
    assert [m.entry_at_line(n) for n in (0, 1, 3, 5)] == [None] * 4
    for line in (2, 4, 6, 7):
        entry = m.entry_at_line(line)
        assert entry is not None and entry.id == json.loads(path.read_text().splitlines()[line])["id"]


def test_appended_entries_are_found_on_their_new_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(EXAMPLE.read_text())
    m = SessionManager.open(str(path))
    before = len(path.read_text().splitlines())
    new_id = m.append_message({"role": "user", "content": "appended", "timestamp": 1})
    assert m.entry_at_line(before) is m.get_entry(new_id)
    assert json.loads(path.read_text().splitlines()[before])["id"] == new_id


def test_entries_not_written_to_a_file_have_no_line() -> None:
    m = SessionManager.in_memory("/w")
    m.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert m.get_entries()[0].line == -1
    assert [m.entry_at_line(n) for n in (-1, 0, 1)] == [None, None, None]


def test_lines_out_of_order_are_still_found() -> None:
    entries = [Entry.of({"id": str(n)}, line=n) for n in (0, 1, 2, 7, 8)]
    entries += [Entry.of({"id": "x"}), Entry.of({"id": "late"}, line=5)]  # none, then a lower line
    for line, expected in ((0, "0"), (2, "2"), (5, "late"), (7, "7"), (8, "8")):
        found = entry_on_line(entries, line)
        assert found is not None and found.id == expected, line
    assert [entry_on_line(entries, n) for n in (-1, 3, 6, 9)] == [None] * 4


@pytest.mark.parametrize(
    ("line", "received"),
    [
        (None, "null"),
        ("3", "type string ('3')"),
        ("a line number given as a long text", "type string ('a line number given as a ...')"),
        (True, "type boolean (true)"),
        ([3], "an instance of Array"),
    ],
)
def test_a_line_that_is_no_number_is_refused_with_node_s_error(line: object, received: str) -> None:
    m = SessionManager.open(str(EXAMPLE), read_only=True)
    with pytest.raises(InvalidArgTypeError) as refused:
        m.entry_at_line(line)  # type: ignore[arg-type]
    assert str(refused.value) == f'The "line" argument must be of type number. Received {received}'
    assert refused.value.code == "ERR_INVALID_ARG_TYPE"


def test_a_line_that_is_no_whole_number_is_refused_and_a_whole_float_taken() -> None:
    m = SessionManager.open(str(EXAMPLE), read_only=True)
    assert m.entry_at_line(3.0) is m.entry_at_line(3) is not None  # (3.0 is 3 in JavaScript)
    for line, shown in ((3.5, "3.5"), (float("nan"), "NaN"), (float("inf"), "Infinity")):
        with pytest.raises(ArgOutOfRangeError) as refused:
            m.entry_at_line(line)  # type: ignore[arg-type]
        assert str(refused.value) == (
            f'The value of "line" is out of range. It must be an integer. Received {shown}'
        )
