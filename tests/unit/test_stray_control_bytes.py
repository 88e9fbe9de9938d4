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


@pytest.mark.parametrize(("stray", "name"), [(b"\t", "U+0009"), (b"\x0b", "U+000B"), (b"\x0c", "U+000C")])
def test_a_last_line_with_a_tab_or_form_feed_is_no_cut_off_line(stray: bytes, name: str) -> None:
    """A tab, vertical tab or form feed is text's own (no binary byte), but JSON takes it only
    escaped: a last line holding one raw, cut or not, fails where it is, which a line cut short of
    pi's never does (it fails only at its end). PI001 there, not PI002 (whose repair deletes it)."""
    for line in (_middle_line(stray), _middle_line(stray)[:-20]):
        doc = SessionDocument(GOOD.encode() + line)
        found = [(d.line, d.code, d.start) for d in document_diagnostics(doc)]
        assert found == [(2, "PI001", line.index(stray))], line
        assert name in document_diagnostics(doc)[0].message


def test_a_last_line_cut_short_is_still_a_cut_off_line() -> None:
    """The other side: a line of pi's cut anywhere (it then fails at its end) is PI002."""
    line = S.user("b", "a", "hello there").encode()
    for cut in (5, len(line) // 2, len(line) - 1):
        doc = SessionDocument(GOOD.encode() + line[:cut])
        assert [(d.line, d.code) for d in document_diagnostics(doc)] == [(2, "PI002")], cut
