"""A request about the whole document that the editor asks again after each change (inlay hints,
folding ranges, code lenses, the outline) is answered ContentModified, unworked, when a later change
came before it ran. Neovim asks for every line's inlay hints and folds at each change: typing in a
big session queued one whole-document answer per keystroke, each for a text already gone, and what
the user asked next (a hover) waited behind all of them.

The server runs in-process so that the test can hold the document's queue while the messages
arrive: the order in which they are taken is then the one the test sets, on any machine."""

from __future__ import annotations

import threading
import time
from typing import Any

import builders as S
from in_process_server import InProcess

URI = "file:///tmp/pi-superseded/2026-11-30T09-13-48-180Z_typed.jsonl"
LINES = [S.header(), S.user("a", None, "hello"), S.assistant("b", "a", "hi")]
CONTENT_MODIFIED = -32801


def _requested(server: InProcess, method: str, params: Any) -> int:
    """Send a request without waiting for its reply; its id."""
    msg_id = next(server._ids)
    server.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return msg_id


def _reply(server: InProcess, msg_id: int, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    with server._cond:
        while msg_id not in server.replies:
            assert time.monotonic() < deadline, f"no reply to request {msg_id}"
            server._cond.wait(0.1)
        return server.replies.pop(msg_id)


def _typed(version: int, line: int, character: int, text: str) -> dict[str, Any]:
    at = {"line": line, "character": character}
    return {
        "textDocument": {"uri": URI, "version": version},
        "contentChanges": [{"range": {"start": at, "end": at}, "text": text}],
    }


def test_a_whole_document_request_superseded_by_a_change_is_answered_content_modified() -> None:
    server = InProcess()
    try:
        assert "result" in server.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        server.notify("initialized", {})
        text = "\n".join(LINES) + "\n"
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}},
        )
        assert "result" in server.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
        features = server.server.language_features
        assert features is not None
        queue = features.docs[URI].queue
        gate = threading.Event()
        queue.submit(lambda _token: gate.wait(30), interruptible=False)  # the queue is busy

        whole = {"textDocument": {"uri": URI}}
        every_line = {
            **whole,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
        }
        at = LINES[1].index("hello") + len("hello")
        server.notify("textDocument/didChange", _typed(2, 1, at, "!"))
        asked = [
            _requested(server, "textDocument/inlayHint", every_line),
            _requested(server, "textDocument/foldingRange", whole),
            _requested(server, "textDocument/codeLens", whole),
            _requested(server, "textDocument/documentSymbol", whole),
        ]
        hover_before = _requested(
            server, "textDocument/hover", {**whole, "position": {"line": 1, "character": at}}
        )
        server.notify("textDocument/didChange", _typed(3, 1, at + 1, "!"))
        hints_now = _requested(server, "textDocument/inlayHint", every_line)
        deadline = time.monotonic() + 30
        while len(queue._jobs) < 8:  # the two changes and the six requests: all taken, in order
            assert time.monotonic() < deadline, "the messages were not all taken"
            time.sleep(0.01)
        gate.set()

        for msg_id in asked:  # asked before the second change: about a text the editor no longer shows
            reply = _reply(server, msg_id)
            assert reply.get("error", {}).get("code") == CONTENT_MODIFIED, reply
        hover = _reply(server, hover_before)  # about a position: answered for the text it was asked on
        assert "hello!" in hover["result"]["contents"]["value"]
        hints = _reply(server, hints_now)["result"]
        assert [h["position"]["line"] for h in hints] == [1, 2]
    finally:
        server.close()


def test_a_whole_document_answer_being_made_stops_when_a_change_comes(monkeypatch) -> None:
    from pi_session_server.analysis import hints

    chain = [S.user("e0", None), *(S.user(f"e{i}", f"e{i - 1}") for i in range(1, 2 * hints.CHECK_EVERY))]
    server = InProcess()
    try:
        assert "result" in server.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        server.notify("initialized", {})
        text = "\n".join([S.header(), *chain]) + "\n"
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}},
        )
        assert "result" in server.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
        features = server.server.language_features
        assert features is not None
        state = features.docs[URI]

        # the hints' work pauses at its first line until the test has sent a change
        started, go = threading.Event(), threading.Event()
        label_of = hints.current_label

        def paused(doc: Any, info: Any) -> Any:
            started.set()
            go.wait(30)
            return label_of(doc, info)

        monkeypatch.setattr(hints, "current_label", paused)
        every_line = {
            "textDocument": {"uri": URI},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": len(chain) + 1, "character": 0}},
        }
        hints_asked = _requested(server, "textDocument/inlayHint", every_line)
        assert started.wait(30)
        server.notify("textDocument/didChange", _typed(2, 1, 0, " "))
        deadline = time.monotonic() + 30
        while state.changes_received == 0:
            assert time.monotonic() < deadline, "the change was not taken"
            time.sleep(0.01)
        go.set()
        reply = _reply(server, hints_asked)
        assert reply.get("error", {}).get("code") == CONTENT_MODIFIED, str(reply)[:300]
    finally:
        server.close()
