"""Text from a session as an editor shows it: one function for each kind of display.

What an editor shows of a session (a hover, a symbol's name, an inlay hint, a code lens, a
completion item, a code action's title, a diagnostic, an error's message) carries what a model, a
tool or a user wrote. An editor draws a raw ESC or BEL as nothing or as a box, and a line break
(CR, LF, U+2028) breaks what it draws on one line; a lone UTF-16 surrogate is an escape strict JSON
parsers reject. Every text an editor is sent goes through one of:

* :func:`shown_line`: a name, a label, a title, a message: control characters escaped as the
  terminal's ``check`` writes them (``\\x1b``, ``\\u2028``);
* :func:`shown_lines`: text shown as lines of its own (a message's text in a hover's code block):
  its line breaks and tabs kept, every other control character escaped;
* :func:`markdown_plain`: text in a line of Markdown (a hover's preview, an error), read as it is:
  on one line, every character that makes Markdown escaped.

Lone surrogates become U+FFFD in both (:func:`~pi_session_server.format.jstext.as_displayed`).
"""

from __future__ import annotations

import re

from ..format.jstext import as_displayed
from .terminal_text import one_terminal_line, terminal_lines

__all__ = ["markdown_plain", "shown_line", "shown_lines"]


def shown_line(text: str) -> str:
    """``text`` on one line of an editor."""
    return one_terminal_line(as_displayed(text))


def shown_lines(text: str) -> str:
    """``text`` as lines of an editor (a code block)."""
    return terminal_lines(as_displayed(text))


# What makes markdown of a line of text: emphasis, code, links and images, html, entities,
# strikethrough, tables, headings; and what clients make a link of: the "://" of a web address,
# the "." of "www." and the "@" of an e-mail address (GitHub's autolinks, which VS Code follows).
_MARKDOWN = re.compile(r"[\\`*_\[\]<>!&~|#@]|:(?=//)|(?<=www)\.", re.IGNORECASE)


def markdown_plain(text: str) -> str:
    """``text`` as it is in a line of Markdown: on that one line (a line break in it would start a
    heading, a list, a block of code), an image it names is not fetched, a link is not followed,
    and no emphasis or code passes for the Markdown's own."""
    return _MARKDOWN.sub(lambda m: "\\" + m.group(0), shown_line(text))
