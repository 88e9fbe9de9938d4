"""The outline and inlay hints of a session with one huge line (a base64 screenshot) read that
line no more than they must: once, and the same results as for the text held in memory."""

from __future__ import annotations

import base64
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import builders as S
import msgspec

from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.hints import inlay_hints
from pi_session_server.analysis.line_bytes import FileBytes
from pi_session_server.analysis.symbols import document_symbols
from pi_session_server.server.language_answers import DocumentAnswers
from pi_session_server.server.language_conversions import LspConversions
from pi_session_server.server.language_document_state import DocState


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


@contextmanager
def counting_reads() -> Iterator[Counter[int]]:
    """How many times each line of a file is read again (by its place) within the block."""
    reads: Counter[int] = Counter()
    read = FileBytes.read

    def counted(source: FileBytes, place: int) -> bytes:
        reads[place] += 1
        return read(source, place)

    with patch.object(FileBytes, "read", counted):
        yield reads


def test_the_outline_and_hints_of_a_file_read_each_line_once_and_equal_those_of_its_text(
    tmp_path: Path,
) -> None:
    data = _session_with_a_screenshot()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    in_memory = SessionDocument(data)
    on_disk = SessionDocument.from_file(str(path))
    with counting_reads() as reads:
        symbols = document_symbols(on_disk)
    assert symbols == document_symbols(in_memory)
    long_line = max(on_disk.lines, key=lambda info: info.byte_length).line
    assert reads[long_line] == 1
    assert max(reads.values()) == 1

    with counting_reads() as reads:
        hints = inlay_hints(on_disk)
    assert hints == inlay_hints(in_memory)
    ends = {h.line: h.offset for h in hints}
    assert ends[long_line] == on_disk.lines[long_line].byte_length - 3
    assert ends[long_line + 1] == on_disk.lines[long_line + 1].byte_length - 100
    assert reads[long_line] == 0  # where a hint goes is read from the line's end
    first_pass = SessionDocument(data, quick=True)  # its lines read from the text until finished
    assert first_pass.provisional
    assert inlay_hints(first_pass) == hints


def test_the_outline_request_of_a_file_reads_each_line_once(tmp_path: Path) -> None:
    """The outline's ranges are placed from the bytes the analysis read: a file the editor did not
    send is not read a second time for them, and they are those of the text held in memory."""
    data = _session_with_a_screenshot()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    server: Any = SimpleNamespace(workspace=SimpleNamespace(position_encoding="utf-16"))
    features = DocumentAnswers(LspConversions(server))
    no_queue: Any = None  # the request runs here, not on a document's queue
    on_disk = DocState("file:///s.jsonl", str(path), no_queue, doc=SessionDocument.from_file(str(path)))
    in_memory = DocState("untitled:s", None, no_queue, doc=SessionDocument(data))
    with counting_reads() as reads:
        outline = msgspec.json.decode(features.document_symbols(on_disk, None))  # (the JSON it is sent as)
    assert outline == msgspec.json.decode(features.document_symbols(in_memory, None))
    assert reads and max(reads.values()) == 1
    long_line = max(on_disk.opened().lines, key=lambda info: info.byte_length)
    shot = next(s for s in outline if s["range"]["start"]["line"] == long_line.line)
    # the whole line, its end in UTF-16 units (the emoji is two)
    assert shot["range"]["end"]["character"] == len(long_line.raw.decode().encode("utf-16-le")) // 2
