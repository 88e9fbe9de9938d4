"""The idle close's timer (server/idle_slots.py) is cancelled when the server shuts down: armed by
a request naming a session by ``uri``, it would otherwise stay on the loop past ``shutdown`` and
``exit``, to close slots the shutdown closes. The server runs in a process of its own, as
``pi-session serve`` runs it (``run_stdio``), and reports the timers it armed as it ends."""

from __future__ import annotations

from pathlib import Path

import builders as S
from server_process import talk

SERVE_AND_REPORT_TIMERS = """
import json, sys
from pi_session_server.server import idle_slots
from pi_session_server.server.app import create_server
from pi_session_server.server.jsonrpc import run_stdio

armed = []
check_later = idle_slots.IdleSlots._check_later

def recorded(self):
    check_later(self)
    if self._timer is not None:
        armed.append(self._timer)

idle_slots.IdleSlots._check_later = recorded
server = create_server()
try:
    run_stdio(server, server.connection, server.poller.start)
except SystemExit:
    pass
print(json.dumps({"armed": len(armed), "cancelled": sum(t.cancelled() for t in armed)}), file=sys.stderr)
"""


def test_the_idle_close_timer_is_cancelled_at_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "2026-11-30T09-13-48-180Z_looked-at.jsonl"
    path.write_text(S.header() + "\n" + S.user("e1", None) + "\n", encoding="utf-8")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/getLeaf", "params": {"uri": path.as_uri()}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    replies, ended = talk(SERVE_AND_REPORT_TIMERS, messages)
    assert "result" in replies[1], replies[1]
    assert replies[2]["result"] is None
    assert ended == {"armed": 1, "cancelled": 1}
