"""Selection ranges: from the value under the cursor outwards to the whole entry line.

Each step is a byte span in the line: the key or scalar under the cursor, the member it belongs
to (``"key":value``), each enclosing container, the line's JSON value, and the whole line.
"""

from __future__ import annotations

from .document import SessionDocument
from .jsonpath import member_span, scalar_at, value_span


def selection_spans(doc: SessionDocument, line: int, offset: int) -> list[tuple[int, int]]:
    """Nested byte spans, innermost first, all on ``line``."""
    if not 0 <= line < doc.line_count:
        return []
    raw = doc.lines[line].raw
    spans: list[tuple[int, int]] = []
    loc = scalar_at(raw, offset)
    if loc is not None:
        spans.append((loc.start, loc.end))
        path = loc.path
        for depth in range(len(path), 0, -1):
            prefix = path[:depth]
            value = value_span(raw, prefix)
            if value is not None:
                spans.append(value)
            if isinstance(prefix[-1], str):
                member = member_span(raw, prefix)
                if member is not None:
                    spans.append(member)
    whole = value_span(raw, ())
    if whole is not None:
        spans.append(whole)
    spans.append((0, len(raw)))
    out: list[tuple[int, int]] = []
    for span in spans:  # strictly growing, each containing the previous
        if not out or (span[0] <= out[-1][0] and span[1] >= out[-1][1] and span != out[-1]):
            out.append(span)
    return out
