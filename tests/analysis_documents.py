"""Session documents written line by line for the analysis tests, and positions in them."""

from __future__ import annotations

from collections.abc import Iterable

import builders as S

from pi_session_server.analysis.autofix import Plan, plan_repairs
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.session.profiles import DEFAULT_PI, PiVersion


def make(*lines: str, newline: bool = True, pi: PiVersion = DEFAULT_PI) -> SessionDocument:
    """A document of ``lines`` (with a final newline unless ``newline`` is false)."""
    return SessionDocument("\n".join(lines) + ("\n" if newline else ""), pi=pi)


def at(doc: SessionDocument, line: int, needle: str, occurrence: int = 0) -> int:
    """The byte offset just inside the ``occurrence``-th ``needle`` on ``line``."""
    raw = doc.lines[line].raw
    i = -1
    for _ in range(occurrence + 1):
        i = raw.index(needle.encode(), i + 1)
    return i + 1


def linked() -> SessionDocument:
    """An entry of each kind that names another::

    0 header
    1 a user                      root
    2 b assistant, calls t1        parent a
    3 c toolResult t1              parent b
    4 l label on b                 parent c
    5 k compaction keeping a       parent l
    6 s branch summary from b      parent a
    """
    return make(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t1", "read", {}),)),
        S.tool_result("c", "b", "t1"),
        S.label("l", "c", "b"),
        S.compaction("k", "l", "a"),
        S.branch_summary("s", "a", "b"),
    )


def repaired(doc: SessionDocument, chosen: Iterable[str]) -> tuple[Plan, str]:
    """What ``pi-session repair --codes CHOSEN`` makes of ``doc`` in one round: the plan and the
    text (its splices applied to the document's bytes)."""
    plan = plan_repairs(doc, chosen)
    data = doc.data()
    out = bytearray()
    position = 0
    for s in plan.splices():
        out += data[position : s.start] + s.data
        position = s.end
    out += data[position:]
    return plan, out.decode("utf-8")
