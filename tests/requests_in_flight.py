"""A stand-in for the connection's ``quiet_seconds`` in tests of work that waits for quiet
(server/quiet_jobs.py): requests begun and answered by the test."""

from __future__ import annotations

import threading
import time


class RequestsInFlight:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._last_answered = time.monotonic()

    def begin(self) -> None:
        with self._lock:
            self._in_flight += 1

    def answer(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._last_answered = time.monotonic()

    def quiet_seconds(self) -> float:
        with self._lock:
            return 0.0 if self._in_flight else time.monotonic() - self._last_answered
