"""Where pi's command line keeps sessions (docs/FORMAT.md §3.1): ``--session-dir``, then
``$PI_CODING_AGENT_SESSION_DIR``, then the ``sessionDir`` setting, else SessionManager's default.

pi's ``main`` picks this before it makes a SessionManager, so the library's SessionManager methods
never read it: a caller that should find the sessions ``pi`` itself finds (``pi-session list`` and
``check``) passes :func:`cli_session_dir` as their ``sessionDir``.

The settings are read as pi's ``SettingsManager.create(cwd, agentDir)`` reads them:
``<agent dir>/settings.json``, then ``<cwd>/.pi/settings.json`` merged over it. A file that is
missing, unreadable, empty, not JSON or not a JSON object holds no settings (pi records the error
and goes on). Nothing is written: pi locks a settings file to read it, the library does not.
"""

from __future__ import annotations

from typing import Any

from ..format.jsjson import JsonSyntaxError, parse
from ..regular_file import open_regular
from .environment import Environment, current
from .paths import StrPath, get_agent_dir, node_join, normalize_path, path_given, resolve_path

__all__ = ["SETTINGS_FILE", "cli_session_dir", "settings_session_dir"]

#: The file of pi's settings, in the agent directory (global) and in ``<cwd>/.pi`` (project).
SETTINGS_FILE = "settings.json"
_PROJECT_CONFIG_DIR = ".pi"
_SESSION_DIR_KEY = "sessionDir"


def cli_session_dir(flag: StrPath | None = None, env: Environment | None = None) -> str | None:
    """The session directory pi's command line passes its SessionManager, or None for
    SessionManager's default (the agent directory's ``sessions/--<cwd>--``).

    ``flag`` is ``--session-dir``'s value. Each choice is pi's ``normalizePath`` of it (``~``
    expanded, a ``file://`` URL made a path, a relative path kept relative: it names a directory
    under ``env.cwd``); an empty one is no choice, as in pi.
    """
    env = current(env)
    if path_given(flag):
        return normalize_path(flag, env)
    if env.session_dir:
        return normalize_path(env.session_dir, env)
    return settings_session_dir(env)


def settings_session_dir(env: Environment | None = None) -> str | None:
    """pi's ``SettingsManager.getSessionDir()``: the ``sessionDir`` of the merged settings,
    normalized, or None when it is not set, empty, or set empty or null by the project over the
    global one.

    A ``sessionDir`` that is not a string (pi's ``normalizePath`` then throws and pi stops) is
    taken as not set: the default directory is listed instead of nothing at all.
    """
    env = current(env)
    merged = _settings_at(node_join(resolve_path(get_agent_dir(env), env=env), SETTINGS_FILE))
    if env.cwd:  # (a removed working directory has no project settings to read)
        project = _settings_at(node_join(resolve_path(env.cwd, env=env), _PROJECT_CONFIG_DIR, SETTINGS_FILE))
        # pi merges them deeply; sessionDir is a leaf: the project's value when it has one
        merged = {**merged, **project}
    value = merged.get(_SESSION_DIR_KEY)
    if not isinstance(value, str) or not value:
        return None
    return normalize_path(value, env)


def _settings_at(path: str) -> dict[str, Any]:
    """The settings in the file at ``path``: none when pi's load of it would fail or find none."""
    try:
        # a FIFO or a device is refused (pi would wait on it, or read it without end)
        with open(open_regular(path), "rb") as f:
            data = f.read()
    except (OSError, ValueError):  # missing, unreadable, a directory, not a regular file, a NUL
        return {}
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")  # as readFileSync + stripBom
    if not text:
        return {}
    try:
        settings = parse(text)
    except (JsonSyntaxError, RecursionError):
        return {}
    # pi's migrateSettings throws on a primitive (``"queueMode" in 5``); an array has no sessionDir
    return settings if isinstance(settings, dict) else {}
