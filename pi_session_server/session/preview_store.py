"""The tree's previews of a session file, kept next to its persistent index.

Previews (``describe.PreviewCache``) come from the bodies of every entry: reading them is most of
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

import contextlib
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, compress, repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any, Final, NamedTuple, TypeVar

import msgspec

from ..format.entry import Entry
from ..format.jsvalue import index_key, truthy
from ..format.scan import FileLineSource, line_at
from . import cache_dir, scan_index

FORMAT_VERSION: Final = 6
MAGIC: Final = b"PIPREVW\x00"
# Fewer entries than this are previewed about as fast as their previews are read and written.
MIN_STORED = 1000


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
        parts, stored_chunk, (assistant_positions, silent, assistant_calls) = stored
        other_offsets, other_silent = _other_silences(
            listed,
            assistant_positions,
            source,
            end,
            _with_other_facts(silences, calls, listed, assistant_positions),
        )
        head = StoredPreviews(
            *cache_dir.stamp_lines(fd, end, st),
            array("q", map(_offset, listed)).tobytes(),
            assistant_positions.tobytes(),
            bytes(silent),
            other_offsets.tobytes(),
            bytes(other_silent),
            home,
            [],
            [],
        )
        body = _encoded(head, parts, stored_chunk, assistant_calls)
        cache_dir.write_framed(path, MAGIC, FORMAT_VERSION, body)
        return True
    except Exception:  # noqa: BLE001 - a best-effort cache: previews that cannot be kept (read-only, full, odd values) are no error
        return False


# Parts and tool calls encoded (and a chunk of parts made as stored) at a time.
_CHUNK = 4096
_TWO_EMPTY_ARRAYS = b"\x90\x90"


def _encoded(
    head: StoredPreviews,
    parts: list[Any],
    stored_chunk: Callable[[list[Any]], list[Any]],
    assistant_calls: list[Any],
) -> Iterator[bytes | memoryview]:
    """The msgpack of ``head`` with ``parts`` (each chunk of them as ``stored_chunk`` makes it)
    and ``assistant_calls`` for its last two fields (empty in ``head``), a chunk at a time: the
    previews of a big session are not held a second time as stored, nor encoded whole."""
    encoded = _encode(head)
    if not encoded.endswith(_TWO_EMPTY_ARRAYS):
        raise ValueError("not a head to encode parts after")
    yield memoryview(encoded)[: -len(_TWO_EMPTY_ARRAYS)]
    for items, made in ((parts, stored_chunk), (assistant_calls, None)):
        yield _ARRAY32.pack(0xDD, len(items))  # (an array's length, as msgpack's array 32 says it)
        for start in range(0, len(items), _CHUNK):
            chunk = items[start : start + _CHUNK]
            data = _encode(chunk if made is None else made(chunk))
            yield memoryview(data)[_array_head_size(len(chunk)) :]


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
    one set operation)."""
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


class HeldFile:
    """A session file held for a save on another thread (:func:`hold`): a descriptor of its own
    (the session may close its own meanwhile, and the number be given to another file) and the
    file's identity when the previews were taken."""

    __slots__ = ("fd", "identity")

    def __init__(self, fd: int, identity: cache_dir.Identity) -> None:
        self.fd = fd
        self.identity = identity

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        # a save given up before it ran (its job dropped) must not keep the file open
        self.close()


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
    """Previews as one pass made them (``PreviewCache.prefetch``): its ``entries`` in file order,
    the part of each (as :func:`save`'s ``facts`` hold it) and, for the assistant messages among
    them, (position in ``entries``, (entry, tool calls, silent) as ``calls`` hold it). Kept as they
    come, while they are at hand: what :func:`save` stores is then made without looking each entry
    up again."""

    __slots__ = ("assistants", "entries", "parts")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.parts: list[Any] = []
        self.assistants: list[tuple[int, tuple[Any, list[Any], bool]]] = []


def _stored_parts(
    listed: list[Entry],
    facts: dict[int, tuple[Any, Any]],
    calls: dict[int, tuple[Any, list[Any], bool]],
    tool_call_text: Callable[[Any, Any], str],
    made: Made | None = None,
) -> (
    tuple[
        list[Any],
        Callable[[list[Any]], list[Any]],
        tuple[array[int], list[bool], list[list[tuple[Any, tuple[Any, Any]]]]],
    ]
    | None
):
    """(the part of each of ``listed`` as held, what makes a copy of some of them as stored, and of
    the assistant messages among them their positions, silence and tool calls),
    or None when an entry has no preview made from it: from ``made`` when it holds ``listed``,
    else looked up in ``facts`` and ``calls``. (Run for every entry of a big file: the per-entry
    steps are C calls mapped over the list.)"""
    if made is None or len(made.entries) != len(listed) or not all(map(is_, made.entries, listed)):
        keys = list(map(id, listed))
        found: list[Any] = list(map(facts.get, keys))
        if None in found or not all(map(is_, map(_FIRST, found), listed)):
            return None  # (``None in``: no (entry, part) pair equals None)
        made = Made()
        made.parts = list(map(_SECOND, found))
        made.assistants = [
            (position, call)
            for position, call in enumerate(map(calls.get, keys))
            if call is not None and call[0] is listed[position]
        ]
    facts_made = list(map(_SECOND, made.assistants))
    positions = array("q", map(_FIRST, made.assistants))
    silent = list(map(_THIRD, facts_made))
    assistant_calls = list(map(_SECOND, facts_made))  # (stored as they are held)
    # per call id, the call a tool result with it shows and where its assistant message is: the
    # last of the id in the file, as a walk of the file's entries finds it
    kept_calls: dict[Any, tuple[Any, int]] = {}
    for entry, entry_calls, _silent in compress(facts_made, assistant_calls):
        offset = entry.offset
        for call_key, pair in entry_calls:
            kept_calls[call_key] = (pair, offset)

    def stored_chunk(parts: list[Any]) -> list[Any]:
        """``parts`` (a copy of some of those held) made as stored."""
        for position in compress(range(len(parts)), map(is_not, map(type, parts), repeat(str))):
            result = parts[position]
            call_id = result.call_id
            if type(call_id) is str:
                shown = kept_calls.get(call_id) if call_id else None
            else:
                shown = kept_calls.get(index_key(call_id)) if truthy(call_id) else None
            text, shown_at = (None, -1) if shown is None else (tool_call_text(result, shown[0]), shown[1])
            parts[position] = [call_id, result.name, text, shown_at]
        return parts

    return made.parts, stored_chunk, (positions, silent, assistant_calls)


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
