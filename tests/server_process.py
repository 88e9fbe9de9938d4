"""A server in a process of its own, talked to in turn (imported as ``server_process``: ``tests/``
is on the path of every test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_session_server.server.framing import encode_frame, read_frames

Replies = dict[Any, dict[str, Any]]
#: a message, or what makes one from the replies so far
Message = dict[str, Any] | Callable[[Replies], dict[str, Any]]


def talk(
    script: str,
    messages: list[Message],
    *,
    env: dict[str, str] | None = None,
    cwd: Any = None,
    args: list[str] | None = None,
) -> tuple[Replies, Any]:
    """The replies (by id) of ``python -c script`` (``args``: its ``sys.argv[1:]``) to ``messages``,
    each request's reply read before the next message is sent (as a client does before ``exit``),
    and the JSON value the script wrote last on stderr as it ended."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, *(args or [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    frames = read_frames(process.stdout)
    replies: Replies = {}
    try:
        for item in messages:
            message = item(replies) if callable(item) else item
            process.stdin.write(encode_frame(json.dumps(message).encode()))
            process.stdin.flush()
            while "id" in message and message["id"] not in replies:
                reply = json.loads(next(frames))
                replies[reply.get("id")] = reply
        process.stdin.close()
        replies.update((reply.get("id"), reply) for reply in map(json.loads, frames))
        ended = json.loads(process.stderr.read().decode().strip().splitlines()[-1])
        process.wait(60)
    finally:
        process.kill()
        process.wait(60)
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
    return replies, ended


def serve_reporting_timers(module: str, owner: str, arms: str, timer: str) -> str:
    """A script for :func:`talk`: the server, run as ``pi-session serve`` runs it (``run_stdio``),
    that writes as it ends ``{"armed": n, "cancelled": m}``: the timers the method ``arms`` of the
    class ``owner`` (in ``pi_session_server.server.<module>``) armed, kept in its attribute
    ``timer``, and how many of them were cancelled."""
    return f"""
import json, sys
from pi_session_server.server import {module} as timed
from pi_session_server.server.app import create_server
from pi_session_server.server.jsonrpc import run_stdio

armed = []
arm = timed.{owner}.{arms}

def recorded(self):
    arm(self)
    if self.{timer} is not None and self.{timer} not in armed:
        armed.append(self.{timer})

timed.{owner}.{arms} = recorded
server = create_server()
try:
    run_stdio(server, server.connection, server.poller.start)
except SystemExit:
    pass
print(json.dumps({{"armed": len(armed), "cancelled": sum(t.cancelled() for t in armed)}}), file=sys.stderr)
"""


def serve(cwd: Path) -> subprocess.Popen[bytes]:
    """``pi-session serve`` in a process of its own, run in ``cwd`` with its cache directory there:
    stdin and stdout piped (the caller writes frames and reads replies as it needs), stderr
    dropped."""
    return subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env={**os.environ, "XDG_CACHE_HOME": str(cwd / "cache")},
    )
