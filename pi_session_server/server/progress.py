"""LSP work-done progress for long operations, when the client asked for it.

A request takes part when it carries ``workDoneToken`` and the client announced
``window.workDoneProgress`` at initialization. Reports may come from a worker thread; they are
sent from the event loop and thinned out to at most one per 100 ms.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from lsprotocol import types
from msgspec import UNSET


def client_supports_progress(server: Any) -> bool:
    try:
        window = server.client_capabilities.window
    except Exception:  # not initialized: a plain JSON-RPC client
        return False
    return bool(window is not None and window.work_done_progress)


class Reporter:
    """``report(done, total, message)`` from any thread; no-op when progress is off."""

    def __init__(self, server: Any, token: Any) -> None:
        self._server = server
        self._token = token
        self._last = 0.0

    @property
    def active(self) -> bool:
        return self._token is not None

    def report(self, done: int, total: int, message: str | None = None, *, force: bool = False) -> None:
        if self._token is None:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        percentage = int(done * 100 / total) if total > 0 else None
        value = types.WorkDoneProgressReport(message=message, percentage=percentage)
        self._send(value)

    def _send(self, value: Any) -> None:
        params = types.ProgressParams(token=self._token, value=value)
        self._server.notify_threadsafe(types.PROGRESS, params)


@contextlib.asynccontextmanager
async def work_done(server: Any, token: Any, title: str) -> AsyncIterator[Reporter]:
    """Begin/end around a block; yields a :class:`Reporter`."""
    if token is UNSET or token is None or not client_supports_progress(server):
        yield Reporter(server, None)
        return
    reporter = Reporter(server, token)
    reporter._send(types.WorkDoneProgressBegin(title=title, cancellable=False, percentage=0))
    try:
        yield reporter
    finally:
        reporter._send(types.WorkDoneProgressEnd(message="done"))
