"""A line of text with a stray control byte (a BEL inside a string, a form feed) is text with a
problem where that byte is, said as the parser's error and the character it stopped at; a line is
binary bytes only when it looks it: more than a few control bytes, NUL bytes beside one, or bytes
that are not UTF-8 (analysis/lines.py)."""

from __future__ import annotations

import builders as S
import pytest

from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument

GOOD = S.header() + "\n" + S.user("a", None) + "\n"
AFTER = S.user("c", "a") + "\n"


def _middle_line(stray: bytes) -> bytes:
    """An entry with ``stray`` written into its text, as a line between two good ones."""
    line = S.user("b", "a", "hello there").encode()
    return line.replace(b"hello", b"hel" + stray + b"lo")


def _problems(line: bytes) -> list[tuple[int, str, int, int, str]]:
    doc = SessionDocument(GOOD.encode() + line + b"\n" + AFTER.encode())
    return [(d.line, d.code, d.start, d.end, d.message) for d in document_diagnostics(doc)]


@pytest.mark.parametrize(("stray", "name"), [(b"\x07", "U+0007"), (b"\x0c", "U+000C"), (b"\x1f", "U+001F")])
def test_a_stray_control_byte_in_a_line_of_text_is_the_parser_s_error_where_it_is(
    stray: bytes, name: str
) -> None:
    line = _middle_line(stray)
    at = line.index(stray)
    ((number, code, start, end, message),) = _problems(line)
    assert (number, code, start, end) == (2, "PI001", at, at + 1)
    assert message == (
        f"invalid JSON: Bad control character in string literal ({name}, a control character: JSON "
        f"takes it only escaped in a string, as \\u{name[2:].lower()})"
    )


def test_a_few_stray_control_bytes_are_still_text() -> None:
    line = _middle_line(b"\x07").replace(b"there", b"th\x01e\x02re")
    ((_number, code, start, _end, message),) = _problems(line)
    assert code == "PI001" and start == line.index(b"\x07")
    assert message.startswith("invalid JSON: Bad control character") and "binary" not in message


@pytest.mark.parametrize(
    "stray",
    [
        b"\x01\x02\x03\x04",  # more than a few
        b"\x07\x00",  # NUL bytes beside a control byte
        b"\x07\xff",  # bytes that are not UTF-8
    ],
    ids=["many", "nul", "not-utf8"],
)
def test_a_line_that_looks_binary_is_said_to_be_binary_bytes(stray: bytes) -> None:
    line = _middle_line(stray)
    ((number, code, start, end, message),) = _problems(line)
    assert (number, code, start, end) == (2, "PI001", 0, len(line))
    first = line.index(stray)
    assert message.startswith(f"not text: binary bytes (byte {first + 1} is {stray[0]:#04x}, a control byte")


def test_a_last_line_with_a_stray_control_byte_is_no_cut_off_line() -> None:
    """pi's JSON.stringify escapes every control character: a line holding one raw is no write
    of pi's cut short (PI002, whose repair deletes the line), even without its final newline."""
    line = _middle_line(b"\x07")
    doc = SessionDocument(GOOD.encode() + line)
    ((number, code, start, _end, message),) = [
        (d.line, d.code, d.start, d.end, d.message) for d in document_diagnostics(doc)
    ]
    assert (number, code, start) == (2, "PI001", line.index(b"\x07"))
    assert message.startswith("invalid JSON: Bad control character in string literal (U+0007")
