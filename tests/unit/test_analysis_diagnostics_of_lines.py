"""The diagnostics of a few lines (what the quick fixes of a range show) are those of the whole
document on these lines, found from them alone."""

from __future__ import annotations

import builders as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_analysis_first_pass import POOL

from pi_session_server.analysis.diagnostics import diagnostics_of_lines, document_diagnostics
from pi_session_server.analysis.document import SessionDocument
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
