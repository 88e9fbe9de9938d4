"""The idle close's timer (server/idle_slots.py) is cancelled when the server shuts down: armed by
a request naming a session by ``uri``, it would otherwise stay on the loop past ``shutdown`` and
``exit``, to close slots the shutdown closes. The server runs in a process of its own, as
``pi-session serve`` runs it (``run_stdio``), and reports the timers it armed as it ends."""

from __future__ import annotations

from pathlib import Path

import builders as S
from server_process import serve_reporting_timers, talk


def test_the_idle_close_timer_is_cancelled_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "2026-11-30T09-13-48-180Z_looked-at.jsonl"
    path.write_text(S.header() + "\n" + S.user("e1", None) + "\n", encoding="utf-8")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/getLeaf", "params": {"uri": path.as_uri()}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(
        serve_reporting_timers("idle_slots", "IdleSlots", "_check_later", "_timer"), messages
    )
    assert "result" in replies[1], replies[1]
    assert replies[2]["result"] is None
    assert ended == {"armed": 1, "cancelled": 1}
