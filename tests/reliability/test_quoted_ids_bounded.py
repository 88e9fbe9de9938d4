"""pi's own error messages quote the id a request named ("Entry <id> not found", "Entry <id> is not
on the active branch"): an id of a megabyte made a megabyte message. The reply keeps the message's
words and the start of the id, as for the server's own messages about params (errors.MAX_SHOWN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import new_session_file
from reliability_rpc import RawServer

from pi_session_server.server.errors import MAX_SHOWN

HUGE = "e" * 1_000_000
WIDE = ["w" * 1000] * 1000  # pi writes an array id as its elements joined by commas


def requests_naming(entry_id: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("pi/branch", {"entryId": entry_id}),
        ("pi/branchWithSummary", {"branchFromId": entry_id, "summary": "s"}),
        ("pi/createBranchedSession", {"leafId": entry_id}),
        ("pi/append", {"kind": "label", "targetId": entry_id, "label": "l"}),
        ("pi/appendContextEdit", {"targetId": entry_id, "replacement": None}),
    ]


@pytest.mark.parametrize(
    ("entry_id", "start"), [(HUGE, "Entry eeee"), (WIDE, "Entry wwww")], ids=["long", "wide"]
)
def test_an_entry_not_found_message_keeps_the_start_of_a_huge_id(
    server: RawServer, tmp_path: Path, entry_id: Any, start: str
):
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    session = server.call("pi/open", {"path": path})["session"]
    with open(path, "rb") as file:
        before = file.read()
    for method, params in requests_naming(entry_id):
        reply = server.request(method, {"session": session, **params}, timeout=60)
        error = reply.get("error", {})
        message = error.get("message", "")
        assert error.get("code") == -32002, (method, reply.get("result"), message[:200])
        assert message.startswith(start) and message.endswith(" not found"), (method, message[:200])
        assert len(message) <= MAX_SHOWN + 40, (method, len(message))
    with open(path, "rb") as file:
        assert file.read() == before


def test_a_context_edit_off_the_active_branch_keeps_the_start_of_a_long_id(server: RawServer, tmp_path: Path):
    """An id of an entry that exists (a long id, as written by another program): pi's refusal
    quotes it too."""
    long_id = "x" * 50_000
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    # an entry with a long id after the first one, then the leaf moved back to the first
    with open(path, encoding="utf-8") as file:
        first = json.loads(file.readlines()[1])["id"]
    entry = {
        "type": "message",
        "id": long_id,
        "parentId": first,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1},
    }
    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")
    session = server.call("pi/open", {"path": path})["session"]
    server.call("pi/branch", {"session": session, "entryId": first})
    reply = server.request(
        "pi/appendContextEdit", {"session": session, "targetId": long_id, "replacement": None}
    )
    error = reply.get("error", {})
    message = error.get("message", "")
    assert error.get("code") == -32014, reply
    assert message.startswith("Entry xxxx") and message.endswith(" is not on the active branch"), message[
        :200
    ]
    assert len(message) <= MAX_SHOWN + 60, len(message)


def test_a_value_pi_cannot_take_as_an_entry_is_quoted_by_its_start(server: RawServer):
    # a version 1 session: pi gives each entry an id, which a string cannot take
    entries = [{"type": "session", "version": 1, "id": "h"}, HUGE]
    reply = server.request("pi/inMemory", {"entries": entries}, timeout=60)
    message = reply.get("error", {}).get("message", "")
    assert message.startswith("Cannot create property '") and "eeee" in message, message[:200]
    assert message.endswith("...'") and len(message) <= MAX_SHOWN + 60, len(message)
