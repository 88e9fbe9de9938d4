"""Port of pi's ``packages/coding-agent/test/session-manager/new-session.test.ts``.

Source: badlogic/pi-mono @ c9d1f62c. Its third case expects the file to appear after the first
*user* message, which is what pi 1.6.0 does (docs/API.md §4.2); 0.86.1 writes nothing until
the first *assistant* message (docs/API.md §4.2, verified against the reference). The case keeps the
scenario, asserts each release, and then continues the upstream intent (no append across
``newSession``) with an assistant turn.
"""

from __future__ import annotations

import json
import os

import pytest
from builders import assistant_message as assistant_msg
from builders import user_message as user_msg

from pi_session_server.session import SessionManager


def is_in_dir(file_path, directory):
    resolved_file = os.path.abspath(file_path)
    resolved_dir = os.path.abspath(directory)
    return resolved_file == resolved_dir or resolved_file.startswith(resolved_dir + os.sep)


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line.strip()]


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_new_session__newSession_generates_a_new_session_file_path_when_persisting(temp_root):
    session_dir = temp_root / "sessions"
    session_dir.mkdir()
    session = SessionManager.create("/tmp/cwd", str(session_dir))
    first_file = session.get_session_file()
    assert first_file and is_in_dir(first_file, session_dir)

    session.new_session()
    second_file = session.get_session_file()
    assert second_file and is_in_dir(second_file, session_dir)
    assert second_file != first_file


def test_new_session__open_nonexistent_keeps_the_explicit_session_path(temp_root):
    explicit = temp_root / "explicit.jsonl"
    session = SessionManager.open(str(explicit))
    assert session.get_session_file() == os.path.abspath(explicit)
    assert not explicit.exists()


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_new_session__persists_after_first_assistant_message_and_does_not_append_across_new_spec_differs(
    temp_root, pi
):
    session_dir = temp_root / "sessions"
    session_dir.mkdir()
    session = SessionManager.create("/tmp/cwd", str(session_dir), pi=pi)
    first_file = session.get_session_file()
    assert not os.path.exists(first_file)

    session.append_message(user_msg("hello"))
    # upstream and 1.6.0 write the file here; 0.86.1 waits for the first assistant message
    assert os.path.exists(first_file) == (pi == "1.6.0")
    session.append_message(assistant_msg("hi"))
    assert os.path.exists(first_file)

    first_lines = _lines(first_file)
    assert len(first_lines) == 3
    assert json.loads(first_lines[0])["type"] == "session"
    assert json.loads(first_lines[1])["type"] == "message"
    assert json.loads(first_lines[1])["message"]["role"] == "user"
    assert json.loads(first_lines[2])["message"]["role"] == "assistant"

    session.new_session()
    second_file = session.get_session_file()
    assert second_file and second_file != first_file

    session.append_message(user_msg("new"))
    assert os.path.exists(second_file) == (pi == "1.6.0")
    session.append_message(assistant_msg("again"))
    assert os.path.exists(second_file)
    assert len(_lines(second_file)) == 3
    assert len(_lines(first_file)) == 3
