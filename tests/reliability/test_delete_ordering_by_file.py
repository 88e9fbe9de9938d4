"""Requests sent right behind a pi/delete are ordered after it by what their file is, not by how
they spell it: through a symlink, a symlinked directory, ``..``, a path relative to a working
directory reached through a symlink, or a ``file:`` URI with percent escapes. Each finds the file
gone, as it would from pi, and a delete spelled so closes the sessions held on the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import USER
from reliability_rpc import RawServer, file_uri
from test_requests_ordered_after_delete import (
    UNKNOWN_SESSION,
    finds_the_file_gone,
    pipelined,
    session_with_entries,
)


@pytest.fixture
def doomed(tmp_path: Path) -> str:
    return session_with_entries(tmp_path / "sessions", 2000, str(tmp_path))


def through_symlink(doomed: str, tmp_path: Path) -> str:
    link = tmp_path / "link.jsonl"
    link.symlink_to(doomed)
    return str(link)


def through_symlinked_directory(doomed: str, tmp_path: Path) -> str:
    (tmp_path / "linked-dir").symlink_to(os.path.dirname(doomed))
    return str(tmp_path / "linked-dir" / os.path.basename(doomed))


def with_dot_dots(doomed: str, _tmp_path: Path) -> str:
    directory, name = os.path.split(doomed)
    return os.path.join(directory, "..", os.path.basename(directory), ".", name)


SPELLINGS = {
    "symlink": through_symlink,
    "symlinked directory": through_symlinked_directory,
    "dot dots": with_dot_dots,
}


def spelled_uri(path: str) -> str:
    """The ``file:`` URI of ``path`` spelled as it is (``file_uri`` resolves symlinks)."""
    return Path(path).as_uri()


def percent_escaped(path: str) -> str:
    """``path`` as a ``file:`` URI with every letter of its name percent-escaped."""
    directory, name = os.path.split(path)
    return spelled_uri(directory) + "/" + "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in name)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_request_by_uri_spelled_otherwise_finds_the_file_gone(
    server: RawServer, doomed: str, tmp_path: Path, spelling: str
):
    other = SPELLINGS[spelling](doomed, tmp_path)
    deleted, count, escaped = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/getEntryCount", {"uri": spelled_uri(other)}),
        ("pi/getEntryCount", {"uri": percent_escaped(other)}),
    )
    assert "result" in deleted, deleted
    assert finds_the_file_gone(count), count
    assert finds_the_file_gone(escaped), escaped
    assert not os.path.exists(doomed)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_an_open_spelled_otherwise_finds_the_file_gone(
    server: RawServer, doomed: str, tmp_path: Path, spelling: str
):
    other = SPELLINGS[spelling](doomed, tmp_path)
    deleted, opened = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/open", {"path": other}),
    )
    assert "result" in deleted, deleted
    assert opened.get("result", {}).get("entryCount") == 0, opened


def test_an_open_relative_to_a_working_directory_reached_through_a_symlink_finds_the_file_gone(
    server: RawServer, doomed: str, tmp_path: Path
):
    (tmp_path / "linked-cwd").symlink_to(os.path.dirname(doomed))
    environment = {"cwd": str(tmp_path / "linked-cwd")}
    deleted, opened = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/open", {"path": os.path.basename(doomed), "environment": environment}),
    )
    assert "result" in deleted, deleted
    assert opened.get("result", {}).get("entryCount") == 0, opened


def test_a_second_delete_spelled_otherwise_finds_the_file_gone(
    server: RawServer, doomed: str, tmp_path: Path
):
    other = through_symlinked_directory(doomed, tmp_path)
    first, second = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("pi/delete", {"path": other, "permanent": True}),
    )
    assert "result" in first, first
    assert second.get("error", {}).get("code") == -32005, second  # ENOENT, as for any missing file


def test_a_delete_through_a_symlinked_directory_closes_the_sessions_on_the_file(
    server: RawServer, tmp_path: Path
):
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    other = through_symlinked_directory(path, tmp_path)
    deleted, appended = pipelined(
        server,
        ("pi/delete", {"path": other, "permanent": True}),
        ("pi/append", {"session": session, "kind": "message", "message": USER}),
    )
    assert deleted.get("result", {}).get("closedSessions") == [session], deleted
    assert appended.get("error", {}).get("code") == UNKNOWN_SESSION, appended
    assert not os.path.exists(path)


def test_a_delete_of_a_symlink_leaves_the_sessions_on_its_target_open(server: RawServer, tmp_path: Path):
    """The delete removes the link, not the file it points to: a session on that file stays."""
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    link = through_symlink(path, tmp_path)
    deleted: Any = server.call("pi/delete", {"path": link, "permanent": True})
    assert deleted["closedSessions"] == [], deleted
    assert os.path.exists(path) and not os.path.lexists(link)
    assert isinstance(server.call("pi/getEntryCount", {"session": session}), int)


def test_requests_by_uri_on_a_held_file_meet_its_closing_session_or_find_the_file_gone(
    server: RawServer, tmp_path: Path
):
    """What the contract says of pi/delete: by a uri naming the file a session holds, however it
    spells it, a request sent before the delete's reply meets that session closed (-32001, naming
    it); pi/close of it answers closed; the file's uri once the delete answered finds the file gone
    (FsError ENOENT: a read by uri of a missing file)."""
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    other = through_symlinked_directory(path, tmp_path)
    deleted, held, append, other_count, closed = pipelined(
        server,
        ("pi/delete", {"path": path, "permanent": True}),
        ("pi/getEntryCount", {"uri": file_uri(path)}),
        ("pi/append", {"uri": file_uri(path), "kind": "message", "message": USER}),
        ("pi/getEntryCount", {"uri": spelled_uri(other)}),
        ("pi/close", {"session": session}),
    )
    assert deleted.get("result", {}).get("closedSessions") == [session], deleted
    for reply in (held, append, other_count):
        error = reply.get("error", {})
        assert error.get("code") == UNKNOWN_SESSION and error.get("data") == {"session": session}, reply
    assert closed.get("result") == {"session": session, "closed": True}, closed
    assert not os.path.lexists(path)
    assert finds_the_file_gone(server.request("pi/getEntryCount", {"uri": file_uri(path)}))
    assert not os.path.lexists(path)


@pytest.mark.parametrize("spelling", ["as held", *SPELLINGS])
def test_a_write_by_uri_to_a_file_the_delete_closed_a_session_on_is_refused_even_read_after_its_reply(
    server: RawServer, tmp_path: Path, spelling: str
):
    """A pi/append by the uri of a file a session held, sent right behind its pi/delete, may be read
    after the delete answered (a client writing its messages one by one), when no session holds
    the file any more: it meets the session the delete closed (-32001, naming it) as it does when
    read before, and does not bring the file back with a header and its entry. A read by uri finds
    the file gone (ENOENT); a file put back at the path is opened and written again."""
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    deleted: Any = server.call("pi/delete", {"path": path, "permanent": True})
    assert deleted["closedSessions"] == [session]
    spelled = path if spelling == "as held" else SPELLINGS[spelling](path, tmp_path)
    append = {"uri": spelled_uri(spelled), "kind": "message", "message": USER}
    reply = server.request("pi/append", append)
    error = reply.get("error", {})
    assert error.get("code") == UNKNOWN_SESSION and error.get("data") == {"session": session}, reply
    assert not os.path.lexists(path)
    assert finds_the_file_gone(server.request("pi/getEntryCount", {"uri": file_uri(path)}))
    session_with_entries(tmp_path / "put-back", 1, str(tmp_path))
    os.replace(next((tmp_path / "put-back").iterdir()), path)
    count = server.call("pi/getEntryCount", {"uri": file_uri(path)})
    assert "id" in server.call("pi/append", append)
    assert server.call("pi/getEntryCount", {"uri": file_uri(path)}) == count + 1


def test_a_write_by_uri_to_a_file_deleted_with_no_session_on_it_starts_a_session_there(
    server: RawServer, tmp_path: Path
):
    """No session held the file the delete deleted: a write by its uri starts a new session there,
    as pi/open of a missing path and that write would (nothing a client sent is refused)."""
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    server.call("pi/delete", {"path": path, "permanent": True})
    assert "id" in server.call("pi/append", {"uri": file_uri(path), "kind": "message", "message": USER})
    assert server.call("pi/getEntryCount", {"uri": file_uri(path)}) == 1
    assert os.path.exists(path)


def test_a_close_of_a_handle_the_delete_closed_answers_closed_even_read_after_its_reply(
    server: RawServer, tmp_path: Path
):
    """A pi/close sent before the delete's reply may be read after it (a client writing its
    messages one by one): the handle the delete closed still answers ``closed``; any other
    request on it -32001, and a handle never opened -32001."""
    path = session_with_entries(tmp_path / "sessions", 10, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    deleted: Any = server.call("pi/delete", {"path": path, "permanent": True})
    assert deleted["closedSessions"] == [session]
    for _ in range(2):
        assert server.call("pi/close", {"session": session}) == {"session": session, "closed": True}
    reply = server.request("pi/getEntryCount", {"session": session})
    assert reply.get("error", {}).get("code") == UNKNOWN_SESSION, reply
    reply = server.request("pi/close", {"session": "s999"})
    assert reply.get("error", {}).get("code") == UNKNOWN_SESSION, reply
