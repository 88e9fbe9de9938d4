"""The editor's side of the document-sync fuzz (test_language_sync_fuzz.py): its text, its lines
as the LSP counts them, its positions, and the random edits a demanding user, an editor and pi
make of a session.

The text is a Python ``str``; lines end at ``"\\r\\n"``, ``"\\r"`` or ``"\\n"`` (the LSP's line
breaks; U+2028 and U+0085 are characters). A column counts the negotiated encoding's units; a
column past a line's end is its end; a column inside a character is that character's start (the
server's rule, server/positions.py)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import builders as S

_BREAK = re.compile("\r\n|\r|\n")


def units(char: str, encoding: str) -> int:
    """How many of ``encoding``'s units ``char`` takes (a lone surrogate: one UTF-16 unit, and the
    3 bytes surrogatepass gives it, as the server counts it)."""
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return 2 if ord(char) > 0xFFFF else 1
    return 1


def lsp_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) index of each LSP line's content in ``text``, its line break left out."""
    spans = []
    start = 0
    for found in _BREAK.finditer(text):
        spans.append((start, found.start()))
        start = found.end()
    spans.append((start, len(text)))
    return spans


def width(text: str, span: tuple[int, int], encoding: str) -> int:
    return sum(units(c, encoding) for c in text[span[0] : span[1]])


def index_of(text: str, line: int, column: int, encoding: str) -> int:
    """The index in ``text`` the client position (``line``, ``column``) names (a line past the
    last one: the text's end)."""
    spans = lsp_lines(text)
    if line >= len(spans):
        return len(text)
    start, end = spans[line]
    counted = 0
    for at in range(start, end):
        counted += units(text[at], encoding)
        if counted > column:
            return at
    return end


@dataclass(frozen=True)
class Change:
    """One content change: a range (``None``: the whole document) and its new text."""

    start: tuple[int, int] | None
    end: tuple[int, int] | None
    text: str

    def applied(self, text: str, encoding: str) -> str:
        if self.start is None or self.end is None:
            return self.text
        s = index_of(text, *self.start, encoding)
        e = index_of(text, *self.end, encoding)
        s, e = min(s, e), max(s, e)  # (a range backwards is taken start first, as editors' libraries do)
        return text[:s] + self.text + text[e:]


#: the characters an editor's line counting and column counting may get wrong: emoji (surrogate
#: pairs), a two-byte character, line breaks of every kind, separators JSON keeps in strings, a
#: lone surrogate (an editor holds one after a paste cut in a pair), JSON's own punctuation
ODD = [
    "😀",
    "é",
    "\n",
    "\r\n",
    "\r",
    "\u2028",
    "\u2029",
    "\u0085",
    "\ud83d",
    '"',
    "}",
    "{",
    ",",
    "\\",
    "x",
    " ",
]

KINDS = ("user", "call", "result", "label", "crlf", "lone-cr", "wide", "torn", "dangling", "duplicate")


def entry_line(rnd: random.Random, n: int, parent: str) -> str:
    """A session line as pi writes it, or as a crash, an editor or a user leaves it."""
    kind = rnd.choice(KINDS)
    entry = f"e{n}"
    if kind == "user":
        return S.user(entry, parent, rnd.choice(["hi", "one\u2028two é", "😀😀 cut", "a\u0085b"]))
    if kind == "call":
        return S.assistant(entry, parent, calls=((f"t{n}", "read", {}),))
    if kind == "result":
        return S.tool_result(entry, parent, f"t{n - 1}", "done 😀\r\nmore")
    if kind == "label":
        return S.label(entry, parent, parent, "mark 😀")
    if kind == "crlf":
        return S.user(entry, parent, "windows") + "\r"
    if kind == "lone-cr":  # a raw CR inside a string (not JSON), or between tokens (white space)
        line = S.user(entry, parent, "a\\rb")
        return (
            line.replace("\\\\r", "\r")
            if rnd.random() < 0.5
            else line.replace(',"parentId"', ',\r"parentId"')
        )
    if kind == "wide":
        return S.user(entry, parent, "😀 one\u2028two\u0085three é" * rnd.randint(1, 3))
    if kind == "torn":
        whole = S.user(entry, parent, "torn")
        return whole[: rnd.randint(1, len(whole) - 1)]
    if kind == "dangling":
        return S.user(entry, "nowhere")
    return S.user("e1", parent)  # "duplicate": an id taken again


def session_text(rnd: random.Random, entries: int) -> tuple[str, int]:
    """A session's text and the number its next entry takes."""
    lines = [S.header(), S.user("e1", None)]
    for n in range(2, entries + 2):
        lines.append(entry_line(rnd, n, f"e{n - 1}"))
    return "".join(line + "\n" for line in lines), entries + 2


class Editing:
    """Random edits of one document, as ranges in ``encoding``."""

    def __init__(self, rnd: random.Random, encoding: str, next_entry: int) -> None:
        self.rnd = rnd
        self.encoding = encoding
        self.next_entry = next_entry

    def position(self, text: str) -> tuple[int, int]:
        """A client position: often inside a character pair or past the line's end, now and then
        on the line after the last one (the text's end)."""
        spans = lsp_lines(text)
        if self.rnd.random() < 0.03:
            return len(spans), self.rnd.randint(0, 3)
        line = self.rnd.randrange(len(spans))
        return line, self.rnd.randint(0, width(text, spans[line], self.encoding) + 2)

    def fragment(self, text: str) -> str:
        roll = self.rnd.random()
        if roll < 0.45:
            return "".join(self.rnd.choice(ODD) for _ in range(self.rnd.randint(1, 4)))
        if roll < 0.6:
            return ""
        if roll < 0.8:  # a paste of a piece of the text
            at = self.rnd.randrange(len(text) + 1)
            return text[at : at + self.rnd.randint(1, 120)]
        return self.new_line() + "\n"

    def new_line(self) -> str:
        self.next_entry += 1
        return entry_line(self.rnd, self.next_entry, f"e{self.next_entry - 1}")

    def change(self, text: str) -> Change:
        """One content change of ``text``."""
        roll = self.rnd.random()
        if roll < 0.04:
            return Change(None, None, self.mutated(text))
        if roll < 0.2:  # pi appends a line (maybe in two writes)
            end = lsp_lines(text)[-1]
            at = (len(lsp_lines(text)) - 1, width(text, end, self.encoding))
            line = self.new_line() + "\n"
            if self.rnd.random() < 0.3:
                line = line[: self.rnd.randint(1, len(line))]
            return Change(at, at, line)
        first, second = self.position(text), self.position(text)
        if index_of(text, *second, self.encoding) < index_of(text, *first, self.encoding):
            first, second = second, first
        if roll < 0.35:
            second = first
        return Change(first, second, self.fragment(text))

    def mutated(self, text: str) -> str:
        """A whole new text: this one edited somewhere (a formatter, a reload)."""
        at = self.rnd.randrange(len(text) + 1)
        return text[:at] + self.fragment(text) + text[at + self.rnd.randint(0, 40) :]

    def grown(self, text: str) -> str:
        """``text`` with lines appended, as pi appends them (the reload of a file pi wrote to)."""
        added = "".join(self.new_line() + "\n" for _ in range(self.rnd.randint(1, 3)))
        if not text.endswith("\n") and self.rnd.random() < 0.7:
            added = "\n" + added
        return text + added
