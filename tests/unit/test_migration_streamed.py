"""A migration repaired without an editor is streamed: its plan holds no copy of the file's lines
(the new text is made line by line as it is written), a dry run's second round reads it piece by
piece, and what is written is, byte for byte, what pi's migration on open writes. That open holds
an object line's value, not its bytes too."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pi_session_server.analysis import codes
from pi_session_server.analysis.autofix import plan_repairs, spliced
from pi_session_server.analysis.document import SessionDocument, Splice, StreamedData
from pi_session_server.analysis.repairs import migrated_chunks, migrated_text
from pi_session_server.cli import main
from pi_session_server.session.loader import load_exact
from pi_session_server.session.manager import SessionManager

# the conformance kit's sessions written by pi, committed with its vectors
KIT_FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "vectors" / "fixtures"


def _as_version_2(data: bytes) -> bytes:
    """A version 3 session as pi's version 2 held it: the header's version 2, and every other user
    message a hook's (``hookMessage``, the role version 3 calls ``custom``). Its lines are changed
    as text: the other bytes stay as pi wrote them (a line too deep for ``json``, too)."""
    out = []
    users = 0
    for line in data.splitlines(keepends=True):
        if line.startswith(b'{"type":"session"'):
            line = line.replace(b'"version":3', b'"version":2', 1)
        elif b'"message":{"role":"user"' in line:
            users += 1
            if users % 2 == 0:
                hook = b'"message":{"role":"hookMessage","customType":"hook","display":true'
                line = line.replace(b'"message":{"role":"user"', hook, 1)
        out.append(line)
    return b"".join(out)


def _old_sessions() -> list[tuple[str, bytes]]:
    """The kit's sessions pi wrote before version 3, and its version 3 ones made version 2."""
    found = []
    for path in sorted(KIT_FIXTURES.glob("*/*.jsonl")):
        data = path.read_bytes()
        if data.startswith(b'{"type":"session","version":3'):
            data = _as_version_2(data)
        found.append((f"{path.parent.name}/{path.name}", data))
    return found


OLD_SESSIONS = _old_sessions()


def test_the_old_sessions_hold_version_1_and_version_2_files() -> None:
    """(The fixtures are committed with the conformance vectors: the test below never runs empty.)"""
    headers = [data.split(b"\n", 1)[0] for _, data in OLD_SESSIONS]
    assert any(b'"version"' not in header for header in headers)  # version 1: no version
    assert any(b'"version":2' in header for header in headers)


def _version_2(tmp_path: Path) -> Path:
    path = tmp_path / "v2.jsonl"
    lines = [
        {"type": "session", "version": 2, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        *(
            {
                "type": "message",
                "id": f"e{n}",
                "parentId": f"e{n - 1}" if n else None,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "hookMessage", "customType": "h", "content": "x" * n, "display": True},
            }
            for n in range(50)
        ),
    ]
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def test_the_plan_of_a_migration_holds_no_copy_of_the_lines(tmp_path: Path) -> None:
    path = _version_2(tmp_path)
    doc = SessionDocument.from_file(str(path))
    plan = plan_repairs(doc, {codes.OLD_VERSION}, str(path))
    [planned] = plan.applied
    [splice] = planned.splices
    assert isinstance(splice.data, StreamedData)  # made as it is written, not held
    assert (splice.start, splice.end) == (0, path.stat().st_size)  # every line
    with path.open("rb") as file:
        written = b"".join(spliced(file.fileno(), path.stat().st_size, plan.splices()))
    assert written == migrated_text(doc).encode()
    assert b"hookMessage" not in written and written.count(b'"role":"custom"') == 50


def test_a_migration_is_made_in_chunks_of_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_session_server.analysis import repairs

    monkeypatch.setattr(repairs, "_MIGRATED_CHUNK", 100)
    doc = SessionDocument.from_file(str(_version_2(tmp_path)))
    chunks = list(migrated_chunks(doc))
    assert len(chunks) > 10 and all(chunk.endswith(b"\n") for chunk in chunks)
    assert b"".join(chunks) == migrated_text(doc).encode()


@pytest.mark.parametrize("in_file", [True, False], ids=["file", "text"])
@pytest.mark.parametrize("pieces", [1, 2, 7, 1000])
def test_a_streamed_splice_applied_in_memory_is_its_bytes_applied(
    tmp_path: Path, pieces: int, in_file: bool
) -> None:
    """A dry run's next round: a splice's data given in chunks (cut anywhere, a line's bytes in two
    of them) makes the document its bytes would make, and the lines no splice touches are read
    from the file again (their places kept), or from the text an editor gave."""
    path = _version_2(tmp_path)
    data = path.read_bytes()
    starts = [0, *(n + 1 for n, byte in enumerate(data) if byte == ord("\n"))]
    new = b'{"type":"custom","id":"n1","parentId":"e9","customType":"x"}\n{"type":"custom","id":"n2"}'
    start, end = starts[10] + 3, starts[20] + 5  # (inside lines 11 and 21)
    size = -(-len(new) // pieces)
    chunks = [new[i : i + size] for i in range(0, len(new), size)]

    def load() -> SessionDocument:
        return SessionDocument.from_file(str(path)) if in_file else SessionDocument(data)

    by_bytes = load()
    by_bytes.apply_splices([Splice(start, end, new), Splice(starts[30], starts[30] + 1, b"")])
    streamed = load()
    streamed.apply_splices(
        [Splice(start, end, StreamedData(lambda: chunks)), Splice(starts[30], starts[30] + 1, b"")]
    )
    assert [i.raw for i in streamed.lines] == [i.raw for i in by_bytes.lines]
    assert [type(i) for i in streamed.lines] == [type(i) for i in by_bytes.lines]
    assert streamed.data() == data[:start] + new + data[end : starts[30]] + data[starts[30] + 1 :]


@pytest.mark.parametrize(("name", "data"), OLD_SESSIONS, ids=[name for name, _ in OLD_SESSIONS])
def test_a_migration_written_by_repair_is_what_an_open_writes(
    name: str, data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "session.jsonl"
    session.write_bytes(data)
    opened = tmp_path / "opened.jsonl"
    shutil.copyfile(session, opened)
    SessionManager.open(str(opened), index=False)  # pi's open migrates and rewrites the file
    out = tmp_path / "out.jsonl"
    main(["repair", "--codes", codes.OLD_VERSION, "-o", str(out), str(session)])
    in_place = tmp_path / "in-place.jsonl"
    shutil.copyfile(session, in_place)
    main(["repair", "--codes", codes.OLD_VERSION, "--in-place", "--no-backup", str(in_place)])
    capsys.readouterr()
    assert out.read_bytes() == opened.read_bytes() != data
    assert in_place.read_bytes() == opened.read_bytes()


def test_a_migrating_load_holds_an_objects_value_not_its_bytes(tmp_path: Path) -> None:
    """pi's open of an old file parses every line: an object's line keeps its value (rewritten, made
    an entry), not its bytes beside it; a line that is no object keeps its bytes, which the
    rewrite writes as they are."""
    path = _version_2(tmp_path)
    with path.open("ab") as file:
        file.write(b"not json\n42\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        exact = load_exact(fd)
    finally:
        os.close(fd)
    objects = [raw for raw in exact.lines if isinstance(raw.value, dict)]
    assert len(objects) == 51 and all(raw.data == b"" for raw in objects)
    assert [raw.data for raw in exact.lines if not isinstance(raw.value, dict)] == [b"not json", b"42"]
    opened = tmp_path / "opened.jsonl"
    shutil.copyfile(path, opened)
    SessionManager.open(str(opened), index=False)
    out = tmp_path / "out.jsonl"
    main(["repair", "--codes", codes.OLD_VERSION, "-o", str(out), str(path)])
    assert opened.read_bytes() == out.read_bytes()
    assert opened.read_bytes().endswith(b"\nnot json\n42\n")
