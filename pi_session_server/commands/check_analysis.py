"""What ``pi-session check`` finds in one file: the language server's diagnostics of the file read
from disk, placed in characters. Imported only when a file is analysed (commands/check.py prints
what it kept of a file unchanged since without it)."""

from __future__ import annotations

from ..analysis.diagnostics import Diagnostic, document_diagnostics
from ..analysis.document import SessionDocument
from ..analysis.lone_cr import LoneCarriageReturns, editor_line_end, lone_crs_of_path, lsp_position
from ..analysis.positions import UTF16, UTF32, to_column
from ..session.releases import DEFAULT_PI
from ._common import open_failure, special_file_problem
from .check_report import FileReport, Finding


def check_file(
    path: str, pi: str = DEFAULT_PI, end: int | None = None
) -> tuple[SessionDocument | None, list[Diagnostic], str | None]:
    """The analysed document and its diagnostics as pi release ``pi`` reads the file, or the reason
    the file could not be read. ``end``: read the file as if it ended there (what it held when the
    command started: a file another program appends to faster than it is read is checked to an end)."""
    problem = special_file_problem(path)
    if problem is not None:
        return None, [], problem
    try:
        # lines keep where they are, not their bytes: a multi-GB session in the memory of its facts
        doc = SessionDocument.from_file(path, pi=pi, end=end)
        return doc, document_diagnostics(doc), None
    except OSError as err:
        return None, [], open_failure(path, err)


def report_file(path: str, pi: str = DEFAULT_PI, *, end: int | None = None) -> FileReport:
    """:func:`check_file` as what ``check`` prints: each diagnostic's line and columns 1-based, the
    columns in characters (the bytes of the lines a problem is on are read again to count them),
    and its range as the language server gives it (the file searched for lone CRs when it has
    problems)."""
    doc, diagnostics, failure = check_file(path, pi, end)
    if doc is None:
        return FileReport([], failure)
    lone_crs = lone_crs_of_path(path, end) if diagnostics else LoneCarriageReturns()
    findings = []
    for d in diagnostics:
        raw = doc.lines[d.line].raw  # (read from the file: once)
        start, end_column = _columns(doc, d, raw)
        lsp_start = _lsp_position(doc, lone_crs, d.line, raw, d.start)
        lsp_end = _lsp_position(doc, lone_crs, d.line, raw, d.end)
        severity = d.severity.name.lower()
        findings.append(
            Finding(d.line + 1, start, end_column, severity, d.code, d.message, *lsp_start, *lsp_end)
        )
    return FileReport(findings, None)


def _columns(doc: SessionDocument, d: Diagnostic, raw: bytes | None = None) -> tuple[int, int]:
    if raw is None:
        raw = doc.lines[d.line].raw
    return to_column(raw, d.start, UTF32, doc.errors) + 1, to_column(raw, d.end, UTF32, doc.errors) + 1


def _lsp_position(
    doc: SessionDocument, lone_crs: LoneCarriageReturns, line: int, raw: bytes, offset: int
) -> tuple[int, int]:
    offset = min(offset, editor_line_end(raw, last=line + 1 >= doc.line_count))
    return lsp_position(lone_crs, line, raw, offset, UTF16, doc.errors)
