"""A line written twice (a retried write, two processes appending the same entry): the two copies
share an id, PI030. The earlier copy holds nothing the later one lacks, and pi's index keeps the
later one: removing the earlier copy loses nothing and leaves what pi shows as it was (its leaf
too, when the copy is the file's last entry)."""

from __future__ import annotations

import analysis_documents
import builders as S

from pi_session_server.analysis.autofix import SAFE_CODES
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import repairs


def text(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def repaired(doc: SessionDocument) -> tuple[list[str], str]:
    plan, after = analysis_documents.repaired(doc, SAFE_CODES)
    return [p.repair.title for p in plan.applied], after


H, A, B = S.header(), S.user("a", None), S.user("b", "a")


def test_the_earlier_of_two_identical_lines_is_removed_by_default() -> None:
    titles, after = repaired(SessionDocument(text(H, A, B, A)))
    assert titles == ["Remove this line: line 4 holds the same entry, byte for byte (the copy pi keeps)"]
    assert after == text(H, B, A)  # pi's leaf is still `a`, its last entry


def test_three_copies_leave_one() -> None:
    _titles, after = repaired(SessionDocument(text(H, A, A, B, A)))
    assert after == text(H, B, A)


def test_two_entries_with_one_id_and_different_content_are_left_to_the_user() -> None:
    other = S.user("a", None, "something else")
    doc = SessionDocument(text(H, A, B, other))
    assert [r for r in repairs(doc, 0, doc.line_count - 1) if r.code == "PI030"] == []
    assert repaired(doc) == ([], text(H, A, B, other))
