"""Which pi release the library behaves like: one :class:`Profile` per release, chosen by version.

Nothing in a session file says which pi wrote it (the header stays version 3), and a file is read
by whatever pi the user runs now; so every entry point takes ``pi=`` (a version string or a
Profile), the newest release by default, and hands the Profile down. Everything that differs
between releases is a field here, as data or as a small function; the manager, the context code and
listing read those fields and never compare version strings. A newer pi release is one more entry in
:data:`PROFILES` and its version in releases.RELEASES (docs/FORMAT.md §10 lists what 1.6.0 changed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import PiVersionError
from ..format.jsvalue import coalesce
from .environment import Environment
from .paths import paths_equal
from .releases import DEFAULT_PI as DEFAULT_PI  # (re-exported: where the library finds it)
from .releases import RELEASES


def _given_first_kept(first_kept_entry_id: Any, _own_id: str) -> Any:
    """pi 0.86.1: ``firstKeptEntryId`` is written as given (``null`` stays, not given: no key)."""
    return first_kept_entry_id


def _own_id_keeps_nothing(first_kept_entry_id: Any, own_id: str) -> Any:
    """pi 1.6.0: ``firstKeptEntryId ?? id``, "keep nothing" written as the compaction's own id."""
    return coalesce(first_kept_entry_id, own_id)


class Profile(msgspec.Struct, frozen=True):
    """How one pi release behaves where releases differ."""

    version: str
    #: Reference names (``SessionManager`` methods, and ``fn.<export>`` for module functions) that
    #: this release has beyond pi 0.86.1's API; the others are not part of it.
    added_api: frozenset[str]
    #: A new session's file is first written when it holds a message of one of these roles.
    conversation_roles: frozenset[str]
    #: An append that cannot be written is taken back out of memory (entries, index, leaf).
    rolls_back_failed_appends: bool
    #: ``context_edit`` entries change the context (0.86.1 reads them as an unknown entry type).
    context_edits: bool
    #: An older compaction inside the newest compaction's kept range still contributes its
    #: checkpoint and summary to the context.
    kept_compactions_speak: bool
    #: ``firstKeptEntryId`` as ``appendCompaction`` writes it, from the argument and the new id.
    first_kept_entry_id: Callable[[Any, str], Any]
    #: Two session-directory spellings name the same directory when they resolve to the same path
    #: (pi 1.6.0's ``pathsEqual``); pi 0.86.1 compares the strings. See :meth:`same_directory`.
    compares_resolved_directories: bool

    def same_directory(self, left: str, right: str, env: Environment | None = None) -> bool:
        """Do two session-directory spellings name the same directory (the default one, in
        ``usesDefaultSessionDir`` and the "filter by cwd" decision of ``list``, ``findById``,
        ``continueRecent``)? Relative spellings resolve against ``env``'s working directory."""
        if self.compares_resolved_directories:
            return paths_equal(left, right, env)
        return left == right

    def is_conversation(self, role: Any) -> bool:
        """Is ``role`` (any JSON value) one of :attr:`conversation_roles`?"""
        return type(role) is str and role in self.conversation_roles

    def has_api(self, reference_name: str) -> bool:
        """Is ``reference_name`` part of this release's API? (Names of pi 0.86.1 always are.)"""
        return reference_name not in NEWER_API or reference_name in self.added_api


PI_0_86_1 = Profile(
    version="0.86.1",
    added_api=frozenset(),
    conversation_roles=frozenset({"assistant"}),
    rolls_back_failed_appends=False,
    context_edits=False,
    kept_compactions_speak=True,
    first_kept_entry_id=_given_first_kept,
    compares_resolved_directories=False,
)

PI_1_6_0 = Profile(
    version="1.6.0",
    added_api=frozenset(
        {
            "appendContextEdit",
            "buildSessionProjection",
            "getEntryCount",
            "fn.buildSessionProjection",
            "fn.projectContextEntry",
        }
    ),
    conversation_roles=frozenset({"user", "assistant"}),
    rolls_back_failed_appends=True,
    context_edits=True,
    kept_compactions_speak=False,
    first_kept_entry_id=_own_id_keeps_nothing,
    compares_resolved_directories=True,
)

#: Every supported release (releases.RELEASES), oldest first.
PROFILES: dict[str, Profile] = {p.version: p for p in (PI_0_86_1, PI_1_6_0)}
if tuple(PROFILES) != RELEASES:
    raise ImportError(f"releases.RELEASES {RELEASES} does not list the profiles {tuple(PROFILES)}")

#: Reference names that some supported release has and pi 0.86.1 does not.
NEWER_API: frozenset[str] = frozenset().union(*(p.added_api for p in PROFILES.values()))

PiVersion = str | Profile


def profile_for(pi: PiVersion = DEFAULT_PI) -> Profile:
    """The Profile of pi release ``pi`` (a version string such as ``"0.86.1"``, or a Profile, which
    is returned as is). An unknown version raises :class:`~pi_session_server.errors.PiVersionError`."""
    if isinstance(pi, Profile):
        return pi
    found = PROFILES.get(pi) if isinstance(pi, str) else None
    if found is None:
        supported = ", ".join(PROFILES)
        raise PiVersionError(f"unknown pi version {pi!r}: supported versions are {supported}")
    return found


def ignored_by(profile: Profile) -> str | None:
    """What ``profile``'s release does with a ``context_edit`` line when it knows no context edits,
    in the words every feature uses for it (hints, lenses, hovers, the outline, the tree's
    previews); None when it applies them."""
    return None if profile.context_edits else f"pi {profile.version} ignores context edits"


def require_api(profile: Profile, reference_name: str) -> None:
    """Refuse a call the chosen release does not have (e.g. ``appendContextEdit`` under 0.86.1)."""
    if not profile.has_api(reference_name):
        newer = [p.version for p in PROFILES.values() if reference_name in p.added_api]
        raise PiVersionError(
            f"{reference_name} is not part of pi {profile.version} (it is in pi {', '.join(newer)})"
        )
