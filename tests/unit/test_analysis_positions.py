"""Byte offsets in a line <-> editor columns in UTF-8, UTF-16 and UTF-32."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from pi_session_server.analysis import positions
from pi_session_server.analysis.positions import UTF8, UTF16, UTF32, to_column, to_offset

LINE = 'ab😀c数据\u2028x"é'
RAW = LINE.encode()


def test_known_columns() -> None:
    index = LINE.index("c")
    offset = len(LINE[:index].encode())  # 6 bytes: a, b, 4-byte emoji
    assert to_column(RAW, offset, UTF8) == 6
    assert to_column(RAW, offset, UTF16) == 4  # the emoji is a surrogate pair
    assert to_column(RAW, offset, UTF32) == 3
    end = len(RAW)
    assert to_column(RAW, end, UTF16) == len(LINE.encode("utf-16-le")) // 2
    assert to_column(RAW, end, UTF32) == len(LINE)


def test_columns_back_to_offsets() -> None:
    for i in range(len(LINE) + 1):
        offset = len(LINE[:i].encode())
        for enc in (UTF8, UTF16, UTF32):
            assert to_offset(RAW, to_column(RAW, offset, enc), enc) == offset


def test_columns_inside_a_character_and_past_the_end() -> None:
    emoji_start = 2
    assert to_offset(RAW, emoji_start + 2, UTF8) == emoji_start  # inside the emoji's bytes
    assert to_offset(RAW, 10_000, UTF16) == len(RAW)
    assert to_offset(b"abc", 99, UTF8) == 3


def test_an_offset_inside_a_character_is_the_column_of_its_start() -> None:
    emoji_start = 2
    for inside in (3, 4, 5):
        assert to_column(RAW, emoji_start + inside - 2, UTF8) == emoji_start
        assert to_column(RAW, emoji_start + inside - 2, UTF16) == 2
        assert to_column(RAW, emoji_start + inside - 2, UTF32) == 2
    e_acute = len(RAW) - 1  # its second byte
    assert to_column(RAW, e_acute, UTF16) == to_column(RAW, e_acute - 1, UTF16)
    assert to_column(RAW, e_acute, UTF8) == e_acute - 1
    surrogate = "a\ud800b".encode("utf-8", "surrogatepass")
    assert to_column(surrogate, 2, UTF16) == to_column(surrogate, 3, UTF32) == 1


def test_invalid_bytes_are_characters_of_their_own_in_a_file_read_with_replacement() -> None:
    raw = b"a\x80\x80\xc3\xa9\xc3b"  # two stray continuation bytes, an e-acute, a cut sequence
    assert [to_column(raw, i, UTF16, "replace") for i in range(len(raw) + 1)] == [0, 1, 2, 3, 3, 4, 5, 6]
    assert [to_column(raw, i, UTF8, "replace") for i in range(len(raw) + 1)] == [0, 1, 2, 3, 3, 5, 6, 7]


def test_lone_surrogates_from_an_editor() -> None:
    text = "a\ud800b"
    raw = text.encode("utf-8", "surrogatepass")
    assert to_column(raw, len(raw), UTF16) == 3
    assert to_offset(raw, 2, UTF16) == 4


@given(st.text(), st.data())
def test_round_trip_any_text(text: str, data: st.DataObject) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    i = data.draw(st.integers(0, len(text)))
    offset = len(text[:i].encode("utf-8", "surrogatepass"))
    assert to_column(raw, offset, UTF16) == len(text[:i].encode("utf-16-le", "surrogatepass")) // 2
    assert to_column(raw, offset, UTF32) == i
    for enc in (UTF8, UTF16, UTF32):
        assert to_offset(raw, to_column(raw, offset, enc), enc) == offset


@given(st.text(), st.data())
def test_any_byte_offset_is_the_column_of_the_character_it_falls_in(text: str, data: st.DataObject) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    offset = data.draw(st.integers(0, len(raw)))
    start = to_offset(raw, offset, UTF8)  # the start of the character it falls in
    for enc in (UTF8, UTF16, UTF32):
        assert to_column(raw, offset, enc) == to_column(raw, start, enc)


def test_a_column_far_into_a_long_line_with_an_emoji_is_found_without_a_loop_per_character() -> None:
    # A line of an image's megabytes of base64 and one emoji before it: the editor's UTF-16 column
    # far into it is the cursor there, asked at every move and keystroke. Converted one character
    # at a time in Python, that took a second per request in a 10 MB line. The lines of Python run
    # for one conversion are counted (deterministic, where a timing is not on a busy machine):
    # the same few for a line of any length.
    import sys
    from types import FrameType

    def python_lines_run(length: int) -> int:
        raw = ("see 😀 " + "x" * length).encode()
        column = to_column(raw, len(raw), UTF16)
        count = 0

        def trace(frame: FrameType, event: str, _arg: object) -> Callable[..., object] | None:
            nonlocal count
            if event == "line":
                count += 1
            return trace

        sys.settrace(trace)
        try:
            offset = to_offset(raw, column, UTF16)
            before_end = to_offset(raw, column - 1, UTF16)
        finally:
            sys.settrace(None)
        assert (offset, before_end) == (len(raw), len(raw) - 1)
        return count

    assert python_lines_run(100_000) == python_lines_run(10)


@given(st.binary(max_size=40), st.data())
def test_columns_back_to_offsets_in_a_line_with_invalid_bytes(raw: bytes, data: st.DataObject) -> None:
    # a file read from disk with invalid UTF-8 (its bytes kept, each invalid run a U+FFFD to the
    # editor): a column after such a run is the byte offset it came from, not one counted as if
    # the replacement character's own three bytes were in the line
    offset = data.draw(st.integers(0, len(raw)))
    for enc in (UTF16, UTF32):
        column = to_column(raw, offset, enc, "replace")
        start = to_offset(raw, column, enc, "replace")
        assert to_column(raw, start, enc, "replace") == column
        assert start <= offset


def test_a_column_after_invalid_bytes_is_the_offset_they_came_from() -> None:
    raw = b"a\x80\xc3\xa9b\xe2\x82c"  # a stray byte, an e-acute, a sequence cut short
    assert [to_offset(raw, column, UTF16, "replace") for column in range(7)] == [0, 1, 2, 4, 5, 7, 8]


def _whole_line_column(raw: bytes, offset: int, encoding: str, errors: str) -> int:
    """The column as the line's prefix decoded in one go gives it (what :func:`to_column` must equal)."""
    inside = offset < len(raw) and (raw[offset] & 0xC0) == 0x80
    if encoding == UTF8 and not inside:
        return offset
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    text = decoder.decode(raw[:offset], final=not inside)
    if encoding == UTF8:
        return offset - len(decoder.getstate()[0])
    if encoding == UTF32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@given(
    st.lists(
        st.sampled_from([b"a", b"\x80", b"\xc3\xa9", b"\xe2\x82", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80"])
    ),
    st.data(),
)
def test_a_line_counted_in_pieces_has_the_columns_of_the_whole_line(
    parts: list[bytes], data: st.DataObject
) -> None:
    # pieces of a few bytes, so that they split the line everywhere its characters allow
    raw = b"".join(parts)
    offset = data.draw(st.integers(0, len(raw)))
    with patch.object(positions, "_PIECE", data.draw(st.integers(1, 9))):
        for errors in ("replace", "surrogatepass"):
            for enc in (UTF8, UTF16, UTF32):
                try:
                    expected = _whole_line_column(raw, offset, enc, errors)
                except UnicodeDecodeError:  # invalid bytes in a text from an editor: never sent
                    continue
                assert to_column(raw, offset, enc, errors) == expected


def test_the_end_of_a_long_line_after_one_emoji_is_counted_without_decoding_it_whole() -> None:
    # an image's megabytes of base64 after one non-ASCII character: the range of the line's
    # symbol and the place of its inlay hint need the column of its end, on every request
    raw = ("a screenshot 😀 " + "QUJD" * 1_000_000).encode()
    searched: list[int] = []
    astral = positions._ASTRAL

    class Recording:
        def search(self, text: str) -> object:
            searched.append(len(text))
            return astral.search(text)

        def findall(self, text: str) -> list[str]:
            searched.append(len(text))
            return astral.findall(text)

    with patch.object(positions, "_ASTRAL", Recording()):
        column = to_column(raw, len(raw), UTF16)
    assert column == len(raw.decode().encode("utf-16-le")) // 2
    assert max(searched) < len(raw) // 10


def test_a_column_inside_a_character_is_its_start_in_every_encoding() -> None:
    emoji_start = 2
    assert to_offset(RAW, emoji_start + 1, UTF16) == emoji_start  # between the surrogate pair's halves
    for inside in (1, 2, 3):
        assert to_offset(RAW, emoji_start + inside, UTF8) == emoji_start
    assert to_offset(RAW, emoji_start + 2, UTF16) == emoji_start + 4  # (after the pair: after the emoji)
