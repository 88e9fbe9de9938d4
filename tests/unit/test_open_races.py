"""Lines another process appends while we open a file are taken in by the next refresh, with the
right line numbers: the manager remembers how far it read, not how long the file was afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_session_server.session import SessionManager, file_load

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'


def line(entry_id: str, parent: str | None) -> bytes:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},"timestamp":"2026-01-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"{entry_id}","timestamp":1}}}}\n'
    ).encode()


@pytest.mark.parametrize("terminated", [True, False])
def test_lines_appended_during_the_open_come_with_the_next_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminated: bool
):
    path = tmp_path / "s.jsonl"
    last = line("b", "a")
    path.write_bytes(HEADER + line("a", None) + (last if terminated else last[:-1]))
    real_load = file_load.load_lazy

    def load_then_someone_appends(*args: Any, **kwargs: Any) -> Any:
        loaded = real_load(*args, **kwargs)
        with open(path, "ab") as f:  # another writer, after our scan and before we look at the size
            f.write((b"" if terminated else b"\n") + line("c", "b"))
        return loaded

    monkeypatch.setattr(file_load, "load_lazy", load_then_someone_appends)
    m = SessionManager.open(str(path), read_only=True)
    assert [e.id for e in m.get_entries()] == ["a", "b"]
    change = m.refresh_from_disk()
    assert change.kind == ("appended" if terminated else "reloaded")
    assert [e.id for e in m.get_entries()] == ["a", "b", "c"]
    physical = path.read_bytes().split(b"\n")
    for entry in m.get_entries():
        assert f'"id":"{entry.id}"'.encode() in physical[entry.line]
