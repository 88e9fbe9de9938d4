"""Port of pi's ``packages/coding-agent/test/session-manager/tree-traversal.test.ts``.

Union of two upstream versions (earendil-works/pi @ 1c78a971, badlogic/pi-mono @ 4cfe4187); see
``PI_TESTS.md``. ``getPath`` is ``getBranch`` in 0.86.1 (``get_branch`` here). Assertions on
``getEntryCount``/``getEntriesSince`` (newer pi, not in 0.86.1) are left out.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from builders import assistant_message as assistant_msg
from builders import user_message as user_msg

from pi_session_server.errors import EntryNotFoundError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

USAGE = {
    "input": 10,
    "output": 20,
    "cacheRead": 30,
    "cacheWrite": 40,
    "totalTokens": 100,
    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.3, "cacheWrite": 0.4, "total": 1},
}


def _records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().strip().split("\n") if line]


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


# -- append operations ------------------------------------------------------------------------


def test_tree_traversal__appendMessage_creates_entry_with_correct_parentId_chain():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("first"))
    id2 = session.append_message(assistant_msg("second"))
    id3 = session.append_message(user_msg("third"))

    entries = session.get_entries()
    assert len(entries) == 3
    assert entries[0]["id"] == id1
    assert entries[0]["parentId"] is None
    assert entries[0]["type"] == "message"
    assert entries[1]["id"] == id2
    assert entries[1]["parentId"] == id1
    assert entries[2]["id"] == id3
    assert entries[2]["parentId"] == id2


def test_tree_traversal__appendThinkingLevelChange_integrates_into_tree():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user_msg("hello"))
    thinking_id = session.append_thinking_level_change("high")
    session.append_message(assistant_msg("response"))

    entries = session.get_entries()
    assert len(entries) == 3
    thinking = next(e for e in entries if e["type"] == "thinking_level_change")
    assert thinking["id"] == thinking_id
    assert thinking["parentId"] == msg_id
    assert entries[2]["parentId"] == thinking_id


def test_tree_traversal__appendModelChange_integrates_into_tree():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user_msg("hello"))
    model_id = session.append_model_change("openai", "gpt-4")
    session.append_message(assistant_msg("response"))

    entries = session.get_entries()
    model_entry = next(e for e in entries if e["type"] == "model_change")
    assert model_entry["id"] == model_id
    assert model_entry["parentId"] == msg_id
    assert model_entry["provider"] == "openai"
    assert model_entry["modelId"] == "gpt-4"
    assert entries[2]["parentId"] == model_id


def test_tree_traversal__appendCompaction_integrates_into_tree():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    compaction_id = session.append_compaction("summary", id1, 1000, ABSENT, False, USAGE)
    session.append_message(user_msg("3"))

    entries = session.get_entries()
    compaction = next(e for e in entries if e["type"] == "compaction")
    assert compaction["id"] == compaction_id
    assert compaction["parentId"] == id2
    assert compaction["summary"] == "summary"
    assert compaction["firstKeptEntryId"] == id1
    assert compaction["tokensBefore"] == 1000
    assert compaction["usage"] == USAGE
    assert entries[3]["parentId"] == compaction_id


def test_tree_traversal__appendCompaction_without_usage_writes_no_usage_key():
    # badlogic/pi-mono version of the same case: appendCompaction(summary, id, tokens) only
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    session.append_message(assistant_msg("2"))
    compaction_id = session.append_compaction("summary", id1, 1000)
    compaction = session.get_entry(compaction_id)
    assert compaction["firstKeptEntryId"] == id1
    assert "usage" not in compaction
    assert "details" not in compaction


def test_tree_traversal__appendCustomEntry_integrates_into_tree():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user_msg("hello"))
    custom_id = session.append_custom_entry("my_data", {"key": "value"})
    session.append_message(assistant_msg("response"))

    entries = session.get_entries()
    custom = next(e for e in entries if e["type"] == "custom")
    assert custom["id"] == custom_id
    assert custom["parentId"] == msg_id
    assert custom["customType"] == "my_data"
    assert custom["data"] == {"key": "value"}
    assert entries[2]["parentId"] == custom_id


def test_tree_traversal__leaf_pointer_advances_after_each_append():
    session = SessionManager.in_memory()
    assert session.get_leaf_id() is None
    id1 = session.append_message(user_msg("1"))
    assert session.get_leaf_id() == id1
    id2 = session.append_message(assistant_msg("2"))
    assert session.get_leaf_id() == id2
    id3 = session.append_thinking_level_change("high")
    assert session.get_leaf_id() == id3


# -- getPath (getBranch) ----------------------------------------------------------------------


def test_tree_traversal__getPath_returns_empty_array_for_empty_session():
    assert SessionManager.in_memory().get_branch() == []


def test_tree_traversal__getPath_returns_single_entry_path():
    session = SessionManager.in_memory()
    entry_id = session.append_message(user_msg("hello"))
    path = session.get_branch()
    assert len(path) == 1
    assert path[0]["id"] == entry_id


def test_tree_traversal__getPath_returns_full_path_from_root_to_leaf():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    id3 = session.append_thinking_level_change("high")
    id4 = session.append_message(user_msg("3"))
    assert [e["id"] for e in session.get_branch()] == [id1, id2, id3, id4]


def test_tree_traversal__getPath_returns_path_from_specified_entry_to_root():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    session.append_message(user_msg("3"))
    session.append_message(assistant_msg("4"))
    assert [e["id"] for e in session.get_branch(id2)] == [id1, id2]


def test_tree_traversal__getPath_terminates_on_malformed_parent_cycles(tmp_path):
    # Upstream fixed the 0.86.1 infinite loop the same way our D1 does.
    session_file = tmp_path / "cycle-branch.jsonl"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "session-cycle",
            "timestamp": "2026-02-27T11:00:00.000Z",
            "cwd": str(tmp_path),
        },
        {
            "type": "custom",
            "customType": "marker",
            "id": "cycle-a",
            "parentId": "cycle-b",
            "timestamp": "2026-02-27T11:00:01.000Z",
        },
        {
            "type": "custom",
            "customType": "marker",
            "id": "cycle-b",
            "parentId": "cycle-a",
            "timestamp": "2026-02-27T11:00:02.000Z",
        },
    ]
    session_file.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    session = SessionManager.open(str(session_file), str(tmp_path))
    assert [e["id"] for e in session.get_branch("cycle-b")] == ["cycle-a", "cycle-b"]


# -- getTree ----------------------------------------------------------------------------------


def test_tree_traversal__getTree_returns_empty_array_for_empty_session():
    assert SessionManager.in_memory().get_tree() == []


def test_tree_traversal__getTree_returns_single_root_for_linear_session():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    id3 = session.append_message(user_msg("3"))

    tree = session.get_tree()
    assert len(tree) == 1
    root = tree[0]
    assert root.entry["id"] == id1
    assert len(root.children) == 1
    assert root.children[0].entry["id"] == id2
    assert len(root.children[0].children) == 1
    assert root.children[0].children[0].entry["id"] == id3
    assert root.children[0].children[0].children == []


def test_tree_traversal__getTree_returns_tree_with_branches_after_branch():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    id3 = session.append_message(user_msg("3"))
    session.branch(id2)
    id4 = session.append_message(user_msg("4-branch"))

    tree = session.get_tree()
    assert len(tree) == 1
    root = tree[0]
    assert root.entry["id"] == id1
    assert len(root.children) == 1
    node2 = root.children[0]
    assert node2.entry["id"] == id2
    assert sorted(c.entry["id"] for c in node2.children) == sorted([id3, id4])


def test_tree_traversal__getTree_handles_multiple_branches_at_same_point():
    session = SessionManager.in_memory()
    session.append_message(user_msg("root"))
    id2 = session.append_message(assistant_msg("response"))
    session.branch(id2)
    id_a = session.append_message(user_msg("branch-A"))
    session.branch(id2)
    id_b = session.append_message(user_msg("branch-B"))
    session.branch(id2)
    id_c = session.append_message(user_msg("branch-C"))

    node2 = session.get_tree()[0].children[0]
    assert node2.entry["id"] == id2
    assert sorted(c.entry["id"] for c in node2.children) == sorted([id_a, id_b, id_c])


def test_tree_traversal__getTree_handles_deep_branching():
    session = SessionManager.in_memory()
    session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    id3 = session.append_message(user_msg("3"))
    session.append_message(assistant_msg("4"))
    session.branch(id2)
    id5 = session.append_message(user_msg("5"))
    session.append_message(assistant_msg("6"))
    session.branch(id5)
    session.append_message(user_msg("7"))

    node2 = session.get_tree()[0].children[0]
    assert len(node2.children) == 2
    node5 = next(c for c in node2.children if c.entry["id"] == id5)
    assert len(node5.children) == 2
    node3 = next(c for c in node2.children if c.entry["id"] == id3)
    assert len(node3.children) == 1


# -- branch -----------------------------------------------------------------------------------


def test_tree_traversal__branch_moves_leaf_pointer_to_specified_entry():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    session.append_message(assistant_msg("2"))
    id3 = session.append_message(user_msg("3"))
    assert session.get_leaf_id() == id3
    session.branch(id1)
    assert session.get_leaf_id() == id1


def test_tree_traversal__branch_throws_for_non_existent_entry():
    session = SessionManager.in_memory()
    session.append_message(user_msg("hello"))
    with pytest.raises(EntryNotFoundError, match=r"^Entry nonexistent not found$"):
        session.branch("nonexistent")


def test_tree_traversal__branch_new_appends_become_children_of_branch_point():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    session.append_message(assistant_msg("2"))
    session.branch(id1)
    id3 = session.append_message(user_msg("branched"))
    branched = next(e for e in session.get_entries() if e["id"] == id3)
    assert branched["parentId"] == id1


# -- branchWithSummary ------------------------------------------------------------------------


def test_tree_traversal__branchWithSummary_inserts_branch_summary_and_advances_leaf():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    session.append_message(assistant_msg("2"))
    session.append_message(user_msg("3"))

    summary_id = session.branch_with_summary(id1, "Summary of abandoned work", ABSENT, False, USAGE)
    assert session.get_leaf_id() == summary_id
    summary = next(e for e in session.get_entries() if e["type"] == "branch_summary")
    assert summary["parentId"] == id1
    assert summary["summary"] == "Summary of abandoned work"
    assert summary["usage"] == USAGE


def test_tree_traversal__branchWithSummary_throws_for_non_existent_entry():
    session = SessionManager.in_memory()
    session.append_message(user_msg("hello"))
    with pytest.raises(EntryNotFoundError, match=r"^Entry nonexistent not found$"):
        session.branch_with_summary("nonexistent", "summary")


# -- getLeafEntry / getEntry ------------------------------------------------------------------


def test_tree_traversal__getLeafEntry_returns_undefined_for_empty_session():
    assert SessionManager.in_memory().get_leaf_entry() is ABSENT


def test_tree_traversal__getLeafEntry_returns_current_leaf_entry():
    session = SessionManager.in_memory()
    session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    assert session.get_leaf_entry()["id"] == id2


def test_tree_traversal__getEntry_returns_undefined_for_non_existent_id():
    assert SessionManager.in_memory().get_entry("nonexistent") is ABSENT


def test_tree_traversal__getEntry_returns_entry_by_id():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("first"))
    id2 = session.append_message(assistant_msg("second"))
    entry1 = session.get_entry(id1)
    assert entry1["type"] == "message"
    assert entry1["message"]["content"] == "first"
    assert session.get_entry(id2)["message"]["content"][0]["text"] == "second"


# -- buildSessionContext with branches --------------------------------------------------------


def test_tree_traversal__buildSessionContext_returns_messages_from_current_branch_only():
    session = SessionManager.in_memory()
    session.append_message(user_msg("msg1"))
    id2 = session.append_message(assistant_msg("msg2"))
    session.append_message(user_msg("msg3"))
    session.branch(id2)
    session.append_message(assistant_msg("msg4-branch"))

    messages = session.build_session_context()["messages"]
    assert len(messages) == 3
    assert messages[0]["content"] == "msg1"
    assert messages[1]["content"][0]["text"] == "msg2"
    assert messages[2]["content"][0]["text"] == "msg4-branch"


# -- createBranchedSession --------------------------------------------------------------------


def test_tree_traversal__createBranchedSession_throws_for_non_existent_entry():
    session = SessionManager.in_memory()
    session.append_message(user_msg("hello"))
    with pytest.raises(EntryNotFoundError, match=r"^Entry nonexistent not found$"):
        session.create_branched_session("nonexistent")


def test_tree_traversal__createBranchedSession_creates_new_session_with_path_to_leaf_in_memory():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    id3 = session.append_message(user_msg("3"))
    session.append_message(assistant_msg("4"))
    session.branch(id3)
    session.append_message(user_msg("5"))

    assert session.create_branched_session(id2) is ABSENT
    assert [e["id"] for e in session.get_entries()] == [id1, id2]


def test_tree_traversal__createBranchedSession_extracts_correct_path_from_branched_tree():
    session = SessionManager.in_memory()
    id1 = session.append_message(user_msg("1"))
    id2 = session.append_message(assistant_msg("2"))
    session.append_message(user_msg("3"))
    session.branch(id2)
    id4 = session.append_message(user_msg("4"))
    id5 = session.append_message(assistant_msg("5"))

    session.create_branched_session(id5)
    assert [e["id"] for e in session.get_entries()] == [id1, id2, id4, id5]


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_tree_traversal__createBranchedSession_does_not_duplicate_entries_when_forking_from_first_user_message(
    tmp_path, pi
):
    session = SessionManager.create(str(tmp_path), str(tmp_path), pi=pi)
    id1 = session.append_message(user_msg("first question"))
    session.append_message(assistant_msg("first answer"))
    session.append_message(user_msg("second question"))
    session.append_message(assistant_msg("second answer"))

    new_file = session.create_branched_session(id1)
    assert isinstance(new_file, str)
    # 0.86.1: no assistant on the branched path, the file waits for the first assistant message;
    # 1.6.0: the user message on it makes the file appear at once
    assert os.path.exists(new_file) == (pi == "1.6.0")

    session.append_custom_entry("preset-state", {"name": "plan"})
    session.append_message(assistant_msg("new answer"))

    records = _records(new_file)
    assert len([r for r in records if r["type"] == "session"]) == 1
    entry_ids = [r["id"] for r in records if r["type"] != "session" and isinstance(r.get("id"), str)]
    assert len(set(entry_ids)) == len(entry_ids)


def test_tree_traversal__createBranchedSession_preserves_tool_and_summary_usage_across_reload(tmp_path):
    session = SessionManager.create(str(tmp_path), str(tmp_path))
    root_id = session.append_message(user_msg("question"))
    session.append_message(assistant_msg("answer"))
    session.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call-1",
            "toolName": "nested-model",
            "content": [{"type": "text", "text": "result"}],
            "isError": False,
            "usage": USAGE,
            "timestamp": int(time.time() * 1000),
        }
    )
    session.append_compaction("summary", root_id, 100, ABSENT, False, USAGE)
    session.branch_with_summary(root_id, "branch summary", ABSENT, False, USAGE)

    reopened = SessionManager.open(session.get_session_file(), str(tmp_path))
    entries = reopened.get_entries()
    assert any(e["type"] == "compaction" and e["usage"] == USAGE for e in entries)
    assert any(e["type"] == "branch_summary" and e["usage"] == USAGE for e in entries)
    assert any(
        e["type"] == "message" and e["message"]["role"] == "toolResult" and e["message"]["usage"] == USAGE
        for e in entries
    )


def test_tree_traversal__createBranchedSession_writes_file_immediately_when_path_has_assistant(tmp_path):
    session = SessionManager.create(str(tmp_path), str(tmp_path))
    session.append_message(user_msg("first question"))
    id2 = session.append_message(assistant_msg("first answer"))
    session.append_message(user_msg("second question"))
    session.append_message(assistant_msg("second answer"))

    new_file = session.create_branched_session(id2)
    records = _records(new_file)
    assert len([r for r in records if r["type"] == "session"]) == 1
