"""Listing sessions: ``SessionInfo`` of a file (docs/API.md §9.5), ``list``/``listAll`` (§9.3-§9.7).

A listing reads every line of every session, so this is built for directories of thousands of files
and files of gigabytes: each file is streamed in chunks (memory is bounded by the chunk size and the
longest line), and each line is decoded with msgspec into structs that name only the fields a
``SessionInfo`` needs, so image data, tool arguments and tool output are skipped, never built as
Python objects. Whenever msgspec refuses a line (a field of an unexpected type, a lone surrogate
escape, invalid UTF-8 inside a needed string, deep nesting, a syntax error) the line is parsed again
exactly as ``JSON.parse`` would (``format.jsjson``), so the result is always the reference's.

Lines are split the way Node's ``readline`` does (``"\\n"``, ``"\\r\\n"`` and a lone ``"\\r"``). Splitting
the bytes first is safe because those bytes never occur inside a multi-byte UTF-8 sequence, and
treating every ``"\\r"`` as a break only adds empty lines, which every reader skips anyway.

The reference computes up to 10 infos concurrently; we go sequentially, so progress callbacks come in
candidate order (conforming, D9).

Deliberate robustness beyond the reference: a ``*.jsonl`` name that is not a regular file (a FIFO, a
device) gives no info instead of blocking or reading forever.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, Final

import msgspec

from ..errors import AbortError
from ..format.collation import collation_key
from ..format.dates import iso_from_ms, ms
from ..format.jsjson import JsonSyntaxError, parse, parse_bytes
from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, get, is_object, js_string_of, truthy
from .discovery import (
    cwd_matches,
    find_by_id,
    find_most_recent_session,
    js_round,
    most_recent_candidate,
    mtime_ms,
    readdir,
    session_dir_for,
)
from .environment import Environment, current, on_disk
from .paths import StrPath, get_sessions_root, node_join, normalize_path, path_text, resolve_path
from .profiles import DEFAULT_PI, PiVersion

__all__ = [
    "ALL_TEXT",
    "AbortSignal",
    "ProgressCallback",
    "SessionInfo",
    "TextOptions",
    "find_by_id",
    "find_most_recent_session",
    "list_all_sessions",
    "list_sessions",
    "most_recent_candidate",
    "session_info",
    "throw_if_aborted",
]

#: ``on_progress(loaded, total, partial)``; ``partial`` is ``None`` where the reference passes
#: ``undefined`` (docs/API.md §9.6).
ProgressCallback = Callable[[int, int, "list[SessionInfo] | None"], Any]

_CHUNK_SIZE: Final = 1024 * 1024
_Buffer = bytes | bytearray | memoryview
_CURRENT_PUBLISH_INTERVAL: Final = 10
_ALL_PUBLISH_INTERVAL: Final = 100
_NO_MESSAGES: Final = "(no messages)"


# ---- cancellation ------------------------------------------------------------------------------


class AbortSignal:
    """A minimal ``AbortSignal``: :meth:`abort` it (from any thread) to stop a listing."""

    __slots__ = ("_aborted", "reason")

    def __init__(self) -> None:
        self._aborted = False
        self.reason: BaseException | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self, reason: BaseException | None = None) -> None:
        if not self._aborted:
            self.reason = reason
            self._aborted = True

    def throw_if_aborted(self) -> None:
        throw_if_aborted(self)


def throw_if_aborted(signal: Any) -> None:
    """``signal?.throwIfAborted()``: raises the abort reason, by default
    ``AbortError("This operation was aborted")``. Any object with an ``aborted`` attribute works."""
    if signal is None or signal is ABSENT or not getattr(signal, "aborted", False):
        return
    reason = getattr(signal, "reason", None)
    if isinstance(reason, BaseException):
        raise reason
    raise AbortError("This operation was aborted")


# ---- how much text a listing keeps ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextOptions:
    """How much message text a listing keeps per session.

    The reference keeps all of it (:data:`ALL_TEXT`, the default everywhere): a listing of long
    sessions then holds every session's whole text at once. A front end that shows a list of
    sessions needs little of it, and can leave ``firstMessage``/``allMessagesText`` out (ABSENT in
    the :class:`SessionInfo`) or cut each to ``max_chars`` code points; the text left out is never
    collected, so memory stays bounded by the kept text and the longest line.
    """

    first_message: bool = True
    all_messages_text: bool = True
    max_chars: int | None = None


ALL_TEXT: Final = TextOptions()


class _AllTexts:
    """Every text, as the reference keeps them."""

    __slots__ = ("append", "parts")
    truncated = False

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.append = self.parts.append


class _NoTexts:
    """Texts that are not wanted: nothing is kept."""

    __slots__ = ()
    parts: tuple[str, ...] = ()
    truncated = False

    def append(self, text: str) -> None:
        pass


class _CappedTexts:
    """The message texts of one session, collected until their joined form reaches ``max_chars``.

    ``" ".join(parts)`` is exactly the first ``max_chars`` code points of the whole joined text, and
    the whole text is never built."""

    __slots__ = ("length", "max_chars", "parts", "truncated")

    def __init__(self, max_chars: int) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.max_chars = max_chars
        self.truncated = False

    def append(self, text: str) -> None:
        separator = 1 if self.parts else 0  # the " " that joins this text to the previous one
        room = self.max_chars - self.length - separator
        if room < 0:
            self.truncated = True
            return
        piece = text[:room]
        if len(piece) < len(text):
            self.truncated = True
        self.length += separator + len(piece)
        self.parts.append(piece)


def _text_collector(options: TextOptions) -> _AllTexts | _NoTexts | _CappedTexts:
    """Where a session's message texts go: all kept (the reference), capped, or dropped."""
    if not options.all_messages_text:
        return _NoTexts()
    if options.max_chars is None:
        return _AllTexts()
    return _CappedTexts(options.max_chars)


def _kept_first_message(first_message: str, options: TextOptions) -> tuple[Any, bool]:
    """(``firstMessage`` as the options keep it, whether it was cut)."""
    if not options.first_message:
        return ABSENT, False
    if options.max_chars is None or len(first_message) <= options.max_chars:
        return first_message, False
    return first_message[: options.max_chars], True


# ---- SessionInfo ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What ``list``/``listAll`` report for one file (docs/API.md §9.5).

    ``id`` and ``parent_session_path`` are the header's values as stored (any JSON value, ABSENT when
    missing); ``name`` is a string or ABSENT; ``created``/``modified`` are epoch milliseconds
    (``math.nan`` for an invalid date, which serializes as ``null``). ``first_message`` and
    ``all_messages_text`` are strings, unless :class:`TextOptions` left them out (ABSENT) or cut them
    (``text_truncated``; both are beyond the reference, whose shape is the default).
    """

    path: str
    id: Any
    cwd: str
    name: Any
    parent_session_path: Any
    created: int | float
    modified: int | float
    message_count: int
    first_message: Any
    all_messages_text: Any
    text_truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        """The reference's object as ``JSON.stringify`` shows it: keys in order, ABSENT fields
        omitted, dates as ISO strings (``None`` when invalid)."""
        out: dict[str, Any] = {"path": self.path}
        if self.id is not ABSENT:
            out["id"] = self.id
        out["cwd"] = self.cwd
        if self.name is not ABSENT:
            out["name"] = self.name
        if self.parent_session_path is not ABSENT:
            out["parentSessionPath"] = self.parent_session_path
        out["created"] = iso_from_ms(self.created)
        out["modified"] = iso_from_ms(self.modified)
        out["messageCount"] = self.message_count
        if self.first_message is not ABSENT:
            out["firstMessage"] = self.first_message
        if self.all_messages_text is not ABSENT:
            out["allMessagesText"] = self.all_messages_text
        if self.text_truncated:
            out["textTruncated"] = True
        return out


# ---- reading lines -------------------------------------------------------------------------------


class _LinesRead:
    """Where :func:`_listing_lines` stopped: ``end``, how many bytes it read up to the end of the
    last line break (0: none), and ``rest``, the last line when no break ends it (a line being
    written, or the last of a file that lacks a final newline; empty when there is none)."""

    __slots__ = ("end", "rest")

    def __init__(self) -> None:
        self.end = 0
        self.rest: _Buffer = b""


def _listing_lines(fd: int, size: int, signal: Any, read: _LinesRead) -> Iterator[_Buffer]:  # noqa: C901 - the chunked line scanner
    """The non-empty physical lines of a file from where ``fd`` is as ``readline`` splits them,
    read in chunks of at most ``_CHUNK_SIZE`` (the first read is sized to ``size``, what is left of
    the file, which keeps small files cheap), but the last one when no line break ends it: that
    one is left in ``read`` (with how far the lines before it go) once the lines are exhausted.

    Lines inside a chunk are yielded as memoryviews of it (no copy; ``find`` is memchr, unlike
    ``bytes.split``, which matters for lines of megabytes); a line spanning chunks is collected in a
    bytearray, which grows in place, so even a single huge line needs about its own size of memory.
    """
    carry: bytearray | None = None  # the start of a line that spans chunks
    read_size = min(size + 1, _CHUNK_SIZE)
    total = 0
    while True:
        throw_if_aborted(signal)
        chunk = os.read(fd, read_size)
        if not chunk:
            break
        total += len(chunk)
        read_size = _CHUNK_SIZE
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r", b"\n")  # only adds empty lines, which nobody keeps
        find = chunk.find
        newline = find(b"\n")
        if newline < 0:
            if carry is None:
                carry = bytearray(chunk)
            else:
                carry += chunk
            continue
        view = memoryview(chunk)
        if carry is not None:
            carry += view[:newline]
            line, carry = carry, None
            if line:
                yield line
        elif newline:
            yield view[:newline]
        pos = newline + 1
        while (newline := find(b"\n", pos)) >= 0:
            if newline > pos:
                yield view[pos:newline]
            pos = newline + 1
        if pos < len(chunk):
            carry = bytearray(view[pos:])
    read.rest = carry or b""
    read.end = total - len(read.rest)


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """What a listing takes of a session's header."""

    id: Any  # as stored (any JSON value, ABSENT when missing)
    cwd: str
    parent_session_path: Any
    created: int | float  # ms of its timestamp (NaN when invalid)
    # ms of its timestamp if that is a string, else NaN: the date of a session without dated messages
    time: int | float


def _session_header(value: Any) -> SessionHeader:
    timestamp = get(value, "timestamp")
    cwd = get(value, "cwd")
    return SessionHeader(
        id=get(value, "id"),
        cwd=cwd if type(cwd) is str else "",
        parent_session_path=get(value, "parentSession"),
        created=ms(timestamp),
        time=ms(timestamp) if type(timestamp) is str else math.nan,
    )


def _find_header(lines: Iterable[_Buffer]) -> SessionHeader | bool | None:
    """Consume lines up to the first kept value: the header if its ``type`` is "session" (its ``id`` is
    not checked), else False (the file is not listed); None when the lines hold no kept value."""
    for line in lines:
        try:
            value = parse_bytes(line)
        except JsonSyntaxError:
            continue
        if truthy(value):
            return _session_header(value) if get(value, "type") == "session" else False
    return None


@dataclass(slots=True)
class ListingState:
    """What a listing found in a session file's lines before ``end`` (0, or just after a line
    break): a listing of the file grown since reads on from there, as session files are appended
    to, and finds what reading it whole would."""

    end: int = 0
    # None: no kept value yet; False: the first was no header (the file is no session, whatever follows)
    header: SessionHeader | bool | None = None
    name: Any = ABSENT  # a trimmed non-empty string or ABSENT
    message_count: int = 0
    first_message: str = ""  # the first user message's text ("": none yet)
    last_activity: int | float | None = None  # the latest time of a message (None: none), at least 0


# ---- the fields a SessionInfo needs, decoded by msgspec --------------------------------------------
#
# ``Any`` fields hold small scalars in practice (type, role, timestamps, names); content is kept raw
# and decoded only for user and assistant messages. Unknown fields are skipped without being built.


class _Block(msgspec.Struct):
    type: Any = msgspec.UNSET
    text: str | msgspec.UnsetType | None = msgspec.UNSET


class _Message(msgspec.Struct):
    role: Any = msgspec.UNSET
    content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    timestamp: Any = msgspec.UNSET


class _Line(msgspec.Struct):
    type: Any = msgspec.UNSET
    timestamp: Any = msgspec.UNSET
    name: Any = msgspec.UNSET
    message: _Message | msgspec.UnsetType | None = msgspec.UNSET


_decode_line = msgspec.json.Decoder(_Line).decode
_decode_content = msgspec.json.Decoder(str | list[_Block]).decode

_SKIPPED: Final[Any] = object()  # a line that is not a kept value (malformed or falsy)


def _trimmed_name(name: Any) -> Any:
    """A ``session_info`` name as listing keeps it: JS-trimmed, ABSENT when empty.
    D6: a name that is not a string clears the name like ``null`` does."""
    return (js_trim(name) or ABSENT) if type(name) is str else ABSENT


def _is_number(x: Any) -> bool:
    return type(x) is int or type(x) is float


def _entry_time(timestamp: Any) -> int | float | None:
    """ms(entry timestamp), None when NaN."""
    t = ms(ABSENT if timestamp is msgspec.UNSET else timestamp)
    return None if t != t else t


def _join_element(value: Any) -> str:
    """How ``Array.prototype.join`` writes one element."""
    return "" if value is None or value is ABSENT else js_string_of(value)


@dataclass(slots=True)
class _MessageEffect:
    """What a ``message`` line adds besides counting: activity time (None: none) and text ("": none)."""

    activity: int | float | None
    text: str
    is_user: bool


@dataclass(slots=True)
class _NameEffect:
    name: Any  # a trimmed non-empty string or ABSENT


_NO_EFFECT: Final = _MessageEffect(None, "", False)


def _effect_exact(line: _Buffer, valid_json: bool) -> Any:
    """A line's contribution from the exact ``JSON.parse`` value: ``_SKIPPED`` (not kept), ``None``
    (kept, ignored), a :class:`_NameEffect` or a :class:`_MessageEffect` (counted). ``valid_json``:
    msgspec found the JSON well-formed (only a field had an unexpected type), so its generic decoding
    can be used; otherwise the line goes straight to the exact parser."""
    try:
        value = parse_bytes(line) if valid_json else parse(bytes(line).decode("utf-8", "replace"))
    except JsonSyntaxError:
        return _SKIPPED
    if not truthy(value):
        return _SKIPPED
    kind = get(value, "type")
    if kind == "session_info":
        return _NameEffect(_trimmed_name(get(value, "name")))
    if kind != "message":
        return None
    message = get(value, "message")
    # D6: a message that is not an object (null included) has no role.
    if not (is_object(message) and type(get(message, "role")) is str and "content" in message):
        return _NO_EFFECT
    role = message["role"]
    if role != "user" and role != "assistant":
        return _NO_EFFECT
    timestamp = message.get("timestamp", ABSENT)
    activity = timestamp if _is_number(timestamp) else _entry_time(get(value, "timestamp"))
    content = message["content"]
    if type(content) is str:
        text = content
    elif type(content) is list:
        # D6: blocks that are not objects are skipped.
        text = " ".join(
            _join_element(block.get("text", ABSENT))
            for block in content
            if is_object(block) and block.get("type", ABSENT) == "text"
        )
    else:
        text = ""  # D6: null or other content contributes no text
    return _MessageEffect(activity, text, role == "user")


# ---- one file --------------------------------------------------------------------------------------


def session_info(
    path: str,
    *,
    signal: Any = None,
    stat_result: os.stat_result | None = None,
    text: TextOptions = ALL_TEXT,
    env: Environment | None = None,
) -> SessionInfo | None:
    """The ``SessionInfo`` of the file at ``path`` (``buildSessionInfo``, docs/API.md §9.5), or
    ``None`` when it is not a listable session or cannot be read. ``path`` is reported as given (a
    relative one is read from the working directory of ``env``). ``stat_result``, if given, supplies the mtime
    fallback (``listAll`` stats its candidates first). ``text``: how much message text to keep (all
    of it by default, as the reference). Raises only :class:`~pi_session_server.errors.AbortError`
    (when ``signal`` is aborted)."""
    try:
        from . import listing_store  # (it imports this module)

        if listing_store.covers(text):  # what big files were found to be is kept
            return listing_store.session_info(path, on_disk(path, env), stat_result, text, signal)
        return _read_session_info(path, signal, stat_result, text, env)
    except Exception:  # noqa: BLE001 - the reference's catch-all: an unreadable file is no session
        throw_if_aborted(signal)
        return None


def _read_session_info(
    path: str,
    signal: Any,
    stat_result: os.stat_result | None,
    text_options: TextOptions,
    env: Environment | None,
) -> SessionInfo | None:
    with regular_file(on_disk(path, env)) as opened:
        if opened is None:
            return None
        fd, st = opened
        return read_on(path, fd, st, stat_result, ListingState(), text_options, signal)[0]


@contextlib.contextmanager
def regular_file(disk_path: str) -> Iterator[tuple[int, os.stat_result] | None]:
    """The file at ``disk_path`` open for reading and its status, or None when it is no regular
    file (a FIFO, a device, a directory: no session to list)."""
    # O_NONBLOCK so that a FIFO cannot block the open
    fd = os.open(disk_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        yield (fd, st) if stat.S_ISREG(st.st_mode) else None
    finally:
        os.close(fd)


def read_on(
    path: str,
    fd: int,
    st: os.stat_result,
    stat_result: os.stat_result | None,
    state: ListingState,
    text_options: TextOptions,
    signal: Any,
) -> tuple[SessionInfo | None, ListingState]:
    """The info of the regular file open at ``fd`` (its status ``st``; ``stat_result``: the
    listing's, if it made one) as ``text_options`` asks, its lines before ``state.end`` taken as
    ``state`` says (a state of nothing read: the whole file is read), and the state at its last line
    break. Every message's text is only there when the whole file is read. ``state`` is used up."""
    if state.header is False:
        return None, state
    os.lseek(fd, state.end, os.SEEK_SET)
    read = _LinesRead()
    lines = _listing_lines(fd, st.st_size - state.end, signal, read)
    texts = _text_collector(text_options)
    if state.header is None:
        state.header = _find_header(lines)  # (None: it read every line)
        if state.header is False:
            return None, ListingState(header=False)  # whatever follows
    if isinstance(state.header, SessionHeader):
        _gather(lines, state, texts)
    at_break = dataclasses.replace(state, end=state.end + read.end)
    if read.rest:
        if state.header is None:
            state.header = _find_header((read.rest,))
        elif isinstance(state.header, SessionHeader):
            _gather((read.rest,), state, texts)
    if not isinstance(state.header, SessionHeader):
        return None, at_break
    return _info_of(path, state, state.header, stat_result or st, text_options, texts), at_break


def _gather(  # noqa: C901 - the per-line loop of a listing, its fast path inline
    lines: Iterable[_Buffer], state: ListingState, texts: _AllTexts | _NoTexts | _CappedTexts
) -> None:
    """Take ``lines``, the lines after the header, into ``state`` (its ``end`` left as it is) and
    their message texts into ``texts``."""
    name = state.name
    message_count = state.message_count
    first_message = state.first_message
    last_activity = state.last_activity
    unset = msgspec.UNSET
    for line in lines:
        # The fast path decides most lines; it changes no state before it can no longer fail.
        try:
            entry = _decode_line(line)
            kind = entry.type
            if kind == "session_info":
                name = _trimmed_name(entry.name)
                continue
            if kind != "message":
                continue
            message = entry.message
            if message is None or message is unset:
                activity, text, is_user = None, "", False  # D6: no role, no text, no activity
            else:
                role = message.role
                if (
                    type(role) is not str
                    or message.content is unset
                    or (role != "user" and role != "assistant")
                ):
                    activity, text, is_user = None, "", False
                else:
                    content = _decode_content(message.content)
                    if type(content) is str:
                        text = content
                    else:
                        text = " ".join([block.text or "" for block in content if block.type == "text"])  # type: ignore[union-attr]
                    timestamp = message.timestamp
                    activity = timestamp if _is_number(timestamp) else _entry_time(entry.timestamp)
                    is_user = role == "user"
        except Exception as err:  # noqa: BLE001 - msgspec.DecodeError/ValidationError, RecursionError (deep values), ...: the exact reading decides
            effect = _effect_exact(line, isinstance(err, msgspec.ValidationError))
            if effect is None or effect is _SKIPPED:
                continue
            if type(effect) is _NameEffect:
                name = effect.name
                continue
            activity, text, is_user = effect.activity, effect.text, effect.is_user
        message_count += 1
        if activity is not None:
            last_activity = max(0 if last_activity is None else last_activity, activity)
        if text:
            texts.append(text)
            if is_user and not first_message:
                first_message = text
    state.name = name
    state.message_count = message_count
    state.first_message = first_message
    state.last_activity = last_activity


def _info_of(
    path: str,
    state: ListingState,
    header: SessionHeader,
    stat_result: os.stat_result,
    text_options: TextOptions,
    texts: _AllTexts | _NoTexts | _CappedTexts,
) -> SessionInfo:
    last_activity = state.last_activity
    if last_activity is not None and last_activity > 0:
        modified = ms(last_activity)
    elif header.time == header.time:
        modified = header.time
    else:
        modified = ms(js_round(mtime_ms(stat_result)))
    kept_first_message, first_cut = _kept_first_message(state.first_message or _NO_MESSAGES, text_options)
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=header.cwd,
        name=state.name,
        parent_session_path=header.parent_session_path,
        created=header.created,
        modified=modified,
        message_count=state.message_count,
        first_message=kept_first_message,
        all_messages_text=" ".join(texts.parts) if text_options.all_messages_text else ABSENT,
        text_truncated=first_cut or texts.truncated,
    )


# ---- ordering --------------------------------------------------------------------------------------


def _compare_modified(a: SessionInfo, b: SessionInfo) -> float:
    return b.modified - a.modified  # NaN (an invalid date) compares as "not less", like V8's sort


def sort_by_modified(infos: list[SessionInfo]) -> list[SessionInfo]:
    """``sortSessionInfos``: by ``modified`` descending, stable."""
    if any(info.modified != info.modified for info in infos):
        return sorted(infos, key=cmp_to_key(_compare_modified))  # type: ignore[arg-type]
    return sorted(infos, key=lambda info: info.modified, reverse=True)  # reverse keeps ties in order


class _SortedPartial:
    """The infos loaded so far, for progress reports: kept in :func:`sort_by_modified` order as they
    arrive, so that each report copies a list instead of sorting (and filtering) every info again.
    Reports come every few files, so sorting each time made a listing with progress quadratic.

    ``include`` (a cwd filter) is asked once per info; an error it raises is held back and raised
    at the next report, which is where the reference's filter of the partial list raises it.
    """

    __slots__ = ("_arrived", "_error", "_has_nan", "_include", "_infos", "_keys")

    def __init__(self, include: Callable[[SessionInfo], bool] | None = None) -> None:
        self._infos: list[SessionInfo] = []
        self._keys: list[float] = []  # -modified of each info, ascending
        self._arrived: list[SessionInfo] = []  # arrival order, for the comparator sort NaN needs
        self._has_nan = False
        self._include = include
        self._error: Exception | None = None

    def add(self, info: SessionInfo) -> None:
        if self._include is not None and self._error is None:
            try:
                if not self._include(info):
                    return
            except Exception as err:  # noqa: BLE001 - the caller's filter failed: raised again to the caller
                self._error = err
                return
        self._arrived.append(info)
        modified = info.modified
        if modified != modified:
            self._has_nan = True
            return
        at = bisect.bisect_right(self._keys, -modified)  # after equal ones: ties stay in arrival order
        self._keys.insert(at, -modified)
        self._infos.insert(at, info)

    def snapshot(self) -> list[SessionInfo]:
        """The partial list as the reference passes it: sorted, filtered, a list of its own."""
        if self._error is not None:
            raise self._error
        if self._has_nan:  # an invalid date: the comparator's order is not a total one
            return sort_by_modified(self._arrived)
        return list(self._infos)


# ---- listing -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Candidate:
    path: str
    stat_result: os.stat_result | None = None


def _build_infos(
    candidates: list[_Candidate],
    signal: Any,
    on_loaded: Callable[[SessionInfo | None, int], None],
    text: TextOptions,
    env: Environment,
) -> list[SessionInfo]:
    """``buildSessionInfosWithConcurrency``, sequentially: infos in candidate order, failures dropped."""
    infos: list[SessionInfo] = []
    for index, candidate in enumerate(candidates):
        throw_if_aborted(signal)
        info = session_info(
            candidate.path, signal=signal, stat_result=candidate.stat_result, text=text, env=env
        )
        on_loaded(info, index)
        if info is not None:
            infos.append(info)
    return infos


def _list_directory(
    directory: str,
    on_progress: Any,
    signal: Any,
    text: TextOptions,
    env: Environment,
    include: Callable[[SessionInfo], bool] | None = None,
) -> list[SessionInfo]:
    """``listSessionsFromDir``: infos of the ``*.jsonl`` names directly in ``directory``, in
    name-descending (``localeCompare``) order. Any error other than an abort gives ``[]``.
    ``include``: the filter of the partial lists given to ``on_progress`` (not of the result)."""
    throw_if_aborted(signal)
    try:
        if not os.path.exists(env.on_disk(directory)):
            return []
        names = [name for name in readdir(env.on_disk(directory)) if name.endswith(".jsonl")]
        names.sort(key=collation_key, reverse=True)  # reverse keeps equal-collating names in order
        candidates = [_Candidate(node_join(directory, name)) for name in names]
        total = len(candidates)
        partial = _SortedPartial(include)
        loaded = 0

        def on_loaded(info: SessionInfo | None, _index: int) -> None:
            nonlocal loaded
            loaded += 1
            if not on_progress:
                return
            if info is not None:
                partial.add(info)
            publish = loaded == 1 or loaded % _CURRENT_PUBLISH_INTERVAL == 0 or loaded == total
            on_progress(loaded, total, partial.snapshot() if publish else None)

        return _build_infos(candidates, signal, on_loaded, text, env)
    except Exception:  # noqa: BLE001 - the reference's catch-all: an unreadable directory lists nothing
        throw_if_aborted(signal)
        return []


def list_sessions(
    cwd: StrPath,
    session_dir: StrPath | None = ABSENT,
    on_progress: ProgressCallback | None = None,
    signal: Any = None,
    *,
    text: TextOptions = ALL_TEXT,
    pi: PiVersion = DEFAULT_PI,
    env: Environment | None = None,
) -> list[SessionInfo]:
    """``SessionManager.list(cwd, sessionDir?, onProgress?, signal?)`` (docs/API.md §9.3).

    The directory is ``normalizePath(session_dir)`` if truthy, else the default directory for ``cwd``
    (created). Sessions are filtered by header cwd only when ``session_dir`` was given and is not the
    default directory path (as release ``pi`` compares directories). Result: sorted by ``modified`` descending, ties in name-descending
    order. ``on_progress(loaded, total, partial)`` is called after each file; ``partial`` (the infos so
    far, sorted and filtered) is given when ``loaded`` is 1, a multiple of 10 or ``total``, else None.
    Raises :class:`~pi_session_server.errors.AbortError` when ``signal`` is (or becomes) aborted.
    ``text`` (beyond the reference): how much message text each info keeps, all of it by default.
    ``env``: the working directory and variables the reference reads from its process.
    """
    env = current(env)
    directory, filter_cwd = session_dir_for(cwd, session_dir, pi, env)
    resolved_cwd = resolve_path(cwd, env=env)

    def include(info: SessionInfo) -> bool:
        return not filter_cwd or cwd_matches(info.cwd, resolved_cwd, env)

    infos = _list_directory(directory, on_progress, signal, text, env, include if filter_cwd else None)
    return sort_by_modified([info for info in infos if include(info)])


def list_all_sessions(
    session_dir: StrPath | Callable[..., Any] | None = ABSENT,
    on_progress: Any = None,
    signal: Any = None,
    *,
    text: TextOptions = ALL_TEXT,
    env: Environment | None = None,
) -> list[SessionInfo]:
    """``SessionManager.listAll(sessionDir?, onProgress?, signal?)`` and ``listAll(onProgress?,
    signal?)`` (docs/API.md §9.4), with the reference's overload resolution: a string first argument is a
    directory whose ``*.jsonl`` files are listed (no cwd filter, no subdirectories); a callable first
    argument is the progress callback (then the second argument is the signal); anything else first
    (an AbortSignal included) is ignored and the second argument is the callback if callable, else
    the signal.

    Without a (non-empty) directory, every directory or symbolic link directly under the sessions root
    ``<agent dir>/sessions`` is read (files directly in the root are ignored); candidates are ordered
    by mtime descending (unstat-able last), ties by base name descending; partial results are passed
    to ``on_progress`` once the first candidate is done, then at every 100th file and at the end.
    ``text`` (beyond the reference): how much message text each info keeps, all of it by default.
    ``env``: the working directory and variables the reference reads from its process.
    """
    env = current(env)
    if isinstance(session_dir, os.PathLike):  # a pathlib.Path is the directory it names
        session_dir = path_text(session_dir)
    custom_dir = normalize_path(session_dir, env) if type(session_dir) is str else None
    arg2_is_callback = callable(on_progress)
    progress = session_dir if callable(session_dir) else (on_progress if arg2_is_callback else None)
    if type(session_dir) is str or arg2_is_callback:
        abort_signal = signal
    else:
        abort_signal = signal if on_progress is None or on_progress is ABSENT else on_progress
    throw_if_aborted(abort_signal)
    if custom_dir:
        return sort_by_modified(_list_directory(custom_dir, progress, abort_signal, text, env))
    try:
        return _list_sessions_root(get_sessions_root(env), progress, abort_signal, text, env)
    except Exception:  # noqa: BLE001 - the reference's catch-all: an unreadable root lists nothing
        throw_if_aborted(abort_signal)
        return []


def _sort_candidates(candidates: list[_Candidate]) -> None:
    """By mtime descending (unstat-able last), ties by base name descending (``localeCompare``).
    Collation keys are computed only for ties, which are rare."""

    def mtime(candidate: _Candidate) -> float:
        return -math.inf if candidate.stat_result is None else mtime_ms(candidate.stat_result)

    times = [mtime(c) for c in candidates]
    order = sorted(range(len(candidates)), key=times.__getitem__, reverse=True)  # stable
    result = [candidates[i] for i in order]
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and times[order[end]] == times[order[start]]:
            end += 1
        if end - start > 1:
            result[start:end] = sorted(
                result[start:end], key=lambda c: collation_key(os.path.basename(c.path)), reverse=True
            )
        start = end
    candidates[:] = result


def _list_sessions_root(
    root: str, progress: Any, signal: Any, text: TextOptions, env: Environment
) -> list[SessionInfo]:
    if not os.path.exists(env.on_disk(root)):
        return []
    with os.scandir(env.on_disk(root)) as scan:
        entries = sorted(scan, key=lambda entry: os.fsencode(entry.name))  # Node's readdir order
    directories = [
        node_join(root, entry.name)
        for entry in entries
        if entry.is_dir(follow_symlinks=False) or entry.is_symlink()
    ]
    paths: list[str] = []
    for directory in directories:
        throw_if_aborted(signal)
        try:
            names = [name for name in readdir(env.on_disk(directory)) if name.endswith(".jsonl")]
        except OSError:
            continue  # an unreadable directory (or a link to a file) contributes nothing
        paths.extend(node_join(directory, name) for name in names)
    candidates: list[_Candidate] = []
    for path in paths:
        throw_if_aborted(signal)
        try:
            candidates.append(_Candidate(path, os.stat(env.on_disk(path))))
        except OSError:
            candidates.append(_Candidate(path))
    _sort_candidates(candidates)
    total = len(candidates)
    partial = _SortedPartial()
    loaded = 0
    first_loaded = False

    def on_loaded(info: SessionInfo | None, index: int) -> None:
        nonlocal loaded, first_loaded
        loaded += 1
        if index == 0:
            first_loaded = True
        if not progress:
            return
        if info is not None:
            partial.add(info)
        publish = first_loaded and (index == 0 or loaded % _ALL_PUBLISH_INTERVAL == 0 or loaded == total)
        progress(loaded, total, partial.snapshot() if publish else None)

    return sort_by_modified(_build_infos(candidates, signal, on_loaded, text, env))
