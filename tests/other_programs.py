"""What other programs do to a session file, for the sidecar model (sidecar_model.py): each writes
new bytes over the file's the way one kind of program does, and a rewrite's new bytes come from
the old ones by one edit drawn once and made alike in both of the model's files."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path


def rewrite_by_shell(path: Path, data: bytes) -> None:
    """``cat backup > FILE``: the file truncated in place, then written."""
    with path.open("wb") as f:
        f.flush()
        os.fsync(f.fileno())  # (the empty file is there to be seen before the write)
        f.write(data)


def save_in_place(path: Path, data: bytes) -> None:
    """An editor saving in place: the same inode, written from the start, then cut to its length
    (a file that is not there any more is made)."""
    with path.open("r+b" if path.exists() else "wb") as f:
        f.write(data)
        f.truncate()


def rename_over(path: Path, data: bytes) -> None:
    """A program writing a new file beside it and renaming it over the session file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


WRITERS: dict[str, Callable[[Path, bytes], None]] = {
    "shell": rewrite_by_shell,
    "editor": save_in_place,
    "rename": rename_over,
}


#: the edits :func:`edited` makes, as often as each is drawn
EDITS = ("same", "drop", "drop", "retext", "cut", "blank", "headerless", "empty")


def draw_edit(rng: random.Random, line_count: int) -> tuple[str, int]:
    """An edit of a file of ``line_count`` lines: what, and the line it is about (from the end)."""
    return rng.choice(EDITS), rng.randrange(1, max(2, min(line_count, 4)))


def edited(data: bytes, edit: tuple[str, int]) -> bytes:
    """``data`` with ``edit`` (from :func:`draw_edit`) made: the same bytes, the last lines
    dropped (never the header), a message's text changed in place, the last line cut short, or an
    empty line put before the last, the header line dropped, or nothing left."""
    how, back = edit
    if how == "empty":
        return b""
    lines = data.split(b"\n")
    ends_whole = lines[-1] == b""
    if ends_whole:
        lines.pop()
    back = min(back, len(lines) - 1)
    if how == "drop" and back > 0:
        lines = lines[:-back]
    elif how == "retext" and back > 0:
        lines[-back] = lines[-back].replace(b'"question', b'"QUESTION').replace(b'"answer', b'"ANSWER')
    elif how == "cut" and back > 0:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        return b"\n".join(lines)
    elif how == "blank" and back > 0:
        lines.insert(len(lines) - 1, b"")
    elif how == "headerless":
        lines = lines[1:]
    return b"\n".join(lines) + (b"\n" if ends_whole else b"")
