"""``PreviewCache``: per session, what the previews need from each (immutable) entry, kept across
walks: made while a scan holds the lines, read ahead in one pass, loaded from and kept with the
file's index (see preview_store).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from operator import attrgetter, is_
from typing import Any, TypeVar

from ..format.entry import Entry
from ..format.jsvalue import index_key
from ..format.scan import FileLineSource, observing_lines
from . import preview_store
from .describe import (
    ToolResultPart,
    call_text,
    edit_shown_by,
    finish_preview,
    is_silent_turn,
    preview_part,
    showing_edits_as,
    value_of,
)
from .entry_facts import (
    assistant_facts,
    assistants_among,
    in_one_pass,
    is_silent_decoded_turn,
    made_from_line,
    part_and_facts,
    usual_part_and_facts,
)
from .fields import field
from .known_silences import FileOrder, KnownSilences, assistants_and_next_entries
from .preview_pass import MIN_BATCH, silences
from .profiles import Profile
from .tool_call_text import ToolCalls, home_directory

# A walk that needed this many previews not known yet is likely to need many more (a whole tree, a
# big page): those of the entries next in the walk are read in one pass, so many at a time. Those
# stored with the file's index are loaded after this many misses at the least.
PREFETCH_AFTER_MISSES = 256
# The stored previews of a session are loaded once its walks missed this fraction of its entries
# (see PreviewCache._missed_share): loading them costs about what reading that many bodies one by
# one does, so a walk that needs fewer never pays more than twice what it needed; figures in
# bench/RESULTS.md. The silent turns alone (what the filters ask of every assistant message, see
# PreviewCache._kept_head) cost a fraction of that to read, hence their own smaller share.
STORED_LOAD_SHARE = 8
SILENT_LOAD_SHARE = 64
PREFETCH_BATCH = 4096
# Whether an assistant message is a silent turn is read for this many of them at a time, once a
# walk read many (see PreviewCache._read_silences).
SILENCE_BATCH = 4096


_offset = attrgetter("offset")
_Item = TypeVar("_Item", bound=tuple[Any, ...])  # (entry, what is known of it, ...)


def _cached(items: dict[int, _Item], entry: Any) -> _Item | None:
    """What ``items`` hold for ``entry`` itself (not for an object that had its id before)."""
    found = items.get(id(entry))
    return found if found is not None and found[0] is entry else None


class PreviewCache:
    """Per session: what the previews need from each entry, kept across ``pi/getTree`` calls.

    Entries never change once read or written (a reload makes new ones), so an entry's preview part,
    tool calls and whether the filters hide it as a silent turn are computed once (a session that
    grows while an editor shows its tree is walked again after every append; reading every assistant
    body again each time was most of such a walk); items are keyed by the entry object (``id()``,
    checked with ``is``: the cache holds the entry, so the id cannot be reused). Each tree walk keeps
    only the entries it met, so entries the session dropped do not accumulate. What many entries
    need is read in one pass over their file (see preview_pass), not entry by entry; an assistant
    message read for its facts gives its preview part from the same read.

    What was made is kept with the file's index (see preview_store) for the next process: by
    :meth:`prefetch` once a walk has every preview (``keep_in_walk``, the CLI's whole tree), or by
    the job :meth:`keeper` returns, which a server runs after its reply. Stored previews are read
    by the walks that list the file's entries, and, given ``entries`` (the session's entries in file
    order), by any walk once it missed many (a tree view's windows).
    """

    __slots__ = (
        "_cursor",
        "_head",
        "_made",
        "_misses",
        "_misses_in_all",
        "_one_walk",
        "_previous",
        "_scanned",
        "_scanned_calls",
        "_shown",
        "_silences",
        "_silences_new",
        "_silences_read",
        "_stored",
        "_walk_positions",
        "_walked",
        "calls",
        "edit_shown",
        "entries",
        "entry_count",
        "home",
        "keep_in_walk",
        "keeping",
        "parts",
    )

    def __init__(
        self,
        home: str | None = None,
        *,
        entries: Callable[[], list[Any]] | None = None,
        entry_count: Callable[[], int] | None = None,
        keep_in_walk: bool = True,
        profile: Profile | None = None,
    ) -> None:
        #: what tool-call paths are shortened against (None: :func:`home_directory` at each walk)
        self.home = home
        #: the preview of every ``context_edit`` under ``profile``'s release when it ignores them
        #: (None: pi 1.6.0's, from the entry); applied as a walk's previews are given out, the parts
        #: made and kept being the same under every release
        self.edit_shown = edit_shown_by(profile)
        self.parts: dict[int, tuple[Any, str | ToolResultPart]] = {}  # this walk's (see previews)
        self._previous: dict[int, tuple[Any, str | ToolResultPart]] = {}  # the walk's before
        self.calls: dict[int, tuple[Any, list[tuple[Any, tuple[Any, Any]]], bool]] = {}
        self.entries = entries
        self.entry_count = entry_count  # len(entries()) without making the list
        self.keep_in_walk = keep_in_walk
        self.keeping = False  # a job of keeper() is pending (set and cleared by its owner)
        self._walked: list[Any] = []  # the entries of the last walk (see previews)
        self._walk_positions: dict[int, int] | None = None  # id(entry) -> where in _walked
        self._misses = 0  # this walk's
        self._misses_in_all = 0  # every walk's (see _load_stored_after_misses)
        self._cursor = 0  # where the last prefetch of the walk started (see _walk_from)
        self._made = 0  # previews made since they were last kept (see prefetch, keeper)
        self._stored = False  # the previews kept with the file's index were looked for
        self._one_walk: int | None = None  # the one walk's ``longest`` (see made_while_scanning)
        # the previews were loaded as the one walk shows them, cut (see _load_shown): no tool
        # calls are needed for them, and they are not to be kept
        self._shown = False
        # (the file's source, what its stored previews say without the previews; see _kept_head)
        self._head: tuple[weakref.ref[Any], preview_store.KeptHead | None] | None = None
        # whether an assistant message is a silent turn, read alone (see silent_turn)
        self._silences = KnownSilences()
        self._silences_read = 0  # how many (they count as misses towards the kept silent turns)
        self._silences_new = 0  # how many since they were last kept (see has_new_previews)
        self._scanned: preview_store.Made | None = None  # what the scans made (made_while_scanning)
        # the tool calls a scan for the one walk gathered, and the assistant messages they are of
        self._scanned_calls: tuple[ToolCalls, list[Any]] | None = None

    def _load_stored(self, entries: list[Any], fd: int | None = None) -> int:
        """Take what the file's stored previews hold (see preview_store), once. A tool result's
        stored text is its rendering (``ToolResultPart.memo``) for the very call object made here from
        the assistant message it was made from, and for the same home directory: a walk that finds
        another call for its id, or another home, renders it again. How many previews made here
        before (those of this walk and the one before) they do not describe."""
        if self._stored:
            return 0
        self._stored = True
        return 0 if self._load_shown(entries, fd) else self._load_whole(entries, fd)

    def _load_whole(self, entries: list[Any], fd: int | None) -> int:
        """:meth:`_load_stored`'s load of the stored previews whole."""
        home, described, stored_parts, assistants, other_silent = preview_store.load(entries, fd)
        parts, calls, previous = self.parts, self.calls, self._previous
        if len(other_silent) >= PREFETCH_AFTER_MISSES and self.entries is not None:
            self._file_order(other_silent[0][0])  # (one byte each there, see known_silences)
        self._silences.merge(other_silent)
        held_before = len(parts.keys() | previous.keys()) if previous else len(parts)
        call_at: dict[tuple[int, Any], Any] = {}  # (offset of its assistant message, key) -> call
        for at, silent, entry_calls in assistants:
            entry = described[at]
            listed = [(index_key(key), call) for key, call in entry_calls]
            calls[id(entry)] = (entry, listed, silent)
            offset = entry.offset
            for key, call in listed:
                call_at[offset, key] = call
        described_before = 0  # (an entry in the cache is alive: no other entry has its id)
        for entry, part in zip(described, stored_parts, strict=True):
            key = id(entry)
            if key in parts or key in previous:
                described_before += 1
            if type(part) is str:
                parts[key] = (entry, part)
                continue
            result = ToolResultPart(part[0], part[1])
            text, source = part[2], part[3]
            if text is not None and home is not None:
                shown = call_at.get((source, index_key(part[0])))
                if shown is not None:
                    result.memo = (shown, home, text)
            parts[key] = (entry, result)
        return held_before - described_before

    def _load_shown(self, entries: list[Any], fd: int | None) -> bool:
        """For the one walk (see :meth:`made_while_scanning`) of the file's every entry, nothing
        made before: load the stored previews as the walk shows them, cut (preview_store.load_shown).
        Whether they were."""
        if self._one_walk is None or fd is not None or self.parts or self.calls:
            return False
        home = home_directory() if self.home is None else self.home
        shown = preview_store.load_shown(entries, home, self._one_walk, _unshown_preview)
        if shown is None:
            return False
        self.parts.update(zip(map(id, entries), zip(entries, shown, strict=True), strict=True))
        self._shown = True
        return True

    def _load_stored_after_misses(self) -> bool:
        """Once the walks missed many previews or facts: load the stored ones of the session's
        entries (``entries``), if not done yet. Whether they were loaded now.

        Loading costs a little for every entry of the session (its entry made, its stored part
        decoded), a miss reads one body: the walks load them once they missed, together, a share
        of the session's entries (:data:`STORED_LOAD_SHARE`), so that a tree view's first window
        of a huge session reads its few bodies, and a walk that shows most rows loads them."""
        self._misses += 1
        self._misses_in_all += 1
        if self._stored or self.entries is None or not self._missed_share(STORED_LOAD_SHARE):
            return False
        self._made = self._load_stored(self.entries())  # what is new to keep (dropped: not kept)
        return True

    def _missed_share(self, share: int, more: int = 0) -> bool:
        """Whether the walks together missed a ``share``-th of the session's entries (and
        :data:`PREFETCH_AFTER_MISSES` at least; ``more``: misses counted elsewhere): what pays
        for reading what is kept of them all instead of more misses (the first walks of a huge
        session show a few hundred rows)."""
        missed = self._misses_in_all + more
        if missed < PREFETCH_AFTER_MISSES:
            return False
        count = 0 if self.entry_count is None else self.entry_count()
        return missed >= count // share

    def collect_tool_calls(self, entries: Iterable[Any], *, with_previews: bool = False) -> ToolCalls:
        """The tool calls of the assistant messages among ``entries`` (a walk's, in its order).
        ``with_previews``: the walk shows most of its entries; the previews it did not have
        before are made in the same pass over the file (its rows would miss them one after the
        other, and read them a batch at a time)."""
        walked = self._walked = list(entries)
        self._walk_positions = None
        self._load_stored(walked)
        old = self.calls
        kept: dict[int, tuple[Any, list[tuple[Any, tuple[Any, Any]]], bool]] = {}
        calls: ToolCalls = {}
        assistants = assistants_among(walked)
        parts, previous = self.parts, self._previous
        if with_previews and not (old or parts or previous):
            unknown = walked[:]  # nothing known yet: the assistant messages and all the others
        else:
            unknown = [e for e in assistants if _cached(old, e) is None]
            if with_previews:
                listed = set(map(id, unknown))
                known, known_before = parts.get, previous.get  # (_cached inline: once per entry)
                unknown += [
                    e
                    for e in walked
                    if ((now := known(e_key := id(e))) is None or now[0] is not e)
                    and ((before := known_before(e_key)) is None or before[0] is not e)
                    and e_key not in listed
                ]
        for entry, value in in_one_pass(unknown):
            part, facts = part_and_facts(entry, value)
            key = id(entry)
            if facts is not None:
                found = old.get(key)
                if found is None or found[0] is not entry:
                    old[key] = facts
            # the same read gives the preview the walk shows next
            found_part = parts.get(key)
            if found_part is None or found_part[0] is not entry:
                parts[key] = (entry, part)
        self._made += len(unknown)
        for entry in assistants:
            key = id(entry)
            found = old.get(key)
            if found is None or found[0] is not entry:
                found = assistant_facts(entry)
            kept[key] = found
            for call_key, call in found[1]:
                calls[call_key] = call
        self.calls = kept
        return calls

    def tool_calls_once(self, entries: list[Any]) -> ToolCalls:
        """:meth:`collect_tool_calls` for the one walk of :meth:`previews_once`, which follows it:
        the facts of each assistant message go as its calls are taken (that walk asks no more of
        them), so that they and the calls are not both held whole. The calls a scan gathered for
        this walk (:meth:`made_while_scanning`) are taken as they are when they are those of the
        walk's assistant messages, in its order; none is needed when the previews were loaded as
        the walk shows them."""
        self._load_stored(entries)
        if self._shown:
            self.calls = {}
            return {}
        assistants = assistants_among(entries)
        scanned, self._scanned_calls = self._scanned_calls, None
        if scanned is not None:
            gathered, gathered_of = scanned
            if len(gathered_of) == len(assistants) and all(map(is_, gathered_of, assistants)):
                self.calls = {}
                return gathered
        known = self.calls
        self.calls = {}
        get = known.get  # (_cached inline: once per assistant message)
        unknown = [e for e in assistants if (had := get(id(e))) is None or had[0] is not e]
        for entry, value in in_one_pass(unknown):
            known[id(entry)] = assistant_facts(entry, value)
        take = known.pop
        calls: ToolCalls = {}
        for entry in assistants:  # in the walk's order: a later call with the same id wins
            found = take(id(entry), None)
            if found is None or found[0] is not entry:
                found = assistant_facts(entry)  # (a line the pass left out: read the usual way)
            for call_key, call in found[1]:
                calls[call_key] = call
        return calls

    def _facts(self, entry: Any) -> tuple[Any, list[tuple[Any, tuple[Any, Any]]], bool]:
        """(entry, its tool calls, whether it is a silent turn) of an assistant entry, read once per
        entry; the same read makes its preview part."""
        key = id(entry)
        found = self.calls.get(key)
        if found is not None and found[0] is entry:
            return found
        if self._load_stored_after_misses():
            found = _cached(self.calls, entry)
            if found is not None:
                return found
        value = value_of(entry)
        found = self.calls[key] = assistant_facts(entry, value)
        if _cached(self.parts, entry) is None:
            self.parts[key] = _cached(self._previous, entry) or (entry, preview_part(entry, value))
        self._count_made(entry)
        return found

    def silent_turn(self, entry: Any) -> bool:
        """``is_silent_turn`` of an assistant entry's message, read once per entry, or found among
        the silent turns kept with the file's index (see :meth:`_kept_head`). What is read for it
        is the line's stop reason and text blocks alone (see :meth:`_read_silences`): the filters
        ask every assistant message a walk passes, and a walk shows few of them (a tree view's
        levels)."""
        key = id(entry)
        found = self.calls.get(key)
        if found is not None and found[0] is entry:
            return found[2]
        known, silent = self._silences.of(entry)
        if not known:
            head = self._kept_head(entry)
            kept = None if head is None else head.silent.get(entry.offset)
            if kept is not None:
                return kept
            self._read_silences(entry)
            known, silent = self._silences.of(entry)
        if silent is not None:
            return silent
        silent = is_silent_turn(field(entry, "message"))  # (held, or an odd line: the usual way)
        self._silences.keep(entry, silent)
        return silent

    def _read_silences(self, entry: Any) -> None:
        """Read whether ``entry`` is a silent turn, and once many were read so, whether the
        assistant messages after it in its file are too, :data:`SILENCE_BATCH` of them in one pass
        (a walk down a chat asks them next, in file order as a rule), knowing where each one's line
        ends by where the next entry of the file starts."""
        if type(entry) is not Entry:
            return
        batch = [entry]
        ends: list[int] | None = None
        kept = self._silences
        from_file = type(entry._source) is FileLineSource
        if from_file and self._silences_read >= PREFETCH_AFTER_MISSES and self.entries is not None:
            order = self._file_order(entry)
            at = order.position(entry)
            if at >= 0:
                listed, states = order.listed, order.states
                stop = min(at + SILENCE_BATCH, len(listed))
                wanted = [k for k in range(at, stop) if not states[k]]
                batch = [listed[k] for k in wanted]
                ends = [order.ends[k] for k in wanted]
        self._silences_read += len(batch)
        self._silences_new += len(batch)
        decoded = 0
        for read, message in silences(batch, ends):
            kept.keep(read, is_silent_decoded_turn(message))
            decoded += 1
        if decoded < len(batch):  # lines the pass left out: read the usual way when asked, not again
            kept.merge((left, None) for left in batch)

    def _file_order(self, entry: Entry) -> FileOrder:
        """The assistant messages of the session read from the file of ``entry``, in file order,
        their offsets, and where the next entry of the file starts after each (0: none, the last),
        kept with what is known of them (see known_silences): made once per file (the messages
        appended later are read alone)."""
        source = entry._source
        order = self._silences.order_of(source)
        if order is None:
            assert self.entries is not None
            of_file = (e for e in self.entries() if type(e) is Entry and e._source is source)
            found = assistants_and_next_entries(of_file)  # (in file order as a rule: no list of all)
            if found is None:
                of_file = (e for e in self.entries() if type(e) is Entry and e._source is source)
                found = assistants_and_next_entries(sorted(of_file, key=_offset))
            assert found is not None
            order = self._silences.take_order(source, *found)
        return order

    def _kept_head(self, entry: Any) -> preview_store.KeptHead | None:
        """What the stored previews of the file of ``entry`` say without the previews (which lines
        they describe, which assistant messages are silent turns), while they are not loaded
        whole: read once per file the entries come from, once the walks missed a share of the
        session (:data:`SILENT_LOAD_SHARE`). The filters ask every assistant message a walk passes
        whether it is a silent turn, where the walk may show a few rows of each chain (a tree
        view's levels): those walks then do not miss their way to loading every stored preview;
        and previews made again of lines they describe are not new to keep."""
        if type(entry) is not Entry or self._stored:
            return None
        source = entry._source
        kept = self._head
        if kept is None or kept[0]() is not source:
            # (a walk that shows a few hundred rows reads their bodies)
            read = self._silences_read  # (what was read instead of the silent turns kept counts)
            if type(source) is not FileLineSource or not self._missed_share(SILENT_LOAD_SHARE, read):
                return None
            kept = self._head = (weakref.ref(source), preview_store.kept_head([entry]))
        return kept[1]

    def _count_made(self, entry: Any) -> None:
        """Count a preview made from ``entry``'s line as new to keep, unless the stored previews
        describe that line already (a walk that read it rather than load them all)."""
        head = self._kept_head(entry)
        if head is None or not head.describes(entry.offset):
            self._made += 1

    def tool_calls_of(self, entry: Any) -> list[tuple[Any, tuple[Any, Any]]]:
        """``tool_calls_of`` an assistant entry, read once per entry (the same call objects each
        time, so that a tool result's rendering made for one is found again)."""
        return self._facts(entry)[1]

    @contextlib.contextmanager
    def made_while_scanning(self, longest: int | None = None) -> Iterator[None]:
        """Within the block, the preview (and an assistant message's facts) of every entry a scan
        of this context decodes (a session opened without its index, or the lines it grew by) is
        made from its line while the scan holds it in memory (``scan.observing_lines``): a
        :meth:`prefetch` of these entries then reads nothing again. Kept as they come, in file
        order (see preview_store.Made), for prefetch to keep with the file's index, when they can
        be kept there (the file is opened with an index: see preview_store.can_keep).

        ``longest``: the previews are for the one walk of :meth:`previews_once`, which shows no
        more than ``longest`` characters of each. The tool calls of the assistant messages are
        gathered in file order for :meth:`tool_calls_once` (which then looks no message up again);
        previews not kept are cut so as they are made, and of such a message only its tool calls
        are kept (its facts, a tuple and a list each, are not held for the session's every
        message). The previews kept with the file's index, when they describe its every entry and
        nothing was made, are loaded as the walk shows them, cut, and their tool calls not read
        (see preview_store.load_shown): they are then not kept again."""
        self._one_walk = longest
        parts, calls = self.parts, self.calls
        held_before = len(parts)
        made = self._scanned = preview_store.Made()
        keeping: bool | None = None  # (known from the first entry: a scan reads one file)
        whole = False  # the previews kept as made are held whole (else written as made: see Made)
        one_walk = None if longest is None else _OneWalk(longest)
        self._scanned_calls = None if one_walk is None else (one_walk.calls, one_walk.assistants)

        def take(entry: Entry, line: memoryview) -> None:
            nonlocal keeping, whole
            if keeping is None:
                keeping = self.keep_in_walk and preview_store.can_keep(entry)
                # the one walk shows previews cut: those to keep are written as made, not held whole
                whole = keeping and (one_walk is None or not made.spool_to(entry._source, one_walk.calls))
            made_here = made_from_line(entry, line)
            if made_here is None:
                if not keeping or whole:
                    return  # read the usual way, when prefetch finds it missing
                made_here = usual_part_and_facts(entry)  # (written in its place among those made)
            part, facts = made_here
            if keeping:
                made.add(entry, part, facts)
            if one_walk is not None and (facts is not None or not whole):  # (held whole: calls only)
                part, facts = one_walk.take(entry, part, facts, whole=whole)
            key = id(entry)
            parts[key] = (entry, part)
            if facts is not None:
                calls[key] = facts

        try:
            with observing_lines(take):
                yield
        finally:
            self._made += len(parts) - held_before
            if not keeping:
                self._scanned = None

    def prefetch(self, entries: Iterable[Any]) -> None:
        """Compute the previews of ``entries`` not known yet (and what :meth:`collect_tool_calls`
        needs of the assistant messages among them), their lines read in one pass. With
        ``keep_in_walk``, once every entry of the walk has its preview, and many were made, they
        are kept with the file's index for the next time (see preview_store)."""
        entries = list(entries)
        self._load_stored(entries)
        parts = self.parts
        scanned, self._scanned = self._scanned, None  # (taken, or of no use now)
        if scanned is not None and scanned.spools and not all(map(is_, scanned.entries, entries)):
            # held cut (see made_while_scanning), written for the walk's first entries, and these
            # are not those (the scan read the lines a file grew by): made again whole, to keep
            scanned.close()
            for entry in scanned.entries:
                parts.pop(id(entry), None)
            scanned = None
        get = parts.get  # (_cached inline: once per entry)
        unknown = [e for e in entries if (had := get(id(e))) is None or had[0] is not e] if parts else entries
        try:
            self._prefetch_unknown(entries, unknown, scanned)
        finally:
            if scanned is not None:
                scanned.close()

    def _prefetch_unknown(
        self, entries: list[Any], unknown: list[Any], scanned: preview_store.Made | None
    ) -> None:
        """:meth:`prefetch` once it knows which of ``entries`` are ``unknown`` (``scanned``: what
        the scans made, see :meth:`made_while_scanning`)."""
        parts, calls = self.parts, self.calls
        made = self._made_to_keep(unknown, scanned)
        add = None if made is None else made.add
        read = 0
        for entry, value in in_one_pass(unknown):
            part, facts = part_and_facts(entry, value)
            key = id(entry)
            parts[key] = (entry, part)
            if facts is not None:  # read anyway: kept too
                found = calls.get(key)
                if found is None or found[0] is not entry:
                    calls[key] = found = facts
                facts = found
            if add is not None:
                add(entry, part, facts)
            read += 1
        if read < len(unknown):  # (the pass gives each entry of the list once at most)
            if read:
                made = None  # (some left out of those the pass made: looked up, not kept as made)
            self._made_the_usual_way(unknown, made)
        self._made += len(unknown)
        if scanned is not None and scanned.spools and made is not scanned:
            return  # the scan's previews are held cut: kept only as it wrote them (made whole next time)
        self._keep_walk(entries, made)

    def _made_the_usual_way(self, unknown: list[Any], made: preview_store.Made | None) -> None:
        """The previews of those of ``unknown`` a pass left out, each read the usual way, and an
        assistant message's facts (added to ``made``, when given)."""
        parts, calls = self.parts, self.calls
        for entry in unknown:
            if _cached(parts, entry) is None:
                part, facts = usual_part_and_facts(entry)
                key = id(entry)
                parts[key] = (entry, part)
                if facts is not None:  # (kept with the previews: a tool result shows its calls)
                    facts = calls[key] = _cached(calls, entry) or facts
                if made is not None:
                    made.add(entry, part, facts)

    def _keep_walk(self, entries: list[Any], made: preview_store.Made | None) -> None:
        """Keep the previews of the walk of ``entries`` with the file's index, when the walk keeps
        them and every one is known (``made``: see preview_store.save)."""
        if not self.keep_in_walk or self._shown:  # (previews loaded cut are not kept)
            return
        parts = self.parts
        walked = self._walked if len(self._walked) >= len(entries) else entries
        complete = self._made >= preview_store.MIN_STORED and len(parts) >= len(walked)
        home = home_directory() if self.home is None else self.home
        text = partial(call_text, home=home)
        if complete and preview_store.save(
            walked, parts, self.calls, text, home, made=made, silences=self._silences.items()
        ):
            self._made = self._silences_new = 0

    def _made_to_keep(
        self, unknown: list[Any], scanned: preview_store.Made | None
    ) -> preview_store.Made | None:
        """What :meth:`prefetch` keeps as made, when it keeps what it made (see preview_store.Made):
        what its pass makes, as it comes, when nothing is known before it; what the scans made
        (``scanned``), when they left nothing ``unknown`` or wrote what they made (what the pass
        makes, of the entries after theirs, added to it); else None (the previews are looked up)."""
        if not self.keep_in_walk:
            return None
        if not self.parts:
            return preview_store.Made()
        if scanned is not None and scanned.spools:  # (its entries are the walk's first: see prefetch)
            return scanned
        return None if unknown else scanned

    def read_ahead(self, entries: list[Any]) -> None:
        """Make the previews (and an assistant message's facts) of ``entries`` not known yet,
        before they are asked for: the rows a reply is about to show, which would otherwise miss
        one by one (a body read and parsed whole each). They count as misses, and once the walks
        missed enough, what is kept with the file's index is loaded instead (see
        :meth:`_missed_share`), now rather than after paying for the misses; else they are read
        in one pass over the file."""
        parts, previous = self.parts, self._previous
        unknown = [e for e in entries if _cached(parts, e) is None and _cached(previous, e) is None]
        if len(unknown) < MIN_BATCH:
            return  # (read one by one as the rows miss)
        self._misses += len(unknown)
        self._misses_in_all += len(unknown)
        if not self._stored and self.entries is not None and self._missed_share(STORED_LOAD_SHARE):
            self._made = self._load_stored(self.entries())
            unknown = [e for e in unknown if _cached(parts, e) is None]
        calls = self.calls
        for entry, value in in_one_pass(unknown):
            part, facts = part_and_facts(entry, value)
            key = id(entry)
            parts[key] = (entry, part)
            if facts is not None and _cached(calls, entry) is None:
                calls[key] = facts
            self._count_made(entry)

    def hold_at_most(self, most: int) -> None:
        """Let go of what the replies before made once more than ``most`` previews (or assistant
        messages' facts) are held: a walk kept for many replies (a tree view's windows down a
        session of GBs, a few hundred rows each) would otherwise hold those of every row it
        showed. The previews go as at a new walk (see :meth:`previews`: those of the walk before
        are looked up first); the facts are read again when asked for."""
        if len(self.parts) > most:
            self._previous, self.parts = self.parts, {}
        if len(self.calls) > most:
            self.calls = {}

    def has_new_previews(self) -> bool:
        """Whether enough previews were made (or silent turns read) since they were last kept for
        :meth:`keeper` to keep."""
        return max(self._made, self._silences_new) >= preview_store.MIN_STORED

    def keeper(self, entries: list[Any]) -> Callable[[], bool] | None:
        """A job that keeps what is known now of ``entries`` (the session's, in file order) with the
        file's index, merged with what is kept there already, to be run on another thread: what it
        needs is taken now (the cache goes on changing), and the file is held as it is now (see
        preview_store.hold: a file that changed meanwhile is not written for). None when fewer than
        ``preview_store.MIN_STORED`` previews were made since the last time."""
        if self._shown or not self.has_new_previews():  # (previews loaded cut are not kept)
            return None
        held = preview_store.hold(entries)
        if held is None:
            return None
        self._made = self._silences_new = 0
        parts = {**self._previous, **self.parts}
        calls = dict(self.calls)
        silences = list(self._silences.items())
        home = home_directory() if self.home is None else self.home

        def keep() -> bool:
            try:
                merged = PreviewCache(home)
                merged._load_stored(entries, held.fd)
                for key, item in parts.items():  # the same text as a stored one: either stands
                    merged.parts.setdefault(key, item)
                for key, facts in calls.items():
                    merged.calls.setdefault(key, facts)
                merged._silences.merge(silences)
                listed = [e for e in entries if _cached(merged.parts, e) is not None]
                text = partial(call_text, home=home)
                return preview_store.save(
                    listed, merged.parts, merged.calls, text, home, held, silences=merged._silences.items()
                )
            finally:
                held.close()

        return keep

    def _walk_from(self, entry: Any, count: int) -> list[Any]:
        """``count`` entries of the walk from ``entry`` on (found where the last batch started, as a
        page's nodes come in the walk's order as a rule, else by its position in the walk)."""
        walked = self._walked
        cursor = self._cursor
        if cursor < len(walked) and walked[cursor] is entry:
            return walked[cursor : cursor + count]
        if self._walk_positions is None:  # the walk's order and the page's differ: looked up
            self._walk_positions = {id(e): at for at, e in enumerate(walked)}
        at = self._walk_positions.get(id(entry), -1)
        if at < 0 or walked[at] is not entry:
            return []
        self._cursor = at
        return walked[at : at + count]

    def previews(self) -> Callable[[Any, ToolCalls], str]:
        """A preview function for one walk; the walk's entries replace the cached set. Once many
        previews of the walk were not known, those of the entries that come next in the walk (the
        entries given to :meth:`collect_tool_calls`) are read in one pass, a batch at a time. (A
        process that walks its session once takes :meth:`previews_once`.)"""
        self._previous = self.parts
        self.parts = {}
        home, part_of = self._start_walk()

        def preview(entry: Any, tool_calls: ToolCalls) -> str:
            part = part_of(entry)  # most parts are the preview: no call for them (one per row)
            return part if type(part) is str else finish_preview(part, tool_calls, home)

        return showing_edits_as(self.edit_shown, preview)

    def previews_once(
        self, tool_calls: ToolCalls, *, asked_once: bool, longest: int | None = None
    ) -> Callable[[Any], str]:
        """A preview function for the one walk of a process that walks its session once (the CLI's
        whole tree, after a :meth:`prefetch` of its entries and :meth:`tool_calls_once`, which
        gave ``tool_calls``). What the previews are made of is cut to what the walk shows, before
        it starts: the previews of the tool results are made now (their calls, with every call's
        arguments, are not held through the walk unless it may ask an entry again), a preview longer
        than ``longest`` characters is cut to ``longest`` (the caller cuts it shorter still), and the
        facts of the assistant messages and the walk's list of entries go. ``asked_once``: the walk
        asks each entry once: a preview is let go as it is made, so that those of the rows already
        written out are not held while the rest is drawn (else they are held to the end, and a
        preview missed is made from its line alone)."""
        self.calls = {}
        self._walked = []
        self._walk_positions = None
        home, part_of = self._start_walk()
        parts = self.parts
        for key, (entry, part) in parts.items():  # (the values replaced: the dict's size stays)
            if type(part) is not str:
                parts[key] = (entry, finish_preview(part, tool_calls, home)[:longest])
            elif longest is not None and len(part) > longest:
                parts[key] = (entry, part[:longest])
        if asked_once:
            tool_calls = {}  # (every entry of the walk has its preview: none is missed)
        take = parts.pop if asked_once else parts.get

        def preview(entry: Any) -> str:
            found = take(id(entry), None)
            part = found[1] if found is not None and found[0] is entry else part_of(entry)
            return part if type(part) is str else finish_preview(part, tool_calls, home)

        return showing_edits_as(self.edit_shown, preview)

    def _start_walk(self) -> tuple[str, Callable[[Any], str | ToolResultPart]]:
        """A walk's start (no misses yet, its batches read from its first entry on): the home
        directory its tool calls are shown against, and :meth:`part_of`."""
        self._misses = 0
        self._cursor = 0
        return home_directory() if self.home is None else self.home, self.part_of

    def part_of(self, entry: Any) -> str | ToolResultPart:
        """The preview part of ``entry`` (see :func:`preview_part`) for the walk of the last
        :meth:`previews`: known, stored, or made."""
        key = id(entry)
        kept = self.parts
        found = kept.get(key)  # this walk's (a page asked for again), then the walk's before
        if found is not None and found[0] is entry:
            return found[1]
        found = self._previous.get(key)  # (_cached, without a call: asked for every row)
        if found is None or found[0] is not entry:
            found = self._missed(entry)
        kept[key] = found
        return found[1]

    def _missed(self, entry: Any) -> tuple[Any, str | ToolResultPart]:
        """The part of an entry this walk and the one before did not have."""
        if self._load_stored_after_misses():
            found = _cached(self.parts, entry)
            if found is not None:
                return found
        if self._misses >= PREFETCH_AFTER_MISSES and self._walked:
            batch = self._walk_from(entry, PREFETCH_BATCH)
            kept = self.parts
            for walked in batch:  # the walk's previews known before, kept
                known = _cached(self._previous, walked)
                if known is not None:
                    kept[id(walked)] = known
            self.prefetch(batch)
            found = _cached(kept, entry)
            if found is not None:
                return found
        self._count_made(entry)
        return (entry, preview_part(entry))


def _unshown_preview(call_id: Any, name: Any) -> str:
    """The preview of a tool result that no tool call has."""
    return finish_preview(ToolResultPart(call_id, name), {})


class _OneWalk:
    """What a scan keeps for the one walk of ``PreviewCache.previews_once`` (see
    ``made_while_scanning``): the tool calls of the assistant messages, gathered in file order,
    with the messages they are of, and (previews not kept whole) previews cut to ``longest``
    characters."""

    __slots__ = ("assistants", "calls", "longest")

    def __init__(self, longest: int) -> None:
        self.longest = longest
        self.calls: ToolCalls = {}
        self.assistants: list[Any] = []

    def take(
        self, entry: Any, part: str | ToolResultPart, facts: Any, *, whole: bool | None = False
    ) -> tuple[str | ToolResultPart, Any]:
        """An entry's part and facts as the walk keeps them: the facts' calls taken, and unless
        ``whole`` (kept with the file's index), the part cut and the facts let go."""
        if facts is not None:
            self.assistants.append(entry)
            self.calls.update(facts[1])  # (a later call with the same id wins)
        if whole:
            return part, facts
        if type(part) is str and len(part) > self.longest:
            part = part[: self.longest]
        return part, None
