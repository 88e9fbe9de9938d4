"""Our append after another program rewrote a held session: a shell's ``>`` that left other text
without a final newline, an editor that saved in place (truncate, then write), a ``mv`` over the
file. The append lands on a line of its own in the file the path names, nothing the other program
wrote is changed, and the change is reported as another process's write (``drain_events()``,
``pi/foreignWriter``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from reliability_helpers import USER, chain_file
from reliability_rpc import RawServer

from pi_session_server.session import SessionManager

OTHER_TEXT = b"notes, not a session"


def _shell(command: str, *args: str | Path) -> None:
    """Another program writes: ``sh -c command ARGS...`` (the first is ``$0``)."""
    subprocess.run(["sh", "-c", command, *map(str, args)], check=True)


def _our_line(path: Path, entry_id: str) -> bytes:
    [line] = [line for line in path.read_bytes().split(b"\n") if f'"id":"{entry_id}"'.encode() in line]
    assert json.loads(line)["id"] == entry_id
    return line + b"\n"


def test_an_append_after_a_shell_redirect_left_other_text_lands_on_its_own_line(tmp_path: Path) -> None:
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    manager.append_message(USER)
    _shell(f'printf "{OTHER_TEXT.decode()}" > "$0"', path)
    mine = manager.append_message(USER)
    assert path.read_bytes() == OTHER_TEXT + b"\n" + _our_line(path, mine)
    [event] = manager.drain_events()
    assert event.found_size == len(OTHER_TEXT), event
    assert "truncated or rewritten by another process" in event.message
    manager.close()


def test_an_append_after_an_editor_saved_in_place_without_a_final_newline_lands_on_its_own_line(
    tmp_path: Path,
) -> None:
    """The editor's save is a truncation and a write of the edited text (Vim's ``backupcopy=yes``,
    ``cat > FILE``), here a longer last line without the newline it had."""
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    manager.append_message(USER)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(path.read_bytes().replace(b'"content":"hello"', b'"content":"hello, edited"')[:-1])
    _shell('cat "$1" > "$0"', path, edited)
    mine = manager.append_message(USER)
    assert path.read_bytes() == edited.read_bytes() + b"\n" + _our_line(path, mine)
    assert manager.drain_events(), "the editor's save was not reported"
    fresh = SessionManager.open(str(path), read_only=True)
    assert fresh.problems == []
    assert fresh.get_entries()[-1].id == mine
    manager.close()


def test_an_append_after_a_file_was_moved_over_the_session_goes_to_the_new_file(tmp_path: Path) -> None:
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    replacement = chain_file(tmp_path / "replacement.jsonl", 6)
    before = replacement.read_bytes()[:-1]  # its last line left unfinished by whoever wrote it
    replacement.write_bytes(before)
    _shell('mv "$1" "$0"', path, replacement)
    mine = manager.append_message(USER)
    assert path.read_bytes() == before + b"\n" + _our_line(path, mine)
    assert manager.drain_events(), "the file moved over the session was not reported"
    manager.close()


def test_the_server_reports_an_append_after_a_shell_redirect_and_lands_on_its_own_line(
    tmp_path: Path, server: RawServer
) -> None:
    path = chain_file(tmp_path / "s.jsonl", 4)
    handle = server.call("pi/open", {"path": str(path)})["session"]
    _shell(f'printf "{OTHER_TEXT.decode()}" > "$0"', path)
    server.wait_notification("pi/didChange", lambda p: p["kind"] == "rewriting")
    mine = server.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
    assert path.read_bytes() == OTHER_TEXT + b"\n" + _our_line(path, mine)
    warning = server.wait_notification("pi/foreignWriter", timeout=5)
    assert warning["session"] == handle and warning["path"] == str(path), warning
