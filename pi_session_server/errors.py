"""Errors the library raises, mirroring the reference's messages (docs/API.md §11).

``name`` is the JS error name (``Error`` unless stated) and ``code`` the Node fs error code, so the
conformance runner and the JSON-RPC layer can report them exactly as pi would.
"""

from __future__ import annotations

from typing import Any


class PiSessionError(Exception):
    """Base class. ``str(err)`` is the reference's message, verbatim."""

    name = "Error"
    code: str | None = None

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class EntryNotFoundError(PiSessionError):
    """``Entry <id> not found``."""


class ContextEditError(PiSessionError):
    """``appendContextEdit`` refused the edit (a bad replacement, a target off the active branch or
    one that contributes no editable content); the reference's message, verbatim."""


class PiVersionError(PiSessionError):
    """An unknown pi version was asked for, or a call the chosen pi version does not have."""


class InvalidSessionIdError(PiSessionError):
    """A caller-supplied session id failed the reference's id rule."""


class InvalidSessionFileError(PiSessionError):
    """``Session file is not a valid pi session: <path>``."""


class ForkError(PiSessionError):
    """``Cannot fork: ...``."""


class StaleFileError(PiSessionError):
    """An entry body read on demand is no longer in the file (rewritten or truncated by another process)."""


class SessionFileReplacedError(PiSessionError):
    """A write refused because another program replaced the session's file (renamed another file
    over its path) since the session read it, and the file there now does not hold what the write
    names: another session, or this one without the entry it would follow. Nothing was written;
    the session's next refresh reads the new file (beyond the reference, which appends there)."""

    def __init__(self, path: str, missing: list[str]) -> None:
        what = ", ".join(f"entry {entry_id}" for entry_id in missing) if missing else "this session's header"
        super().__init__(
            f"{path} was replaced by another file since the session read it, which does not hold "
            f"{what}: nothing was written. Read the session again (it is reloaded by its next "
            "refresh) and write again"
        )
        self.path = path
        self.missing = missing


class ValueTypeError(PiSessionError):
    """The ``TypeError`` pi throws when a value given to it is not of the type it uses it as."""

    name = "TypeError"


def cannot_read_property(nothing: Any, key: str) -> ValueTypeError:
    """pi's TypeError for reading ``key`` of ``nothing``: None (null) or ABSENT (undefined)."""
    return ValueTypeError(
        f"Cannot read properties of {'null' if nothing is None else 'undefined'} (reading '{key}')"
    )


class NotRegularFileError(PiSessionError):
    """``path`` names a FIFO, a device or a socket, which is refused without being written: writing
    to a FIFO waits for a reader (beyond the reference, which would block)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"Not a regular file: {path} is a {kind}")
        self.path = path
        self.kind = kind


class InvalidArgValueError(PiSessionError):
    """Node's ``TypeError [ERR_INVALID_ARG_VALUE]``, raised for a path that holds a NUL byte."""

    name = "TypeError"
    code = "ERR_INVALID_ARG_VALUE"


class InvalidArgTypeError(PiSessionError):
    """Node's ``TypeError [ERR_INVALID_ARG_TYPE]``, raised for a path that is neither a string nor an
    ``os.PathLike`` naming one (``None``, a number, bytes, ...)."""

    name = "TypeError"
    code = "ERR_INVALID_ARG_TYPE"


class FileUrlError(PiSessionError, ValueError):
    """Node's refusal of a ``file://`` URL pi makes a path of (``fileURLToPath``): a ``TypeError``
    with Node's code (a host other than localhost, an encoded ``/``, no URL at all), or a
    ``URIError`` for a malformed percent escape."""

    def __init__(self, message: str, name: str = "TypeError", code: str | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.code = code


class ArgOutOfRangeError(PiSessionError):
    """Node's ``RangeError [ERR_OUT_OF_RANGE]``, raised for a number argument outside what it may be
    (a line number that is no whole number)."""

    name = "RangeError"
    code = "ERR_OUT_OF_RANGE"


class AbortError(PiSessionError):
    """``This operation was aborted`` (a DOMException named AbortError in the reference)."""

    name = "AbortError"


class FsError(PiSessionError):
    """A file-system error reported the Node way: ``<CODE>: <description>, <syscall> '<path>'``."""

    def __init__(self, code: str, description: str, syscall: str, path: str | None = None):
        text = f"{code}: {description}, {syscall}" + (f" '{path}'" if path is not None else "")
        super().__init__(text)
        self.code = code
        self.syscall = syscall
        self.path = path


# libuv's uv_strerror texts, which Node's fs errors hold
_NODE_DESCRIPTIONS = {
    "EEXIST": "file already exists",
    "ENOENT": "no such file or directory",
    "EISDIR": "illegal operation on a directory",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "ENOTDIR": "not a directory",
    "ENOTEMPTY": "directory not empty",
    "ENOSPC": "no space left on device",
    "EROFS": "read-only file system",
    "ENAMETOOLONG": "name too long",
    "ELOOP": "too many symbolic links encountered",
    "EINVAL": "invalid argument",
    "EMFILE": "too many open files",
    "EBUSY": "resource busy or locked",
    "EXDEV": "cross-device link not permitted",
    "EIO": "i/o error",
}


def fs_error_from_oserror(err: OSError, syscall: str, path: str | None) -> FsError:
    """Translate a Python ``OSError`` into the Node-style error the reference would throw."""
    import errno as _errno

    code = _errno.errorcode.get(err.errno or 0, "EIO")
    desc = _NODE_DESCRIPTIONS.get(code, (err.strerror or "i/o error").lower())
    if code == "EISDIR" and syscall == "read":
        return FsError(code, desc, syscall)
    return FsError(code, desc, syscall, path)
