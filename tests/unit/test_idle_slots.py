"""Sessions opened on demand for a ``uri`` are closed once unused (server/idle_slots.py): the
real server, its idle time cut short."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from server_process import Replies, talk

ROOT = Path(__file__).resolve().parents[2]
IDLE = 0.3  # seconds, instead of the server's quarter of an hour
SERVE = f"""
import json, sys
from pi_session_server.server import idle_slots
idle_slots.IDLE = {IDLE}
from pi_session_server.cli import main
try:
    code = main(["serve"])
except SystemExit as done:
    code = done.code
print(json.dumps({{"code": code}}), file=sys.stderr)
"""


def _session(path: Path, text: str) -> Path:
    header = {
        "type": "session",
        "version": 3,
        "id": path.stem,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/p",
    }
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    return path


def _request(number: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


def _after_idle(number: int, method: str, params: Any) -> Any:
    def message(_replies: Replies) -> dict[str, Any]:
        time.sleep(IDLE * 4)  # the server looks every tenth of IDLE
        return _request(number, method, params)

    return message


def _files(reply: dict[str, Any]) -> set[str]:
    return {os.path.basename(info["sessionFile"]) for info in reply["result"]}


def test_a_session_looked_at_by_uri_is_closed_once_unused_and_opened_again_when_asked(tmp_path: Path):
    by_uri = _session(tmp_path / "by-uri.jsonl", "looked at")
    held = _session(tmp_path / "held.jsonl", "opened")
    shown = _session(tmp_path / "shown.jsonl", "in the editor")
    messages: list[Any] = [
        _request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}),
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        _request(1, "pi/getLeaf", {"uri": by_uri.as_uri()}),
        _request(2, "pi/open", {"path": str(held)}),
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {
                    "uri": shown.as_uri(),
                    "languageId": "pi-session",
                    "version": 1,
                    "text": shown.read_text(),
                }
            },
        },
        _request(3, "pi/getLeaf", {"uri": shown.as_uri()}),
        _request(4, "pi/sessions", {}),
        _after_idle(5, "pi/sessions", {}),
        _request(6, "pi/getLeaf", {"uri": by_uri.as_uri()}),
        _request(7, "pi/sessions", {}),
        _request(8, "shutdown", None),
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(SERVE, messages, env=dict(os.environ, PI_SESSION_NO_INDEX="1"), cwd=ROOT)
    assert ended == {"code": 0}
    assert _files(replies[4]) == {"by-uri.jsonl", "held.jsonl", "shown.jsonl"}
    # unused for longer than IDLE: the session looked at by uri is closed; the one opened with
    # pi/open and the one whose file the editor shows are kept
    assert _files(replies[5]) == {"held.jsonl", "shown.jsonl"}
    assert replies[6]["result"] == replies[1]["result"] and replies[1]["result"]["leafId"] == "e1"
    assert _files(replies[7]) == {"by-uri.jsonl", "held.jsonl", "shown.jsonl"}


def test_a_session_whose_file_the_editor_shows_through_a_symlink_is_kept(tmp_path: Path):
    """The editor's document names the file through a symlinked directory; the session looked at
    by the file's own uri is the one the editor shows: kept."""
    (tmp_path / "real").mkdir()
    shown = _session(tmp_path / "real" / "shown.jsonl", "in the editor")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    spelled = tmp_path / "linked" / "shown.jsonl"
    messages: list[Any] = [
        _request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}),
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {
                    "uri": spelled.as_uri(),
                    "languageId": "pi-session",
                    "version": 1,
                    "text": shown.read_text(),
                }
            },
        },
        _request(1, "pi/getLeaf", {"uri": shown.as_uri()}),
        _request(2, "pi/sessions", {}),
        _after_idle(3, "pi/sessions", {}),
        _request(4, "shutdown", None),
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(SERVE, messages, env=dict(os.environ, PI_SESSION_NO_INDEX="1"), cwd=ROOT)
    assert ended == {"code": 0}
    assert _files(replies[2]) == {"shown.jsonl"}
    assert _files(replies[3]) == {"shown.jsonl"}


def test_a_session_written_or_branched_by_uri_is_kept_however_long_unused(tmp_path: Path):
    """What such a session holds that its file does not (a branch's leaf) or may not (a write's
    view: the rollback of a failed append, a foreign writer told) is not let go."""
    written = _session(tmp_path / "written.jsonl", "appended to")
    branched = _session(tmp_path / "branched.jsonl", "branched")
    second = {
        "type": "message",
        "id": "e2",
        "parentId": "e1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {"role": "user", "content": "later", "timestamp": 2},
    }
    with branched.open("a") as f:
        f.write(json.dumps(second) + "\n")
    message = {"role": "user", "content": "more", "timestamp": 3}
    messages: list[Any] = [
        _request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}}),
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        _request(1, "pi/append", {"uri": written.as_uri(), "kind": "message", "message": message}),
        _request(2, "pi/branch", {"uri": branched.as_uri(), "entryId": "e1"}),
        _after_idle(3, "pi/sessions", {}),
        _request(4, "pi/getLeaf", {"uri": branched.as_uri()}),
        _request(5, "shutdown", None),
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(SERVE, messages, env=dict(os.environ, PI_SESSION_NO_INDEX="1"), cwd=ROOT)
    assert ended == {"code": 0}
    assert "result" in replies[1] and "result" in replies[2], replies
    assert _files(replies[3]) == {"written.jsonl", "branched.jsonl"}
    assert replies[4]["result"]["leafId"] == "e1"
