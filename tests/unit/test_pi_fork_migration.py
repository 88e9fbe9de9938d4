"""Port of pi's ``packages/coding-agent/test/session-manager/fork-migration.test.ts``.

Source: earendil-works/pi (as indexed) @ c3ad79d6. Upstream pi later made ``forkFrom`` migrate what
it copies; 0.86.1 does not (a v1 fork is unusable), and our deviation **D4** does exactly what this
test expects (checked against the oracle's patched "ours" module).
"""

from __future__ import annotations

import json

import pytest

from pi_session_server.session import SessionManager

TIMESTAMP = "2025-01-01T00:00:00.000Z"


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    directory = tmp_path / "pi-fork-migration"
    directory.mkdir()
    return directory


def _content(values):
    return "".join(json.dumps(v, separators=(",", ":")) + "\n" for v in values)


@pytest.mark.parametrize("version", [None, 1], ids=["version-undefined", "version-1"])
def test_fork_migration__preserves_v1_history_and_tree_links(temp_dir, version):
    source_path = temp_dir / "source.jsonl"
    first = {"role": "user", "content": "first", "timestamp": 1}
    second = {"role": "user", "content": "second", "timestamp": 2}
    header = {"type": "session", "id": "legacy", "timestamp": TIMESTAMP, "cwd": str(temp_dir)}
    if version is not None:
        header = {
            "type": "session",
            "version": version,
            "id": "legacy",
            "timestamp": TIMESTAMP,
            "cwd": str(temp_dir),
        }
    source_content = _content(
        [
            header,
            {"type": "message", "timestamp": TIMESTAMP, "message": first},
            {"type": "message", "timestamp": TIMESTAMP, "message": second},
        ]
    )
    source_path.write_text(source_content)

    fork = SessionManager.fork_from(str(source_path), str(temp_dir), str(temp_dir))
    assert fork.build_session_context()["messages"] == [first, second]
    entries = fork.get_entries()
    assert isinstance(entries[0]["id"], str)
    assert entries[0]["parentId"] is None
    assert entries[1]["parentId"] == entries[0]["id"]
    assert fork.get_header()["version"] == 3
    assert fork.get_header()["parentSession"] == str(source_path)
    assert source_path.read_text() == source_content
    reopened = SessionManager.open(fork.get_session_file(), str(temp_dir))
    assert reopened.build_session_context()["messages"] == [first, second]


def test_fork_migration__migrates_v2_hook_messages_without_changing_entry_ids_or_the_source(temp_dir):
    source_path = temp_dir / "source.jsonl"
    legacy_message = {
        "role": "hookMessage",
        "customType": "note",
        "content": "saved context",
        "display": False,
        "timestamp": 1,
    }
    source_content = _content(
        [
            {"type": "session", "version": 2, "id": "legacy", "timestamp": TIMESTAMP, "cwd": str(temp_dir)},
            {
                "type": "message",
                "id": "entry-1",
                "parentId": None,
                "timestamp": TIMESTAMP,
                "message": legacy_message,
            },
        ]
    )
    source_path.write_text(source_content)

    fork = SessionManager.fork_from(str(source_path), str(temp_dir), str(temp_dir))
    expected = [{**legacy_message, "role": "custom"}]
    assert fork.build_session_context()["messages"] == expected
    first = fork.get_entries()[0]
    assert first["id"] == "entry-1"
    assert first["parentId"] is None
    assert source_path.read_text() == source_content
    reopened = SessionManager.open(fork.get_session_file(), str(temp_dir))
    assert reopened.build_session_context()["messages"] == expected
