"""Port of pi's ``packages/coding-agent/test/session-manager/load-entries.test.ts``.

Source: earendil-works/pi (as indexed) @ 60778d2e: ``SessionManager.inMemory(cwd, options, entries)``
with entries taken from another manager (no header among them, docs/API.md §3.5 third bullet).
"""

from __future__ import annotations

import re

import builders

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

UUID_V7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def user_message(text):
    return builders.user_message([{"type": "text", "text": text}])


def stored_entries(build):
    source = SessionManager.in_memory("/project")
    build(source)
    return [e.to_json() for e in source.get_entries()]


def test_load_entries__adopts_entries_verbatim():
    def build(source):
        source.append_message(user_message("hello"))
        source.append_model_change("anthropic", "claude-opus-4-5")
        source.append_message(user_message("again"))

    entries = stored_entries(build)
    session = SessionManager.in_memory("/project", ABSENT, entries)
    assert [e.to_json() for e in session.get_entries()] == entries


def test_load_entries__keeps_the_loaded_leaf_so_appends_continue_the_conversation():
    def build(source):
        source.append_message(user_message("hello"))
        source.append_message(user_message("again"))

    entries = stored_entries(build)
    last_id = entries[-1]["id"]
    session = SessionManager.in_memory("/project", ABSENT, entries)
    appended_id = session.append_message(user_message("continued"))
    assert session.get_leaf_id() == appended_id
    assert session.get_entry(appended_id)["parentId"] == last_id


def test_load_entries__never_mints_an_id_that_collides_with_a_loaded_entry():
    def build(source):
        for i in range(50):
            source.append_message(user_message(f"message {i}"))

    entries = stored_entries(build)
    session = SessionManager.in_memory("/project", ABSENT, entries)
    appended_id = session.append_message(user_message("continued"))
    assert all(e["id"] != appended_id for e in entries)


def test_load_entries__rebuilds_the_branch_structure_rather_than_a_flat_chain():
    def build(source):
        first_id = source.append_message(user_message("hello"))
        source.append_message(user_message("abandoned"))
        source.branch(first_id)
        source.append_message(user_message("kept"))

    session = SessionManager.in_memory("/project", ABSENT, stored_entries(build))
    roots = session.get_tree()
    assert len(roots) == 1
    assert len(roots[0].children) == 2


def test_load_entries__rebuilds_labels():
    labelled = {}

    def build(source):
        labelled["id"] = source.append_message(user_message("hello"))
        source.append_label_change(labelled["id"], "checkpoint")

    session = SessionManager.in_memory("/project", ABSENT, stored_entries(build))
    assert session.get_label(labelled["id"]) == "checkpoint"


def test_load_entries__resolves_a_compaction_against_the_entry_it_was_written_against():
    kept = {}

    def build(source):
        source.append_message(user_message("dropped"))
        kept["id"] = source.append_message(user_message("kept"))
        source.append_compaction("summary so far", kept["id"], 1000)

    session = SessionManager.in_memory("/project", ABSENT, stored_entries(build))
    assert any(e.get("id") == kept["id"] for e in session.build_context_entries())


def test_load_entries__creates_a_header_from_the_options_when_the_entries_carry_none():
    entries = stored_entries(lambda source: source.append_message(user_message("hello")))
    session = SessionManager.in_memory("/project", {"id": "restored-session"}, entries)
    assert session.get_session_id() == "restored-session"
    assert session.get_header()["id"] == "restored-session"
    assert session.get_header()["cwd"] == "/project"


def test_load_entries__generates_a_session_id_when_the_options_carry_none():
    entries = stored_entries(lambda source: source.append_message(user_message("hello")))
    session = SessionManager.in_memory("/project", ABSENT, entries)
    assert UUID_V7_RE.match(session.get_session_id())
    assert session.get_header()["id"] == session.get_session_id()


def test_load_entries__stays_off_the_filesystem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    entries = stored_entries(lambda source: source.append_message(user_message("hello")))
    session = SessionManager.in_memory("/project", ABSENT, entries)
    session.append_message(user_message("continued"))
    assert session.get_session_file() is ABSENT
    assert session.is_persisted() is False
    assert list(tmp_path.iterdir()) == []


def test_load_entries__starts_an_empty_session_when_the_entries_are_empty():
    session = SessionManager.in_memory("/project", {"id": "empty-session"}, [])
    assert session.get_session_id() == "empty-session"
    assert session.get_entries() == []
    assert session.get_leaf_id() is None
