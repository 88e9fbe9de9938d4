"""The search for a document's problems pauses now and then, and a hover asked meanwhile is
answered at a pause: on a damaged 100 MB session it would otherwise wait for the whole search,
whether the problems are pushed (made by the opening, or by an edit) or pulled. It pauses while it
puts the problems in order too; and a quick fix answered at a pause looks at its lines' problems
only, the search going on with its own (the document's would be made twice).

The server runs in-process so that the test can hold the search at its problems: the order in
which things happen is then the one the test sets, on any machine."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess

from pi_session_server.analysis import diagnostics
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.server import language_diagnostics

URI = "file:///tmp/pi-pauses/2026-11-30T09-13-48-180Z_damaged.jsonl"
# a line pi cannot parse, a problem each: enough of them for the search to pause twice
DAMAGED = [S.header(), S.user("a", None, "hello"), *(f'{{"broken": {n}' for n in range(2 * CHECK_EVERY + 8))]
HOVER = {"textDocument": {"uri": URI}, "position": {"line": 1, "character": DAMAGED[1].index("hello")}}
PULLS = {"textDocument": {"diagnostic": {}}}


def _until_queued(server: InProcess) -> None:
    """Once a job waits on the document's queue (or a while has passed)."""
    features = server.server.language_documents
    assert features is not None
    deadline = time.monotonic() + 30
    while not features.docs[URI].queue._jobs and time.monotonic() < deadline:
        time.sleep(0.01)


def _search_held(
    monkeypatch: pytest.MonkeyPatch, server: InProcess
) -> tuple[threading.Event, threading.Event]:
    """The search for problems made to wait, at its first problem, for a job queued behind it (the
    hover), and at a problem after its second pause until the event returned second is set (the
    hover answered); the event returned first is set once it started."""
    started, hover_answered = threading.Event(), threading.Event()
    made = diagnostics._diagnostic
    count = 0

    def held(info: Any, problem: Any, *more: Any) -> Any:
        nonlocal count
        count += 1
        if count == 1:
            started.set()
            _until_queued(server)
        elif count == CHECK_EVERY + 2:
            hover_answered.wait(30)
        return made(info, problem, *more)

    monkeypatch.setattr(diagnostics, "_diagnostic", held)
    return started, hover_answered


def _initialized(server: InProcess, capabilities: dict[str, Any]) -> None:
    assert "result" in server.request(
        "initialize", {"processId": None, "rootUri": None, "capabilities": capabilities}
    )
    server.notify("initialized", {})


def _open(server: InProcess, lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}},
    )


def _published(server: InProcess, count: int) -> list[Any]:
    """The problems published for the document, once ``count`` publications came."""
    deadline = time.monotonic() + 30
    while True:
        found = [p for name, p in server.notifications if name == "textDocument/publishDiagnostics"]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"{len(found)} publications, not {count}"
        time.sleep(0.01)


def _hovered_during_the_search(
    server: InProcess, started: threading.Event, answered: threading.Event
) -> None:
    assert started.wait(30)
    hover = server.request("textDocument/hover", HOVER, timeout=10)
    answered.set()
    assert "hello" in hover["result"]["contents"]["value"], hover


def test_a_hover_is_answered_while_the_problems_pushed_at_the_opening_are_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = InProcess()
    try:
        _initialized(server, {})
        started, answered = _search_held(monkeypatch, server)
        _open(server, DAMAGED)
        _hovered_during_the_search(server, started, answered)
        (published,) = _published(server, 1)
        assert len(published["diagnostics"]) == len(DAMAGED) - 2
    finally:
        server.close()


def test_a_hover_is_answered_while_the_problems_pushed_after_an_edit_are_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = InProcess()
    try:
        _initialized(server, {})
        _open(server, DAMAGED[:2])
        assert _published(server, 1)[0]["diagnostics"] == []
        started, answered = _search_held(monkeypatch, server)
        end = {"line": 2, "character": 0}
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": URI, "version": 2},
                "contentChanges": [
                    {
                        "range": {"start": end, "end": end},
                        "text": "".join(line + "\n" for line in DAMAGED[2:]),
                    }
                ],
            },
        )
        _hovered_during_the_search(server, started, answered)
        published = _published(server, 2)[-1]
        assert published["version"] == 2 and len(published["diagnostics"]) == len(DAMAGED) - 2
    finally:
        server.close()


def test_a_hover_is_answered_while_the_problems_pulled_are_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    server = InProcess()
    try:
        _initialized(server, PULLS)
        _open(server, DAMAGED)
        assert "result" in server.request("textDocument/hover", HOVER)  # (opened)
        started, answered = _search_held(monkeypatch, server)
        pulled = server.send_request("textDocument/diagnostic", {"textDocument": {"uri": URI}})
        _hovered_during_the_search(server, started, answered)
        assert len(server.reply(pulled)["result"]["items"]) == len(DAMAGED) - 2
    finally:
        server.close()


# an entry whose parent is missing (a quick fix for it), among the damaged lines
ORPHAN_LINE = 2
WITH_ORPHAN = [*DAMAGED[:ORPHAN_LINE], S.user("orphan", "missing"), *DAMAGED[ORPHAN_LINE:]]
QUICK_FIXES = {
    "textDocument": {"uri": URI},
    "range": {"start": {"line": ORPHAN_LINE, "character": 0}, "end": {"line": ORPHAN_LINE, "character": 0}},
    "context": {"diagnostics": []},
}


def test_a_quick_fix_answered_during_the_search_does_not_search_the_document_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its answer is the one given once the search is over; each line's problem is made once
    (the quick fix's own lines aside), not once for the quick fix and once more for the search."""
    server = InProcess()
    try:
        _initialized(server, {})
        started, answered = _search_held(monkeypatch, server)
        made_on: Counter[int] = Counter()
        made = diagnostics._diagnostic  # (the search's hold, which counts too)

        def counted(info: Any, problem: Any, *more: Any) -> Any:
            made_on[info.line] += 1
            return made(info, problem, *more)

        monkeypatch.setattr(diagnostics, "_diagnostic", counted)
        _open(server, WITH_ORPHAN)
        assert started.wait(30)
        during = server.request("textDocument/codeAction", QUICK_FIXES, timeout=10)
        answered.set()
        (published,) = _published(server, 1)
        assert len(published["diagnostics"]) == len(WITH_ORPHAN) - 2
        assert [action["kind"] for action in during["result"]] == ["quickfix"] * len(during["result"]) != []
        assert server.request("textDocument/codeAction", QUICK_FIXES)["result"] == during["result"]
        others = {line: times for line, times in made_on.items() if line != ORPHAN_LINE}
        assert set(others.values()) == {1}, f"{sum(others.values())} problems made for {len(others)}"
    finally:
        server.close()


def test_a_hover_is_answered_while_the_problems_found_are_put_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A damaged file's problems are many: their ordering pauses too. The last problem found waits
    for the hover to be asked, and the search, once its problems are ordered, for it to be
    answered: in between, or never (until the guard's timeout)."""
    server = InProcess()
    try:
        _initialized(server, {})
        at_the_last, hover_answered = threading.Event(), threading.Event()
        problems = len(DAMAGED) - 2
        made = diagnostics._diagnostic
        count = 0

        def last_waits(info: Any, problem: Any, *more: Any) -> Any:
            nonlocal count
            count += 1
            if count == problems:
                at_the_last.set()
                _until_queued(server)
            return made(info, problem, *more)

        search = language_diagnostics.document_diagnostics

        def ordered_then_waits(*args: Any, **kwargs: Any) -> Any:
            found = search(*args, **kwargs)
            hover_answered.wait(30)
            return found

        monkeypatch.setattr(diagnostics, "_diagnostic", last_waits)
        monkeypatch.setattr(language_diagnostics, "document_diagnostics", ordered_then_waits)
        _open(server, DAMAGED)
        assert at_the_last.wait(30)
        reply = server.request("textDocument/hover", HOVER, timeout=10)
        hover_answered.set()
        assert "hello" in reply["result"]["contents"]["value"], reply
        (published,) = _published(server, 1)
        assert [d["range"]["start"]["line"] for d in published["diagnostics"]] == list(range(2, len(DAMAGED)))
    finally:
        server.close()
