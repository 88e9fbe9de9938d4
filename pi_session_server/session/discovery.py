"""Finding sessions by their header: discovery (docs/FORMAT.md §9.2) and the lookups built on it.

Header discovery reads at most the first MiB of a file, so ``continueRecent``, ``findById`` and
``findMostRecentSession`` stay cheap in directories of thousands of large sessions. The lookups
(docs/API.md §3.4, §9.1, §9.2) are best-effort like the reference's: a file whose header cannot be found
(too large, unreadable, a directory) is simply not a session, and an error while listing or
stat-ing the directory means "nothing found".
"""

from __future__ import annotations

import os
from typing import Any, Final

from ..errors import PiSessionError, fs_error_from_oserror
from ..format.jsjson import JsonSyntaxError, parse_bytes
from ..format.jsvalue import ABSENT, get, strict_equal, truthy
from .environment import Environment, current, on_disk
from .paths import (
    StrPath,
    default_session_dir_path,
    node_join,
    normalize_path,
    path_given,
    resolve_path,
    session_dir_or_default,
)
from .profiles import DEFAULT_PI, PiVersion, profile_for

__all__ = [
    "MAX_HEADER_SCAN_BYTES",
    "SessionHeaderScanLimitError",
    "cwd_matches",
    "discover_header",
    "discover_header_quietly",
    "find_by_id",
    "find_most_recent_session",
    "header_cwd",
    "js_round",
    "most_recent_candidate",
    "mtime_ms",
    "readdir",
    "session_dir_for",
]

#: The reference's bound on header discovery (``MAX_SESSION_HEADER_SCAN_BYTES``).
MAX_HEADER_SCAN_BYTES: Final = 1024 * 1024
# The reference reads 4 KiB at a time; the read size does not change the outcome.
_READ_SIZE: Final = 64 * 1024
_UNDECIDED: Final[Any] = object()


class SessionHeaderScanLimitError(PiSessionError):
    """The first MiB of a file held no decision (``SessionHeaderScanLimitError`` in the reference)."""

    name = "SessionHeaderScanLimitError"

    def __init__(self, path: str):
        super().__init__(f"Session header exceeds {MAX_HEADER_SCAN_BYTES}-byte scan limit: {path}")
        self.path = path


def _header_candidate(line: bytes) -> Any:
    """The reference's ``parseSessionHeaderCandidate``: ``_UNDECIDED`` to keep scanning (blank,
    malformed or falsy line), ``None`` when the first kept value is not a header, else the header."""
    if not line.strip():  # ASCII-blank; other JS-blank lines fail to parse below
        return _UNDECIDED
    try:
        value = parse_bytes(line)
    except JsonSyntaxError:
        return _UNDECIDED
    if not truthy(value):
        return _UNDECIDED
    if get(value, "type") != "session" or type(get(value, "id")) is not str:
        return None
    return value


def _open_nonblocking(path: str, env: Environment | None) -> int:
    # O_NONBLOCK: opening a FIFO must not wait for a writer (reads then see EOF or EAGAIN).
    try:
        return os.open(on_disk(path, env), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as err:
        raise fs_error_from_oserror(err, "open", path) from err


def discover_header(path: str, env: Environment | None = None) -> dict[str, Any] | None:
    """The header of a session file from its first MiB (``readSessionHeader``, docs/FORMAT.md §9.2).

    Physical lines are split on ``"\\n"`` only; blank, unparsable and falsy lines are skipped and
    the first kept value decides: the header if it is an object with ``type`` "session" and a
    string ``id``, else ``None`` (not a session; also for an empty file). Raises
    :class:`SessionHeaderScanLimitError` when the first MiB held no decision and the file goes on,
    and :class:`~pi_session_server.errors.FsError` when the file cannot be opened or read (a
    directory gives ``EISDIR: illegal operation on a directory, read``, as in the reference). A
    relative ``path`` is found in the working directory of ``env``.
    """
    fd = _open_nonblocking(path, env)
    try:
        pending = bytearray()
        scanned = 0
        while scanned < MAX_HEADER_SCAN_BYTES:
            chunk = _read(fd, min(_READ_SIZE, MAX_HEADER_SCAN_BYTES - scanned))
            if not chunk:
                return _final_line(pending)
            scanned += len(chunk)
            search_from = len(pending)
            pending += chunk
            while (newline := pending.find(b"\n", search_from)) != -1:
                decided = _header_candidate(bytes(pending[:newline]))
                if decided is not _UNDECIDED:
                    return decided  # type: ignore[no-any-return]
                del pending[: newline + 1]
                search_from = 0
        # A final line ending exactly at the limit is still examined; one more byte is too many.
        if not _read(fd, 1):
            return _final_line(pending)
        raise SessionHeaderScanLimitError(path)
    finally:
        os.close(fd)


def _read(fd: int, size: int) -> bytes:
    try:
        return os.read(fd, size)
    except OSError as err:
        raise fs_error_from_oserror(err, "read", None) from err


def _final_line(pending: bytearray) -> dict[str, Any] | None:
    decided = _header_candidate(bytes(pending))
    return None if decided is _UNDECIDED else decided


def discover_header_quietly(path: str, env: Environment | None = None) -> dict[str, Any] | None:
    """``readSessionHeaderForDiscovery``: every failure (too large, unreadable) is "not a session"."""
    try:
        return discover_header(path, env)
    except Exception:  # noqa: BLE001 - the reference's catch-all: any failure is "not a session"
        return None


# ---- shared rules --------------------------------------------------------------------------------


def readdir(directory: str) -> list[str]:
    """Node's ``readdir``: the names in a directory sorted by their bytes (libuv sorts its scandir
    results with ``strcmp``), so "directory listing order" is the same on every file system."""
    return sorted(os.listdir(directory), key=os.fsencode)


def header_cwd(header: Any) -> Any:
    """``getSessionHeaderCwd``: the header's ``cwd`` if it is a string, else ABSENT."""
    cwd = get(header, "cwd")
    return cwd if type(cwd) is str else ABSENT


def cwd_matches(cwd: Any, resolved_cwd: str, env: Environment | None = None) -> bool:
    """``sessionCwdMatches``: a non-empty string that resolves (in ``env``) to ``resolved_cwd``.

    Like the reference, a cwd that cannot be resolved (a ``file://`` URL with a foreign host) raises.
    """
    return cwd is not ABSENT and cwd != "" and resolve_path(cwd, env=env) == resolved_cwd


def session_dir_for(
    cwd: StrPath, session_dir: StrPath | None, pi: PiVersion = DEFAULT_PI, env: Environment | None = None
) -> tuple[str, bool]:
    """The directory and the "filter by cwd" decision of ``list``/``findById``/``continueRecent``
    (docs/API.md §3.4 steps 1-2): ``normalizePath(sessionDir)`` if truthy, else the default directory for
    ``cwd`` (created); filter iff ``sessionDir`` was passed (not ABSENT) and the directory is not
    the default directory path (pi 0.86.1 compares the strings, pi 1.6.0 the resolved paths)."""
    directory = session_dir_or_default(session_dir, cwd, env)
    filter_cwd = session_dir is not ABSENT and not profile_for(pi).same_directory(
        directory, default_session_dir_path(cwd, env=env), env
    )
    return directory, filter_cwd


def mtime_ms(st: os.stat_result) -> float:
    """Node's ``stats.mtimeMs`` for the same stat: ``sec * 1e3 + nsec / 1e6`` in doubles."""
    sec, nsec = divmod(st.st_mtime_ns, 1_000_000_000)
    return float(sec) * 1e3 + nsec / 1e6


def js_round(x: float) -> int | float:
    """``Math.round`` (halves round up); NaN and infinities unchanged."""
    if x != x or x in (float("inf"), float("-inf")):
        return x
    floor = int(x // 1)
    return floor + 1 if x - floor >= 0.5 else floor


# ---- lookups -------------------------------------------------------------------------------------


def find_most_recent_session(
    session_dir: StrPath, cwd: StrPath | None = ABSENT, env: Environment | None = None
) -> str | None:
    """``findMostRecentSession(sessionDir, cwd?)`` (docs/API.md §9.1): the newest ``*.jsonl`` file (by mtime;
    ties in directory order) whose header discovery succeeds and, when ``cwd`` is truthy, whose
    header ``cwd`` resolves to the same path. ``None`` if there is none or the directory cannot be
    read or a file cannot be stat-ed. Relative paths are the working directory's of ``env``."""
    env = current(env)
    directory = normalize_path(session_dir, env)
    resolved_cwd = resolve_path(cwd, env=env) if path_given(cwd) else None
    try:
        files = []
        for name in readdir(env.on_disk(directory)):
            if name.endswith(".jsonl"):
                path = node_join(directory, name)
                files.append((path, mtime_ms(os.stat(env.on_disk(path)))))
        files.sort(key=lambda f: f[1], reverse=True)  # stable: ties keep directory order
        for path, _ in files:
            header = discover_header_quietly(path, env)
            if header is not None and (
                resolved_cwd is None or cwd_matches(header_cwd(header), resolved_cwd, env)
            ):
                return path
        return None
    except Exception:  # noqa: BLE001 - the reference's catch-all: any failure finds nothing
        return None


def most_recent_candidate(
    directory: str, filter_cwd: Any = ABSENT, env: Environment | None = None
) -> str | None:
    """The file ``continueRecent`` resumes (docs/API.md §3.4 step 3) in an already chosen ``directory``:
    ``filter_cwd`` is the caller's cwd when filtering applies, else ABSENT/None."""
    return find_most_recent_session(directory, filter_cwd if truthy(filter_cwd) else ABSENT, env)


def find_by_id(
    cwd: StrPath,
    session_id: Any,
    session_dir: StrPath | None = ABSENT,
    *,
    pi: PiVersion = DEFAULT_PI,
    env: Environment | None = None,
) -> Any:
    """``findById(cwd, id, sessionDir?)`` (docs/API.md §9.2): the first ``*.jsonl`` file in directory listing
    order whose discovered header ``id`` is strictly equal to ``session_id`` (and, when filtering,
    whose header ``cwd`` matches); ABSENT when there is none or on any error."""
    env = current(env)
    directory, filter_cwd = session_dir_for(cwd, session_dir, pi, env)
    resolved_cwd = resolve_path(cwd, env=env)
    try:
        for name in readdir(env.on_disk(directory)):
            if not name.endswith(".jsonl"):
                continue
            path = node_join(directory, name)
            header = discover_header_quietly(path, env)
            # ``header?.id !== id``: a file that is not a session has id undefined, so it matches an
            # ABSENT id; with filtering, reading its cwd then throws and ends the search (reference).
            if not strict_equal(get(header, "id") if header is not None else ABSENT, session_id):
                continue
            if filter_cwd:
                if header is None:
                    return ABSENT
                if not cwd_matches(header_cwd(header), resolved_cwd, env):
                    continue
            return path
    except Exception:  # noqa: BLE001 - the reference's catch-all: any failure ends the search
        pass
    return ABSENT
