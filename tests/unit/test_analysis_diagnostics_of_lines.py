"""The diagnostics of a few lines (what the quick fixes of a range show) are those of the whole
document on these lines, found from them alone; and the whole document's, put in order with
pauses, are in the order one sort makes."""

from __future__ import annotations

import builders as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_analysis_first_pass import POOL

from pi_session_server.analysis import diagnostics
from pi_session_server.analysis.codes import Severity
from pi_session_server.analysis.diagnostics import Diagnostic, diagnostics_of_lines, document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.session.profiles import DEFAULT_PI

# two entries written on one line (PI006), the parent of an entry after them
GLUED = S.user("g1", "a") + S.user("g2", "g1")
LINES = [*POOL, GLUED, S.user("h", "g2"), "\ufeff" + S.header(), '{"type":"messa']


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(LINES), max_size=14),
    st.booleans(),
    st.integers(-2, 16),
    st.integers(0, 16),
    st.sampled_from([DEFAULT_PI, "0.86.1"]),
    st.booleans(),
)
def test_the_diagnostics_of_some_lines_are_the_documents_on_them(
    lines: list[str], final_newline: bool, first: int, count: int, pi: str, quick: bool
) -> None:
    text = "\n".join(lines) + ("\n" if final_newline else "")
    last = first + count
    whole = [d for d in document_diagnostics(SessionDocument(text, pi=pi)) if first <= d.line <= last]
    assert diagnostics_of_lines(SessionDocument(text, pi=pi, quick=quick), first, last) == whole


def test_the_diagnostics_of_lines_glued_to_the_parent_of_an_entry_after_them() -> None:
    doc = SessionDocument("\n".join([S.header(), S.user("a", None), GLUED, S.user("h", "g2")]) + "\n")
    found = diagnostics_of_lines(doc, 3, 3)
    assert [d.code for d in found] == ["PI031"] and "glued" in found[0].message
    assert found == [d for d in document_diagnostics(doc) if d.line == 3]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=14), st.integers(1, 60))
def test_the_problems_ordered_with_pauses_are_in_the_order_of_one_sort(lines: list[str], times: int) -> None:
    """Many lines, many problems a line at the same place (a line repeated: its id taken again, its
    parent missing...): placed in the order they were found, as one stable sort places them."""
    text = "\n".join(lines * times) + "\n"
    assert document_diagnostics(SessionDocument(text), lambda: None) == document_diagnostics(
        SessionDocument(text)
    )


def test_many_problems_on_one_place_keep_the_order_they_were_found_in() -> None:
    found = [
        Diagnostic(line % 7, start % 3, start % 3 + 1, Severity.ERROR, "PI031", f"{line} {start}")
        for line in range(40)
        for start in range(CHECK_EVERY // 10)
    ][::-1]
    ordered = diagnostics._in_order(list(found), 7, lambda: None)
    assert ordered == sorted(found, key=lambda d: (d.line, d.start, d.code))
