"""Whether a file renamed over a session's path may receive the session's next entry.

Another program may rename a file over the session's path at any moment (an editor's
save-by-rename, ``mv other.jsonl session.jsonl``), and so does a rewrite of ours (a repair, a
migration), whose rename an append may have waited for. Our entry names entries of the session
(its parent, a label's target, a compaction's first kept entry): written into a file that does not
hold them, it is an orphan there, acknowledged into a tree it does not belong to. So the file
there now receives it only when it is the same session (its header's id) and holds every entry
the new one names that the session holds; a rewrite of ours keeps both, another session or an
older copy of this one does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SessionFileReplacedError
from ..format.jsvalue import get, index_key, js_string_of
from ..format.scan import scan_entries
from .loader import is_valid_header, peek_header

# the members of an entry that name another entry of the session
NAMING_MEMBERS = ("parentId", "targetId", "fromId", "firstKeptEntryId")
_SHOWN_ID = 64  # characters of an id the refusal quotes (an id is the file's: it may be huge)
_SHOWN_IDS = 4


def named_ids(value: dict[str, Any], holds: Callable[[Any], bool]) -> list[Any]:
    """The ids ``value`` names (its parent, a target, ...) that the session ``holds`` (an id that
    names no entry of the session, pi's ``"root"`` of a summary from the root, is nothing a file
    must hold)."""
    named = []
    for member in NAMING_MEMBERS:
        target = value.get(member)
        if target is not None and holds(target):
            named.append(target)
    return named


def require_receives(fd: int, path: str, header: Any, named: list[Any]) -> None:
    """Raise :class:`SessionFileReplacedError` unless the file open as ``fd`` is the session whose
    header is ``header`` and holds every entry of ``named``. The file is read whole (only a file
    that replaced the session's gets here)."""
    peek = peek_header(fd)
    if not is_valid_header(peek.value) or index_key(get(peek.value, "id")) != index_key(get(header, "id")):
        raise SessionFileReplacedError(path, [])
    missing = {index_key(target): target for target in named}
    if missing:
        found = scan_entries(fd, None, start=peek.next_offset, first_line=peek.line + 1, have_header=True)
        for entry in found.entries:
            missing.pop(index_key(entry.id), None)
    if missing:
        shown = [js_string_of(target)[:_SHOWN_ID] for target in list(missing.values())[:_SHOWN_IDS]]
        raise SessionFileReplacedError(path, shown)
