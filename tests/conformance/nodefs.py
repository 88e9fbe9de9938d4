"""The oracle's file-system helpers (run.mjs), reproduced with Node's observable behaviour.

File specs, file dumps, the before/after tree snapshot and the helper ops (``writeFile``,
``deleteFile``, ``listDir``, ``setMtime``...) must fail with the same Node error texts and codes
and set modification times exactly as Node's ``fs.utimesSync`` does.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import math
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from pi_session_server.format.jsvalue import ABSENT, truthy

from jsbridge import OpError, is_array, is_nullish, js_date_value, js_loads, js_slice, js_to_string

# libuv's uv_strerror texts (Node uses them in fs error messages)
_DESCRIPTIONS = {
    "ENOENT": "no such file or directory",
    "EEXIST": "file already exists",
    "EISDIR": "illegal operation on a directory",
    "ENOTDIR": "not a directory",
    "EACCES": "permission denied",
    "EPERM": "operation not permitted",
    "EINVAL": "invalid argument",
    "ENOTEMPTY": "directory not empty",
    "ENAMETOOLONG": "name too long",
    "ELOOP": "too many symbolic links encountered",
    "ENOSPC": "no space left on device",
    "EROFS": "read-only file system",
}


class NodeFsError(Exception):
    """A Node fs error: ``message`` is Node's text, ``code`` its code, ``name`` the error's name."""

    def __init__(self, message: str, code: str, name: str = "Error"):
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = name


def node_error(code: str, syscall: str, path: str | None) -> NodeFsError:
    desc = _DESCRIPTIONS.get(code, code.lower())
    return NodeFsError(f"{code}: {desc}, {syscall}" + (f" '{path}'" if path is not None else ""), code)


def from_oserror(err: OSError, syscall: str, path: str | None) -> NodeFsError:
    return node_error(errno.errorcode.get(err.errno or 0, "EIO"), syscall, path)


def raw_sort(names: list[str]) -> list[str]:
    """JS default sort: by UTF-16 code units."""
    return sorted(names, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def display_name(name: str) -> str:
    """A file name as Node reports it (bytes decoded as UTF-8 with replacement)."""
    return os.fsencode(name).decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# File specs
# ---------------------------------------------------------------------------


def node_base64(text: str) -> bytes:
    # Buffer.from(text, "base64") is lenient: url-safe letters, no padding, junk ignored.
    clean = re.sub(r"[^A-Za-z0-9+/]", "", text.split("=", 1)[0].replace("-", "+").replace("_", "/"))
    if len(clean) % 4 == 1:
        clean = clean[:-1]
    return base64.b64decode(clean + "=" * (-len(clean) % 4))


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise node_error("EISDIR", "read", None) from None
    except OSError as e:
        raise from_oserror(e, "open", path) from None


def file_spec_bytes(spec: Any, base_dir: str) -> bytes:
    """The bytes a FILESPEC (``lines``/``text``/``base64``/``fixture``) describes."""
    if is_array(spec):  # a JS array is an object without any of the keys
        raise OpError("file spec needs one of: lines, text, base64, fixture")
    if not isinstance(spec, Mapping):
        raise OpError("file spec must be an object")
    bom = "\ufeff" if truthy(spec.get("bom", ABSENT)) else ""
    lines = spec.get("lines", ABSENT)
    if is_array(lines):
        trailing = spec.get("trailingNewline", ABSENT)
        trailing = True if is_nullish(trailing) else trailing
        eol = spec.get("eol", ABSENT)
        eol = "\n" if is_nullish(eol) else js_to_string(eol)
        text = eol.join("" if is_nullish(x) else js_to_string(x) for x in lines)
        if truthy(trailing) and len(lines) > 0:
            text += eol
        return (bom + text).encode("utf-8", "surrogatepass")
    if isinstance(spec.get("text"), str):
        return (bom + spec["text"]).encode("utf-8", "surrogatepass")
    if isinstance(spec.get("base64"), str):
        return node_base64(spec["base64"])
    if isinstance(spec.get("fixture"), str):
        return _read_bytes(os.path.join(base_dir, spec["fixture"]))
    raise OpError("file spec needs one of: lines, text, base64, fixture")


def _mkdir_p(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise node_error("EEXIST", "mkdir", path) from None
    except OSError as e:
        raise from_oserror(e, "mkdir", path) from None


def write_bytes(path: str, data: bytes, append: bool = False) -> None:
    try:
        with open(path, "ab" if append else "wb") as f:
            f.write(data)
    except OSError as e:
        raise from_oserror(e, "open", path) from None


def write_file_spec(abs_path: str, spec: Any, base_dir: str) -> None:
    """run.mjs ``writeFileSpec``: parents created, then a directory or the spec's bytes."""
    _mkdir_p(os.path.dirname(abs_path.rstrip("/")) or "/")
    if isinstance(spec, Mapping) and spec.get("dir") is True:
        _mkdir_p(abs_path)
    else:
        write_bytes(abs_path, file_spec_bytes(spec, base_dir))
    mtime = spec.get("mtimeMs") if isinstance(spec, Mapping) else None
    if isinstance(mtime, (int, float)) and not isinstance(mtime, bool):
        set_times(abs_path, js_date_value(mtime))


def set_times(path: str, time_value_ms: float) -> None:
    """``fs.utimesSync(path, date, date)`` for ``date = new Date(time_value_ms)``.

    Node passes seconds as a double to libuv, which truncates to whole microseconds; the file
    gets exactly that time, so a later stat shows what pi would see.
    """
    if math.isnan(time_value_ms):
        raise node_error("EINVAL", "utime", path)
    t = time_value_ms / 1000
    sec = int(t)  # C double -> time_t truncates toward zero
    nsec = int((t - sec) * 1e9)
    nsec -= int(math.fmod(nsec, 1000))
    if nsec < 0:
        nsec += 1_000_000_000
        sec -= 1
    ns = sec * 1_000_000_000 + nsec
    try:
        os.utime(path, ns=(ns, ns))
    except OSError as e:
        raise from_oserror(e, "utime", path) from None


def remove_file(path: str) -> None:
    """``fs.rmSync(path, {force: false, recursive: false})``."""
    try:
        st = os.lstat(path)
    except OSError as e:
        raise from_oserror(e, "lstat", path) from None
    if stat.S_ISDIR(st.st_mode):
        raise NodeFsError(
            f"Path is a directory: rm returned EISDIR (is a directory) {path}", "ERR_FS_EISDIR", "SystemError"
        )
    try:
        os.unlink(path)
    except OSError as e:
        raise from_oserror(e, "rm", path) from None


def list_dir(path: str) -> list[str]:
    try:
        names = os.listdir(path)
    except OSError as e:
        raise from_oserror(e, "scandir", path) from None
    return raw_sort([display_name(n) for n in names])


# ---------------------------------------------------------------------------
# Dumps and snapshots
# ---------------------------------------------------------------------------


def dump_file(abs_path: str, parsed: bool = True, slice_bounds: Any = ABSENT) -> dict[str, Any]:
    """run.mjs ``dumpFile``: the file as lines, each with its JSON.parse result."""
    if not os.path.exists(abs_path):
        return {"exists": False}
    if os.path.isdir(abs_path):
        return {"exists": True, "directory": True}
    text = _read_bytes(abs_path).decode("utf-8", "replace")
    trailing_newline = text.endswith("\n")
    body = text[:-1] if trailing_newline else text
    raw_lines = [] if text == "" else body.split("\n")
    selected = js_slice(raw_lines, list(slice_bounds)) if is_array(slice_bounds) else raw_lines
    lines: list[dict[str, Any]] = []
    for raw in selected:
        if not parsed:
            lines.append({"raw": raw})
            continue
        try:
            lines.append({"raw": raw, "json": js_loads(raw)})
        except ValueError:
            lines.append({"raw": raw, "invalid": True})
    return {"exists": True, "lineCount": len(raw_lines), "trailingNewline": trailing_newline, "lines": lines}


class TreeSnapshot:
    """Regular files (relative path -> sha256 and real path) and directories under a root.

    Symlinks are neither followed nor listed (Node's Dirent types do not follow them)."""

    def __init__(self, root: str):
        self.files: dict[str, str] = {}
        self.paths: dict[str, str] = {}
        self.dirs: set[str] = set()
        self._walk(root, "")

    def _walk(self, abs_dir: str, rel: str) -> None:
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            return
        for e in entries:
            r = f"{rel}/{display_name(e.name)}" if rel else display_name(e.name)
            if e.is_dir(follow_symlinks=False):
                self.dirs.add(r)
                self._walk(e.path, r)
            elif e.is_file(follow_symlinks=False):
                try:
                    with open(e.path, "rb") as f:
                        self.files[r] = hashlib.sha256(f.read()).hexdigest()
                    self.paths[r] = e.path
                except OSError:
                    continue


def changed_files(before: TreeSnapshot, after: TreeSnapshot, mode: Any, parsed: bool) -> list[dict[str, Any]]:
    """``final.files``: created/modified/deleted (and with mode "all" unchanged) files."""
    out = []
    for rel in raw_sort(list(set(before.files) | set(after.files))):
        if rel not in after.files:
            status = "deleted"
        elif rel not in before.files:
            status = "created"
        elif before.files[rel] != after.files[rel]:
            status = "modified"
        else:
            status = "unchanged"
        if mode == "changed" and status == "unchanged":
            continue
        item: dict[str, Any] = {"path": rel, "status": status}
        if status != "deleted":
            item.update(dump_file(after.paths[rel], parsed=parsed))
            item.pop("exists", None)
        out.append(item)
    return out
