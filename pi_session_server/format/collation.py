"""``String.prototype.localeCompare`` as Node's ICU does it for en-US (docs/API.md §9.7, D9).

Used only to break ties between session file names in listings. For ASCII this reproduces ICU's
default collation (root/en-US, tertiary strength): characters compare first by a primary weight
(punctuation and symbols in ICU's order, then digits, then letters with case folded; most control
characters are ignorable), then, if all primaries are equal, by case at the first position where it
differs, lower case first. Non-ASCII text gets a deterministic approximation: compatibility
decomposition onto the ASCII weights, accents as a secondary difference, other characters after
all ASCII by code point.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

__all__ = ["collation_key", "locale_compare"]

# Primary order of the non-ignorable ASCII characters (checked against Node 20 / ICU 74).
_ASCII_ORDER = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY: dict[str, int] = {c: i + 1 for i, c in enumerate(_ASCII_ORDER)}
for _c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _PRIMARY[_c] = _PRIMARY[_c.lower()]
_NON_ASCII_BASE = len(_ASCII_ORDER) + 1

Key = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@lru_cache(maxsize=8192)
def collation_key(s: str) -> Key:
    """A sort key: ``collation_key(a) < collation_key(b)`` iff ``a.localeCompare(b) < 0``."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    if s.isascii():
        for c in s:
            w = _PRIMARY.get(c)
            if w is None:  # ignorable control character
                continue
            primary.append(w)
            secondary.append(0)
            tertiary.append(1 if "A" <= c <= "Z" else 0)
        return tuple(primary), tuple(secondary), tuple(tertiary)
    for ch in s:
        decomposed = unicodedata.normalize("NFKD", ch) if not ch.isascii() else ch
        upper = 1 if ch != ch.lower() else 0
        for c in decomposed:
            w = _PRIMARY.get(c)
            if w is None:
                if c.isascii():
                    continue  # ignorable control character
                if unicodedata.category(c) == "Mn":  # accent: secondary weight of the last base
                    if secondary:
                        secondary[-1] = secondary[-1] * 0x11000 + ord(c)
                    continue
                w = _NON_ASCII_BASE + ord(c.lower())
            primary.append(w)
            secondary.append(0)
            tertiary.append(upper)
    return tuple(primary), tuple(secondary), tuple(tertiary)


def locale_compare(a: str, b: str) -> int:
    """``a.localeCompare(b)``: negative, zero or positive (-1, 0, 1)."""
    if a == b:
        return 0
    ka, kb = collation_key(a), collation_key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)
