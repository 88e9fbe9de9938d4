"""JSON-RPC error codes of the pi/* methods and the mapping from library errors.

The codes are part of the wire contract (``protocol/pi-session.openrpc.json`` lists them). An
application error carries the reference's message (a value of the request it quotes cut to its start
and shown on one line: :func:`shown_start`); ``data`` names the JS error (``name``)
and, for file-system errors, the Node error code (``code``), as the conformance oracle reports them.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import Any

from pi_session_server import errors as lib_errors
from pi_session_server.format.jsjson import dumps
from pi_session_server.render.editor_text import shown_line
from pi_session_server.session.profiles import PROFILES

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

UNKNOWN_SESSION = -32001
ENTRY_NOT_FOUND = -32002
INVALID_SESSION_FILE = -32003
INVALID_SESSION_ID = -32004
FS_ERROR = -32005
FORK_ERROR = -32006
ABORTED = -32007
SESSION_ERROR = -32008
PATH_REFUSED = -32010
TOO_LARGE = -32011
READ_ONLY = -32012
PI_VERSION = -32013
CONTEXT_EDIT_REFUSED = -32014
TREE_CHANGED = -32015
FILE_REPLACED = -32016
REQUEST_CANCELLED = -32800

# The most nodes one pi/getTree reply holds. While a reply is made and sent, each node holds memory
# (its part of the tree, its preview, its JSON and the framing): this bound keeps a reply to tens of
# MB (bench/RESULTS.md), so a session of a million entries cannot take the process down. Bigger
# trees come in pages.
MAX_TREE_NODES = 50_000

# The most bytes of whole entries one reply holds (pi/getBranch, pi/getEntries, the context, a listing
# with all its text, ...: replies the request does not bound), told from the entries' envelopes (a
# listing: its strings' lengths) before anything is encoded (reply_bytes.py). A reply peaks at several times its size while it is made and sent (the values,
# their JSON, the frame). This lets the whole path of a session of a few hundred MB through (one
# with screenshots) and refuses that of a GB session, which comes in pages (pi/getPath).
MAX_REPLY_BYTES = 512 * 1024 * 1024

# code -> (name, when) for the protocol document and its consistency test
ERROR_CODES: dict[int, tuple[str, str]] = {
    PARSE_ERROR: (
        "ParseError",
        "the body is not JSON, or its frame (the Content-Length header) is not read as one; the reply's id is null",
    ),
    INVALID_REQUEST: (
        "InvalidRequest",
        "not a JSON-RPC 2.0 request (a batch, a member of the wrong type; the reply's id is null when the "
        "request's cannot be read), or a request after `shutdown`",
    ),
    METHOD_NOT_FOUND: ("MethodNotFound", "the server has no such method (`Method not found: <method>`)"),
    INVALID_PARAMS: ("InvalidParams", "a parameter is missing or has the wrong type; the message names it"),
    INTERNAL_ERROR: ("InternalError", "a bug in the server; the session is unchanged"),
    UNKNOWN_SESSION: (
        "UnknownSession",
        "the session handle is not open (never opened, or closed: pi/close, pi/delete of its file)",
    ),
    ENTRY_NOT_FOUND: ("EntryNotFound", "`Entry <id> not found` (branch, label, createBranchedSession, ...)"),
    INVALID_SESSION_FILE: ("InvalidSessionFile", "`Session file is not a valid pi session: <path>`"),
    INVALID_SESSION_ID: ("InvalidSessionId", "the session id option failed the reference's id rule"),
    FS_ERROR: (
        "FsError",
        "a Node-style file-system error; data.code is the Node code (EEXIST, ENOENT, ...), data.path the "
        "file. A read by `uri` of a file that is not there is ENOENT (pi/open of a missing path is a new "
        "session, as in pi)",
    ),
    FORK_ERROR: ("ForkError", "`Cannot fork: ...`"),
    ABORTED: ("AbortError", "`This operation was aborted` (cancelled listing)"),
    SESSION_ERROR: (
        "SessionError",
        "any other error the reference throws; the message is the reference's (a path holding a NUL byte: "
        "Node's `The argument 'path' must be ... without null bytes`, data.name TypeError, "
        "data.code ERR_INVALID_ARG_VALUE)",
    ),
    PATH_REFUSED: (
        "PathRefused",
        "the path cannot be used: not a regular file (a FIFO, a device, a socket: data.kind names it; "
        "never opened, so nothing waits on it), or not a pi session (delete)",
    ),
    TOO_LARGE: (
        "TooLarge",
        f"the reply would be larger than the server sends at once. pi/getTree: more than {MAX_TREE_NODES:,} "
        "nodes; data.total is the size, data.max the maximum: ask for pages (`limit`, `offset`) or a subtree "
        "(`rootId`, `depth`). Replies of whole entries that the request does not bound (pi/getBranch, "
        "pi/getEntries, pi/getChildren, pi/buildContextEntries, pi/buildSessionContext, "
        f"pi/buildSessionProjection, pi/getTree's reference form): more than {MAX_REPLY_BYTES:,} bytes "
        f"({MAX_REPLY_BYTES / 2**20:g} MiB), "
        "estimated from the entries' lines before anything is sent; data.bytes is the estimate, data.max the "
        "maximum, and the message says what to ask instead (pi/getPath with `offset` and `limit` for a path, "
        "pi/getEntries with `limit` and `offset`). pi/list and pi/listAll: the same bound, estimated from the "
        "length of the text the sessions carry; ask for `text` first or none, `maxTextChars`, or pages",
    ),
    READ_ONLY: (
        "ReadOnly",
        "a write to a session opened by `uri` (to look at) that would rewrite the whole file: a version 1 "
        "or 2 session is converted to version 3 with new ids when pi opens it for writing. data.version is "
        "the file's version; open it with pi/open (which converts it, as pi does) to write to it",
    ),
    PI_VERSION: (
        "PiVersion",
        "the pi release the session follows does not have this call (pi/appendContextEdit under pi 0.86.1), or "
        "`pi` names a release the server does not know; data.supported lists the releases it knows",
    ),
    CONTEXT_EDIT_REFUSED: (
        "ContextEditRefused",
        "pi 1.6.0's appendContextEdit refused the edit, with pi's message: a replacement that is not null or "
        "an object with string or array `content`, a target that is not on the active branch, or one that "
        "contributes no editable content (an unknown target is EntryNotFound, -32002)",
    ),
    TREE_CHANGED: (
        "TreeChanged",
        "pi/getTree with `revision`: the session changed since the page that gave that revision (an append, "
        "a reload, another leaf), so this page would be of another tree; data.revision is the current one. "
        "Ask for the tree again from its first page",
    ),
    FILE_REPLACED: (
        "FileReplaced",
        "a write to a session whose file another program replaced (renamed another file over its path: an "
        "editor's save, `mv`) since the session read it, where the file there now is another session or does "
        "not hold the entries the write names (its parent, a label's target): nothing was written, and the "
        "write is not kept in the session. data.missing lists the ids of the entries the file lacks (empty: "
        "it is not this session). The session has read the new file before the answer, told by pi/didChange "
        "`reloaded`: look at it and write again",
    ),
    REQUEST_CANCELLED: (
        "RequestCancelled",
        "cancelled by `$/cancelRequest`: a queued request never runs; a running read is answered at once "
        "and its work stops at its next check (the scan of a file, a listing); a write that started is "
        "never cancelled (it finishes and answers)",
    ),
}


#: characters of a value from a request that an error message repeats (the start of it)
MAX_SHOWN = 100


def shown_start(text: str) -> str:
    """``text``, a value from a request an error message repeats: its first :data:`MAX_SHOWN`
    characters, "..." where more followed, on one line of an editor (its control characters
    escaped as ``check`` writes them, see :func:`~pi_session_server.render.editor_text.shown_line`)."""
    return shown_line(text) if len(text) <= MAX_SHOWN else shown_line(text[:MAX_SHOWN]) + "..."


# pi's messages that quote a value of the request whole, by the error pi throws: (the words
# before, the value, the words after). An id of a megabyte would make a megabyte message.
_QUOTING: list[tuple[type[lib_errors.PiSessionError], re.Pattern[str]]] = [
    (
        lib_errors.EntryNotFoundError,
        re.compile(r"(Entry )(.*)( not found)", re.DOTALL),
    ),
    (
        lib_errors.ContextEditError,
        re.compile(
            r"(Entry )(.*)( is not on the active branch| does not contribute editable model content)",
            re.DOTALL,
        ),
    ),
    (lib_errors.ValueTypeError, re.compile(r"(Cannot create property '[^']*' on \w+ ')(.*)(')", re.DOTALL)),
]


# msgspec's refusals that quote a string of the request whole, in the same (words before, value,
# words after) form: an enum's value (``filter``, ``form``, ...) as a Python literal (its repr), a
# member's name as it is between backticks
_ENUM_STRING = re.compile(
    r"(Invalid enum value )('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")((?: - at `[^`]*`)?)", re.DOTALL
)
_UNKNOWN_FIELD = re.compile(r"(Object contains unknown field )`(.*?)`((?: - at `[^`]*`)?)", re.DOTALL)
# an enum's value that is no string (a number): shown as msgspec writes it, cut to its start
_ENUM_OTHER = re.compile(r"(Invalid enum value )(.*?)((?: - at `[^`]*`)?)", re.DOTALL)
# one character of a Python string literal's body, as repr writes it (an escape, or itself)
_REPR_CHAR = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|[^\\]", re.DOTALL)


def _cut(message: str, quoting: re.Pattern[str]) -> str | None:
    """``message`` with the value ``quoting`` finds in it cut to its start, or None when it does
    not match."""
    parts = quoting.fullmatch(message)
    if parts is None:
        return None
    before, value, after = parts.groups()
    return before + shown_start(value) + after


def _bounded(error: lib_errors.PiSessionError) -> str:
    """The message of ``error`` with the value of the request it quotes cut to its start, its
    control characters escaped."""
    for cls, quoting in _QUOTING:
        if isinstance(error, cls) and (cut := _cut(error.message, quoting)) is not None:
            return cut
    return error.message


def bounded_validation_message(message: str) -> str:
    """A refusal of the params by msgspec with the string of the request it quotes as the server's
    own messages quote one (:func:`quoted_start`: a JSON string, cut to its start), whichever way
    msgspec wrote it."""
    if (parts := _ENUM_STRING.fullmatch(message)) is not None:
        before, literal, after = parts.groups()
        return before + quoted_start(_start_of_literal(literal)) + after
    if (parts := _UNKNOWN_FIELD.fullmatch(message)) is not None:
        before, name, after = parts.groups()
        return before + quoted_start(name) + after
    return _cut(message, _ENUM_OTHER) or message


def _start_of_literal(literal: str) -> str:
    """The string a Python string literal (a repr) writes, up to one character past what
    :func:`quoted_start` shows (so that it says more followed): a long value's whole is not read."""
    quote = literal[0]
    chars = itertools.islice(_REPR_CHAR.finditer(literal, 1, len(literal) - 1), MAX_SHOWN + 1)
    return str(ast.literal_eval(quote + "".join(char.group(0) for char in chars) + quote))


# What JSON lets a string hold unescaped that breaks or hides a line of an editor: DEL, the C1
# controls and the line and paragraph separators (JSON.stringify escapes only the C0 controls).
_UNSHOWN_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029]")


def quoted_start(text: str) -> str:
    """``text``, a string from a request an error message names, quoted as a JSON string (a front
    end in any language reads it back as one): the start of it, "..." after the quote where more
    followed. Every control character is a JSON escape (``\\u001b``), so the message stays on one
    line."""
    quoted = _UNSHOWN_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumps(text[:MAX_SHOWN]))
    return quoted + ("..." if len(text) > MAX_SHOWN else "")


#: characters of an error's own words (an exception's, a validator's) a message repeats: they may
#: quote a value of the request whole
MAX_DETAIL = 500


def shown_detail(text: str) -> str:
    """An error's own words in a message: their first line, its first :data:`MAX_DETAIL`
    characters ("..." where more followed), on one line of an editor (control characters that a
    value of the request brought in escaped, see :func:`~pi_session_server.render.editor_text.shown_line`)."""
    lines = text[: MAX_DETAIL + 1].splitlines()
    first = lines[0] if lines else ""
    if len(first) > MAX_DETAIL or text[len(first) :].strip():
        first = first[:MAX_DETAIL] + "..."
    return shown_line(first)


def method_not_found(method: str) -> str:
    """The message of -32601, whichever part of the server answers it: the method's start, on
    one line."""
    return f"Method not found: {shown_start(method)}"


class RpcError(Exception):
    """An error reply: ``code``, ``message`` and optional ``data`` (raised by a handler)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class PiRpcError(RpcError):
    """An error reply with one of the codes above."""


def invalid_params(message: str) -> PiRpcError:
    return PiRpcError(INVALID_PARAMS, message)


def unknown_session(handle: Any) -> PiRpcError:
    return PiRpcError(UNKNOWN_SESSION, f"Unknown session handle: {handle}", {"session": handle})


def path_refused(message: str, path: str, kind: str | None = None) -> PiRpcError:
    data = {"path": path} if kind is None else {"path": path, "kind": kind}
    return PiRpcError(PATH_REFUSED, message, data)


def missing_session_file(path: str) -> PiRpcError:
    """A read of a session file that is not there (FsError, ENOENT, with Node's message and the
    path in ``data``)."""
    return from_library_error(lib_errors.FsError("ENOENT", "no such file or directory", "open", path))


_CLASS_CODES: list[tuple[type[BaseException], int]] = [
    (lib_errors.EntryNotFoundError, ENTRY_NOT_FOUND),
    (lib_errors.PiVersionError, PI_VERSION),
    (lib_errors.ContextEditError, CONTEXT_EDIT_REFUSED),
    (lib_errors.InvalidSessionFileError, INVALID_SESSION_FILE),
    (lib_errors.InvalidSessionIdError, INVALID_SESSION_ID),
    (lib_errors.SessionFileReplacedError, FILE_REPLACED),
    (lib_errors.FsError, FS_ERROR),
    (lib_errors.ForkError, FORK_ERROR),
    (lib_errors.AbortError, ABORTED),
]


def from_library_error(error: lib_errors.PiSessionError) -> PiRpcError:
    """The reply for an error the library raised: the reference's message, verbatim but for a
    value of the request it quotes, of which it keeps the start on one line (:func:`_bounded`)."""
    if isinstance(error, lib_errors.NotRegularFileError):
        return path_refused(error.message, error.path, error.kind)
    code = SESSION_ERROR
    for cls, cls_code in _CLASS_CODES:
        if isinstance(error, cls):
            code = cls_code
            break
    data: dict[str, Any] = {"name": error.name}
    if error.code is not None:
        data["code"] = error.code
    syscall = getattr(error, "syscall", None)
    if syscall is not None:
        data["syscall"] = syscall
    path = getattr(error, "path", None)
    if path is not None:
        data["path"] = path
    if code == PI_VERSION:
        data["supported"] = list(PROFILES)
    if isinstance(error, lib_errors.SessionFileReplacedError):
        data["missing"] = error.missing
    return PiRpcError(code, _bounded(error), data)


def from_os_error(error: OSError, syscall: str, path: str | None) -> PiRpcError:
    return from_library_error(lib_errors.fs_error_from_oserror(error, syscall, path))


def from_job_failure(error: lib_errors.PiSessionError | OSError) -> PiRpcError:
    """The reply for what a session job raised: a library error, or an OSError it let through
    (reported as Node would report a failed open of the file it names)."""
    if isinstance(error, lib_errors.PiSessionError):
        return from_library_error(error)
    return from_os_error(error, "open", getattr(error, "filename", None))
