"""The characters that draw a tree and cut a text short: box drawing, a bullet, an arrow and an
ellipsis where the output can write them, ASCII where it cannot (a C or POSIX locale, an output
encoded as Latin-1): written through an encoding that lacks them, each would come out as ``?``."""

from __future__ import annotations

import bisect
import codecs
import itertools
from typing import Final, NamedTuple

from .terminal_text import one_terminal_line
from .written_text import written_widths


class Glyphs(NamedTuple):
    tee: str  # a branch with others below it
    last: str  # the last branch
    bar: str  # under a branch with others below it
    gap: str  # under the last branch
    leaf: str  # the mark of the leaf, wherever a tree is drawn (tree, demo)
    dot: str  # the mark of the path to the leaf
    ellipsis: str  # where a text is cut


UNICODE: Final = Glyphs(tee="├─ ", last="└─ ", bar="│  ", gap="   ", leaf="◀ leaf", dot="•", ellipsis="…")
ASCII: Final = Glyphs(tee="|- ", last="`- ", bar="|  ", gap="   ", leaf="<- leaf", dot="*", ellipsis="...")


def glyphs_for(encoding: str, ascii_only: bool = False) -> Glyphs:
    """:data:`UNICODE` when text encoded as ``encoding`` can hold it (and ASCII is not asked for),
    else :data:`ASCII`."""
    if ascii_only:
        return ASCII
    try:
        codecs.encode("".join(UNICODE), encoding)
    except (UnicodeError, LookupError):
        return ASCII
    return UNICODE


def cut(text: str, width: int, ellipsis: str, encoding: str | None = None, *, more: bool = False) -> str:
    """``text``, when wider than ``width`` columns written on one line of a terminal, cut to end
    with ``ellipsis`` within the width (an ellipsis wider than the width cut to it). ``encoding``:
    the output's (None: one that writes every character). Each character counts at the columns
    it takes written (render/written_text.py): a control character, or one the encoding cannot
    write, at its escape's length (never cut in two: the escapes are made after the cut, when the
    text is written), a wide character as two, a combining mark as none (kept with the character
    it marks). ``more``: ``text`` is the start of a longer one, so it ends with the ellipsis even
    where it fits."""
    ellipsis = ellipsis[: max(0, width)]  # (each glyph of an ellipsis takes one column)
    room = width - len(ellipsis)
    if text.isascii() and text.isprintable():  # (nearly every text: a column a character)
        return text if len(text) <= width and not more else text[: max(0, room)] + ellipsis
    if len(text) > width + 1:
        # a long text (a preview read ahead): when its start is wider than the width already, the
        # cut falls in it (every column count is the character's own), and the rest is not measured
        head = text[: width + 1]
        widths = written_widths(head, encoding)
        if sum(widths) > width:
            return head[: _fitting(widths, room)] + ellipsis
    widths = written_widths(text, encoding)
    if not more and sum(widths) <= width:
        return text
    return text[: _fitting(widths, room)] + ellipsis


def cut_start(text: str, width: int, ellipsis: str, encoding: str | None = None) -> str:
    """``text`` cut as :func:`cut` cuts it, but at its start: its end kept (a path's file name)."""
    ellipsis = ellipsis[: max(0, width)]
    widths = written_widths(text, encoding)
    if sum(widths) <= width:
        return text
    start = len(text) - _fitting(widths[::-1], width - len(ellipsis))
    while start < len(text) and widths[start] == 0:  # (a mark whose character is cut off)
        start += 1
    return ellipsis + text[start:]


def one_line_cut(
    text: str, width: int | None, ellipsis: str, encoding: str | None = None, *, keep_end: bool = False
) -> str:
    """``text`` as one line of a terminal, its control characters as escapes
    (render/terminal_text.py), cut first to ``width`` columns as :func:`cut` cuts it (``keep_end``:
    as :func:`cut_start`, its end kept); None: not cut."""
    if width is not None:
        text = (
            cut_start(text, width, ellipsis, encoding) if keep_end else cut(text, width, ellipsis, encoding)
        )
    return one_terminal_line(text)


def _fitting(widths: list[int], room: int) -> int:
    """How many of the characters whose ``widths`` these are fit ``room`` columns, from the first
    (the last of them those of width 0 that follow: a letter's combining marks)."""
    return bisect.bisect_right(list(itertools.accumulate(widths)), room)
