"""Port of pi's ``packages/coding-agent/test/session-manager/labels.test.ts``.

Sources (see ``PI_TESTS.md``): the classic version (Einliterflasche/pi @ efdc58b8, identical in
substance to jackfriedson/pi-mono @ 98795070) and a later earendil-era version that adds
"relinks fork ancestry across consecutive labels" (found by ``find_string``, index id 66516776481).
``appendLabelChange(id, undefined)`` is ``append_label_change(id)`` (label not given).
"""

from __future__ import annotations

import copy
import os
from functools import partial
from pathlib import Path

import pytest
from builders import assistant_message
from builders import user_message as user

from pi_session_server.errors import EntryNotFoundError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager
from pi_session_server.session import manager as manager_module

ASSISTANT = assistant_message("hi", 2)
faux_assistant_message = partial(assistant_message, timestamp=2)


def find_node(nodes, entry_id):
    return next((n for n in nodes if n.entry["id"] == entry_id), None)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)


def test_labels__sets_and_gets_labels():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user("hello", 1))
    assert session.get_label(msg_id) is ABSENT

    label_id = session.append_label_change(msg_id, "checkpoint")
    assert session.get_label(msg_id) == "checkpoint"

    label_entry = next(e for e in session.get_entries() if e["type"] == "label")
    assert label_entry["id"] == label_id
    assert label_entry["targetId"] == msg_id
    assert label_entry["label"] == "checkpoint"


def test_labels__clears_labels_with_undefined():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user("hello", 1))
    session.append_label_change(msg_id, "checkpoint")
    assert session.get_label(msg_id) == "checkpoint"
    session.append_label_change(msg_id)
    assert session.get_label(msg_id) is ABSENT


def test_labels__last_label_wins():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user("hello", 1))
    session.append_label_change(msg_id, "first")
    session.append_label_change(msg_id, "second")
    last_label_id = session.append_label_change(msg_id, "third")

    assert session.get_label(msg_id) == "third"
    last_label_entry = session.get_entry(last_label_id)
    msg_node = find_node(session.get_tree(), msg_id)
    assert msg_node.label_timestamp == last_label_entry["timestamp"]


def test_labels__labels_are_included_in_tree_nodes():
    session = SessionManager.in_memory()
    msg1_id = session.append_message(user("hello", 1))
    msg2_id = session.append_message(ASSISTANT)
    msg1_label_id = session.append_label_change(msg1_id, "start")
    msg2_label_id = session.append_label_change(msg2_id, "response")

    tree = session.get_tree()
    msg1_node = find_node(tree, msg1_id)
    assert msg1_node.label == "start"
    assert msg1_node.label_timestamp == session.get_entry(msg1_label_id)["timestamp"]
    msg2_node = find_node(msg1_node.children, msg2_id)
    assert msg2_node.label == "response"
    assert msg2_node.label_timestamp == session.get_entry(msg2_label_id)["timestamp"]


def test_labels__labels_are_preserved_in_createBranchedSession():
    session = SessionManager.in_memory()
    msg1_id = session.append_message(user("hello", 1))
    msg2_id = session.append_message(ASSISTANT)
    msg1_label_ts = session.get_entry(session.append_label_change(msg1_id, "important"))["timestamp"]
    msg2_label_ts = session.get_entry(session.append_label_change(msg2_id, "also-important"))["timestamp"]

    session.create_branched_session(msg2_id)

    assert session.get_label(msg1_id) == "important"
    assert session.get_label(msg2_id) == "also-important"
    assert len([e for e in session.get_entries() if e["type"] == "label"]) == 2
    tree = session.get_tree()
    msg1_node = find_node(tree, msg1_id)
    msg2_node = find_node(msg1_node.children, msg2_id)
    assert msg1_node.label_timestamp == msg1_label_ts
    assert msg2_node.label_timestamp == msg2_label_ts


def test_labels__rewires_children_of_removed_labels_when_forking():
    session = SessionManager.in_memory()
    msg1_id = session.append_message(user("hello", 1))
    session.append_label_change(msg1_id, "checkpoint")
    model_change_id = session.append_model_change("anthropic", "claude-test")
    msg2_id = session.append_message(user("followup", 2))

    session.create_branched_session(msg2_id)

    assert session.get_entry(model_change_id)["parentId"] == msg1_id


@pytest.mark.parametrize("persist", [False, True])
def test_labels__relinks_fork_ancestry_across_consecutive_labels_without_mutating_source_entries(
    persist, tmp_path, monkeypatch
):
    # vi.setSystemTime: entries get the timestamp of the "current day" set below
    clock = {"now": "2025-01-01T00:00:00.000Z"}
    monkeypatch.setattr(manager_module, "_now", lambda: clock["now"])

    directory = tmp_path / "pi-label-fork"
    directory.mkdir()
    session = (
        SessionManager.create(str(directory), str(directory / "sessions"))
        if persist
        else SessionManager.in_memory(str(directory))
    )
    root_id = session.append_message(user("start", 1))
    checkpoint_id = session.append_message(faux_assistant_message("checkpoint"))
    root_label_id = session.append_label_change(root_id, "start label")
    checkpoint_label_id = session.append_label_change(checkpoint_id, "checkpoint label")
    read_id = session.append_message(user("unchanged read", 2))
    target_id = session.append_message(faux_assistant_message("unchanged"))
    clock["now"] = "2025-01-02T00:00:00.000Z"
    # forks keep the latest label of a kept target, even one set after the fork point
    latest_label_id = session.append_label_change(checkpoint_id, "latest checkpoint label")
    later_id = session.append_message(user("source only", 3))
    session.append_label_change(later_id, "not inherited")

    expected_labels = []
    for label_id in (root_label_id, latest_label_id):
        entry = session.get_entry(label_id)
        expected_labels.append((entry["targetId"], entry["label"], entry["timestamp"]))
    source_entries = session.get_entries()
    source_copy = copy.deepcopy([e.to_json() for e in source_entries])
    retained = [e for e in session.get_branch(target_id) if e["type"] != "label"]
    source_read = session.get_entry(read_id)
    assert source_read["parentId"] == checkpoint_label_id
    source_file = session.get_session_file() if persist else None
    source_bytes = Path(source_file).read_bytes() if source_file else None

    clock["now"] = "2026-01-01T00:00:00.000Z"
    fork_file = session.create_branched_session(target_id)
    fork = SessionManager.open(fork_file) if persist else session
    assert isinstance(fork_file, str) is persist
    assert [e.to_json() for e in source_entries] == source_copy
    assert source_read["parentId"] == checkpoint_label_id
    if source_file:
        assert fork_file != source_file
        assert Path(source_file).read_bytes() == source_bytes
        assert [e.to_json() for e in SessionManager.open(source_file).get_entries()] == source_copy
    assert session.get_entry(read_id)["parentId"] == checkpoint_id
    assert session.get_entry(read_id) is not source_read

    expected_kept = []
    for index, entry in enumerate(retained):
        copied = dict(entry.to_json())
        copied["parentId"] = retained[index - 1]["id"] if index > 0 else None
        expected_kept.append(copied)
    assert [e.to_json() for e in fork.get_entries() if e["type"] != "label"] == expected_kept
    assert [e.to_json() for e in fork.get_branch()] == [e.to_json() for e in fork.get_entries()]
    assert [e.to_json() for e in session.get_branch()] == [e.to_json() for e in fork.get_branch()]

    relocated = [e for e in fork.get_entries() if e["type"] == "label"]
    assert [(e["targetId"], e["label"], e["timestamp"]) for e in relocated] == expected_labels
    old_ids = {e["id"] for e in source_entries}
    for index, label in enumerate(relocated):
        assert label["id"] not in old_ids
        assert label["parentId"] == (target_id if index == 0 else relocated[index - 1]["id"])
    assert fork.get_label(root_id) == "start label"
    assert fork.get_label(checkpoint_id) == "latest checkpoint label"
    assert fork.get_label(later_id) is ABSENT
    if persist:
        assert os.path.dirname(fork_file) == str(directory / "sessions")


def test_labels__labels_not_on_path_are_not_preserved_in_createBranchedSession():
    session = SessionManager.in_memory()
    msg1_id = session.append_message(user("hello", 1))
    msg2_id = session.append_message(ASSISTANT)
    msg3_id = session.append_message(user("followup", 3))
    session.append_label_change(msg1_id, "first")
    session.append_label_change(msg2_id, "second")
    session.append_label_change(msg3_id, "third")

    session.create_branched_session(msg2_id)

    assert session.get_label(msg1_id) == "first"
    assert session.get_label(msg2_id) == "second"
    assert session.get_label(msg3_id) is ABSENT


def test_labels__labels_are_not_included_in_buildSessionContext():
    session = SessionManager.in_memory()
    msg_id = session.append_message(user("hello", 1))
    session.append_label_change(msg_id, "checkpoint")
    messages = session.build_session_context()["messages"]
    assert len(messages) == 1
    assert messages[0]["role"] == "user"


def test_labels__throws_when_labeling_non_existent_entry():
    session = SessionManager.in_memory()
    with pytest.raises(EntryNotFoundError, match=r"^Entry non-existent not found$"):
        session.append_label_change("non-existent", "label")
