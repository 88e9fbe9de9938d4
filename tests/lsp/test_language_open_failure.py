"""A document whose analysis fails (a bug of ours, made here on purpose in the server) is not left
silent: the user is told the document has no analysis, the failure goes to the log, and the server
answers on."""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsprotocol import types
from sidecar_support import start_sidecar, stop_sidecar

BROKEN_ANALYSIS = [
    sys.executable,
    "-c",
    "import sys\n"
    "from pi_session_server.server import language_documents\n"
    "def broken(self, state, doc):\n"
    "    raise RuntimeError('the analysis broke')\n"
    "language_documents.LanguageDocuments.opened = broken\n"
    "from pi_session_server.cli import main\n"
    "sys.exit(main(['serve']))",
]


@pytest.mark.asyncio
async def test_a_document_whose_analysis_fails_is_told_to_the_user(tmp_path):
    side = await start_sidecar(tmp_path, command=BROKEN_ANALYSIS)
    try:
        uri = (tmp_path / "s.jsonl").as_uri()
        side.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "pi-session", 1, "{}\n"))
        )
        for _ in range(200):
            told = [m for m in side.client.messages if "could not analyse" in m.message]
            if told:
                break
            await asyncio.sleep(0.05)
        assert told and uri in told[0].message and "the analysis broke" in told[0].message
        assert told[0].type == types.MessageType.Error
        assert await side.request("pi/sessions", {}) is not None  # the server answers on
    finally:
        await stop_sidecar(side)
