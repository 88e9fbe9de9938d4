"""Text from a session on one line of a terminal: its control characters written as escapes.

A session holds what a model, a tool or a user wrote, control characters included: printed raw,
an ESC sequence in a message or a label sets the title, the colours or the cursor of the terminal
of whoever draws the session's tree or checks it, and a line break breaks the drawing. The C0 and
C1 control characters, DEL and the JSON-legal line and paragraph separators are written as their
escapes (``\\x1b``, ``\\u2028``) instead; text shown as lines of its own (a tool's output) keeps
its line breaks and tabs.
"""

from __future__ import annotations

import re
from typing import Final

CONTROL_ESCAPES: Final = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))},
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
# Searched first: translating walks every character through the table, which costs as much in a
# line without any control character (nearly all of them) as in one full of them.
_ANY_ESCAPED: Final = re.compile("[" + "".join(re.escape(chr(code)) for code in CONTROL_ESCAPES) + "]")


def one_terminal_line(text: str) -> str:
    """``text`` with every control character as its escape."""
    if text.isprintable():  # (no character escaped is printable: told faster than by the search)
        return text
    return text.translate(CONTROL_ESCAPES) if _ANY_ESCAPED.search(text) else text


_LINES_ESCAPES: Final = {code: escape for code, escape in CONTROL_ESCAPES.items() if code not in (0x09, 0x0A)}
_ANY_LINES_ESCAPED: Final = re.compile("[" + "".join(re.escape(chr(code)) for code in _LINES_ESCAPES) + "]")


def terminal_lines(text: str) -> str:
    """``text`` as lines: its line breaks ("\\n", and "\\r\\n" as "\\n") and tabs kept, every other
    control character (a lone "\\r" too: a terminal would write over the line) as its escape."""
    if not _ANY_LINES_ESCAPED.search(text):
        return text
    return text.replace("\r\n", "\n").translate(_LINES_ESCAPES)
