"""SessionDocument.from_file (what `pi-session check` reads files with) gives the very document
SessionDocument(bytes) gives, whose lines keep their place in the file instead of their bytes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from builders import generate_session

from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.line_bytes import FileLineInfo
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.commands.check_analysis import _columns
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.format.scan import CHUNK_SIZE

ROOT = Path(__file__).resolve().parents[2]
DAMAGED = sorted((ROOT / "tests" / "conformance" / "vectors" / "damaged").glob("*.scenario.json"))[:40]
HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
ENTRY = (
    b'{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
    b'"message":{"role":"user","content":"%s","timestamp":1}}'
)

ODD_FILES = {
    "empty": b"",
    "one newline": b"\n",
    "blank lines": b"\n\n \n",
    "header without newline": HEADER,
    "bom": b"\xef\xbb\xbf" + HEADER + b"\n" + ENTRY % b"x" + b"\n",
    "bom only": b"\xef\xbb\xbf",
    "crlf and a cut line": HEADER + b"\r\n" + (ENTRY % b"x")[:50] + b"\r\n",
    "invalid utf-8": HEADER + b"\n" + ENTRY % b"caf\xe9 \xff" + b"\n",
    "emoji first and a lone surrogate": HEADER + b"\n\xf0\x9f\x98\x80 no\n" + ENTRY % b"\\ud800",
    "a line longer than a read chunk": HEADER
    + b"\n"
    + ENTRY % (b"y" * (2 * CHUNK_SIZE + 7))
    + b"\n{broken\n",
    "no header": ENTRY % b"x" + b"\n",
}


def _damaged(path: Path) -> bytes:
    spec = json.loads(path.read_text(encoding="utf-8"))["files"]["sessions/s.jsonl"]
    return base64.b64decode(spec["base64"])


CASES = {
    **ODD_FILES,
    "generated": generate_session(3_000, seed=11),
    **{p.name.removesuffix(".scenario.json"): _damaged(p) for p in DAMAGED},
}


def _facts(doc: SessionDocument) -> list[tuple]:
    return [
        (
            d.line,
            d.start,
            d.end,
            d.code,
            d.severity,
            d.message,
            _columns(doc, d),
            [(r.line, r.message) for r in d.related],
        )
        for d in document_diagnostics(doc)
    ]


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_document_as_from_bytes(tmp_path: Path, name: str) -> None:
    data = CASES[name]
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    expected = SessionDocument(data)
    found = SessionDocument.from_file(str(path))
    assert [info.raw for info in found.lines] == [info.raw for info in expected.lines]
    assert [(i.kind, i.key, i.pkey, repr(i.problems)) for i in found.lines] == [
        (i.kind, i.key, i.pkey, repr(i.problems)) for i in expected.lines
    ]
    assert _facts(found) == _facts(expected)
    assert found.errors == expected.errors


def test_lines_hold_their_place_not_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    big = ENTRY % (b"z" * 100_000)
    path.write_bytes(HEADER + b"\n" + big + b"\n")
    doc = SessionDocument.from_file(str(path))
    header, entry, last = doc.lines
    assert type(header.raw) is bytes and not isinstance(header, FileLineInfo)  # small: kept
    assert isinstance(entry, FileLineInfo)
    stored = FileLineInfo.__mro__[1].__dict__["raw"].__get__(entry, FileLineInfo.__mro__[1])
    assert not isinstance(stored, bytes)  # a place in the file
    assert entry.raw == big  # read again when asked
    assert last.raw == b""


def test_a_line_of_a_file_keeps_its_number_as_its_place_and_reads_its_bytes_after_edits_above(
    tmp_path: Path,
) -> None:
    entries = [ENTRY.replace(b'"u1"', b'"u%d"' % n) % (b"x" * n) for n in range(1, 5)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER + b"\n" + b"\n".join(entries))  # the last one without "\n"
    doc = SessionDocument.from_file(str(path))
    slot = LineInfo.__dict__["raw"]
    for n, info in enumerate(doc.lines[1:], 1):
        assert isinstance(info, FileLineInfo) and slot.__get__(info, LineInfo) is info.line == n
    assert [i.raw for i in doc.lines] == [HEADER, *entries]
    assert [i.byte_length for i in doc.lines] == [len(HEADER), *map(len, entries)]
    doc.apply_edit(1, 0, 1, 0, "\n\n")  # two lines above them: numbers move, places do not
    assert [i.raw for i in doc.lines] == [HEADER, b"", b"", *entries]
    assert [i.byte_length for i in doc.lines[3:]] == [len(e) for e in entries]
    assert doc.data() == HEADER + b"\n\n\n" + b"\n".join(entries)


@pytest.mark.parametrize("name", list(CASES))
def test_a_line_of_a_file_reads_its_timestamp_again(tmp_path: Path, name: str) -> None:
    data = CASES[name]
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    found = SessionDocument.from_file(str(path))
    assert [info.timestamp for info in found.lines] == [i.timestamp for i in SessionDocument(data).lines]


def test_a_line_of_a_file_does_not_keep_a_timestamp_it_can_read_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad_time = ENTRY.replace(b"2025-01-01T00:00:01.000Z", b"yesterday")
    path.write_bytes(HEADER + b"\n" + ENTRY % b"x" + b"\n" + bad_time % b"y" + b"\n")
    _, entry, unreadable, _ = SessionDocument.from_file(str(path)).lines
    slot = LineInfo.__dict__["timestamp"]
    with pytest.raises(AttributeError):
        slot.__get__(entry, LineInfo)  # not kept ...
    assert entry.timestamp == "2025-01-01T00:00:01.000Z"  # ... read again
    assert slot.__get__(unreadable, LineInfo) == "yesterday"  # a line with a problem about it keeps it
    assert unreadable.problems


def test_a_timestamp_read_again_from_a_file_rewritten_since_is_absent(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER + b"\n" + ENTRY % b"x" + b"\n")
    entry = SessionDocument.from_file(str(path)).lines[1]
    with path.open("r+b") as f:  # in place, the same size: the line's bytes are no longer JSON
        f.seek(len(HEADER) + 1)
        f.write(b"#" * len(ENTRY % b"x"))
    assert entry.timestamp is ABSENT


def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        SessionDocument.from_file(str(tmp_path / "nope.jsonl"))
    with pytest.raises(OSError):
        SessionDocument.from_file(str(tmp_path))  # a directory
