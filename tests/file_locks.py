"""Who waits for a file's lock, as the system shows it (``/proc/locks``, Linux): a test that holds
a session file's ``flock`` knows without a timer when a write of the server waits for it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

PROC_LOCKS = Path("/proc/locks")
#: for a test that waits for a lock to be waited for
NEEDS_PROC_LOCKS = pytest.mark.skipif(
    not PROC_LOCKS.exists(), reason="no /proc/locks to see the server wait for the lock"
)


def a_process_waits_for_the_lock_of(path: Path | str) -> bool:
    """Whether some process waits for the flock of ``path`` (``/proc/locks`` lists its waiters with
    ``->``, the file as MAJOR:MINOR:INODE)."""
    st = os.stat(path)
    file = f" {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    return any(" -> " in line and file in line for line in PROC_LOCKS.read_text().splitlines())


def until_a_process_waits_for_the_lock_of(path: Path | str, timeout: float = 60) -> None:
    """Until some process waits for the flock of ``path`` (from a test that is not async)."""
    deadline = time.monotonic() + timeout
    while not a_process_waits_for_the_lock_of(path):
        assert time.monotonic() < deadline, f"nobody waited for the lock of {path}"
        time.sleep(0.01)
