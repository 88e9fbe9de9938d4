"""LSP work-done progress for long requests, when the client asked for it.

A request takes part when it carries ``workDoneToken`` and the client announced
``window.workDoneProgress`` at initialization. Reports come from the worker doing the job; at most
one goes out per 100 ms (the last one always does).
"""

from __future__ import annotations

import time
from typing import Any

from msgspec import UNSET

PROGRESS = "$/progress"


def client_supports_progress(server: Any) -> bool:
    if not server.speaks_lsp:  # a plain JSON-RPC client, which never sent initialize
        return False
    window = getattr(server.client_capabilities, "window", None)
    return bool(window is not None and window.work_done_progress)


class Progress:
    """The progress of one request: :meth:`begin`, :meth:`report` (from any thread), :meth:`end`.
    Does nothing when the request or the client takes no progress."""

    def __init__(self, server: Any, token: Any) -> None:
        active = token is not UNSET and token is not None and client_supports_progress(server)
        self._notify = server.connection.notify
        self._token = token if active else None
        self._last = 0.0

    @property
    def active(self) -> bool:
        return self._token is not None

    def _send(self, value: dict[str, Any]) -> None:
        if self._token is not None:
            self._notify(PROGRESS, {"token": self._token, "value": value})

    def begin(self, title: str) -> None:
        self._send({"kind": "begin", "title": title, "cancellable": False, "percentage": 0})

    def report(self, done: int, total: int, message: str | None = None, *, force: bool = False) -> None:
        if self._token is None:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        value: dict[str, Any] = {"kind": "report"}
        if message is not None:
            value["message"] = message
        if total > 0:
            value["percentage"] = min(100, done * 100 // total)
        self._send(value)

    def end(self) -> None:
        self._send({"kind": "end", "message": "done"})
