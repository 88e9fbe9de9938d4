"""A deliberately small, standard-library JSON-RPC client for attacking the real server process.

Unlike ``pi_session_server.server.stdio_client`` it can also send raw bytes (broken framing, invalid
JSON), keeps every reply as the full message (so tests can look at ``error.code``), and never raises
on an error reply unless asked to (:meth:`RawServer.call`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from pi_session_server.server.framing import FramingError, encode_frame, read_frames

SERVER_COMMAND = [sys.executable, "-m", "pi_session_server", "serve"]
REPO_ROOT = Path(__file__).resolve().parents[2]


class ReplyError(Exception):
    def __init__(self, method: str, error: dict[str, Any]):
        super().__init__(f"{method}: {error.get('code')} {error.get('message')}")
        self.error = error
        self.code = error.get("code")


def encode(message: Any) -> bytes:
    try:
        return json.dumps(message, separators=(",", ":")).encode()
    except RecursionError:  # deeper than the stdlib encoder goes: the library's JSON has no limit
        from pi_session_server.format.jsjson import dumps_bytes

        return dumps_bytes(message)


def decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except RecursionError:
        from pi_session_server.format.jsjson import parse_bytes

        return parse_bytes(body)


frame = encode_frame  # the server's own codec (pi_session_server.server.framing)


class RawServer:
    """``python -m pi_session_server serve`` with a reader thread collecting replies and notifications."""

    def __init__(
        self,
        tmp_dir: Path,
        *,
        args: list[str] | None = None,
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        # logs and the server's private home live next to (not inside) the directory under test
        self.private = Path(tempfile.mkdtemp(prefix="pi-reliability-server-"))
        self.stderr_path = self.private / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        # never touch the real ~/.pi: the default session directory goes to a private agent dir
        full_env["HOME"] = str(self.private / "home")
        full_env["PI_CODING_AGENT_DIR"] = str(self.private / "agent")
        full_env.update(env or {})
        self.process = subprocess.Popen(
            SERVER_COMMAND + (args or []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=str(cwd or tmp_dir),
            env=full_env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin: BinaryIO = self.process.stdin
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self.replies: dict[Any, dict[str, Any]] = {}
        self.kept: dict[Any, dict[str, Any]] = {}  # replies taken by wait_reply_kept (still readable)
        self.unmatched: list[dict[str, Any]] = []  # replies with ids we did not send (or null ids)
        self.notifications: list[tuple[str, Any]] = []
        self.garbage: list[bytes] = []  # bodies that were not JSON (must stay empty)
        self.eof = False
        self._sent_ids: set[Any] = set()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- reading ------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            for body in read_frames(stream):
                if isinstance(body, FramingError):  # the server framed a reply badly
                    with self._cond:
                        self.garbage.append(str(body).encode())
                    continue
                try:
                    message = decode(body)
                except ValueError:
                    with self._cond:
                        self.garbage.append(body)
                    continue
                self._dispatch(message)
        except (OSError, ValueError):  # the test closed our end of the pipe
            return
        finally:
            with self._cond:
                self.eof = True
                self._cond.notify_all()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            with self._cond:
                self.garbage.append(json.dumps(message).encode())
            return
        if "method" in message:
            if "id" in message:  # server -> client request (e.g. workDoneProgress/create)
                threading.Thread(
                    target=self._try_send,
                    args=({"jsonrpc": "2.0", "id": message["id"], "result": None},),
                    daemon=True,
                ).start()
            else:
                with self._cond:
                    self.notifications.append((message["method"], message.get("params")))
                    self._cond.notify_all()
            return
        with self._cond:
            msg_id = message.get("id")
            try:
                ours = (type(msg_id), msg_id) in self._sent_ids and msg_id not in self.replies
            except TypeError:  # an unhashable id (the server echoed an object or array id)
                ours = False
            if ours:
                self.replies[msg_id] = message
            else:
                self.unmatched.append(message)
            self._cond.notify_all()

    # -- writing ------------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        with self._send_lock:
            self._stdin.write(data)
            self._stdin.flush()

    def _try_send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            self.send(message)

    def send(self, message: Any) -> None:
        self.send_bytes(frame(encode(message)))

    def next_id(self) -> int:
        return next(self._ids)

    def send_request(self, method: str, params: Any = None, *, msg_id: Any = None) -> Any:
        if msg_id is None:
            msg_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._cond:
            self._sent_ids.add((type(msg_id), msg_id))
        self.send(message)
        return msg_id

    def expect_id(self, msg_id: Any) -> None:
        """Accept a reply to ``msg_id`` that was sent with :meth:`send_bytes`."""
        with self._cond:
            self._sent_ids.add((type(msg_id), msg_id))
            for i, message in enumerate(self.unmatched):
                if message.get("id") == msg_id:
                    self.replies[msg_id] = self.unmatched.pop(i)
                    break

    def send_together(self, *requests: tuple[str, dict[str, Any]]) -> list[Any]:
        """``requests`` written in one write (the server reads them in one go: the first, a
        pi/delete say, is pending as the others arrive); their ids, in order."""
        ids = [self.next_id() for _ in requests]
        for msg_id in ids:
            self.expect_id(msg_id)
        self.send_bytes(
            b"".join(
                frame(encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
                for msg_id, (method, params) in zip(ids, requests, strict=True)
            )
        )
        return ids

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # -- waiting ------------------------------------------------------------------------------

    def wait_reply(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.replies:
                remaining = deadline - time.monotonic()
                if self.eof:
                    raise ConnectionError(f"server closed its output before answering id {msg_id!r}")
                if remaining <= 0:
                    raise TimeoutError(f"no reply to id {msg_id!r} within {timeout} s")
                self._cond.wait(remaining)
            return self.replies.pop(msg_id)

    def wait_reply_kept(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        """Like :meth:`wait_reply`, but the reply stays readable in ``kept``."""
        reply = self.wait_reply(msg_id, timeout)
        self.kept[msg_id] = reply
        return reply

    def reader_done(self, timeout: float = 10.0) -> None:
        """Wait until the reader thread has seen the end of the server's output."""
        self._reader.join(timeout)

    def request(self, method: str, params: Any = None, *, timeout: float = 30.0) -> dict[str, Any]:
        """The whole reply message (``result`` or ``error``)."""
        return self.wait_reply(self.send_request(method, params), timeout)

    def call(self, method: str, params: Any = None, *, timeout: float = 30.0) -> Any:
        reply = self.request(method, params, timeout=timeout)
        if "error" in reply:
            raise ReplyError(method, reply["error"])
        return reply["result"]

    def wait_unmatched(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i, message in enumerate(self.unmatched):
                    if predicate(message):
                        return self.unmatched.pop(i)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(
                        f"no matching unsolicited reply within {timeout} s: {self.unmatched!r}"
                    )
                self._cond.wait(remaining)

    def wait_notification(
        self, method: str, predicate: Callable[[Any], bool] | None = None, timeout: float = 10.0
    ) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i, (name, params) in enumerate(self.notifications):
                    if name == method and (predicate is None or predicate(params)):
                        del self.notifications[i]
                        return params
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"no {method} notification within {timeout} s")
                self._cond.wait(remaining)

    # -- lifecycle ----------------------------------------------------------------------------

    def initialize(self, options: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"processId": os.getpid(), "rootUri": None, "capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        result = self.call("initialize", params)
        self.notify("initialized", {})
        return result

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return "(stderr log already removed)"

    def close(self) -> int | None:
        if self.alive():
            try:
                self.request("shutdown", None, timeout=10)
                self.notify("exit")
            except (OSError, ConnectionError, TimeoutError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stderr.close()
        shutil.rmtree(self.private, ignore_errors=True)
        return self.process.returncode

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        self.close()


def file_uri(path: str | Path) -> str:
    return Path(path).resolve().as_uri()
