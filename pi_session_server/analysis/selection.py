"""Selection ranges: from the value under the cursor outwards to the whole entry line.

Each step is a byte span in the line: the key or scalar under the cursor, the member it belongs
to (``"key":value``), each enclosing container and the member holding it, the line's JSON value,
and the whole line.

The enclosing containers are found in one walk over the line (their starts when the walk reaches
the cursor, their ends as they close), whatever the nesting depth. Only the
:data:`SELECTION_LEVELS` containers nearest the cursor are reported, then the line's value and the
whole line: nobody expands a selection a thousand times, and an editor's protocol layer nests one
object per step (a 100,000-deep line would give a reply 200,000 objects deep).
"""

from __future__ import annotations

from .document import SessionDocument
from .jsonpath import CLOSED, KEY, Located, Walk, scalar_at, value_span
from .positions import text_end

#: enclosing containers reported around the cursor (each with its member); outer ones are skipped
SELECTION_LEVELS = 100


def selection_spans(doc: SessionDocument, line: int, offset: int) -> list[tuple[int, int]]:
    """Nested byte spans, innermost first, all on ``line``."""
    if not 0 <= line < doc.line_count:
        return []
    raw = doc.lines[line].raw
    spans: list[tuple[int, int]] = []
    loc = scalar_at(raw, offset)
    if loc is not None:
        spans.append((loc.start, loc.end))
        spans.extend(_enclosing_spans(raw, loc))
    whole = value_span(raw, ())
    if whole is not None:
        spans.append(whole)
    spans.append((0, text_end(raw)))
    out: list[tuple[int, int]] = []
    for span in spans:  # strictly growing, each containing the previous
        if not out or (span[0] <= out[-1][0] and span[1] >= out[-1][1] and span != out[-1]):
            out.append(span)
    return out


def _enclosing_spans(raw: bytes, loc: Located) -> list[tuple[int, int]]:
    """The member ``loc`` is in, then each enclosing container and its member, innermost first."""
    walk = Walk(raw)
    steps = walk.steps()
    if not any(what != CLOSED and start == loc.start for what, start, _ in steps):
        return []  # (the steps stop right after ``loc``: what follows reads on from there)
    frames = walk.frames
    # where each enclosing container's current member (the one holding ``loc``) starts, -1 for none
    member_starts = [
        frame.key_start if frame.is_object and key is not None else -1
        for frame, key in zip(frames, walk.keys, strict=True)
    ]
    starts = [frame.start for frame in frames]
    innermost = len(frames) - 1
    outermost = max(0, innermost - SELECTION_LEVELS + 1)
    ends = [-1] * len(frames)
    still_open = innermost + 1  # enclosing containers not closed yet: frames[:still_open]
    own_end = loc.end if not loc.is_key else -1  # the end of loc's own member value
    for what, _, end in steps:
        depth = len(frames)  # after a close: the index of the container that closed
        if own_end < 0 and depth == innermost + 1:
            # ``loc`` is a key: the next step in its object is its value (a scalar, or a
            # container closing), unless another key comes first
            own_end = 0 if what == KEY else end
            continue
        if what == CLOSED and depth < still_open:  # (a sibling opened later closes deeper)
            ends[depth] = end
            still_open = depth
            if depth <= outermost:
                break
    out: list[tuple[int, int]] = []
    if innermost >= 0 and member_starts[innermost] >= 0 and own_end > 0:
        out.append((member_starts[innermost], own_end))
    for i in range(innermost, outermost - 1, -1):
        if ends[i] < 0:
            break  # never closed (a cut line): nor are the containers around it
        out.append((starts[i], ends[i]))
        if i > 0 and member_starts[i - 1] >= 0:
            out.append((member_starts[i - 1], ends[i]))
    return out
