"""Sessions opened for a ``uri``: read without writing, reopened for writing on the first write.

``SessionManager.open`` writes at load time when the file needs it (v1/v2 migration rewrite, the
trailing-newline repair, a header for an empty file). A front end that merely looks at a file must
not change it, so such files are loaded into an in-memory manager (the same entries, migrated in
memory) and reopened with ``open`` when a writing method is called.
"""

from __future__ import annotations

import os
from typing import Any

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager
from pi_session_server.session.loader import (
    ends_without_newline,
    is_valid_header,
    load_exact,
    open_for_reading,
    peek_header,
)
from pi_session_server.session.migrate import needs_migration


def open_view(path: str) -> tuple[Any, str | None]:
    """(manager, view path): ``view path`` is set when the manager is an unwritten in-memory copy."""
    if not os.path.isfile(path):
        return SessionManager.open(path), None
    fd = open_for_reading(path)
    try:
        peek = peek_header(fd)
        size = peek.size
        if not is_valid_header(peek.value):
            if size > 0:
                return SessionManager.open(path), None  # raises "not a valid pi session"; writes nothing
            return SessionManager.in_memory(os.getcwd()), path
        if not needs_migration([peek.value]) and not ends_without_newline(fd, size):
            return SessionManager.open(path), None
        values = [v for v in load_exact(fd).values]
    finally:
        os.close(fd)
    header_cwd = peek.value.get("cwd") if isinstance(peek.value.get("cwd"), str) else os.getcwd()
    return SessionManager.in_memory(header_cwd, ABSENT, values), path


def upgrade_view(view: Any, path: str) -> Any:
    """The writable manager for ``path``, with the view's leaf kept where the client put it."""
    manager = SessionManager.open(path)
    leaf = view.get_leaf_id()
    if leaf is None:
        manager.reset_leaf()
    elif leaf is not ABSENT and manager.get_entry(leaf) is not ABSENT:
        manager.branch(leaf)
    return manager
