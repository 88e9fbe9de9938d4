"""Files named by requests: ``file:`` URIs as Node reads them, paths as Node hands them to the file
system, and the refusal of anything that is not a regular file.

* A URI becomes a path as Node's ``url.fileURLToPath`` makes it (``file://localhost/x`` is ``/x``,
  percent escapes decoded); a ``%00`` is refused with Node's error for a path holding a NUL byte.
* A path holding lone UTF-16 surrogates reaches the file system with U+FFFD in their place, which
  is what Node does when it encodes a JS string to UTF-8 (pi would open that file).
* A file is known by what it is (:func:`file_keys`), however a request spells it.
* Opening a FIFO waits for a writer, and a device may never end: such files are refused before any
  open (:func:`require_regular_file`), with ``PathRefused`` (-32010) naming what the file is.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from pi_session_server.errors import PiSessionError
from pi_session_server.format.jstext import as_displayed
from pi_session_server.session.environment import Environment
from pi_session_server.session.paths import (
    file_url_to_path,
    reject_null_bytes,
    resolve_path,
    special_file_kind,
)

from .errors import PiRpcError, from_library_error, invalid_params, path_refused

#: the longest path a request may give, in characters (Linux refuses paths over 4096 bytes)
MAX_PATH_CHARS = 4096
#: the longest ``file:`` URI (every byte of a longest path percent-encoded)
MAX_URI_CHARS = 3 * 4 * MAX_PATH_CHARS

#: what a file is: paths (str) and its (device, inode)
FileKeys = frozenset[Any]


def fs_path(path: str) -> str:
    """``path`` as Node encodes it for the file system: lone surrogates become U+FFFD."""
    return as_displayed(path)


def uri_to_path(uri: str) -> str:
    """The path of a ``file:`` URI (Node's ``fileURLToPath``); -32602 for anything else, -32008 with
    Node's error for a file URL Node refuses (a host other than localhost, an encoded ``/``, a
    malformed escape) or one that decodes to a path holding a NUL byte, as a ``path`` spelt so is."""
    if not uri.startswith("file://"):
        raise invalid_params(f"Invalid params: `uri` must be a file:// URI, got {uri[:200]!r}")
    try:
        return reject_null_bytes(fs_path(file_url_to_path(uri)))
    except PiSessionError as error:
        raise from_library_error(error) from None


def path_of_uri(uri: str) -> str | None:
    """The path of a ``file:`` URI (:func:`uri_to_path`), or None for any other URI or one refused."""
    try:
        return uri_to_path(uri)
    except PiRpcError:
        return None


def resolved_on_the_loop(path: str, env: Environment) -> str | None:
    """``resolve_path(path)`` where that reads nothing, for a handler that must know the file as
    the request arrives; None where it would read: ``~`` with ``$HOME`` unset is the home of the
    user's password entry, a look-up that may not run on the event loop (a worker resolves it).
    Raises as ``resolve_path`` does."""
    if env.home is None and (path == "~" or path.startswith("~/")):
        return None
    return resolve_path(path, env=env)


def require_regular_file(path: str) -> bool:
    """True if something is at ``path`` (symlinks followed), False if nothing is; refuses (-32010,
    ``data.kind``) a FIFO, a device or a socket, which is never opened: reading a FIFO waits for a
    writer, a device may never end. A directory passes: the open reports EISDIR, as pi's does."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True  # the open that follows reports it as the reference does
    kind = special_file_kind(mode)
    if kind is not None:
        raise path_refused(f"Not a regular file: {path} is a {kind}", path, kind)
    return True


class FileNames(NamedTuple):
    """What one look at the file system found the file at a path to be called."""

    real_path: str  # the path with its symlinks resolved
    entry: str  # the directory entry it names (:func:`directory_entry`)
    keys: FileKeys  # :func:`file_keys`


def file_names(path: str) -> FileNames:
    """The names of the file at ``path`` (resolved), found in one look (on a worker: it reads the
    file system). Two spellings of one file share a key: the path with its symlinks resolved, or
    the directory entry it names (its directory's symlinks resolved: what unlinking it removes,
    still the same once the file is gone), or the device and inode."""
    keys: set[Any] = {path}
    real_path = entry = path
    try:
        entry = directory_entry(path)
        keys.add(entry)
        real_path = os.path.realpath(path)
        keys.add(real_path)
        st = os.stat(path)
        keys.add((st.st_dev, st.st_ino))
    except (OSError, ValueError):  # nothing there (the names say what it was), or a name too long
        pass
    return FileNames(real_path, entry, frozenset(keys))


def file_keys(path: str) -> FileKeys:
    """What the file at ``path`` (resolved) is, as a delete, the requests on it and the sessions held
    on it compare it (:func:`file_names`)."""
    return file_names(path).keys


def directory_entry(path: str) -> str:
    """The directory entry ``path`` names, its directory's symlinks resolved: what deleting it
    removes (a symlink itself, not the file it points to). Reads the file system."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
