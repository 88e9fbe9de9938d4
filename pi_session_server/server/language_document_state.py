"""A document of the language server and what the jobs on its queue keep of it (:class:`DocState`),
and the check by which a long answer about the whole document learns it was overtaken by a change
(:func:`still_current`)."""

from __future__ import annotations

import itertools
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from pi_session_server.analysis.diagnostics import Diagnostic
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.analysis.lone_cr import LoneCarriageReturns

from .errors import PiRpcError
from .locations import FileKeys
from .workers import SerialQueue, answer_urgent_jobs


@dataclass(frozen=True, slots=True)
class KeptOutline:
    """A documentSymbol answer and what it was made of: the analysis (not held: a reload replaces
    it, and its version counts again), its version, and the leaf the outline marks."""

    doc: weakref.ref[SessionDocument]
    version: int
    leaf: LineInfo | None
    answer: msgspec.Raw


@dataclass(eq=False)
class DocState:
    """One document and its queue. Everything but ``queue``, ``closed``, ``changes_received`` and
    ``resting`` is read and written by jobs on that queue only."""

    uri: str
    path: str | None
    queue: SerialQueue
    # what the file at ``path`` is (locations.file_keys, set whole by a request's job; read on the
    # loop too): a session held on it through another spelling is found by it
    keys: FileKeys = frozenset()
    doc: SessionDocument | None = None  # None until opened (or when reading it from disk failed)
    version: int | None = None
    from_disk: bool = False
    # a lone CR starts a line on the wire (see lone_cr): not in a document read from disk, which
    # keeps pi's lines, nor for a client whose lines end at "\n" only (ServerOptions)
    lone_cr_ends_line: bool = True
    # the documents read from disk (their URIs) that this one's opening replaced: the file's
    # problems are shown from disk again when the editor closes it
    replaced_disk_reads: tuple[str, ...] = ()
    failure: PiRpcError | None = None  # reading it from disk was refused: every request answers this
    closed: bool = False
    # the editor's changes received, counted on the loop as each arrives (jobs read it): a request
    # asked before the last of them is about a text the editor no longer shows
    changes_received: int = 0
    # while the queue answers a request about the whole document: the changes received before it
    # was asked (see still_current)
    answering_after: int | None = None
    disk_key: tuple[int, int, int] | None = None  # (inode, size, mtime) of a file followed on disk
    disk_tail: bytes = b""  # its last bytes as loaded (see language_disk_reads._same_tail)
    refreshing: bool = False  # a refresh from disk is queued
    # (on the loop) a file read from disk let go of its analysis, nobody having asked about it for
    # a while: it is read again when it changes, or when a request names it (see DiskDocuments._rest)
    resting: bool = False
    lone_cr: LoneCarriageReturns = field(default_factory=LoneCarriageReturns)
    last_publish: float = 0.0
    publish_pending: bool = False  # a debounced publication is on its way
    # (doc.version, version) last published: a change that leaves the text as it was still needs
    # a publication naming its version
    published: tuple[int, int | None] = (-1, None)
    diagnostics_cache: tuple[int, list[Diagnostic]] | None = None
    lsp_cache: tuple[int, list[dict[str, Any]]] | None = None
    outline: KeptOutline | None = (
        None  # the last documentSymbol answer (see DocumentAnswers.document_symbols)
    )
    # {repair key: (the line it was decided on, whether its image can be moved out)}: code actions
    # are asked at every cursor move, and the answer reads megabytes of base64; it holds while the
    # line is the same (an edit gives a changed line new facts)
    image_verdicts: dict[tuple[Any, ...], tuple[LineInfo, bool]] = field(default_factory=dict)
    last_access: float = field(default_factory=time.monotonic)
    # which opening of a document this is, in the process: a pull's resultId holds it, as every
    # opening's versions start again (an object's id() is used again once it is freed)
    opening: int = field(default_factory=itertools.count().__next__)

    def opened(self) -> SessionDocument:
        if self.failure is not None:
            raise self.failure
        assert self.doc is not None
        return self.doc


def still_current(state: DocState) -> None:
    """Raise ContentModified when the request about the whole document being answered was
    overtaken by a change (see ``LanguageDocuments.ask``); its long loops call this now and then, so a
    change typed stops the work for the text it replaced. The requests about a position asked
    meanwhile (a hover) are answered first, here: they need not wait for the whole answer."""
    answer_urgent_jobs()
    if state.answering_after is not None and state.changes_received != state.answering_after:
        raise JsonRpcException(
            code=types.LSPErrorCodes.ContentModified,
            message="The document changed after this request: ask again",
        )
