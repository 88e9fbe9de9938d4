"""Port of pi's ``packages/coding-agent/test/session-manager/session-header-position.test.ts``.

Source: earendil-works/pi (as indexed) @ 843d550e. That later pi accepts records (a ``title``
line) *before* the session header. 0.86.1 does not: the first kept value must be the header or the
file is invalid (docs/FORMAT.md §9.1 step 4, §9.2, docs/API.md §9.5; verified against the reference). Every case keeps
the upstream file and asserts 0.86.1 behaviour; only the "no header at all" case agrees upstream.
"""

from __future__ import annotations

import json

import pytest

from pi_session_server.errors import InvalidSessionFileError
from pi_session_server.session import SessionManager, find_most_recent_session, load_entries_from_file

SESSION_ID = "0199ffff-0000-7000-8000-000000000001"


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    directory = tmp_path / "session-header-test"
    directory.mkdir()
    return directory


def write_title_line(path):
    title = {
        "type": "title",
        "v": 1,
        "title": "Fork-written title",
        "source": "auto",
        "updatedAt": "2025-01-01T00:00:00Z",
    }
    path.write_text(json.dumps(title) + "\n")


def write_header_line(path, directory):
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": "2025-01-01T00:00:00Z",
        "cwd": str(directory),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")


def write_session_file(directory, name):
    path = directory / name
    write_title_line(path)
    write_header_line(path, directory)
    return path


def test_session_header_position__loadEntriesFromFile_rejects_a_title_record_before_the_header_spec_differs(
    temp_dir,
):
    path = write_session_file(temp_dir, "prefixed.jsonl")
    before = path.read_bytes()
    assert load_entries_from_file(str(path)) == []  # upstream (later pi): [title, session]
    with pytest.raises(InvalidSessionFileError):
        SessionManager.open(str(path), str(temp_dir))
    assert path.read_bytes() == before


def test_session_header_position__loadEntriesFromFile_still_rejects_files_without_any_session_header(
    temp_dir,
):
    path = temp_dir / "no-header.jsonl"
    write_title_line(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "session_info", "name": "x"}) + "\n")
    assert load_entries_from_file(str(path)) == []


def test_session_header_position__findMostRecentSession_skips_sessions_with_pre_header_entries_spec_differs(
    temp_dir,
):
    write_session_file(temp_dir, "2025-01-01T00-00-00-000Z_test.jsonl")
    assert find_most_recent_session(str(temp_dir)) is None  # upstream (later pi): that file


def test_session_header_position__listAll_skips_sessions_with_pre_header_entries_spec_differs(temp_dir):
    write_session_file(temp_dir, "2025-01-01T00-00-00-000Z_test.jsonl")
    assert SessionManager.list_all(str(temp_dir)) == []  # upstream (later pi): one session, SESSION_ID
