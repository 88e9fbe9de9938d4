"""Pseudo-terminals: a test's stand-in for the user's terminal, and what a command showed on one."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import termios
import unicodedata


def open_terminal(columns: int, rows: int = 24) -> tuple[int, int]:
    """A pseudo-terminal ``columns`` wide: its leader side (read what was shown) and its follower
    side (a command's stdout or stderr)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return leader, follower


def read_until_closed(leader: int) -> bytes:
    """Everything written to the terminal whose leader side is ``leader`` until the command's side
    closes (Linux then fails the read with EIO); ``leader`` is closed."""
    shown = b""
    try:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not data:
                break
            shown += data
    finally:
        os.close(leader)
    return shown


def columns_of(line: str) -> int:
    """How many columns of a terminal ``line`` takes: two for a wide character (CJK), none for a
    combining mark, one for any other (told apart from the command's own count)."""
    return sum(
        2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in line
    )
