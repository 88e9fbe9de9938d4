"""A migration repaired without an editor is streamed: its plan holds no copy of the file's lines
(the new text is made line by line as it is written), a dry run's second round reads it piece by
piece, and what is written is, byte for byte, what pi's migration on open writes. That open holds
an object line's value, not its bytes too. A writable open of a version 1 or 2 file, and a fork of
one, write the migration as they read the file."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from old_sessions import KIT_FIXTURES, as_version_2

from pi_session_server.analysis import codes
from pi_session_server.analysis.autofix import plan_repairs, spliced
from pi_session_server.analysis.document import SessionDocument, Splice, StreamedData
from pi_session_server.analysis.repairs import migrated_chunks, migrated_text
from pi_session_server.cli import main
from pi_session_server.session.loader import load_exact
from pi_session_server.session.manager import SessionManager


def _old_sessions() -> list[tuple[str, bytes]]:
    """The kit's sessions pi wrote before version 3, and its version 3 ones made version 2."""
    found = []
    for path in sorted(KIT_FIXTURES.glob("*/*.jsonl")):
        data = path.read_bytes()
        if data.startswith(b'{"type":"session","version":3'):
            data = as_version_2(data)
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
    tmp_path.mkdir(parents=True, exist_ok=True)
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


# -- the writable open of a version 2 file: streamed, then read as a current file -------------------


def _opened_both_ways(path: Path, tmp_path: Path) -> tuple[SessionManager, SessionManager]:
    """``path`` opened for writing (migrated and rewritten), and a copy of it opened read-only
    (migrated in memory, every value held: what the writable open held too before)."""
    viewed = tmp_path / "viewed.jsonl"
    shutil.copyfile(path, viewed)
    return SessionManager.open(str(path), index=False), SessionManager.open(str(viewed), read_only=True)


def test_a_writable_open_of_a_version_2_file_reads_its_entries_from_the_file_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The migration is written as the file is read, a line at a time (no list of the file's values:
    the whole-file read is never made), and the entries are those of the file written, their values
    read from their lines: the same session as a migration holding every value gives."""
    from pi_session_server.session import file_load

    path = _version_2(tmp_path)

    def no_whole_file_read(fd: int) -> None:
        raise AssertionError("a version 2 file's values are read whole")

    monkeypatch.setattr(file_load, "load_exact", no_whole_file_read)
    opened = SessionManager.open(str(path), index=False)
    monkeypatch.undo()
    data = path.read_bytes()
    assert data.startswith(b'{"type":"session","version":3,') and data.count(b'"role":"custom"') == 50
    starts = [0, *(n + 1 for n, byte in enumerate(data) if byte == ord("\n"))]
    entries = opened.get_entries()
    assert len(entries) == 50
    assert not any(entry.is_loaded for entry in entries)  # bodies come from the file, when asked
    assert [e.offset for e in entries] == [starts[e.line] for e in entries] == starts[1:51]
    held = SessionManager.open(str(_version_2(tmp_path / "held")), read_only=True)
    assert [e.value for e in entries] == [e.value for e in held.get_entries()]
    assert opened.get_header() == held.get_header()
    assert opened.build_session_context() == held.build_session_context()
    assert opened.get_session_id() == "s" and not opened.problems


def test_a_version_that_is_not_a_number_is_rewritten_at_each_open_as_pi_does(tmp_path: Path) -> None:
    """(Its migration changes nothing and leaves no current file: it is not read back as one.)"""
    path = _version_2(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"version": 2', b'"version": "x"', 1))
    for _ in range(2):
        opened = SessionManager.open(str(path), index=False)
        assert path.read_bytes().startswith(b'{"type":"session","version":"x",')
        assert len(opened.get_entries()) == 50 and b"hookMessage" in path.read_bytes()


def _appended_before_the_rename(monkeypatch: pytest.MonkeyPatch, path: Path, late: dict[str, Any]) -> None:
    """pi appends ``late`` to ``path`` while the migration writes its new file, just before the
    rename (once)."""
    from pi_session_server.session.rewrites import LockedFile

    replace = LockedFile.replace

    def replace_after_an_append(self: LockedFile, chunks: Any, *args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(LockedFile, "replace", replace)  # once
        with path.open("ab") as file:
            file.write(json.dumps(late).encode() + b"\n")
        return replace(self, chunks, *args, **kwargs)

    monkeypatch.setattr(LockedFile, "replace", replace_after_an_append)


def _rewritten_by_pi_after_the_rename(monkeypatch: pytest.MonkeyPatch, path: Path, copy: Path) -> bytes:
    """A pi that read ``path`` just before the migration's rename rewrites it in place right after
    (once), with its own migration of ``copy`` (the same file) and an entry it appended: its bytes."""
    from pi_session_server.session import file_load

    rewritten_after = file_load.rewritten_after
    pis = SessionManager.open(str(copy), index=False)
    pis.append_custom_entry("pi", {"n": 1})
    pis_version = Path(pis.get_session_file()).read_bytes()

    def pi_rewrites_in_place(*args: Any) -> bool:
        monkeypatch.setattr(file_load, "rewritten_after", rewritten_after)  # once
        with path.open("r+b") as file:
            file.truncate(0)
            file.write(pis_version)
        return rewritten_after(*args)

    monkeypatch.setattr(file_load, "rewritten_after", pi_rewrites_in_place)
    return pis_version


def test_a_line_appended_while_a_version_2_file_is_migrated_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi appends to the file while the migration writes its new one: the file changed under the
    migration, which reads it again; the appended entry is in the session and in the file."""
    path = _version_2(tmp_path)
    appended = {"type": "message", "id": "late", "parentId": "e49", "timestamp": "2025-01-01T00:00:02.000Z"}
    late = {
        **appended,
        "message": {"role": "hookMessage", "customType": "h", "content": "z", "display": True},
    }
    _appended_before_the_rename(monkeypatch, path, late)
    opened = SessionManager.open(str(path), index=False)
    assert [e.id for e in opened.get_entries()][-2:] == ["e49", "late"]
    assert opened.get_entry("late")["message"]["role"] == "custom"
    assert path.read_bytes().endswith(
        json.dumps(late, separators=(",", ":")).replace("hookMessage", "custom").encode() + b"\n"
    )


# -- the writable open of a version 1 file: streamed too, holding only the ids its entries got ------


def _version_1(tmp_path: Path, *extra: dict[str, Any]) -> Path:
    """A version 1 session: no ids nor parents, hooks' messages as ``hookMessage``, a value that
    is no object (it counts as a position), a compaction naming the entry it keeps by position;
    ``extra`` values after them."""
    path = tmp_path / "v1.jsonl"
    lines = [
        {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        *(
            {
                "type": "message",
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "hookMessage", "customType": "h", "content": "x" * n, "display": True},
            }
            for n in range(40)
        ),
        [1, 2],
        {
            "type": "compaction",
            "timestamp": "2025-01-01T00:00:02.000Z",
            "summary": "s",
            "firstKeptEntryIndex": 30,
        },
        *extra,
    ]
    tmp_path.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def _whole_file_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reads of a whole file's values by the manager (the migration holding them) in an
    open."""
    from pi_session_server.session import file_load

    reads: list[int] = []
    load_exact = file_load.load_exact

    def counted(fd: int) -> Any:
        reads.append(fd)
        return load_exact(fd)

    monkeypatch.setattr(file_load, "load_exact", counted)
    return reads


def _written_holding_the_values(path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """What a writable open of a copy of ``path`` writes when its values are migrated together (the
    migration made before a version 1 file's was streamed)."""
    from pi_session_server.session import file_load

    held = path.with_name("held.jsonl")
    shutil.copyfile(path, held)
    with monkeypatch.context() as patched:
        patched.setattr(file_load, "_rewrite_streamed", lambda *args: None)
        SessionManager.open(str(held), index=False)
    return held.read_bytes()


def test_a_writable_open_of_a_version_1_file_reads_its_entries_from_the_file_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each entry's id, its parent and the compaction's kept entry come out of a migration a line
    at a time, the values read from the lines written: the session a migration holding every value
    gives (a read-only open holds them)."""
    path = _version_1(tmp_path)
    reads = _whole_file_reads(monkeypatch)
    opened, viewed = _opened_both_ways(path, tmp_path)
    assert len(reads) == 1  # the read-only open's, not the writable one's
    data = path.read_bytes()
    assert (
        data.split(b"\n", 1)[0].endswith(b'"cwd":"/p","version":3}') and data.count(b'"role":"custom"') == 40
    )
    starts = [0, *(n + 1 for n, byte in enumerate(data) if byte == ord("\n"))]
    entries = opened.get_entries()
    assert len(entries) == 41 and not any(entry.is_loaded for entry in entries)
    assert [e.offset for e in entries] == [starts[e.line] for e in entries]
    assert [e.value for e in entries] == [e.value for e in viewed.get_entries()]
    assert entries[-1]["firstKeptEntryId"] == entries[29].id and "firstKeptEntryIndex" not in entries[-1]
    assert [e.parent_id for e in entries] == [None, *(e.id for e in entries[:-1])]
    assert opened.get_header() == viewed.get_header()
    assert opened.build_session_context() == viewed.build_session_context()
    assert [(p.line, p.kind) for p in opened.problems] == [(41, "non_object")]


def _old_kit_sessions_of_version_1() -> list[tuple[str, bytes]]:
    return [
        (name, data)
        for name, data in OLD_SESSIONS
        if json.loads(data.split(b"\n", 1)[0]).get("version", 1) == 1
    ]


@pytest.mark.parametrize(
    ("name", "data"),
    _old_kit_sessions_of_version_1(),
    ids=[name for name, _ in _old_kit_sessions_of_version_1()],
)
def test_a_version_1_file_migrated_a_line_at_a_time_is_written_as_holding_its_values(
    name: str, data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi's own version 1 sessions (the kit's, a compaction among them): the same bytes, ids
    included, as the migration of the values together writes."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    held = _written_holding_the_values(path, monkeypatch)
    reads = _whole_file_reads(monkeypatch)
    SessionManager.open(str(path), index=False)
    assert not reads
    assert path.read_bytes() == held != data


def test_the_kit_holds_version_1_sessions_with_a_compaction() -> None:
    """(The test above covers a compaction's kept entry named by position.)"""
    sessions = _old_kit_sessions_of_version_1()
    assert len(sessions) >= 3 and any(b'"firstKeptEntryIndex"' in data for _, data in sessions)


def _drawn_id(header_id: str, position: int) -> str:
    """The id the migration draws first for the value at ``position`` (see migrate._MigrationIds)."""
    import hashlib

    return hashlib.blake2b(f"{header_id}\0{position}.0".encode(), digest_size=4).hexdigest()


@pytest.mark.parametrize(
    "later",
    [
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 44},
        {"type": "custom", "customType": "c", "id": _drawn_id("s", 3)},
    ],
    ids=["compaction-naming-a-later-position", "id-carried-after-it-is-drawn"],
)
def test_a_version_1_file_whose_migration_needs_a_later_value_is_migrated_holding_its_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later: dict[str, Any]
) -> None:
    """A compaction naming a value after it, or an entry carrying the id the migration drew for an
    earlier one (which it would have passed over, knowing every id): no file pi writes, but the
    migration made a line at a time would write other ids than pi's; such a file's values are
    migrated together."""
    path = _version_1(tmp_path, later, {"type": "custom", "customType": "after"}, {"type": "custom"})
    held = _written_holding_the_values(path, monkeypatch)
    reads = _whole_file_reads(monkeypatch)
    opened = SessionManager.open(str(path), index=False)
    assert len(reads) == 1
    assert path.read_bytes() == held
    ids = [e.id for e in opened.get_entries()]
    assert len(set(ids)) == len(ids) == 44


@pytest.mark.parametrize(
    ("make", "more"), [(_version_1, [(44, "non_object")]), (_version_2, [])], ids=["v1", "v2"]
)
def test_the_problems_of_a_migrated_file_are_where_its_lines_are_now(
    tmp_path: Path, make: Any, more: list[tuple[int, str]]
) -> None:
    """The lines that are no entries are reported with their place in the file written (the blank
    lines it drops moved them), not in the file as it was (``more``: the file's own)."""
    path = tmp_path / "s.jsonl"
    data = make(tmp_path).read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([data[0], b"", *data[1:5], b"not json {", b"", b"42", b"null", *data[5:]]))
    opened = SessionManager.open(str(path), index=False)
    written = path.read_bytes()
    lines = written.split(b"\n")
    assert [(p.line, p.kind) for p in opened.problems] == [
        (5, "malformed"),
        (6, "non_object"),
        (7, "falsy"),
        *more,
    ]
    assert all(written[p.offset : p.offset + p.length] == lines[p.line] for p in opened.problems)
    assert b"\n\n" not in written


@pytest.mark.parametrize(
    ("make", "line"),
    [(_version_2, 0), (_version_2, 1), (_version_2, 2), (_version_1, 0), (_version_1, 1), (_version_1, 42)],
    ids=["v2-header", "v2-hook-message", "v2-user-message", "v1-header", "v1-message", "v1-compaction"],
)
def test_a_number_written_otherwise_keeps_the_value_pi_holds(tmp_path: Path, make: Any, line: int) -> None:
    """1e400 is Infinity to pi, which its migration writes null: read back from the file, the
    entry would hold null where pi holds Infinity. Such a file's values are held, as before."""
    path = make(tmp_path)
    data = path.read_bytes().split(b"\n")
    data[line] = data[line].replace(b'"timestamp":', b'"n":1e400,"timestamp":', 1)
    path.write_bytes(b"\n".join(data))
    opened, viewed = _opened_both_ways(path, tmp_path)
    assert b'"n":null' in path.read_bytes()
    values = [opened.get_header(), *(e.value for e in opened.get_entries())]
    held = [viewed.get_header(), *(e.value for e in viewed.get_entries())]
    assert values == held and float("inf") in [value.get("n") for value in values]


def test_a_line_appended_while_a_version_1_file_is_migrated_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi appends to the file while the migration writes its new one: the migration reads the file
    again; the appended entry gets its id and parent from the file as it is now."""
    path = _version_1(tmp_path)
    late = {"type": "message", "timestamp": "t", "message": {"role": "hookMessage", "content": "z"}}
    _appended_before_the_rename(monkeypatch, path, late)
    opened = SessionManager.open(str(path), index=False)
    entries = opened.get_entries()
    assert len(entries) == 42 and entries[-1]["message"] == {"role": "custom", "content": "z"}
    assert entries[-1].parent_id == entries[-2].id
    viewed = SessionManager.open(str(path), read_only=True)
    assert [e.value for e in viewed.get_entries()] == [e.value for e in entries]


@pytest.mark.parametrize(("make", "count"), [(_version_1, 42), (_version_2, 51)], ids=["v1", "v2"])
def test_pi_rewriting_an_old_file_right_after_its_migration_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, count: int
) -> None:
    """A pi that read the file just before the migration's rename rewrites it in place a moment
    later, with what it appended: the open waits for that and reads pi's version."""
    path = make(tmp_path)
    pis_version = _rewritten_by_pi_after_the_rename(monkeypatch, path, make(tmp_path / "pi"))
    opened = SessionManager.open(str(path), index=False)
    assert path.read_bytes() == pis_version
    assert opened.get_entries()[-1]["customType"] == "pi" and len(opened.get_entries()) == count


@pytest.mark.parametrize("make", [_version_1, _version_2], ids=["v1", "v2"])
def test_a_session_migrated_a_line_at_a_time_is_followed_as_it_was_written(tmp_path: Path, make: Any) -> None:
    """What the open knows of the file is the file it wrote: nothing changed since, and an entry
    appended goes after the migrated lines."""
    path = make(tmp_path)
    opened = SessionManager.open(str(path), index=False)
    assert opened.refresh_from_disk().kind == "unchanged"
    ids = [e.id for e in opened.get_entries()]
    new_id = opened.append_custom_entry("after", {"n": 1})
    again = SessionManager.open(str(path), read_only=True)
    assert [e.id for e in again.get_entries()] == [*ids, new_id]
    assert again.get_entry(new_id)["parentId"] == ids[-1]


# -- a fork of an old source: its lines written as the source is read ------------------------------


def _fork_lines(source: Path, target: Path, fork_id: str) -> list[bytes]:
    """The lines of the fork of ``source`` made in ``target``, but its header."""
    fork = SessionManager.fork_from(str(source), "/t", str(target), {"id": fork_id})
    return Path(fork.get_session_file()).read_bytes().split(b"\n")[1:]


@pytest.mark.parametrize("make", [_version_1, _version_2], ids=["v1", "v2"])
def test_a_fork_of_an_old_source_is_written_as_the_source_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    """No list of the source's values is made; the fork holds what migrating them together gives
    (the source's values migrated by a read-only open, as the fork did before)."""
    source = make(tmp_path)
    reads = _whole_file_reads(monkeypatch)
    lines = _fork_lines(source, tmp_path / "forks", "f1")
    assert not reads
    viewed = SessionManager.open(str(source), read_only=True)
    assert lines == [*(_line_of(e.value) for e in viewed.get_entries()), b""]


def _line_of(value: Any) -> bytes:
    from pi_session_server.format.jsjson import dumps_bytes

    return dumps_bytes(value)


def test_a_fork_of_a_version_1_source_whose_migration_needs_a_later_value_takes_back_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines written before the migration found it needs a later value are taken back, and the
    source's values are migrated by links drawn first, a value at a time (no read of the whole
    file's values): the fork is what migrating them together gives, once."""
    later = {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 44}
    source = _version_1(tmp_path, later, {"type": "custom", "customType": "a"}, {"type": "custom"})
    from pi_session_server.session import fork_source

    monkeypatch.setattr(fork_source, "_FORK_BATCH", 1)  # each line appended as it is made
    lines = _fork_lines(source, tmp_path / "forks", "f1")
    viewed = SessionManager.open(str(source), read_only=True)
    assert lines == [*(_line_of(e.value) for e in viewed.get_entries()), b""]


def test_a_fork_of_a_version_1_source_whose_migration_needs_a_later_value_holds_one_value_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its links are drawn first, from a read of the values' kinds and ids: the source's values are
    not held together while the fork is written (twice the file's size in Python objects). (The
    fork's file alone: the manager ``fork_from`` returns then holds what any open of it holds.)"""
    from pi_session_server.session import fork_source
    from pi_session_server.session.environment import current

    later = {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 44}
    big = ({"type": "custom", "customType": "a", "data": "x" * 4000} for _ in range(4000))
    source = _version_1(tmp_path, later, *big)
    monkeypatch.setattr(fork_source, "_FORK_BATCH", 64 * 1024)
    tracemalloc.start()
    try:
        _directory, fork = fork_source.write_fork(
            str(source), "/t", str(tmp_path / "forks"), {"id": "f1"}, False, current(None)
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    written = os.path.getsize(fork)
    assert written > 16_000_000
    assert peak < written // 4
    viewed = SessionManager.open(str(source), read_only=True)
    lines = Path(fork).read_bytes().split(b"\n")[1:]
    assert lines == [*(_line_of(e.value) for e in viewed.get_entries()), b""]


@pytest.mark.parametrize("make", [_version_1, _version_2], ids=["v1", "v2"])
def test_a_fork_ends_its_sources_last_line_before_it_refuses_an_id(tmp_path: Path, make: Any) -> None:
    """pi loads the source (ending its last line) before it looks at the id: the source is read
    while the fork is written, its last line still ended first."""
    from pi_session_server.errors import InvalidSessionIdError

    source = make(tmp_path)
    source.write_bytes(source.read_bytes()[:-1])
    with pytest.raises(InvalidSessionIdError):
        SessionManager.fork_from(str(source), "/t", str(tmp_path / "forks"), {"id": "-bad-"})
    assert source.read_bytes().endswith(b"}\n")


def _a_source_read_that_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The source's values fail to be read on (an I/O error) after a few were written."""
    from pi_session_server.session import fork_source

    read_values = fork_source.iter_kept_values

    def failing(fd: int) -> Any:
        for count, value in enumerate(read_values(fd)):
            if count == 5:
                raise OSError(errno.EIO, "Input/output error")
            yield value

    monkeypatch.setattr(fork_source, "iter_kept_values", failing)


def _a_disk_that_fills(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork's second batch of lines finds the disk full."""
    from pi_session_server.session import storage

    append_lines = storage.append_lines
    calls = []

    def filling(*args: Any, **kwargs: Any) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        append_lines(*args, **kwargs)

    monkeypatch.setattr(storage, "append_lines", filling)


@pytest.mark.parametrize("make", [_version_1, _version_2], ids=["v1", "v2"])
@pytest.mark.parametrize("failure", [_a_source_read_that_fails, _a_disk_that_fills], ids=["read", "full"])
def test_a_fork_that_fails_while_it_is_written_leaves_no_part_of_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, failure: Any
) -> None:
    """A fork whose source cannot be read on, or whose lines cannot all be written, raises and
    leaves no file in the sessions' directory: a part of the source's entries under a valid header
    would be listed as a session of its own. The source is left as it was."""
    from pi_session_server.session import fork_source

    source = make(tmp_path)
    before = source.read_bytes()
    monkeypatch.setattr(fork_source, "_FORK_BATCH", 1)  # each line appended as it is made
    failure(monkeypatch)
    forks = tmp_path / "forks"
    with pytest.raises(OSError):
        SessionManager.fork_from(str(source), "/t", str(forks), {"id": "f1"})
    assert list(forks.iterdir()) == []
    assert source.read_bytes() == before


def test_a_failed_fork_leaves_a_file_another_program_put_at_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is removed is the fork's own file: one put at its name meanwhile stays."""
    from pi_session_server.session import fork_source

    source = _version_2(tmp_path)
    monkeypatch.setattr(fork_source, "_FORK_BATCH", 1)
    read_values = fork_source.iter_kept_values
    forks = tmp_path / "forks"

    def replaced_then_failing(fd: int) -> Any:
        for count, value in enumerate(read_values(fd)):
            if count == 5:
                (fork,) = forks.iterdir()
                other = forks / "other"
                other.write_bytes(b"another program's\n")
                os.replace(other, fork)
                raise OSError(errno.EIO, "Input/output error")
            yield value

    monkeypatch.setattr(fork_source, "iter_kept_values", replaced_then_failing)
    with pytest.raises(OSError):
        SessionManager.fork_from(str(source), "/t", str(forks), {"id": "f1"})
    assert [p.read_bytes() for p in forks.iterdir()] == [b"another program's\n"]
