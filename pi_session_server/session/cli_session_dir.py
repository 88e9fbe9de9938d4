"""Where pi's command line keeps sessions (docs/FORMAT.md §3.1): ``--session-dir``, then
``$PI_CODING_AGENT_SESSION_DIR``, then the ``sessionDir`` setting, else SessionManager's default.

pi's ``main`` picks this before it makes a SessionManager, so the library's SessionManager methods
never read it: a caller that should find the sessions ``pi`` itself finds (``pi-session list`` and
``check``) passes :func:`cli_session_dir` as their ``sessionDir``.

The settings are read as pi's ``SettingsManager.create(cwd, agentDir)`` reads them:
``<agent dir>/settings.json``, then ``<cwd>/.pi/settings.json`` merged over it. A file that is
missing, unreadable, empty, not JSON or not a JSON object holds no settings (pi records the error
and goes on). Nothing is written: pi locks a settings file to read it, the library does not.

A ``sessionDir`` setting that stops pi at its start (a value that is no string, a ``file://`` URL
Node refuses) stops the caller too, with an error naming the settings file that holds it (pi's
says only Node's words). One holding a NUL byte is kept, for the callers to find nothing in it
(:func:`names_no_directory`, docs/DEVIATIONS.md D25).
"""

from __future__ import annotations

from typing import Any

from ..errors import FileUrlError, InvalidArgValueError, ValueTypeError
from ..format.jsjson import JsonSyntaxError, parse
from ..format.jsvalue import truthy
from ..regular_file import open_regular
from .environment import SESSION_DIR_ENV, Environment, current
from .paths import (
    StrPath,
    get_agent_dir,
    node_join,
    node_normalize_path,
    normalize_path,
    path_given,
    resolve_path,
)

__all__ = ["SETTINGS_FILE", "cli_session_dir", "names_no_directory", "settings_session_dir"]

#: The file of pi's settings, in the agent directory (global) and in ``<cwd>/.pi`` (project).
SETTINGS_FILE = "settings.json"
_PROJECT_CONFIG_DIR = ".pi"
_SESSION_DIR_KEY = "sessionDir"


def cli_session_dir(flag: StrPath | None = None, env: Environment | None = None) -> str | None:
    """The session directory pi's command line passes its SessionManager, or None for
    SessionManager's default (the agent directory's ``sessions/--<cwd>--``).

    ``flag`` is ``--session-dir``'s value. Each choice is pi's ``normalizePath`` of it (``~``
    expanded, a ``file://`` URL made a path, a relative path kept relative: it names a directory
    under ``env.cwd``); an empty one is no choice, as in pi. A ``sessionDir`` setting holding a NUL
    byte is returned as it is (see :func:`names_no_directory`). A choice that pi's ``normalizePath``
    refuses raises Node's error, its message prefixed with where the value came from
    (``--session-dir: ...``, ``$PI_CODING_AGENT_SESSION_DIR: ...``, ``SETTINGS FILE: sessionDir: ...``).
    """
    env = current(env)
    if path_given(flag):
        return _normalized_choice(flag, "--session-dir", env)
    if env.session_dir:
        return _normalized_choice(env.session_dir, f"${SESSION_DIR_ENV}", env)
    return settings_session_dir(env)


def _normalized_choice(value: StrPath, source: str, env: Environment) -> str:
    """pi's ``normalizePath`` of the choice ``source`` gave. Node's refusal of it (a ``file://``
    URL it cannot make a path, a NUL byte) stops pi as it does here, in words that do not say
    which value it was: the error's message starts with ``source``."""
    try:
        return normalize_path(value, env)
    except (FileUrlError, InvalidArgValueError) as error:
        error.args = (f"{source}: {error.message}",)
        raise


def settings_session_dir(env: Environment | None = None) -> str | None:
    """pi's ``SettingsManager.getSessionDir()``: the ``sessionDir`` of the merged settings,
    normalized, or None when it is not set, empty (any falsy value), or set so by the project over
    the global one.

    A ``sessionDir`` that pi's ``normalizePath`` throws on stops pi at its start, whatever it was
    asked (nothing is read or written yet): a value that is no string (``5``, ``true``, an array)
    raises :class:`~pi_session_server.errors.ValueTypeError`, a ``file://`` URL Node refuses
    Node's :class:`~pi_session_server.errors.FileUrlError`, each message starting with the settings
    file that holds it (``SETTINGS FILE: sessionDir: ...``). One holding a NUL byte is returned as
    pi's value.
    """
    env = current(env)
    source = node_join(resolve_path(get_agent_dir(env), env=env), SETTINGS_FILE)
    value = _settings_at(source).get(_SESSION_DIR_KEY)
    if env.cwd:  # (a removed working directory has no project settings to read)
        project_file = node_join(resolve_path(env.cwd, env=env), _PROJECT_CONFIG_DIR, SETTINGS_FILE)
        project = _settings_at(project_file)
        # pi merges them deeply; sessionDir is a leaf: the project's value when it has one
        if _SESSION_DIR_KEY in project:
            value, source = project[_SESSION_DIR_KEY], project_file
    if not truthy(value):
        return None
    where = f"{source}: {_SESSION_DIR_KEY}"
    if not isinstance(value, str):
        raise ValueTypeError(f"{where}: must be a path (a string), not {_js_kind(value)}")
    try:
        return node_normalize_path(value, env)
    except FileUrlError as error:
        error.args = (f"{where}: {error.message}",)
        raise


def _js_kind(value: Any) -> str:
    """What a JSON value that is no string is, in JavaScript's words."""
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


def names_no_directory(session_dir: str | None) -> bool:
    """Whether ``session_dir``, as :func:`cli_session_dir` chose it, holds a NUL byte. pi's
    ``existsSync`` says no such directory and its ``readdirSync`` throws and is caught, so its
    listings and findById find no session there; its continueRecent and create stop with Node's
    TypeError at their mkdir, where the library's callers use the default directory instead. (The
    library's functions refuse such a path up front, docs/DEVIATIONS.md D18.)"""
    return session_dir is not None and "\x00" in session_dir


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
