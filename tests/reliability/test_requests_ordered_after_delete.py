"""Requests sent right behind a pi/delete, in the same write (the server reads them together), are
answered as pi would answer them one after the other: the file is gone. None reads the file being
deleted, whether a session had it open or not, and whether the delete's path is resolved at once or
on a worker (``~`` with ``$HOME`` unset). pi/sessions describes the sessions as the requests sent
before it left them, not those sent after it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import USER, new_session_file
from reliability_rpc import RawServer, encode, file_uri, frame

UNKNOWN_SESSION = -32001


def pipelined(server: RawServer, *requests: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """``requests`` written in one write; their replies, in the same order."""
    return [server.wait_reply(msg_id, timeout=30) for msg_id in server.send_together(*requests)]


def session_with_entries(directory: Path, count: int, cwd: str) -> str:
    """A session file of ``count`` messages (large enough that reading it takes a while)."""
    path = new_session_file(directory, cwd=cwd)
    from pi_session_server.session import SessionManager

    manager = SessionManager.open(path)
    for _ in range(count):
        manager.append_message(USER)
    manager.close()
    return path


@pytest.fixture
def doomed(tmp_path: Path) -> str:
    return session_with_entries(tmp_path / "sessions", 2000, str(tmp_path))


FS_ERROR = -32005


def finds_the_file_gone(reply: dict[str, Any]) -> bool:
    """A read by uri of a file that is not there: FsError ENOENT naming it (not a new, empty
    session, which would hide the delete from the front end)."""
    error = reply.get("error", {})
    return error.get("code") == FS_ERROR and error.get("data", {}).get("code") == "ENOENT"


# the reads by uri sent after the delete
READS_BY_URI = ("pi/getEntryCount", "pi/getHeader", "pi/getInfo")


@pytest.mark.parametrize("method", READS_BY_URI)
def test_a_request_by_uri_sent_after_a_delete_finds_the_file_gone(
    server: RawServer, doomed: str, method: str
):
    """No session had the file open: the request's own open of it waits for the delete."""
    deleted, reply = pipelined(
        server, ("pi/delete", {"path": doomed, "permanent": True}), (method, {"uri": file_uri(doomed)})
    )
    assert "result" in deleted, deleted
    assert finds_the_file_gone(reply), reply
    assert reply["error"]["data"]["path"] == doomed, reply
    assert not os.path.exists(doomed)


def test_a_listing_sent_after_a_delete_does_not_list_the_file(server: RawServer, doomed: str, tmp_path: Path):
    sessions = str(tmp_path / "sessions")
    other = new_session_file(sessions, cwd=str(tmp_path))
    deleted, listed, found = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/list", {"cwd": str(tmp_path), "sessionDir": sessions}),
        ("pi/listAll", {"sessionDir": sessions}),
    )
    assert "result" in deleted, deleted
    assert [info["path"] for info in listed["result"]] == [other]
    assert [info["path"] for info in found["result"]] == [other]


def test_a_fork_of_the_file_sent_after_its_delete_finds_it_gone(
    server: RawServer, doomed: str, tmp_path: Path
):
    deleted, forked = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        (
            "pi/forkFrom",
            {"sourcePath": doomed, "targetCwd": str(tmp_path), "sessionDir": str(tmp_path / "f")},
        ),
    )
    assert "result" in deleted, deleted
    assert "error" in forked and forked["error"]["code"] not in (-32603,), forked
    assert not (tmp_path / "f").exists() or not list((tmp_path / "f").iterdir())


def test_a_second_delete_of_the_file_finds_it_gone(server: RawServer, doomed: str):
    first, second = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/delete", {"path": doomed, "permanent": True}),
    )
    assert "result" in first, first
    error = second.get("error", {})  # ENOENT, as for any missing file
    assert error.get("code") == -32005 and "ENOENT" in error.get("message", ""), second


# -- a delete of `~/...` with $HOME unset: the password entry's home, looked up on a worker ------

# a password entry whose home is the test's directory (the server's process only)
PASSWD_HOME = """
import os, pwd
_home = os.environ.get("PI_TEST_PASSWD_HOME")
if _home:
    _real = pwd.getpwuid
    def getpwuid(uid, _real=_real):
        e = _real(uid)
        return pwd.struct_passwd((e.pw_name, e.pw_passwd, e.pw_uid, e.pw_gid, e.pw_gecos, _home, e.pw_shell))
    pwd.getpwuid = getpwuid
"""


@pytest.fixture
def passwd_home_server(tmp_path: Path) -> Any:
    from reliability_rpc import REPO_ROOT

    patch = tmp_path / "site"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(PASSWD_HOME)
    home = tmp_path / "passwd-home"
    home.mkdir()
    env = {
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(patch)]),
        "PI_TEST_PASSWD_HOME": str(home),
    }
    server = RawServer(tmp_path, env=env)
    try:
        server.initialize()
        yield server, home
        assert server.alive(), server.stderr_text()[-3000:]
    finally:
        server.close()


NO_HOME = {"home": None}  # the request's environment: $HOME not set


def test_a_request_by_uri_sent_after_a_delete_of_a_home_path_finds_the_file_gone(passwd_home_server: Any):
    server, home = passwd_home_server
    path = session_with_entries(home / "sessions", 2000, str(home))
    relative = "~/" + os.path.relpath(path, home)
    deleted, count = pipelined(
        server,
        ("pi/delete", {"path": relative, "permanent": True, "environment": NO_HOME}),
        ("pi/getEntryCount", {"uri": file_uri(path)}),
    )
    assert deleted.get("result", {}).get("path") == path, deleted
    assert finds_the_file_gone(count), count


def test_a_request_on_a_session_sent_after_a_delete_of_its_home_path_finds_it_closed(passwd_home_server: Any):
    server, home = passwd_home_server
    path = session_with_entries(home / "sessions", 10, str(home))
    size = os.path.getsize(path)
    session = server.call("pi/open", {"path": path})["session"]
    relative = "~/" + os.path.relpath(path, home)
    deleted, appended = pipelined(
        server,
        ("pi/delete", {"path": relative, "permanent": True, "environment": NO_HOME}),
        ("pi/append", {"session": session, "kind": "message", "message": USER}),
    )
    assert deleted.get("result", {}).get("closedSessions") == [session], deleted
    assert appended.get("error", {}).get("code") == UNKNOWN_SESSION, appended
    assert not os.path.exists(path) and size > 0


# -- pi/sessions ------------------------------------------------------------------------------


def test_pi_sessions_describes_what_the_requests_before_it_left(server: RawServer, tmp_path: Path):
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    opened = server.call("pi/open", {"path": path})
    session, count = opened["session"], opened["entryCount"]
    listed, appended, closed = pipelined(
        server,
        ("pi/sessions", {}),
        ("pi/append", {"session": session, "kind": "message", "message": USER}),
        ("pi/close", {"session": session}),
    )
    assert "result" in appended and "result" in closed, (appended, closed)
    # the session, as it was when pi/sessions was sent: open, without the append sent after it
    assert [(info["session"], info["entryCount"]) for info in listed["result"]] == [(session, count)]


# -- cancelled while waiting ------------------------------------------------------------------


def test_a_request_cancelled_while_it_waits_for_a_delete_never_runs(server: RawServer, doomed: str):
    """Cancelled in the same write as the delete it waits for: answered -32800, and what it waits
    for holds up nothing after it (a second delete cancelled so leaves no delete pending)."""
    ids = [server.next_id() for _ in range(4)]
    for msg_id in ids:
        server.expect_id(msg_id)
    delete, count, second, opened = ids

    def request(msg_id: int, method: str, params: dict[str, Any]) -> bytes:
        return frame(encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))

    def cancel(msg_id: int) -> bytes:
        return frame(encode({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}))

    server.send_bytes(
        request(delete, "pi/delete", {"path": doomed, "permanent": True})
        + request(count, "pi/getEntryCount", {"uri": file_uri(doomed)})
        + cancel(count)
        + request(second, "pi/delete", {"path": doomed, "permanent": True})
        + cancel(second)
        + request(opened, "pi/open", {"path": doomed})
    )
    assert "result" in server.wait_reply(delete, timeout=30)
    for msg_id in (count, second):
        assert server.wait_reply(msg_id, timeout=30).get("error", {}).get("code") == -32800
    reply = server.wait_reply(opened, timeout=30)
    assert reply.get("result", {}).get("entryCount") == 0, reply
    # nothing pending is left: a request on the file now answers at once
    assert server.call("pi/getEntryCount", {"uri": file_uri(doomed)}, timeout=10) == 0


def test_a_close_sent_after_a_delete_of_its_home_path_leaves_the_session_to_the_delete(
    passwd_home_server: Any,
):
    """pi/close answers at once, unlike a request queued on the session: it too waits for the
    delete whose path a worker resolves, which closes the session (and names it); the close of a
    session the delete is closing answers that it is closed."""
    server, home = passwd_home_server
    path = session_with_entries(home / "sessions", 10, str(home))
    session = server.call("pi/open", {"path": path})["session"]
    relative = "~/" + os.path.relpath(path, home)
    deleted, closed = pipelined(
        server,
        ("pi/delete", {"path": relative, "permanent": True, "environment": NO_HOME}),
        ("pi/close", {"session": session}),
    )
    assert deleted.get("result", {}).get("closedSessions") == [session], deleted
    assert closed.get("result") == {"session": session, "closed": True}, closed


def test_pi_sessions_sent_after_a_delete_of_a_home_path_leaves_out_the_session_it_closed(
    passwd_home_server: Any,
):
    server, home = passwd_home_server
    path = session_with_entries(home / "sessions", 10, str(home))
    kept = session_with_entries(home / "kept", 1, str(home))
    session = server.call("pi/open", {"path": path})["session"]
    other = server.call("pi/open", {"path": kept})["session"]
    relative = "~/" + os.path.relpath(path, home)
    deleted, listed = pipelined(
        server,
        ("pi/delete", {"path": relative, "permanent": True, "environment": NO_HOME}),
        ("pi/sessions", {}),
    )
    assert deleted.get("result", {}).get("closedSessions") == [session], deleted
    assert [info["session"] for info in listed["result"]] == [other], listed
