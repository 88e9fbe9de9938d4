"""NUL bytes where a crash left them: the system grew the file but the data never reached the disk,
so its tail reads as zeros. They hold nothing: the diagnostic says so, and the repair that removes
them is one that loses nothing (made by ``pi-session repair`` by default)."""

from __future__ import annotations

import analysis_documents
import builders as S

from pi_session_server.analysis.autofix import SAFE_CODES
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument

LINES = (S.header(), S.user("a", None), S.user("b", "a"))
GOOD = "".join(line + "\n" for line in LINES)


def repaired(doc: SessionDocument) -> tuple[list[str], str]:
    """The titles of the repairs made by default, and the text they give."""
    plan, after = analysis_documents.repaired(doc, SAFE_CODES)
    return [p.repair.title for p in plan.applied], after


def found(text: str) -> list[tuple[int, str, int, int, str]]:
    return [(d.line, d.code, d.start, d.end, d.message) for d in document_diagnostics(SessionDocument(text))]


def test_a_zero_filled_tail_is_named_for_what_it_is_and_removed_by_default() -> None:
    text = GOOD + "\0" * 4096
    ((line, code, start, end, message),) = found(text)
    assert (line, code, start, end) == (3, "PI001", 0, 4096)
    assert message.startswith("4096 NUL bytes and nothing else")
    assert "crash" in message and "truncated" not in message
    titles, after = repaired(SessionDocument(text))
    assert titles == ["Remove the NUL bytes (they hold nothing)"]
    assert after == GOOD
    assert found(after) == []


def test_nul_bytes_pi_appended_after_are_a_line_of_their_own_in_the_middle() -> None:
    # pi appends a newline to a file that lacks one when it opens it, then its entries
    text = GOOD + "\0" * 512 + "\n" + S.user("c", "b") + "\n"
    ((line, code, start, end, message),) = found(text)
    assert (line, code, start, end) == (3, "PI001", 0, 512)
    assert message.startswith("512 NUL bytes and nothing else")
    titles, after = repaired(SessionDocument(text))
    assert titles == ["Remove the NUL bytes (they hold nothing)"]
    assert after == GOOD + S.user("c", "b") + "\n"


def test_a_line_cut_off_by_nul_bytes_says_so_where_they_start() -> None:
    cut = S.user("c", "b")[:40]
    text = GOOD + cut + "\0" * 100 + "\n"
    ((line, code, start, _end, message),) = found(text)
    assert (line, code, start) == (3, "PI001", 40)
    assert message == (
        "invalid JSON: the line is cut off, then 100 NUL bytes: the zero-filled tail a crash leaves "
        "(the file grew, its data never reached the disk)"
    )
    titles, _after = repaired(SessionDocument(text))
    assert titles == []  # what is left of the entry is the user's to keep or delete
