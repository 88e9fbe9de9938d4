"""What ``pi-session check`` reports of one file, and its results kept for a file unchanged since.

Analysing a big session reads and checks every line; a file that did not change since it was
checked the same way has the same problems. They are kept as a view of the file
(session/view_store.py, the kind ``check``), keyed by the pi release read as (and, as every view,
the package's code), and printed from there without importing the analysis: checking pi's
session directory again analyses only the sessions that changed. Most of pi's sessions are smaller
than the files the index is kept for: the problems are kept from a smaller size (``KEPT_MIN_SIZE``).
"""

from __future__ import annotations

import json
from typing import Final, NamedTuple

from ..session import cache_dir, view_store

#: the severities, most severe first (LSP's DiagnosticSeverity order), as --json names them
SEVERITIES: Final = ("error", "warning", "information", "hint")
# Analysing a file this small costs about what finding and reading its kept problems does; bigger
# ones cost many times more, and a directory of them multiplies it.
KEPT_MIN_SIZE: Final = 64 * 1024


class Finding(NamedTuple):
    """One problem as printed: 1-based line and columns (in characters); and where an editor that
    follows the LSP places it (0-based, UTF-16 characters, a lone "\\r" ending a line), as the
    language server does."""

    line: int
    column: int
    end_column: int
    severity: str  # one of SEVERITIES
    code: str
    message: str
    lsp_line: int
    lsp_character: int
    lsp_end_line: int
    lsp_end_character: int


# the types of Finding's fields, as JSON decodes them
_SHAPE: Final = (int, int, int, str, str, str, int, int, int, int)


class FileReport(NamedTuple):
    findings: list[Finding]
    failure: str | None  # why the file could not be read (then no findings)


def keep_the_cache_within_its_limits(index: bool) -> None:
    """Prune the cache directory (cache_dir.prune) once a run of check kept what it found: check
    keeps views of many files, never an index, whose write is what prunes otherwise."""
    settings = cache_dir.index_settings(index)
    if settings is not None:
        cache_dir.prune(settings.directory)


def report(path: str, pi: str, index: bool, end: int | None = None) -> FileReport:
    """The problems of the file at ``path`` read as pi release ``pi``: those kept when it was
    checked before and has not changed since, else found now (and kept, unless ``index`` is
    False or the file changed while it was read). ``end``: the file read as if it ended there
    (its size when the command started); what is kept is of the whole file only."""
    key = (pi,)
    before = view_store.identity_before_open(path) if index else None
    if before is not None and end is not None and before[2] != end:
        before = None  # grown (or rewritten) since: what is read now is not what it holds
    kept = view_store.load(path, before, view_store.CHECK, key, index, KEPT_MIN_SIZE)
    if kept is not None:
        findings = _decoded(kept.data)
        if findings is not None:
            return FileReport(findings, None)
    from .check_analysis import report_file  # the analysis: imported only when a file is analysed

    found = report_file(path, pi, end=end)
    if found.failure is None:
        view_store.save(
            path, before, view_store.CHECK, key, "", _encoded(found.findings), index, KEPT_MIN_SIZE
        )
    return found


def _encoded(findings: list[Finding]) -> bytes:
    return json.dumps(findings, separators=(",", ":")).encode("ascii")  # (a lone surrogate: escaped)


def _decoded(data: memoryview) -> list[Finding] | None:
    """The findings :func:`_encoded` wrote, or None when ``data`` is not such a list."""
    try:
        items = json.loads(bytes(data))
    except ValueError:
        return None
    if type(items) is not list:
        return None
    findings = []
    for item in items:
        if type(item) is not list or len(item) != len(_SHAPE) or item[3] not in SEVERITIES:
            return None
        if any(type(value) is not shape for value, shape in zip(item, _SHAPE, strict=True)):
            return None
        findings.append(Finding(*item))
    return findings
