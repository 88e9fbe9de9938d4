"""Random version 1 and version 2 sessions (tests/old_session_fuzz.py) through each path that
migrates them: its streamed way gives what its held way gives (the bytes written, every public
result, the problems found). ``scripts/fuzz_old_sessions.py`` runs many more seeds; each
difference it found has a small session of its own below."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from old_session_fuzz import (
    PATHS_TO_COMPARE,
    PathToCompare,
    differences,
    random_old_session,
    repair,
    writable_open,
)

from pi_session_server.analysis import codes


@pytest.fixture(autouse=True)
def _writes_not_synced(monkeypatch: pytest.MonkeyPatch) -> None:
    """What is compared is what each way writes and gives, not that it reaches the disk: the
    rewrites' fsyncs (every migration and repair of every seed, hundreds) wait on a disk other
    processes write to, most of these tests' time on a loaded machine."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


# (55: the first seed on which a rewrite holding the values placed its problems in the old file)
SEEDS = [*range(16), 55]


def test_the_seeds_make_both_versions_and_what_the_paths_meet() -> None:
    """(The sessions compared below: version 1 files, version 2 ones (odd seeds), with hooks'
    messages, tool calls, compactions naming positions, CRLF, U+2028.)"""
    made = [random_old_session(seed) for seed in SEEDS]
    headers = [data.split(b"\n", 1)[0] for data in made]
    version_2 = [b'"version":2' in header or b'"version":"2"' in header for header in headers]
    assert version_2 == [seed % 2 == 1 for seed in SEEDS]
    joined = b"".join(made)
    pieces = [b'"firstKeptEntryIndex"', b'"role":"hookMessage"', b'"toolCall"', b"\r\n", "\u2028".encode()]
    assert all(piece in joined for piece in pieces)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_old_session_is_migrated_alike_streamed_and_held(seed: int, tmp_path: Path) -> None:
    assert differences(random_old_session(seed), tmp_path) == []


def _path(name: str) -> list[PathToCompare]:
    return [path for path in PATHS_TO_COMPARE if path.name == name]


@pytest.mark.parametrize("version", [b"", b'"version":2,'], ids=["v1", "v2"])
def test_the_problems_of_a_file_rewritten_holding_its_values_are_where_its_lines_are_now(
    version: bytes, tmp_path: Path
) -> None:
    """A writable open that migrates holding the values (a version 1 file whose migration needs a
    later value, one that holds 1e400) reports the lines that are no entries where they are in the
    file it wrote, as the streamed one does: a blank line dropped before them, a hook's message
    made a custom one, moved them."""
    data = (
        b'{"type":"session",' + version + b'"id":"s","timestamp":"t","cwd":"/p"}\n'
        b"\n"
        b'{"type":"message","timestamp":"t","message":{"role":"hookMessage","content":"h"}}\n'
        b"not json\n"
    )
    assert differences(data, tmp_path, _path("writable open")) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_repair_migrates_a_random_old_session_as_an_open_rewrites_it(seed: int, tmp_path: Path) -> None:
    """(A version that is no number is left to pi's open, which rewrites the file at each one: no
    repair migrates it.)"""
    data = random_old_session(seed)
    file = tmp_path / "s.jsonl"
    file.write_bytes(data)
    repaired = repair("--codes", codes.OLD_VERSION)(tmp_path, file)["out"]
    rewritten = writable_open(tmp_path, file)["file"]
    if b'"version":"abc"' in data.split(b"\n", 1)[0]:
        assert repaired == data != rewritten
    else:
        assert repaired == rewritten != data
