"""A file descriptor held by the object that owns it (the session's appender, a file of the cache
directory): closed once, by :meth:`OwnedDescriptor.close` or with the object when it is collected
unclosed (a job given up, or an error, leaves no file open).

Imports nothing of the library: cache_dir builds on it, and a command that only prints what it
kept imports cache_dir alone."""

from __future__ import annotations

import contextlib
import os


class OwnedDescriptor:
    """``fd``: the descriptor, -1 when there is none (not opened yet, or closed)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int = -1) -> None:
        self.fd = fd

    def close(self) -> None:
        """Close the descriptor, once: its number may be given to another file right after, which a
        second close must leave alone. A failed close is no error (the descriptor is gone)."""
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()
