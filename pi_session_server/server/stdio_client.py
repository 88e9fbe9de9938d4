"""A small synchronous JSON-RPC client for the sidecar (standard library only, no pygls).

It starts ``python -m pi_session_server`` (or any command), frames messages with Content-Length
headers exactly as an editor does, and waits for replies. ``pi-session demo`` and the wire
conformance adapter use it; it doubles as the reference for front ends in other languages.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import IO, Any

from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsjson import dumps_bytes, parse_bytes

from .framing import FramingError, encode_frame, read_frames


class RpcError(PiSessionError):
    """An error reply: ``rpc_code`` (the JSON-RPC error code, e.g. -32005), ``message`` (the
    reference's text for application errors) and ``data``. Like the library's errors, which it
    stands in for, ``name`` is the JS error name (``data.name``, else ``Error``) and ``code`` the
    Node file-system code (``data.code``, e.g. ``ENOENT``; else None): code that catches
    :class:`~pi_session_server.errors.PiSessionError` reads both alike in process and over the
    wire."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.rpc_code = code
        self.data = data
        if isinstance(data, dict) and isinstance(data.get("code"), str):
            self.code = data["code"]

    def __str__(self) -> str:
        return self.message


_error_classes: dict[str, type[RpcError]] = {}


def error_class(js_name: str) -> type[RpcError]:
    """An RpcError subclass whose ``name`` is the JS error name the server reported."""
    cls = _error_classes.get(js_name)
    if cls is None:
        cls = type(f"Rpc{js_name}", (RpcError,), {"name": js_name, "__module__": __name__})
        _error_classes[js_name] = cls
    return cls


def default_command() -> list[str]:
    return [sys.executable, "-m", "pi_session_server", "serve"]


class SidecarClient:
    """``request(method, params)`` -> result, raising :class:`RpcError` for error replies."""

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
    ) -> None:
        self.process = subprocess.Popen(
            list(command or default_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin: IO[bytes] = self.process.stdin
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        self._replies: dict[Any, Any] = {}
        self.notifications: deque[tuple[str, Any]] = deque()
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    # -- wire ---------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        frame = encode_frame(dumps_bytes(message))
        with self._send_lock:  # never under self._lock: the reader needs that one to make progress
            self._stdin.write(frame)
            self._stdin.flush()

    def _read_loop(self, stream: Any) -> None:
        try:
            for body in read_frames(stream):
                if not isinstance(body, FramingError):
                    self._dispatch(parse_bytes(body))  # JSON.parse semantics, any depth
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" in message:
            if "id" in message:  # a request from the server (e.g. window/workDoneProgress/create)
                threading.Thread(
                    target=self._send,
                    args=({"jsonrpc": "2.0", "id": message["id"], "result": None},),
                    daemon=True,
                ).start()
            else:
                with self._cond:
                    self.notifications.append((message["method"], message.get("params")))
                    self._cond.notify_all()
            return
        with self._cond:
            self._replies[message.get("id")] = message
            self._cond.notify_all()

    # -- API ----------------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, timeout: float | None = 120.0) -> Any:
        return self.reply(self.send_request(method, params), method, timeout=timeout)

    def send_request(self, method: str, params: Any = None) -> int:
        """Send a request without waiting for its reply (:meth:`reply`): the requests sent one
        after another reach the server in that order. Its id."""
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return msg_id

    def reply(self, msg_id: int, method: str, *, timeout: float | None = 120.0) -> Any:
        """The result of the request ``msg_id`` (:meth:`send_request` of ``method``), once it came."""
        with self._cond:
            while msg_id not in self._replies:
                if self._closed:
                    raise ConnectionError(
                        f"the sidecar exited (code {self.process.poll()}) before answering {method}"
                    )
                if not self._cond.wait(timeout):
                    raise TimeoutError(f"no reply to {method} within {timeout} s")
            reply = self._replies.pop(msg_id)
        error = reply.get("error")
        if error is not None:
            data = error.get("data")
            name = (
                str(data["name"]) if isinstance(data, dict) and isinstance(data.get("name"), str) else "Error"
            )
            raise error_class(name)(error.get("code", 0), str(error.get("message", "")), data)
        return reply.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def wait_for_notification(self, method: str, timeout: float = 10.0) -> Any:
        """The params of the next (oldest unread) notification ``method``."""
        with self._cond:
            while True:
                for i, (name, params) in enumerate(self.notifications):
                    if name == method:
                        del self.notifications[i]
                        return params
                if self._closed or not self._cond.wait(timeout):
                    raise TimeoutError(f"no {method} notification within {timeout} s")

    def initialize(self, capabilities: dict[str, Any] | None = None, options: Any = None) -> Any:
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": capabilities or {},
        }
        if options is not None:
            params["initializationOptions"] = options
        result = self.request("initialize", params)
        self.notify("initialized", {})
        return result

    def close(self) -> int:
        """shutdown + exit, then wait for the process and close the pipes to it."""
        if self.process.poll() is None:
            try:
                self.request("shutdown", None, timeout=10)
                self.notify("exit")
            except (OSError, ConnectionError, TimeoutError, RpcError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(OSError):  # (a frame still buffered for a process that is gone)
            self._stdin.close()
        self._reader.join(10)  # the process is gone: its output ends
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not self._reader.is_alive():
                stream.close()
        return self.process.returncode

    def __enter__(self) -> SidecarClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
