"""A session saved in UTF-16 or UTF-32 (Windows PowerShell's ``>``), read from disk: pi refuses the
file, and what the user needs to hear is that one thing, with its repair. Each line's bytes parsed
as UTF-8 JSON would add an error per line ("Unexpected token '\\x00'", "no session header") that
the re-encoding makes vanish: noise, not problems."""

from __future__ import annotations

import builders as S
import pytest

from pi_session_server.analysis import codes
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument

TEXT = "".join(line + "\n" for line in (S.header(), S.user("a", None), S.user("b", "a", "é ☃")))


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
@pytest.mark.parametrize("line_break", ["\n", "\r\n"])
def test_a_file_in_another_encoding_has_one_diagnostic_that_says_so(encoding: str, line_break: str) -> None:
    data = ("\ufeff" + TEXT.replace("\n", line_break)).encode(encoding)
    found = [(d.line, d.code) for d in document_diagnostics(SessionDocument(data))]
    assert found == [(0, codes.NOT_UTF8)]


def test_one_that_does_not_decode_whole_says_so_once_too() -> None:
    data = ("\ufeff" + TEXT).encode("utf-16-le") + b"\x00\xd8x\x00"  # a lone surrogate at the end
    assert [d.code for d in document_diagnostics(SessionDocument(data))] == [codes.NOT_UTF8]
