"""Path safety: hostile session ids are refused, writes stay in the resolved session directory,
symlinked session files are handled deliberately, and files that are not sessions are never changed
by opening them (library, read-only views, the server's pi/open, uri addressing and didOpen).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from file_locks import NEEDS_PROC_LOCKS, until_a_process_waits_for_the_lock_of
from reliability_helpers import ASSISTANT, USER, check_session_file, new_session_file, sha256_tree
from reliability_rpc import RawServer, file_uri

from pi_session_server.errors import InvalidSessionFileError, InvalidSessionIdError, PiSessionError
from pi_session_server.session import SessionManager, assert_valid_session_id

pytestmark = pytest.mark.timeout(180)

BAD_IDS = [
    "", "/", "a/b", "a\\b", "..", ".", "../x", "x/..", "../../etc/passwd", "/abs", "/etc/passwd",
    "a\x00b", "\x00", "C:\\x", "C:x", "a:b", ".hidden", "x.", "-x", "x-", "_x", "x_", " x", "x ", "a b",
    "é", "a\nb", "abc\n", "\nabc", "a\tb", "~", "~/x", "%2e%2e%2f", "a/", "\\\\server\\share",
]  # fmt: skip
GOOD_IDS = [
    "a",
    "A",
    "0",
    "a.b",
    "a-b",
    "a_b",
    "a..b",
    "abc-DEF_123.x9",
    "01a22bf6-24a8-7557-aa35-7d8af1c523c6",
]
REFERENCE_RULE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)
ID_ERROR = -32004


@pytest.mark.parametrize("bad", BAD_IDS)
def test_hostile_session_ids_are_refused(bad: str):
    assert REFERENCE_RULE.fullmatch(bad) is None
    with pytest.raises(InvalidSessionIdError):
        assert_valid_session_id(bad)


@pytest.mark.parametrize("good", GOOD_IDS)
def test_reference_session_ids_are_accepted(good: str):
    assert_valid_session_id(good)


def test_hostile_ids_through_every_library_entry_point(tmp_path: Path):
    source = new_session_file(tmp_path / "source", cwd="/project")
    manager = SessionManager.open(source)
    before = sha256_tree(tmp_path)
    state = (manager.get_session_id(), manager.get_session_file(), manager.get_leaf_id())
    for bad in BAD_IDS:
        with pytest.raises(InvalidSessionIdError):
            SessionManager.create("/project", str(tmp_path / "source"), {"id": bad}).append_message(ASSISTANT)
        with pytest.raises(InvalidSessionIdError):
            manager.new_session({"id": bad})
        assert (manager.get_session_id(), manager.get_session_file(), manager.get_leaf_id()) == state
        with pytest.raises(InvalidSessionIdError):
            SessionManager.fork_from(source, "/project", str(tmp_path / "source"), {"id": bad})
    assert sha256_tree(tmp_path) == before, "a refused id left a file behind"
    manager.close()


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[RawServer]:
    server = RawServer(tmp_path)
    server.initialize()
    yield server
    assert server.alive(), server.stderr_text()[-3000:]
    server.close()


def _code(reply: dict[str, Any]) -> Any:
    return reply.get("error", {}).get("code")


def test_hostile_ids_through_the_server(tmp_path: Path, srv: RawServer):
    sessions = tmp_path / "sessions"
    source = new_session_file(sessions, cwd=str(tmp_path))
    handle = srv.call("pi/open", {"path": source})["session"]
    before = (
        sha256_tree(tmp_path),
        sha256_tree(srv.private / "agent") if (srv.private / "agent").exists() else {},
    )
    for bad in BAD_IDS:
        options = {"id": bad}
        assert (
            _code(
                srv.request(
                    "pi/create", {"cwd": str(tmp_path), "sessionDir": str(sessions), "options": options}
                )
            )
            == ID_ERROR
        )
        assert _code(srv.request("pi/newSession", {"session": handle, "options": options})) == ID_ERROR
        reply = srv.request(
            "pi/forkFrom",
            {
                "sourcePath": source,
                "targetCwd": str(tmp_path),
                "sessionDir": str(sessions),
                "options": options,
            },
        )
        assert _code(reply) == ID_ERROR
        assert _code(srv.request("pi/create", {"cwd": str(tmp_path), "options": options})) == ID_ERROR
    after = (
        sha256_tree(tmp_path),
        sha256_tree(srv.private / "agent") if (srv.private / "agent").exists() else {},
    )
    assert after == before
    info = srv.call("pi/getInfo", {"session": handle})
    assert info["sessionFile"] == source  # the refused newSession left the session as it was


def _new_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in after if k not in before or after[k] != before[k])


def test_server_writes_only_inside_the_session_directory_it_resolved(tmp_path: Path, srv: RawServer):
    root = tmp_path
    sessions = root / "sessions"
    sessions.mkdir()
    forks = root / "forks"
    before = sha256_tree(root)
    made = srv.call("pi/create", {"cwd": str(root), "sessionDir": str(sessions / ".." / "sessions")})
    handle = made["session"]
    for message in (USER, ASSISTANT, USER):
        srv.call("pi/append", {"session": handle, "kind": "message", "message": message})
    leaf = srv.call("pi/getLeaf", {"session": handle})["leafId"]
    branched = srv.call("pi/createBranchedSession", {"session": handle, "leafId": leaf})
    srv.call("pi/newSession", {"session": handle, "options": {"id": "a..b"}})
    srv.call("pi/append", {"session": handle, "kind": "message", "message": ASSISTANT})
    srv.call(
        "pi/forkFrom",
        {"sourcePath": branched["sessionFile"], "targetCwd": "/x/../../y", "sessionDir": str(forks)},
    )
    changed = _new_files(before, sha256_tree(root))
    assert changed and all(c.startswith(("sessions/", "forks/")) for c in changed), changed
    assert all("/" not in c.split("/", 1)[1] for c in changed), changed  # directly in those directories
    # cwd values full of traversal, no sessionDir: pi's default directory (one level under
    # <agent>/sessions, named after the encoded cwd), never anywhere else
    agent = srv.private / "agent"
    for cwd in ("/../../etc", "../../..", "/a/../../b", "C:\\..\\x", "/tmp/../..//../"):
        made = srv.call("pi/create", {"cwd": cwd})
        srv.call("pi/append", {"session": made["session"], "kind": "message", "message": ASSISTANT})
        session_file = Path(made["sessionFile"]).resolve()
        assert session_file.parent.parent == (agent / "sessions").resolve(), session_file
    assert _new_files(before, sha256_tree(root)) == changed


def test_long_ids_fail_cleanly_when_the_name_is_too_long(tmp_path: Path, srv: RawServer):
    long_id = "x" * 300  # valid for the id rule, too long for a file name
    made = srv.call(
        "pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s"), "options": {"id": long_id}}
    )
    reply = srv.request("pi/append", {"session": made["session"], "kind": "message", "message": ASSISTANT})
    assert _code(reply) == -32005 and reply["error"]["data"]["code"] == "ENAMETOOLONG", reply
    assert list((tmp_path / "s").iterdir()) == []
    source = new_session_file(tmp_path / "source", cwd=str(tmp_path))
    fork = {
        "sourcePath": source,
        "targetCwd": str(tmp_path),
        "sessionDir": str(tmp_path / "s"),
        "options": {"id": long_id},
    }
    reply = srv.request("pi/forkFrom", fork)
    assert _code(reply) == -32005 and reply["error"]["data"]["code"] == "ENAMETOOLONG", reply
    renamed = srv.call("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")})["session"]
    srv.call("pi/newSession", {"session": renamed, "options": {"id": long_id}})
    reply = srv.request("pi/append", {"session": renamed, "kind": "message", "message": ASSISTANT})
    assert _code(reply) == -32005 and reply["error"]["data"]["code"] == "ENAMETOOLONG", reply
    assert list((tmp_path / "s").iterdir()) == []


# -- NUL bytes in paths ---------------------------------------------------------------------------


def test_nul_bytes_in_paths_raise_library_errors(tmp_path: Path):
    d = str(tmp_path)
    calls = [
        lambda: SessionManager.open(d + "/a\x00b.jsonl").append_message(ASSISTANT),
        lambda: SessionManager.open(d + "/x.jsonl", d + "/\x00"),
        lambda: SessionManager.create(d, d + "/s\x00"),
        lambda: SessionManager.continue_recent(d, d + "/\x00"),
        lambda: SessionManager.create(d, d).set_session_file(d + "/\x00"),
    ]
    crashes = []
    for call in calls:
        try:
            call()
        except PiSessionError:
            pass
        except Exception as error:  # noqa: BLE001 - that is what the test looks for
            crashes.append(f"{type(error).__name__}: {error}")
    assert not crashes, crashes


def test_nul_bytes_in_paths_are_not_internal_errors(tmp_path: Path, srv: RawServer):
    d = str(tmp_path)
    for method, params in [
        ("pi/open", {"path": d + "/\x00.jsonl", "sessionDir": d + "/\x00"}),
        ("pi/create", {"cwd": d, "sessionDir": d + "/\x00"}),
        ("pi/continueRecent", {"cwd": d, "sessionDir": d + "/\x00"}),
        ("pi/list", {"cwd": d, "sessionDir": d + "/\x00"}),
        ("pi/forkFrom", {"sourcePath": d + "/\x00", "targetCwd": d, "sessionDir": d}),
        ("pi/delete", {"path": d + "/\x00"}),
    ]:
        reply = srv.request(method, params)
        assert "result" in reply or _code(reply) != -32603, (method, reply)


# -- symlinked session files ----------------------------------------------------------------------


def test_symlinked_session_file_appends_go_through_the_link(tmp_path: Path):
    target = Path(new_session_file(tmp_path / "real", cwd="/project"))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    manager = SessionManager.open(str(link))
    new_id = manager.append_message(USER)
    manager.close()
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert new_id.encode() in target.read_bytes()
    assert not link.with_name(".pi-session-").exists()


def test_symlinked_v1_session_is_rewritten_at_its_target_atomically(tmp_path: Path):
    data = Path(__file__).resolve().parent / "data" / "whamp-pi-v1-linear.jsonl"
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "v1.jsonl"
    target.write_bytes(data.read_bytes())
    inode_before = target.stat().st_ino
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    manager = SessionManager.open(str(link))  # migration: a full rewrite
    manager.close()
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.stat().st_ino != inode_before, "the rewrite did not replace the target (temp file + rename)"
    assert b'"version":3' in target.read_bytes()
    assert sorted(p.name for p in real_dir.iterdir()) == ["v1.jsonl"], "temporary files left behind"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "real"]


def test_dangling_symlink_is_never_written_through(tmp_path: Path):
    target = tmp_path / "elsewhere" / "created-through-link.jsonl"
    target.parent.mkdir()
    link = tmp_path / "dangling.jsonl"
    link.symlink_to(target)
    manager = SessionManager.open(str(link))
    with pytest.raises(PiSessionError):  # the first flush creates the file exclusively: EEXIST on a link
        manager.append_message(USER)  # (pi 1.6.0, the default, flushes at the first user message)
        manager.append_message(ASSISTANT)
    assert not target.exists()


def test_symlinked_session_through_the_server(tmp_path: Path, srv: RawServer):
    target = Path(new_session_file(tmp_path / "real", cwd=str(tmp_path)))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    handle = srv.call("pi/open", {"path": str(link)})["session"]
    entry = srv.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
    assert link.is_symlink() and entry.encode() in target.read_bytes()
    # the same file through its real path is the same session (one write lock, one view)
    tree = srv.call("pi/getTree", {"uri": file_uri(target)})
    assert entry in [n["id"] for n in tree["nodes"]]


def test_a_leaf_moved_through_the_link_is_where_the_real_path_continues(tmp_path: Path, srv: RawServer):
    """One session, not two readings of one file: what the link's session holds that the file
    does not (a leaf moved by a branch) is what the real path's requests see."""
    target = Path(new_session_file(tmp_path / "real", cwd=str(tmp_path)))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    handle = srv.call("pi/open", {"path": str(link)})["session"]
    first = srv.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
    srv.call("pi/append", {"session": handle, "kind": "message", "message": ASSISTANT})
    # branching moves the leaf in memory only: a second reading of the file would not know it
    srv.call("pi/branch", {"session": handle, "entryId": first})
    real = file_uri(target)
    assert srv.call("pi/getLeaf", {"uri": real})["leafId"] == first
    answer = srv.call("pi/append", {"uri": real, "kind": "message", "message": ASSISTANT})
    assert srv.call("pi/getLeaf", {"session": handle})["leafId"] == answer["id"]


@NEEDS_PROC_LOCKS
def test_appends_through_the_link_and_the_real_path_are_one_writer(tmp_path: Path, srv: RawServer):
    """A session opened through its link and again through its real path: both handles write
    under one lock and know each other's lines as this server's, one after the other or all at
    once: nothing is told as another process's write, and every line is whole."""
    target = Path(new_session_file(tmp_path / "real", cwd=str(tmp_path)))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    through_link = srv.call("pi/open", {"path": str(link)})["session"]
    through_target = srv.call("pi/open", {"path": str(target)})["session"]
    params = [
        {"session": handle, "kind": "message", "message": USER} for handle in (through_link, through_target)
    ]
    written = [srv.call("pi/append", params[n % 2])["id"] for n in range(4)]
    fd = os.open(target, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the appends below pile up behind it, then start at once
        sent = [srv.send_request("pi/append", params[n % 2]) for n in range(1000)]
        until_a_process_waits_for_the_lock_of(target)
    finally:
        os.close(fd)
    written += [srv.wait_reply(msg_id)["result"]["id"] for msg_id in sent]
    srv.call("pi/getLeaf", {"session": through_target})  # one more round trip after the last answer
    assert [method for method, _ in srv.notifications if method == "pi/foreignWriter"] == []
    check_session_file(str(target), written)


# -- files that are not sessions are never modified by opening them --------------------------------

NOT_SESSIONS = {
    "readme.md": b"# Notes\n\nnot a session\n",
    "object.json": b'{"type":"not-a-session","id":"x"}\n',
    "no-newline.jsonl": b'{"a":1}\n{"b":2}',
    "binary.png": bytes(range(256)) * 64,
    "jsonl-without-header.jsonl": b'{"type":"message","id":"a","parentId":null}\n',
    "header-not-first.jsonl": b'{"x":1}\n{"type":"session","version":3,"id":"s","cwd":"/"}\n',
    "bom.jsonl": b'\xef\xbb\xbf{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n',
    "id-not-string.jsonl": b'{"type":"session","version":3,"id":5,"cwd":"/"}\n',
}
# files that are sessions but would be written by pi's open(): a view must not write them
NEEDS_WRITE_ON_OPEN = {
    "empty.jsonl": b"",
    "v1.jsonl": (Path(__file__).resolve().parent / "data" / "whamp-pi-v1-linear.jsonl").read_bytes(),
    "no-final-newline.jsonl": b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
    b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}',
}


def _write_all(directory: Path, files: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)


def test_library_open_never_modifies_a_file_that_is_not_a_session(tmp_path: Path):
    _write_all(tmp_path / "files", NOT_SESSIONS)
    before = sha256_tree(tmp_path)
    for name in NOT_SESSIONS:
        path = str(tmp_path / "files" / name)
        for read_only in (False, True):
            with pytest.raises(InvalidSessionFileError):
                SessionManager.open(path, read_only=read_only)
        with pytest.raises(PiSessionError):
            SessionManager.fork_from(path, "/x", str(tmp_path / "forks"))
        manager = SessionManager.create("/p", str(tmp_path / "other"))
        with pytest.raises(InvalidSessionFileError):
            manager.set_session_file(path)
    with pytest.raises(PiSessionError):
        SessionManager.open(str(tmp_path / "files"))  # a directory
    after = sha256_tree(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith(("other/", "forks/"))} == before


def test_read_only_open_never_writes(tmp_path: Path):
    _write_all(tmp_path, NEEDS_WRITE_ON_OPEN)
    before = sha256_tree(tmp_path)
    for name in NEEDS_WRITE_ON_OPEN:
        manager = SessionManager.open(str(tmp_path / name), read_only=True)
        with pytest.raises(PiSessionError):
            manager.append_message(USER)
        manager.close()
    assert sha256_tree(tmp_path) == before


def test_server_never_modifies_files_it_only_looks_at(tmp_path: Path, srv: RawServer):
    files = tmp_path / "files"
    _write_all(files, {**NOT_SESSIONS, **NEEDS_WRITE_ON_OPEN})
    before = sha256_tree(files)
    for name in NOT_SESSIONS:
        path = files / name
        assert _code(srv.request("pi/open", {"path": str(path)})) == -32003, name
        assert (
            _code(srv.request("pi/append", {"uri": file_uri(path), "kind": "message", "message": ASSISTANT}))
            == -32003
        )
    for name in {**NOT_SESSIONS, **NEEDS_WRITE_ON_OPEN}:
        uri = file_uri(files / name)
        for method in ("pi/getTree", "pi/getInfo", "pi/getEntries", "pi/buildSessionContext"):
            reply = srv.request(method, {"uri": uri})
            assert "result" in reply or _code(reply) in (-32003, -32005), (name, method, reply)
        text = (files / name).read_bytes().decode("utf-8", "replace")
        srv.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": text}},
        )
        srv.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        srv.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}
        )
        srv.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        srv.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
                "context": {"diagnostics": []},
            },
        )
        srv.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert srv.call("pi/sessions", {}) is not None
    assert sha256_tree(files) == before
