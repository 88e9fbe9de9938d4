"""A read-only open of a large version 2 session loads it as a current one: its entries' values
are read from their lines when asked for, each migrated as it is read (version 2 to 3 changes each
value alone), and what the load keeps without reading a value (the header, a message's role, the
persistent index) is what the migrated value says. Every public result is the one a load holding
the migrated values gives (a smaller file's load, which holds them: the tests make every file
"large")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from old_sessions import (
    KIT_FIXTURES,
    as_version_2,
    assert_commands_print_as_held,
    held_open,
    index_setting,
    public_results,
)

from pi_session_server.format.entry import Entry
from pi_session_server.format.scan import observing_lines
from pi_session_server.session import file_load, loader
from pi_session_server.session.manager import SessionManager


def _line(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _crafted() -> bytes:
    """Hook messages (shown and not), a custom message, a compaction, labels (one taken back), a
    branch, a line that is no entry and one that is not JSON."""
    stamp = "2025-01-01T00:00:0{}.000Z"
    lines = [
        {"type": "session", "version": 2, "id": "s2", "timestamp": stamp.format(0), "cwd": "/p"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": stamp.format(1),
            "message": {"role": "user", "content": "hello", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": stamp.format(2),
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "hooked",
                "display": True,
                "timestamp": 2,
            },
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "b",
            "timestamp": stamp.format(3),
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "provider": "p",
                "model": "m",
                "stopReason": "stop",
                "timestamp": 3,
                "usage": {
                    "input": 1,
                    "output": 2,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 3,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
            },
        },
        {
            "type": "compaction",
            "id": "d",
            "parentId": "c",
            "timestamp": stamp.format(4),
            "summary": "so far",
            "firstKeptEntryId": "b",
            "tokensBefore": 10,
        },
        {
            "type": "message",
            "id": "e",
            "parentId": "d",
            "timestamp": stamp.format(5),
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": [{"type": "text", "text": "quiet"}],
                "display": False,
                "timestamp": 5,
            },
        },
        {
            "type": "custom_message",
            "id": "f",
            "parentId": "e",
            "timestamp": stamp.format(6),
            "customType": "x",
            "content": "custom",
            "display": True,
        },
        {
            "type": "label",
            "id": "g",
            "parentId": "f",
            "timestamp": stamp.format(7),
            "targetId": "b",
            "label": "hook",
        },
        {
            "type": "label",
            "id": "h",
            "parentId": "g",
            "timestamp": stamp.format(8),
            "targetId": "c",
            "label": "x",
        },
        {"type": "label", "id": "i", "parentId": "h", "timestamp": stamp.format(9), "targetId": "c"},
        {
            "type": "message",
            "id": "j",
            "parentId": "b",
            "timestamp": stamp.format(9),
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "other branch",
                "display": True,
                "timestamp": 9,
            },
        },
    ]
    text = "".join(map(_line, lines[:6])) + "42\nnot json {\n" + "".join(map(_line, lines[6:]))
    return text.encode()


def _version_2_sessions() -> list[tuple[str, bytes]]:
    """The kit's version 2 sessions, its version 3 ones made version 2, and the crafted one."""
    found = [("crafted", _crafted())]
    for path in sorted(KIT_FIXTURES.glob("*/*.jsonl")):
        data = path.read_bytes()
        if data.startswith(b'{"type":"session","version":3'):
            data = as_version_2(data)
        if json.loads(data.split(b"\n", 1)[0]).get("version") == 2:
            found.append((f"{path.parent.name}/{path.name}", data))
    return found


VERSION_2_SESSIONS = _version_2_sessions()


def test_the_sessions_hold_the_kits_version_2_file_and_hook_messages() -> None:
    """(The sessions compared below: the kit's own version 2 file is among them, and hooks.)"""
    names = [name for name, _ in VERSION_2_SESSIONS]
    assert "real/whamp-pi-v1-canonical-equivalent.jsonl" in names and len(names) > 10
    assert sum(data.count(b'"role":"hookMessage"') for _, data in VERSION_2_SESSIONS) > 10


@pytest.fixture
def large_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file is read as a large one (its lines keep no bytes): a read-only open of a version
    2 file is then lazy."""
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)


@pytest.fixture
def no_whole_file_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The held path's whole-file read fails the test."""

    def whole_file_read(fd: int) -> None:
        raise AssertionError("a version 2 file's values are read whole")

    monkeypatch.setattr(file_load, "load_exact", whole_file_read)


@pytest.fixture(params=[False, True], ids=["no-index", "index"])
def index(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool | Path:
    return index_setting(request.param, tmp_path, monkeypatch)


@pytest.mark.usefixtures("large_files")
def test_a_read_only_open_of_a_large_version_2_file_reads_its_values_when_asked(
    tmp_path: Path, no_whole_file_read: None
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_crafted())
    session = SessionManager.open(str(path), read_only=True, index=False)
    entries = session.get_entries()
    assert len(entries) == 10 and not any(entry.is_loaded for entry in entries)
    assert session.get_header()["version"] == 3
    hooks = [e for e in entries if e.id in ("b", "e", "j")]
    assert [e.role for e in hooks] == ["custom"] * 3  # as the load has them, before a value is read
    assert [e.value["message"]["role"] for e in hooks] == ["custom"] * 3
    assert path.read_bytes() == _crafted()  # nothing written


@pytest.mark.parametrize(("name", "data"), VERSION_2_SESSIONS, ids=[n for n, _ in VERSION_2_SESSIONS])
@pytest.mark.usefixtures("large_files")
def test_every_public_result_is_the_held_loads(
    tmp_path: Path, name: str, data: bytes, index: bool | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    held = public_results(held_open(path, index))
    for _ in range(2):  # (the second open reads the index the first one wrote, when there is one)
        with monkeypatch.context() as patch:
            patch.setattr(file_load, "load_exact", None)  # lazy: the whole-file read is not made
            lazy = SessionManager.open(str(path), read_only=True, index=index)
        assert public_results(lazy) == held
    if index:
        assert any(Path(index).iterdir())  # the lazy opens kept an index of the file
    assert path.read_bytes() == data


@pytest.mark.parametrize(("name", "data"), VERSION_2_SESSIONS, ids=[n for n, _ in VERSION_2_SESSIONS])
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
def test_a_line_appended_to_a_version_2_file_viewed_is_read_migrated(
    tmp_path: Path, large: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held (a small file's view) or lazy, a line another program appends is read as the
    migration leaves it."""
    if large:
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    path = tmp_path / "s.jsonl"
    path.write_bytes(_crafted())
    session = SessionManager.open(str(path), read_only=True, index=False)
    hook = {
        "type": "message",
        "id": "k",
        "parentId": "j",
        "timestamp": "2025-01-01T00:00:10.000Z",
        "message": {"role": "hookMessage", "customType": "h", "content": "late", "display": True},
    }
    with path.open("a") as file:
        file.write(_line(hook))
    observed: list[Entry] = []
    with observing_lines(lambda entry, line: observed.append(entry)):  # (a tree's previews)
        assert session.refresh_from_disk().kind == "appended"
    assert observed == []  # its bytes say hookMessage: previews are made of the migrated value
    entry = session.get_entry("k")
    assert entry.role == "custom" and entry.value["message"]["role"] == "custom"
    assert session.build_session_context()["messages"][-1]["role"] == "custom"


@pytest.mark.usefixtures("large_files")
def test_the_index_of_a_version_2_file_is_not_the_index_of_its_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is named by the file's device and inode and checked against its size, times and
    first bytes: the file migrated in place (pi's rewrite) or renamed over (ours) is read as what it
    is now, not as the index of the version 2 file said."""
    monkeypatch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
    directory = tmp_path / "index"
    path = tmp_path / "s.jsonl"
    path.write_bytes(_crafted())
    viewed = SessionManager.open(str(path), read_only=True, index=directory)
    assert any(directory.iterdir())  # the lazy open kept an index of the version 2 file
    viewed_values = [e.value for e in viewed.get_entries()]
    migrated = tmp_path / "migrated.jsonl"
    shutil.copyfile(path, migrated)
    SessionManager.open(str(migrated), index=False)  # our migration: the file as pi writes it
    in_place = migrated.read_bytes().replace(b'"content":"hooked"', b'"content":"HOOKED"')
    with path.open("r+b") as file:  # pi's: written over the same inode
        file.write(in_place)
        file.truncate()
    expected = SessionManager.open(str(migrated), read_only=True, index=False)
    reread = SessionManager.open(str(path), read_only=True, index=directory)
    assert reread.get_entry("b").value["message"]["content"] == "HOOKED"
    assert [e.value for e in reread.get_entries()] != viewed_values
    assert reread.get_header() == expected.get_header()
    os.replace(migrated, path)  # ours: renamed over it
    renamed = SessionManager.open(str(path), read_only=True, index=directory)
    assert renamed.build_session_context() == expected.build_session_context()
    assert renamed.get_entry("b").value["message"]["content"] == "hooked"
    assert [e.value for e in renamed.get_entries()] == viewed_values
