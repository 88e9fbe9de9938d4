"""Text from a session on one terminal line (render/terminal_text.py)."""

from __future__ import annotations

import sys
import unicodedata

from pi_session_server.render.terminal_text import one_terminal_line, terminal_lines


def test_exactly_the_control_characters_and_line_separators_are_escaped() -> None:
    escaped = set()
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        shown = one_terminal_line(f"a{char}é")  # (a non-ASCII line: not only the ASCII fast path)
        if shown != f"a{char}é":
            escaped.add(code)
            expected = f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"
            assert shown == f"a{expected}é"
    assert escaped == {c for c in range(0x2030) if unicodedata.category(chr(c)) == "Cc"} | {0x2028, 0x2029}


def test_a_line_without_them_is_the_same_text() -> None:
    line = "Read src/parser.py — fix the “quoted” case ✓"
    assert one_terminal_line(line) is line


def test_text_as_lines_keeps_its_line_breaks_and_tabs_and_escapes_the_rest() -> None:
    text = "a\tb\r\nc\rd\x1b[2J\x07\u2028e\x85\nf"
    assert terminal_lines(text) == "a\tb\nc\\x0dd\\x1b[2J\\x07\\u2028e\\x85\nf"
    for code in range(0x2030):
        char = chr(code)
        if char not in "\n\t":
            assert terminal_lines(char) == one_terminal_line(char), code


def test_lines_without_them_are_the_same_text() -> None:
    lines = "def f():\n\treturn “x” ✓\n"
    assert terminal_lines(lines) is lines
