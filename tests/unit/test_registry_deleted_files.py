"""The registry remembers the files whose sessions a pi/delete closed (by their names, never by a
device and inode, which another file may be given): a write by ``uri`` to one, read after the
delete answered, finds the session it closed. The memory is bounded, the oldest forgotten first."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_session_server.server import registry as registry_module
from pi_session_server.server.locations import file_keys, file_names
from pi_session_server.server.registry import Registry
from pi_session_server.server.workers import WorkerPool


@pytest.fixture
def registry() -> Registry:
    return Registry(WorkerPool())


def _deleted_under_a_session(registry: Registry, path: Path) -> str:
    """The handle of a session held on ``path`` that a pi/delete closed; the file then deleted."""
    path.write_text("{}\n")
    slot = registry.add(None, path=str(path), keys=file_keys(str(path)))
    slot.closed = True
    registry.discard_closed_by_delete(slot)
    path.unlink()
    return slot.handle


def _closed_on(registry: Registry, path: Path) -> str | None:
    return registry.closed_on_deleted_file(str(path), file_names(str(path)))


def test_a_deleted_file_is_found_by_its_path_and_other_spellings(registry: Registry, tmp_path: Path):
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    handle = _deleted_under_a_session(registry, tmp_path / "real" / "s.jsonl")
    assert registry.closed_by_delete(handle)
    for spelled in ("real/s.jsonl", "linked/s.jsonl", "real/../real/s.jsonl"):
        assert _closed_on(registry, tmp_path / spelled) == handle, spelled
    assert _closed_on(registry, tmp_path / "real" / "other.jsonl") is None


def test_the_latest_session_closed_on_a_file_is_the_one_found(registry: Registry, tmp_path: Path):
    path = tmp_path / "s.jsonl"
    _deleted_under_a_session(registry, path)
    latest = _deleted_under_a_session(registry, path)
    assert _closed_on(registry, path) == latest


def test_the_oldest_deleted_files_are_forgotten_first(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(registry_module, "REMEMBERED_DELETED_HANDLES", 2)
    shared = tmp_path / "shared.jsonl"
    first = _deleted_under_a_session(registry, shared)
    oldest = _deleted_under_a_session(registry, tmp_path / "a.jsonl")
    again = _deleted_under_a_session(registry, shared)  # (a third: ``first`` is forgotten)
    assert not registry.closed_by_delete(first)
    assert _closed_on(registry, shared) == again  # (forgetting ``first`` left the newer one's names)
    assert _closed_on(registry, tmp_path / "a.jsonl") == oldest
    _deleted_under_a_session(registry, tmp_path / "b.jsonl")
    assert not registry.closed_by_delete(oldest)
    assert _closed_on(registry, tmp_path / "a.jsonl") is None
