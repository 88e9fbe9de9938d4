"""Where session files live (docs/FORMAT.md §3): Node path semantics, pi's agent and session directories.

These are ports of Node's POSIX ``path.resolve``/``path.join``, ``url.fileURLToPath`` and pi's
``normalizePath``/``resolvePath``/``getDefaultSessionDir``; Python's ``os.path`` differs in corner
cases (``posixpath.normpath`` keeps a leading ``//``, ``expanduser`` handles ``~user``).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any, TypeAlias, TypeGuard

from ..errors import FileUrlError, InvalidArgTypeError, InvalidArgValueError, fs_error_from_oserror
from ..format.jsvalue import ABSENT, js_string_of, truthy
from .environment import Environment, current

__all__ = [
    "StrPath",
    "default_session_dir_path",
    "encode_cwd",
    "file_url_to_path",
    "get_agent_dir",
    "get_default_session_dir",
    "get_sessions_root",
    "home_dir",
    "make_dirs",
    "node_join",
    "node_normalize",
    "node_normalize_path",
    "node_resolve",
    "normalize_path",
    "path_given",
    "path_text",
    "paths_equal",
    "reject_null_bytes",
    "resolve_path",
    "session_dir_or_default",
]

_CONFIG_DIR_NAME = ".pi"

#: What the library's path parameters take: a ``str`` or an ``os.PathLike`` naming a ``str``
#: (``pathlib.Path``). Other values are refused at run time too, with Node's
#: ``ERR_INVALID_ARG_TYPE`` (see :func:`path_text`).
StrPath: TypeAlias = str | os.PathLike[str]


def home_dir(env: Environment | None = None) -> str:
    """Node's ``os.homedir()`` in ``env`` (see :meth:`Environment.home_dir`)."""
    return current(env).home_dir()


# ---- Node's path module (POSIX) ----------------------------------------------------------------


def _normalize_string(path: str, allow_above_root: bool) -> str:
    """Node's ``normalizeString``: resolves '.' and '..' segments and collapses separators.

    Node builds its result by string concatenation, which is quadratic in Python (a path of
    megabytes would take minutes): the segments are kept on a stack and joined once. A '..' removes
    the segment before it unless that is a '..' itself (kept only when ``allow_above_root``).
    """
    kept: list[str] = []
    for segment in path.split("/"):
        if not segment or segment == ".":
            continue
        if segment == "..":
            if kept and kept[-1] != "..":
                kept.pop()
            elif allow_above_root:
                kept.append("..")
            continue
        kept.append(segment)
    return "/".join(kept)


def node_resolve(*paths: str, env: Environment | None = None) -> str:
    """Node's POSIX ``path.resolve(...paths)``, against the working directory of ``env`` (read only
    when no path is absolute)."""
    resolved = ""
    absolute = False
    for p in (*reversed(paths), None):
        if p is None:
            p = current(env).working_directory()
        if not p:
            continue
        resolved = f"{p}/{resolved}"
        absolute = p[0] == "/"
        if absolute:
            break
    resolved = _normalize_string(resolved, not absolute)
    if absolute:
        return "/" + resolved
    return resolved or "."


def node_normalize(path: str) -> str:
    """Node's POSIX ``path.normalize``: keeps a relative path relative and a trailing slash."""
    if not path:
        return "."
    absolute = path[0] == "/"
    trailing = path[-1] == "/"
    path = _normalize_string(path, not absolute)
    if not path:
        if absolute:
            return "/"
        return "./" if trailing else "."
    if trailing:
        path += "/"
    return "/" + path if absolute else path


def node_join(*parts: str) -> str:
    """Node's POSIX ``path.join``: non-empty parts joined with '/', then normalized."""
    joined = "/".join(p for p in parts if p)
    return node_normalize(joined) if joined else "."


# ---- pi's normalizePath / resolvePath --------------------------------------------------------------

_URL_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space, trimmed by the URL parser
_URL_REMOVE_RE = re.compile("[\t\n\r]")
_FORBIDDEN_HOST_RE = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
_DRIVE_LETTER_RE = re.compile(r"[A-Za-z][:|]")
_PERCENT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


class _UriError(ValueError):
    pass


def _decode_uri_component(s: str) -> str:
    """JS ``decodeURIComponent``: percent sequences must form valid UTF-8 ("URI malformed")."""
    if "%" not in s:
        return s

    def decode_run(m: re.Match[str]) -> str:
        try:
            return bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8")
        except UnicodeDecodeError:
            raise _UriError("URI malformed") from None

    out = _PERCENT_RE.sub(decode_run, s)
    # A '%' not followed by two hex digits is malformed too.
    if re.search(r"%(?![0-9A-Fa-f]{2})", _PERCENT_RE.sub("", s)):
        raise _UriError("URI malformed")
    return out


def _is_single_dot(seg: str) -> bool:
    return seg == "." or seg.lower() == "%2e"


def _is_double_dot(seg: str) -> bool:
    return seg.lower() in ("..", ".%2e", "%2e.", "%2e%2e")


def file_url_to_path(url: str) -> str:
    """Node's ``url.fileURLToPath`` on POSIX for a string starting with ``file://``.

    Implements the parts of WHATWG URL parsing that matter for file URLs: whitespace trimming,
    host check (only empty or ``localhost``), query/fragment removal, backslashes as separators,
    dot segments, and percent-decoding. Raises :class:`~pi_session_server.errors.FileUrlError` (a
    ValueError) with Node's message, name and code otherwise.
    """
    s = _URL_REMOVE_RE.sub("", url.strip(_URL_STRIP))
    rest = s[len("file://") :]
    cut = len(rest)
    for ch in "?#":
        idx = rest.find(ch)
        if idx != -1:
            cut = min(cut, idx)
    rest = rest[:cut]
    m = re.match(r"[^/\\]*", rest)
    host = m.group(0) if m else ""
    path = rest[len(host) :]
    if _DRIVE_LETTER_RE.fullmatch(host):  # "file://C:/x": the drive letter belongs to the path
        path, host = "/" + host + path, ""
    if host:
        _check_file_host(host)
    pathname = "/" + "/".join(_path_segments(path))
    if re.search(r"%2[fF]", pathname):
        raise FileUrlError(
            "File URL path must not include encoded / characters", code="ERR_INVALID_FILE_URL_PATH"
        )
    try:
        return _decode_uri_component(pathname)
    except _UriError as err:
        raise FileUrlError(str(err), name="URIError") from None


def _check_file_host(host: str) -> None:
    """Raise Node's error unless a file URL's ``host`` is ``localhost`` (it is not empty)."""
    try:
        decoded_host = _decode_uri_component(host) if "%" in host else host
    except _UriError:
        raise FileUrlError("Invalid URL", code="ERR_INVALID_URL") from None
    is_ipv6 = decoded_host.startswith("[") and decoded_host.endswith("]")
    if not is_ipv6 and _FORBIDDEN_HOST_RE.search(decoded_host):
        raise FileUrlError("Invalid URL", code="ERR_INVALID_URL")
    if decoded_host.lower() != "localhost":
        raise FileUrlError(
            'File URL host must be "localhost" or empty on linux', code="ERR_INVALID_FILE_URL_HOST"
        )


def _path_segments(path: str) -> list[str]:
    """The segments of a file URL's path with dot segments resolved (a drive letter stays)."""
    segments: list[str] = []
    raw_segments = re.split(r"[/\\]", path)[1:] if path else [""]
    for i, seg in enumerate(raw_segments):
        last = i == len(raw_segments) - 1
        if _is_double_dot(seg):
            if segments and not (len(segments) == 1 and _DRIVE_LETTER_RE.fullmatch(segments[0])):
                segments.pop()
            if last:
                segments.append("")
        elif _is_single_dot(seg):
            if last:
                segments.append("")
        else:
            if not segments and _DRIVE_LETTER_RE.fullmatch(seg):
                seg = seg[0] + ":"
            segments.append(seg)
    return segments


# ---- NUL bytes ---------------------------------------------------------------------------------------

# Node's util.inspect escapes for a string: C0 controls, DEL and C1 controls as \xHH, a few by name
_INSPECT_NAMED = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", "\\": "\\\\"}
# (compiled by its first use, through re's cache: error messages are rare, the sidecar's start is not)
_INSPECT_ESCAPED = r"[\x00-\x1f\\\x7f-\x9f\ud800-\udfff]"
_INSPECT_MAX_CHARS = 128  # ERR_INVALID_ARG_VALUE cuts the inspected value there and adds "..."


def _inspect_string(text: str) -> str:
    """Node's ``util.inspect`` of a one-line string: the first quote the text does not hold, escapes.

    Python strings from JSON hold lone surrogates only (pairs are decoded), so every surrogate is
    lone; the cut at 128 characters counts code points, not UTF-16 units (paths are BMP in practice).
    """
    quote = "'"
    if "'" in text:
        if '"' not in text:
            quote = '"'
        elif "`" not in text and "${" not in text:
            quote = "`"

    def escape(match: re.Match[str]) -> str:
        char = match.group(0)
        named = _INSPECT_NAMED.get(char)
        if named is not None:
            return named
        code = ord(char)
        return f"\\u{code:x}" if code >= 0xD800 else f"\\x{code:02X}"

    # only the start is shown (cut at _INSPECT_MAX_CHARS below): escaping the rest is wasted work
    body = re.sub(_INSPECT_ESCAPED, escape, text[:_INSPECT_MAX_CHARS])
    if quote == "'":
        body = body.replace("'", "\\'")
    return quote + body + quote


def reject_null_bytes(path: str) -> str:
    """``path`` itself, or Node's ``TypeError [ERR_INVALID_ARG_VALUE]`` if it holds a NUL byte.

    Node's fs functions refuse such a path, Python's raise a bare ``ValueError`` deep inside a write.
    The library refuses it where paths are normalized, so that every entry point fails up front
    with Node's error and nothing is written.
    """
    if "\x00" not in path:
        return path
    inspected = _inspect_string(path)
    if len(inspected) > _INSPECT_MAX_CHARS:
        inspected = inspected[:_INSPECT_MAX_CHARS] + "..."
    raise InvalidArgValueError(
        f"The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received {inspected}"
    )


def path_given(p: StrPath | None) -> TypeGuard[StrPath]:
    """Was an optional path argument given? JavaScript's ``p ? ... : default``: ABSENT, None and
    "" are not (nor a wrongly typed value JavaScript takes as false, which then is not refused)."""
    return truthy(p)


def path_text(p: Any) -> str:
    """A path argument as the string pi would be given: a ``str`` as it is, an ``os.PathLike``
    (``pathlib.Path``) as ``os.fspath`` spells it. Anything else raises
    :class:`~pi_session_server.errors.InvalidArgTypeError` with Node's message, where pi's
    ``path.resolve`` throws, so that a wrong argument fails up front rather than deep inside."""
    if isinstance(p, str):
        return p
    if isinstance(p, os.PathLike):
        text = os.fspath(p)
        if isinstance(text, str):
            return text
    raise InvalidArgTypeError(f'The "path" argument must be of type string. Received {node_received(p)}')


# ERR_INVALID_ARG_TYPE shows a string this long at most, else its first 25 characters and "..."
_RECEIVED_MAX_CHARS = 28


def node_received(value: Any) -> str:
    """How Node's ERR_INVALID_ARG_TYPE message names the value it was given (Python's own types by
    their Python names: JavaScript has no such values)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= _RECEIVED_MAX_CHARS else value[:25] + "..."
        return f"type string ({_inspect_string(shown)})"
    if value is ABSENT:
        return "undefined"
    if isinstance(value, bool):
        return f"type boolean ({'true' if value else 'false'})"
    if isinstance(value, (int, float)):
        return f"type number ({js_string_of(value)})"
    if isinstance(value, dict):
        return "an instance of Object"
    if isinstance(value, list):
        return "an instance of Array"
    return f"an instance of {type(value).__name__}"


def normalize_path(p: StrPath, env: Environment | None = None) -> str:
    """pi's ``normalizePath``: ``~`` and ``~/...`` expand to the home directory (of ``env``),
    ``file://`` URLs become paths; anything else is returned unchanged (not made absolute, '..'
    kept). ``p`` may be an ``os.PathLike`` (see :func:`path_text`).

    A result holding a NUL byte (given, or decoded from ``%00``) raises
    :class:`~pi_session_server.errors.InvalidArgValueError` (see :func:`reject_null_bytes`).
    """
    return reject_null_bytes(node_normalize_path(p, env))


def node_normalize_path(p: StrPath, env: Environment | None = None) -> str:
    """pi's ``normalizePath`` as Node runs it: :func:`normalize_path` without refusing a NUL byte,
    which pi's value keeps until a file system call refuses it (a caller that must tell what pi
    does with such a value before then)."""
    p = path_text(p)
    if p == "~":
        return home_dir(env)
    if p.startswith("~/"):
        return node_join(home_dir(env), p[2:])
    if p.startswith("file://"):
        return file_url_to_path(p)
    return p


def resolve_path(p: StrPath, base: str | None = None, env: Environment | None = None) -> str:
    """pi's ``resolvePath(p, base = process.cwd())``: normalize, then Node ``path.resolve`` (the
    working directory and home directory those read are ``env``'s)."""
    normalized = normalize_path(p, env)
    if normalized.startswith("/"):
        return node_resolve(normalized)
    if base is not None:
        return node_resolve(normalize_path(base, env), normalized, env=env)
    return node_resolve(normalized, env=env)


def paths_equal(left: str, right: str, env: Environment | None = None) -> bool:
    """pi 1.6.0's ``pathsEqual`` on POSIX: both resolved (Node ``path.resolve``, against the working
    directory of ``env``) and compared; a trailing slash, ``./`` or ``..`` segments or a relative
    spelling of the same directory compare equal. (pi case-folds on Windows only.)"""
    return left == right or node_resolve(left, env=env) == node_resolve(right, env=env)


# ---- pi's directories ------------------------------------------------------------------------------


def encode_cwd(resolved_cwd: str) -> str:
    """The directory-name form of a resolved cwd: one leading '/' or '\\' removed, then every
    '/', '\\' and ':' replaced by '-' (the caller adds the surrounding '--')."""
    s = resolved_cwd[1:] if resolved_cwd[:1] in ("/", "\\") else resolved_cwd
    return s.replace("/", "-").replace("\\", "-").replace(":", "-")


def get_agent_dir(env: Environment | None = None) -> str:
    """``$PI_CODING_AGENT_DIR`` (normalized, not made absolute) or ``<home>/.pi/agent``, in ``env``."""
    env = current(env)
    if env.agent_dir:
        return normalize_path(env.agent_dir, env)
    return node_join(env.home_dir(), _CONFIG_DIR_NAME, "agent")


def get_sessions_root(env: Environment | None = None) -> str:
    """``<agent dir>/sessions`` (joined, not made absolute)."""
    return node_join(get_agent_dir(env), "sessions")


def default_session_dir_path(
    cwd: StrPath, agent_dir: StrPath = ABSENT, env: Environment | None = None
) -> str:
    """``<resolved agent dir>/sessions/--<encoded resolved cwd>--``, without creating it.

    ``agent_dir`` ABSENT (JS ``undefined``) means the default agent directory; any string (even
    empty, which resolves to the working directory) is resolved like the reference does; a value
    that is no path raises InvalidArgTypeError (see :func:`path_text`).
    """
    env = current(env)
    if agent_dir is ABSENT:
        agent_dir = get_agent_dir(env)
    resolved_cwd = resolve_path(cwd, env=env)
    resolved_agent_dir = resolve_path(agent_dir, env=env)
    return node_join(resolved_agent_dir, "sessions", f"--{encode_cwd(resolved_cwd)}--")


def get_default_session_dir(cwd: StrPath, agent_dir: StrPath = ABSENT, env: Environment | None = None) -> str:
    """``getDefaultSessionDir(cwd, agentDir?)``: the default directory, created if missing."""
    path = default_session_dir_path(cwd, agent_dir, env)
    if not os.path.exists(path):
        make_dirs(path)
    return path


def session_dir_or_default(session_dir: StrPath | None, cwd: StrPath, env: Environment | None = None) -> str:
    """pi's ``sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd)`` (the default
    directory created if missing)."""
    if path_given(session_dir):
        return normalize_path(session_dir, env)
    return get_default_session_dir(cwd, env=env)


_SPECIAL_KINDS = {
    stat.S_IFIFO: "FIFO",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFSOCK: "socket",
}


def special_file_kind(mode: int) -> str | None:
    """What a file that cannot be read to its end at once is ("FIFO", "character device", ...):
    reading a FIFO waits for a writer, a device may never end. None for a regular file or a
    directory (which the reference reports itself: EISDIR)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _SPECIAL_KINDS.get(stat.S_IFMT(mode), "special file")


# The longest path the system takes (PATH_MAX); longer ones fail with ENAMETOOLONG anyway.
_PATH_MAX = 4096


def make_dirs(path: str) -> None:
    """``mkdirSync(path, {recursive: true})``: ``path`` and its missing parents (an existing
    directory is fine); a failure is Node's error for ``mkdir`` of ``path`` (FsError).
    ``os.makedirs`` recurses once per missing level, so a path of a few thousand levels raised
    RecursionError; this loops, and a path longer than the system takes fails at once with
    ENAMETOOLONG instead of being walked level by level."""
    try:
        _make_dirs(path)
    except OSError as error:
        raise fs_error_from_oserror(error, "mkdir", path) from error


def _make_dirs(path: str) -> None:
    if len(os.fsencode(path)) >= _PATH_MAX:
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), path)
    levels: list[tuple[str, str]] = []  # (directory, its last part), deepest first
    name = path
    while True:
        head, tail = os.path.split(name)
        if not tail:
            head, tail = os.path.split(head)
        levels.append((name, tail))
        if not (head and tail and not os.path.exists(head)):
            break
        name = head
    for name, tail in reversed(levels):
        if tail == os.curdir:
            continue
        try:
            os.mkdir(name)
        except OSError:
            if not os.path.isdir(name):
                raise
