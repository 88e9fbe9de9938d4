"""Folding ranges: one per turn, from a user message to the line before the next one.

Turns are taken in file order (what the editor shows), which is conversation order in a file pi
wrote. Lines before the first user message (header, model and thinking-level changes) fold as
the preamble.
"""

from __future__ import annotations

import itertools

from . import lines as L
from .document import SessionDocument


def folding_ranges(doc: SessionDocument) -> list[tuple[int, int]]:
    """(first line, last line) pairs, 0-based and inclusive, each spanning at least two lines."""
    starts = [i.line for i in doc.lines if i.kind == L.ENTRY and i.role == "user" and i.etype == "message"]
    last_content = len(doc.lines) - 1
    while last_content > 0 and doc.lines[last_content].kind == L.BLANK:
        last_content -= 1
    out: list[tuple[int, int]] = []
    if starts and starts[0] > 1:
        out.append((0, starts[0] - 1))
    bounds = [*starts, last_content + 1]
    for begin, nxt in itertools.pairwise(bounds):
        end = nxt - 1
        if end > begin:
            out.append((begin, end))
    return out
