"""A client that does not read its replies for a while blocks nothing: the server goes on reading
and serving, and every reply reaches the client once it reads (server/frame_writer.py).

The clients here are raw: no reader thread, they read only when the test says so. Before the
writer had a thread of its own, a full pipe stopped the event loop at its first write, and a
client that sends a batch bigger than the pipes before reading deadlocked with the server: each
bound below fails such a test instead of letting it hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import builders as S
import pytest
from reliability_helpers import new_session_file

from pi_session_server.server.framing import encode_frame, read_frames

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes as on Linux")

BOUND = 120.0  # seconds: a hang bound, far beyond what each step takes
ROUNDS = 400  # each an append of TEXT_BYTES, a page of entries and a refusal: ~2 MB of requests
TEXT_BYTES = 4000
PAGE = 5
INVALID_PARAMS = -32602
T = TypeVar("T")


class Client:
    """The server in a process of its own, stderr in a file, talked to by hand."""

    def __init__(self, tmp_path: Path) -> None:
        self.stderr_path = tmp_path / "stderr.log"
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pi_session_server", "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=tmp_path,
                env={
                    **os.environ,
                    "HOME": str(tmp_path / "home"),
                    "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
                },
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout = self.process.stdout
        self.frames = read_frames(self.stdout)

    def send(self, *messages: dict[str, Any]) -> None:
        """Write ``messages`` (failing, not hanging, when the server stops reading them)."""
        data = b"".join(encode_frame(json.dumps(message).encode()) for message in messages)

        def write() -> None:
            self.stdin.write(data)
            self.stdin.flush()

        self.within(write, "the server stopped reading its input while its client did not read")

    def read(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` replies (the notifications among them, such as each append's
        ``pi/didChange``, passed over)."""
        return self.within(lambda: replies_in(self.frames, count), f"fewer than {count} replies came")

    def within(self, step: Callable[[], T], what: str) -> T:
        """``step()``, run on a thread; the server is killed and the test fails past BOUND."""
        outcome: list[Any] = []
        runner = threading.Thread(target=lambda: outcome.append(step()), daemon=True)
        runner.start()
        runner.join(BOUND)
        if runner.is_alive() or not outcome:
            self.process.kill()
            pytest.fail(what)
        return outcome[0]  # type: ignore[no-any-return]

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def close(self) -> None:
        self.process.kill()
        self.process.wait(BOUND)
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):  # (what was buffered for a server that is gone)
                stream.close()


def replies_in(frames: Iterator[bytes], count: int | None = None) -> list[dict[str, Any]]:
    """The replies among the messages ``frames`` gives, up to ``count`` of them (None: until the
    server ends); notifications have no ``id``."""
    replies: list[dict[str, Any]] = []
    for body in frames:
        message = json.loads(body)
        if "id" in message:
            replies.append(message)
            if len(replies) == count:
                break
    return replies


def request(msg_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def open_session(client: Client, path: str) -> str:
    client.send(request("open", "pi/open", {"path": path}))
    (reply,) = client.read(1)
    return str(reply["result"]["session"])


def batch(handle: str) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """A script's batch on one session: appends of long messages, a page of entries after each, and
    a request with a mistake (refused by the loop itself); the requests, the ids of those on the
    session (answered in this order) and of the refusals."""
    messages: list[dict[str, Any]] = []
    for n in range(ROUNDS):
        text = f"{n} " + "x" * TEXT_BYTES
        message = {"role": "user", "content": text, "timestamp": n}
        messages.append(
            request(f"a{n}", "pi/append", {"session": handle, "kind": "message", "message": message})
        )
        messages.append(request(f"g{n}", "pi/getEntries", {"session": handle, "limit": PAGE}))
        messages.append(request(f"r{n}", "pi/getEntries", {"session": handle, "limit": 0}))
    on_session = [m["id"] for m in messages if not m["id"].startswith("r")]
    refused = [m["id"] for m in messages if m["id"].startswith("r")]
    return messages, on_session, refused


def check_batch(replies: list[dict[str, Any]], on_session: list[str], refused: list[str]) -> None:
    """Every reply came once; the session's in the order sent, each page seeing the appends before it."""
    assert sorted(r["id"] for r in replies) == sorted(on_session + refused)
    assert [r["id"] for r in replies if r["id"] in set(on_session)] == on_session
    by_id = {r["id"]: r for r in replies}
    for n in range(ROUNDS):
        assert "result" in by_id[f"a{n}"], by_id[f"a{n}"]
        assert by_id[f"g{n}"]["result"]["total"] == 2 + n + 1  # the file's user, assistant, and ours
        assert len(by_id[f"g{n}"]["result"]["entries"]) == min(PAGE, 2 + n + 1)
        assert by_id[f"r{n}"]["error"]["code"] == INVALID_PARAMS


@pytest.fixture
def client(tmp_path: Path) -> Any:
    running = Client(tmp_path)
    yield running
    running.close()


def test_a_client_that_reads_only_after_sending_its_whole_batch_gets_every_reply_in_order(
    client: Client, tmp_path: Path
) -> None:
    handle = open_session(client, new_session_file(tmp_path / "sessions", cwd=str(tmp_path)))
    messages, on_session, refused = batch(handle)
    client.send(*messages)  # (megabytes of requests and of replies: more than both pipes hold)
    check_batch(client.read(len(messages)), on_session, refused)


def _a_thread_waits_to_write_a_pipe(pid: int) -> bool:
    """Whether a thread of ``pid`` waits for room in a pipe (its kernel wait channel, Linux)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # (a thread that just ended)
            if "pipe_write" in (task / "wchan").read_text():
                return True
    return False


def _wait_channels_shown(pid: int) -> bool:
    """Whether the kernel names what the threads of ``pid`` wait on (an idle server's threads all
    wait: a kernel that hides wait channels shows "0" for each)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if (task / "wchan").read_text() not in ("", "0"):
                return True
    return False


def test_the_server_serves_on_while_its_client_does_not_read(client: Client, tmp_path: Path) -> None:
    """Once a reply bigger than the pipe waits for the client, a request the loop answers itself
    and a write to another session: the write is done (its file holds it) before the client reads
    anything."""
    big = tmp_path / "big.jsonl"
    big.write_bytes(S.generate_session(300_000))
    other = new_session_file(tmp_path / "other", cwd=str(tmp_path))
    big_handle = open_session(client, str(big))
    other_handle = open_session(client, other)
    if not _wait_channels_shown(client.process.pid):  # (the server is idle: its threads wait)
        pytest.skip("this kernel does not show what a thread waits on (/proc/PID/task/TID/wchan)")
    client.send(request("entries", "pi/getEntries", {"session": big_handle}))
    client.within(
        lambda: _wait_for(lambda: _a_thread_waits_to_write_a_pipe(client.process.pid)),
        "the server's replies did not fill the pipe",
    )
    marker = "written while the client did not read"
    client.send(
        request("refused", "pi/getEntries", {"session": big_handle, "limit": 0}),
        request(
            "append",
            "pi/append",
            {
                "session": other_handle,
                "kind": "message",
                "message": {"role": "user", "content": marker, "timestamp": 1},
            },
        ),
    )
    client.within(
        lambda: _wait_for(lambda: marker in Path(other).read_text()),
        "the server stopped serving while its client did not read",
    )
    replies = {reply["id"]: reply for reply in client.read(3)}
    assert sorted(replies) == ["append", "entries", "refused"]
    assert replies["refused"]["error"]["code"] == INVALID_PARAMS
    assert "result" in replies["append"] and len(replies["entries"]["result"]["entries"]) >= 2


def _wait_for(condition: Callable[[], bool]) -> bool:
    while not condition():
        time.sleep(0.01)
    return True


def test_exit_writes_every_queued_reply_before_the_process_ends(client: Client, tmp_path: Path) -> None:
    """A script that sends its batch, ``shutdown`` and ``exit`` before reading anything gets every
    reply and ``shutdown``'s, then the end of the stream; the process ends with status 0."""
    handle = open_session(client, new_session_file(tmp_path / "sessions", cwd=str(tmp_path)))
    messages, on_session, refused = batch(handle)
    client.send(*messages, request("down", "shutdown", None), {"jsonrpc": "2.0", "method": "exit"})
    replies = client.within(lambda: replies_in(client.frames), "the replies never ended")
    assert replies[-1] == {"jsonrpc": "2.0", "id": "down", "result": None}
    check_batch(replies[:-1], on_session, refused)
    assert client.within(client.process.wait, "the server did not exit") == 0


def test_a_client_that_closes_its_end_mid_stream_has_its_replies_dropped(
    client: Client, tmp_path: Path
) -> None:
    """The client sends its batch, closes the end it reads without reading, and goes on writing:
    the server serves every request (the file holds every append), says once that the replies are
    dropped, and exits with status 0 after ``shutdown`` and ``exit``."""
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    handle = open_session(client, path)
    messages, _, _ = batch(handle)
    client.send(*messages)
    client.stdout.close()
    more = [
        request(
            f"m{n}",
            "pi/append",
            {
                "session": handle,
                "kind": "message",
                "message": {"role": "user", "content": f"more {n}", "timestamp": n},
            },
        )
        for n in range(20)
    ]
    client.send(*more, request("down", "shutdown", None), {"jsonrpc": "2.0", "method": "exit"})
    assert client.within(client.process.wait, "the server did not exit") == 0
    lines = Path(path).read_text().splitlines()
    assert len(lines) == 3 + ROUNDS + len(more)  # header, user, assistant, every append
    assert client.stderr().count("replies are dropped") == 1, client.stderr()
