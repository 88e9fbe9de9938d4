"""A read-only view of a large version 1 session holds its entries lazily: each one's line offset,
the id and parent drawn for its position, its value read again and migrated when asked for. What
other programs do to the file meanwhile (tests/version_1_writers.py) never makes it answer with the
old file's offsets read out of the new bytes: before the view looks again, a value read is the one
it read before, the new file's, or a clear error (StaleFileError); once it looks, every answer is a
fresh open's, or the session stays as it was (an emptied file, a deleted one). The file is never
written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from old_sessions import index_setting, public_results, read_as_large
from version_1_writers import (
    CHANGES,
    HEADER,
    NEEDS_PI,
    OTHER_SESSION,
    pi_is_here,
    told,
    version_1_session,
)

from pi_session_server.errors import StaleFileError
from pi_session_server.format.jsjson import dumps_bytes
from pi_session_server.session import loader
from pi_session_server.session.manager import SessionManager

STALE = b"(StaleFileError)"

# the changes that leave the file the view read as it was
UNTOUCHED = {"pi's version 3 renamed over it", "another session moved over it", "deleted"}


@pytest.fixture(autouse=True)
def lazy(monkeypatch: pytest.MonkeyPatch) -> None:
    read_as_large(monkeypatch)


@pytest.fixture(params=[False, True], ids=["no-index", "index"])
def index(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool | Path:
    return index_setting(request.param, tmp_path, monkeypatch)


def open_view(path: Path, index: bool | Path) -> SessionManager:
    return SessionManager.open(str(path), read_only=True, index=index)


def bodies(session: SessionManager) -> dict[Any, bytes]:
    """Each entry's value as JSON text by its id (STALE where reading it raised StaleFileError)."""
    read = {}
    for entry in session.get_entries():
        try:
            read[entry.id] = dumps_bytes(entry.value)
        except StaleFileError:
            read[entry.id] = STALE
    return read


def on_disk(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_lazy_version_1_view_answers_as_the_file_now_is_or_as_it_was_never_a_mix(
    tmp_path: Path, name: str, index: bool | Path
) -> None:
    if name in NEEDS_PI and not pi_is_here():
        pytest.skip("needs node and pi (PI_ORACLE_DIR)")
    path = tmp_path / "s.jsonl"
    path.write_bytes(version_1_session())
    view = open_view(path, index)
    assert not any(entry.is_loaded for entry in view.get_entries())  # (lazy: read when asked)
    before = bodies(view)
    ids_before = list(before)

    CHANGES[name](path)
    written = on_disk(path)
    fresh = bodies(open_view(path, False)) if written else {}
    read = bodies(view)  # the view has not looked at the file yet
    if name in UNTOUCHED:  # (the file it read is as it was: another one is at its path, or none)
        assert read == before
    for entry_id, value in read.items():
        assert value in (before[entry_id], fresh.get(entry_id), STALE), entry_id

    change = view.refresh_from_disk()
    assert change.kind == told(name)
    if change.kind == "reloaded":
        assert public_results(view) == public_results(open_view(path, index))
    else:  # the session stays as it was: its values as read, or a clear error
        assert list(bodies(view)) == ids_before
        assert all(value in (before[entry_id], STALE) for entry_id, value in bodies(view).items())
    if name == "shell empties it":  # ... until the file has a header again
        path.write_bytes(OTHER_SESSION)
        assert view.refresh_from_disk().kind == "reloaded"
        assert public_results(view) == public_results(open_view(path, index))
        written = on_disk(path)
    assert on_disk(path) == written  # never written


@pytest.mark.skipif(not pi_is_here(), reason="needs node and pi (PI_ORACLE_DIR)")
def test_a_version_1_file_pi_rewrites_in_version_3_is_indexed_once_the_view_reads_it_again(
    tmp_path: Path, index: bool | Path
) -> None:
    """A version 1 file keeps no index (its ids are drawn at each open); once pi rewrote it in
    version 3, the view that reads it again keeps one, which the next open reads: the same
    answers."""
    if not index:
        pytest.skip("(the index's case)")
    path = tmp_path / "s.jsonl"
    path.write_bytes(version_1_session())
    view = open_view(path, index)
    assert not Path(index).exists() or not any(Path(index).iterdir())
    CHANGES["pi rewrites it in place"](path)
    assert view.refresh_from_disk().kind == "reloaded"
    answers = public_results(view)
    assert any(Path(index).iterdir())
    again = open_view(path, index)
    assert again.get_entries()[-1].is_loaded is False  # (lazy, from its index)
    assert public_results(again) == answers
    assert [e.id for e in again.get_entries()] == [
        json.loads(line)["id"] for line in path.read_bytes().splitlines()[1:]
    ]


def _padded(value: dict[str, Any], key: tuple[str, ...], length: int) -> bytes:
    """``value`` as a line (no newline) of ``length`` bytes: the string at ``key`` padded."""
    where = value
    for step in key[:-1]:
        where = where[step]
    text = json.dumps(value, separators=(",", ":")).encode()
    assert len(text) <= length
    where[key[-1]] += "x" * (length - len(text))
    return json.dumps(value, separators=(",", ":")).encode()


def test_a_line_written_where_a_version_1_entry_was_is_not_given_that_entrys_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor saves over the file, in place, a version 3 session whose first entry's line is
    where the version 1 file's first entry's was, as long, of the same type, role and timestamp,
    within one tick of the file system's clock (its status shows no write): read before the view
    looks again, that line is not migrated as the entry scanned there (it carries an id of its own,
    which that entry's line did not): a clear error, never the new line with the id drawn for the
    old one."""
    monkeypatch.setattr(loader, "_written_since", lambda before, now: False)
    path = tmp_path / "s.jsonl"
    data = version_1_session()
    path.write_bytes(data)
    view = open_view(path, False)
    first = view.get_entries()[0]
    old_lines = data.split(b"\n")
    scanned = json.loads(old_lines[1])
    header = {**HEADER, "version": 3, "id": ""}
    del header["cwd"]
    entry = {
        "type": "message",
        "id": "abcd1234",
        "parentId": None,
        "timestamp": scanned["timestamp"],
        "message": {"role": scanned["message"]["role"], "content": ""},
    }
    lines = [
        _padded(header, ("id",), len(old_lines[0])),
        _padded(entry, ("message", "content"), len(old_lines[1])),
    ]
    with path.open("r+b") as file:  # (an editor's save in place)
        file.write(b"\n".join(lines) + b"\n")
        file.truncate()
    assert [e["id"] for e in bodies_of(path)] == ["abcd1234"]
    with pytest.raises(StaleFileError):
        _ = first.value
    assert view.refresh_from_disk().kind == "reloaded"
    assert [e.id for e in view.get_entries()] == ["abcd1234"]


def bodies_of(path: Path) -> list[Any]:
    """The entries a fresh open of ``path`` holds (their values)."""
    return [entry.value for entry in open_view(path, False).get_entries()]
