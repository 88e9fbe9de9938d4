"""A read-only open of a large version 1 session loads it as a current one, as a version 2 one's
does (test_read_only_version_2): its entries' ids and parents are drawn as its lines are scanned
(as the migration of the values together draws them: same positions, same source), and each value
is migrated as it is read again (linked by its position: its id, its parent, a compaction's kept
entry). Every public result is the one a load holding the migrated values gives (a smaller file's
load: the tests make every file "large")."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from old_sessions import (
    KIT_FIXTURES,
    assert_commands_print_as_held,
    held_open,
    index_setting,
    public_results,
    read_as_large,
)

from pi_session_server.session import file_load, loader
from pi_session_server.session.manager import SessionManager


def _line(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _message(n: int, role: str = "user", **more: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "timestamp": f"2025-01-01T00:00:{n:02}.000Z",
        "message": {"role": role, "content": f"m{n}", "timestamp": n, **more},
    }


def _crafted() -> bytes:
    """Messages (hooks' among them), values that are no object (they count as positions), a line
    that is not JSON (it does not), compactions naming an earlier entry, a later one, themselves,
    the header, a value that is no object and no position, an entry carrying an id (passed over by
    the ids drawn), a custom message, labels, a second session line, a line nested too deep for
    the scan's decoder, a value that is no object after the last entry."""
    values: list[Any] = [
        {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        _message(1),
        _message(2, "hookMessage", customType="h", display=True),
        42,
        {**_message(3, "assistant", provider="p", model="m", stopReason="stop"), "id": "carried"},
        {"type": "compaction", "timestamp": "x", "summary": "back", "firstKeptEntryIndex": 2},
        {"type": "compaction", "timestamp": "x", "summary": "on", "firstKeptEntryIndex": 12},
        {"type": "compaction", "timestamp": "x", "summary": "self", "firstKeptEntryIndex": 7},
        {
            "type": "compaction",
            "timestamp": "x",
            "summary": "header",
            "firstKeptEntryId": "k",
            "firstKeptEntryIndex": 0,
        },
        {"type": "compaction", "timestamp": "x", "summary": "no object", "firstKeptEntryIndex": 3},
        {"type": "compaction", "timestamp": "x", "summary": "past", "firstKeptEntryIndex": 99},
        {"type": "custom_message", "timestamp": "x", "customType": "c", "content": "custom", "display": True},
        {**_message(4, "hookMessage", customType="h", display=False), "id": "later"},
        {"type": "label", "timestamp": "x", "targetId": "carried", "label": "l"},
        {"type": "session", "id": "again", "timestamp": "x"},
        _message(5),
        _message(6),
        {
            "type": "compaction",
            "timestamp": "x",
            "summary": "last",
            "firstKeptEntryId": "k",
            "firstKeptEntryIndex": 18,
        },
        "the last value",
    ]
    lines = [_line(v) for v in values]
    lines.insert(4, "not json {\n")
    deep = "[" * 1200 + "1" + "]" * 1200  # (as text: deeper than Python encodes)
    lines[16] = lines[16].replace('"content":"m5"', f'"content":"m5","deep":{deep}')
    return "".join(lines).encode()


def _version_1_sessions() -> list[tuple[str, bytes]]:
    """The kit's version 1 sessions and the crafted one."""
    found = [("crafted", _crafted())]
    for path in sorted(KIT_FIXTURES.glob("*/*.jsonl")):
        data = path.read_bytes()
        if json.loads(data.split(b"\n", 1)[0]).get("version", 1) == 1:
            found.append((f"{path.parent.name}/{path.name}", data))
    return found


VERSION_1_SESSIONS = _version_1_sessions()


def test_the_sessions_hold_the_kits_version_1_files_and_compactions() -> None:
    """(The sessions compared below: the kit's version 1 files, a compaction among them.)"""
    names = [name for name, _ in VERSION_1_SESSIONS]
    assert "real/whamp-pi-v1-linear.jsonl" in names and len(names) >= 5
    assert sum(data.count(b'"firstKeptEntryIndex"') for _, data in VERSION_1_SESSIONS) > 6


@pytest.fixture
def large_files(monkeypatch: pytest.MonkeyPatch) -> None:
    read_as_large(monkeypatch)


@pytest.fixture(params=[False, True], ids=["no-index", "index"])
def index(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool | Path:
    return index_setting(request.param, tmp_path, monkeypatch)


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit, which msgspec's decoding follows: the crafted file's line
    nested too deep for the scan is so under it (a test before this one in the process may have
    raised the limit)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("large_files", "default_recursion_limit")
def test_a_read_only_open_of_a_large_version_1_file_reads_its_values_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_crafted())
    held = held_open(path, False)
    monkeypatch.setattr(file_load, "load_exact", None)  # the whole-file read is not made
    session = SessionManager.open(str(path), read_only=True, index=False)
    entries = session.get_entries()
    assert len(entries) == 15  # (the second session line is no entry of the session)
    assert [e.is_loaded for e in entries] == [e.line == 16 for e in entries]  # (too deep: the scan's)
    assert [(e.id, e.parent_id) for e in entries] == [(e.id, e.parent_id) for e in held.get_entries()]
    assert session.get_header()["version"] == 3
    roles = ["user", "custom", "assistant", "custom", "user", "user"]
    assert [e.role for e in entries if e.type == "message"] == roles  # before a value is read
    kept = {e.value["summary"]: e.value.get("firstKeptEntryId") for e in entries if e.type == "compaction"}
    by_line = {e.line: e.id for e in entries}
    # an earlier entry's id drawn, a later one's as it carries it (as pi's migration in order finds it)
    assert kept == {
        "back": by_line[2],
        "on": "later",
        "self": by_line[8],
        "header": "k",
        "no object": None,
        "past": None,
        "last": None,  # (removed: the value it names is no entry)
    }
    assert path.read_bytes() == _crafted()  # nothing written


@pytest.mark.parametrize(("name", "data"), VERSION_1_SESSIONS, ids=[n for n, _ in VERSION_1_SESSIONS])
@pytest.mark.usefixtures("large_files")
def test_every_public_result_is_the_held_loads(
    tmp_path: Path, name: str, data: bytes, index: bool | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    held = public_results(held_open(path, index))
    for _ in range(2):  # (a second open would read an index the first one wrote)
        with monkeypatch.context() as patch:
            patch.setattr(file_load, "load_exact", None)  # lazy: the whole-file read is not made
            lazy = SessionManager.open(str(path), read_only=True, index=index)
        assert public_results(lazy) == held
    if index:  # its ids are drawn at each open, as the held load draws them: no index is kept
        assert not Path(index).exists() or not any(Path(index).iterdir())
    assert path.read_bytes() == data


@pytest.mark.parametrize(("name", "data"), VERSION_1_SESSIONS, ids=[n for n, _ in VERSION_1_SESSIONS])
@pytest.mark.usefixtures("large_files")
def test_the_commands_print_what_they_print_of_the_held_load(
    tmp_path: Path,
    name: str,
    data: bytes,
    index: bool | Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert_commands_print_as_held(path, index, capsys, monkeypatch)


@pytest.mark.parametrize("large", [False, True], ids=["held", "lazy"])
def test_a_line_appended_to_a_version_1_file_viewed_is_read_with_the_file_migrated(
    tmp_path: Path, large: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version 1 line appended (by an older pi) gets its id as an open of the file now gives it,
    held or lazy: the file is read again whole (a later line's id can be one drawn already)."""
    if large:
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    path = tmp_path / "s.jsonl"
    path.write_bytes(_crafted())
    session = SessionManager.open(str(path), read_only=True, index=False)
    with path.open("a") as file:
        file.write(_line(_message(7, "hookMessage", customType="h", display=True)))
    assert session.refresh_from_disk().kind == "reloaded"
    assert public_results(session) == public_results(held_open(path, False))
    assert session.get_entries()[-1].role == "custom"
