"""Port of pi's ``packages/coding-agent/test/session-manager/persist-missing-dir.test.ts``.

Source: earendil-works/pi (as indexed) @ 8b8e90c1. That later pi recreates a missing session
directory on write. 0.86.1 throws ``ENOENT: no such file or directory, open '<path>'`` and keeps the
entry in memory as the new leaf (docs/API.md §4.3, §5.1; verified against the reference); 1.6.0 throws the
same error, takes the entry back out of memory (docs/API.md §5.1) and writes a new session's file at its first
user message. Both cases keep the upstream scenario and assert each release's behaviour.
"""

from __future__ import annotations

import os
import shutil

import pytest
from builders import assistant_message

from pi_session_server.errors import FsError
from pi_session_server.session import SessionManager


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workspace").mkdir()
    return tmp_path


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_persist_missing_dir__session_directory_removed_after_construction_throws_ENOENT_spec_differs(
    temp_dir, pi
):
    session_dir = temp_dir / ".pi" / "sessions"
    session = SessionManager.create(str(temp_dir / "workspace"), str(session_dir), pi=pi)
    session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    session.append_message(assistant_message("hello", 2))
    session_file = session.get_session_file()
    assert os.path.exists(session_file)

    shutil.rmtree(session_dir)
    # upstream (later pi): no error, directory recreated. 0.86.1: ENOENT, nothing recreated.
    with pytest.raises(FsError) as err:
        session.append_message({"role": "user", "content": "after directory removed", "timestamp": 3})
    assert err.value.code == "ENOENT"
    assert str(err.value) == f"ENOENT: no such file or directory, open '{session_file}'"
    assert not session_dir.exists()
    if pi == "0.86.1":  # the entry stays in memory as the new leaf (docs/API.md §5.1)
        assert len(session.get_entries()) == 3
        assert session.get_leaf_entry()["message"]["content"] == "after directory removed"
    else:  # taken back out (docs/API.md §5.1)
        assert len(session.get_entries()) == 2
        assert session.get_leaf_entry()["message"]["role"] == "assistant"


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_persist_missing_dir__explicit_session_file_in_a_missing_directory_throws_ENOENT_spec_differs(
    temp_dir, pi
):
    tracked_session_dir = temp_dir / "tracked-dir"
    explicit_dir = temp_dir / "explicit" / "nested" / "dir"
    explicit_file = explicit_dir / "custom-session.jsonl"

    session = SessionManager.open(str(explicit_file), str(tracked_session_dir), pi=pi)
    assert tracked_session_dir.is_dir()  # only the given session directory is created (docs/API.md §3.1)
    # upstream (later pi): the file's parent directory is created. 0.86.1: the first batch write (at the
    # first assistant message) fails; 1.6.0: the first batch write, at the first user message, fails.
    with pytest.raises(FsError) as err:
        session.append_message({"role": "user", "content": "hi", "timestamp": 1})
        session.append_message(assistant_message("hello", 2))
    assert len(session.get_entries()) == (2 if pi == "0.86.1" else 0)
    assert err.value.code == "ENOENT"
    assert str(err.value) == f"ENOENT: no such file or directory, open '{explicit_file}'"
    assert not explicit_dir.exists()
