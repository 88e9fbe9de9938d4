"""Whole-file rewrites under the lock (session/rewrites.py) and appends that wait for one (issue 20)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_session_server.errors import NotRegularFileError, PiSessionError, StaleFileError
from pi_session_server.session import rewrites, storage
from pi_session_server.session.rewrites import FileState, LockedFile

LINE_A = b'{"a":1}\n'
LINE_B = b'{"b":2}\n'
PI = b'{"pi":3}\n'


def _state(path: Path) -> FileState:
    fd = os.open(path, os.O_RDONLY)
    try:
        return FileState.of(fd)
    finally:
        os.close(fd)


def test_an_append_that_waited_for_a_rewrite_goes_to_the_new_file(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    appender = storage.Appender(str(path))
    appender.append(LINE_A)  # its descriptor is on the file the rewrite replaces
    done = threading.Event()
    with LockedFile(str(path)) as locked:
        expected = locked.state()
        waiting = threading.Thread(target=lambda: (appender.append(LINE_B), done.set()))
        waiting.start()
        time.sleep(0.2)
        assert not done.is_set(), "the append did not wait for the rewrite's lock"
        locked.replace([LINE_A], expected)
    waiting.join(10)
    assert path.read_bytes() == LINE_A + LINE_B
    appender.close()


def test_lines_appended_before_the_rename_are_kept(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A + LINE_B)
    with LockedFile(str(path)) as locked:
        expected = locked.state()

        def repaired():
            yield LINE_B
            with open(path, "ab") as f:  # pi appends while the rewrite is written
                f.write(PI)

        outcome = locked.replace(repaired(), expected, keep_appended=True)
    assert path.read_bytes() == LINE_B + PI
    assert (outcome.written, outcome.kept) == (len(LINE_B), len(PI))


def test_without_keep_appended_an_append_refuses_the_rewrite(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    with LockedFile(str(path)) as locked:
        expected = locked.state()
        with open(path, "ab") as f:
            f.write(PI)
        with pytest.raises(StaleFileError, match="nothing was written"):
            locked.replace([LINE_B], expected)
    assert path.read_bytes() == LINE_A + PI


def _write_in_the_rename_window(monkeypatch: pytest.MonkeyPatch, path: Path, data: bytes, *, truncate: bool):
    """Another process writes the old file between the last check and the rename."""
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        with open(path, "wb" if truncate else "ab") as f:
            f.write(data)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)


def test_a_line_appended_in_the_instant_of_the_rename_follows_the_new_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    _write_in_the_rename_window(monkeypatch, path, PI, truncate=False)
    with LockedFile(str(path)) as locked:
        outcome = locked.replace([LINE_B], locked.state(), keep_appended=True)
    assert path.read_bytes() == LINE_B + PI
    assert outcome.kept == len(PI)


def test_a_rewrite_in_the_instant_of_the_rename_is_put_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    _write_in_the_rename_window(monkeypatch, path, PI + PI, truncate=True)  # pi migrating in place
    with LockedFile(str(path)) as locked, pytest.raises(StaleFileError, match="put back"):
        locked.replace([LINE_B], locked.state())
    assert path.read_bytes() == PI + PI


def test_a_rewrite_whose_writer_pauses_after_its_truncation_is_put_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``cat backup > FILE`` truncates the file the instant before our rename and writes its
    content a few polls later (descheduled on a busy machine): the content lands in the file the
    rename replaced, and what is put back is that content, not the empty file of the moment."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    real_replace = os.replace
    writer: list[int] = []
    polls: list[float] = []
    # the polls' clock: it moves by what each poll sleeps, however long a loaded machine takes
    clock = [time.monotonic()]

    def replace(src: str, dst: str) -> None:
        writer.append(os.open(path, os.O_WRONLY | os.O_TRUNC))  # the shell's `>`
        real_replace(src, dst)

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 5:
            os.write(writer[0], PI + PI)  # cat, at last, through the shell's descriptor
        clock[0] += seconds

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(rewrites.time, "sleep", sleep)
    monkeypatch.setattr(rewrites.time, "monotonic", lambda: clock[0])
    try:
        with LockedFile(str(path)) as locked, pytest.raises(StaleFileError, match="put back"):
            locked.replace([LINE_B], locked.state())
    finally:
        os.close(writer[0])
    assert len(polls) >= 5, "the writer never wrote: the test did not pause it"
    assert path.read_bytes() == PI + PI


def test_a_new_file_never_replaces_one_created_meanwhile(tmp_path: Path):
    path = tmp_path / "new.jsonl"
    with LockedFile(str(path)) as locked:
        assert locked.state() is None
        path.write_bytes(PI)
        with pytest.raises(StaleFileError, match="created by another process"):
            locked.replace([LINE_A], None)
    assert path.read_bytes() == PI
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl"]


def test_a_new_file_is_created(tmp_path: Path):
    path = tmp_path / "new.jsonl"
    assert rewrites.rewrite_file(str(path), [LINE_A]).written == len(LINE_A)
    assert path.read_bytes() == LINE_A


def test_an_empty_file_is_filled_in_place_only_while_empty(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    inode = path.stat().st_ino
    with LockedFile(str(path)) as locked:
        locked.fill_empty(LINE_A)
    assert path.read_bytes() == LINE_A and path.stat().st_ino == inode
    with LockedFile(str(path)) as locked, pytest.raises(StaleFileError):
        locked.fill_empty(LINE_B)
    assert path.read_bytes() == LINE_A


def test_the_lock_follows_a_file_replaced_while_it_was_awaited(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    got: list[FileState | None] = []

    def lock_it() -> None:
        with LockedFile(str(path)) as second:
            got.append(second.state())

    with LockedFile(str(path)) as first:
        waiting = threading.Thread(target=lock_it)
        waiting.start()
        time.sleep(0.2)
        first.replace([LINE_B], first.state())
    waiting.join(10)
    assert got and got[0] is not None and got[0].ino == path.stat().st_ino and got[0].size == len(LINE_B)


class _WritesAtFirstPoll:
    """The clock ``storage`` waits by, the other program's write made while it waits its first
    poll (a timer thread could be late past the whole wait on a loaded machine)."""

    monotonic = staticmethod(time.monotonic)

    def __init__(self, write: Callable[[], object]) -> None:
        self._write: Callable[[], object] | None = write

    def sleep(self, _seconds: float) -> None:
        write, self._write = self._write, None
        if write is not None:
            write()


def test_a_shrunk_file_is_waited_for_until_it_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A + LINE_B)
    identity = storage.FileIdentity.of(path.stat())
    known_end = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(0)
        monkeypatch.setattr(
            storage, "time", _WritesAtFirstPoll(lambda: (f.write(LINE_A + LINE_B + PI), f.flush()))
        )
        st = storage.settle_after_shrink(str(path), identity, known_end)
    assert st is not None and st.st_size >= known_end
    assert _state(path).size == len(LINE_A + LINE_B + PI)


def test_an_untouched_file_is_not_waited_for(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE_A)
    identity = storage.FileIdentity.of(path.stat())
    started = time.monotonic()
    assert storage.settle_after_shrink(str(path), identity, len(LINE_A)) is not None
    assert time.monotonic() - started < storage.REWRITE_WAIT


def _fails_at_once(action) -> PiSessionError | OSError | None:
    """Run ``action`` in a thread: the exception it raised, within a few seconds (a hang fails)."""
    raised: list[PiSessionError | OSError | None] = []

    def run() -> None:
        try:
            action()
            raised.append(None)
        except (PiSessionError, OSError) as err:
            raised.append(err)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    assert raised, "waited on the FIFO"
    return raised[0]


@pytest.mark.parametrize(
    "operation",
    [
        lambda path: LockedFile(path).close(),
        lambda path: rewrites.rewrite_file(path, [LINE_A]),
        lambda path: storage.repair_trailing_newline(path),
    ],
    ids=["LockedFile", "rewrite_file", "repair_trailing_newline"],
)
def test_a_fifo_renamed_over_the_session_file_is_refused_at_once(tmp_path: Path, operation):
    """A FIFO renamed over the file is refused as the appender refuses it (NotRegularFileError,
    -32010 on the wire), without waiting for a writer or reading it, and nothing goes into it."""
    path = tmp_path / "s.jsonl"
    fifo = tmp_path / "s.fifo"
    os.mkfifo(fifo)
    os.replace(fifo, path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a writer's open would not wait then
    try:
        error = _fails_at_once(lambda: operation(str(path)))
        assert isinstance(error, NotRegularFileError), error
        assert str(error) == f"Not a regular file: {path} is a FIFO"
        assert os.read(reader, 100) == b""
    finally:
        os.close(reader)
