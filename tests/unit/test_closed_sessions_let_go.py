"""A session the client closed is let go whole, whatever was asked of it: what the server keeps
beside a session to answer faster (previews, tree pages, totals) is keyed by the session and must
not hold it. A sidecar runs for as long as the editor: each tree view opened on a session it does
not let go would keep that session's entries for good."""

from __future__ import annotations

import gc
import json
import shutil
import time
import weakref
from pathlib import Path
from typing import Any

from in_process_server import InProcess

APPENDED = {
    "type": "custom_message",
    "id": "f00dcafe",
    "parentId": "e2f3a4b5",
    "timestamp": "2026-03-14T10:00:00.000Z",
    "customType": "note",
    "content": "appended by pi",
    "display": True,
}
EXAMPLE = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"


def _wait_for(running: InProcess, method: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not any(name == method for name, _params in running.notifications):
        assert time.monotonic() < deadline, f"no {method}"
        time.sleep(0.02)


def _asked_of_a_tree_view(session: str, leaf: Any) -> list[tuple[str, dict[str, Any]]]:
    """What an editor asks of a session it shows: its totals, the tree's levels down to the leaf,
    pages, a filtered and searched tree, the nested and reference forms, the context."""
    on = {"session": session}
    return [
        ("pi/getStats", on),
        ("pi/getTree", {**on, "form": "flat", "aroundId": leaf, "levels": True, "limit": 50}),
        ("pi/getTree", {**on, "form": "flat", "chain": True, "limit": 50}),
        ("pi/getTree", {**on, "form": "flat", "limit": 5, "offset": 2}),
        ("pi/getTree", {**on, "form": "flat", "filter": "default", "search": "the"}),
        ("pi/getTree", {**on, "form": "nested"}),
        ("pi/getTree", {**on, "form": "reference"}),
        ("pi/buildSessionContext", on),
        ("pi/getBranch", on),
    ]


def test_a_closed_session_is_let_go_whatever_was_asked_of_it(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(EXAMPLE, path)
    running = InProcess()
    try:
        session = running.request("pi/open", {"path": str(path)})["result"]["session"]
        (slot,) = [slot for slot in running.server.registry.slots() if slot.handle == session]
        manager = weakref.ref(slot.manager)
        leaf = running.request("pi/getLeaf", {"session": session})["result"]["leafId"]
        for method, params in _asked_of_a_tree_view(session, leaf):
            reply = running.request(method, params)
            assert "result" in reply, (method, params, reply)
        # pi appends: what is kept is followed to the new state of the session, and asked again
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(APPENDED) + "\n")
        _wait_for(running, "pi/didChange")
        for method, params in _asked_of_a_tree_view(session, APPENDED["id"]):
            reply = running.request(method, params)
            assert "result" in reply, (method, params, reply)
        assert "result" in running.request("pi/close", {"session": session})
        del slot
        gc.collect()
        assert manager() is None, [type(holder).__name__ for holder in gc.get_referrers(manager())]
    finally:
        running.close()
