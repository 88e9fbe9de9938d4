"""The writer of the server's frames (server/frame_writer.py): the event loop never waits for the
client, the frames reach it whole and in order once it reads, the backlog of a client that does
not read is said once in the log, and the end of the connection waits for a client that reads but
not for one that never does."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from pi_session_server.server.frame_writer import FrameWriter
from pi_session_server.server.framing import encode_frame, read_frames

BOUND = 60.0  # seconds: a hang bound
T = TypeVar("T")


def within(step: Callable[[], T], what: str) -> T:
    outcome: list[Any] = []
    runner = threading.Thread(target=lambda: outcome.append(step()), daemon=True)
    runner.start()
    runner.join(BOUND)
    assert outcome, what
    return outcome[0]  # type: ignore[no-any-return]


class Served:
    """A pipe nobody reads yet, an event loop on a thread of its own, and the writer made on it."""

    def __init__(self, **options: Any) -> None:
        read_end, write_end = os.pipe()
        self.reader = os.fdopen(read_end, "rb")
        self.stream = os.fdopen(write_end, "wb")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.writer: FrameWriter = self.on_loop(lambda: FrameWriter(self.stream, self.loop, **options))

    def on_loop(self, call: Callable[[], T]) -> T:
        """``call()`` on the loop's thread (failing the test if the loop does not run it)."""

        async def run() -> T:
            return call()

        future = asyncio.run_coroutine_threadsafe(run(), self.loop)
        return within(future.result, "the event loop did not run")

    def read_all(self) -> list[bytes]:
        """What the client reads once the writer finished."""
        reader = threading.Thread(target=lambda: self.frames.extend(read_frames(self.reader)), daemon=True)
        self.frames: list[bytes] = []
        reader.start()
        assert within(lambda: self.on_loop(self.writer.finish), "finish() did not return") is True
        self.stream.close()
        reader.join(BOUND)
        return self.frames

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(BOUND)
        self.loop.close()
        self.reader.close()  # (a write still waiting fails: the stream is the test's again)
        with contextlib.suppress(OSError):
            self.stream.close()


@pytest.fixture
def served() -> Iterator[Callable[..., Served]]:
    made: list[Served] = []

    def make(**options: Any) -> Served:
        made.append(Served(**options))
        return made[-1]

    yield make
    for each in made:
        each.close()


def body(n: int, size: int) -> bytes:
    return b'{"n":%d,"pad":"%s"}' % (n, b"x" * size)


def test_the_loop_goes_on_while_the_client_does_not_read(served: Callable[..., Served]) -> None:
    """Megabytes written on the loop to a pipe nobody reads: the loop runs the next thing, and the
    client gets every frame whole and in order once it reads, with those of other threads."""
    server = served()
    for n in range(50):
        server.on_loop(lambda n=n: server.writer.write_frame(body(n, 100_000)))  # type: ignore[misc]
    assert server.on_loop(lambda: "still running") == "still running"
    server.writer.write(encode_frame(body(50, 10)))  # (pygls' interface, from another thread)
    assert server.read_all() == [body(n, 100_000) for n in range(50)] + [body(50, 10)]


def test_frames_of_many_threads_are_each_whole_and_in_each_thread_s_order(
    served: Callable[..., Served],
) -> None:
    server = served()

    def write(thread: int) -> None:
        for n in range(200):
            server.writer.write_frame(b'{"t":%d,"n":%d,"pad":"' % (thread, n), b"y" * (n * 97 % 5000), b'"}')

    writers = [threading.Thread(target=write, args=(thread,)) for thread in range(4)]
    for each in writers:
        each.start()
    for each in writers:
        each.join(BOUND)
    frames = [frame.split(b',"pad"')[0] for frame in server.read_all()]
    for thread in range(4):
        assert [f for f in frames if f.startswith(b'{"t":%d,' % thread)] == [
            b'{"t":%d,"n":%d' % (thread, n) for n in range(200)
        ]


def test_a_backlog_past_the_bound_is_logged_once_and_again_after_the_client_caught_up(
    served: Callable[..., Served], caplog: pytest.LogCaptureFixture
) -> None:
    server = served(backlog_warning=1_000_000)
    caplog.set_level(logging.WARNING, logger="pi_session_server.server.frame_writer")
    frames = read_frames(server.reader)
    for round_ in range(2):
        for n in range(15):
            server.writer.write_frame(body(n, 100_000))
        for n in range(15):  # the client reads everything
            assert next(frames) == body(n, 100_000)
        assert len([r for r in caplog.records if "not reading" in r.getMessage()]) == round_ + 1
        within(lambda: _until_written(server.writer), "the writer did not catch up")


def _until_written(writer: FrameWriter) -> bool:
    with writer._changed:
        while writer._queued:
            writer._changed.wait()
    return True


def test_finish_gives_up_on_a_client_that_never_reads_and_leaves_the_stream_open(
    served: Callable[..., Served], caplog: pytest.LogCaptureFixture
) -> None:
    server = served(drain_seconds=0.2)
    server.writer.write_frame(body(0, 3_000_000))
    within(lambda: server.on_loop(server.writer.close), "close() waited for a client that never reads")
    assert not server.stream.closed  # (closing it would wait for the write that waits)
    assert any("took none of its replies" in r.getMessage() for r in caplog.records)
    server.writer._drain_seconds = BOUND * 10  # (exit's finish after the end of input's: not waited again)
    assert within(lambda: server.on_loop(server.writer.finish), "finish() waited again") is False
    server.writer.write_frame(body(1, 10))  # dropped: the connection is over


def test_a_client_gone_drops_the_replies_and_says_so_once(
    served: Callable[..., Served], caplog: pytest.LogCaptureFixture
) -> None:
    # An earlier test's writer may say so late, on its own thread; one that ended may leave its
    # ident to ours, but then said it before ours started. So: ours by the thread, said since.
    before = [thread for thread in threading.enumerate() if thread.name == "pi-stdout"]
    server = served()
    started = time.time()
    mine = {
        thread.ident
        for thread in threading.enumerate()
        if thread.name == "pi-stdout" and all(thread is not other for other in before)
    }
    server.reader.close()
    for n in range(20):
        server.writer.write_frame(body(n, 100_000))
    assert within(lambda: server.on_loop(server.writer.finish), "finish() did not return") is True
    said = [
        r
        for r in caplog.records
        if "replies are dropped" in r.getMessage() and r.thread in mine and r.created >= started
    ]
    assert len(said) == 1


def test_without_a_loop_frames_are_written_at_once() -> None:
    stream = io.BytesIO()
    writer = FrameWriter(stream)
    writer.write_frame(b"{", b"}")
    assert stream.getvalue() == encode_frame(b"{}")
