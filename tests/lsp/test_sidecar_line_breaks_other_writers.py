"""pi/getLineBreaks on a session file another program writes while a client (VS Code) asks at each
move of its cursor: after an append (pi), only the bytes appended are read, and a lone "\\r" that
ended the file is the first half of a CRLF once a "\\n" was appended; after a rewrite in place that
keeps the size within one tick of the file system's clock (its mtime and ctime stay those of the
write before), the reply is the file's as it is now, not the one kept from before the rewrite.

The server runs in-process so that the test counts the bytes its searches read, and can stand the
file system's clock still for a file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess
from lone_cr_reads import counted_searches

from pi_session_server.session import cache_dir


def _with_lone_cr(line: str) -> bytes:
    return line.replace('"id"', '\r"id"', 1).encode()


@contextlib.contextmanager
def _line_breaks_of(path: Path) -> Iterator[Callable[[], Any]]:
    """What pi/getLineBreaks answers for ``path`` each time it is called, from an in-process server."""
    server = InProcess()
    try:
        yield lambda: server.request("pi/getLineBreaks", {"uri": path.as_uri()})["result"][
            "loneCarriageReturns"
        ]
    finally:
        server.close()


def test_line_breaks_asked_after_an_append_read_only_the_bytes_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    written = S.header().encode() + b"\n" + _with_lone_cr(S.user("a", None)) + b"\n"
    written += S.user("b", "a").encode() + b"\r"  # (its last byte: lone while nothing follows it)
    path.write_bytes(written)
    bytes_read = counted_searches(monkeypatch)
    with _line_breaks_of(path) as line_breaks:
        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 2, "count": 1}]
        assert bytes_read == [len(written)]
        appended = b"\n" + _with_lone_cr(S.user("c", "b")) + b"\n"  # ("\r\n": line 2 ends in a CRLF)
        with path.open("ab") as file:
            file.write(appended)
        # (the file's last change long past from now on: what was found is given again while the file
        # looks the same; the search before, of a file just written, still serves for the append)
        monkeypatch.setattr(cache_dir, "RACY_NS", 0)
        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 3, "count": 1}]
        assert bytes_read == [len(written), len(appended)]
        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 3, "count": 1}]
        assert bytes_read == [len(written), len(appended)]  # unchanged: not read again


def _times_stand_still(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """The file system's clock does not tick for ``path`` from now on: whatever is written to it,
    its status keeps the mtime and ctime it has now (as a coarse clock keeps them within a tick)."""
    still = os.stat(path)
    real_stat, real_fstat = os.stat, os.fstat

    def standing(st: os.stat_result) -> os.stat_result:
        if (st.st_dev, st.st_ino) != (still.st_dev, still.st_ino):
            return st
        times = ("st_atime", "st_mtime", "st_ctime", "st_atime_ns", "st_mtime_ns", "st_ctime_ns")
        named = {name: getattr(still if "mtime" in name or "ctime" in name else st, name) for name in times}
        return os.stat_result((*st[:8], still[8], still[9]), named)

    monkeypatch.setattr(os, "stat", lambda *args, **kwargs: standing(real_stat(*args, **kwargs)))
    monkeypatch.setattr(os, "fstat", lambda fd: standing(real_fstat(fd)))


def test_a_same_size_rewrite_within_one_tick_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    first, second = S.user("a", None), S.user("b", "a")
    before = S.header().encode() + b"\n" + _with_lone_cr(first) + f"\n {second}\n".encode()
    after = f"{S.header()}\n {first}\n".encode() + _with_lone_cr(second) + b"\n"  # (the CR moved a line down)
    assert len(before) == len(after)
    path.write_bytes(before)
    _times_stand_still(monkeypatch, path)
    bytes_read = counted_searches(monkeypatch)
    with _line_breaks_of(path) as line_breaks:
        assert line_breaks() == [{"line": 1, "count": 1}]
        with path.open("r+b") as file:  # (in place: the same inode, size and times)
            file.write(after)
        assert line_breaks() == [{"line": 2, "count": 1}]
        assert bytes_read == [len(before), len(after)]  # read from its start again
        # once the file's last change is long past (the clock ticked since: a change now would show
        # in its times), what was found is given again without reading the file
        monkeypatch.setattr(cache_dir, "RACY_NS", 0)
        assert line_breaks() == [{"line": 2, "count": 1}]
        assert line_breaks() == [{"line": 2, "count": 1}]
        assert bytes_read == [len(before), len(after), len(after)]
