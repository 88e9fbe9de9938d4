"""Text cut to a width as a terminal shows it written: the characters the output's encoding cannot
write, and control characters, come out as escapes (render/written_text.py), each counted at its
length and never cut in two; a wide character takes two columns, a combining mark none
(render/cells.py)."""

from __future__ import annotations

import random

from pi_session_server.render.cells import cells
from pi_session_server.render.glyphs import cut, cut_start
from pi_session_server.render.written_text import padded, written_instead, written_width, written_widths


def test_what_an_encoding_writes_counts_as_one_and_its_escapes_at_their_length() -> None:
    assert written_width("caf\u00e9", "latin-1") == 4
    assert written_width("caf\u00e9", "ascii") == 7  # caf\xe9
    assert written_width("\u2500\U0001f600", "ascii") == 6 + 10
    assert written_width("\ud800", "ascii") == 6 and written_width("\ud800", "utf-8") == 1  # U+FFFD
    assert written_width("s\udce9", "ascii") == 2  # a byte that did not decode, written back as it was


def test_control_characters_count_at_their_escape_s_length_in_any_encoding() -> None:
    for encoding in ("utf-8", "ascii", "latin-1", None):
        assert written_width("a\x1bb\x85\u2028", encoding) == 1 + 4 + 1 + 4 + 6


def test_wide_characters_take_two_columns_and_combining_marks_none() -> None:
    assert [cells(char) for char in "a\u4e2d\uff21\U0001f600\u0301\u20dd"] == [1, 2, 2, 2, 0, 0]
    assert written_width("\u4e2d\u6587e\u0301", "utf-8") == 5
    assert written_width("\u4e2d", "ascii") == 6  # its escape, \u4e2d
    # counted at the most columns a terminal draws them: an emoji's selector, a flag's letters
    assert written_width("\u2764\ufe0f", None) == 2 and written_width("\U0001f1eb\U0001f1f7", None) == 4
    assert padded("\u4e2d", 4, "utf-8") == "\u4e2d  " and padded("\u4e2d", 8, "ascii") == "\u4e2d  "


def test_a_cut_never_splits_an_escape_and_stays_within_the_width() -> None:
    text = "ab\u2500cdefgh"
    assert cut(text, 8, "...", "ascii") == "ab..."  # \u2500 would end past the room of 5
    assert cut(text, 11, "...", "ascii") == "ab\u2500..."  # ab\u2500 is 8 long, as the room
    assert cut(text, 8, "...", "utf-8") == "ab\u2500cd..."
    assert cut("ab\u00e9", 3, "...", "latin-1") == "ab\u00e9"
    assert cut("ab\u00e9", 3, "...", "ascii") == "..."
    assert cut("ab\x1bcdef", 6, "...", "utf-8") == "ab..."  # \x1b is 4 columns: 6 past the room
    assert cut("ab\x1bcdef", 9, "...", None) == "ab\x1b..."
    for width in range(1, 30):
        for encoding in ("ascii", "utf-8"):
            shown = cut(text * 2 + "\x1b\u4e2de\u0301" * 3, width, "...", encoding)
            assert written_width(shown, encoding) <= width


def test_a_cut_counts_columns() -> None:
    assert cut("\u4e2d\u6587\u5b57\u7b26", 5, "\u2026") == "\u4e2d\u6587\u2026"
    assert cut("\u4e2d\u6587\u5b57\u7b26", 8, "\u2026") == "\u4e2d\u6587\u5b57\u7b26"
    assert cut("e\u0301" * 6, 6, "\u2026") == "e\u0301" * 6  # six columns
    assert cut("e\u0301" * 6 + "x", 6, "\u2026") == "e\u0301" * 5 + "\u2026"  # a mark kept with its letter


def test_dots_wider_than_the_width_are_cut_to_it() -> None:
    assert cut("a message", 1, "...") == "." and cut("a message", 2, "...") == ".."
    assert cut("a message", 1, "\u2026") == "\u2026" and cut("a", 1, "...") == "a"


def test_the_start_of_a_longer_text_ends_with_the_ellipsis_even_where_it_fits() -> None:
    assert cut("e\u0301" * 3, 6, "\u2026", more=True) == "e\u0301" * 3 + "\u2026"
    assert cut("abcdef", 6, "\u2026", more=True) == "abcde\u2026"
    assert cut("abc", 6, "\u2026") == "abc"


def test_a_cut_at_the_start_keeps_the_end() -> None:
    assert cut_start("/a/long/path/s.jsonl", 12, "...") == "...h/s.jsonl"
    assert cut_start("/dir/\u4e2d\u6587/s.jsonl", 12, "\u2026") == "\u2026\u6587/s.jsonl"
    assert cut_start("/dir/x\x1b/s.jsonl", 14, "\u2026", "utf-8") == "\u2026x\x1b/s.jsonl"
    assert cut_start("/dir/a\u0301b/s.jsonl", 10, "\u2026") == "\u2026b/s.jsonl"  # not a mark alone
    assert cut_start("short", 10, "\u2026") == "short"


def test_the_escapes_counted_are_those_written() -> None:
    for char in ("\u00e9", "\u2500", "\U0001f600", "\ud800", "\udce9"):
        assert len(written_instead(char, "ascii")) == written_width(char, "ascii")
    assert written_instead("\ud800", "latin-1") == b"\\ud800"
    assert written_instead("\udce9", "ascii") == b"\xe9"


def _cut_measuring_everything(text: str, width: int, ellipsis: str, encoding: str | None, more: bool) -> str:
    """:func:`cut` as its docstring says, every character of the text measured."""
    ellipsis = ellipsis[: max(0, width)]
    widths = written_widths(text, encoding)
    if not more and sum(widths) <= width:
        return text
    total, kept = 0, 0
    for w in widths:
        if total + w > width - len(ellipsis):
            break
        total += w
        kept += 1
    return text[:kept] + ellipsis


def test_a_long_text_is_cut_where_measuring_all_of_it_cuts_it() -> None:
    # (cut measures only the start of a long text when that decides the cut)
    rng = random.Random(7)
    alphabet = ["a", "Z", " ", "é", "漢", "字", "\u0301", "\u20dd", "\x07", "\t", "😀", "\ufe0f", "\udcff"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        width = rng.randrange(1, 30)
        for encoding in (None, "ascii", "latin-1"):
            for more in (False, True):
                for ellipsis in ("…", "..."):
                    expected = _cut_measuring_everything(text, width, ellipsis, encoding, more)
                    assert cut(text, width, ellipsis, encoding, more=more) == expected, repr(text)
