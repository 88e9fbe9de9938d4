"""What a session is: the tree index, context building, the SessionManager API, storage, listing.

Python names of the reference API are listed in ``docs/API.md`` §10.
"""

from ..format.ids import assert_valid_session_id
from .context import (
    build_context_entries,
    build_session_context,
    get_latest_compaction_entry,
    session_entry_to_context_messages,
)
from .files import load_entries_from_file, parse_session_entries
from .listing import find_most_recent_session
from .manager import FileChange, ForeignWrite, ReadOnlySessionError, SessionManager
from .migrate import CURRENT_SESSION_VERSION, migrate_session_entries
from .paths import get_default_session_dir
from .tree import TreeNode, tree_to_json

__all__ = [
    "CURRENT_SESSION_VERSION",
    "FileChange",
    "ForeignWrite",
    "ReadOnlySessionError",
    "SessionManager",
    "TreeNode",
    "assert_valid_session_id",
    "build_context_entries",
    "build_session_context",
    "find_most_recent_session",
    "get_default_session_dir",
    "get_latest_compaction_entry",
    "load_entries_from_file",
    "migrate_session_entries",
    "parse_session_entries",
    "session_entry_to_context_messages",
    "tree_to_json",
]
