"""The outline and inlay hints of a session with one huge line (a base64 screenshot) read that
line no more than they must: once, and the same results as for the text held in memory."""

from __future__ import annotations

import base64
import random
from collections import Counter
from pathlib import Path
from unittest.mock import patch

import builders as S

from pi_session_server.analysis import document as document_module
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.hints import inlay_hints
from pi_session_server.analysis.symbols import document_symbols


def _session_with_a_screenshot() -> bytes:
    lines = S.chat(40)
    shot = base64.b64encode(random.Random(5).randbytes(600_000)).decode()
    parent = "t39z"
    lines.append(S.assistant("shot-call", parent, "", calls=(("c-shot", "screenshot", {}),)))
    lines.append(
        S.tool_result(
            "shot", "shot-call", "c-shot", "a screenshot 😀", "screenshot", images=((shot, "image/png"),)
        )
    )
    lines[-1] += " \t "  # blanks after the JSON, which a hint goes before
    lines.append(S.assistant("after", "shot", "it shows the login page") + " " * 100)
    return ("\n".join(lines) + "\n").encode()


def test_the_outline_and_hints_of_a_file_read_each_line_once_and_equal_those_of_its_text(
    tmp_path: Path,
) -> None:
    data = _session_with_a_screenshot()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    in_memory = SessionDocument(data)
    on_disk = SessionDocument.from_file(str(path))
    reads: Counter[int] = Counter()
    read = document_module._FileBytes.read

    def counted(source: document_module._FileBytes, place: int) -> bytes:
        reads[place] += 1
        return read(source, place)

    with patch.object(document_module._FileBytes, "read", counted):
        symbols = document_symbols(on_disk)
    assert symbols == document_symbols(in_memory)
    long_line = max(on_disk.lines, key=lambda info: info.byte_length).line
    assert reads[long_line] == 1
    assert max(reads.values()) == 1

    reads.clear()
    with patch.object(document_module._FileBytes, "read", counted):
        hints = inlay_hints(on_disk)
    assert hints == inlay_hints(in_memory)
    ends = {h.line: h.offset for h in hints}
    assert ends[long_line] == on_disk.lines[long_line].byte_length - 3
    assert ends[long_line + 1] == on_disk.lines[long_line + 1].byte_length - 100
    assert reads[long_line] == 0  # where a hint goes is read from the line's end
    first_pass = SessionDocument(data, quick=True)  # its lines read from the text until finished
    assert first_pass.provisional
    assert inlay_hints(first_pass) == hints
