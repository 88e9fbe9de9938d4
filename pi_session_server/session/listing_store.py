"""What a listing read of a big session file, kept beside the file's index: listing the same
sessions again reads only the files that changed.

pi's ``list``/``listAll`` read each session file whole, to count its messages and find its name,
dates and first message: a directory that holds sessions of GBs takes seconds every time, and a
picker of sessions lists them again each time it opens. A listing that leaves the sessions' whole
text out (``TextOptions.all_messages_text`` False, what pickers and ``pi-session list`` ask) keeps
what it read of each file of the index's size or more as a view of the file (view_store, kind
``list``): the file's info with its first message cut to :data:`KEPT_FIRST_CHARS`, or that it is
no session. It is used only while the file has the same device, inode, size, mtime and ctime and
the same first and last bytes; a file changed in the last seconds (the session pi is writing) is
read again every time. Any first-message cut of at most :data:`KEPT_FIRST_CHARS` is made from the
kept one, the same as from the whole message: the first N code points of a message's first 4,096
are its first N.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Final

from ..format.jsvalue import ABSENT
from . import cache_dir, view_store
from .listing import SessionInfo, TextOptions

KIND: Final = "list"
KEPT_FIRST_CHARS: Final = 4096
# What is read of a file to keep: every fact of its info, its first message cut, no other text.
KEPT_TEXT: Final = TextOptions(first_message=True, all_messages_text=False, max_chars=KEPT_FIRST_CHARS)
_FORMAT = 1  # of the kept value, within the view's key


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
    read: Callable[[TextOptions], SessionInfo | None],
) -> SessionInfo | None:
    """The info of the session file at ``path`` (``disk_path`` on disk) as ``text`` asks (one that
    :func:`covers`): from what was kept of the file if it is unchanged, else ``read(KEPT_TEXT)``
    and kept. ``stat_result``: the listing's stat of the file, if it made one (the info's date of a
    session without dated messages is its mtime): what was kept is used only for that same file."""
    before = view_store.identity_before_open(disk_path)
    if before is None or (stat_result is not None and cache_dir.identity(stat_result) != before):
        return read(text)
    kept = view_store.load(disk_path, before, KIND, (_FORMAT,))
    found = _decoded(bytes(kept.data), path) if kept is not None else _UNKNOWN
    if found is _UNKNOWN:
        found = read(KEPT_TEXT)
        view_store.save(disk_path, before, KIND, (_FORMAT,), "", _encoded(found))
    return None if found is None else _as_asked(found, path, text)


_UNKNOWN: Any = object()


def _as_asked(info: SessionInfo, path: str, text: TextOptions) -> SessionInfo:
    if not text.first_message:
        return dataclasses.replace(info, path=path, first_message=ABSENT, text_truncated=False)
    first, cut = info.first_message, info.text_truncated
    if text.max_chars is not None and len(first) > text.max_chars:
        first, cut = first[: text.max_chars], True
    return dataclasses.replace(info, path=path, first_message=first, text_truncated=cut)


def _encoded(info: SessionInfo | None) -> bytes:
    """The kept value: JSON (NaN dates and lone surrogates kept as Python's JSON writes them), a
    value that may be absent as ``[]`` or ``[value]``."""
    if info is None:
        return b"null"

    def maybe(value: Any) -> list[Any]:
        return [] if value is ABSENT else [value]

    return json.dumps(
        [
            maybe(info.id),
            info.cwd,
            maybe(info.name),
            maybe(info.parent_session_path),
            info.created,
            info.modified,
            info.message_count,
            info.first_message,
            info.text_truncated,
        ]
    ).encode()


def _decoded(data: bytes, path: str) -> Any:
    """The kept info (``path`` its path), None for a file that is no session, or ``_UNKNOWN`` for
    a value that is not one this module writes."""

    def maybe(value: Any) -> Any:
        if type(value) is not list or len(value) > 1:
            raise ValueError("not a kept value that may be absent")
        return value[0] if value else ABSENT

    try:
        value = json.loads(data)
        if value is None:
            return None
        identifier, cwd, name, parent, created, modified, count, first, truncated = value
        dates_are_numbers = all(type(date) in (int, float) for date in (created, modified))
        if not (
            dates_are_numbers
            and type(cwd) is str
            and type(count) is int
            and type(first) is str
            and type(truncated) is bool
        ):
            return _UNKNOWN
        return SessionInfo(
            path=path,
            id=maybe(identifier),
            cwd=cwd,
            name=maybe(name),
            parent_session_path=maybe(parent),
            created=created,
            modified=modified,
            message_count=count,
            first_message=first,
            all_messages_text=ABSENT,
            text_truncated=truncated,
        )
    except (ValueError, TypeError, RecursionError):
        return _UNKNOWN
