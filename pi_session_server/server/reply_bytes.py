"""The size of a reply made of whole entries, told before the reply is made.

A reply's peak memory is its values, their JSON and its framing at once: the path of a 2 GB session
sent whole (pi/getBranch) takes several times its size. Replies whose size the request does not
bound (a path, every entry, a context) are refused past :data:`.errors.MAX_REPLY_BYTES` by an
estimate made from the entries' envelopes, without reading or encoding their bodies.

An entry's JSON is about its line in the file (``JSON.stringify`` writes it again without the
spaces and escapes the file may have). A long line's length is kept with its entry. A shorter one
(``Entry.length`` 0, below ``SHORT_LINE``) ends before the next line of the file begins: with the
entries sorted by offset, each is counted as the distance to the next one's line (at most
``SHORT_LINE``), which is its own length when the reply holds the lines that follow it (a path, the
entries in file order). The last of them, and an entry not read from a file (created in memory),
are encoded: such entries are small. Where the reply skips lines of the file (a path past other
branches), that distance holds them too: an estimate past the bound is made again with the
distance to the file's next entry (:func:`reply_bytes`), so that no reply is refused for lines it
does not hold.

A listing (pi/list, pi/listAll) holds the text of every session when the request asks for all of it
(pi's default): it is counted from the strings the listing holds already, as the reply writes them
(:func:`listing_bytes`): text full of newlines and quotes takes more bytes than characters.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry
from pi_session_server.format.scan import SHORT_LINE

from . import errors
from .wire import encode_result


def reply_bytes(manager: Any, entries: Sequence[Any], copies: int = 1) -> int:
    """:func:`entries_bytes` of the entries of ``manager`` a reply holds (``copies`` times over);
    past the bound, measured again by where the file's next entry starts (the lines between are
    then not counted)."""
    estimate = copies * entries_bytes(entries)
    if estimate <= errors.MAX_REPLY_BYTES:
        return estimate
    offsets = [at for at in manager.envelopes(0, manager.entry_count()).offsets if at >= 0]
    return copies * entries_bytes(entries, offsets)


def entries_bytes(entries: Iterable[Any], file_offsets: Sequence[int] | None = None) -> int:
    """About the bytes of the JSON of ``entries`` (no more than their lines hold; see the module).
    ``file_offsets``: where each entry of the file starts, in file order (a short line is then
    counted to the next entry of the file, not to the next one of ``entries``)."""
    total = 0
    lines: list[Entry] = []  # the entries read from the file
    for entry in entries:
        if type(entry) is not Entry or entry.offset < 0:
            total += len(encode_result(entry))
        else:
            lines.append(entry)
    lines.sort(key=_offset)
    last = len(lines) - 1
    for i, entry in enumerate(lines):
        if entry.length:
            total += entry.length
        elif file_offsets is not None and (after := _next_start(file_offsets, entry.offset)) >= 0:
            total += max(0, min(SHORT_LINE, after - entry.offset - 1))
        elif i < last:
            total += max(0, min(SHORT_LINE, lines[i + 1].offset - entry.offset - 1))
        else:
            total += len(encode_result(entry))  # nothing in the reply follows it: read (it is short)
    return total


# About the JSON of a session's info besides its strings: the keys, two dates, the message count.
LISTED_SESSION_BYTES = 200


def listing_bytes(infos: Iterable[Any]) -> int:
    """About the bytes of the JSON of a listing's ``SessionInfo`` values: each string they hold as
    the reply writes it (escapes and all) and the rest of each object."""
    total = 0
    for info in infos:
        total += LISTED_SESSION_BYTES
        texts = (
            info.path,
            info.cwd,
            info.id,
            info.name,
            info.parent_session_path,
            info.first_message,
            info.all_messages_text,
        )
        total += sum(_written_bytes(text) for text in texts if type(text) is str)
    return total


# characters of a long string encoded at once: the copies measuring makes stay this small
_MEASURED_AT_ONCE = 1 << 20
_encode_string = msgspec.json.Encoder().encode


def _written_bytes(text: str) -> int:
    """The bytes of ``text`` as a reply writes it, without its quotes: its UTF-8, where a quote,
    a backslash or a control character is written as an escape of two or six bytes, and a lone
    surrogate as one of six. Measured by encoding it (in C), a slice at a time."""
    if len(text) <= _MEASURED_AT_ONCE:
        return _encoded_length(text)
    return sum(
        _encoded_length(text[at : at + _MEASURED_AT_ONCE]) for at in range(0, len(text), _MEASURED_AT_ONCE)
    )


def _encoded_length(text: str) -> int:
    try:
        return len(_encode_string(text)) - 2
    except UnicodeEncodeError:  # a lone surrogate, which the reply's own encoder escapes
        return len(encode_result(text)) - 2


def _next_start(file_offsets: Sequence[int], offset: int) -> int:
    """Where the file's entry after the one at ``offset`` starts (-1 for the last)."""
    at = bisect_right(file_offsets, offset)
    return file_offsets[at] if at < len(file_offsets) else -1


def _offset(entry: Entry) -> int:
    return int(entry.offset)


def refuse_past_max(estimate: int, ask_instead: str) -> None:
    """TooLarge (-32011) when a reply of about ``estimate`` bytes would be larger than one reply
    may be; ``ask_instead`` tells what to ask for instead."""
    most = errors.MAX_REPLY_BYTES
    if estimate > most:
        raise errors.PiRpcError(
            errors.TOO_LARGE,
            f"The reply would hold about {estimate} bytes, more than the {most} one reply may hold: "
            + ask_instead,
            {"bytes": estimate, "max": most},
        )
