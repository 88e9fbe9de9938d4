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
are encoded: such entries are small.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pi_session_server.format.entry import Entry
from pi_session_server.format.scan import SHORT_LINE

from . import errors
from .wire import encode_result


def entries_bytes(entries: Iterable[Any]) -> int:
    """About the bytes of the JSON of ``entries`` (no more than their lines hold; see the module)."""
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
        elif i < last:
            total += max(0, min(SHORT_LINE, lines[i + 1].offset - entry.offset - 1))
        else:
            total += len(encode_result(entry))  # nothing in the reply follows it: read (it is short)
    return total


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
