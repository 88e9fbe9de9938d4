"""What a session is: the tree index, context building, the SessionManager API, storage, listing.

Python names of the reference API are listed in ``docs/API.md`` §10. Every entry point takes ``pi=``
(``"1.6.0"``, the default, or ``"0.86.1"``): the pi release whose behaviour it follows.

The names below are imported from their modules when first used: a command that only prints what
it kept from the last run (``pi-session tree`` of an unchanged file) imports a submodule of this
package, which runs this file, and must not pay for the whole library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..format.ids import assert_valid_session_id
    from .appends import ReadOnlySessionError
    from .context import build_context_entries, get_latest_compaction_entry, session_entry_to_context_messages
    from .environment import Environment
    from .file_follow import FileChange, ForeignWrite
    from .files import load_entries_from_file, parse_session_entries
    from .listing import find_most_recent_session
    from .manager import SessionManager
    from .migrate import CURRENT_SESSION_VERSION, migrate_session_entries
    from .paths import StrPath, get_default_session_dir
    from .profiles import DEFAULT_PI, PROFILES, Profile, profile_for
    from .projection import build_session_context, build_session_projection, project_context_entry
    from .tree import TreeNode, tree_to_json

# exported name -> the module that defines it (relative to this package)
_EXPORTED_FROM: dict[str, str] = {
    "assert_valid_session_id": "..format.ids",
    "ReadOnlySessionError": ".appends",
    "build_context_entries": ".context",
    "get_latest_compaction_entry": ".context",
    "session_entry_to_context_messages": ".context",
    "Environment": ".environment",
    "FileChange": ".file_follow",
    "ForeignWrite": ".file_follow",
    "load_entries_from_file": ".files",
    "parse_session_entries": ".files",
    "find_most_recent_session": ".listing",
    "SessionManager": ".manager",
    "CURRENT_SESSION_VERSION": ".migrate",
    "migrate_session_entries": ".migrate",
    "get_default_session_dir": ".paths",
    "StrPath": ".paths",
    "DEFAULT_PI": ".profiles",
    "PROFILES": ".profiles",
    "Profile": ".profiles",
    "profile_for": ".profiles",
    "build_session_context": ".projection",
    "build_session_projection": ".projection",
    "project_context_entry": ".projection",
    "TreeNode": ".tree",
    "tree_to_json": ".tree",
}

__all__ = [
    "CURRENT_SESSION_VERSION",
    "DEFAULT_PI",
    "PROFILES",
    "Environment",
    "FileChange",
    "ForeignWrite",
    "Profile",
    "ReadOnlySessionError",
    "SessionManager",
    "StrPath",
    "TreeNode",
    "assert_valid_session_id",
    "build_context_entries",
    "build_session_context",
    "build_session_projection",
    "find_most_recent_session",
    "get_default_session_dir",
    "get_latest_compaction_entry",
    "load_entries_from_file",
    "migrate_session_entries",
    "parse_session_entries",
    "profile_for",
    "project_context_entry",
    "session_entry_to_context_messages",
    "tree_to_json",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTED_FROM.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTED_FROM})
