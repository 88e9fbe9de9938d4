"""The analysis of documents the editor closed a moment ago, kept for their reopening.

Neovim reloads a file changed on disk (``:checktime``, ``autoread``) as ``didClose`` then
``didOpen`` of the new text: while pi appends turns to a session open in the editor, every append
would analyse the whole session again. A closed document's finished analysis is kept a few seconds
(:data:`KEEP_SECONDS`, at most :data:`KEEP_COUNT` documents, none while the system runs short of
memory); the document reopened with the same text and lines appended continues from it, as an edit
at its end would (see ``LanguageDocuments._reopened``).

A kept analysis is freed by a worker (the job that takes it, or the job that expires it): freeing a
big document's objects is long work that must not hold the event loop.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from pi_session_server.analysis.document import SessionDocument

from ..analysis.lone_cr import LoneCarriageReturns

#: closed documents kept at most (the oldest goes first)
KEEP_COUNT = 2
#: seconds a closed document is kept (an editor's reload reopens it at once)
KEEP_SECONDS = 15.0
#: bytes of memory the system must still have available for a closed document to be kept
KEEP_MEMORY_FLOOR = 1 << 30

_MEMINFO = "/proc/meminfo"


@dataclass(eq=False)
class ClosedDocument:
    """What a reopening continues from: the analysis and where the editor's lines break in it."""

    doc: SessionDocument
    lone_cr: LoneCarriageReturns
    closed_at: float


def available_memory() -> int | None:
    """Bytes of memory the system can still give without swapping (Linux's ``MemAvailable``), or
    None where that is not known."""
    try:
        with open(_MEMINFO, "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # (in kB)
    except (OSError, ValueError, IndexError):
        return None
    return None


class ClosedDocuments:
    """The closed documents kept, by URI; used from worker threads (a lock keeps it whole)."""

    def __init__(
        self,
        count: int = KEEP_COUNT,
        seconds: float = KEEP_SECONDS,
        memory_floor: int = KEEP_MEMORY_FLOOR,
        memory: Callable[[], int | None] = available_memory,
    ) -> None:
        self.count = count
        self.seconds = seconds
        self.memory_floor = memory_floor
        self._memory = memory
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, ClosedDocument] = OrderedDict()

    def keep(self, uri: str, doc: SessionDocument, lone_cr: LoneCarriageReturns) -> bool:
        """On a worker: keep the analysis of ``uri`` just closed (replacing an older one of it);
        False when none is kept (none are, or the system is short of memory: every one kept is
        dropped then)."""
        available = self._memory() if self.count > 0 else None
        short = available is not None and available < self.memory_floor
        with self._lock:  # (what is dropped is freed on return, outside the lock)
            dropped = [self._kept.pop(uri)] if uri in self._kept else []
            if short or self.count <= 0:
                dropped.extend(self._kept.values())
                self._kept.clear()
                return False
            self._kept[uri] = ClosedDocument(doc, lone_cr, time.monotonic())
            while len(self._kept) > self.count:
                dropped.append(self._kept.popitem(last=False)[1])
        return True

    def take(self, uri: str) -> ClosedDocument | None:
        """On a worker: the kept analysis of ``uri``, no longer kept (None if there is none, or it
        is older than :attr:`seconds`)."""
        with self._lock:
            found = self._kept.pop(uri, None)
        if found is None or time.monotonic() - found.closed_at > self.seconds:
            return None
        return found

    def expire(self) -> None:
        """On a worker: drop what was kept longer than :attr:`seconds`."""
        now = time.monotonic()
        with self._lock:
            old = [uri for uri, kept in self._kept.items() if now - kept.closed_at > self.seconds]
            dropped = [self._kept.pop(uri) for uri in old]
        dropped.clear()  # (freed outside the lock)

    def __contains__(self, uri: str) -> bool:
        with self._lock:
            return uri in self._kept
