"""What pi reads from its process when a call needs it: the working directory, ``$HOME``,
``$PI_CODING_AGENT_DIR`` and ``$PI_CODING_AGENT_SESSION_DIR``.

pi resolves a relative path against ``process.cwd()``, expands ``~`` to ``os.homedir()`` and finds
its sessions under the agent directory, all read at call time. The library takes them as one value
instead, so that one process can serve sessions of several environments (a sidecar serving many
projects, a test giving every scenario its own directories) without changing its own working
directory or environment variables. Every entry point takes ``env=``; left out, it is
:meth:`Environment.from_process`, read at that call, which is pi's behaviour.

The time zone (date-times without an offset are local time, ``format/dates.py``) is not part of it:
like pi, the library uses the process's.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

__all__ = ["AGENT_DIR_ENV", "SESSION_DIR_ENV", "Environment", "current", "on_disk", "process_home"]

#: ``<APP_NAME upper-case>_CODING_AGENT_DIR`` with APP_NAME "pi".
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
#: ``ENV_SESSION_DIR``: where pi's command line keeps sessions unless ``--session-dir`` says.
SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"


@dataclass(frozen=True, slots=True)
class Environment:
    """The working directory and the variables pi reads.

    ``cwd``: an absolute path, or ``""`` when it could not be read (the process's was removed):
    resolving a relative path then fails as ``process.cwd()`` does, and the system is given
    relative paths as they are. ``home``: ``$HOME`` (None: not set; then the home directory is the
    user's entry in the password database, as ``os.homedir()`` finds it). ``agent_dir``:
    ``$PI_CODING_AGENT_DIR`` as set (None or empty: ``<home>/.pi/agent``). ``session_dir``:
    ``$PI_CODING_AGENT_SESSION_DIR`` as set, read only where pi's command line chooses the session
    directory (session/cli_session_dir.py), never by SessionManager's methods.
    """

    cwd: str
    home: str | None = None
    agent_dir: str | None = None
    session_dir: str | None = None

    def __post_init__(self) -> None:
        # a pathlib.Path is taken as the path it names
        for name in ("cwd", "home", "agent_dir", "session_dir"):
            value = getattr(self, name)
            if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
                object.__setattr__(self, name, os.fspath(value))
        if not isinstance(self.cwd, str) or (self.cwd and not self.cwd.startswith("/")):
            raise ValueError(f"the working directory must be an absolute path, not {self.cwd!r}")
        for name in ("home", "agent_dir", "session_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string or None, not {type(value).__name__}")

    @classmethod
    def from_process(cls) -> Environment:
        """This process's working directory and variables, as they are now."""
        try:
            cwd = os.getcwd()
        except FileNotFoundError:  # removed: only a relative path needs it, and that then fails
            cwd = ""
        return cls(cwd, process_home(), os.environ.get(AGENT_DIR_ENV), os.environ.get(SESSION_DIR_ENV))

    def working_directory(self) -> str:
        """``process.cwd()``: :attr:`cwd`, or ENOENT when it is not known."""
        if not self.cwd:
            raise FileNotFoundError(errno.ENOENT, "the working directory was removed")
        return self.cwd

    def home_dir(self) -> str:
        """Node's ``os.homedir()``: ``$HOME`` when set (even empty, as libuv does), else the passwd
        entry of the user."""
        if self.home is not None:
            return self.home
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir

    def on_disk(self, path: str) -> str:
        """The path the system is given for ``path``: an absolute path as it is, a relative one
        joined to :attr:`cwd` (where pi's process, whose working directory it is, finds it). The
        empty path stays empty (it names no file)."""
        if not path or path.startswith("/") or not self.cwd:
            return path
        return os.path.join(self.cwd, path)


def process_home() -> str | None:
    """``$HOME`` of this process now (the ``home`` of :meth:`Environment.from_process`, read alone
    where a caller needs only that, many times over)."""
    return os.environ.get("HOME")


def current(env: Environment | None) -> Environment:
    """``env``, or the process's environment now when it is None."""
    return env if env is not None else Environment.from_process()


def on_disk(path: str, env: Environment | None) -> str:
    """:meth:`Environment.on_disk` of ``env`` (the process's when None, read only for a relative
    path)."""
    if not path or path.startswith("/"):
        return path
    return current(env).on_disk(path)
