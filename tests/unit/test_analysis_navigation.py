"""Navigation between entries in the analysis: definitions on values pi ignores, highlights,
children ("go to implementation") and completion of ids and entry types."""

from __future__ import annotations

import builders as S

from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.navigation import definition, references


def make(*lines: str) -> SessionDocument:
    return SessionDocument("\n".join(lines) + "\n")


def at(doc: SessionDocument, line: int, needle: str, occurrence: int = 0) -> int:
    """The byte offset just inside the ``occurrence``-th ``needle`` on ``line``."""
    raw = doc.lines[line].raw
    i = -1
    for _ in range(occurrence + 1):
        i = raw.index(needle.encode(), i + 1)
    return i + 1


def test_definition_on_a_value_pi_ignores_goes_where_pi_s_value_points() -> None:
    # JSON.parse keeps the last "parentId": the entry's parent is b, not a
    twice = S.user("c", "b").replace('"parentId":"b"', '"parentId":"a","parentId":"b"')
    doc = make(S.header(), S.user("a", None), S.user("b", "a"), twice)
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"a"'))] == [2]
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"parentId"', 0))] == [2]
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"b"'))] == [2]
    # references from the ignored value: the entry pi reads there (b), not a
    assert [t.line for t in references(doc, 3, at(doc, 3, '"a"'), include_declaration=True)] == [2, 3]


def test_definition_on_an_ignored_tool_call_id_goes_to_the_call_pi_reads() -> None:
    result = S.tool_result("d", "c", "t2").replace('"toolCallId":"t2"', '"toolCallId":"t1","toolCallId":"t2"')
    doc = make(
        S.header(),
        S.assistant("b", None, calls=(("t1", "read", {}),)),
        S.assistant("c", "b", calls=(("t2", "read", {}),)),
        result,
    )
    assert [t.line for t in definition(doc, 3, at(doc, 3, '"t1"'))] == [2]
