"""The problems of a document, as the client takes them.

A client that pulls them (``textDocument/diagnostic``) gets them that way only; the others get
``publishDiagnostics``, debounced. A big document (``language_documents.QUICK_OPEN_CHARS``) is
published in two steps: its envelope problems at once, then the complete list. Each document's
problems are found once a version, and made into the JSON values they are sent as once.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from pi_session_server.analysis.diagnostics import Diagnostic, document_diagnostics, first_pass_diagnostics
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.render.editor_text import shown_line

from .language_conversions import LspConversions
from .language_document_state import DocState, still_current
from .workers import CancelToken, pausing

if TYPE_CHECKING:
    from .app import PiSessionServer

SOURCE = "pi-session"

#: seconds between two diagnostics publications of one document (the first one goes out at once)
DEBOUNCE = 0.05


class DocumentDiagnostics:
    """Finding, publishing and answering pulls of the documents' problems (on their workers)."""

    def __init__(self, server: PiSessionServer, convert: LspConversions) -> None:
        self.server = server
        self.convert = convert
        self.debounce = DEBOUNCE

    def client_pulls(self) -> bool:
        """The client asks for diagnostics (``textDocument/diagnostic``) and so is not sent them."""
        try:
            caps = self.server.client_capabilities
        except AttributeError:  # not initialized
            return False
        return caps.text_document is not None and caps.text_document.diagnostic is not None

    def pushes(self, state: DocState) -> bool:
        """Diagnostics of this document go out as ``publishDiagnostics``: the client does not pull
        them, or it never opened the document (read from disk: nothing would ask)."""
        return state.from_disk or not self.client_pulls()

    def refresh_pulled_diagnostics(self) -> None:
        """Tell a client that pulls the diagnostics to pull them again."""
        try:
            workspace = self.server.client_capabilities.workspace
        except AttributeError:
            return
        if (
            workspace is not None
            and workspace.diagnostics is not None
            and workspace.diagnostics.refresh_support
        ):
            self.server.lsp.workspace_diagnostic_refresh(None)

    def diagnostics(self, state: DocState) -> list[Diagnostic]:
        doc = state.opened()
        cache = state.diagnostics_cache
        if cache is not None and cache[0] == doc.version:
            return cache[1]
        found = document_diagnostics(doc, lambda: still_current(state))
        state.diagnostics_cache = (doc.version, found)
        return found

    def lsp_diagnostic(
        self,
        state: DocState,
        d: Diagnostic,
        related_ranges: dict[tuple[int, int, int], types.Range] | None = None,
    ) -> types.Diagnostic:
        """``related_ranges``: the ranges of related lines converted already in this pass (the
        first lines of a large duplicate group are related to each of its members)."""
        doc = state.opened()
        ranges = {} if related_ranges is None else related_ranges
        related = []
        for r in d.related:
            if r.line < doc.line_count:
                where = ranges.get((r.line, r.start, r.end))
                if where is None:
                    where = ranges[r.line, r.start, r.end] = self.convert.range(state, r.line, r.start, r.end)
                related.append(
                    types.DiagnosticRelatedInformation(
                        types.Location(state.uri, where), shown_line(r.message)
                    )
                )
        return types.Diagnostic(
            range=self.convert.range(state, d.line, d.start, d.end),
            message=shown_line(d.message),
            severity=types.DiagnosticSeverity(int(d.severity)),
            code=d.code,
            source=SOURCE,
            related_information=related or None,
        )

    def lsp_diagnostics(self, state: DocState) -> list[dict[str, Any]]:
        """The document's diagnostics as the JSON values they are sent as (cached per version)."""
        doc = state.opened()
        cache = state.lsp_cache
        if cache is not None and cache[0] == doc.version:
            return cache[1]
        made = []
        related_ranges: dict[tuple[int, int, int], types.Range] = {}
        for n, d in enumerate(self.diagnostics(state)):
            if n % CHECK_EVERY == 0:
                still_current(state)  # (a damaged file has one or more a line)
            made.append(self.lsp_diagnostic(state, d, related_ranges))
        found: list[dict[str, Any]] = self.convert.unstructured(made)
        state.lsp_cache = (doc.version, found)
        return found

    def publish(self, state: DocState, first_pass: bool = False) -> None:
        """Publish the diagnostics of ``state``; ``first_pass``: only those its envelopes decide (a
        provisional document stays provisional; its complete list follows)."""
        doc = state.opened()
        state.last_publish = time.monotonic()
        state.published = (doc.version, state.version)
        if not self.pushes(state):
            return
        if first_pass:
            related_ranges: dict[tuple[int, int, int], types.Range] = {}
            found = [self.lsp_diagnostic(state, d, related_ranges) for d in first_pass_diagnostics(doc)]
            self.send(state, self.convert.unstructured(found))
        else:
            # the document is as the job publishing wants it: the short requests asked meanwhile
            # (a hover) are answered at the pauses of the long search for its problems
            with pausing():
                made = self.lsp_diagnostics(state)
            self.send(state, made)

    def send(self, state: DocState, diagnostics: list[Any]) -> None:
        params: dict[str, Any] = {"uri": state.uri, "diagnostics": diagnostics}
        if state.version is not None:
            params["version"] = state.version
        self.server.connection.notify(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params, displayed=True)

    def schedule_publish(self, state: DocState) -> None:
        """Publish at once if the last publication is older than the debounce interval, else once
        at the end of it (every change in between is folded into that one publication)."""
        if not self.pushes(state) or state.publish_pending:
            return
        wait = state.last_publish + self.debounce - time.monotonic()
        if wait <= 0:
            self.publish(state)
            return
        state.publish_pending = True

        def publish_job(_token: CancelToken) -> None:
            state.publish_pending = False
            if (
                not state.closed
                and state.doc is not None
                and state.published != (state.doc.version, state.version)
            ):
                self.publish(state)

        self.server.loop_call(
            lambda: asyncio.get_running_loop().call_later(
                wait, lambda: state.queue.submit(publish_job, interruptible=False)
            )
        )

    def pull(self, state: DocState, params: types.DocumentDiagnosticParams) -> Any:
        doc = state.opened()
        result_id = f"{state.opening}:{doc.version}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return {"kind": "full", "resultId": result_id, "items": self.lsp_diagnostics(state)}
