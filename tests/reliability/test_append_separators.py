"""Our appends and opens next to pi's writes leave no blank lines (issue 20, finding 15).

pi appends each entry with one ``write()`` of a whole line; a line of many pages grows the file
page by page while it is copied in. Our appender puts a ``"\\n"`` before its line when the file
seems to end mid-line (D10, for a writer that died mid-line), and an open finishes such a line as
pi's load does. A look that catches pi's line halfway through its ``write()`` used to leave that
``"\\n"`` after pi's finished line: a blank line.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from reliability_helpers import HERE, LineCollector, check_session_file, new_session_file

from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(300)


def _pi_appending(
    path: str, oracle_module: Path, count: int, size: int
) -> tuple[subprocess.Popen, LineCollector]:
    pi = subprocess.Popen(
        [
            "node",
            str(HERE / "children" / "pi_appender.mjs"),
            str(oracle_module),
            path,
            str(count),
            "0",
            str(size),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    output = LineCollector(pi.stdout)
    assert output.wait_ready(), pi.stderr.read().decode() if pi.stderr else ""
    return pi, output


def _blank_lines(path: str) -> list[int]:
    lines = Path(path).read_bytes().split(b"\n")[:-1]
    return [n for n, line in enumerate(lines) if not line.strip()]


def test_appends_next_to_pis_big_lines_leave_no_blank_line(tmp_path: Path, oracle_module: Path):
    path = new_session_file(tmp_path)
    pi, output = _pi_appending(path, oracle_module, 300, 100_000)
    manager = SessionManager.open(path)
    ours = []
    while pi.poll() is None:
        ours.append(manager.append_message({"role": "user", "content": "ours", "timestamp": 1}))
    theirs = output.finish(timeout=60)
    assert pi.wait(60) == 0, pi.stderr.read().decode() if pi.stderr else ""
    manager.close()
    assert len(theirs) == 300
    blank = _blank_lines(path)
    assert not blank, f"{len(blank)} blank lines ({len(ours)} appends of ours)"
    check_session_file(path, [*ours, *theirs])


def _write_lines_as_pi_does(path: str, count: int, size: int) -> None:
    """Append ``count`` lines of ``size`` characters as pi does: one write() of each whole line, no
    lock. Run on a thread: it holds the GIL while it makes a line and lets go of it only inside the
    write(), so our opens run while a write() is under way (next to pi that happens now and then)."""
    for n in range(count):
        entry = {
            "type": "message",
            "id": f"w{n:07d}",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "x" * size, "timestamp": 1},
        }
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)


def test_opens_next_to_big_line_writes_leave_no_blank_line(tmp_path: Path):
    """Each open reads the file while lines of megabytes are written: many catch one halfway and
    finish it, as pi's load does. That write() is done by the time the newline lands."""
    path = new_session_file(tmp_path)
    writer = threading.Thread(target=_write_lines_as_pi_does, args=(path, 100, 3_000_000))
    writer.start()
    opens = 0
    while writer.is_alive():
        SessionManager.open(path, index=str(tmp_path / "index")).close()
        opens += 1
    writer.join()
    blank = _blank_lines(path)
    assert not blank, f"{len(blank)} blank lines ({opens} opens)"
    check_session_file(path, [f"w{n:07d}" for n in range(100)])
