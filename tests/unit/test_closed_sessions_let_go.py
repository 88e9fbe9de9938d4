"""A session the client closed is let go whole, whatever was asked of it: what the server keeps
beside a session to answer faster (previews, tree pages, totals) is keyed by the session and must
not hold it. A sidecar runs for as long as the editor: each tree view opened on a session it does
not let go would keep that session's entries for good."""

from __future__ import annotations

import gc
import json
import time
import weakref
from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess

from pi_session_server.session import SessionManager, cache_dir

APPENDED = {
    "type": "custom_message",
    "id": "f00dcafe",
    "parentId": "e0039",
    "timestamp": "2026-03-14T10:00:00.000Z",
    "customType": "note",
    "content": "appended by pi",
    "display": True,
}
HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-03-14T09:00:00.000Z", "cwd": "/w"}


def _message(entry_id: str, parent: str | None, n: int) -> dict[str, Any]:
    """A user prompt, an assistant turn calling a tool, or the tool's result, by ``n``."""
    call = f"call{n - n % 3 + 1}"
    message: dict[str, Any]
    if n % 3 == 0:
        message = {"role": "user", "content": f"question {n}"}
    elif n % 3 == 1:
        blocks = [{"type": "text", "text": f"answer {n}"}]
        blocks.append({"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "ls"}})
        usage = S.usage(10, 5, 0.1)
        message = {"role": "assistant", "content": blocks, "provider": "p", "model": "m", "usage": usage}
        message["stopReason"] = "toolUse"
    else:
        message = {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": "bash",
            "content": [{"type": "text", "text": "ok"}],
        }
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-03-14T09:00:01.000Z",
        "message": message,
    }


def _write_session(path: Path) -> None:
    """A chain of 40 messages with a branch off its eleventh, a label: every id distinct (a reopen
    from the index then makes entries only as they are asked for)."""
    lines: list[dict[str, Any]] = [HEADER]
    parent = None
    for n in range(40):
        lines.append(_message(f"e{n:04}", parent, n))
        parent = f"e{n:04}"
        if n == 20:
            lines.append(_message("b0000", "e0010", 3))
            lines.append(
                {
                    "type": "label",
                    "id": "l0000",
                    "parentId": parent,
                    "timestamp": "t",
                    "targetId": "e0010",
                    "label": "here",
                }
            )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _let_go(held: weakref.ref[Any], timeout: float = 10) -> None:
    """``held`` is let go, once the jobs queued before the close (and the close itself) ran."""
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        if held() is None:
            return
        assert time.monotonic() < deadline, [type(holder).__name__ for holder in gc.get_referrers(held())]
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
        ("pi/getTree", {**on, "form": "flat", "rootId": "e0010", "depth": 2}),
        ("pi/getPath", {**on, "limit": 10}),
        ("pi/getPath", {**on, "entryId": "e0010", "descend": True, "offset": 5, "limit": 10}),
        ("pi/getChildren", {**on, "parentId": "e0010"}),
        ("pi/getEntries", {**on, "offset": 3, "limit": 5}),
        ("pi/buildSessionContext", on),
        ("pi/buildContextEntries", on),
        ("pi/buildSessionProjection", on),
        ("pi/getBranch", on),
    ]


@pytest.mark.parametrize("reopened", [False, True], ids=["read", "reopened from its index"])
def test_a_closed_session_is_let_go_whatever_was_asked_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reopened: bool
) -> None:
    path = tmp_path / "session.jsonl"
    _write_session(path)
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0" if reopened else str(1 << 40))
    monkeypatch.setenv("PI_SESSION_INDEX_DIR", str(tmp_path / "index"))
    if reopened:
        monkeypatch.setattr(cache_dir, "RACY_NS", 0)  # the file just written is indexed at once
        SessionManager.open(str(path), read_only=True).close()  # (writes the index)
        assert list((tmp_path / "index").iterdir())
    running = InProcess()
    try:
        session = running.request("pi/open", {"path": str(path)})["result"]["session"]
        (slot,) = [slot for slot in running.server.registry.slots() if slot.handle == session]
        manager = weakref.ref(slot.manager)
        assert (slot.manager.row_tree() is not None) == reopened
        leaf = running.request("pi/getLeaf", {"session": session})["result"]["leafId"]
        for method, params in _asked_of_a_tree_view(session, leaf):
            reply = running.request(method, params)
            assert "result" in reply, (method, params, reply)
        # pi appends: what is kept is followed to the new state of the session, and asked again
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(APPENDED) + "\n")
        running.notified("pi/didChange")
        for method, params in _asked_of_a_tree_view(session, APPENDED["id"]):
            reply = running.request(method, params)
            assert "result" in reply, (method, params, reply)
        assert "result" in running.request("pi/close", {"session": session})
        del slot
        _let_go(manager)
    finally:
        running.close()


def test_a_closed_document_is_let_go_whatever_was_asked_of_it(tmp_path: Path) -> None:
    """The language features' side: a session file an editor showed, asked what an editor asks,
    then closed, is let go with what was kept of it (its analysis, the tree's memos)."""
    path = tmp_path / "session.jsonl"
    _write_session(path)
    uri = path.as_uri()
    doc = {"uri": uri}
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 44, "character": 0}}
    at_a_parent = {"textDocument": doc, "position": {"line": 5, "character": 40}}
    running = InProcess()
    try:
        assert "result" in running.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        running.notify("initialized", {})
        text = path.read_text(encoding="utf-8")
        running.notify(
            "textDocument/didOpen",
            {"textDocument": {**doc, "languageId": "pi-session", "version": 1, "text": text}},
        )
        asked = [
            ("textDocument/documentSymbol", {"textDocument": doc}),
            ("textDocument/hover", at_a_parent),
            ("textDocument/definition", at_a_parent),
            ("textDocument/references", {**at_a_parent, "context": {"includeDeclaration": True}}),
            ("textDocument/foldingRange", {"textDocument": doc}),
            ("textDocument/inlayHint", {"textDocument": doc, "range": everything}),
            ("textDocument/codeLens", {"textDocument": doc}),
            (
                "textDocument/codeAction",
                {"textDocument": doc, "range": everything, "context": {"diagnostics": []}},
            ),
        ]
        for method, params in asked:
            reply = running.request(method, params)
            assert "result" in reply, (method, reply)
        features = running.server.language_documents
        assert features is not None
        document = weakref.ref(features.docs[uri].doc)
        features.closed_documents.seconds = 0.0  # (its analysis kept for a reopening: no time at all)
        running.notify("textDocument/didClose", {"textDocument": doc})
        deadline = time.monotonic() + 10
        while uri in features.docs:
            assert time.monotonic() < deadline, "the document was not closed"
            time.sleep(0.02)
        _let_go(document)
    finally:
        running.close()
