"""Text cut to a width as an output writes it: the characters its encoding cannot write come out as
escapes (render/written_text.py), each counted at its length and never cut in two."""

from __future__ import annotations

from pi_session_server.render.glyphs import cut
from pi_session_server.render.written_text import written_instead, written_length


def test_what_an_encoding_writes_counts_as_one_and_its_escapes_at_their_length() -> None:
    assert written_length("caf\u00e9", "latin-1") == 4
    assert written_length("caf\u00e9", "ascii") == 7  # caf\xe9
    assert written_length("\u2500\U0001f600", "ascii") == 6 + 10
    assert written_length("\u2500\U0001f600", "utf-8") == 2
    assert written_length("\ud800", "ascii") == 6 and written_length("\ud800", "utf-8") == 1  # U+FFFD
    assert written_length("s\udce9", "ascii") == 2  # a byte that did not decode, written back as it was


def test_a_cut_never_splits_an_escape_and_stays_within_the_width() -> None:
    text = "ab\u2500cdefgh"
    assert cut(text, 8, "...", "ascii") == "ab..."  # \u2500 would end past the room of 5
    assert cut(text, 11, "...", "ascii") == "ab\u2500..."  # ab\u2500 is 8 long, as the room
    assert cut(text, 8, "...", "utf-8") == "ab\u2500cd..."
    assert cut("ab\u00e9", 3, "...", "latin-1") == "ab\u00e9"
    assert cut("ab\u00e9", 3, "...", "ascii") == "..."
    for width in range(1, 30):
        assert written_length(cut(text * 2, width, "...", "ascii"), "ascii") <= max(width, 3)


def test_the_escapes_counted_are_those_written() -> None:
    for char in ("\u00e9", "\u2500", "\U0001f600", "\ud800", "\udce9"):
        assert len(written_instead(char, "ascii")) == written_length(char, "ascii")
    assert written_instead("\ud800", "latin-1") == b"\\ud800"
    assert written_instead("\udce9", "ascii") == b"\xe9"
