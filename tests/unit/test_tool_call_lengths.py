"""A tool call's rendering is cut and marked ``...`` by its length as pi counts it: JS string
lengths, in UTF-16 code units (pi's ``formatToolCall``: ``rawCmd.length > 50``,
``JSON.stringify(args).length > 40``), where a character beyond the BMP counts two."""

from __future__ import annotations

import pytest

from pi_session_server.session.preview_text import utf16_longer
from pi_session_server.session.tool_call_text import format_tool_call

EMOJI = "\U0001f600"  # two UTF-16 units


@pytest.mark.parametrize(
    ("name", "arguments", "shown"),
    [
        # 60 units: cut after 25 emoji (50 units), and marked
        ("bash", {"command": EMOJI * 30}, "[bash: " + EMOJI * 25 + "...]"),
        # 50 units: whole, not marked
        ("bash", {"command": EMOJI * 25}, "[bash: " + EMOJI * 25 + "]"),
        # {"q":"...."} of 44 units: its first 40 (6 + 17 emoji), marked
        ("mcp", {"q": EMOJI * 18}, '[mcp: {"q":"' + EMOJI * 17 + "...]"),
        # of 40 units: whole, not marked
        ("mcp", {"q": EMOJI * 16}, '[mcp: {"q":"' + EMOJI * 16 + '"}]'),
        ("bash", {"command": "x" * 51}, "[bash: " + "x" * 50 + "...]"),
        ("bash", {"command": "é" * 50}, "[bash: " + "é" * 50 + "]"),
    ],
)
def test_a_calls_rendering_is_marked_cut_by_its_length_in_utf16_units(
    name: str, arguments: dict[str, str], shown: str
):
    assert format_tool_call(name, arguments, "/home/u") == shown


def test_utf16_longer_counts_as_js_length():
    for text in ["", "a" * 10, "é" * 10, EMOJI * 5, "a" + EMOJI * 5, EMOJI * 6, "\ud800" * 11]:
        for limit in range(0, 14):
            assert utf16_longer(text, limit) == (len(text.encode("utf-16-le", "surrogatepass")) // 2 > limit)
