"""The characters that draw a tree and cut a text short: box drawing, a bullet, an arrow and an
ellipsis where the output can write them, ASCII where it cannot (a C or POSIX locale, an output
encoded as Latin-1): written through an encoding that lacks them, each would come out as ``?``."""

from __future__ import annotations

import codecs
from typing import Final, NamedTuple

from .written_text import writes_every_character, written_length, written_lengths


class Glyphs(NamedTuple):
    tee: str  # a branch with others below it
    last: str  # the last branch
    bar: str  # under a branch with others below it
    gap: str  # under the last branch
    leaf: str  # the leaf's mark
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


def cut(text: str, width: int, ellipsis: str, encoding: str | None = None) -> str:
    """``text``, when longer than ``width``, cut to end with ``ellipsis`` within the width (an
    ellipsis wider than the width is all that is left). ``encoding``: the output's, whose escapes of
    the characters it cannot write count at their length (an escape is never cut in two); None:
    every character counts as one."""
    room = max(0, width - len(ellipsis))
    if encoding is None or writes_every_character(encoding):
        return text if len(text) <= width else text[:room] + ellipsis
    if written_length(text, encoding) <= width:
        return text
    taken = 0
    for end, length in enumerate(written_lengths(text[: room + 1], encoding)):
        taken += length
        if taken > room:
            return text[:end] + ellipsis
    return text[:room] + ellipsis
