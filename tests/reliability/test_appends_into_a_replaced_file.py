"""Our write after another program renamed a different file over the session's path.

An editor's save-by-rename, ``mv other.jsonl session.jsonl``, ``cp x tmp && mv tmp session.jsonl``:
the path names another file than the one the session read. An entry appended there named a parent
that file does not hold: an orphan in it, acknowledged into a tree it does not belong to (the next
refresh then reported it as another process's write and reloaded). Now such a write is refused
(SessionFileReplacedError; -32016 FileReplaced on the wire), the file is left as the other program
left it, the entry is not kept, and the session reads the new file at its next refresh. A file that
holds what the write names (a copy of the session that goes on from its leaf, a rewrite of ours)
still takes it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import HEADER, REPO_ROOT, TS, USER, chain_file
from reliability_rpc import RawServer

from pi_session_server.errors import SessionFileReplacedError
from pi_session_server.server.errors import FILE_REPLACED
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(60)

OTHER_HEADER = HEADER.replace(b'"id":"s"', b'"id":"other"')


def _other_session(
    path: Path, header: bytes = OTHER_HEADER, ids: tuple[str, ...] = ("aaaa0000", "aaaa0001")
) -> Path:
    parts, parent = [header], None
    for entry_id in ids:
        value = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": TS,
            "message": {"role": "user", "content": f"other {entry_id}", "timestamp": 1},
        }
        parts.append(json.dumps(value, separators=(",", ":")).encode() + b"\n")
        parent = entry_id
    path.write_bytes(b"".join(parts))
    return path


def _rename(source: Path, target: Path) -> None:
    os.rename(source, target)


def _mv(source: Path, target: Path) -> None:
    subprocess.run(["mv", str(source), str(target)], check=True)


def _cp_then_mv(source: Path, target: Path) -> None:
    """An editor's save: a new file written beside the target, renamed over it."""
    subprocess.run(["sh", "-c", 'cp "$0" "$1.tmp" && mv "$1.tmp" "$1"', str(source), str(target)], check=True)


REPLACERS: dict[str, Callable[[Path, Path], None]] = {
    "os.rename": _rename,
    "mv": _mv,
    "cp_then_mv": _cp_then_mv,
}

# every write that appends an entry naming entries of the session
WRITES: dict[str, Callable[[SessionManager], object]] = {
    "message": lambda m: m.append_message(USER),
    "label": lambda m: m.append_label_change("00000001", "here"),
    "name": lambda m: m.append_session_info("named"),
    "branch_summary": lambda m: m.branch_with_summary("00000001", "what was tried"),
    "compaction": lambda m: m.append_compaction("summary", "00000002", 10),
    "custom": lambda m: m.append_custom_entry("mine", {"n": 1}),
}


def _another_sessions_file(tmp_path: Path) -> Path:
    return _other_session(tmp_path / "other.jsonl")


def _an_older_copy(tmp_path: Path) -> Path:
    """This session as it was two entries ago (a backup): the same header, not our leaf."""
    return chain_file(tmp_path / "older.jsonl", 2)


REPLACEMENTS: dict[str, Callable[[Path], Path]] = {
    "another_session": _another_sessions_file,
    "an_older_copy": _an_older_copy,
}


@pytest.mark.parametrize("replacement", list(REPLACEMENTS))
@pytest.mark.parametrize("how", list(REPLACERS))
def test_an_append_into_a_file_renamed_over_the_session_is_refused_and_the_file_left_alone(
    tmp_path: Path, how: str, replacement: str
) -> None:
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    leaf = manager.get_leaf_id()
    count = manager.get_entry_count()
    other = REPLACEMENTS[replacement](tmp_path)
    theirs = other.read_bytes()
    REPLACERS[how](other, path)
    with pytest.raises(SessionFileReplacedError) as refused:
        manager.append_message(USER)
    assert str(path) in str(refused.value)
    assert path.read_bytes() == theirs  # not a byte written
    assert (manager.get_leaf_id(), manager.get_entry_count()) == (leaf, count)  # not kept
    assert manager.reload_due
    change = manager.refresh_from_disk()
    assert change.kind == "reloaded"
    fresh = SessionManager.open(str(path), read_only=True)
    assert [e.id for e in manager.get_entries()] == [e.id for e in fresh.get_entries()]
    # the session is the new file's now: the next append goes on from its leaf
    mine = manager.append_message(USER)
    assert manager.get_entry(mine).value["parentId"] == fresh.get_leaf_id()
    again = SessionManager.open(str(path), read_only=True)
    assert again.problems == [] and again.get_branch(mine)[0].value["parentId"] is None
    manager.close()


@pytest.mark.parametrize("write", list(WRITES))
def test_every_write_that_appends_is_refused_in_a_file_renamed_over_the_session(
    tmp_path: Path, write: str
) -> None:
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    theirs = _another_sessions_file(tmp_path).read_bytes()
    _rename(tmp_path / "other.jsonl", path)
    with pytest.raises(SessionFileReplacedError):
        WRITES[write](manager)
    assert path.read_bytes() == theirs
    assert manager.get_entry_count() == 4  # (a branch with a summary has moved the leaf, as pi's does)
    manager.close()


def test_the_refusal_does_not_depend_on_the_pi_release_keeping_failed_appends(tmp_path: Path) -> None:
    """pi 0.86.1 keeps an entry whose write failed in memory; a refused one is never written, nor
    kept: it belongs to no file."""
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path), pi="0.86.1")
    _rename(_another_sessions_file(tmp_path), path)
    with pytest.raises(SessionFileReplacedError):
        manager.append_message(USER)
    assert manager.get_leaf_id() == "00000003" and manager.get_entry_count() == 4
    manager.close()


def test_a_file_renamed_over_that_goes_on_from_the_leaf_takes_the_append(tmp_path: Path) -> None:
    """A copy of the session with more entries after our leaf (another program saved it by
    rename): our entry's parent is there, so it is written, and the change is reported."""
    path = chain_file(tmp_path / "s.jsonl", 4)
    manager = SessionManager.open(str(path))
    longer = chain_file(tmp_path / "longer.jsonl", 6)
    _mv(longer, path)
    mine = manager.append_message(USER)
    assert json.loads(path.read_bytes().splitlines()[-1])["id"] == mine
    assert manager.drain_events()
    assert manager.refresh_from_disk().kind == "reloaded"
    assert manager.get_entry(mine).value["parentId"] == "00000003"
    # the next one goes on from ours, in the same file, without reading it again
    second = manager.append_message(USER)
    assert SessionManager.open(str(path), read_only=True).get_leaf_id() == second
    manager.close()


@pytest.fixture
def unwatched(tmp_path: Path) -> Iterator[RawServer]:
    """The sidecar, files not followed (``watchInterval`` 0): the append meets the file renamed over
    the session before any watcher could, and what the client is told comes from the refusal (a
    session not followed would otherwise refuse every write until its file is opened again)."""
    server = RawServer(tmp_path)
    try:
        server.initialize({"watchInterval": 0})
        yield server
        assert server.alive(), server.stderr_text()[-3000:]
    finally:
        server.close()


def test_the_sidecar_refuses_an_append_into_a_file_moved_over_the_session(
    tmp_path: Path, unwatched: RawServer
) -> None:
    server = unwatched
    path = chain_file(tmp_path / "s.jsonl", 4)
    handle = server.call("pi/open", {"path": str(path)})["session"]
    other = _another_sessions_file(tmp_path)
    theirs = other.read_bytes()
    server.call("pi/append", {"session": handle, "kind": "message", "message": USER})
    _mv(other, path)
    reply = server.request("pi/append", {"session": handle, "kind": "message", "message": USER})
    assert reply["error"]["code"] == FILE_REPLACED, reply
    assert reply["error"]["data"]["path"] == str(path), reply
    assert path.read_bytes() == theirs
    server.wait_notification(
        "pi/didChange", lambda p: p["kind"] == "reloaded", timeout=0
    )  # told before the answer
    assert server.call("pi/getLeaf", {"session": handle})["leafId"] == "aaaa0001"
    added = server.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
    on_disk = SessionManager.open(str(path), read_only=True)
    assert on_disk.problems == [] and on_disk.get_entry(added).value["parentId"] == "aaaa0001"


# every method that appends an entry on the wire, and its params but the session
WIRE_WRITES: dict[str, tuple[str, dict[str, Any]]] = {
    "append": ("pi/append", {"kind": "message", "message": USER}),
    "appendContextEdit": ("pi/appendContextEdit", {"targetId": "00000000", "replacement": None}),
    "branchWithSummary": ("pi/branchWithSummary", {"branchFromId": "00000001", "summary": "tried"}),
}


@pytest.mark.parametrize("write", list(WIRE_WRITES))
def test_every_wire_write_that_appends_answers_file_replaced_as_its_contract_lists(
    tmp_path: Path, unwatched: RawServer, write: str
) -> None:
    """The refusal's code is one protocol/ gives the method (a client generated from it knows it)."""
    method, params = WIRE_WRITES[write]
    path = chain_file(tmp_path / "s.jsonl", 4)
    handle = unwatched.call("pi/open", {"path": str(path), "pi": "1.6.0"})["session"]
    _rename(_another_sessions_file(tmp_path), path)
    reply = unwatched.request(method, {"session": handle, **params})
    assert reply["error"]["code"] == FILE_REPLACED, reply
    document = json.loads((REPO_ROOT / "protocol" / "pi-session.openrpc.json").read_text(encoding="utf-8"))
    listed = next(m["errors"] for m in document["methods"] if m["name"] == method)
    assert FILE_REPLACED in [error["code"] for error in listed]
