"""What a listing read of a big session file, kept beside the file's index: listing the same
sessions again reads only what changed.

pi's ``list``/``listAll`` read each session file whole, to count its messages and find its name,
dates and first message: a directory that holds sessions of GBs takes seconds every time, and a
picker of sessions lists them again each time it opens. A listing that leaves the sessions' whole
text out (``TextOptions.all_messages_text`` False, what pickers and ``pi-session list`` ask) keeps
what it found in each file of the index's size or more as a view of the file (view_store, kind
``list``): the listing's state at the file's last line break (listing.ListingState), its first
message cut to :data:`KEPT_FIRST_CHARS`. Session files are appended to: while the file has the same
device, inode and inode generation, is no shorter and has the same first bytes and the same bytes
before the size it had (view_store.load_grown), only what follows that line break is read (the
session pi is appending to: its new lines; an unchanged file: its last line if no break ends it,
usually nothing), and the state read on to the new last line break is kept.

A file changed in the last seconds (the session pi is writing) is read on from what was kept too,
as what tells that it only grew is its bytes, not its times; but what is read of it is not kept:
kept with the file's identity, it would be taken for the whole file, unread, while that identity
holds, and a file changed lately may change again without its times changing (cache_dir.RACY_NS).

Any first-message cut of at most :data:`KEPT_FIRST_CHARS` is made from the kept one, the same as
from the whole message: the first N code points of a message's first 4,096 are its first N.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from ..format.jsvalue import ABSENT
from . import cache_dir, listing, view_store
from .listing import ListingState, SessionHeader, SessionInfo, TextOptions

KIND: Final = "list"
KEPT_FIRST_CHARS: Final = 4096
# What is read of a file to keep: every fact of its info, its first message cut, no other text.
KEPT_TEXT: Final = TextOptions(first_message=True, all_messages_text=False, max_chars=KEPT_FIRST_CHARS)
_FORMAT = 2  # of the kept value, within the view's key


def covers(text: TextOptions) -> bool:
    """Whether a listing asking ``text`` of each session can take its infos from those kept."""
    if text.all_messages_text:
        return False
    return not text.first_message or (text.max_chars is not None and text.max_chars <= KEPT_FIRST_CHARS)


def session_info(
    path: str,
    disk_path: str,
    stat_result: Any,
    text: TextOptions,
    signal: Any,
) -> SessionInfo | None:
    """The info of the session file at ``path`` (``disk_path`` on disk) as ``text`` asks (one that
    :func:`covers`), read on from what was kept of the file if it only grew since, else read whole;
    what was read is kept. ``stat_result``: the listing's stat of the file, if it made one (the
    info's date of a session without dated messages is its mtime)."""
    with listing.regular_file(disk_path) as opened:
        if opened is None:
            return None
        fd, st = opened
        kept = view_store.load_grown(fd, st, KIND, (_FORMAT,))
        found = _decoded(bytes(kept.data)) if kept is not None else None
        state, kept_cut = found if found is not None else (ListingState(), False)
        info, at_break = listing.read_on(path, fd, st, stat_result, state, KEPT_TEXT, signal)
    identity = cache_dir.identity(st)
    new = found is None or kept is None or kept.identity != identity
    keeps = new and view_store.may_keep(identity) and not cache_dir.changed_lately(st)
    if keeps and at_break.end <= st.st_size:  # (most files listed are too small to keep: not encoded)
        # (kept only if the file is still as it was opened: see view_store.save)
        cut = kept_cut or len(at_break.first_message) > KEPT_FIRST_CHARS
        view_store.save(disk_path, identity, KIND, (_FORMAT,), "", _encoded(at_break, cut))
    if info is None:
        return None
    if kept_cut:  # the kept first message, the info's, is the first characters of the message
        info = dataclasses.replace(info, text_truncated=True)
    return _as_asked(info, path, text)


def _as_asked(info: SessionInfo, path: str, text: TextOptions) -> SessionInfo:
    if not text.first_message:
        return dataclasses.replace(info, path=path, first_message=ABSENT, text_truncated=False)
    first, cut = info.first_message, info.text_truncated
    if text.max_chars is not None and len(first) > text.max_chars:
        first, cut = first[: text.max_chars], True
    return dataclasses.replace(info, path=path, first_message=first, text_truncated=cut)


def _encoded(state: ListingState, first_cut: bool) -> bytes:
    """The kept value: JSON (NaN dates and lone surrogates kept as Python's JSON writes them), a
    value that may be absent as ``[]`` or ``[value]``, the header as ``null`` (none found yet),
    ``false`` (no session) or a list."""

    def maybe(value: Any) -> list[Any]:
        return [] if value is ABSENT else [value]

    header: Any = state.header
    if isinstance(state.header, SessionHeader):
        h = state.header
        header = [maybe(h.id), h.cwd, maybe(h.parent_session_path), h.created, h.time]
    return json.dumps(
        [
            state.end,
            header,
            maybe(state.name),
            state.message_count,
            state.first_message[:KEPT_FIRST_CHARS],
            first_cut,
            [] if state.last_activity is None else [state.last_activity],
        ]
    ).encode()


def _decoded(data: bytes) -> tuple[ListingState, bool] | None:
    """The kept state and whether its first message was cut, or None for a value that is not one
    this module writes."""

    def maybe(value: Any) -> Any:
        if type(value) is not list or len(value) > 1:
            raise ValueError("not a kept value that may be absent")
        return value[0] if value else ABSENT

    def is_number(value: Any) -> bool:
        return type(value) in (int, float)

    try:
        end, header, name, count, first, first_cut, last_activity = json.loads(data)
        if header is not None and header is not False:
            identifier, cwd, parent, created, time = header
            if not (type(cwd) is str and is_number(created) and is_number(time)):
                return None
            header = SessionHeader(maybe(identifier), cwd, maybe(parent), created, time)
        name = maybe(name)
        last_activity = maybe(last_activity)
        if not (
            type(end) is int
            and end >= 0
            and (name is ABSENT or type(name) is str)
            and type(count) is int
            and type(first) is str
            and type(first_cut) is bool
            and (last_activity is ABSENT or is_number(last_activity))
        ):
            return None
        state = ListingState(
            end=end,
            header=header,
            name=name,
            message_count=count,
            first_message=first,
            last_activity=None if last_activity is ABSENT else last_activity,
        )
        return state, first_cut
    except (ValueError, TypeError, RecursionError):
        return None
