"""Our appends next to pi's leave no blank lines (issue 20, finding 15).

pi appends each entry with one ``write()`` of a whole line; a line of many pages grows the file
page by page while it is copied in. Our appender puts a ``"\\n"`` before its line when the file
seems to end mid-line (D10, for a writer that died mid-line). A look that catches pi's line halfway
through its ``write()`` used to leave that ``"\\n"`` after pi's finished line: a blank line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from reliability_helpers import HERE, LineCollector, check_session_file, new_session_file

from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(300)


def test_appends_next_to_pis_big_lines_leave_no_blank_line(tmp_path: Path, oracle_module: Path):
    path = new_session_file(tmp_path)
    pi = subprocess.Popen(
        ["node", str(HERE / "children" / "pi_appender.mjs"), str(oracle_module), path, "300", "0", "100000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    output = LineCollector(pi.stdout)
    assert output.wait_ready(), pi.stderr.read().decode() if pi.stderr else ""
    manager = SessionManager.open(path)
    ours = []
    while pi.poll() is None:
        ours.append(manager.append_message({"role": "user", "content": "ours", "timestamp": 1}))
    theirs = output.finish(timeout=60)
    assert pi.wait(60) == 0, pi.stderr.read().decode() if pi.stderr else ""
    manager.close()
    assert len(theirs) == 300
    lines = Path(path).read_bytes().split(b"\n")[:-1]
    blank = [n for n, line in enumerate(lines) if not line.strip()]
    assert not blank, f"{len(blank)} blank lines among {len(lines)} ({len(ours)} appends of ours)"
    check_session_file(path, [*ours, *theirs])
