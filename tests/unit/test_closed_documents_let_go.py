"""A document the editor closed leaves nothing of itself in the language server: the facts kept for
the latest long line a hover asked about (analysis/jsonpath.py, which hold the line's bytes) are let
go with it (once the few seconds its analysis is kept for a reopening are over: here, none). A
language server runs for as long as the editor: a session of a 30 MB line opened and closed would
otherwise stay in memory until a hover on another long line."""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

import builders as S
from in_process_server import InProcess

from pi_session_server.analysis import jsonpath

MARKER = b"only-in-the-closed-document"
URI = "file:///tmp/pi-closed-documents/2026-11-30T09-13-48-180Z_long.jsonl"


def published(server: InProcess, count: int, timeout: float = 20) -> list[Any]:
    """The publications of ``URI``'s diagnostics, once there are ``count`` of them."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            params
            for method, params in list(server.notifications)
            if method == "textDocument/publishDiagnostics" and params["uri"] == URI
        ]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"{len(found)} publications, not {count}"
        time.sleep(0.01)


def test_the_facts_of_a_long_line_go_with_its_document() -> None:
    long_text = "x" * (jsonpath._KEPT_FROM + 1000) + MARKER.decode()
    text = "\n".join([S.header(), S.user("u1", None, long_text)]) + "\n"
    server = InProcess()
    try:
        assert "result" in server.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        server.notify("initialized", {})
        document = {"uri": URI, "languageId": "pi-session", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": document})
        published(server, 1)
        hover = server.request(
            "textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 1, "character": 3}}
        )
        assert hover["result"] is not None
        kept = jsonpath._kept
        assert kept is not None and MARKER in kept.raw  # what the hover read of the line is kept
        del kept
        features = server.server.language_documents
        assert features is not None
        document_ref = weakref.ref(features.docs[URI].doc)
        features.closed_documents.seconds = 0.0  # (its analysis kept for a reopening: no time at all)
        server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
        assert published(server, 2)[-1]["diagnostics"] == []  # (the close's last job is done)
        assert jsonpath._kept is None
        deadline = time.monotonic() + 10
        while True:  # (once the kept analysis expired)
            gc.collect()
            if document_ref() is None:
                break
            assert time.monotonic() < deadline, "the closed document was not let go"
            time.sleep(0.02)
    finally:
        server.close()
