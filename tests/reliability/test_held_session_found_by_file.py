"""A request by ``uri`` on a file a session holds finds that session by what the file is, not by
how the uri spells it (a symlink, a symlinked directory, ``..``, percent escapes): it answers from
the held session, which saw every write, and opens no second session on the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_helpers import USER
from reliability_rpc import RawServer
from test_delete_ordering_by_file import SPELLINGS, percent_escaped, spelled_uri
from test_requests_ordered_after_delete import pipelined, session_with_entries

URIS = {"as spelled": spelled_uri, "percent escaped": percent_escaped}


def _append_then_count_by_uri(server: RawServer, session: str, uri: str, before: int) -> None:
    """An append on the held session, and right behind it (one write) the entries counted by
    ``uri``: the count sees the append."""
    appended, count = pipelined(
        server,
        ("pi/append", {"session": session, "kind": "message", "message": USER}),
        ("pi/getEntryCount", {"uri": uri}),
    )
    assert "result" in appended, appended
    assert count.get("result") == before + 1, count


@pytest.mark.parametrize("uri_of", sorted(URIS))
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_request_by_uri_spelled_otherwise_uses_the_held_session(
    server: RawServer, tmp_path: Path, spelling: str, uri_of: str
):
    path = session_with_entries(tmp_path / "sessions", 3, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    before = server.call("pi/getEntryCount", {"session": session})
    uri = URIS[uri_of](SPELLINGS[spelling](path, tmp_path))
    _append_then_count_by_uri(server, session, uri, before)
    held = server.call("pi/sessions", {})
    assert [info["session"] for info in held] == [session], held


def test_a_write_by_uri_spelled_otherwise_goes_through_the_held_session(server: RawServer, tmp_path: Path):
    path = session_with_entries(tmp_path / "sessions", 3, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    before = server.call("pi/getEntryCount", {"session": session})
    uri = spelled_uri(SPELLINGS["symlinked directory"](path, tmp_path))
    appended = server.call("pi/append", {"uri": uri, "kind": "message", "message": USER})
    assert appended is not None
    assert server.call("pi/getEntryCount", {"session": session}) == before + 1
    assert [info["session"] for info in server.call("pi/sessions", {})] == [session]


def test_answers_by_uri_spelled_otherwise_follow_the_held_session_s_writes(server: RawServer, tmp_path: Path):
    path = session_with_entries(tmp_path / "sessions", 3, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    uri = spelled_uri(SPELLINGS["symlink"](path, tmp_path))
    before = server.call("pi/getEntryCount", {"uri": uri})
    _append_then_count_by_uri(server, session, uri, before)


def test_a_request_on_the_session_sent_after_one_by_uri_spelled_otherwise_never_passes_it(
    server: RawServer, tmp_path: Path
):
    """The request by ``uri`` waits for a worker's look at its file; one on the held session sent
    after it waits too: the first answers as the session was before the second's write."""
    path = session_with_entries(tmp_path / "sessions", 3, str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    before = server.call("pi/getEntryCount", {"session": session})
    uri = spelled_uri(SPELLINGS["symlinked directory"](path, tmp_path))
    for _ in range(5):
        count, appended = pipelined(
            server,
            ("pi/getEntryCount", {"uri": uri}),
            ("pi/append", {"session": session, "kind": "message", "message": USER}),
        )
        assert "result" in appended, appended
        assert count.get("result") == before, count
        before += 1
        server.call("pi/close", {"session": session})
        session = server.call("pi/open", {"path": path})["session"]
