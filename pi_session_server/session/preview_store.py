"""The tree's previews of a session file, kept next to its persistent index.

Previews (``preview_cache.PreviewCache``) come from the bodies of every entry: reading them is most of
what drawing a whole tree costs. What an entry's preview depends on alone (its preview part, and for
an assistant message its tool calls and whether it is a silent turn) never changes while its line
does not, so it is kept in the cache directory of the file's index (see scan_index), in a file named
like the index, and read back when the same lines are shown again.

The previews hold for the lines they were made from: they keep the file's device, inode, size,
mtime and ctime, the offset of each entry they describe, where the last of those lines ends
(``end``), and CRC-32s of the file's first bytes and of its bytes before ``end``. They are used for
the same file unchanged, or longer (appended to: session files are append-only) with the same bytes
at both places, for the entries at the offsets they describe. Previews of a file that changed just
before (see cache_dir.RACY_NS) are not kept: unlike an entry's body, which is checked against its
envelope when read, a preview shown is not checked again. What cannot be read, or written, is no
error: the previews are made from the file.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain, compress, repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any, Final, NamedTuple, TypeVar

import msgspec

from ..format.entry import Entry
from ..format.jsvalue import index_key, truthy
from ..format.scan import FileLineSource, line_at
from . import cache_dir, scan_index
from .descriptors import OwnedDescriptor

FORMAT_VERSION: Final = 6
MAGIC: Final = b"PIPREVW\x00"
# Fewer entries than this are previewed about as fast as their previews are read and written.
MIN_STORED = 1000
# From this size of a session file on, a walk that shows its previews cut writes those it keeps
# to a file as it makes them (Made.spool_to): whole, they would be held beside the drawn tree (a
# multi-GB session's hundreds of MB). Below it they are held until the save, which costs less
# time than writing them out and reading them back.
SPOOL_FROM_SIZE = 256 << 20


class StampedLines(msgspec.Struct, array_like=True):
    """What is kept of a file's lines starts with the file as it was then (``cache_dir.LinesStamp``,
    checked by ``cache_dir.still_describes``)."""

    dev: int
    ino: int
    size: int  # the file's size, mtime and ctime when they were kept
    mtime_ns: int
    ctime_ns: int
    end: int  # just after the last line described
    head_crc: int
    tail_crc: int
    generation: int  # of the file's inode (cache_dir.generation)


class _StoredHead(StampedLines, array_like=True):
    """What the previews were kept for, and which entries are silent turns: the fields before the
    previews themselves, read alone by :func:`kept_head` (the rest is skipped, not decoded: msgspec
    ignores the trailing items of an array-like struct's array, by its rules of schema evolution)."""

    offsets: bytes  # array("q"): the offset of each entry described, in file order
    # the assistant messages among them: their positions in ``offsets`` (array("q")), and for each
    # one byte, 1 when it is a silent turn (what the tree's filters hide)
    assistant_positions: bytes
    silent: bytes
    # assistant messages whose previews are not kept but whether they are silent turns is (the
    # filters ask it of every assistant message a walk passes, and read no more of them for it):
    # their offsets (array("q")), and a byte for each as in ``silent``
    other_silent_offsets: bytes
    other_silent: bytes


class StoredPreviews(_StoredHead, array_like=True):
    # what tool-call paths were shortened against in the texts of the tool results
    home: str
    # per entry: its preview part (str), or [toolCallId, toolName, text, offset] of a tool result: its
    # preview showing the call of the assistant message at that offset (the last with the id among
    # the entries described), or None and -1 when none has it
    parts: list[Any]
    # the tool calls [(key of its id, (name, arguments))] of each assistant message, in the order
    # of its position (as PreviewCache holds them: written and read without a tuple made per call)
    assistant_calls: list[list[tuple[Any, tuple[Any, Any]]]]


class _StoredParts(_StoredHead, array_like=True):
    """The stored previews without the tool calls of the assistant messages (read by
    :func:`load_shown`: the calls, with every call's arguments, are skipped, not decoded)."""

    home: str
    parts: list[Any]


_Stored = TypeVar("_Stored", bound=_StoredHead)
_encode = msgspec.msgpack.Encoder(enc_hook=scan_index.enc_hook).encode
_decode = msgspec.msgpack.Decoder(StoredPreviews, ext_hook=scan_index.ext_hook).decode
_decode_head = msgspec.msgpack.Decoder(_StoredHead, ext_hook=scan_index.ext_hook).decode
_decode_parts = msgspec.msgpack.Decoder(_StoredParts, ext_hook=scan_index.ext_hook).decode


def store_of(
    entries: list[Entry], suffix: str = cache_dir.PREVIEWS_SUFFIX, fd: int | None = None
) -> tuple[FileLineSource, str] | None:
    """The file all ``entries`` are read from and the path of what is kept of it with the name
    ``suffix`` (its previews by default), when it has an index directory and is of a size its
    index is kept for (None if the entries come from several files or none: nothing is kept
    with the index of a file too small to have one). ``fd``: a descriptor of that file to use
    instead of its own."""
    if not entries:
        return None
    source = entries[0]._source
    if type(source) is not FileLineSource or source.index_dir is None:
        return None
    if not all(map(is_, map(_SOURCE, entries), repeat(source))):  # (in C: a big file's every entry)
        return None
    try:
        st = os.fstat(source.fd if fd is None else fd)
    except OSError:
        return None
    settings = cache_dir.index_settings(source.index_dir)
    if settings is None or not settings.wanted(st.st_size):
        return None
    return source, cache_dir.kept_path(source.index_dir, st, suffix)


def can_keep(entry: Entry) -> bool:
    """Whether previews of the file ``entry`` is read from can be kept (see :func:`store_of`)."""
    return store_of([entry]) is not None


class Loaded(NamedTuple):
    """What :func:`load` found: the entries the stored previews describe, their parts as stored
    (a str, or a tool result's list: see :class:`StoredPreviews`) and, for the assistant messages
    among them, (index in ``entries``, silent turn, tool calls [(key, (name, arguments))]); and the
    other assistant messages of ``entries`` whose silence is kept (entry, silent turn)."""

    home: str | None  # what the tool results' texts were made with
    entries: list[Entry]
    parts: list[Any]
    assistants: list[tuple[int, bool, list[tuple[Any, tuple[Any, Any]]]]]
    other_silent: list[tuple[Entry, bool]]


NOTHING_LOADED: Final = Loaded(None, [], [], [], [])


def load(entries: list[Entry], fd: int | None = None) -> Loaded:
    """What the stored previews hold of ``entries``, in the order of ``entries``
    (:data:`NOTHING_LOADED` when there are none). ``fd``: see :func:`store_of`."""
    stored = _stored_for(entries, fd, _decode)
    if stored is None:
        return NOTHING_LOADED
    offsets = _array(stored.offsets)
    count = len(offsets)
    assistant_at = _array(stored.assistant_positions)
    if count != len(stored.parts) or not len(assistant_at) == len(stored.silent) == len(
        stored.assistant_calls
    ):
        return NOTHING_LOADED
    other_silent = _other_silent(stored)
    if other_silent is None:
        return NOTHING_LOADED
    if other_silent:
        entry_at = {e.offset: e for e in entries if e.offset < stored.end}
        others = [(entry_at[at], silent) for at, silent in other_silent.items() if at in entry_at]
    else:
        others = []
    stored_assistants = list(zip(assistant_at, map(bool, stored.silent), stored.assistant_calls, strict=True))
    described = entries[:count]
    if array("q", map(_offset, described)) == offsets:
        # the entries of the lines described, in file order (a reopen): taken as they are
        return Loaded(stored.home, described, stored.parts, stored_assistants, others)
    position_of = dict(zip(offsets.tolist(), range(count), strict=True))
    found: list[Entry] = []
    positions: list[int] = []
    for entry in entries:
        position = position_of.get(entry.offset) if entry.offset < stored.end else None
        if position is not None:
            found.append(entry)
            positions.append(position)
    index_of = {position: at for at, position in enumerate(positions)}
    assistants = [
        (index_of[position], silent, calls)
        for position, silent, calls in stored_assistants
        if position in index_of
    ]
    return Loaded(stored.home, found, [stored.parts[p] for p in positions], assistants, others)


def load_shown(
    entries: list[Entry], home: str, longest: int, unshown: Callable[[Any, Any], str]
) -> list[str] | None:
    """The previews of ``entries`` (a file's every entry, in file order) as one walk of them in
    that order shows them with the home directory ``home``, each cut to ``longest`` characters,
    when the stored previews describe every one of them and were made with ``home`` (else None).
    A tool result's stored text is then the one the walk shows (made with the last call of its id
    in file order, as the walk finds it): the tool calls kept for other walks are not decoded;
    ``unshown(call id, tool name)``: the preview of a tool result no call has. Each whole preview
    is let go as its cut is made: what a reopen of a big session holds is the cut previews alone.
    (The previews returned are cut: they are not to be kept with the index again.)"""
    stored = _stored_for(entries, None, _decode_parts)
    if stored is None or stored.home != home or len(stored.parts) != len(entries):
        return None
    if array("q", map(_offset, entries)) != _array(stored.offsets):
        return None
    parts = stored.parts
    del stored
    for at, part in enumerate(parts):  # (replaced in place: each whole one goes as it is cut)
        if type(part) is not str:
            call_id, name, text = part[0], part[1], part[2]
            part = unshown(call_id, name) if text is None else text
        if len(part) > longest:
            part = part[:longest]
        parts[at] = part
    return parts


def _other_silent(stored: _StoredHead) -> dict[int, bool] | None:
    """The offsets of the assistant messages whose silence alone is kept, and their silence (None:
    the two arrays do not match)."""
    offsets = _array(stored.other_silent_offsets)
    if len(offsets) != len(stored.other_silent):
        return None
    return dict(zip(offsets, map(bool, stored.other_silent), strict=True))


class KeptHead:
    """What the stored previews of a file say without the previews themselves: which lines they
    describe, and whether each assistant message among them (and others: see
    ``StoredPreviews.other_silent``) is a silent turn."""

    __slots__ = ("offsets", "silent")

    def __init__(self, offsets: array[int], silent: dict[int, bool]) -> None:
        self.offsets = offsets  # the lines described, in file order
        self.silent = silent  # the assistant messages' offset -> whether a silent turn

    def describes(self, offset: int) -> bool:
        """Whether the previews describe the line at ``offset`` (their previews are kept)."""
        at = bisect_left(self.offsets, offset)
        return at < len(self.offsets) and self.offsets[at] == offset


def kept_head(entries: list[Entry]) -> KeptHead | None:
    """The :class:`KeptHead` of the stored previews of the file of ``entries`` (None when none are
    kept, or they no longer describe it): what the tree's filters ask of every assistant message,
    read without decoding the previews (a tree view's levels ask it of every entry on the path,
    and show a few of them)."""
    stored = _stored_for(entries, None, _decode_head)
    if stored is None:
        return None
    offsets = _array(stored.offsets)
    positions = _array(stored.assistant_positions)
    if len(positions) != len(stored.silent) or (positions and not 0 <= max(positions) < len(offsets)):
        return None
    other_silent = _other_silent(stored)
    if other_silent is None:
        return None
    at = map(offsets.__getitem__, positions)
    other_silent.update(zip(at, map(bool, stored.silent), strict=True))
    return KeptHead(offsets, other_silent)


def _array(data: bytes) -> array[int]:
    values = array("q")
    values.frombytes(data)
    return values


def _stored_for(entries: list[Entry], fd: int | None, decode: Callable[[Any], _Stored]) -> _Stored | None:
    """What is kept of the previews of the file of ``entries`` (``decode``: all of it, or its head)
    if it still describes the file (else it goes: see ``cache_dir.read_kept``)."""
    found = store_of(entries, fd=fd)
    if found is None:
        return None
    source, path = found

    def whole(body: memoryview) -> _Stored | None:
        stored = decode(body)
        if len(stored.offsets) % 8 or len(stored.assistant_positions) % 8:
            return None  # not arrays of offsets and positions
        return stored

    stored: _Stored | None = cache_dir.read_kept(
        path, source.fd if fd is None else fd, MAGIC, FORMAT_VERSION, whole
    )
    return stored


def save(
    entries: Iterable[Entry],
    facts: dict[int, tuple[Any, Any]],
    calls: dict[int, tuple[Any, list[Any], bool]],
    tool_call_text: Callable[[Any, Any], str],
    home: str,
    held: HeldFile | None = None,
    made: Made | None = None,
    silences: Iterable[tuple[Any, bool | None]] = (),
) -> bool:
    """Keep the previews of ``entries``: ``facts`` (``id(entry)`` -> (entry, part)) and ``calls``
    (``id(entry)`` -> (entry, tool calls, silent)) as PreviewCache holds them;
    ``tool_call_text(part, call)``: the preview of the tool result ``part`` showing ``call`` (a
    name and its arguments) made with the home directory ``home``. Only entries whose line ends
    before the file's last newline are kept. ``held``: the file as it was when the previews were
    taken (see :func:`hold`); nothing is written if it changed since. ``made``: what a pass made,
    if it holds every entry kept (see :class:`Made`). ``silences``: (entry, whether a silent
    turn; None: not known) of assistant messages besides those of ``calls``, kept (theirs too) for
    those of the file whose previews are not. False when nothing was written."""
    listed = list(entries)
    if not all(map(is_, map(type, listed), repeat(Entry))) or min(map(_offset, listed), default=0) < 0:
        listed = [e for e in listed if type(e) is Entry and e.offset >= 0]
    if len(listed) < MIN_STORED:
        return False
    fd = None if held is None else held.fd
    found = store_of(listed, fd=fd)
    if found is None:
        return False
    source, path = found
    if fd is None:
        fd = source.fd
    listed.sort(key=_offset)
    try:
        st = cache_dir.settled_status(fd, None if held is None else held.identity)
        if st is None:
            return False
        end = _last_complete_end(fd, listed[-1])
        del listed[bisect_left(listed, end, key=_offset) :]
        stored = _stored_parts(listed, facts, calls, tool_call_text, made)
        if stored is None:
            return False
        other_offsets, other_silent = _other_silences(
            listed,
            stored.assistant_positions,
            source,
            end,
            _with_other_facts(silences, calls, listed, stored.assistant_positions),
        )
        head = (
            *cache_dir.stamp_lines(fd, end, st),
            array("q", map(_offset, listed)),
            stored.assistant_positions,
            stored.silent,
            other_offsets,
            other_silent,
            home,
        )
        body = _encoded(head, stored)
        del head
        cache_dir.write_framed(path, MAGIC, FORMAT_VERSION, body)
        return True
    except Exception:  # noqa: BLE001 - a best-effort cache: previews that cannot be kept (read-only, full, odd values) are no error
        return False


# Parts and tool calls encoded (and a chunk of parts made as stored) at a time.
_CHUNK = 4096


def _encoded(head: tuple[Any, ...], stored: _ToStore) -> Iterator[bytes | memoryview]:
    """The msgpack of :class:`StoredPreviews` whose fields but the last two are ``head``, with the
    parts and tool calls of ``stored`` for those two, a piece at a time: a field that is an array
    (the offsets, a byte per message) is written from the array as it is held, and the parts and
    calls a chunk at a time, as they are made (the previews of a big session are not held a
    second time as stored, nor encoded whole)."""
    if len(head) + 2 != _STORED_FIELDS:
        raise ValueError("not the fields before the parts")
    yield _array_head(_STORED_FIELDS)
    for value in head:
        if isinstance(value, array | bytearray):
            view = memoryview(value).cast("B")
            yield _bin_head(len(view))
            yield view
        else:
            yield _encode(value)
    for count, chunks in (
        (stored.part_count, stored.parts()),
        (len(stored.assistant_positions), stored.calls()),
    ):
        yield _ARRAY32.pack(0xDD, count)  # (an array's length, as msgpack's array 32 says it)
        for chunk in chunks:
            data = _encode(chunk)
            yield memoryview(data)[_array_head_size(len(chunk)) :]


_STORED_FIELDS = len(msgspec.structs.fields(StoredPreviews))


def _array_head(length: int) -> bytes:
    """msgpack's head of an array of ``length`` items (as msgspec writes it: the shortest)."""
    if length < 0x10:
        return bytes((0x90 | length,))
    if length < 0x10000:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def _bin_head(length: int) -> bytes:
    """msgpack's head of ``length`` bytes of binary data (as msgspec writes it: the shortest)."""
    if length < 0x100:
        return bytes((0xC4, length))
    if length < 0x10000:
        return b"\xc5" + length.to_bytes(2, "big")
    return b"\xc6" + length.to_bytes(4, "big")


_ARRAY32 = struct.Struct(">BI")


def _array_head_size(length: int) -> int:
    """How many bytes msgpack's head of an array of ``length`` items takes (as msgspec writes it:
    the shortest that holds it)."""
    return 1 if length < 16 else 3 if length < 0x10000 else 5


def _with_other_facts(
    silences: Iterable[tuple[Any, bool | None]],
    calls: dict[int, tuple[Any, list[Any], bool]],
    listed: list[Entry],
    assistant_positions: array[int],
) -> Iterable[tuple[Any, bool | None]]:
    """``silences``, then (entry, silent) of the assistant messages in ``calls`` whose previews are
    not kept (as a rule none: the messages whose previews are kept are set apart by their ids, in
    one set operation; none to set apart when ``calls`` is empty, as when the one walk's scan let
    the facts go: no set of every message's id then)."""
    if not calls:
        return silences
    described = set(map(id, map(listed.__getitem__, assistant_positions)))
    others = calls.keys() - described
    if not others:
        return silences
    # (in the order of ``calls``, which a set's is not)
    return chain(silences, ((facts[0], facts[2]) for key, facts in calls.items() if key in others))


def _other_silences(
    listed: list[Entry],
    assistant_positions: array[int],
    source: FileLineSource,
    end: int,
    silences: Iterable[tuple[Any, bool | None]],
) -> tuple[array[int], bytearray]:
    """The offsets and silence (a byte each) of the assistant messages of ``silences`` read from
    ``source`` before ``end`` whose previews are not kept (see StoredPreviews.other_silent)."""
    described: set[int] | None = None
    other_offsets, other_silent = array("q"), bytearray()
    for entry, is_silent in silences:
        offset = entry.offset if type(entry) is Entry and entry._source is source else -1
        if is_silent is None or not 0 <= offset < end:
            continue
        if described is None:
            described = {listed[at].offset for at in assistant_positions}
        if offset not in described:
            other_offsets.append(offset)
            other_silent.append(is_silent)
    return other_offsets, other_silent


class HeldFile(OwnedDescriptor):
    """A session file held for a save on another thread (:func:`hold`): a descriptor of its own
    (the session may close its own meanwhile, and the number be given to another file; a save
    given up before it ran, its job dropped, does not keep it open) and the file's identity when
    the previews were taken."""

    __slots__ = ("identity",)

    def __init__(self, fd: int, identity: cache_dir.Identity) -> None:
        super().__init__(fd)
        self.identity = identity


def hold(entries: list[Entry]) -> HeldFile | None:
    """The file of ``entries`` held as it is now, for :func:`save` on another thread; None when
    nothing can be kept of it (see :func:`store_of`). The caller closes it."""
    found = store_of(entries)
    if found is None:
        return None
    try:
        fd = os.dup(found[0].fd)
    except OSError:
        return None
    try:
        return HeldFile(fd, cache_dir.identity(os.fstat(fd)))
    except OSError:
        os.close(fd)
        return None


class Made:
    """Previews as one pass made them (``PreviewCache.prefetch``, or a scan: see
    ``PreviewCache.made_while_scanning``): its ``entries`` in file order, the part of each (as
    :func:`save`'s ``facts`` hold it) and, for the assistant messages among them, their positions
    in ``entries``, whether each is a silent turn (a byte each) and its tool calls (as ``calls``
    hold them). Kept as they come, while they are at hand: what :func:`save` stores is then made
    without looking each entry up again.

    :meth:`spool_to` a directory: the parts and tool calls are then written there as they come, a
    chunk at a time, in unnamed files (``parts`` and ``assistant_calls`` stay empty): a caller
    that holds the previews cut and the calls by their ids alone (the one walk needs no more) does
    not hold them whole for the save too."""

    __slots__ = (
        "_calls_spool",
        "_parts_spool",
        "assistant_calls",
        "assistant_positions",
        "calls_by_key",
        "entries",
        "parts",
        "silent",
    )

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.parts: list[Any] = []
        self.assistant_positions = array("q")
        self.silent = bytearray()
        self.assistant_calls: list[list[tuple[Any, tuple[Any, Any]]]] = []
        self._parts_spool: _Spool | None = None
        self._calls_spool: _Spool | None = None
        # (spooled) the last call of each call id among the messages added (as a walk keeps them)
        self.calls_by_key: dict[Any, tuple[Any, Any]] = {}

    def add(self, entry: Entry, part: Any, facts: tuple[Any, list[Any], bool] | None) -> None:
        """Take ``entry``, the next in file order, its part and (an assistant message) its facts
        (entry, tool calls, silent)."""
        if facts is not None:
            self.add_facts(len(self.entries), facts)
        self.entries.append(entry)
        if self._parts_spool is None:
            self.parts.append(part)
        else:  # (a tool result as far as the scan knows it: its text is made at the save)
            self._parts_spool.add(part if type(part) is str else [part.call_id, part.name])

    def add_facts(self, position: int, facts: tuple[Any, list[Any], bool]) -> None:
        """Take the facts (entry, tool calls, silent) of the assistant message at ``position``
        (after those of the messages before it)."""
        self.assistant_positions.append(position)
        self.silent.append(facts[2])
        if self._calls_spool is None:
            self.assistant_calls.append(facts[1])
        else:
            self._calls_spool.add(facts[1])

    def spool_to(self, source: object, calls_by_key: dict[Any, tuple[Any, Any]]) -> bool:
        """Write the parts and tool calls added from now on to unnamed files in the index
        directory of ``source``, the file they are read from, when it is of :data:`SPOOL_FROM_SIZE`
        at least (before any is added); ``calls_by_key``: the caller's last call of each call id
        among the messages it adds (kept up to date as it adds them). Whether they are written
        (else they are held: a smaller file, or no such file could be made)."""
        if (
            self._parts_spool is None
            and not self.entries
            and type(source) is FileLineSource
            and (directory := source.index_dir) is not None
            and _spooled_size(source)
        ):
            try:
                self._parts_spool = _Spool(directory)
                self._calls_spool = _Spool(directory)
            except OSError:
                self.close()
            else:
                self.calls_by_key = calls_by_key
        return self._parts_spool is not None

    @property
    def spools(self) -> bool:
        return self._parts_spool is not None

    def spooled(self) -> tuple[_Spool, _Spool] | None:
        """The files the parts and the tool calls were written to, every one in them (None:
        they are held)."""
        if self._parts_spool is None or self._calls_spool is None:
            return None
        self._parts_spool.flush()
        self._calls_spool.flush()
        return self._parts_spool, self._calls_spool

    def close(self) -> None:
        """Let go of what was written (the files vanish with their descriptors)."""
        for spool in (self._parts_spool, self._calls_spool):
            if spool is not None:
                spool.close()
        self._parts_spool = self._calls_spool = None


def _spooled_size(source: FileLineSource) -> bool:
    """Whether the file of ``source`` is big enough for its previews to keep to be written as made."""
    try:
        return os.fstat(source.fd).st_size >= SPOOL_FROM_SIZE
    except OSError:
        return False


class _Spool:
    """Items :class:`Made` wrote as they came: chunks of :data:`_CHUNK` items (the last may hold
    fewer), each encoded as a msgpack array, one after another in an unnamed file in
    ``directory`` (a part of a tool result as ``[call id, tool name]``). Raises OSError when the
    file cannot be made."""

    __slots__ = ("file", "pending")

    def __init__(self, directory: str) -> None:
        self.file = cache_dir.SpooledParts(directory)
        self.pending: list[Any] = []  # the items of the chunk being made

    def add(self, item: Any) -> None:
        pending = self.pending
        pending.append(item)
        if len(pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            data = _encode(self.pending)
            self.pending.clear()
            self.file.append(data)

    def chunks(self) -> Iterator[list[Any]]:
        """The chunks as written, each an array of its items' msgpack (not decoded)."""
        return map(_decode_raw_parts, self.file)

    def close(self) -> None:
        self.pending.clear()
        self.file.close()


_decode_raw_parts = msgspec.msgpack.Decoder(list[msgspec.Raw]).decode
# an assistant message's spooled tool calls: their keys, each call left as its msgpack
_decode_call_keys = msgspec.msgpack.Decoder(
    list[tuple[Any, msgspec.Raw]], ext_hook=scan_index.ext_hook
).decode
_decode_spooled_result = msgspec.msgpack.Decoder(tuple[Any, Any], ext_hook=scan_index.ext_hook).decode


def _is_spooled_result(raw: msgspec.Raw) -> bool:
    """Whether a spooled part is a tool result's (a msgpack array: every other part is a str)."""
    first = memoryview(raw)[0]
    return 0x90 <= first <= 0x9F or first in (0xDC, 0xDD)


class _ToStore(NamedTuple):
    """What :func:`save` stores of the entries it keeps besides their offsets: their parts as
    stored (``parts()`` gives them a chunk at a time, made so then), and of the assistant messages
    among them their positions, silence (a byte each) and tool calls (``calls()``, a chunk at a
    time)."""

    parts: Callable[[], Iterator[list[Any]]]
    part_count: int
    assistant_positions: array[int]
    silent: bytearray
    calls: Callable[[], Iterator[list[Any]]]


class _SpooledResult:
    """A spooled tool result's part, as ``tool_call_text`` reads it (see describe.ToolResultPart)."""

    __slots__ = ("call_id", "memo", "name")

    def __init__(self, call_id: Any, name: Any) -> None:
        self.call_id = call_id
        self.name = name
        self.memo: Any = None


def _stored_parts(
    listed: list[Entry],
    facts: dict[int, tuple[Any, Any]],
    calls: dict[int, tuple[Any, list[Any], bool]],
    tool_call_text: Callable[[Any, Any], str],
    made: Made | None = None,
) -> _ToStore | None:
    """What is stored of ``listed`` (see :class:`_ToStore`), or None when an entry has no preview
    made from it: from ``made`` when it holds ``listed`` (and maybe entries after them, on lines
    the save leaves out), else looked up in ``facts`` and ``calls``."""
    made = _made_of(listed, facts, calls, made)
    if made is None:
        return None
    count = len(listed)
    positions, silent = made.assistant_positions, made.silent
    kept = bisect_left(positions, count)
    spooled = made.spooled()
    if spooled is None:
        if kept < len(positions):
            positions, silent = positions[:kept], silent[:kept]
        held = made.assistant_calls[:kept]  # (stored as they are held)
        results = _StoredResults.of_held(listed, positions, held, tool_call_text)
        held_calls = partial(_held_chunks, held, kept, None)
        return _ToStore(
            partial(_held_chunks, made.parts, count, results.stored), count, positions, silent, held_calls
        )
    if kept < len(positions):
        return None  # (a message on a line left out has calls among those of made.calls_by_key)
    parts_spool, calls_spool = spooled
    results = _StoredResults.of_spooled(listed, positions, calls_spool, made.calls_by_key, tool_call_text)
    parts = partial(_spooled_chunks, parts_spool, count, results.stored)
    return _ToStore(parts, count, positions, silent, partial(_spooled_chunks, calls_spool, kept, None))


def _made_of(
    listed: list[Entry],
    facts: dict[int, tuple[Any, Any]],
    calls: dict[int, tuple[Any, list[Any], bool]],
    made: Made | None,
) -> Made | None:
    """``made`` when it holds ``listed`` (then maybe more), else what ``facts`` and ``calls`` hold
    of them (None: an entry has no preview, or ``made`` wrote its previews and the caller holds
    them cut). (Run for every entry of a big file: the per-entry steps are C calls mapped over
    the list; map over two lists stops at the shorter, ``listed``.)"""
    if made is not None and len(made.entries) >= len(listed) and all(map(is_, made.entries, listed)):
        return made
    if made is not None and made.spools:
        return None
    keys = list(map(id, listed))
    found: list[Any] = list(map(facts.get, keys))
    if None in found or not all(map(is_, map(_FIRST, found), listed)):
        return None  # (``None in``: no (entry, part) pair equals None)
    made = Made()
    made.parts = list(map(_SECOND, found))
    for position, call in enumerate(map(calls.get, keys)):
        if call is not None and call[0] is listed[position]:
            made.add_facts(position, call)
    return made


class _StoredResults:
    """Tool results' parts as stored: [call id, tool name, its call's text, offset of the message
    that has the call] (None and -1: no message has it), the call being the last of its id among
    the assistant messages kept, as a walk of the file's entries finds it: ``call_for`` (call key
    -> that call) and ``offset_for`` (call key -> the offset of its message, the int the entry
    holds: no object made per call id, of which a big session has a few hundred thousand), made
    once for every message, so that a tool result looks its call up at once."""

    __slots__ = ("call_for", "offset_for", "text")

    def __init__(
        self, call_for: dict[Any, Any], offset_for: dict[Any, int], text: Callable[[Any, Any], str]
    ) -> None:
        self.call_for, self.offset_for, self.text = call_for, offset_for, text

    @classmethod
    def of_held(
        cls,
        listed: list[Entry],
        positions: array[int],
        calls: list[list[tuple[Any, tuple[Any, Any]]]],
        text: Callable[[Any, Any], str],
    ) -> _StoredResults:
        """Of the messages at ``positions`` in ``listed``, whose calls are held (``calls``, each
        message's (key, call) pairs)."""
        call_for: dict[Any, Any] = {}
        offset_for: dict[Any, int] = {}
        for position, entry_calls in compress(zip(positions, calls, strict=True), calls):
            offset = listed[position].offset
            for call_key, call in entry_calls:
                call_for[call_key] = call
                offset_for[call_key] = offset
        return cls(call_for, offset_for, text)

    @classmethod
    def of_spooled(
        cls,
        listed: list[Entry],
        positions: array[int],
        calls: _Spool,
        calls_by_key: dict[Any, tuple[Any, Any]],
        text: Callable[[Any, Any], str],
    ) -> _StoredResults:
        """Of the messages at ``positions`` in ``listed``, whose calls were written (``calls``),
        the last of each id held by ``calls_by_key``: the calls are read back for their keys
        alone."""
        offset_for: dict[Any, int] = {}
        messages = map(listed.__getitem__, positions)
        for chunk in calls.chunks():
            for raw in chunk:
                offset = next(messages).offset
                for call_key, _call in _decode_call_keys(raw):
                    offset_for[call_key] = offset
        return cls(calls_by_key, offset_for, text)

    def stored(self, result: Any) -> list[Any]:
        """The part of the tool result ``result`` (its call_id and name) as stored."""
        call_id = result.call_id
        if type(call_id) is str:  # (as pi writes it: its own key, truthy when not empty)
            key: Any = call_id
            offset = self.offset_for.get(key) if key else None
        else:
            key = index_key(call_id)
            offset = self.offset_for.get(key) if truthy(call_id) else None
        if offset is None:
            return [call_id, result.name, None, -1]
        return [call_id, result.name, self.text(result, self.call_for[key]), offset]


def _held_chunks(
    items: list[Any], count: int, stored: Callable[[Any], list[Any]] | None
) -> Iterator[list[Any]]:
    """The first ``count`` of ``items`` as stored, a copy of a chunk of them at a time (``stored``:
    what a part that is no str is stored as)."""
    for start in range(0, count, _CHUNK):
        chunk = items[start : min(start + _CHUNK, count)]
        if stored is not None:
            for position in compress(range(len(chunk)), map(is_not, map(type, chunk), repeat(str))):
                chunk[position] = stored(chunk[position])
        yield chunk


def _spooled_chunks(
    spool: _Spool, count: int, stored: Callable[[Any], list[Any]] | None
) -> Iterator[list[Any]]:
    """The first ``count`` items of ``spool`` as stored, a chunk at a time (each item's msgpack as
    written, not decoded; ``stored``: what a tool result's part is stored as)."""
    left = count
    for chunk in spool.chunks():
        if left <= 0:
            return
        del chunk[left:]
        left -= len(chunk)
        if stored is not None:
            for position in compress(range(len(chunk)), map(_is_spooled_result, chunk)):
                chunk[position] = stored(_SpooledResult(*_decode_spooled_result(chunk[position])))
        yield chunk
    if left:
        raise OSError("spooled previews cut short")


_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_THIRD = itemgetter(2)
_offset = attrgetter("offset")
_SOURCE = attrgetter("_source")


def _last_complete_end(fd: int, last: Entry) -> int:
    """Where the line of ``last`` ends, newline included, or its offset when it has none yet (a line
    still being written: its entry is left out)."""
    offset: int = last.offset
    after = offset + len(line_at(fd, offset, 0))
    return after + 1 if os.pread(fd, 1, after) == b"\n" else offset
