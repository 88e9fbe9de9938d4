"""Two of our processes append to one session: one waits for the other's ``flock``. A ``write()``
may write less than it was given (a multi-MB line, a signal), and the rest of the line then follows
in a second ``write()``; without the lock another process's line would land between the two parts.

The first process is stopped between the two parts of its line, holding the lock, and goes on when
told; the second appends meanwhile.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from file_locks import NEEDS_PROC_LOCKS, a_process_waits_for_the_lock_of
from reliability_helpers import USER, check_session_file, new_session_file

from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(120)
# our appender, its line's write() cut in two: it says when the first part is written, and writes
# the rest when told (what a short write and the loop that finishes it do, with a pause between)
APPENDER_WRITING_IN_TWO_PARTS = """
import sys
from pi_session_server.session import SessionManager, storage

write_all = storage.write_all

def in_two_parts(fd, data):
    half = len(data) // 2
    write_all(fd, data[:half])
    print("half", flush=True)
    sys.stdin.readline()
    write_all(fd, data[half:])

storage.write_all = in_two_parts
manager = SessionManager.open(sys.argv[1])
print(manager.append_message({"role": "user", "content": "x" * 100000, "timestamp": 1}), flush=True)
manager.close()
"""


@NEEDS_PROC_LOCKS
def test_an_append_waits_for_the_lock_of_another_of_our_processes_writing_its_line(tmp_path: Path) -> None:
    path = new_session_file(tmp_path)
    second = SessionManager.open(path)  # (an open takes the lock too: it comes first)
    first = subprocess.Popen(
        [sys.executable, "-c", APPENDER_WRITING_IN_TWO_PARTS, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdin is not None and first.stdout is not None
    try:
        assert first.stdout.readline() == "half\n"
        appended: list[str] = []
        appending = threading.Thread(target=lambda: appended.append(second.append_message(USER)))
        appending.start()
        # until the second process waits for the lock, or (without one) has written
        while appending.is_alive() and not a_process_waits_for_the_lock_of(path):
            appending.join(0.01)
        assert appending.is_alive(), "an append did not wait for the lock of a line being written"
        first.stdin.write("go\n")
        first.stdin.flush()
        first_id = first.stdout.readline().strip()
        assert first.wait(60) == 0
        appending.join(60)
        second.close()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    integrity = check_session_file(path, [first_id, *appended])
    assert integrity.bad_lines == [], integrity
