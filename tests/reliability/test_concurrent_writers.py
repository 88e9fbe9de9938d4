"""Concurrent writers: we append to a session file while another process appends to it too.

The other process is a plain O_APPEND writer (whole lines, no lock), a careless writer that writes
each line in two pieces, a second library process, or pi itself (the reference SessionManager via
the oracle copy, ``PI_ORACLE_DIR``). In every case: no entry of either side is lost or glued to
another line, our view after ``refresh_from_disk()`` equals a fresh open of the file, and the
foreign writer is reported (``drain_events()``).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from reliability_children import foreign_entry_line, library_appender, plain_line_appender, split_line_hammer
from reliability_helpers import (
    HERE,
    USER,
    ForkedChild,
    LineCollector,
    assistant_message,
    check_session_file,
    new_session_file,
)
from reliability_rpc import RawServer

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(240)


def view_of(manager: SessionManager) -> dict[str, Any]:
    """What a client sees of a session: entries (with their lines), leaf, labels, tree shape."""
    entries = manager.get_entries()

    def shape(nodes: list[Any]) -> list[Any]:
        return [(n.entry.id, shape(n.children)) for n in nodes]

    return {
        "entries": [(e.id, e.parent_id, e.type, e.line) for e in entries],
        "leaf": manager.get_leaf_id(),
        "labels": {e.id: manager.get_label(e.id) for e in entries if manager.get_label(e.id) is not None},
        "tree": shape(manager.get_tree()),
        "context": len(manager.build_session_context()["messages"]),
    }


def fresh_view(path: str) -> dict[str, Any]:
    manager = SessionManager.open(path, read_only=True)
    try:
        return view_of(manager)
    finally:
        manager.close()


def _append_some(manager: SessionManager, rng: random.Random, count: int, pause: float) -> list[str]:
    ids = []
    for n in range(count):
        if n % 7 == 3 and ids:
            ids.append(manager.append_label_change(rng.choice(ids), f"l{n}"))
        elif n % 2:
            ids.append(manager.append_message(assistant_message(f"ours {n}", n)))
        else:
            ids.append(manager.append_message({"role": "user", "content": f"ours {n}", "timestamp": n}))
        if n % 25 == 0:
            manager.refresh_from_disk()  # take in the other side now and then, as the sidecar does
        if pause:
            time.sleep(pause)
    return ids


def _settle(manager: SessionManager, path: str, ours: list[str], theirs: list[str]) -> None:
    check_session_file(path, [*ours, *theirs])
    manager.refresh_from_disk()
    assert view_of(manager) == fresh_view(path)


def test_library_and_plain_foreign_writer(tmp_path: Path):
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    other = ForkedChild(plain_line_appender, path, "f", 400, 0.002)
    assert other.output.wait_ready()
    ours = _append_some(manager, random.Random(1), 400, 0.002)
    other.output.finish()
    other.kill()
    theirs = other.output.lines
    assert len(theirs) == 400
    events = manager.drain_events()
    assert events, "the foreign writer was not reported"
    assert all(e.found_size > e.expected_size for e in events)
    _settle(manager, path, ours, theirs)
    manager.close()


@pytest.mark.slow
def test_library_and_careless_split_line_writer(tmp_path: Path):
    """A writer that writes each line in two write() calls (pi does not: one appendFileSync per
    line) may break its own lines; ours must survive even when they land between its halves."""
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    other = ForkedChild(split_line_hammer, path)
    assert other.output.wait_ready()
    ours = [manager.append_message(USER) for _ in range(10_000)]
    other.kill()
    other.output.finish()
    assert manager.drain_events()
    check_session_file(path, ours)
    manager.close()


def test_two_library_processes_serialize_their_appends(tmp_path: Path):
    path = new_session_file(tmp_path)
    children = [ForkedChild(library_appender, path, seed, "small", 500) for seed in (11, 12)]
    for child in children:
        assert child.output.wait_ready()
    ids: list[str] = []
    for child in children:
        ids.extend(child.output.finish(timeout=120))
        child.kill()
    assert len(ids) == 1000
    check_session_file(path, ids)


def _physical_line_of(path: str, entry_id: str) -> int:
    needle = b'"id":"' + entry_id.encode() + b'"'
    return next(n for n, line in enumerate(Path(path).read_bytes().split(b"\n")) if needle in line)


def test_foreign_lines_before_our_append_are_taken_in_by_the_next_refresh(tmp_path: Path):
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    with open(path, "ab") as f:
        f.write(foreign_entry_line("f", 1))
    mine = manager.append_message(USER)
    assert [e.found_size > e.expected_size for e in manager.drain_events()] == [True]
    manager.refresh_from_disk()
    assert manager.get_entry("f0000001") is not ABSENT
    assert manager.get_entry(mine).line == _physical_line_of(path, mine)
    assert view_of(manager) == fresh_view(path)
    manager.close()


def test_line_of_our_append_counts_foreign_lines_before_it(tmp_path: Path):
    """Entry.line (the server's node "line", where an editor jumps) is right at once, not only
    after the next refresh."""
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    with open(path, "ab") as f:
        f.write(foreign_entry_line("f", 1))
    mine = manager.append_message(USER)
    assert manager.get_entry(mine).line == _physical_line_of(path, mine)
    manager.close()


def test_refresh_after_our_own_appends_changes_nothing(tmp_path: Path):
    """Nobody else wrote: refresh_from_disk() must not reload, and must not move a leaf we set."""
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    first = manager.get_entries()[0].id
    manager.append_message(USER)
    manager.branch(first)  # the user goes back to an earlier entry
    change = manager.refresh_from_disk()
    assert manager.get_leaf_id() == first, "a refresh after our own append undid branch()"
    assert change.kind == "unchanged"
    manager.close()


def _pi_writer(
    oracle_module: Path, path: str, count: int, pause_ms: int
) -> tuple[subprocess.Popen[bytes], Any]:
    process = subprocess.Popen(
        [
            "node",
            str(HERE / "children" / "pi_appender.mjs"),
            str(oracle_module),
            path,
            str(count),
            str(pause_ms),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return process, LineCollector(process.stdout)


@pytest.mark.slow
def test_library_and_pi_itself(tmp_path: Path, oracle_module: Path):
    path = new_session_file(tmp_path)
    manager = SessionManager.open(path)
    process, output = _pi_writer(oracle_module, path, 300, 2)
    assert output.wait_ready(), process.stderr.read().decode() if process.stderr else ""
    ours = _append_some(manager, random.Random(3), 300, 0.002)
    theirs = output.finish(timeout=120)
    assert process.wait(60) == 0, process.stderr.read().decode() if process.stderr else ""
    assert len(theirs) == 300
    assert manager.drain_events(), "pi's appends were not reported as a foreign writer"
    _settle(manager, path, ours, theirs)
    manager.close()
    # and pi itself reads the result exactly as we do
    script = (
        "const {SessionManager} = await import(process.argv[1]);"
        "const sm = SessionManager.open(process.argv[2]);"
        "process.stdout.write(JSON.stringify([sm.getEntries().map((e) => e.id), sm.getLeafId()]));"
    )
    seen = subprocess.run(
        ["node", "--input-type=module", "-e", script, oracle_module.as_uri(), path],
        capture_output=True,
        check=True,
        timeout=60,
    )
    pi_ids, pi_leaf = json.loads(seen.stdout)
    view = fresh_view(path)
    assert pi_ids == [e[0] for e in view["entries"]]
    assert pi_leaf == view["leaf"]


def _server_view(server: RawServer, handle: str) -> dict[str, Any]:
    page = server.call("pi/getEntries", {"session": handle})
    leaf = server.call("pi/getLeaf", {"session": handle})["leafId"]
    return {"ids": [e["id"] for e in page["entries"]], "leaf": leaf}


def _file_view(path: str) -> dict[str, Any]:
    view = fresh_view(path)
    return {"ids": [e[0] for e in view["entries"]], "leaf": view["leaf"]}


def _server_appends(server: RawServer, handle: str, count: int, pause: float) -> list[str]:
    ids = []
    for n in range(count):
        message = (
            assistant_message(f"srv {n}", n)
            if n % 2
            else {"role": "user", "content": f"srv {n}", "timestamp": n}
        )
        ids.append(server.call("pi/append", {"session": handle, "kind": "message", "message": message})["id"])
        if pause:
            time.sleep(pause)
    return ids


def _until_server_view_matches_file(server: RawServer, handle: str, path: str) -> None:
    deadline = time.monotonic() + 5
    while True:
        ours, disk = _server_view(server, handle), _file_view(path)
        if ours == disk:
            return
        assert time.monotonic() < deadline, (
            f"the server's view never matched the file: {len(ours['ids'])} vs {len(disk['ids'])}"
        )
        time.sleep(0.2)


@dataclass
class ServerRace:
    server: RawServer
    handle: str
    path: str
    ours: list[str]
    theirs: list[str]


@pytest.fixture(scope="module", params=["plain", "pi"])
def server_race(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerRace]:
    """The server appends (pi/append) while a plain writer, or pi itself, appends to the same file."""
    tmp_path = tmp_path_factory.mktemp(f"race-{request.param}")
    if request.param == "pi":
        oracle = request.getfixturevalue("oracle_module")
    server = RawServer(tmp_path)
    try:
        server.initialize()
        path = new_session_file(tmp_path / "sessions")
        handle = server.call("pi/open", {"path": path})["session"]
        if request.param == "plain":
            other = ForkedChild(plain_line_appender, path, "p", 300, 0.003)
            assert other.output.wait_ready()
            ours = _server_appends(server, handle, 300, 0.001)
            theirs = other.output.finish()
            other.kill()
        else:
            process, output = _pi_writer(oracle, path, 200, 3)
            assert output.wait_ready(), process.stderr.read().decode() if process.stderr else ""
            ours = _server_appends(server, handle, 200, 0.002)
            theirs = output.finish(timeout=120)
            assert process.wait(60) == 0
        yield ServerRace(server, handle, path, ours, theirs)
        assert server.alive()
    finally:
        server.close()


@pytest.mark.slow
def test_server_race_loses_and_glues_nothing(server_race: ServerRace):
    race = server_race
    assert len(race.theirs) in (200, 300)
    check_session_file(race.path, [*race.ours, *race.theirs])


def test_server_race_reports_the_foreign_writer(server_race: ServerRace):
    race = server_race
    foreign = race.server.wait_notification("pi/foreignWriter", timeout=5)
    assert foreign["session"] == race.handle and foreign["path"] == race.path
    assert foreign["foundSize"] > foreign["expectedSize"]
    changed = race.server.wait_notification(
        "pi/didChange", lambda p: p["kind"] in ("appended", "reloaded"), timeout=5
    )
    assert changed["session"] == race.handle


def test_server_race_view_ends_equal_to_a_fresh_open(server_race: ServerRace):
    _until_server_view_matches_file(server_race.server, server_race.handle, server_race.path)
