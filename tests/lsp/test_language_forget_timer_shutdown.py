"""The timer that lets go of the analysis of files read from disk nobody asks about
(server/language_disk_reads.py) is cancelled when the server shuts down: armed by a request about a
file the editor did not send, it would otherwise stay on the loop past ``shutdown`` and ``exit``.
The server runs in a process of its own, as ``pi-session serve`` runs it (``run_stdio``), and
reports the timers it armed as it ends."""

from __future__ import annotations

from pathlib import Path

import builders as S
from server_process import serve_reporting_timers, talk


def test_the_forget_timer_is_cancelled_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "2026-11-30T09-13-48-180Z_read-from-disk.jsonl"
    path.write_text(S.header() + "\n" + S.user("e1", None) + "\n", encoding="utf-8")
    hover = {"textDocument": {"uri": path.as_uri()}, "position": {"line": 1, "character": 2}}
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": hover},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(
        serve_reporting_timers("language_disk_reads", "DiskDocuments", "_forget_idle_later", "_forget_timer"),
        messages,
    )
    assert "e1" in str(replies[2]["result"]), replies[2]
    assert replies[3]["result"] is None
    assert ended == {"armed": 1, "cancelled": 1}
