"""The opt-in durability: with ``fsync`` every write of a session's lines reaches ``os.fsync``
before the call or the request that made it returns, and without it no append waits for one.

Power loss cannot be simulated; what can be shown is that the bytes of each acknowledged entry were
in the file when it was handed to ``fsync``, through the library, ``--fsync`` and
``initializationOptions``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import ASSISTANT, USER, chain_file

from pi_session_server.server.app import ServerOptions
from pi_session_server.session import SessionManager
from pi_session_server.session.rewrites import rewrite_file

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="reads what was fsynced through /proc/self/fd"
)


class Synced:
    """Every ``os.fsync`` of the process: the inode it was given and the file's bytes then."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bytes]] = []

    def holds(self, path: str, entry_id: str) -> bool:
        """Whether some ``fsync`` of the file ``path`` now names found ``entry_id`` written in it."""
        inode = os.stat(path).st_ino
        return any(ino == inode and f'"id":"{entry_id}"'.encode() in data for ino, data in self.calls)

    def of(self, path: str) -> int:
        inode = os.stat(path).st_ino
        return sum(1 for ino, _ in self.calls if ino == inode)


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Synced]:
    record = Synced()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        # (the descriptor may be open for writing only: the file is read through another)
        data = b"" if stat.S_ISDIR(st.st_mode) else Path(f"/proc/self/fd/{fd}").read_bytes()
        record.calls.append((st.st_ino, data))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    yield record


def test_the_library_fsyncs_every_append_when_asked(tmp_path: Path, synced: Synced) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), fsync=True)
    path = manager.get_session_file()
    for message in (USER, ASSISTANT, USER, ASSISTANT):  # the first batch written, then appends
        entry_id = manager.append_message(message)
        assert synced.holds(path, entry_id), f"{entry_id} was acknowledged before an fsync held it"
    manager.close()

    existing = str(chain_file(tmp_path / "existing.jsonl", 4))
    manager = SessionManager.open(existing, fsync=True)
    entry_id = manager.append_message(USER)
    assert synced.holds(existing, entry_id)
    manager.close()


def test_a_fork_made_with_fsync_is_fsynced_before_it_is_returned(tmp_path: Path, synced: Synced) -> None:
    source = str(chain_file(tmp_path / "source.jsonl", 4))
    last_id = SessionManager.open(source, read_only=True).get_leaf_id()
    forked = SessionManager.fork_from(source, str(tmp_path), str(tmp_path / "forks"), fsync=True)
    path = forked.get_session_file()
    forked.close()
    assert synced.holds(path, last_id), "the fork's copy of the source's entries was never fsynced"


def test_the_directory_of_a_new_session_file_is_fsynced_before_its_first_append_returns(
    tmp_path: Path, synced: Synced
) -> None:
    sessions = tmp_path / "sessions"
    manager = SessionManager.create(str(tmp_path), str(sessions), fsync=True)
    for message in (USER, ASSISTANT):  # whichever of them writes the file first (the pi release's rule)
        manager.append_message(message)
    manager.close()
    assert synced.of(str(sessions)) > 0, "the file's name in its directory was never fsynced"


def test_a_rewrite_fsyncs_the_directory_that_names_the_new_file(tmp_path: Path, synced: Synced) -> None:
    # (a migration renames its new file over the old one, then appends to it: with the rename not
    # yet on the disk, a power cut brings back the old file without those appends)
    directory = tmp_path / "sessions"
    directory.mkdir()
    path = directory / "s.jsonl"
    path.write_bytes(b'{"type":"session","id":"s","timestamp":"t","cwd":"/"}\n')
    rewrite_file(str(path), [path.read_bytes()])
    assert synced.of(str(directory)) > 0, "the rename over the old file was never fsynced"


def test_the_library_does_not_fsync_appends_by_default(tmp_path: Path, synced: Synced) -> None:
    path = str(chain_file(tmp_path / "s.jsonl", 4))
    manager = SessionManager.open(path)
    for _ in range(3):
        manager.append_message(USER)
    manager.close()
    assert synced.of(path) == 0


def test_the_server_fsyncs_a_fork_before_answering_it(tmp_path: Path, synced: Synced) -> None:
    server = _initialized(ServerOptions(fsync=True), None)
    try:
        source = str(chain_file(tmp_path / "source.jsonl", 4))
        last_id = SessionManager.open(source, read_only=True).get_leaf_id()
        forked = server.request(
            "pi/forkFrom",
            {"sourcePath": source, "targetCwd": str(tmp_path), "sessionDir": str(tmp_path / "f")},
        )
        path = forked["result"]["sessionFile"]
        assert synced.holds(path, last_id), "pi/forkFrom answered before its file was fsynced"
    finally:
        server.close()


def _initialized(options: ServerOptions | None, initialization: dict[str, Any] | None) -> Any:
    from in_process_server import InProcess

    server = InProcess(options)
    params: dict[str, Any] = {"processId": None, "capabilities": {}}
    if initialization is not None:
        params["initializationOptions"] = initialization
    assert "result" in server.request("initialize", params)
    server.notify("initialized", {})
    return server


def _append(server: Any, handle: str, message: dict[str, Any]) -> str:
    reply = server.request("pi/append", {"session": handle, "kind": "message", "message": message})
    assert "result" in reply, reply
    entry_id: str = reply["result"]["id"]
    return entry_id


@pytest.mark.parametrize(
    ("options", "initialization"),
    [(ServerOptions(fsync=True), None), (None, {"fsync": True})],
    ids=["serve --fsync", "initializationOptions"],
)
def test_the_server_fsyncs_every_append_before_answering_it(
    tmp_path: Path, synced: Synced, options: ServerOptions | None, initialization: dict[str, Any] | None
) -> None:
    server = _initialized(options, initialization)
    try:
        existing = str(chain_file(tmp_path / "existing.jsonl", 4))
        opened = server.request("pi/open", {"path": existing})["result"]["session"]
        created = server.request(
            "pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "sessions")}
        )
        created_handle = created["result"]["session"]
        for handle in (opened, created_handle):
            for message in (USER, ASSISTANT):
                entry_id = _append(server, handle, message)
                path = server.request("pi/getInfo", {"session": handle})["result"]["sessionFile"]
                assert synced.holds(path, entry_id), f"{entry_id} was answered before an fsync held it"
    finally:
        server.close()


def test_the_server_does_not_fsync_appends_by_default(tmp_path: Path, synced: Synced) -> None:
    server = _initialized(None, None)
    try:
        path = str(chain_file(tmp_path / "s.jsonl", 4))
        handle = server.request("pi/open", {"path": path})["result"]["session"]
        for message in (USER, ASSISTANT):
            _append(server, handle, message)
    finally:
        server.close()
    assert synced.of(path) == 0
