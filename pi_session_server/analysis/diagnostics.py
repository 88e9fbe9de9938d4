"""Everything wrong with a document, as diagnostics placed on lines (byte columns).

Three sources, all already computed by the document model: problems of single lines
(``LineInfo.problems``), cross-line tree problems (``TreeIndex.cross``), and file-level facts
(header, BOM, version, final newline) derived here in O(number of headers) at each call.

What depends on the pi release the document follows (``doc.profile``) is decided here, at each
call, from line facts that do not: the ``context_edit`` lines (:attr:`SessionDocument.edits`, few)
are edits with their own checks (PI027, PI038) under a release with context edits, and an unknown
entry type (PI020) under one without.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import msgspec

from ..format.gcpause import gc_paused
from ..format.glued import Piece, holds_header, lost_ids
from ..format.jsvalue import ABSENT, get, js_string_of, to_number
from ..session.migrate import CURRENT_SESSION_VERSION
from . import codes
from . import lines as L
from .byte_order_marks import BOM_BYTES
from .codes import CODES, Severity
from .document import SessionDocument
from .edits import is_malformed, target_problem
from .jsonpath import key_span, value_span
from .lines import ENVELOPE_CODES, ENVELOPE_FIELDS, ENVELOPE_PATHS, FIELD_CODES, LineInfo, Problem
from .pauses import CHECK_EVERY, Check
from .positions import char_end, text_end
from .preview import full_value

T = TypeVar("T")


# (Structs the collector does not track: one diagnostic per problem and one related line per
# note, by the hundred thousand in a damaged file; their values are numbers and strings)
class Related(msgspec.Struct, frozen=True, gc=False):
    line: int
    start: int
    end: int
    message: str


class Diagnostic(msgspec.Struct, frozen=True, gc=False):
    line: int
    start: int  # byte offsets within the line
    end: int
    severity: Severity
    code: str
    message: str
    related: tuple[Related, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "line": self.line,
            "start": self.start,
            "end": self.end,
            "severity": self.severity.name.lower(),
            "code": self.code,
            "message": self.message,
        }


TREE_CODES = frozenset(
    {
        codes.DUPLICATE_ID,
        codes.DANGLING_PARENT,
        codes.PARENT_CYCLE,
        codes.LABEL_TARGET_MISSING,
        codes.FIRST_KEPT_NOT_ON_PATH,
        codes.FROM_ID_UNKNOWN,
        codes.ORPHAN_TOOL_RESULT,
        codes.UNANSWERED_TOOL_CALL,
        codes.CONTEXT_EDIT_TARGET,
    }
)


def _whole_line(raw: bytes) -> tuple[int, int]:
    end = len(raw)
    while end > 0 and raw[end - 1 : end] in (b"\r", b" ", b"\t"):
        end -= 1
    start = 3 if raw.startswith(BOM_BYTES) else 0
    return (start, end) if end > start else (0, text_end(raw))


def _whole_line_of(info: LineInfo) -> tuple[int, int]:
    return _whole_line(info.raw)


class WholeLines:
    """The whole-line ranges of lines, each line's found once (a line of a file on disk is read
    again for it): the related lines of one pass's problems. The related lines of a problem are
    made once for all the problems that name the same ones: the members of a large duplicate
    group or cycle all name the group's first few."""

    __slots__ = ("_found", "_related")

    def __init__(self) -> None:
        self._found: dict[LineInfo, tuple[int, int]] = {}
        self._related: dict[tuple[tuple[LineInfo, str], ...], tuple[Related, ...]] = {}

    def of(self, info: LineInfo) -> tuple[int, int]:
        found = self._found.get(info)
        if found is None:
            found = self._found[info] = _whole_line(info.raw)
        return found

    def related(self, related: tuple[tuple[LineInfo, str], ...]) -> tuple[Related, ...]:
        """``related`` (a problem's other lines) as the diagnostic's related lines."""
        found = self._related.get(related)
        if found is None:
            found = self._related[related] = _related_lines(related, self.of)
        return found


def _related_lines(
    related: tuple[tuple[LineInfo, str], ...], whole: Callable[[LineInfo], tuple[int, int]]
) -> tuple[Related, ...]:
    return tuple(Related(other.line, *whole(other), message) for other, message in related if other.line >= 0)


def problem_span(info: LineInfo, p: Problem) -> tuple[int, int]:
    if p.span is not None:
        return p.span
    if p.path is None:
        return _whole_line(info.raw)
    if p.resolved is None:
        found = key_span(info.raw, p.path) if p.on_key else value_span(info.raw, p.path)
        p.resolved = found if found is not None else _whole_line(info.raw)
    return p.resolved


def _diagnostic(info: LineInfo, p: Problem, whole_lines: WholeLines | None = None) -> Diagnostic:
    """``whole_lines``: the ranges of related lines already found in this pass (the few first lines
    of a large duplicate group or cycle are related to each of its many members)."""
    start, end = problem_span(info, p)
    related = (
        whole_lines.related(p.related)
        if whole_lines is not None
        else _related_lines(p.related, _whole_line_of)
    )
    if p.notes:
        related += tuple(Related(info.line, start, end, message) for start, end, message in p.notes)
    return Diagnostic(info.line, start, end, CODES[p.code].severity, p.code, p.message, related)


def _at(info: LineInfo, code: str, message: str, path: tuple[str, ...] | None = None) -> Diagnostic:
    return _diagnostic(info, Problem(code, message, path=path))


def file_diagnostics(
    doc: SessionDocument, first_line: int = 0, last_line: int | None = None
) -> list[Diagnostic]:
    """The file's diagnostics, those of repeated headers only on lines ``first_line..last_line``
    (a header on every line is as many diagnostics: quick fixes of a few lines make theirs only)."""
    return [
        *_bom_diagnostics(doc),
        *_header_diagnostics(doc, first_line, doc.line_count - 1 if last_line is None else last_line),
        *_end_diagnostics(doc),
    ]


def _bom_diagnostics(doc: SessionDocument) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    lines = doc.lines
    encoding = doc.encoding_not_utf8()
    if encoding is not None:
        first = lines[0].raw if lines else b""
        mark = doc.other_bom_in_text()
        out.append(
            Diagnostic(
                0,
                0,
                len(mark[0]) if mark else char_end(first, 0),  # the mark, or the character for it
                CODES[codes.NOT_UTF8].severity,
                codes.NOT_UTF8,
                f"the file {'' if mark else 'on disk '}is {encoding} (it starts with that byte order mark"
                f"{'' if mark else ', which the editor does not show'}): pi reads files as UTF-8, cannot "
                "parse a line of it and refuses the file; save it as UTF-8",
            )
        )
    if doc.has_bom():
        out.append(
            Diagnostic(
                0,
                0,
                3,
                CODES[codes.BOM].severity,
                codes.BOM,
                "the file starts with a byte order mark: pi cannot parse the header and refuses the file",
            )
        )
    elif doc.disk_bom:  # the editor's text lacks it: the first character stands for it
        out.append(
            Diagnostic(
                0,
                0,
                char_end(lines[0].raw if lines else b"", 0),
                CODES[codes.BOM].severity,
                codes.BOM,
                "the file on disk starts with a byte order mark, which the editor does not show: pi "
                "cannot parse the header and refuses the file",
            )
        )
    return out


def _header_diagnostics(doc: SessionDocument, first_line: int, last_line: int) -> list[Diagnostic]:
    """A missing, invalid, misplaced or repeated header (repeated on lines ``first_line..last_line``)."""
    out: list[Diagnostic] = []
    lines = doc.lines
    first = doc.first_kept()
    headers = doc.headers
    if first is None:
        if doc.byte_size() > 0 and not _has_glued_header(doc):
            out.append(
                Diagnostic(
                    0,
                    0,
                    text_end(lines[0].raw),
                    CODES[codes.MISSING_HEADER].severity,
                    codes.MISSING_HEADER,
                    "no session header (and no other JSON line): pi refuses this file",
                )
            )
    elif first.kind == L.HEADER:
        if not isinstance(first.id, str):
            what = (
                "has no `id`"
                if first.id is ABSENT
                else f"has a non-string `id` ({js_string_of(first.id)[:40]})"
            )
            out.append(
                _at(
                    first,
                    codes.INVALID_HEADER,
                    f"the session header {what}: pi refuses this file",
                    ("id",) if first.id is not ABSENT else None,
                )
            )
        out.extend(_version_diagnostics(first))
    elif headers:
        h = headers[0]
        out.append(
            _diagnostic(
                h,
                Problem(
                    codes.HEADER_NOT_FIRST,
                    f"the session header must be the first JSON line, but line {doc.line_number(first.line)} comes before it: pi refuses this file",
                    related=((first, "the first JSON line"),),
                ),
            )
        )
    elif not _has_glued_header(doc):
        out.append(
            _at(
                first,
                codes.MISSING_HEADER,
                'the first JSON line is not a session header (`{"type":"session",...}`) and there is none: pi refuses this file',
            )
        )
    main_header = first if first is not None and first.kind == L.HEADER else (headers[0] if headers else None)
    whole_lines = WholeLines()  # (the main header's, related to each repeated one)
    in_lines = headers[
        bisect.bisect_left(headers, first_line, key=_line_of) : bisect.bisect_right(
            headers, last_line, key=_line_of
        )
    ]
    for h in in_lines:
        if h is not main_header:
            out.append(
                _diagnostic(
                    h,
                    Problem(
                        codes.DUPLICATE_HEADER,
                        "a second session header: pi keeps the line but ignores it",
                        related=((main_header, "the header"),) if main_header is not None else (),
                    ),
                    whole_lines,
                )
            )
    return out


def _line_of(info: LineInfo) -> int:
    return info.line


def truncated_last_line(where: str) -> str:
    """PI002's words for a last line without its newline whose JSON the parser ran out of
    (``where``: where and why it stopped, ``at end of line: Unterminated string``); the commands that
    show a session say them too."""
    return f"truncated last line (no final newline, {where})"


def _end_diagnostics(doc: SessionDocument) -> list[Diagnostic]:
    """A truncated last line, or no newline at the end."""
    out: list[Diagnostic] = []
    lines = doc.lines
    if doc.ends_without_newline():
        last = lines[-1]
        if _truncated(last):
            p = last.problems[0]
            start = p.span[0] if p.span else 0
            out.append(
                Diagnostic(
                    last.line,
                    0,
                    len(last.raw),
                    CODES[codes.TRUNCATED_LAST_LINE].severity,
                    codes.TRUNCATED_LAST_LINE,
                    f"{truncated_last_line(p.message.removeprefix('invalid JSON '))}; "
                    "pi skips it, and appends a newline when it opens the file",
                    related=(Related(last.line, start, start, "parsing stops here"),),
                )
            )
        elif last.kind != L.BLANK and last.kind != L.MALFORMED:
            end = len(last.raw)
            out.append(
                Diagnostic(
                    last.line,
                    max(0, end - 1),
                    end,
                    CODES[codes.NO_FINAL_NEWLINE].severity,
                    codes.NO_FINAL_NEWLINE,
                    "no newline at the end of the file: pi appends one when it opens it",
                )
            )
    return out


def _version_diagnostics(header: LineInfo) -> list[Diagnostic]:
    current = CURRENT_SESSION_VERSION  # what every release this tool knows (RELEASES) writes, and migrates to
    v = header.version
    if v is ABSENT or v is None:
        return [
            _at(
                header,
                codes.OLD_VERSION,
                f"version 1 session (no `version`): pi migrates it to version {current} and rewrites the file when it opens it",
            )
        ]
    n = to_number(v)
    if n != n:
        return [
            _at(
                header,
                codes.UNKNOWN_VERSION,
                f"`version` {js_string_of(v)[:20]!r} is not a number: pi rewrites the file unchanged when it opens it",
                ("version",),
            )
        ]
    if n < current:
        label = "1" if n < 2 else "2"
        return [
            _at(
                header,
                codes.OLD_VERSION,
                f"version {label} session: pi migrates it to version {current} and rewrites the file when it opens it",
                ("version",),
            )
        ]
    if n > current:
        return [
            _at(
                header,
                codes.UNKNOWN_VERSION,
                f"version {js_string_of(v)} is newer than this tool knows ({current})",
                ("version",),
            )
        ]
    return []


def document_diagnostics(doc: SessionDocument, check: Check | None = None) -> list[Diagnostic]:
    """All diagnostics of ``doc``, ordered by position (a provisional document is finished first).
    ``check``: called every :data:`~.pauses.CHECK_EVERY` lines with problems (and tree problems,
    and edits) looked at, once the document is finished: a damaged file has problems on most of
    its lines, and the caller may stop there or answer something else meanwhile."""
    doc.finish()
    return _diagnostics(doc, False, check)


def first_pass_diagnostics(doc: SessionDocument) -> list[Diagnostic]:
    """The diagnostics of ``doc`` that its envelope decides, without finishing a provisional document.

    The same list for a provisional document as for the finished one: syntax and file-level
    problems, unknown types, missing or mistyped ``type``/``id``/``parentId``/``timestamp``, bad
    timestamps, and the tree problems of ids and parents (duplicates, dangling parents, cycles,
    label/compaction/branch-summary references); that is, every diagnostic of
    :func:`document_diagnostics` for which :func:`is_first_pass` holds. Tool-call pairing, the other
    field checks and image sizes need the full scan.
    """
    return _diagnostics(doc, True)


def is_first_pass(p: Problem) -> bool:
    """``p`` is a problem :func:`first_pass_diagnostics` reports."""
    code = p.code
    if code not in ENVELOPE_CODES:
        return False
    if code not in FIELD_CODES:
        return True
    if code == codes.FIELD_MISSING and p.path == ():
        return p.missing in ENVELOPE_FIELDS
    return p.path in ENVELOPE_PATHS


def _has_glued_header(doc: SessionDocument) -> bool:
    """A session header is a whole piece of lines glued together (PI006): the header is not missing,
    pi skips it with the line, and splitting the line gives it back (as the first line pi reads, or
    as a header that is not first, PI012, when something comes before it)."""
    for info in doc.problem_lines:
        p = L.glued_problem(info)
        if p is not None and p.pieces is not None and holds_header(p.pieces):
            return True
    return False


def glued_entries(doc: SessionDocument) -> dict[str, tuple[LineInfo, tuple[Piece, ...]]]:
    """The lines glued together (PI006), with their pieces, by the string ids of the whole entries
    in them (the last such line for an id, as pi's index would keep the last entry once the lines
    are split)."""
    found: dict[str, tuple[LineInfo, tuple[Piece, ...]]] = {}
    for info in doc.problem_lines:
        p = L.glued_problem(info)
        if p is not None and p.pieces is not None:
            for entry_id in lost_ids(p.pieces):
                known = found.get(entry_id)
                if known is None or known[0].line < info.line:
                    found[entry_id] = (info, p.pieces)
    return found


def _parent_in_glued_line(doc: SessionDocument, p: Problem, glued: LineInfo) -> Problem:
    """A PI031 whose missing parent is a whole entry inside lines glued together: say so."""
    return Problem(
        p.code,
        f"{p.message.split(':', 1)[0]} that pi can read: the entry is inside line {doc.line_number(glued.line)}, "
        "glued to another line (PI006); split that line to give this entry its parent back",
        path=p.path,
        related=((glued, "the glued line holding the parent"),),
    )


def is_forked(doc: SessionDocument) -> bool:
    """The session was branched off another one (its header names a ``parentSession``), as pi's
    ``/fork`` (``createBranchedSession``) writes it: only the path it continues was copied."""
    header = doc.valid_header()
    if header is None:
        return False
    parent = get(full_value(header, doc.errors), "parentSession")
    return isinstance(parent, str) and bool(parent)


def _unknown_edit_type(version: str) -> Problem:
    return Problem(
        codes.UNKNOWN_ENTRY_TYPE,
        f"unknown entry type `context_edit` for pi {version} (pi 1.6.0 writes it): pi keeps it as a "
        "tree node, and the edit changes nothing in the context",
        path=("type",),
    )


def diagnostics_of_lines(doc: SessionDocument, first_line: int, last_line: int) -> list[Diagnostic]:
    """The diagnostics of :func:`document_diagnostics` on lines ``first_line..last_line``, the
    same and in the same order, found from those lines alone (a provisional document is finished
    first): what the quick fixes of a range need, asked at every cursor move, and answered meanwhile
    at a pause of the search for the whole document's problems, which would otherwise be made
    twice."""
    doc.finish()
    first, last = max(0, first_line), min(last_line, doc.line_count - 1)
    lines = doc.lines[first : last + 1] if first <= last else []
    cross = doc.tree.cross
    return _diagnostics(
        doc,
        False,
        problem_lines=[info for info in lines if info.problems],
        edits=[info for info in lines if info in doc.edits],
        tree_problems=[(info, cross[info]) for info in lines if info in cross],
        lines=(first, last),
    )


def _diagnostics(
    doc: SessionDocument,
    first_pass: bool,
    check: Check | None = None,
    *,
    problem_lines: Iterable[LineInfo] | None = None,
    edits: Iterable[LineInfo] | None = None,
    tree_problems: Iterable[tuple[LineInfo, tuple[Problem, ...]]] | None = None,
    lines: tuple[int, int] | None = None,
) -> list[Diagnostic]:
    """The diagnostics of the document, or of the lines given (``problem_lines``, ``edits``,
    ``tree_problems``: those of the document's that they hold, ``lines``: the first and last line
    they are on, which the file's diagnostics are kept to), ordered by position."""
    # a diagnostic and its related lines per problem, in no cycle: a damaged file has them by the
    # hundred thousand, which the collector would otherwise walk again and again as they are made
    with gc_paused():
        return _found(doc, first_pass, check, problem_lines, edits, tree_problems, lines)


def _found(
    doc: SessionDocument,
    first_pass: bool,
    check: Check | None,
    problem_lines: Iterable[LineInfo] | None,
    edits: Iterable[LineInfo] | None,
    tree_problems: Iterable[tuple[LineInfo, tuple[Problem, ...]]] | None,
    lines: tuple[int, int] | None,
) -> list[Diagnostic]:
    if doc.other_bom_in_text() is not None:
        # bytes of UTF-16 or UTF-32 read from disk: parsed as pi's UTF-8, every line is an error
        # that the one repair (re-encoding the file) takes away; the one diagnostic says that
        return _on_lines(_bom_diagnostics(doc), lines)
    out = _on_lines(file_diagnostics(doc, *lines) if lines is not None else file_diagnostics(doc), lines)
    v1 = doc.is_v1()
    out.extend(
        _line_diagnostics(
            doc, doc.problem_lines if problem_lines is None else problem_lines, first_pass, v1, check
        )
    )
    out.extend(_edit_diagnostics(doc, doc.edits if edits is None else edits, first_pass, v1, check))
    if not v1:
        found = doc.tree.cross.items() if tree_problems is None else tree_problems
        out.extend(_tree_diagnostics(doc, found, first_pass, check))
    return _in_order(out, doc.line_count, check)


def _on_lines(found: list[Diagnostic], lines: tuple[int, int] | None) -> list[Diagnostic]:
    """Those of ``found`` on the lines ``lines`` (first and last; None: all of them)."""
    if lines is None:
        return found
    first, last = lines
    return [d for d in found if first <= d.line <= last]


def _place(d: Diagnostic) -> tuple[int, int, str]:
    return d.line, d.start, d.code


def _place_in_line(d: Diagnostic) -> tuple[int, str]:
    return d.start, d.code


def _in_order(found: list[Diagnostic], line_count: int, check: Check | None) -> list[Diagnostic]:
    """``found`` (of a document of ``line_count`` lines) ordered by position (line, start, code;
    those at the same place in the order found), with ``check`` called as it goes: a damaged
    file's problems are too many for one sort that would not pause. Placed by line, each line's
    few sorted then, which is what one stable sort of them all makes."""
    if check is None or len(found) <= CHECK_EVERY:
        found.sort(key=_place)
        return found
    by_line: list[list[Diagnostic] | None] = [None] * line_count
    for d in _paused(found, check):
        here = by_line[d.line]
        if here is None:
            by_line[d.line] = [d]
        else:
            here.append(d)
    out: list[Diagnostic] = []
    for here in _paused(filter(None, by_line), check):
        if len(here) > 1:
            here.sort(key=_place_in_line)
        out.extend(here)
    return out


def _paused(items: Iterable[T], check: Check | None) -> Iterator[T]:
    """``items``, with ``check()`` called before the first and every :data:`CHECK_EVERY` after."""
    if check is None:
        yield from items
        return
    for n, item in enumerate(items):
        if n % CHECK_EVERY == 0:
            check()
        yield item


def _line_diagnostics(
    doc: SessionDocument, lines: Iterable[LineInfo], first_pass: bool, v1: bool, check: Check | None = None
) -> Iterator[Diagnostic]:
    """The problems found on each of ``lines`` (lines with problems) by itself."""
    unreported = _unreported_last(doc)
    for info in _paused(lines, check):
        if info is not unreported:
            for p in _line_problems(doc, info, first_pass, v1):
                yield _diagnostic(info, p)


def _unreported_last(doc: SessionDocument) -> LineInfo | None:
    """The last line when its own problems are not reported: the empty text after the final
    newline, or a truncated line (reported as PI002)."""
    last = doc.lines[-1] if doc.lines else None
    if last is not None and (last.raw == b"" or _truncated(last)):
        return last
    return None


def _truncated(last: L.LineInfo) -> bool:
    """The last line, without a final newline, is a cut-off line (PI002): JSON the parser ran out
    of (a line cut short is the start of a valid one, which fails nowhere before its end), not
    a wrong character in it (a tab or form feed in a string). Lines glued together, the NUL bytes
    of a zero-filled tail and binary bytes are reported as themselves, never as the parser's
    problem (lines._malformed): nothing was cut, and PI002's repair deletes the line."""
    return last.kind == L.MALFORMED and bool(last.problems) and last.problems[0].ran_out


def _line_problems(doc: SessionDocument, info: LineInfo, first_pass: bool, v1: bool) -> Iterator[Problem]:
    unknown_type = not doc.profile.context_edits and info in doc.edits
    for p in info.problems:
        if v1 and p.v1_expected:
            continue
        if first_pass and not is_first_pass(p):
            continue
        if unknown_type and L.is_edit_field_problem(p):
            continue  # what makes the line an edit means nothing to this release
        yield p


def _edit_diagnostics(
    doc: SessionDocument, edits: Iterable[LineInfo], first_pass: bool, v1: bool, check: Check | None = None
) -> Iterator[Diagnostic]:
    """Context edits (``edits``, lines of the document's) of a release without them, and edits
    whose target is wrong."""
    edits_known = doc.profile.context_edits
    for info in _paused(edits, check):
        if not edits_known:
            yield _diagnostic(info, _unknown_edit_type(doc.profile.version))
        elif not (v1 or first_pass or is_malformed(info)):
            problem = target_problem(doc, info)
            if problem is not None:
                yield _diagnostic(info, problem)


def _tree_diagnostics(
    doc: SessionDocument,
    found: Iterable[tuple[LineInfo, tuple[Problem, ...]]],
    first_pass: bool,
    check: Check | None = None,
) -> Iterator[Diagnostic]:
    """The cross-line problems of the tree (``found``: the tree's, of some of its lines)."""
    glued: dict[str, tuple[LineInfo, tuple[Piece, ...]]] | None = None  # (looked for at a missing parent)
    forked = _Forked(doc)
    whole_lines = WholeLines()
    for info, problems in _paused(found, check):
        for p in problems:
            if not _tree_problem_reported(p, first_pass, forked):
                continue
            if p.code == codes.DANGLING_PARENT and type(info.parent_id) is str:
                if glued is None:
                    glued = glued_entries(doc)
                if info.parent_id in glued:
                    p = _parent_in_glued_line(doc, p, glued[info.parent_id][0])
            yield _diagnostic(info, p, whole_lines)


class _Forked:
    """Whether the session was forked (:func:`is_forked`), asked only when a fromId names nothing."""

    __slots__ = ("doc", "known")

    def __init__(self, doc: SessionDocument) -> None:
        self.doc = doc
        self.known: bool | None = None

    def __bool__(self) -> bool:
        if self.known is None:
            self.known = is_forked(self.doc)
        return self.known


def _tree_problem_reported(p: Problem, first_pass: bool, forked: _Forked) -> bool:
    if first_pass and not is_first_pass(p):
        return False
    # a fromId naming an abandoned leaf that stayed in the session this one was forked from
    return not (p.code == codes.FROM_ID_UNKNOWN and forked)


def reported_problems(
    doc: SessionDocument, first_line: int, last_line: int
) -> Iterator[tuple[LineInfo, Problem]]:
    """The problems of lines ``first_line..last_line`` that :func:`document_diagnostics` reports,
    with their lines (the tree's as found, before a message is reworded): what repairs are for."""
    v1 = doc.is_v1()
    unreported = _unreported_last(doc)
    forked = _Forked(doc)
    cross = doc.tree.cross
    for n in range(max(0, first_line), min(last_line, doc.line_count - 1) + 1):
        info = doc.lines[n]
        if info.problems and info is not unreported:
            for p in _line_problems(doc, info, False, v1):
                yield info, p
        if not v1:
            for p in cross.get(info, ()):
                if _tree_problem_reported(p, False, forked):
                    yield info, p


__all__ = [
    "TREE_CODES",
    "Diagnostic",
    "Related",
    "diagnostics_of_lines",
    "document_diagnostics",
    "file_diagnostics",
    "first_pass_diagnostics",
    "glued_entries",
    "is_first_pass",
    "is_forked",
    "problem_span",
    "reported_problems",
]
