"""A yes or no remembered per entry (a tree filter's verdict), one byte per line of the file.

A tree view's walk down a big session asks the filter of hundreds of thousands of assistant
messages and remembers each answer (the filter reads the message body). As an item of a dict each
that is most of what the walk holds; the entries read from the session's file are told apart by
their line instead, so the answers are kept one byte per line of that file. The others (made from
values, appended by this process, another file's) are kept by entry.
"""

from __future__ import annotations

from typing import Final

from ..format.entry import Entry
from ..format.scan import FileLineSource

# what one byte of EntryVerdicts._by_line says of the entry of its line
_NOT_ASKED: Final = 0
_NO: Final = 1
_YES: Final = 2
_VERDICT: Final[tuple[bool | None, ...]] = (None, False, True)
_NO_SOURCE: Final = object()  # EntryVerdicts._source until an entry of a file is kept


class EntryVerdicts:
    """A verdict (True / False) per entry, None for one never given. The entries of one file
    (the first :class:`FileLineSource` met) are kept by their line: each has a line of its own
    (a file reloaded is another source, its entries other objects)."""

    __slots__ = ("_by_line", "_others", "_source")

    def __init__(self) -> None:
        self._source: FileLineSource | object = _NO_SOURCE  # (an entry without one is kept by entry)
        self._by_line = bytearray()  # by the line of an entry of _source
        self._others: dict[Entry, bool] = {}  # the other entries (hashed by identity)

    def _line_of(self, entry: Entry) -> int:
        """The line ``entry`` is kept at (-1: kept by entry)."""
        line: int = entry.line  # (an int: what the scanner or Entry.of gave an entry of a file)
        return line if entry._source is self._source and line >= 0 else -1

    def get(self, entry: Entry) -> bool | None:
        """The verdict given for ``entry`` (None: none)."""
        # (_line_of inline: asked for every assistant message a walk passes, most of them kept)
        if entry._source is self._source:
            line = entry.line
            if line >= 0:
                by_line = self._by_line
                return _VERDICT[by_line[line]] if line < len(by_line) else None
        return self._others.get(entry)

    def put(self, entry: Entry, verdict: bool) -> None:
        """Remember ``verdict`` for ``entry``."""
        if self._source is _NO_SOURCE and type(entry._source) is FileLineSource:
            self._source = entry._source
        line = self._line_of(entry)
        if line < 0:
            self._others[entry] = verdict
            return
        by_line = self._by_line
        if line >= len(by_line):  # (grown by half at least: a walk meets the lines in order)
            by_line.extend(bytes(max(line + 1 - len(by_line), len(by_line) // 2)))
        by_line[line] = _YES if verdict else _NO

    def pop(self, entry: Entry) -> bool | None:
        """Forget the verdict given for ``entry``; it (None: none)."""
        line = self._line_of(entry)
        if line < 0:
            return self._others.pop(entry, None)
        verdict = self.get(entry)
        if verdict is not None:
            self._by_line[line] = _NOT_ASKED
        return verdict
