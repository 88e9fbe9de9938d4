"""What ``pi-session check`` finds in one file: the language server's diagnostics of the file read
from disk, placed in characters. Imported only when a file is analysed (commands/check.py prints
what it kept of a file unchanged since without it)."""

from __future__ import annotations

from ..analysis.diagnostics import Diagnostic, document_diagnostics
from ..analysis.document import SessionDocument
from ..analysis.positions import UTF32, to_column
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
    columns in characters (the bytes of the lines a problem is on are read again to count them)."""
    doc, diagnostics, failure = check_file(path, pi, end)
    if doc is None:
        return FileReport([], failure)
    findings = []
    for d in diagnostics:
        start, end = _columns(doc, d)
        findings.append(Finding(d.line + 1, start, end, d.severity.name.lower(), d.code, d.message))
    return FileReport(findings, None)


def _columns(doc: SessionDocument, d: Diagnostic) -> tuple[int, int]:
    raw = doc.lines[d.line].raw
    return to_column(raw, d.start, UTF32, doc.errors) + 1, to_column(raw, d.end, UTF32, doc.errors) + 1
