"""A request about the whole document that the editor asks again after each change (inlay hints,
folding ranges, code lenses, the outline) is answered ContentModified, unworked, when a later change
came before it ran. Neovim asks for every line's inlay hints and folds at each change: typing in a
big session queued one whole-document answer per keystroke, each for a text already gone, and what
the user asked next (a hover) waited behind all of them. A short request the user waits for (a
hover, a quick fix) is answered ahead of whole-document answers, a pull of diagnostics among them.

The server runs in-process so that the test can hold the document's queue while the messages
arrive: the order in which they are taken is then the one the test sets, on any machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess

from pi_session_server.analysis import autofix, hints
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.server import language_diagnostics
from pi_session_server.server.language_document_state import DocState

URI = "file:///tmp/pi-superseded/2026-11-30T09-13-48-180Z_typed.jsonl"
LINES = [S.header(), S.user("a", None, "hello"), S.assistant("b", "a", "hi")]
CONTENT_MODIFIED = -32801


def _every_line(count: int) -> dict[str, Any]:
    """Inlay hints' params for the document's lines 0 to ``count``."""
    return {
        "textDocument": {"uri": URI},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": count, "character": 0}},
    }


def _chain() -> list[str]:
    """Entries enough for a whole-document answer to pause (check) twice."""
    return [S.user("e0", None), *(S.user(f"e{i}", f"e{i - 1}") for i in range(1, 2 * CHECK_EVERY))]


def _taken(queue: Any, jobs: int) -> None:
    """Once ``jobs`` jobs wait on ``queue`` (the messages sent are all taken)."""
    deadline = time.monotonic() + 30
    while len(queue._jobs) < jobs:
        assert time.monotonic() < deadline, "the messages were not all taken"
        time.sleep(0.01)


def _closed(server: InProcess, uri: str) -> None:
    """Once the server has handled the editor's closing of ``uri``."""
    features = server.server.language_documents
    assert features is not None
    deadline = time.monotonic() + 30
    while uri in features.docs:
        assert time.monotonic() < deadline, "the close was not handled"
        time.sleep(0.01)


def _opened(server: InProcess, lines: list[str], capabilities: dict[str, Any] | None = None) -> DocState:
    """The server initialized (with the client's ``capabilities``), a document of ``lines`` opened
    in it and analysed; its state."""
    assert "result" in server.request(
        "initialize", {"processId": None, "rootUri": None, "capabilities": capabilities or {}}
    )
    server.notify("initialized", {})
    text = "\n".join(lines) + "\n"
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}},
    )
    assert "result" in server.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
    features = server.server.language_documents
    assert features is not None
    return features.docs[URI]


def _typed(version: int, line: int, character: int, text: str) -> dict[str, Any]:
    at = {"line": line, "character": character}
    return {
        "textDocument": {"uri": URI, "version": version},
        "contentChanges": [{"range": {"start": at, "end": at}, "text": text}],
    }


def _held(queue: Any) -> threading.Event:
    """``queue`` kept busy until the event returned is set (the messages sent meanwhile wait)."""
    gate = threading.Event()
    queue.submit(lambda _token: gate.wait(30), interruptible=False)
    return gate


def _made_after(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> threading.Event:
    """``module.name`` made to wait, once called, until the event returned is set."""
    answered = threading.Event()
    made = getattr(module, name)

    def waiting(*args: Any, **kwargs: Any) -> Any:
        answered.wait(30)
        return made(*args, **kwargs)

    monkeypatch.setattr(module, name, waiting)
    return answered


def test_a_whole_document_request_superseded_by_a_change_is_answered_content_modified() -> None:
    server = InProcess()
    try:
        queue = _opened(server, LINES).queue
        gate = threading.Event()
        queue.submit(lambda _token: gate.wait(30), interruptible=False)  # the queue is busy

        whole = {"textDocument": {"uri": URI}}
        every_line = _every_line(len(LINES))
        at = LINES[1].index("hello") + len("hello")
        server.notify("textDocument/didChange", _typed(2, 1, at, "!"))
        asked = [
            server.send_request("textDocument/inlayHint", every_line),
            server.send_request("textDocument/foldingRange", whole),
            server.send_request("textDocument/codeLens", whole),
            server.send_request("textDocument/documentSymbol", whole),
        ]
        hover_before = server.send_request(
            "textDocument/hover", {**whole, "position": {"line": 1, "character": at}}
        )
        server.notify("textDocument/didChange", _typed(3, 1, at + 1, "!"))
        hints_now = server.send_request("textDocument/inlayHint", every_line)
        _taken(queue, 8)  # the two changes and the six requests: all taken, in order
        gate.set()

        for msg_id in asked:  # asked before the second change: about a text the editor no longer shows
            reply = server.reply(msg_id)
            assert reply.get("error", {}).get("code") == CONTENT_MODIFIED, reply
        hover = server.reply(hover_before)  # about a position: answered for the text it was asked on
        assert "hello!" in hover["result"]["contents"]["value"]
        hints = server.reply(hints_now)["result"]
        assert [h["position"]["line"] for h in hints] == [1, 2]
    finally:
        server.close()


def test_a_whole_document_answer_being_made_stops_when_a_change_comes(monkeypatch) -> None:
    chain = _chain()
    server = InProcess()
    try:
        state = _opened(server, [S.header(), *chain])

        # the hints' work pauses at its first line until the test has sent a change
        started, go = threading.Event(), threading.Event()
        label_of = hints.current_label

        def paused(doc: Any, info: Any) -> Any:
            started.set()
            go.wait(30)
            return label_of(doc, info)

        monkeypatch.setattr(hints, "current_label", paused)
        hints_asked = server.send_request("textDocument/inlayHint", _every_line(len(chain) + 1))
        assert started.wait(30)
        server.notify("textDocument/didChange", _typed(2, 1, 0, " "))
        deadline = time.monotonic() + 30
        while state.changes_received == 0:
            assert time.monotonic() < deadline, "the change was not taken"
            time.sleep(0.01)
        go.set()
        reply = server.reply(hints_asked)
        assert reply.get("error", {}).get("code") == CONTENT_MODIFIED, str(reply)[:300]
    finally:
        server.close()


def test_a_hover_is_answered_ahead_of_whole_document_answers_not_started(monkeypatch) -> None:
    server = InProcess()
    try:
        queue = _opened(server, LINES).queue
        gate = _held(queue)
        # the hints, once they start, wait for the hover's answer: a hover queued behind them
        # would wait for good (until the guard's timeout)
        hover_answered = _made_after(monkeypatch, hints, "inlay_hints")
        hints_asked = server.send_request("textDocument/inlayHint", _every_line(len(LINES)))
        folds_asked = server.send_request("textDocument/foldingRange", {"textDocument": {"uri": URI}})
        at = LINES[1].index("hello")
        hover_asked = server.send_request(
            "textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 1, "character": at}}
        )
        _taken(queue, 3)
        gate.set()
        hover = server.reply(hover_asked, timeout=10)
        hover_answered.set()
        assert "hello" in hover["result"]["contents"]["value"]
        assert [h["position"]["line"] for h in server.reply(hints_asked)["result"]] == [1, 2]
        assert "result" in server.reply(folds_asked)
    finally:
        server.close()


# a line whose parent is missing, after the chain: a quick fix for it
ORPHAN = S.user("orphan", "missing")


def _quick_fixes_at(line: int) -> dict[str, Any]:
    at = {"line": line, "character": 0}
    return {"textDocument": {"uri": URI}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}


def _offers_a_quick_fix(result: Any) -> bool:
    return any(action["kind"] == "quickfix" for action in result)


# a client that has the edit of a code action made when the user picks it (codeAction/resolve)
RESOLVES = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}


def _picked_quick_fix(server: InProcess, chain: list[str]) -> Any:
    """The quick fix offered for ORPHAN, as the client sends it back to have it resolved."""
    offered = server.request("textDocument/codeAction", _quick_fixes_at(len(chain) + 1))["result"]
    return next(action for action in offered if action["kind"] == "quickfix")


# the short requests the user waits for, each with its params (about the document of _chain() and
# ORPHAN, asked of the server before the test holds its queue) and what its answer has
URGENT = {
    "hover": (
        "textDocument/hover",
        lambda server, chain: {"textDocument": {"uri": URI}, "position": {"line": 3, "character": 10}},
        lambda result: "e2" in result["contents"]["value"],
    ),
    "quick fix": (
        "textDocument/codeAction",
        lambda server, chain: _quick_fixes_at(len(chain) + 1),
        _offers_a_quick_fix,
    ),
    "quick fix picked": ("codeAction/resolve", _picked_quick_fix, lambda result: "edit" in result),
}


def _hints_paused(
    monkeypatch: pytest.MonkeyPatch, state: DocState, later: int, at_later: Callable[[], Any]
) -> threading.Event:
    """The inlay hints' work made to pause at its first line until a job is queued behind it, and
    to call ``at_later()`` at line ``later``; the event returned is set once the work started."""
    started = threading.Event()
    label_of = hints.current_label

    def paused(doc: Any, info: Any) -> Any:
        if info.line == 1:
            started.set()
            deadline = time.monotonic() + 30
            while not state.queue._jobs and time.monotonic() < deadline:
                time.sleep(0.01)
        elif info.line == later:
            at_later()
        return label_of(doc, info)

    monkeypatch.setattr(hints, "current_label", paused)
    return started


@pytest.mark.parametrize("urgent", list(URGENT))
def test_a_short_request_is_answered_while_a_whole_document_answer_is_being_made(
    monkeypatch: pytest.MonkeyPatch, urgent: str
) -> None:
    method, params, answered = URGENT[urgent]
    chain = _chain()
    server = InProcess()
    try:
        state = _opened(server, [S.header(), *chain, ORPHAN], RESOLVES)
        urgent_params = params(server, chain)

        # the hints' work pauses at its first line until the short request is queued, and at the
        # chain's last until it is answered: answered at a pause in between, or never (until the
        # guard's timeout)
        urgent_answered = threading.Event()
        started = _hints_paused(monkeypatch, state, len(chain), lambda: urgent_answered.wait(30))
        hints_asked = server.send_request("textDocument/inlayHint", _every_line(len(chain) + 2))
        assert started.wait(30)
        urgent_asked = server.send_request(method, urgent_params)
        reply = server.reply(urgent_asked, timeout=10)
        urgent_answered.set()
        assert answered(reply["result"]), str(reply)[:300]
        reply = server.reply(hints_asked)
        assert len(reply["result"]) == len(chain) + 1, str(reply)[:300]
    finally:
        server.close()


def test_a_fix_all_waits_for_the_whole_document_answer_being_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A "fix all" (asked on save) plans every repair of the document: it is no short request, and
    a whole-document answer being made does not stop for it."""
    chain = _chain()
    server = InProcess()
    try:
        state = _opened(server, [S.header(), *chain, ORPHAN])
        events: list[str] = []
        started = _hints_paused(
            monkeypatch, state, len(chain) + 1, lambda: events.append("the hints' last line")
        )
        plan = autofix.plan_repairs

        def planned(*args: Any, **kwargs: Any) -> Any:
            events.append("fix all")
            return plan(*args, **kwargs)

        monkeypatch.setattr(autofix, "plan_repairs", planned)
        hints_asked = server.send_request("textDocument/inlayHint", _every_line(len(chain) + 2))
        assert started.wait(30)
        fix_all_asked = server.send_request(
            "textDocument/codeAction",
            {**_quick_fixes_at(0), "context": {"diagnostics": [], "only": ["source.fixAll"]}},
        )
        assert "result" in server.reply(fix_all_asked)
        assert len(server.reply(hints_asked)["result"]) == len(chain) + 1
        assert events == ["the hints' last line", "fix all"]
    finally:
        server.close()


def test_short_requests_go_ahead_of_a_pull_of_diagnostics_which_is_never_content_modified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pull of diagnostics is about the whole document: a hover asked after it is answered first.
    It is answered for the text it was asked on even when a change follows it (VS Code's client
    takes ContentModified for an empty list of problems, and would show none until its next pull)."""
    server = InProcess()
    try:
        lines = [S.header(), S.user("a", None, "hello"), S.user("b", "gone")]
        queue = _opened(server, lines, {"textDocument": {"diagnostic": {}}}).queue
        gate = _held(queue)
        # the pull, once it starts, waits for the hover's answer: a hover queued behind it would
        # wait for good (until the guard's timeout)
        hover_answered = _made_after(monkeypatch, language_diagnostics, "document_diagnostics")
        at = lines[1].index("hello") + len("hello")
        server.notify("textDocument/didChange", _typed(2, 1, at, "!"))
        pulled = server.send_request("textDocument/diagnostic", {"textDocument": {"uri": URI}})
        hover_asked = server.send_request(
            "textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 1, "character": at}}
        )
        server.notify("textDocument/didChange", _typed(3, 1, at + 1, "?"))
        _taken(queue, 4)
        gate.set()
        hover = server.reply(hover_asked, timeout=10)
        hover_answered.set()
        assert "hello!\n" in hover["result"]["contents"]["value"]  # (the text it was asked on)
        report = server.reply(pulled)
        assert [d["code"] for d in report["result"]["items"]] == ["PI031"], report
        assert report["result"]["resultId"].endswith(":2")  # (the version it was asked on)
    finally:
        server.close()


def test_whole_document_answers_asked_before_the_document_is_closed_are_not_worked() -> None:
    """Neovim asks for the folds of a file changed on disk right before it reloads it (didClose,
    didOpen): the answers for the text it closed are ContentModified, unworked, and the reopened
    text's wait for nothing."""
    server = InProcess()
    try:
        queue = _opened(server, LINES).queue
        gate = threading.Event()
        queue.submit(lambda _token: gate.wait(30), interruptible=False)  # the queue is busy
        folds_asked = server.send_request("textDocument/foldingRange", {"textDocument": {"uri": URI}})
        server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
        _taken(queue, 2)
        # (and the close handled: the folds' job was queued before it, which a loaded machine's
        # loop may not have come to yet when the job is taken)
        _closed(server, URI)
        gate.set()
        reply = server.reply(folds_asked)
        assert reply.get("error", {}).get("code") == CONTENT_MODIFIED, reply
    finally:
        server.close()


def test_a_hover_answered_at_a_pause_of_the_inlay_hints_leaves_them_the_leaf_they_started_with(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pi/branch moves the leaf of the session held on the file while the document's inlay hints
    are made; a hover asked then, answered at their pause, answers for the leaf moved, and the
    hints go on with the leaf they started with (a context edit's hint says what it does on the
    path to the leaf): all of them for one leaf, as if the hover had waited."""
    chain = [S.user("e0", None), *(S.user(f"e{i}", f"e{i - 1}") for i in range(1, CHECK_EVERY + 6))]
    edit_line = len(chain) + 1  # (past the hints' first pause)
    lines = [
        S.header(),
        *chain,
        S.context_edit("x", f"e{len(chain) - 1}", "t"),  # it leaves out t, after it
        S.user("t", "x"),
        S.user("s", "x"),  # a branch without t
        S.user("after", "t"),  # the file's last entry: its leaf
    ]
    session = tmp_path / "2026-11-30T09-13-48-180Z_held.jsonl"
    session.write_text("\n".join(lines) + "\n", encoding="utf-8")
    uri = session.as_uri()
    hints_params = {**_every_line(len(lines)), "textDocument": {"uri": uri}}
    server = InProcess()
    try:
        assert "result" in server.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        server.notify("initialized", {})
        server.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "pi-session",
                    "version": 1,
                    "text": session.read_text(),
                }
            },
        )
        at_the_leaf = server.request("textDocument/inlayHint", hints_params)["result"]
        features = server.server.language_documents
        assert features is not None
        state = features.docs[uri]

        hover_answered = threading.Event()
        started = _hints_paused(monkeypatch, state, edit_line, lambda: hover_answered.wait(30))
        hints_asked = server.send_request("textDocument/inlayHint", hints_params)
        assert started.wait(30)
        held = server.request("pi/open", {"path": str(session)})["result"]["session"]
        assert "result" in server.request("pi/branch", {"session": held, "entryId": "s"})
        s_line = lines.index(S.user("s", "x"))
        hover = server.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": s_line, "character": 1}},
            timeout=10,
        )
        hover_answered.set()
        assert "leaf" in hover["result"]["contents"]["value"]  # (s is the leaf now)
        assert server.reply(hints_asked)["result"] == at_the_leaf

        monkeypatch.undo()  # (the hints made at once)
        at_s = server.request("textDocument/inlayHint", hints_params)["result"]
        edit_hint = {h["position"]["line"]: h["label"] for h in at_s}[edit_line]
        assert edit_hint != {h["position"]["line"]: h["label"] for h in at_the_leaf}[edit_line], edit_hint
    finally:
        server.close()
