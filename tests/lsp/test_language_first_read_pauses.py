"""The first full read of a document's lines pauses for the hovers asked meanwhile.

A big document the editor sends is read by the envelope of each line first (its first problems
go out at once), then each line in full. A hover asked meanwhile on a line read in full already,
whose answer reads no other line's facts but the tree's (which the envelopes gave), is answered
at a pause of that read; one that reads another line's facts (a reference: the entry named) waits
for the read's end. Either is answered before the search for the document's problems, and so is a
hover on a file the editor did not send, once it is read from disk. Each answer is the one given
once the document is open.

The server runs in-process so that the test can hold the read and the search at the moments it
sets (the order in which things happen is then the one the test sets, on any machine)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess, until

from pi_session_server.analysis import document
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.server import language_diagnostics, language_documents
from pi_session_server.server.language_documents import LanguageDocuments

URI = "file:///tmp/pi-first-read/2026-11-30T09-13-48-180Z_big.jsonl"
CHAIN = 3 * CHECK_EVERY
# e0 (line 1) has two children, the chain's first entry and the last one, and a label the last
# line gives it; the label on line 2 names the last entry: lines the read reaches last
LINES = [
    S.header(),
    S.user("e0", None, "hello"),
    S.label("l0", "e0", "last", "far"),
    *(S.user(f"e{i}", "l0" if i == 1 else f"e{i - 1}") for i in range(1, CHAIN)),
    S.user("last", "e0", "last words"),
    S.label("l1", "last", "e0", "kept"),
]
OWN_ENTRY = {"textDocument": {"uri": URI}, "position": {"line": 1, "character": LINES[1].index("hello")}}
REFERENCE = {
    "textDocument": {"uri": URI},
    "position": {"line": 2, "character": LINES[2].index('"last"') + 2},
}


def _server() -> tuple[InProcess, LanguageDocuments]:
    server = InProcess()
    assert "result" in server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    server.notify("initialized", {})
    features = server.server.language_documents
    assert features is not None
    return server, features


def _queued(features: LanguageDocuments, uri: str, count: int) -> Callable[[], bool]:
    return lambda: (state := features.docs.get(uri)) is not None and len(state.queue._jobs) >= count


def _answered(server: InProcess, msg_id: int) -> bool:
    with server._cond:
        return msg_id in server.replies


def test_a_hover_on_a_line_read_in_full_is_answered_at_a_pause_of_the_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read in full waits at its first line for both hovers to be queued, and after its first
    pause until the one on a line read (line 1, its own entry) is answered: answered in between,
    or never (until the guard's timeout). The one on a reference to the last entry is not answered
    there (the entry it names is not read in full yet), but once the read ends."""
    server, features = _server()
    try:
        features.quick_open = 1  # (read by the envelopes first, as a big document is)
        first, after_the_pause = LINES[1].encode(), LINES[CHECK_EVERY + 2].encode()
        reading, own_answered = threading.Event(), threading.Event()
        reference_during: list[bool] = []
        scan_line = document.scan_line

        def held(raw: bytes, *args: Any, **kwargs: Any) -> Any:
            if raw == first:
                reading.set()
                until(_queued(features, URI, 2), "the hovers were not queued")
            elif raw == after_the_pause:
                own_answered.wait(30)
                reference_during.append(_answered(server, reference_id))
            return scan_line(raw, *args, **kwargs)

        monkeypatch.setattr(document, "scan_line", held)
        server.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": URI,
                    "languageId": "pi-session",
                    "version": 1,
                    "text": "\n".join(LINES),
                }
            },
        )
        own_id = server.send_request("textDocument/hover", OWN_ENTRY)
        reference_id = server.send_request("textDocument/hover", REFERENCE)
        assert reading.wait(30)
        own = server.reply(own_id, timeout=10)
        own_answered.set()
        reference = server.reply(reference_id)
        assert reference_during == [False]
        monkeypatch.undo()
        own_text = own["result"]["contents"]["value"]
        assert "**branch point**: 2 children" in own_text and "**label** `kept`" in own_text, own_text
        assert "**→ `message` · user** `last`" in reference["result"]["contents"]["value"], reference
        # the answers once the document is open
        assert server.request("textDocument/hover", OWN_ENTRY) == {**own, "id": own["id"] + 2}
        assert server.request("textDocument/hover", REFERENCE) == {**reference, "id": reference["id"] + 2}
    finally:
        server.close()


def test_a_hover_on_a_file_read_from_disk_is_answered_before_its_problems_are_searched(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The hover that has the file read: the search for its problems waits for it to be answered,
    which it is once the read ends (or never, until the guard's timeout)."""
    path = tmp_path / "2026-11-30T09-13-48-180Z_on-disk.jsonl"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    server, _features = _server()
    try:
        answered = threading.Event()
        search = language_diagnostics.document_diagnostics

        def after_the_hover(*args: Any, **kwargs: Any) -> Any:
            answered.wait(30)
            return search(*args, **kwargs)

        monkeypatch.setattr(language_diagnostics, "document_diagnostics", after_the_hover)
        asked = {**OWN_ENTRY, "textDocument": {"uri": path.as_uri()}}
        reply = server.request("textDocument/hover", asked, timeout=10)
        answered.set()
        assert "**branch point**: 2 children" in reply["result"]["contents"]["value"], reply
        published = server.notified("textDocument/publishDiagnostics", timeout=30)
        assert published["uri"] == path.as_uri() and published["diagnostics"] == []
    finally:
        server.close()


def test_the_read_from_disk_a_hover_starts_waits_for_the_hover_to_be_queued(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The loop, having queued the read of the file a hover names, is slow to queue the hover (a
    loaded machine): the read, if it can start before the hover is queued, goes on meanwhile as
    far as the search for the file's problems. It cannot: the read and the hover are queued at
    once, and the hover is answered at the read's end, before the search (which waits for it to
    be answered, or never, until the guard's timeout)."""
    path = tmp_path / "2026-11-30T09-13-48-180Z_on-disk.jsonl"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    server, features = _server()
    searching, answered = threading.Event(), threading.Event()
    try:
        search = language_diagnostics.document_diagnostics
        from_disk = features.disk.read

        def after_the_hover(*args: Any, **kwargs: Any) -> Any:
            searching.set()
            answered.wait(30)
            return search(*args, **kwargs)

        def hover_queued_late(*args: Any, **kwargs: Any) -> Any:
            state = from_disk(*args, **kwargs)
            if state is not None and not state.queue.idle:  # the read may start: it goes first
                searching.wait(30)
            return state

        monkeypatch.setattr(language_diagnostics, "document_diagnostics", after_the_hover)
        monkeypatch.setattr(features.disk, "read", hover_queued_late)
        asked = {**OWN_ENTRY, "textDocument": {"uri": path.as_uri()}}
        reply = server.request("textDocument/hover", asked, timeout=10)
        answered.set()
        assert "**branch point**: 2 children" in reply["result"]["contents"]["value"], reply
        assert server.notified("textDocument/publishDiagnostics", timeout=30)["diagnostics"] == []
    finally:
        answered.set()
        server.close()


def test_a_hover_asked_during_the_search_of_a_document_without_problems_is_answered_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hover read off the wire once the last pause of the search for a document's problems has
    passed (the loop reads it late while the lines are read) is answered once the search ends,
    before the caches for the hovers and hints are filled: a document without problems gives the
    search no pause after its start. The search, done, waits for the hover to be queued; the
    filling of the caches for its answer (or never, until the guard's timeout)."""
    server, features = _server()
    try:
        searching, answered = threading.Event(), threading.Event()
        search = language_diagnostics.document_diagnostics
        fill_caches = language_documents._fill_caches

        def with_the_hover_queued(*args: Any, **kwargs: Any) -> Any:
            found = search(*args, **kwargs)  # (its pauses passed)
            searching.set()
            until(_queued(features, URI, 1), "the hover was not queued")
            return found

        def after_the_hover(*args: Any, **kwargs: Any) -> Any:
            answered.wait(30)
            return fill_caches(*args, **kwargs)

        monkeypatch.setattr(language_diagnostics, "document_diagnostics", with_the_hover_queued)
        monkeypatch.setattr(language_documents, "_fill_caches", after_the_hover)
        text = "".join(line + "\n" for line in LINES)
        opened = {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": opened})
        assert searching.wait(30)
        reply = server.reply(server.send_request("textDocument/hover", OWN_ENTRY), timeout=10)
        answered.set()
        assert "**branch point**: 2 children" in reply["result"]["contents"]["value"], reply
        assert server.notified("textDocument/publishDiagnostics")["diagnostics"] == []
    finally:
        answered.set()
        server.close()
