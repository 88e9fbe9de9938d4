"""How many columns of a terminal a printable character takes: two for a wide one (CJK, most
emoji, fullwidth forms), none for a combining mark (it goes on the character before it), one for
the rest, as terminals draw them (the rules of POSIX's wcwidth, from the Unicode data Python has).

Where terminals differ, a character is counted at the most columns one of them draws it: a text
cut to a width is then never wider than that width on any of them (at worst a little narrower).
"""

from __future__ import annotations

import unicodedata
from typing import Final

# Emoji presentation: after a narrow symbol (U+2764), most terminals draw the pair two columns wide.
_EMOJI_SELECTOR: Final = "\ufe0f"
# A flag is a pair of these; some terminals draw each alone two columns wide.
_REGIONAL_INDICATORS: Final = range(0x1F1E6, 0x1F200)


class _Cells(dict[str, int]):
    """Each character's columns, told once: a text's are looked up in one call a character (a
    tree's previews are measured row after row)."""

    def __missing__(self, char: str) -> int:
        if unicodedata.east_asian_width(char) in "WF" or ord(char) in _REGIONAL_INDICATORS:
            columns = 2
        elif char != _EMOJI_SELECTOR and unicodedata.category(char) in ("Mn", "Me"):
            columns = 0
        else:
            columns = 1
        self[char] = columns
        return columns


_CELLS: Final = _Cells()
#: the columns ``char`` (one printable character) takes on a terminal: 0, 1 or 2
cells: Final = _CELLS.__getitem__
