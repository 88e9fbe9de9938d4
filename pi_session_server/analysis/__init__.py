"""What a reader should know about a session file: diagnostics, hovers, symbols, links, repairs.

Domain only (no pygls/lsprotocol): positions are (line, byte offset in the line's UTF-8) and
:mod:`.positions` converts them to an editor's columns. Entry point: :class:`SessionDocument`.
"""

from .diagnostics import Diagnostic, document_diagnostics
from .document import SessionDocument

__all__ = ["Diagnostic", "SessionDocument", "document_diagnostics"]
