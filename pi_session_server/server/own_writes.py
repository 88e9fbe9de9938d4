"""The bytes this server's own sessions wrote to a file, so that none of them is told "another
process" wrote what another handle of this server wrote.

Two handles on one file (``pi/open`` twice) each keep their own view: an append through one makes
the file longer than the other knows, and the other's next append finds those bytes (a
``ForeignWrite`` of the library). Writes of the server to one file run one at a time under the
file's lock (:meth:`Registry.file_lock`): around each write of a session that another slot also
holds, the file's size is taken before and after, and a run of writes that follow one another is
kept as one range. A foreign write a session reports whose bytes all lie in that range was ours,
and is not sent as ``pi/foreignWriter`` (the session's next refresh takes them in as any other
append). Writes on a file nobody else holds cost nothing: no other view can take them for foreign.
"""

from __future__ import annotations

import os
import threading

import msgspec

from pi_session_server.session.manager import ForeignWrite


class _Run(msgspec.Struct, frozen=True):
    identity: tuple[int, int]  # the file's (st_dev, st_ino)
    start: int
    end: int


class OwnWrites:
    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    def before(self, real_path: str, shared: bool) -> os.stat_result | None:
        """The file's stat before a write (under its lock) when another slot holds it, else None
        (and what was kept of it is forgotten: no other view is left to mistake it)."""
        if not shared:
            with self._lock:
                self._runs.pop(real_path, None)
            return None
        try:
            return os.stat(real_path)
        except OSError:
            return None

    def after(self, real_path: str, before: os.stat_result | None) -> None:
        """Keep the bytes the write added (under the file's lock, after the write)."""
        if before is None:
            return
        try:
            st = os.stat(real_path)
        except OSError:
            st = None
        with self._lock:
            run = self._runs.pop(real_path, None)
            identity = (before.st_dev, before.st_ino)
            if st is None or (st.st_dev, st.st_ino) != identity or st.st_size < before.st_size:
                return  # replaced or cut: the runs kept are of another file
            if run is not None and run.identity == identity and run.end == before.st_size:
                self._runs[real_path] = _Run(identity, run.start, st.st_size)
            else:
                self._runs[real_path] = _Run(identity, before.st_size, st.st_size)

    def wrote(self, real_path: str, before: os.stat_result | None, event: ForeignWrite) -> bool:
        """Did this server write every byte ``event`` (of the write :meth:`before` looked before)
        reports as another process's?"""
        if before is None:
            return False
        with self._lock:
            run = self._runs.get(real_path)
        return (
            run is not None
            and run.identity == (before.st_dev, before.st_ino)
            and run.start <= event.expected_size < event.found_size == run.end
        )
