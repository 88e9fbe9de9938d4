"""What a session is: the tree index, context building, the SessionManager API, storage, listing.

Python names of the reference API are listed in ``docs/API.md`` §10. Every entry point takes ``pi=``
(``"1.6.0"``, the default, or ``"0.86.1"``): the pi release whose behaviour it follows.
"""

from ..format.ids import assert_valid_session_id
from .context import build_context_entries, get_latest_compaction_entry, session_entry_to_context_messages
from .environment import Environment
from .files import load_entries_from_file, parse_session_entries
from .listing import find_most_recent_session
from .manager import FileChange, ForeignWrite, ReadOnlySessionError, SessionManager
from .migrate import CURRENT_SESSION_VERSION, migrate_session_entries
from .paths import get_default_session_dir
from .profiles import DEFAULT_PI, PROFILES, Profile, profile_for
from .projection import build_session_context, build_session_projection, project_context_entry
from .tree import TreeNode, tree_to_json

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
