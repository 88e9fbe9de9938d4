"""Other programs writing a session file while we open it, or while it is empty.

An open reads the file and then remembers it (which file, how long, when it last changed) to notice
what others do to it later; it also writes the header of an empty file. Another program (a shell's
``cat backup > FILE``, an editor saving in place or by renaming a new file over the old one) may
write the file in the middle of that. Each test cues the other program at the exact moment through
a hook in the library (no sleeps), and the other program is a real shell process.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import HEADER, TS

from pi_session_server.session import SessionManager, file_load

pytestmark = pytest.mark.timeout(60)


def _line(entry_id: str, parent: str | None, text: str) -> bytes:
    value = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "message": {"role": "user", "content": text, "timestamp": 1},
    }
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _session(path: Path, texts: list[str]) -> Path:
    """A chain of user messages, its times an hour back (a rewrite then has other times however
    fast it comes)."""
    parts, parent = [HEADER], None
    for i, text in enumerate(texts):
        entry_id = f"{i:08x}"
        parts.append(_line(entry_id, parent, text))
        parent = entry_id
    path.write_bytes(b"".join(parts))
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))
    return path


def _shell(command: str, *args: str | Path) -> None:
    """Another program: ``sh -c command`` with ``args`` as ``$0``, ``$1``, ..."""
    subprocess.run(["sh", "-c", command, *map(str, args)], check=True)


def _texts(manager: SessionManager) -> list[Any]:
    return [entry.value["message"]["content"] for entry in manager.get_entries()]


def _same_as_a_fresh_open(manager: SessionManager, path: Path) -> None:
    fresh = SessionManager.open(str(path), read_only=True)
    assert [e.value for e in manager.get_entries()] == [e.value for e in fresh.get_entries()]
    assert manager.get_leaf_id() == fresh.get_leaf_id()
    fresh.close()


@pytest.fixture
def after_the_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], None]], None]]:
    """``cue(action)``: the next open runs ``action`` right after it read the file's lines."""
    read = file_load.load_lazy
    pending: list[Callable[[], None]] = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        result = read(*args, **kwargs)
        while pending:
            pending.pop()()
        return result

    monkeypatch.setattr(file_load, "load_lazy", hooked)
    yield pending.append


@pytest.fixture
def before_the_lock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], None]], None]]:
    """``cue(action)``: the next rewrite of the manager runs ``action`` right before it takes the
    file's lock (after the open looked at the file)."""
    locked_file = file_load.LockedFile
    pending: list[Callable[[], None]] = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        while pending:
            pending.pop()()
        return locked_file(*args, **kwargs)

    monkeypatch.setattr(file_load, "LockedFile", hooked)
    yield pending.append


# -- a file replaced while it is read ------------------------------------------------------------


REPLACEMENTS = {
    # an editor saving by renaming a new file over the old one
    "renamed_over": 'cp "$1" "$0.new" && mv "$0.new" "$0"',
    # an editor saving in place, the same size (truncate, then write)
    "in_place": 'cat "$1" > "$0"',
}


@pytest.mark.parametrize("how", list(REPLACEMENTS))
@pytest.mark.parametrize("read_only", [True, False], ids=["to_look", "to_write"])
def test_a_file_replaced_right_after_the_open_read_it_is_read_again(
    tmp_path: Path, after_the_read: Callable[[Callable[[], None]], None], how: str, read_only: bool
) -> None:
    """The open remembered the file the path named once it had read it, as it was then: the
    session stayed what the open read while every refresh said "unchanged" (a file renamed over it,
    or rewritten in place keeping its size), for good."""
    path = _session(tmp_path / "s.jsonl", ["one", "two", "three"])
    edited = _session(tmp_path / "edited.jsonl", ["one", "TWO", "three"])  # (the same size)
    assert edited.stat().st_size == path.stat().st_size
    after_the_read(lambda: _shell(REPLACEMENTS[how], path, edited))
    manager = SessionManager.open(str(path), read_only=read_only, index=False)
    assert _texts(manager) == ["one", "two", "three"]  # what it read
    assert manager.refresh_from_disk().kind == "reloaded"
    assert _texts(manager) == ["one", "TWO", "three"]
    _same_as_a_fresh_open(manager, path)
    assert path.read_bytes() == edited.read_bytes()  # (looking wrote nothing)


def test_an_append_to_a_file_renamed_over_while_it_was_opened_lands_on_its_own_line(
    tmp_path: Path, after_the_read: Callable[[Callable[[], None]], None]
) -> None:
    """The append goes to the file the path names (as pi's does) when it goes on from our leaf,
    after its last line, and the next refresh reads that file whole: its entries, then ours. (One
    that does not hold our leaf is refused: test_appends_into_a_replaced_file.py.)"""
    path = _session(tmp_path / "s.jsonl", ["one", "two"])
    edited = tmp_path / "edited.jsonl"
    # our file and a line another program left cut short
    edited.write_bytes(path.read_bytes() + _line("0000000a", "00000001", "other") + b'{"type":"mess')
    after_the_read(lambda: _shell(REPLACEMENTS["renamed_over"], path, edited))
    manager = SessionManager.open(str(path), index=False)
    ours = manager.append_message({"role": "user", "content": "ours", "timestamp": 2})
    assert path.read_bytes().startswith(edited.read_bytes() + b"\n")  # never glued onto its last line
    assert manager.refresh_from_disk().kind == "reloaded"
    assert manager.get_entry(ours) is not None
    _same_as_a_fresh_open(manager, path)


# -- an empty file ---------------------------------------------------------------------------------


def test_an_empty_file_another_program_fills_while_it_is_opened_keeps_what_it_wrote(
    tmp_path: Path, before_the_lock: Callable[[Callable[[], None]], None]
) -> None:
    """``cat backup > FILE`` while the file is opened: the open found it empty, and the backup was
    written before the open wrote the header an empty file gets. The open renamed a file holding
    its header alone over the backup: the backup was gone. Now the header goes only into an empty
    file, and the open reads what the other program wrote."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    backup = _session(tmp_path / "backup.jsonl", ["one", "two"])
    before_the_lock(lambda: _shell('cat "$1" > "$0"', path, backup))
    manager = SessionManager.open(str(path), index=False)
    assert path.read_bytes() == backup.read_bytes()
    assert _texts(manager) == ["one", "two"]
    _same_as_a_fresh_open(manager, path)


def test_an_empty_file_deleted_while_it_is_opened_is_made_by_the_first_message(
    tmp_path: Path, before_the_lock: Callable[[Callable[[], None]], None]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    before_the_lock(path.unlink)
    manager = SessionManager.open(str(path), index=False)
    assert not path.exists()
    manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
    _same_as_a_fresh_open(manager, path)


def test_lines_another_program_appends_to_a_file_opened_empty_are_taken_in(tmp_path: Path) -> None:
    """The open wrote the header of the empty file and then did not follow it: a refresh never
    took in what pi appended, our first entry was numbered as if it were on the header's line, and
    an append after another program's was not reported."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    manager = SessionManager.open(str(path), index=False)
    first = manager.append_message({"role": "user", "content": "ours", "timestamp": 1})
    assert manager.get_entry(first).line == 1
    with path.open("ab") as other:
        other.write(_line("0000000b", first, "pi's"))
    change = manager.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("appended", ["0000000b"])
    with path.open("ab") as other:
        other.write(_line("0000000c", "0000000b", "pi's again"))
    manager.append_message({"role": "user", "content": "ours again", "timestamp": 2})
    assert [event.message for event in manager.drain_events()]  # another program wrote before ours
    manager.refresh_from_disk()
    _same_as_a_fresh_open(manager, path)
    assert [entry.line for entry in manager.get_entries()] == [1, 2, 3, 4]


def test_a_file_empty_when_opened_to_look_at_is_read_once_written(tmp_path: Path) -> None:
    """A viewer (read-only) of an empty file: once another program wrote a session into it, every
    refresh said "unchanged", and the view stayed empty for good."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    manager = SessionManager.open(str(path), read_only=True, index=False)
    assert manager.refresh_from_disk().kind == "unchanged"
    backup = _session(tmp_path / "backup.jsonl", ["one", "two"])
    _shell('cat "$1" > "$0"', path, backup)
    change = manager.refresh_from_disk()
    assert change.kind == "reloaded"
    assert _texts(manager) == ["one", "two"]
    assert manager.refresh_from_disk().kind == "unchanged"
    _same_as_a_fresh_open(manager, path)
    assert path.read_bytes() == backup.read_bytes()


# -- a file replaced while a refresh reads it ------------------------------------------------------


def test_a_file_renamed_over_while_a_refresh_reads_what_was_appended_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi appended a line; an editor then saved the file by rename, with an edit in the middle,
    between the refresh's look at the file and its read of the new lines. The refresh read the
    new file's bytes at the old end as lines appended to ours ("appended", with a line pi skips
    that no file holds); it now reads the new file whole."""
    path = _session(tmp_path / "s.jsonl", ["one", "two", "three"])
    manager = SessionManager.open(str(path), read_only=True, index=False)
    with path.open("ab") as pi:
        pi.write(_line("0000000f", "00000002", "four"))
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(path.read_bytes().replace(b'"two"', b'"two, said at length"'))
    look = SessionManager._read_marker
    cued = [lambda: _shell('cp "$1" "$0.new" && mv "$0.new" "$0"', path, edited)]

    def looked_then_saved(self: SessionManager, *args: Any) -> bytes:
        marker = look(self, *args)
        while cued:
            cued.pop()()
        return marker

    monkeypatch.setattr(SessionManager, "_read_marker", looked_then_saved)
    change = manager.refresh_from_disk()
    assert change.kind == "reloaded"
    assert manager.problems == []
    assert _texts(manager) == ["one", "two, said at length", "three", "four"]
    _same_as_a_fresh_open(manager, path)


# -- the same through the sidecar ------------------------------------------------------------------


@pytest.fixture
def sidecar() -> Iterator[Any]:
    """The real server on pipes, in this process (the hooks above reach it), watching its files."""
    from in_process_server import InProcess

    running = InProcess()
    yield running
    running.close()


def _last_line(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes().splitlines()[-1])


def test_the_sidecar_follows_a_file_renamed_over_while_pi_open_read_it(
    tmp_path: Path, after_the_read: Callable[[Callable[[], None]], None], sidecar: Any
) -> None:
    """The next pi/append goes to the new file with its last entry for parent. Before, the sidecar
    never told the change, and the append named the replaced file's leaf: an orphan in the new file."""
    path = _session(tmp_path / "s.jsonl", ["one", "two", "three"])
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(path.read_bytes().replace(b'"00000002"', b'"0000000e"'))  # its last entry's id
    after_the_read(lambda: _shell(REPLACEMENTS["renamed_over"], path, edited))
    session = sidecar.request("pi/open", {"path": str(path)})["result"]["session"]
    change = sidecar.notified("pi/didChange")
    assert (change["kind"], change["leafId"]) == ("reloaded", "0000000e")
    message = {"role": "user", "content": "four", "timestamp": 4}
    reply = sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    assert _last_line(path)["id"] == reply["result"]["id"]
    assert _last_line(path)["parentId"] == "0000000e"
    assert path.read_bytes().startswith(edited.read_bytes())


def test_the_sidecar_keeps_what_another_program_wrote_into_an_empty_file_while_pi_open_opened_it(
    tmp_path: Path, before_the_lock: Callable[[Callable[[], None]], None], sidecar: Any
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    backup = _session(tmp_path / "backup.jsonl", ["one", "two"])
    before_the_lock(lambda: _shell('cat "$1" > "$0"', path, backup))
    session = sidecar.request("pi/open", {"path": str(path)})["result"]["session"]
    assert sidecar.request("pi/getLeaf", {"session": session})["result"]["leafId"] == "00000001"
    assert path.read_bytes() == backup.read_bytes()
