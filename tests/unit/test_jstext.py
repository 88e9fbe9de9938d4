"""JS trim set and line splitting (docs/FORMAT.md §2.4), checked against Node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_session_server.format.jstext import (
    JS_WHITESPACE,
    is_js_blank,
    js_trim,
    split_listing_lines,
    split_load_lines,
)

CORPUS = json.loads((Path(__file__).parent / "data" / "js_text_corpus.json").read_text())


def test_trim_matches_node() -> None:
    assert [(s, js_trim(s)) for s, _ in CORPUS["trim"]] == [tuple(pair) for pair in CORPUS["trim"]]


def test_trim_set_differs_from_python_strip() -> None:
    assert js_trim("\ufeff x \ufeff") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"
    assert js_trim("\u200bx") == "\u200bx"  # zero-width space is not whitespace
    assert set(JS_WHITESPACE) == {chr(c) for c in range(0x110000) if js_trim(f"a{chr(c)}") == "a"}


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        ("", True),
        (" \t\r\n", True),
        ("\ufeff\u00a0\u3000", True),
        ("\x85", False),
        ("\x1c", False),
        (" x ", False),
    ],
)
def test_is_js_blank(text: str, blank: bool) -> None:
    assert is_js_blank(text) is blank
    assert is_js_blank(text) is (js_trim(text) == "")


def test_listing_lines_match_node_readline() -> None:
    for text, lines in CORPUS["lines"]:
        assert split_listing_lines(text) == lines, repr(text)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("a\r\nb\r\n", ["a\r", "b\r"]),
        ("a\rb", ["a\rb"]),
        ("a\n\n", ["a", ""]),
        ("x\u2028y\u0085z\x0bw\x0c\x1c\x1d\x1e", ["x\u2028y\u0085z\x0bw\x0c\x1c\x1d\x1e"]),
    ],
)
def test_load_lines_split_on_newline_only(text: str, lines: list[str]) -> None:
    assert split_load_lines(text) == lines
