"""The real server on a pair of pipes, its event loop on a thread of this process (imported as
``in_process_server``: ``tests/`` is on the path of every test): a test can look inside it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from pi_session_server.server.app import ServerOptions, create_server
from pi_session_server.server.framing import encode_frame, read_frames
from pi_session_server.server.jsonrpc import Connection


class InProcess:
    """The real server on a pair of pipes, its event loop on a thread of this process."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.server = create_server(options)
        self.connection: Connection = self.server.connection
        to_server = os.pipe()
        from_server = os.pipe()
        self._server_in = os.fdopen(to_server[0], "rb", buffering=0)
        self._server_out = os.fdopen(from_server[1], "wb")
        self._client_out = os.fdopen(to_server[1], "wb")
        self._client_in = os.fdopen(from_server[0], "rb")
        self._ids = itertools.count(1)
        self.replies: dict[Any, Any] = {}
        self.notifications: list[tuple[str, Any]] = []
        self._cond = threading.Condition()
        self._loop_thread = threading.Thread(target=self._serve, daemon=True)
        self._loop_thread.start()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _serve(self) -> None:
        with contextlib.suppress(SystemExit):  # pygls ends the process on "exit"
            asyncio.run(self.connection.serve(self._server_in, self._server_out, self.server.poller.start))

    def _read(self) -> None:
        for body in read_frames(self._client_in):
            assert isinstance(body, bytes)
            message = json.loads(body)
            with self._cond:
                if "id" in message and "method" not in message:
                    self.replies[message["id"]] = message
                elif "method" in message:
                    self.notifications.append((message["method"], message.get("params")))
                self._cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        self._client_out.write(encode_frame(json.dumps(message).encode()))
        self._client_out.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 30) -> Any:
        return self.reply(self.send_request(method, params), timeout)

    def send_request(self, method: str, params: Any) -> int:
        """Send a request without waiting for its reply (see :meth:`reply`); its id."""
        msg_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def reply(self, msg_id: int, timeout: float = 30) -> Any:
        """The reply to the request ``msg_id``, once it came."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.replies:
                assert time.monotonic() < deadline, f"no reply to request {msg_id}"
                self._cond.wait(0.1)
            return self.replies.pop(msg_id)

    def notified(self, method: str, timeout: float = 10) -> Any:
        """The params of the first ``method`` notification the server sent, once it sent one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [params for name, params in self.notifications if name == method]
                if found:
                    return found[0]
                assert time.monotonic() < deadline, f"no {method}"
                self._cond.wait(0.1)

    def close(self) -> None:
        """End the server and wait for the jobs it started (a job still running would hold what it
        holds for the process, the collector's pause, into the next test; a test that leaves one
        stuck on purpose ends after 10 s all the same)."""
        self._client_out.close()
        self._loop_thread.join(10)
        self._server_out.close()  # the reader sees the end of the replies
        self._reader.join(10)
        self._client_in.close()
        self.server.pool.wait_idle(10)


def until(predicate: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    """What ``predicate()`` returns once it is true (checked every 10 ms; ``what`` says what did
    not happen when ``timeout`` seconds pass first)."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
    return found
