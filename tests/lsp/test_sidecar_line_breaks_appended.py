"""pi/getLineBreaks on a session file another program (pi) appends to while a client (VS Code)
asks at each move of its cursor: after an append, only the bytes appended are read, and a lone
"\\r" that ended the file is the first half of a CRLF once a "\\n" was appended.

The server runs in-process so that the test counts the bytes its searches read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess
from lone_cr_reads import counted_searches

from pi_session_server.session import cache_dir


def _with_lone_cr(line: str) -> bytes:
    return line.replace('"id"', '\r"id"', 1).encode()


def test_line_breaks_asked_after_an_append_read_only_the_bytes_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    written = S.header().encode() + b"\n" + _with_lone_cr(S.user("a", None)) + b"\n"
    written += S.user("b", "a").encode() + b"\r"  # (its last byte: lone while nothing follows it)
    path.write_bytes(written)
    bytes_read = counted_searches(monkeypatch)
    server = InProcess()
    try:

        def line_breaks() -> Any:
            reply = server.request("pi/getLineBreaks", {"uri": path.as_uri()})
            return reply["result"]["loneCarriageReturns"]

        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 2, "count": 1}]
        assert bytes_read == [len(written)]
        appended = b"\n" + _with_lone_cr(S.user("c", "b")) + b"\n"  # ("\r\n": line 2 ends in a CRLF)
        with path.open("ab") as file:
            file.write(appended)
        # (the file's last change long past from now on: what was found is given again while the file
        # looks the same; the search before, of a file just written, still serves for the append)
        monkeypatch.setattr(cache_dir, "RACY_NS", 0)
        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 3, "count": 1}]
        assert bytes_read == [len(written), len(appended)]
        assert line_breaks() == [{"line": 1, "count": 1}, {"line": 3, "count": 1}]
        assert bytes_read == [len(written), len(appended)]  # unchanged: not read again
    finally:
        server.close()
