"""The migration repair of a version 1 session (``pi-session repair``, the language server's
"Migrate to version 3") is made a value at a time, as a version 2 session's is: no value of the file
is held but the one migrated. What it writes is, byte for byte, what the migration holding every
value writes (ids, verbatim lines and D3 positions included); a file whose migration needs a later
value (pi writes none) is found before anything is written, and its values are migrated a value at
a time too, by links drawn first from the lines' facts."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from old_session_fuzz import held_together
from old_sessions import KIT_FIXTURES

from pi_session_server.analysis import codes
from pi_session_server.analysis import repairs as repairs_module
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import migrated_chunks, migrated_text
from pi_session_server.cli import main

HEADER = {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _message(n: int) -> dict[str, Any]:
    role = "hookMessage" if n % 2 else "user"
    return {
        "type": "message",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": role, "content": f"m{n}"},
    }


def _compaction(index: Any) -> dict[str, Any]:
    return {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": index}


def _drawn_id(header_id: str, position: int) -> str:
    """The id the migration draws first for the value at ``position`` (see migrate._MigrationIds)."""
    return hashlib.blake2b(f"{header_id}\0{position}.0".encode(), digest_size=4).hexdigest()


def _lines(*lines: Any) -> bytes:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


# positions: the header 0, each message and kept non-object one more; blank, malformed and falsy
# lines are written as they are and count for nothing
MADE = {
    "non-objects-malformed-and-blank-lines": _lines(
        HEADER,
        _message(1),
        "[1]",
        "",
        "{broken",
        '"text"',
        "   ",
        _message(2),
        "42",
        "null",
        "0",
        _compaction(3),
        _compaction(2),
        _message(3),
    ),
    "compactions-naming-no-entry": _lines(
        HEADER,
        _message(1),
        _compaction(0),
        _compaction(-1),
        _compaction(1.5),
        _compaction(3),
        _compaction(2),
        _message(2),
    ),
    "an-id-carried-before-it-is-drawn": _lines(
        HEADER,
        _message(1),
        {**_message(2), "id": _drawn_id("s", 3)},
        _message(3),
        _compaction(1),
    ),
}
# files whose migration a value at a time needs a later value: their values are migrated together
NEEDING_A_LATER_VALUE = {
    # (the lines before it that are no position would make position 2 one before it)
    "a-compaction-naming-a-later-position-after-lines-kept-as-they-are": _lines(
        HEADER, "{broken", "null", "", "0", _compaction(2), _message(1), _message(2)
    ),
    "a-compaction-naming-a-later-position": _lines(
        HEADER, _message(1), _compaction(4), _message(2), _message(3)
    ),
    "an-id-carried-after-it-is-drawn": _lines(
        HEADER,
        _message(1),
        _message(2),
        {**_message(3), "id": _drawn_id("s", 1)},
        _message(4),
    ),
}


def _kit_version_1_sessions() -> dict[str, bytes]:
    found = {}
    for path in sorted(KIT_FIXTURES.glob("*/*.jsonl")):
        data = path.read_bytes()
        if json.loads(data.split(b"\n", 1)[0]).get("version", 1) == 1:
            found[f"{path.parent.name}/{path.name}"] = data
    return found


KIT = _kit_version_1_sessions()
CASES = {**KIT, **MADE, **NEEDING_A_LATER_VALUE}
# (no repair migrates a file without a header: the migration of its text is the held one's too)
HEADERLESS = {"no-header": _lines(_message(1), _message(2), _compaction(0), _compaction(2))}


def test_the_kit_holds_version_1_sessions() -> None:
    assert len(KIT) >= 3 and any(b'"firstKeptEntryIndex"' in data for data in KIT.values())


@pytest.fixture
def together(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the migrations by links drawn first (repairs._migrated_by_drawn_links): those of
    files whose migration needs a later value."""
    calls: list[int] = []
    drawn = repairs_module._migrated_by_drawn_links

    def counted(doc: SessionDocument, header: dict[str, Any]) -> Iterator[str]:
        calls.append(1)
        return drawn(doc, header)

    monkeypatch.setattr(repairs_module, "_migrated_by_drawn_links", counted)
    return calls


@pytest.mark.parametrize("name", [*CASES, *HEADERLESS])
def test_a_version_1_migration_holds_no_value_and_writes_what_holding_them_writes(
    name: str, together: list[int]
) -> None:
    data = {**CASES, **HEADERLESS}[name]
    doc = SessionDocument(data)
    held = "".join(held_together(doc))
    assert migrated_text(doc) == held != data.decode()
    assert b"".join(migrated_chunks(doc)) == held.encode()
    # (each of the two above made once: together only where a later value is needed)
    assert len(together) == (2 if name in NEEDING_A_LATER_VALUE else 0)


@pytest.mark.parametrize("name", list(CASES))
def test_repair_in_place_of_a_version_1_file_writes_what_holding_its_values_wrote(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    together: list[int],
) -> None:
    streamed, held = tmp_path / "streamed.jsonl", tmp_path / "held.jsonl"
    streamed.write_bytes(CASES[name])
    held.write_bytes(CASES[name])
    repair = ["repair", "--codes", codes.OLD_VERSION, "--in-place", "--no-backup"]
    main([*repair, str(streamed)])
    streamed_calls = len(together)
    with monkeypatch.context() as forced:
        forced.setattr(repairs_module, "_needs_later_value", lambda *args: True)
        main([*repair, str(held)])
    capsys.readouterr()
    assert (streamed_calls == 0) == (name not in NEEDING_A_LATER_VALUE) and len(together) > streamed_calls
    assert streamed.read_bytes() == held.read_bytes() != CASES[name]


def test_a_version_1_migration_needing_a_later_value_holds_one_value_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its links are drawn from the lines' facts first: the values are not held together (twice
    the file's size in Python objects, the peak of a repair of a large old session)."""
    text = "x" * 4000
    lines = [HEADER, _message(1), _compaction(4), *({**_message(n), "content": text} for n in range(2, 1000))]
    doc = SessionDocument(_lines(*lines))
    monkeypatch.setattr(repairs_module, "_MIGRATED_CHUNK", 64 * 1024)
    tracemalloc.start()
    try:
        written = sum(len(chunk) for chunk in migrated_chunks(doc))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert written > 4_000_000
    assert peak < written // 8
