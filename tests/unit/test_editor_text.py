"""Text from a session as an editor shows it (render/editor_text.py): in a line of Markdown, what
would make Markdown of it (or a link, in the clients' autolinks) is escaped."""

from __future__ import annotations

import pytest

from pi_session_server.render.editor_text import markdown_plain


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("see http://example.com/x", "see http\\://example.com/x"),
        ("see www.example.com and WWW.example.org", "see www\\.example.com and WWW\\.example.org"),
        ("mail me@example.com", "mail me\\@example.com"),
        (
            "![p](x.png) <b>&amp; *a* _b_ `c` ~d~ | #",
            "\\!\\[p\\](x.png) \\<b\\>\\&amp; \\*a\\* \\_b\\_ \\`c\\` \\~d\\~ \\| \\#",
        ),
        ("a\n\n# heading\u2028\x1b", "a\\\\x0a\\\\x0a\\# heading\\\\u2028\\\\x1b"),
        ("a\\b", "a\\\\b"),
        ("plain words, 3.5 (ok) - fine", "plain words, 3.5 (ok) - fine"),
    ],
)
def test_markdown_plain_escapes_what_makes_markdown(text: str, shown: str) -> None:
    assert markdown_plain(text) == shown
