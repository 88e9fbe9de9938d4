"""A version 1 session as an older pi wrote it, and what other programs do to one a view holds
lazily: an older pi appends to it, pi opens it writable (and rewrites it in version 3, in place),
a shell empties it or writes another session over it, an editor saves it in place, another file is
moved over it, it is deleted. Shared by the library's tests (tests/reliability) and the sidecar's
(tests/lsp)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import reference_locations
from other_programs import rename_over, rewrite_by_shell, save_in_place

HEADER = {"type": "session", "id": "v1-held", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}

# a line pi skips (blank): an editor making it an entry of the same length moves every later
# entry's position, so each gets another id
BLANK = "  "


def line(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def message(n: int, role: str = "user") -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "content": f"text {n:03}", "timestamp": n}
    if role == "assistant":
        body.update(content=[{"type": "text", "text": f"answer {n:03}"}], provider="p", model="m")
    if role == "hookMessage":
        body.update(customType="hook", display=True)
    return {"type": "message", "timestamp": f"2025-01-01T00:{n // 60:02}:{n % 60:02}.000Z", "message": body}


def version_1_session(count: int = 24, header: dict[str, Any] = HEADER) -> bytes:
    """Messages (hooks' among them), a compaction keeping an earlier entry by its position, and a
    blank line among them: a file pi's own migration takes."""
    lines = [line(header)]
    for n in range(1, count + 1):
        if n == count // 2:
            lines.append(BLANK + "\n")
        if n % 8 == 0:
            compaction = {"type": "compaction", "timestamp": message(n)["timestamp"], "summary": f"s{n}"}
            lines.append(line({**compaction, "firstKeptEntryIndex": n - 3, "tokensBefore": 9}))
        else:
            lines.append(line(message(n, ("user", "assistant", "hookMessage")[n % 3])))
    return "".join(lines).encode()


PI_OPENS = """
import { pathToFileURL } from "node:url";
const { SessionManager } = await import(pathToFileURL(process.argv[1]).href);
SessionManager.open(process.argv[2], process.argv[3]);
"""


def pi_is_here() -> bool:
    return shutil.which("node") is not None and reference_locations.session_manager_module().is_file()


def pi_opens(path: Path) -> None:
    """pi opens ``path`` writable: a version 1 file is migrated, rewritten in place in version 3."""
    module = str(reference_locations.session_manager_module())
    sessions = path.parent / "pi-sessions"
    command = ["node", "--input-type=module", "-e", PI_OPENS, module, str(path), str(sessions)]
    subprocess.run(command, check=True, capture_output=True)


def migrated_by_pi(data: bytes, scratch: Path) -> bytes:
    """``data`` as pi's writable open leaves it (migrated in a copy under ``scratch``)."""
    copy = scratch / "pi-copy.jsonl"
    copy.write_bytes(data)
    pi_opens(copy)
    return copy.read_bytes()


def same_size_edit(data: bytes) -> bytes:
    """An editor's change that keeps the file's size and its last bytes: the blank line made an
    entry (every later entry's id changes) and a message's text changed."""
    edited = data.replace(b"\n" + BLANK.encode() + b"\n", b"\n{}\n", 1).replace(b"text 012", b"TEXT 012", 1)
    assert len(edited) == len(data) and edited != data
    return edited


def save_keeping_times(path: Path, data: bytes) -> None:
    """An editor saving in place that sets the modification time back (as within one tick of a
    coarse clock): only the change time tells."""
    before = os.stat(path)
    save_in_place(path, data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


def delete_and_write(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def pi_renames_its_migration_over(path: Path) -> None:
    """pi's version 3 of the file, written beside it and renamed over it."""
    rename_over(path, migrated_by_pi(path.read_bytes(), path.parent))


OTHER_SESSION = version_1_session(30, {**HEADER, "id": "another", "cwd": "/elsewhere"})

# What other programs do to the file at a path (the name says what)
CHANGES: dict[str, Callable[[Path], None]] = {
    "older pi appends": lambda path: append(path, line(message(99)).encode()),
    "pi rewrites it in place": pi_opens,
    "pi's version 3 renamed over it": pi_renames_its_migration_over,
    "shell empties it": lambda path: rewrite_by_shell(path, b""),
    "shell writes another session": lambda path: rewrite_by_shell(path, OTHER_SESSION),
    "editor saves in place, same size and time": lambda path: save_keeping_times(
        path, same_size_edit(path.read_bytes())
    ),
    "another session moved over it": lambda path: rename_over(path, OTHER_SESSION),
    "deleted": lambda path: path.unlink(),
    "deleted, then another session written": lambda path: delete_and_write(path, OTHER_SESSION),
}

NEEDS_PI = {"pi rewrites it in place", "pi's version 3 renamed over it"}


def told(name: str) -> str:
    """The kind of change a refresh tells after the change ``name``: the file read again, but for
    an emptied one (the session stays as it was until it gets a header) and a deleted one."""
    return {"shell empties it": "rewriting", "deleted": "deleted"}.get(name, "reloaded")
