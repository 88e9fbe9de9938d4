"""The ``sessionDir`` a request hands SessionManager (pi/list, pi/listAll, pi/findById,
pi/continueRecent, pi/create): its ``sessionDir`` as given, else with ``cliSessionDir`` the one pi's
command line would pass (session/cli_session_dir.py), else absent: SessionManager's default.

Called in the request's job, never on the event loop: the choice reads pi's settings files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from msgspec import UnsetType

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session.environment import Environment

from . import params as P

T = TypeVar("T")


class AsksForASessionDir(Protocol):
    session_dir: str | UnsetType
    cli_session_dir: bool


def looked_in(p: AsksForASessionDir, env: Environment, look: Callable[[Any], T], nothing: T) -> T:
    """``look`` of the directory a listing or pi/findById looks in, or ``nothing`` without a look
    when that is a choice of pi's command line that names no directory (see :func:`_finds_nothing_in`:
    pi's listings and findById find no session there)."""
    session_dir = _session_dir_to_look_in(p, env)
    return nothing if _finds_nothing_in(p, session_dir) else look(session_dir)


def _session_dir_to_look_in(p: AsksForASessionDir, env: Environment) -> Any:
    """Where a listing or pi/findById looks. A directory pi's command line chose that names none
    (see :func:`_finds_nothing_in`) is returned as it is."""
    if _chosen_as_pi_would(p):
        from pi_session_server.session.cli_session_dir import cli_session_dir

        chosen = cli_session_dir(None, env)
        return ABSENT if chosen is None else chosen
    return P.opt(p.session_dir)


def session_dir_to_keep_in(p: AsksForASessionDir, env: Environment) -> Any:
    """Where pi/continueRecent and pi/create find and make the session: where a listing looks, but
    the default directory instead of one that names no directory (pi stops there at its mkdir)."""
    chosen = _session_dir_to_look_in(p, env)
    return ABSENT if _finds_nothing_in(p, chosen) else chosen


def _finds_nothing_in(p: AsksForASessionDir, session_dir: Any) -> bool:
    """Whether ``session_dir``, :func:`_session_dir_to_look_in` of ``p``, is a choice of pi's command
    line that names no directory (``names_no_directory``): a listing of it is empty and pi/findById
    finds nothing, as in pi. (A ``sessionDir`` given with a NUL byte is refused, DEVIATIONS.md D18.)"""
    from pi_session_server.session.cli_session_dir import names_no_directory

    return _chosen_as_pi_would(p) and isinstance(session_dir, str) and names_no_directory(session_dir)


def _chosen_as_pi_would(p: AsksForASessionDir) -> bool:
    return p.cli_session_dir and isinstance(p.session_dir, UnsetType)
