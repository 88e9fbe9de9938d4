"""Language-server requests on a session file the editor did not send (read from disk), sent right
behind a pi/delete of that file in the same write, are answered after it: they never read the file
being deleted, and answer as for a file that is not there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reliability_rpc import RawServer, file_uri
from test_requests_ordered_after_delete import pipelined, session_with_entries

from pi_session_server.server.locations import directory_entry


@pytest.fixture
def doomed(tmp_path: Path) -> str:
    return session_with_entries(tmp_path / "sessions", 2000, str(tmp_path))


@pytest.mark.parametrize("method", ["textDocument/documentSymbol", "textDocument/foldingRange"])
def test_a_language_request_sent_after_a_delete_finds_the_file_gone(
    server: RawServer, doomed: str, method: str
):
    deleted, answer = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        (method, {"textDocument": {"uri": file_uri(doomed)}}),
    )
    assert "result" in deleted, deleted
    assert answer.get("result") is None, str(answer)[:300]  # no document: as for a missing file
    assert not os.path.exists(doomed)


def test_a_language_request_by_another_spelling_sent_after_a_delete_finds_the_file_gone(
    server: RawServer, doomed: str, tmp_path: Path
):
    (tmp_path / "linked-dir").symlink_to(os.path.dirname(doomed))
    other = str(tmp_path / "linked-dir" / os.path.basename(doomed))
    assert directory_entry(other) == doomed
    deleted, symbols = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("textDocument/documentSymbol", {"textDocument": {"uri": Path(other).as_uri()}}),  # (not resolved)
    )
    assert "result" in deleted, deleted
    assert symbols.get("result") is None, str(symbols)[:300]


def test_a_repair_command_sent_after_a_delete_finds_no_document(server: RawServer, doomed: str):
    deleted, repaired = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        (
            "workspace/executeCommand",
            {
                "command": "pi.session.repairFile",
                "arguments": [file_uri(doomed), 0, ["source.fixAll.pi-session"]],
            },
        ),
    )
    assert "result" in deleted, deleted
    assert not os.path.exists(doomed), "nothing wrote the file back"
    assert repaired.get("result") is None, repaired  # no document, as for a missing file


def test_a_diagnostics_pull_sent_after_a_delete_gets_an_empty_report(server: RawServer, doomed: str):
    # a pull must answer a report (null is none): the file is gone, so it has no problems
    deleted, pulled = pipelined(
        server,
        ("pi/delete", {"path": doomed, "permanent": True}),
        ("textDocument/diagnostic", {"textDocument": {"uri": file_uri(doomed)}}),
    )
    assert "result" in deleted, deleted
    assert pulled.get("result") == {"kind": "full", "items": []}, pulled
