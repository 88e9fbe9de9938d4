"""pi/getStats reads the assistant lines in one pass, a big buffer at a time
(``session_stats._FileLines``): the buffer read last is let go before the next is read, so that a
session whose assistant lines are far apart (screenshots between them) never holds two at once."""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import Any

import pytest
from test_turn_store import _plain, _write

from pi_session_server.server import session_stats


class _Buffer(bytearray):
    """A buffer read from the file (weakly referenceable, unlike bytes)."""


class _OsReadingInto:
    """The os module as session_stats sees it, its reads by ``pread``."""

    def __init__(self, pread: Any) -> None:
        self.pread = pread

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def test_the_buffer_read_last_is_let_go_before_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "s.jsonl"
    _write(path, 12)
    expected = json.dumps(_plain(path))
    monkeypatch.setattr(session_stats, "_CHUNK", 256)  # about a line: a buffer read for each
    real_pread = os.pread
    buffers: list[weakref.ref[_Buffer]] = []
    held_at_a_read: list[int] = []

    def pread(fd: int, size: int, offset: int) -> Any:
        held_at_a_read.append(sum(1 for buffer in buffers if buffer() is not None))
        buffer = _Buffer(real_pread(fd, size, offset))
        buffers.append(weakref.ref(buffer))
        return buffer

    monkeypatch.setattr(session_stats, "os", _OsReadingInto(pread))
    assert json.dumps(_plain(path)) == expected
    # each of the 12 turns' lines read into a buffer of its own, none held then; a line longer than
    # a buffer read on into a second one, added to the first (the one held)
    assert held_at_a_read.count(0) == 12 and max(held_at_a_read) == 1
