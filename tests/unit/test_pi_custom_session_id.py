"""Port of pi's ``packages/coding-agent/test/session-manager/custom-session-id.test.ts``.

Source: earendil-works/pi (as indexed) @ 7140db36. Not ported: the two ``flush()`` cases
(``SessionManager.flush`` does not exist in 0.86.1).
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from pi_session_server.errors import InvalidSessionIdError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

UUID_V7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
FILE_NAME_RE = r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_{}\.jsonl$"
ID_ERROR = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    directory = tmp_path / "pi-session-manager"
    directory.mkdir()
    return directory


def test_custom_session_id__uses_the_provided_id_instead_of_generating_one():
    session = SessionManager.in_memory()
    session.new_session({"id": "my-custom-id"})
    assert session.get_session_id() == "my-custom-id"


def test_custom_session_id__uses_the_provided_id_when_creating_an_in_memory_session():
    session = SessionManager.in_memory(os.getcwd(), {"id": "memory-session-id"})
    assert session.get_session_id() == "memory-session-id"
    assert session.get_header()["id"] == "memory-session-id"
    assert session.get_session_file() is ABSENT


def test_custom_session_id__allows_alphanumeric_session_ids_with_interior_punctuation():
    session = SessionManager.in_memory()
    session.new_session({"id": "abc-123_def.456"})
    assert session.get_session_id() == "abc-123_def.456"


@pytest.mark.parametrize(
    "bad_id", ["", "-abc", "abc-", "_abc", "abc_", ".abc", "abc.", "abc/def", "abc\\def", "abc def"]
)
def test_custom_session_id__rejects_invalid_custom_session_ids(bad_id):
    session = SessionManager.in_memory()
    before = session.get_session_id()
    with pytest.raises(InvalidSessionIdError) as err:
        session.new_session({"id": bad_id})
    assert str(err.value) == ID_ERROR
    assert session.get_session_id() == before  # nothing changed (docs/API.md §3.7)


def test_custom_session_id__generates_a_UUIDv7_id_when_no_id_is_provided():
    session = SessionManager.in_memory()
    session.new_session()
    assert UUID_V7_RE.match(session.get_session_id())


def test_custom_session_id__generates_a_UUIDv7_id_when_options_is_provided_without_id():
    session = SessionManager.in_memory()
    session.new_session({"parentSession": "parent.jsonl"})
    assert UUID_V7_RE.match(session.get_session_id())
    assert session.get_header()["parentSession"] == "parent.jsonl"


def test_custom_session_id__includes_the_custom_id_in_the_session_header():
    session = SessionManager.in_memory()
    session.new_session({"id": "header-test-id"})
    assert session.get_header()["id"] == "header-test-id"


def test_custom_session_id__generates_a_UUIDv7_id_when_constructed_without_an_explicit_id():
    session = SessionManager.in_memory()
    assert UUID_V7_RE.match(session.get_session_id())
    assert session.get_header()["id"] == session.get_session_id()


def test_custom_session_id__uses_the_provided_id_when_creating_a_persisted_session(temp_dir):
    session = SessionManager.create(str(temp_dir), str(temp_dir), {"id": "created-session-id"})
    assert session.get_session_id() == "created-session-id"
    assert session.get_header()["id"] == "created-session-id"
    session_file = session.get_session_file()
    assert re.match(FILE_NAME_RE.replace("{}", "created-session-id"), os.path.basename(session_file))
    assert not os.path.exists(session_file)


def test_custom_session_id__generates_a_UUIDv7_id_when_creating_a_branched_session():
    session = SessionManager.in_memory()
    first_id = session.append_message(
        {
            "role": "user",
            "content": [{"type": "text", "text": "hello"}],
            "timestamp": int(time.time() * 1000),
        }
    )
    before = session.get_session_id()
    session.create_branched_session(first_id)
    assert UUID_V7_RE.match(session.get_session_id())
    assert session.get_session_id() != before
    assert session.get_header()["id"] == session.get_session_id()


def _write(path, values):
    path.write_text("\n".join(json.dumps(v) for v in values) + "\n")
    return str(path)


def test_custom_session_id__generates_a_UUIDv7_id_when_forking_from_another_session_file(temp_dir):
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    source = _write(
        temp_dir / "source.jsonl",
        [
            {
                "type": "session",
                "version": 3,
                "id": "legacy-session-id",
                "timestamp": now,
                "cwd": str(temp_dir),
            },
            {
                "type": "message",
                "id": "entry-1",
                "parentId": None,
                "timestamp": now,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "hello"}],
                    "api": "openai-responses",
                    "provider": "openai",
                    "model": "gpt-5.4",
                    "usage": {
                        "input": 0,
                        "output": 0,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 0,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "stop",
                    "timestamp": int(time.time() * 1000),
                },
            },
        ],
    )
    forked = SessionManager.fork_from(source, str(temp_dir), str(temp_dir))
    header = forked.get_header()
    assert UUID_V7_RE.match(header["id"])
    assert header["parentSession"] == source


def test_custom_session_id__uses_the_provided_id_when_forking_from_another_session_file(temp_dir):
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    source = _write(
        temp_dir / "source.jsonl",
        [
            {
                "type": "session",
                "version": 3,
                "id": "source-session-id",
                "timestamp": now,
                "cwd": str(temp_dir),
            },
        ],
    )
    forked = SessionManager.fork_from(source, str(temp_dir), str(temp_dir), {"id": "forked-session-id"})
    header = forked.get_header()
    assert header["id"] == "forked-session-id"
    assert header["parentSession"] == source
    session_file = forked.get_session_file()
    assert re.match(FILE_NAME_RE.replace("{}", "forked-session-id"), os.path.basename(session_file))
