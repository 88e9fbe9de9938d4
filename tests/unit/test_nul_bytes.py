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


BINARY = "\x7fELF\x02\x01\x01" + "\0" * 9 + "\x03\x00>\x00\x01" + "\0" * 11


def test_binary_bytes_are_named_for_what_they_are_not_a_crash_tail() -> None:
    """Binary content (an executable, a file written over) ends in NUL bytes as often as not: only
    NUL bytes alone are a crash's zero fill; a line with control bytes no text holds is binary."""
    for text, line in ((GOOD + BINARY, 3), (GOOD + BINARY + "\n" + S.user("c", "b") + "\n", 3)):
        ((at, code, start, end, message),) = found(text)
        assert (at, code, start, end) == (line, "PI001", 0, len(BINARY))
        assert message.startswith("not text: binary bytes (byte 5 is 0x02, a control byte no text holds)")
        assert "crash" not in message and "truncated" not in message
        titles, _after = repaired(SessionDocument(text))
        assert titles == []  # nothing of it is known to hold nothing: the user's to delete


def test_a_cut_off_last_line_with_a_tab_is_still_truncated() -> None:
    """A tab is no binary byte: between a cut line's values (JSON whitespace) the line is still
    cut off; in a string it is the parser's error there (pi writes none raw), not a cut."""
    text = GOOD + S.user("c", "b")[:42] + "\t"
    ((line, code, _start, _end, _message),) = found(text)
    assert (line, code) == (3, "PI002")
    text = GOOD + S.user("c", "b")[:40] + "\t"
    ((line, code, start, _end, message),) = found(text)
    assert (line, code, start) == (3, "PI001", 40) and "U+0009" in message
