"""A parent cycle is broken once, at the link pi cannot have written: an entry whose parent comes
later in the file (pi appends an entry after its parent). Breaking every entry of the cycle (each
made a root) would cut the conversation into pieces."""

from __future__ import annotations

import json

import analysis_documents
import builders as S

from pi_session_server.analysis.autofix import FIXABLE_CODES
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import repairs


def doc(*lines: str) -> SessionDocument:
    return SessionDocument("".join(line + "\n" for line in lines))


def repaired(document: SessionDocument) -> tuple[int, SessionDocument]:
    """The repairs --all makes in one round, and the document they give."""
    plan, after = analysis_documents.repaired(document, FIXABLE_CODES)
    return len(plan.applied), SessionDocument(after)


def parents(document: SessionDocument) -> dict[str, object]:
    return {
        value["id"]: value.get("parentId")
        for value in (json.loads(document.line_text(n)) for n in range(1, document.line_count - 1))
    }


def test_a_cycle_through_the_first_entry_is_broken_once_where_the_link_points_forward() -> None:
    # the first entry's parent was overwritten with a later entry's id
    d = doc(S.header(), S.user("a", "c"), S.user("b", "a"), S.user("c", "b"), S.user("d", "c"))
    count, after = repaired(d)
    assert count == 1
    assert parents(after) == {"a": None, "b": "a", "c": "b", "d": "c"}
    assert document_diagnostics(after) == []


def test_a_cycle_in_the_middle_is_broken_by_giving_the_entry_the_one_written_before_it() -> None:
    d = doc(
        S.header(), S.user("r", None), S.user("a", "c"), S.user("b", "a"), S.user("c", "b"), S.user("d", "c")
    )
    count, after = repaired(d)
    assert count == 1
    assert parents(after) == {"r": None, "a": "r", "b": "a", "c": "b", "d": "c"}
    assert document_diagnostics(after) == []


def test_every_line_of_the_cycle_offers_the_same_preferred_repair_and_its_own_break() -> None:
    d = doc(S.header(), S.user("r", None), S.user("a", "c"), S.user("b", "a"), S.user("c", "b"))
    for line in (2, 3, 4):
        offered = [r for r in repairs(d, line, line) if r.code == "PI032"]
        (preferred,) = [r for r in offered if r.preferred]
        assert (
            preferred.title == "Break the cycle at line 3: re-parent `a` to `r` (line 2), the entry before it"
        )
        assert [e.start_line for e in preferred.edits()] == [2]
        assert any(r.title.startswith("Break the cycle here") for r in offered)


def test_an_entry_that_is_its_own_parent_gets_the_entry_before_it() -> None:
    d = doc(S.header(), S.user("r", None), S.user("a", "a"), S.user("b", "a"))
    count, after = repaired(d)
    assert count == 1
    assert parents(after) == {"r": None, "a": "r", "b": "a"}
