"""The analysis's places and answers in the client's terms.

The analysis works in byte offsets within a session line; every answer converts with the position
encoding negotiated at ``initialize`` (UTF-16 for VS Code, UTF-8 for Neovim, or UTF-32) and with the
LSP's line breaks (:mod:`~pi_session_server.analysis.lone_cr`: a lone "\\r" starts a line on the
wire; documents read from disk, which the editor does not show, keep pi's lines, and so does every
document of a client whose lines end at "\\n" only: ``initializationOptions.lineBreaks``). An answer
goes out as the JSON it is sent as, made on the document's worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from lsprotocol import converters, types

from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lone_cr import editor_line_end, lsp_position
from pi_session_server.analysis.positions import UTF8, UTF16, UTF32, to_offset
from pi_session_server.format.jsjson import encode_value

from .language_document_state import DocState

if TYPE_CHECKING:
    from .app import PiSessionServer


class LspConversions:
    """Positions and ranges between a document's analysis and the client, and answers as the JSON
    values they are sent as."""

    def __init__(self, server: PiSessionServer) -> None:
        self.server = server
        self._converter = converters.get_converter()

    @property
    def encoding(self) -> str:
        try:
            value = self.server.workspace.position_encoding
        except RuntimeError:  # not initialized
            return UTF16
        text = getattr(value, "value", value)
        return text if text in (UTF8, UTF16, UTF32) else UTF16

    def position(self, state: DocState, line: int, offset: int, raw: bytes | None = None) -> types.Position:
        """``raw``: the line's bytes when the caller has them (a line of a file is read again
        each time they are asked for)."""
        return types.Position(*self.place(state, line, offset, raw))

    def place(self, state: DocState, line: int, offset: int, raw: bytes | None = None) -> tuple[int, int]:
        """:meth:`position` as (line, character): for an answer made as JSON values."""
        doc = state.opened()
        if line >= doc.line_count:
            line = doc.line_count - 1
            offset = len(doc.lines[line].raw)
            raw = None
        if raw is None:
            raw = doc.lines[line].raw
        offset = min(offset, _editor_line_end(doc, line, raw))
        return lsp_position(state.lone_cr, line, raw, offset, self.encoding, doc.errors)

    def range(
        self, state: DocState, line: int, start: int, end: int, end_line: int | None = None
    ) -> types.Range:
        last = line if end_line is None else end_line
        return types.Range(self.position(state, line, start), self.position(state, last, end))

    def line_of(self, state: DocState, lsp_line: int) -> int:
        """The session line an LSP line is part of."""
        return state.lone_cr.from_lsp(max(lsp_line, 0))[0]

    def offset(self, state: DocState, pos: types.Position) -> tuple[int, int]:
        """(line, byte offset) of a client position, clamped to the document."""
        doc = state.opened()
        line, start, end = state.lone_cr.from_lsp(max(pos.line, 0))
        if line >= doc.line_count:
            last = doc.line_count - 1
            return last, len(doc.lines[last].raw)
        raw = doc.lines[line].raw
        if end < 0:
            # to a client whose lines end at "\n" only, the CR of a CRLF is its line's last
            # character (Neovim shows it as ^M, and text typed after it goes after it), or not in
            # its line at all (a buffer whose lines all end in CRLF): a position past it is after it
            newline_only = self.server.options.lines_end_at_newline_only
            end = len(raw) if newline_only else _editor_line_end(doc, line, raw)
        return line, start + to_offset(raw[start:end], pos.character, self.encoding, doc.errors)

    def unstructured(self, value: Any) -> Any:
        """LSP values (lsprotocol objects) as the JSON values they are sent as."""
        return self._converter.unstructure(value)

    def encoded(self, value: Any) -> Any:
        """An LSP result (lsprotocol objects) as the JSON it is sent as, made on the worker (an
        answer made as JSON already is that)."""
        if isinstance(value, msgspec.Raw):
            return value
        return msgspec.Raw(encode_value(self._converter.unstructure(value), displayed=True))


def start_first(asked: types.Range) -> types.Range:
    """The range a client gave end first (a selection made upwards), start first."""
    start, end = asked.start, asked.end
    if (end.line, end.character) < (start.line, start.character):
        return types.Range(end, start)
    return asked


def _editor_line_end(doc: SessionDocument, line: int, raw: bytes) -> int:
    return editor_line_end(raw, last=line + 1 >= doc.line_count)
