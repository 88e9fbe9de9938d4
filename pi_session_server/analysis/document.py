"""A session file as an editor sees it: physical lines (split on "\\n" only) and their facts.

The text is held as one ``bytes`` object per line (UTF-8, the file's own encoding), so a document costs
about its own size in memory, a line is decoded only when a feature needs its text, and an edit replaces
just the lines it touches. Positions inside a line are **byte offsets** everywhere in ``analysis``;
:mod:`analysis.positions` converts them to an editor's UTF-16/UTF-8/UTF-32 columns.

Lines are never split on U+2028/U+2029/U+0085 or a lone "\\r" (which pygls' own ``TextDocument``
and ``str.splitlines`` would do), exactly like pi's loader (docs/FORMAT.md §2.4).

A document reads the file as one pi release does (``pi=``, the library's default release unless
told otherwise; :attr:`SessionDocument.profile`): diagnostics, hovers and hints follow it. Line
facts do not depend on it, so :meth:`SessionDocument.set_profile` changes it without a new scan.

The texts the analysis writes name lines by number ("line 12"), through
:attr:`SessionDocument.line_number`: pi's numbering, unless whoever shows them to a reader whose
lines break elsewhere (a language server's client, for which a lone "\\r" ends a line) says how
that reader numbers them.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..errors import StaleFileError
from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, index_key, to_number
from ..format.scan import iter_physical_lines
from ..regular_file import open_regular
from ..session.profiles import DEFAULT_PI, PiVersion, Profile, profile_for
from . import lines as L
from .byte_order_marks import BOM_BYTES, BOM_PREFIX_SIZE, other_bom
from .line_bytes import RAW_SLOT, FileBytes, FileLineInfo, FileRanges, TextBytes, text_place
from .lines import LineInfo, scan_envelope, scan_line
from .pauses import CHECK_EVERY, Check
from .tree import TreeIndex


def _char_boundary(raw: bytes, offset: int) -> int:
    offset = max(0, min(offset, len(raw)))
    while 0 < offset < len(raw) and (raw[offset] & 0xC0) == 0x80:
        offset -= 1
    return offset


class StreamedData:
    """A splice's data made in chunks as it is written (a migration's new text, as long as the
    file), so that no plan holds it whole: made again each time it is iterated."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], Iterable[bytes]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._make())


@dataclass(frozen=True, slots=True, order=True)
class Splice:
    """Replace bytes ``start:end`` of the text (of the file) with ``data``."""

    start: int
    end: int
    data: bytes | StreamedData


def _quick_lines(data: bytes, errors: str) -> tuple[list[LineInfo], list[LineInfo], list[LineInfo]]:
    """The lines of ``data`` (split on "\\n"), every line after the first read by its envelope when
    :func:`scan_envelope` can, in full otherwise: all lines, the lines read in full, the provisional
    lines. A provisional line is decoded where it lies in ``data`` and keeps its place there, not a
    copy of its bytes."""
    first_end = data.find(b"\n")
    if first_end < 0:
        infos = [scan_line(data, errors)]
        return infos, infos[:], []
    infos = [scan_line(data[:first_end], errors)]
    scanned = infos[:]
    provisional: list[LineInfo] = []
    append = infos.append
    keep = provisional.append
    source = TextBytes(data)
    view = memoryview(data)
    find = data.find
    size = len(data)
    start = first_end + 1
    while True:
        end = find(b"\n", start)
        if end < 0:
            end = size
        info = scan_envelope(view[start:end])
        if info is None:
            info = scan_line(data[start:end], errors)
            scanned.append(info)
        else:
            info.__class__ = FileLineInfo
            cast(FileLineInfo, info).keep_place(source, text_place(start, end - start))
            keep(info)
        append(info)
        if end == size:
            return infos, scanned, provisional
        start = end + 1


#: the slots of a line's facts a full scan gives (its number is the document's, ``source`` the
#: provisional line's own)
_FACT_SLOTS: tuple[Any, ...] = tuple(
    LineInfo.__dict__[name] for name in LineInfo.__slots__ if name not in ("line", "source")
)


def _take_facts(provisional: LineInfo, full: LineInfo) -> None:
    """Make ``provisional`` (a :class:`FileLineInfo` of a ``quick`` load) the line ``full`` (its
    full scan) is, in place, its bytes its own: the text it was read from is no longer held."""
    provisional.__class__ = full.__class__
    for slot in _FACT_SLOTS:
        slot.__set__(provisional, slot.__get__(full, LineInfo))
    del provisional.source


def _runs(starts: list[int], splices: Sequence[Splice]) -> Iterator[tuple[int, int, list[Splice]]]:
    """The runs of ``splices`` that touch the same lines, each with the first and last line it
    touches (of the lines starting at ``starts``): a splice touches the lines its range starts and
    ends on, an insertion the line it is on."""
    run: list[Splice] = []
    first = last = -1
    for splice in splices:
        start_line = bisect.bisect_right(starts, splice.start) - 1
        end_line = bisect.bisect_right(starts, splice.end) - 1
        if run and start_line <= last:
            run.append(splice)
            last = max(last, end_line)
            continue
        if run:
            yield first, last, run
        first, last, run = start_line, end_line, [splice]
    if run:
        yield first, last, run


def _file_place(lines: list[LineInfo], ranges: dict[int, FileRanges]) -> tuple[FileRanges, int] | None:
    """Where ``lines`` (consecutive) lie in their file, one after the other as they were read (a
    reader of its byte ranges, the first line's offset); None when they do not (a line holding its
    bytes, read from elsewhere, or moved). ``ranges``: the reader of each file made so far, by
    the id of its :class:`FileBytes` (one per file, not one per run of lines)."""
    first = lines[0]
    if type(first) is not FileLineInfo:
        return None
    source = first.source
    place = RAW_SLOT.__get__(first, LineInfo)
    if type(source) is not FileBytes or type(place) is not int:
        return None
    for n, info in enumerate(lines):
        if (
            type(info) is not FileLineInfo
            or info.source is not source
            or RAW_SLOT.__get__(info, LineInfo) != place + n
        ):
            return None
    reader = ranges.get(id(source))
    if reader is None:
        reader = ranges[id(source)] = FileRanges(source)
    return reader, source.starts[place]


def _pieces(
    old: list[LineInfo], run: list[Splice], offset: int, in_file: tuple[FileRanges, int] | None
) -> Iterator[tuple[bytes, int | None]]:
    """The text of the lines ``old`` (the first at ``offset`` in the text) with the splices
    ``run`` applied, in pieces, each with where it starts in the old text (None for a splice's
    data): the bytes between the splices, read from the file (``in_file``: where the lines lie in
    it) or the lines, and each splice's data, a streamed one chunk by chunk."""
    starts = []  # of the lines in their text
    length = -1
    for info in old:
        starts.append(length + 1)
        length += info.byte_length + 1

    def between(start: int, end: int) -> bytes:
        if end <= start:
            return b""
        if in_file is None:  # from the lines that hold them (a splice's range is not read)
            first, last = bisect.bisect_right(starts, start) - 1, bisect.bisect_right(starts, end - 1) - 1
            text = b"\n".join([info.raw for info in old[first : last + 1]])
            return text[start - starts[first] : end - starts[first]]
        data = os.pread(in_file[0].file.fd, end - start, in_file[1] + start)
        if len(data) != end - start:
            raise StaleFileError(
                "the file changed while it was read: another process truncated or rewrote it"
            )
        return data

    position = 0
    for splice in run:
        start = splice.start - offset
        yield between(position, start), position
        if isinstance(splice.data, bytes):
            yield splice.data, None
        else:
            for chunk in splice.data:
                yield chunk, None
        position = splice.end - offset
    yield between(position, length), position


def _lines_of(pieces: Iterable[tuple[bytes, int | None]]) -> Iterator[tuple[bytes, int | None]]:
    """The lines of a text given in ``pieces`` (as :func:`_pieces` gives them), each with where it
    starts in the old text when its bytes are one run of it (else None: a splice's bytes are among
    them, or its bytes are on both sides of a splice's range)."""
    held: list[bytes] = []  # the pieces of the line being assembled
    old_start: int | None = None
    old_end = 0  # where the run of the old text that line holds ends
    for piece, at in pieces:
        for n, part in enumerate(piece.split(b"\n")):
            if n:  # a line break: the line held so far is whole
                yield b"".join(held), old_start if held else None
                held = []
                if at is not None:
                    at += 1
            if not part:
                continue
            if at is None:
                old_start = None
            elif not held:
                old_start = at
            elif old_start is not None and old_end != at:
                old_start = None
            if at is not None:
                at += len(part)
                old_end = at
            held.append(part)
    yield b"".join(held), old_start if held else None


def _counted_from_one(line: int) -> int:
    """pi's number of a line (its index from 1): lines end at "\\n" only."""
    return line + 1


def _labels_another_id(info: LineInfo) -> bool:
    """A label entry line whose ``targetId`` is not a string (see :meth:`SessionDocument.labels_naming`)."""
    return info.kind == L.ENTRY and info.etype == "label" and info.ref.__class__ is not str


class SessionDocument:
    """The analysed lines of one session text, kept up to date under edits."""

    def __init__(
        self,
        data: bytes | str = b"",
        *,
        errors: str | None = None,
        quick: bool = False,
        pi: PiVersion = DEFAULT_PI,
    ):
        """``quick``: read only the envelope of ordinary entry lines now, so that the first diagnostics
        come sooner; the document is then :attr:`provisional` until :meth:`finish` (which every edit
        calls first) completes it. Until then only :data:`lines.ENVELOPE_CODES` problems are exact (see
        :func:`diagnostics.first_pass_diagnostics`). ``pi``: the pi release whose reading of the file the
        analysis follows (a version string or a Profile; PiVersionError if unknown)."""
        self.profile: Profile = profile_for(pi)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
            errors = errors or "surrogatepass"
        self.errors = errors or "replace"  # how a line's bytes decode to text
        self.lines: list[LineInfo] = []
        self.tree = TreeIndex()
        self.problem_lines: set[LineInfo] = set()
        self.headers: list[LineInfo] = []
        self.edits: set[LineInfo] = set()  # the ``context_edit`` entry lines
        #: the label entry lines whose ``targetId`` is not a string (see :meth:`labels_naming`)
        self.labels_of_other_ids: set[LineInfo] = set()
        self.version = 0  # bumped on every change (of the text or of the profile)
        #: the number (from 1) that the reader of the analysis' texts gives a line, by its index
        self.line_number: Callable[[int], int] = _counted_from_one
        self._leaf_path: tuple[LineInfo | None, int, set[LineInfo]] = (None, -1, set())
        self._first_kept: tuple[int, LineInfo | None] = (-1, None)  # (the version, the line): first_kept
        self._held_leaf: Any = ABSENT  # see set_leaf
        #: the file on disk starts with a byte order mark that the text lacks (see set_disk_start)
        self.disk_bom = False
        #: the encoding other than UTF-8 the byte order mark of the file on disk names, which an
        #: editor decoded the text from (see set_disk_start)
        self.disk_encoding: str | None = None
        self._bom_line: LineInfo | None = None
        self._provisional: list[LineInfo] = []
        self._finished = 0  # how many of them finish() has read in full so far
        self._scanned: list[LineInfo] = []
        self._repair_utf8 = False  # provisional lines may hold invalid UTF-8 (``from_editor_bytes``)
        self._load(data, quick)

    # -- building -----------------------------------------------------------------------------

    def _load(self, data: bytes, quick: bool = False) -> None:
        # Line facts hold no reference cycles; letting the cyclic GC walk the growing heap during
        # a bulk load of 100,000s of objects costs more than the load itself.
        with gc_paused():
            self._load_lines(data, quick)

    def set_profile(self, pi: PiVersion) -> None:
        """Follow pi release ``pi`` from now on (a new :attr:`version` when that changes anything)."""
        profile = profile_for(pi)
        if profile is not self.profile:
            self.profile = profile
            self.version += 1

    @classmethod
    def from_file(cls, path: str, *, pi: PiVersion = DEFAULT_PI, end: int | None = None) -> SessionDocument:
        """The document of a file on disk whose lines keep their place in it, not their bytes
        (:meth:`load_file`), read as pi release ``pi`` reads it. Raises OSError."""
        doc = cls(pi=pi)
        doc.load_file(path, end)
        return doc

    def load_file(self, path: str, end: int | None = None, check: Check | None = None) -> int:
        """Replace the document with the file at ``path``, read in chunks; each line keeps its facts
        and its place in the file instead of its bytes (:class:`FileLineInfo`): the memory of the
        line facts only, for a session of any size (``pi-session check``, files an editor does not
        send). Lines written later by edits hold bytes as usual. If another process rewrites the
        file in place, lines read what it holds then (the language server reloads such a file).
        ``end``: read the file as if it ended there (what a repair plans for: the bytes another
        process appends meanwhile are copied as they are). ``check``: called every
        :data:`~.pauses.CHECK_EVERY` lines read; what it raises stops the read, the document left
        as it was. Returns the number of bytes read. Raises OSError (NotRegularFile for a FIFO or
        a device, which is not read)."""
        fd = open_regular(path)
        source = FileBytes(fd)  # closes the descriptor when the last line lets go of it
        starts = source.starts.append
        tree = TreeIndex()
        index_entry = tree.start_build()  # as each line is read (see start_build)
        with gc_paused():
            errors = self.errors
            entry = L.ENTRY
            file_line = FileLineInfo
            set_place = RAW_SLOT.__set__  # (FileLineInfo.keep_place, inline: the hot loop)
            infos: list[LineInfo] = []
            append = infos.append
            size = 0
            ends_with_newline = True  # an empty file too: it is one empty line
            for line_no, offset, data, terminated in iter_physical_lines(fd, end=end):
                if check is not None and not line_no % CHECK_EVERY:
                    check()
                ends_with_newline = terminated
                size = offset + len(data) + terminated
                starts(offset)
                if line_no == 0:
                    # the first line keeps its bytes (a header, or why there is none)
                    info = scan_line(data, errors, first=data.startswith(BOM_BYTES))
                else:
                    info = scan_line(data, errors, keep_timestamp=False)
                    info.__class__ = file_line
                    info.source = source
                    set_place(info, line_no)  # not its bytes
                info.line = line_no
                append(info)
                if info.kind == entry:
                    index_entry(info)
            if infos:
                starts(size + (not ends_with_newline))
            if ends_with_newline:  # "a\n".split("\n") ends with an empty line
                info = scan_line(b"", errors)
                info.line = len(infos)
                append(info)
            self._install(infos, infos, [], tree)
        return size

    def _load_lines(self, data: bytes, quick: bool = False) -> None:
        errors = self.errors
        provisional: list[LineInfo] = []
        if quick:
            infos, scanned, provisional = _quick_lines(data, errors)
        else:
            infos = scanned = [scan_line(raw, errors) for raw in data.split(b"\n")]
        if infos[0].raw.startswith(BOM_BYTES):
            infos[0] = scanned[0] = scan_line(infos[0].raw, errors, first=True)
        self._install(infos, scanned, provisional)

    def _install(
        self,
        infos: list[LineInfo],
        scanned: list[LineInfo],
        provisional: list[LineInfo],
        tree: TreeIndex | None = None,
    ) -> None:
        """Make ``infos`` the document's lines. ``tree``: the lines are numbered already and their
        entries added to it in file order (:meth:`TreeIndex.start_build`); else both are done here."""
        self._provisional = provisional
        self._finished = 0
        self._scanned = scanned  # the lines scan_line read (for ``from_editor_bytes``)
        self._bom_line = infos[0] if infos[0].bom else None
        self._leaf_path = (None, -1, set())  # its lines are gone
        if tree is None:
            for i, info in enumerate(infos):
                info.line = i
        self.lines = infos
        # a provisional line is an ordinary entry without problems (yet): only those scanned count
        self.problem_lines = {i for i in scanned if i.problems}
        self.headers = [i for i in scanned if i.kind == L.HEADER]
        self.edits = {i for i in scanned if i.etype == "context_edit" and i.kind == L.ENTRY}
        entries = [i for i in infos if i.kind == L.ENTRY]
        self.labels_of_other_ids = {i for i in entries if _labels_another_id(i)}
        if tree is None:
            tree = TreeIndex()
            tree.update((), entries)
        else:
            tree.finish_build(entries)
        self.tree = tree
        self.version += 1

    @property
    def provisional(self) -> bool:
        """Some lines are known by their envelope only (a ``quick`` load not finished yet)."""
        return bool(self._provisional)

    def finish(self, check: Check | None = None) -> bool:
        """Complete a ``quick`` load: read the provisional lines in full, in file order, each line
        given its facts in place (the tree and the sets holding it still hold it, their envelope
        facts, the tree's, exact already). ``check``: called every :data:`~.pauses.CHECK_EVERY`
        lines read in full (:meth:`read_in_full` says which are); what it raises stops the work,
        the lines read so far kept so (the next call goes on from there). False when there was
        none."""
        provisional = self._provisional
        if not provisional:
            return False
        with gc_paused():
            errors = self.errors
            repair = self._repair_utf8
            start = self._finished
            for n in range(start, len(provisional)):
                if check is not None and n != start and not n % CHECK_EVERY:
                    self._finished = n
                    check()
                old = provisional[n]
                raw = old.raw
                if repair:
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raw = raw.decode("utf-8", "replace").encode("utf-8")
                _take_facts(old, scan_line(raw, errors))
            if repair:
                self._repair_utf8 = False
                self.errors = "surrogatepass"
            self._provisional = []
            self._finished = 0
            lines = self.lines
            self.problem_lines = {i for i in lines if i.problems}
            # (the facts the envelopes lack, a tool call's id and its results, are indexed anew)
            entries = [i for i in lines if i.kind == L.ENTRY]
            self.labels_of_other_ids = {i for i in entries if _labels_another_id(i)}
            self.tree = TreeIndex()
            self.tree.update((), entries)
            self._leaf_path = (None, -1, set())
            self.version += 1
        return True

    def read_in_full(self, line: int) -> bool:
        """Every fact of line ``line`` is known: it is before the first provisional line not read
        in full yet (:meth:`finish` reads them in file order), or there is none."""
        provisional = self._provisional
        done = self._finished
        return done >= len(provisional) or line < provisional[done].line

    @classmethod
    def from_editor_bytes(
        cls, data: bytes, *, quick: bool = False, pi: PiVersion = DEFAULT_PI
    ) -> SessionDocument | None:
        """The document of an editor's text received as UTF-8 bytes: what ``SessionDocument(text)``
        gives for ``text = data.decode("utf-8", "replace")`` (how a JSON message's invalid bytes
        decode), or None when a line read in full is not valid UTF-8 (then decode it that way).

        Validating a large text's UTF-8 up front costs more than the whole first pass, so the provisional
        lines of a ``quick`` load (whose envelope msgspec checked, not the fields it skipped) are checked
        when the document is finished, and an invalid one replaced by its repaired bytes then.
        """
        doc = cls(data, quick=quick, pi=pi)
        for info in doc._scanned:
            try:
                info.raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        doc._scanned = []
        if doc.provisional:
            # until finished, a line may hold invalid bytes: columns decode them as U+FFFD, which
            # they become
            doc._repair_utf8 = True
        else:
            doc.errors = "surrogatepass"  # as for a str: edits bring text from the editor
        return doc

    def replace_all(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        if self._repair_utf8:  # an editor's document replaced before it was finished
            self._repair_utf8 = False
            self.errors = "surrogatepass"
        self._load(data)

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line_bytes(self, n: int) -> bytes:
        return self.lines[n].raw

    def line_text(self, n: int) -> str:
        return self.lines[n].raw.decode("utf-8", self.errors)

    def text(self) -> str:
        return b"\n".join(info.raw for info in self.lines).decode("utf-8", self.errors)

    def data(self) -> bytes:
        return b"\n".join(info.raw for info in self.lines)

    def line_starts(self) -> list[int]:
        """Where each line starts in :meth:`data` (for a document of a file, in the file), without
        reading lines of a file again."""
        starts = []
        position = 0
        for info in self.lines:
            starts.append(position)
            position += info.byte_length + 1
        return starts

    def byte_size(self) -> int:
        return sum(i.byte_length for i in self.lines) + len(self.lines) - 1

    def appended_in(self, data: bytes) -> bytes | None:
        """What ``data`` holds after the document's text when it starts with that text, byte for
        byte (lines appended to it; ``b""`` for the same text); None otherwise. Compared line by
        line in place: no copy of either text is made."""
        lines = self.lines
        last = len(lines) - 1
        size = len(data)
        position = 0
        for n, info in enumerate(lines):
            raw = info.raw
            if not data.startswith(raw, position):
                return None
            position += len(raw)
            if n < last:
                if position >= size or data[position] != 0x0A:
                    return None
                position += 1
        return data[position:]

    # -- edits --------------------------------------------------------------------------------

    def apply_edit(
        self, start_line: int, start_col: int, end_line: int, end_col: int, text: bytes | str
    ) -> None:
        """Replace the text between two positions (line, byte column) with ``text``.

        Positions past the end clamp to the end of the document, as editors expect.
        """
        if isinstance(text, str):
            text = text.encode("utf-8", "surrogatepass")
        self.finish()
        self._scanned = []
        start_line, start_col, end_line, end_col = self._clamped_range(
            start_line, start_col, end_line, end_col
        )
        first_raw = self.lines[start_line].raw
        last_raw = self.lines[end_line].raw
        start_col = _char_boundary(first_raw, start_col)  # never split a UTF-8 sequence
        end_col = _char_boundary(last_raw, end_col)
        new_raws = (first_raw[:start_col] + text + last_raw[end_col:]).split(b"\n")
        old = self.lines[start_line : end_line + 1]

        # keep the infos of lines that come out unchanged at either end of the edited block
        head = 0
        limit = min(len(old), len(new_raws))
        while head < limit and old[head].raw == new_raws[head]:
            head += 1
        tail = 0
        while tail < limit - head and old[len(old) - 1 - tail].raw == new_raws[len(new_raws) - 1 - tail]:
            tail += 1
        removed = old[head : len(old) - tail]
        errors = self.errors
        added = [scan_line(raw, errors) for raw in new_raws[head : len(new_raws) - tail]]
        if not removed and not added:
            return
        at = start_line + head
        self.lines[at : at + len(removed)] = added
        if len(added) != len(removed):
            for i in range(at, len(self.lines)):
                self.lines[i].line = i
        else:
            for i, info in enumerate(added, at):
                info.line = i
        self._account(removed, added)
        self._rescan_first_line()
        self.version += 1

    def apply_splices(self, splices: Sequence[Splice]) -> None:
        """Make the document the text with ``splices`` (sorted, disjoint, byte ranges of
        :meth:`data`) applied, as :func:`autofix.spliced` writes it, without writing it: only the
        lines a splice touches are read again; the others keep their facts, and a line of a file its
        place in it. A line a splice cuts out of a file's line (a glued line split apart) is read
        from the file too, not held. Raises StaleFileError when a line the splices touch is no
        longer in the file (another process truncated it), OSError when it cannot be read."""
        if not splices:
            return
        self.finish()
        self._scanned = []
        old = self.lines
        lines: list[LineInfo] = []
        copied = 0  # the old lines before this are in ``lines``
        with gc_paused():
            starts = self.line_starts()
            ranges: dict[int, FileRanges] = {}  # of each file the lines are read from
            for first, last, run in _runs(starts, splices):
                lines += old[copied:first]
                touched = old[first : last + 1]
                lines += self._spliced_lines(touched, run, starts[first], _file_place(touched, ranges))
                copied = last + 1
            lines += old[copied:]
            tree = TreeIndex()
            index_entry = tree.start_build()  # (in file order, as a load builds it)
            entry = L.ENTRY
            for number, info in enumerate(lines):
                info.line = number
                if info.kind == entry:
                    index_entry(info)
            self._install(lines, lines, [], tree)

    def _spliced_lines(
        self, old: list[LineInfo], run: list[Splice], offset: int, in_file: tuple[FileRanges, int] | None
    ) -> list[LineInfo]:
        """The lines ``old`` (consecutive, the first at ``offset`` in the text; ``in_file``: where
        they lie in their file, see :func:`_file_place`) become with the splices ``run`` applied,
        each scanned as a load scans it. The new text is gone through piece by piece (the bytes
        between the splices, each splice's data), never joined whole: a migration's splice is as
        long as the file."""
        errors = self.errors
        found: list[LineInfo] = []
        for raw, old_start in _lines_of(_pieces(old, run, offset, in_file)):
            if offset == 0 and not found:  # the text's first line keeps its bytes, as a load's does
                info = scan_line(raw, errors, first=raw.startswith(BOM_BYTES))
            elif in_file is not None and raw and old_start is not None:
                # bytes of the file, none of a splice's: read from there again when asked
                info = scan_line(raw, errors, keep_timestamp=False)
                info.__class__ = FileLineInfo
                cast(FileLineInfo, info).keep_place(in_file[0], text_place(in_file[1] + old_start, len(raw)))
            else:
                info = scan_line(raw, errors)
            found.append(info)
        return found

    def _clamped_range(
        self, start_line: int, start_col: int, end_line: int, end_col: int
    ) -> tuple[int, int, int, int]:
        """The range with positions past the end moved to the end, start first."""
        last = len(self.lines) - 1
        if start_line > last:
            start_line, start_col = last, len(self.lines[last].raw)
        if end_line > last:
            end_line, end_col = last, len(self.lines[last].raw)
        if (end_line, end_col) < (start_line, start_col):
            start_line, start_col, end_line, end_col = end_line, end_col, start_line, start_col
        return start_line, start_col, end_line, end_col

    def _rescan_first_line(self) -> None:
        """Only the file's first line looks through a byte order mark: keep that true after edits."""
        stale = []
        for info in self.lines[:1]:
            if info.raw.startswith(BOM_BYTES) and not info.bom:
                stale.append(info)
        moved = self._bom_line
        if (
            moved is not None
            and moved is not self.lines[0]
            and moved.line < len(self.lines)
            and self.lines[moved.line] is moved
        ):
            stale.append(moved)  # pushed down by an insertion above it
        self._bom_line = None
        for info in stale:
            fresh = scan_line(info.raw, self.errors, first=info.line == 0)
            fresh.line = info.line
            self.lines[info.line] = fresh
            self._account([info], [fresh])
        if self.lines[0].bom:
            self._bom_line = self.lines[0]

    def _account(self, removed: list[LineInfo], added: list[LineInfo]) -> None:
        for info in removed:
            self.problem_lines.discard(info)
            self.edits.discard(info)
            self.labels_of_other_ids.discard(info)
        for info in added:
            if info.problems:
                self.problem_lines.add(info)
            if info.etype == "context_edit" and info.kind == L.ENTRY:
                self.edits.add(info)
            if _labels_another_id(info):
                self.labels_of_other_ids.add(info)
        if any(i.kind == L.HEADER for i in removed) or any(i.kind == L.HEADER for i in added):
            self.headers = sorted(
                [h for h in self.headers if h not in set(removed)] + [i for i in added if i.kind == L.HEADER],
                key=lambda h: h.line,
            )
        self.tree.update(
            (i for i in removed if i.kind == L.ENTRY),
            [i for i in added if i.kind == L.ENTRY],
        )

    # -- file-level facts ---------------------------------------------------------------------

    def first_kept(self) -> LineInfo | None:
        """The first line whose value pi keeps (the header, where there is one). Kept per version of
        the document: the features ask it per entry (is_v1), and the lines before it may be many."""
        version, found = self._first_kept
        if version != self.version:
            found = next((info for info in self.lines if info.kept), None)
            self._first_kept = (self.version, found)
        return found

    def valid_header(self) -> LineInfo | None:
        """The header as the reference accepts it: the first kept value, a ``session`` object with
        a string id (a leading BOM is reported separately and looked through)."""
        first = self.first_kept()
        if first is not None and first.kind == L.HEADER and isinstance(first.id, str):
            return first
        return None

    def format_version(self) -> int | float | None:
        """1, 2, 3 (or the header's other number); None when the header's version is not numeric."""
        header = self.first_kept()
        if header is None or header.kind != L.HEADER:
            return 3
        v = header.version
        if v is ABSENT or v is None:
            return 1
        n = to_number(v)
        if n != n:  # NaN
            return None
        return n

    def is_v1(self) -> bool:
        v = self.format_version()
        return v is not None and v < 2

    def has_bom(self) -> bool:
        """The text starts with a byte order mark."""
        return bool(self.lines) and self.lines[0].raw.startswith(BOM_BYTES)

    def set_disk_start(self, start: bytes) -> bool:
        """Tell the analysis how the file this text is of starts (its first
        :data:`BOM_PREFIX_SIZE` bytes). Editors hide a byte order mark (to them it is the file's
        encoding) and send the text without it, decoded, but pi reads the file's bytes: a UTF-8 mark
        makes it refuse the file (:attr:`disk_bom`, PI014: diagnostics and repairs, made to the file,
        :attr:`Repair.on_disk`, look at the file then, not only at the text), and so does a file in
        UTF-16 or UTF-32 (:attr:`disk_encoding`, PI017). Returns whether that changed (a new
        :attr:`version`)."""
        bom = start.startswith(BOM_BYTES) and not self.has_bom()
        found = other_bom(start)
        encoding = found[1] if found else None
        if bom == self.disk_bom and encoding == self.disk_encoding:
            return False
        self.disk_bom, self.disk_encoding = bom, encoding
        self.version += 1
        return True

    def other_bom_in_text(self) -> tuple[bytes, str] | None:
        """The UTF-16 or UTF-32 byte order mark the text itself starts with (bytes read from disk,
        which no editor sends) and the encoding it names (:func:`other_bom`)."""
        return other_bom(self.lines[0].raw[:BOM_PREFIX_SIZE]) if self.lines else None

    def encoding_not_utf8(self) -> str | None:
        """The encoding (UTF-16 or UTF-32) the byte order mark of the file names: the text's own
        first bytes (read from disk), or the file on disk under an editor's decoded text."""
        in_text = self.other_bom_in_text()
        return in_text[1] if in_text else self.disk_encoding

    def bom_in_file(self) -> bool:
        """The file starts with a byte order mark: in the text, or on disk before it."""
        return self.has_bom() or self.disk_bom

    def ends_without_newline(self) -> bool:
        return bool(self.lines) and self.lines[-1].raw != b""

    # -- tree facts ---------------------------------------------------------------------------

    def entries(self) -> Iterable[LineInfo]:
        return (i for i in self.lines if i.kind == L.ENTRY)

    def set_leaf(self, leaf_id: Any = ABSENT) -> None:
        """Where the session held on this file continues: ``leaf_id`` an entry id (``branch`` moved
        the leaf back to it), None (``resetLeaf``: no leaf, the next entry starts a new root), or
        ABSENT (the default) for the file's own leaf, its last entry, as pi has it on opening. An id
        the document does not hold (an entry the editor's text does not have) counts as ABSENT.
        Hovers, hints and lenses follow it; diagnostics do not depend on it."""
        self._held_leaf = leaf_id

    @property
    def held_leaf(self) -> Any:
        """What :meth:`set_leaf` was last given (ABSENT if never)."""
        return self._held_leaf

    def leaf(self) -> LineInfo | None:
        """The entry the session's leaf is: the last entry in file order (the reference's leaf after
        loading), unless :meth:`set_leaf` says the session continues elsewhere."""
        held = self._held_leaf
        if held is None:
            return None
        if held is not ABSENT:
            found = self.entry_by_id(held)
            if found is not None:
                return found
        for i in range(len(self.lines) - 1, -1, -1):
            info = self.lines[i]
            if info.kind == L.ENTRY:
                return info
        return None

    def leaf_path(self) -> set[LineInfo]:
        """The entries on the path from the root to the leaf."""
        leaf = self.leaf()
        cached_leaf, epoch, path = self._leaf_path
        if cached_leaf is leaf and epoch == self.tree.epoch and (leaf is None or leaf in self.tree.members):
            return path
        if (
            leaf is not None
            and epoch == self.tree.epoch
            and cached_leaf is not None
            and cached_leaf in self.tree.members
            and self.tree.parent(leaf) is cached_leaf
            and cached_leaf in path
        ):
            path.add(leaf)  # the usual append: one more step down the same path
        else:
            path = set(self.tree.walk_up(leaf))
        self._leaf_path = (leaf, self.tree.epoch, path)
        return path

    def labels_naming(self, key: Any) -> list[LineInfo]:
        """The label entry lines, in file order, whose ``targetId`` is not a string and names the
        id whose index key is ``key`` (:func:`~..format.jsvalue.index_key`): pi keys its labels
        by the value (a ``Map``), so a label of a hand-made file names an entry whose id is a
        number or a boolean. The tree indexes the references by string (those of a string id are
        its ``referrers``). None in a version 1 file, whose entries pi's migration gives new ids."""
        if not self.labels_of_other_ids or self.is_v1():
            return []
        found = [i for i in self.labels_of_other_ids if index_key(i.ref) == key]
        found.sort(key=lambda i: i.line)
        return found

    def entry_by_id(self, value: Any) -> LineInfo | None:
        return self.tree.resolve(index_key(value))
