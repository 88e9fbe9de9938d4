"""Pausing the cyclic garbage collector while building many small objects.

Loading a session creates hundreds of thousands of entry objects that hold no reference cycles;
CPython's generational collector would otherwise traverse the growing heap again and again
(quadratic in practice: seconds for a 200,000-entry file).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

# The collector is one for the process: loads on several threads at once (the server's workers)
# share one pause, which ends when the last of them does.
_lock = threading.Lock()
_pausing = 0
_was_enabled = False


def _fresh_lock_in_child() -> None:
    """A process forked while another thread held the lock gets one free."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    global _pausing, _was_enabled
    with _lock:
        if _pausing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausing += 1
    try:
        yield
    finally:
        with _lock:
            _pausing -= 1
            if _pausing == 0 and _was_enabled:
                gc.enable()


def enabled_outside_pauses() -> bool:
    """Whether the collector is on as the process set it: while pauses run on other threads, what
    the first of them found (and puts back when the last ends)."""
    with _lock:
        return _was_enabled if _pausing else gc.isenabled()


def set_enabled_outside_pauses(enabled: bool) -> None:
    """Turn the collector on or off as the process's setting: at once, or, while pauses run, when
    the last of them ends."""
    global _was_enabled
    with _lock:
        if _pausing:
            _was_enabled = enabled
        elif enabled:
            gc.enable()
        else:
            gc.disable()
