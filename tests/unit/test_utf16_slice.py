"""``utf16_slice`` is JavaScript's ``text.slice(0, limit)``: counted in UTF-16 code units (an astral
character is two, and a cut may leave half of one), whatever the length of the text after the cut."""

from __future__ import annotations

import random

from pi_session_server.session.preview_text import utf16_slice


def js_slice(text: str, limit: int) -> str:
    """The reference: the whole text as UTF-16 units, the first ``limit`` of them (the text itself
    when it has no more)."""
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * limit:
        return text
    return units[: 2 * limit].decode("utf-16-le", "surrogatepass")


def test_long_texts_are_cut_as_javascript_cuts_them() -> None:
    rng = random.Random(7)
    alphabet = ["a", " ", "é", "中", "\U0001f600", "\ud800", "\udc00"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 900)))
        for limit in (1, 2, 40, 50, 199, 200):
            assert utf16_slice(text, limit) == js_slice(text, limit), (text, limit)


def test_a_cut_through_an_astral_character_keeps_its_first_half() -> None:
    text = "x" * 199 + "\U0001f600" + "y" * 1000
    assert utf16_slice(text, 200) == "x" * 199 + "\ud83d"
    assert utf16_slice("\U0001f600" * 300, 200) == "\U0001f600" * 100


def test_a_long_text_with_a_plain_head_is_cut_as_javascript_cuts_it() -> None:
    """A text whose first ``limit`` characters are ASCII (one unit each) is cut there, whatever
    follows."""
    for tail in ("", "é", "\U0001f600", "\ud800", "中" * 300, "x" * 1000):
        for head in ("a" * 200, "a" * 199, "a" * 201, " " * 250):
            text = head + tail
            for limit in (1, 50, 200):
                assert utf16_slice(text, limit) == js_slice(text, limit), (text, limit)
