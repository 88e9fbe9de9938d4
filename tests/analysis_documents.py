"""Session documents written line by line for the analysis tests, and positions in them."""

from __future__ import annotations

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
