"""Repairs applied to a file without an editor (``pi-session repair``): which ones, and the repaired
bytes, streamed.

The repairs are the language server's code actions (:mod:`analysis.repairs`): for each problem of
the chosen codes its preferred one (or its only one). Their text edits become splices of the file's
bytes (absolute offsets, from the line places the document already holds), and the repaired file
is the original read in chunks with the splices in between: memory stays small whatever the size
of the session.

All repairs are planned on the file as it is; one whose bytes overlap a repair planned before it is
left for a second round, planned on the repaired file (the report says so), rather than guessed
at. The migration to version 3 touches every line, so it is planned last and waits for a round
with nothing else to repair. Repairs that produce identical splices (every sibling of one missing
parent offers the same re-parenting) are applied once. A header is never made up (PI010) beside a
repair that gives the file its own back (a split of lines glued together holding it): the made-up
one would take the session's id.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..errors import StaleFileError
from ..format.gcpause import gc_paused
from ..regular_file import open_regular
from ..session.profiles import DEFAULT_PI, PiVersion
from ..session.rewrites import FileState, replace_in_place
from . import codes
from .byte_order_marks import BOM_BYTES, utf8_of_marked
from .diagnostics import TREE_CODES
from .document import SessionDocument, Splice, StreamedData
from .repairs import Repair, TextEdit, repairs_counting

#: repairs that lose nothing and change no entry's meaning: applied unless other codes are chosen
#: (the only repair of invalid JSON removes a line of NUL bytes, which holds nothing; the only one
#: of a duplicate id removes a line whose later copy, byte for byte, pi keeps)
SAFE_CODES = frozenset(
    {
        codes.GLUED_LINES,
        codes.MISSING_HEADER,
        codes.HEADER_NOT_FIRST,
        codes.BOM,
        codes.NOT_UTF8,
        codes.INVALID_JSON,
        codes.DUPLICATE_ID,
    }
)
#: every code with a repair that text edits can make (moving an image out writes a second file:
#: that one stays in the editor)
FIXABLE_CODES = SAFE_CODES | frozenset(
    {
        codes.TRUNCATED_LAST_LINE,
        codes.DUPLICATE_HEADER,
        codes.OLD_VERSION,
        codes.DANGLING_PARENT,
        codes.PARENT_CYCLE,
        codes.ORPHAN_TOOL_RESULT,
    }
)

_COPY_CHUNK = 1024 * 1024


@dataclass(slots=True)
class Planned:
    repair: Repair
    splices: tuple[Splice, ...]


@dataclass(slots=True)
class Plan:
    applied: list[Planned] = field(default_factory=list)
    # repairs that would touch bytes an applied one changes: for another round, on the repaired file
    deferred: list[Repair] = field(default_factory=list)
    # repairs of what the file holds and the text does not (Repair.on_disk): made to the file by
    # repair_file, where they are ordinary repairs of its bytes
    on_disk: list[Repair] = field(default_factory=list)
    # the problems with repairs of the fixable codes not chosen, counted by code (what choosing
    # those codes would add)
    others: Counter[str] = field(default_factory=Counter)

    def splices(self) -> list[Splice]:
        return sorted(s for p in self.applied for s in p.splices)


def plan_repairs(
    doc: SessionDocument, chosen: Iterable[str], path: str | None = None, cwd: str | None = None
) -> Plan:
    """The preferred repair of every problem whose code is in ``chosen``, in line order (``path``
    and ``cwd`` as for :func:`repairs`)."""
    # a damaged file has a repair on each of many lines: the collector, run again and again over
    # the document's line facts while they are made, cost more than making them
    with gc_paused():
        return _planned(doc, chosen, path, cwd)


def _planned(doc: SessionDocument, chosen: Iterable[str], path: str | None, cwd: str | None) -> Plan:
    wanted = frozenset(chosen) & FIXABLE_CODES
    plan = Plan()
    if not wanted or doc.line_count == 0:
        return plan
    # The migration rewrites every line: it goes last, so that it waits for a second round whenever
    # something else is repaired (and then migrates the repaired lines too).
    found, plan.others = _one_per_problem(doc, wanted, path, cwd)
    chosen_ones = sorted(found, key=lambda r: r.code == codes.OLD_VERSION)
    if any(r.restores_header for r in chosen_ones):
        chosen_ones = [r for r in chosen_ones if r.code != codes.MISSING_HEADER]
    if any(r.restores_entries for r in chosen_ones):
        # the tree's problems are those of the file before the split gives its entries back (a
        # tool result "without its call" finds it again): they wait for the next round
        plan.deferred.extend(r for r in chosen_ones if r.code in TREE_CODES and not r.restores_entries)
        chosen_ones = [r for r in chosen_ones if r.code not in TREE_CODES or r.restores_entries]
    if not chosen_ones:
        return plan
    starts = doc.line_starts()
    taken = _Taken()  # byte ranges of the splices planned so far
    seen: set[tuple[Splice, ...]] = set()
    for repair in chosen_ones:
        if repair.on_disk:
            plan.on_disk.append(repair)
            continue
        splices = _splices_of(repair, starts)
        if not splices or splices in seen:
            continue
        if any(taken.overlaps(s) for s in splices):
            plan.deferred.append(repair)
            continue
        seen.add(splices)
        for s in splices:
            taken.add(s)
        plan.applied.append(Planned(repair, splices))
    return plan


def _one_per_problem(
    doc: SessionDocument, wanted: frozenset[str], path: str | None, cwd: str | None
) -> tuple[list[Repair], Counter[str]]:
    """For each problem (code and line) of the ``wanted`` codes with repairs: the preferred one,
    else the only or first; and the problems of the other fixable codes, counted by code."""
    by_problem: dict[tuple[str, int], Repair] = {}
    found = repairs_counting(doc, 0, doc.line_count - 1, FIXABLE_CODES - wanted, path, cwd)
    others = found.counted  # (the codes with a repair for certain: counted, not built)
    for repair in found.repairs:
        if repair.image is not None:
            continue
        problem = (repair.code, repair.line)
        if repair.code not in wanted:
            if repair.code in FIXABLE_CODES:
                others.add(problem)
            continue
        known = by_problem.get(problem)
        if known is None or (repair.preferred and not known.preferred):
            by_problem[problem] = repair
    return list(by_problem.values()), Counter(code for code, _ in others)


def _splices_of(repair: Repair, starts: list[int]) -> tuple[Splice, ...]:
    """The splices of ``repair``'s edits, in order; a streamed edit's data made as it is written
    (a migration's new text is as long as the file: the plan does not hold it)."""
    if repair.streamed is not None:
        streamed = repair.streamed()
        edit = streamed.edit
        start, end = starts[edit.start_line] + edit.start, starts[edit.end_line] + edit.end
        return (Splice(start, end, StreamedData(streamed.chunks)),)
    return tuple(sorted(_splice(e, starts) for e in repair.edits()))


def _splice(edit: TextEdit, starts: list[int]) -> Splice:
    return Splice(
        starts[edit.start_line] + edit.start,
        starts[edit.end_line] + edit.end,
        edit.new_text.encode("utf-8", "surrogatepass"),
    )


class _Taken:
    """The byte ranges of the splices planned so far, each looked for among its neighbours only (a
    damaged file has a repair on every line: comparing each with all planned before was quadratic).

    An insertion (an empty range) conflicts only with a range it falls strictly inside, so two
    insertions never do; the ranges that replace bytes are disjoint (a repair overlapping one is
    not planned), so sorted by start they are also sorted by end."""

    __slots__ = ("_ends", "_points", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []  # of the ranges that replace bytes, ascending
        self._ends: list[int] = []  # their ends, in the same order
        self._points: list[int] = []  # the insertions, ascending

    def overlaps(self, s: Splice) -> bool:
        # the range replacing bytes that starts last before ``s`` ends (or, for an insertion,
        # before it) is the only one that can reach into ``s``
        i = bisect.bisect_left(self._starts, s.end if s.start < s.end else s.start)
        if i and self._ends[i - 1] > s.start:
            return True
        if s.start == s.end:
            return False
        j = bisect.bisect_right(self._points, s.start)
        return j < len(self._points) and self._points[j] < s.end

    def add(self, s: Splice) -> None:
        if s.start == s.end:
            bisect.insort(self._points, s.start)
            return
        i = bisect.bisect_left(self._starts, s.start)
        self._starts.insert(i, s.start)
        self._ends.insert(i, s.end)


def spliced(fd: int, size: int, splices: list[Splice]) -> Iterator[bytes]:
    """The bytes of the file open at ``fd`` (``size`` bytes) with ``splices`` (sorted, disjoint,
    within those bytes) applied, in chunks of at most a MB (plus a splice's own data). Raises
    StaleFileError when the file ends before ``size`` (another process truncated or rewrote it)."""
    if splices and splices[-1].end > size:
        raise ValueError(f"a splice ends at byte {splices[-1].end}, past the {size} bytes copied")
    position = 0
    for s in splices:
        yield from _copy(fd, position, s.start)
        if isinstance(s.data, bytes):
            if s.data:
                yield s.data
        else:
            yield from s.data
        position = s.end
    yield from _copy(fd, position, size)


def _copy(fd: int, start: int, end: int) -> Iterator[bytes]:
    while start < end:
        chunk = os.pread(fd, min(_COPY_CHUNK, end - start), start)
        if not chunk:
            raise StaleFileError(
                f"the file ended at byte {start} of {end} while it was copied: another process truncated "
                "or rewrote it"
            )
        yield chunk
        start += len(chunk)


@dataclass(frozen=True, slots=True)
class FileRepair:
    """What :func:`repair_file` did."""

    repairs: int  # the repairs made
    kept: int  # bytes others appended meanwhile, kept after the repaired content


def repair_file(
    path: str, chosen: Iterable[str], pi: PiVersion = DEFAULT_PI, *, text: bytes | None = None
) -> FileRepair:
    """Make the repairs of ``chosen`` codes to the file at ``path`` (one round: what ``pi-session
    repair --in-place`` does first), read as pi release ``pi`` reads it. The file is replaced
    atomically under its lock, checked right before the rename; lines others append meanwhile are
    kept after the repaired content, any other change leaves the file alone (StaleFileError).

    ``text``: the file as an editor shows it (its bytes in UTF-8, without a byte order mark the
    editor hides). The file is repaired only if that is what it holds, so that an editor reloading the
    repaired file loses nothing; else StaleFileError and nothing is written. Raises OSError
    (NotRegularFile for a FIFO or a device: nothing is opened that could wait)."""
    fd = open_regular(path)  # a FIFO renamed over the file is refused, not waited on
    try:
        before = FileState.of(fd)
        if text is not None:
            shown = _as_an_editor_reads(_read_all(fd, before.size))
            if shown != text:
                raise StaleFileError(_differs(path, shown, text))
        doc = SessionDocument.from_file(_name_of(path, fd), pi=pi)
        plan = plan_repairs(doc, chosen, path)
        if not plan.applied:
            return FileRepair(0, 0)
        kept = replace_in_place(path, before, spliced(fd, before.size, plan.splices())).kept
        return FileRepair(len(plan.applied), kept)
    finally:
        os.close(fd)


def _differs(path: str, on_disk: bytes, text: bytes) -> str:
    """Why a file is not repaired for an editor whose text is not what it holds, and what to do."""
    if len(on_disk) > len(text) and on_disk.startswith(text):
        return (
            f"{path} has lines the editor does not show yet (another program, pi, appended to it): "
            "let the editor read it again, then repair (nothing was written)"
        )
    return f"{path} differs from the text the editor shows: save it first (nothing was written)"


def _read_all(fd: int, size: int) -> bytes:
    return b"".join(_copy(fd, 0, size))


def _as_an_editor_reads(data: bytes) -> bytes:
    """The UTF-8 text an editor shows of a file: without a UTF-8 byte order mark, decoded from the
    UTF-16 or UTF-32 another mark names."""
    utf8 = utf8_of_marked(data)
    if utf8 is not None:
        return utf8
    return data[len(BOM_BYTES) :] if data.startswith(BOM_BYTES) else data


def _name_of(path: str, fd: int) -> str:
    """A name for the file open as ``fd`` (the very file, even if ``path`` is replaced meanwhile)."""
    return f"/proc/self/fd/{fd}" if os.path.exists("/proc/self/fd") else path


__all__ = [
    "FIXABLE_CODES",
    "SAFE_CODES",
    "FileRepair",
    "Plan",
    "Planned",
    "Splice",
    "plan_repairs",
    "repair_file",
    "spliced",
]
