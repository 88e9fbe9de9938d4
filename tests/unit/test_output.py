"""Every byte of a reply or of a command's output reaches the reader, whatever the stream
(pi_session_server/output.py): a raw stdout (``python -u``, PYTHONUNBUFFERED=1) takes what one
write() call takes, less when a signal interrupts it, nothing when it is non-blocking and full."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import builders as S
import pytest

from pi_session_server.output import flush_fully, write_fully
from pi_session_server.server.framing import encode_frame, read_frames
from pi_session_server.server.jsonrpc import FrameWriter

ROOT = Path(__file__).resolve().parents[2]


class _Stingy(io.RawIOBase):
    """A raw stream that takes at most ``most`` bytes a call, and now and then none (None), as a
    raw file does when interrupted or non-blocking and full."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.calls = 0
        self.taken = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data):  # type: ignore[no-untyped-def, override]
        self.calls += 1
        if self.calls % 3 == 0:
            return None
        part = bytes(data[: self.most])
        self.taken += part
        return len(part)

    def fileno(self) -> int:
        return sys.__stderr__.fileno()  # (always writable: the wait for room returns at once)


def test_a_stream_that_takes_a_little_at_a_time_gets_everything():
    data = os.urandom(100_000)
    stream = _Stingy(997)
    write_fully(stream, data)  # type: ignore[arg-type]
    assert bytes(stream.taken) == data
    writer = FrameWriter(stream)  # type: ignore[arg-type]
    stream.taken.clear()
    writer.write_frame(b'{"jsonrpc":"2.0","id":1,"result":"', b"x" * 50_000, b'"}')
    assert bytes(stream.taken) == encode_frame(b'{"jsonrpc":"2.0","id":1,"result":"' + b"x" * 50_000 + b'"}')


@pytest.mark.parametrize("buffered", [False, True])
def test_a_non_blocking_pipe_that_fills_up_gets_everything(buffered: bool):
    """A full non-blocking pipe: the raw file takes nothing (None), the buffered one raises
    BlockingIOError; both wait for room and write the rest, while a slow reader drains it."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stream = open(write_end, "wb", buffering=io.DEFAULT_BUFFER_SIZE if buffered else 0)  # noqa: SIM115
    data = os.urandom(3_000_000)  # many times what a pipe holds
    got = bytearray()

    def read_slowly() -> None:
        while chunk := os.read(read_end, 65536):
            got.extend(chunk)
            time.sleep(0.001)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    try:
        write_fully(stream, data)
        flush_fully(stream)
    finally:
        stream.close()
        reader.join(30)
        os.close(read_end)
    assert bytes(got) == data


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the server blocked")
def test_a_big_reply_stopped_and_continued_mid_write_arrives_whole(tmp_path: Path):
    """The sidecar under PYTHONUNBUFFERED=1 (its stdout the raw file), stopped while it writes a big
    reply into a full pipe (Ctrl-Z in a terminal, a profiler attaching) and continued: the write it
    was in returns short, and the rest follows; before, the rest was dropped and the client waited
    for it forever."""
    session = tmp_path / "s.jsonl"
    session.write_bytes(S.generate_session(3_000_000, seed=7))
    entries = session.read_bytes().count(b"\n") - 1  # (every line after the header an entry)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PI_SESSION_NO_INDEX="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        frames = read_frames(server.stdout)

        def send(message: dict) -> None:
            assert server.stdin is not None
            server.stdin.write(encode_frame(json.dumps(message).encode()))
            server.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "pi/open", "params": {"path": str(session)}})
        handle = json.loads(next(frames))["result"]["session"]
        params = {"session": handle, "form": "flat", "filter": "all", "offset": 0, "limit": 50000}
        send({"jsonrpc": "2.0", "id": 2, "method": "pi/getTree", "params": params})
        _wait_until_writing_to_a_full_pipe(server.pid)
        os.kill(server.pid, signal.SIGSTOP)
        time.sleep(0.2)
        os.kill(server.pid, signal.SIGCONT)
        replies: list[dict] = []
        reader = threading.Thread(target=lambda: replies.append(json.loads(next(frames))), daemon=True)
        reader.start()
        reader.join(60)
        assert replies, "the reply never came whole"
        nodes = replies[0]["result"]["nodes"]
        assert len(nodes) == entries and not replies[0]["result"].get("hasMore")
    finally:
        server.kill()
        server.wait(30)
        server.stdin.close()
        server.stdout.close()


def _wait_until_writing_to_a_full_pipe(pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                wchan = Path(f"/proc/{pid}/task/{task}/wchan").read_text()
            except OSError:
                continue
            if "pipe_write" in wchan:
                return
        time.sleep(0.01)
    pytest.fail("the server never blocked writing its reply")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the command blocked")
def test_a_command_stopped_and_continued_mid_print_writes_everything(tmp_path: Path):
    """``pi-session repair FILE -o -`` under PYTHONUNBUFFERED=1 prints the session through the text
    layer's raw file; stopped while a write waits on a full pipe and continued, that write returns
    short. The command's streams are buffered at its start (``buffer_raw_std_streams``), so the
    rest still follows; before, the rest of that chunk was lost."""
    session = tmp_path / "s.jsonl"
    session.write_bytes(S.generate_session(3_000_000, seed=11))
    env = dict(os.environ, PYTHONUNBUFFERED="1", PI_SESSION_NO_INDEX="1")
    command = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "repair", str(session), "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert command.stdout is not None
    got = bytearray()
    try:
        for _ in range(3):
            _wait_until_writing_to_a_full_pipe(command.pid)
            os.kill(command.pid, signal.SIGSTOP)
            time.sleep(0.1)
            os.kill(command.pid, signal.SIGCONT)
            got += command.stdout.read(70_000)  # room for one more write, which blocks again
        got += command.stdout.read()
    finally:
        command.kill()
        command.wait(30)
        command.stdout.close()
    assert command.returncode == 0
    assert bytes(got) == session.read_bytes()
