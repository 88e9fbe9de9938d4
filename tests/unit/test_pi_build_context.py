"""Port of pi's ``packages/coding-agent/test/session-manager/build-context.test.ts``.

Source: earendil-works/pi @ 40065aec (same cases as badlogic/pi-mono @ 5bfa06af plus the
``display:false`` custom-message case). The free function ``buildSessionContext(entries, leafId?)``
is ``build_session_context(entries, leaf_id=ABSENT)``.
"""

from __future__ import annotations

from builders import assistant_message, message_entry, user_message

from pi_session_server.session import build_session_context

TS = "2025-01-01T00:00:00Z"


def msg(entry_id, parent_id, role, text):
    message = user_message(text, 1) if role == "user" else assistant_message(text, 1, model="claude-test")
    return message_entry(entry_id, parent_id, message, TS)


def compaction(entry_id, parent_id, summary, first_kept_entry_id):
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": TS,
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": 1000,
    }


def branch_summary(entry_id, parent_id, summary, from_id):
    return {
        "type": "branch_summary",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": TS,
        "summary": summary,
        "fromId": from_id,
    }


def thinking_level(entry_id, parent_id, level):
    return {
        "type": "thinking_level_change",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": TS,
        "thinkingLevel": level,
    }


def model_change(entry_id, parent_id, provider, model_id):
    return {
        "type": "model_change",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": TS,
        "provider": provider,
        "modelId": model_id,
    }


def custom_message(entry_id, parent_id, custom_type, content, display):
    return {
        "type": "custom_message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": TS,
        "customType": custom_type,
        "content": content,
        "display": display,
    }


# -- trivial cases ----------------------------------------------------------------------------


def test_build_context__empty_entries_returns_empty_context():
    ctx = build_session_context([])
    assert ctx["messages"] == []
    assert ctx["thinkingLevel"] == "off"
    assert ctx["model"] is None


def test_build_context__single_user_message():
    ctx = build_session_context([msg("1", None, "user", "hello")])
    assert len(ctx["messages"]) == 1
    assert ctx["messages"][0]["role"] == "user"


def test_build_context__simple_conversation():
    entries = [
        msg("1", None, "user", "hello"),
        msg("2", "1", "assistant", "hi there"),
        msg("3", "2", "user", "how are you"),
        msg("4", "3", "assistant", "great"),
    ]
    ctx = build_session_context(entries)
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant", "user", "assistant"]


def test_build_context__includes_display_false_custom_messages_in_context():
    entries = [
        msg("1", None, "user", "hello"),
        custom_message("2", "1", "pi-inline-skill-snapshot", "hidden context", False),
        msg("3", "2", "assistant", "hi"),
    ]
    messages = build_session_context(entries, "3")["messages"]
    assert len(messages) == 3
    assert messages[0]["role"] == "user"
    assert messages[1]["role"] == "custom"
    assert messages[1]["customType"] == "pi-inline-skill-snapshot"
    assert messages[1]["content"] == "hidden context"
    assert messages[1]["display"] is False
    assert messages[2]["role"] == "assistant"


def test_build_context__tracks_thinking_level_changes():
    entries = [
        msg("1", None, "user", "hello"),
        thinking_level("2", "1", "high"),
        msg("3", "2", "assistant", "thinking hard"),
    ]
    ctx = build_session_context(entries)
    assert ctx["thinkingLevel"] == "high"
    assert len(ctx["messages"]) == 2


def test_build_context__tracks_model_from_assistant_message():
    ctx = build_session_context([msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")])
    assert ctx["model"] == {"provider": "anthropic", "modelId": "claude-test"}


def test_build_context__tracks_model_from_model_change_entry():
    entries = [
        msg("1", None, "user", "hello"),
        model_change("2", "1", "openai", "gpt-4"),
        msg("3", "2", "assistant", "hi"),
    ]
    # the assistant message after the model change overrides it
    assert build_session_context(entries)["model"] == {"provider": "anthropic", "modelId": "claude-test"}


# -- with compaction --------------------------------------------------------------------------


def test_build_context__with_compaction_includes_summary_before_kept_messages():
    entries = [
        msg("1", None, "user", "first"),
        msg("2", "1", "assistant", "response1"),
        msg("3", "2", "user", "second"),
        msg("4", "3", "assistant", "response2"),
        compaction("5", "4", "Summary of first two turns", "3"),
        msg("6", "5", "user", "third"),
        msg("7", "6", "assistant", "response3"),
    ]
    messages = build_session_context(entries)["messages"]
    assert len(messages) == 5
    assert "Summary of first two turns" in messages[0]["summary"]
    assert messages[1]["content"] == "second"
    assert messages[2]["content"][0]["text"] == "response2"
    assert messages[3]["content"] == "third"
    assert messages[4]["content"][0]["text"] == "response3"


def test_build_context__with_compaction_handles_compaction_keeping_from_first_message():
    entries = [
        msg("1", None, "user", "first"),
        msg("2", "1", "assistant", "response"),
        compaction("3", "2", "Empty summary", "1"),
        msg("4", "3", "user", "second"),
    ]
    messages = build_session_context(entries)["messages"]
    assert len(messages) == 4
    assert "Empty summary" in messages[0]["summary"]


def test_build_context__with_compaction_multiple_compactions_uses_latest():
    entries = [
        msg("1", None, "user", "a"),
        msg("2", "1", "assistant", "b"),
        compaction("3", "2", "First summary", "1"),
        msg("4", "3", "user", "c"),
        msg("5", "4", "assistant", "d"),
        compaction("6", "5", "Second summary", "4"),
        msg("7", "6", "user", "e"),
    ]
    messages = build_session_context(entries)["messages"]
    assert len(messages) == 4
    assert "Second summary" in messages[0]["summary"]


# -- with branches ----------------------------------------------------------------------------


def test_build_context__with_branches_follows_path_to_specified_leaf():
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "response"),
        msg("3", "2", "user", "branch A"),
        msg("4", "2", "user", "branch B"),
    ]
    ctx_a = build_session_context(entries, "3")["messages"]
    assert len(ctx_a) == 3
    assert ctx_a[2]["content"] == "branch A"
    ctx_b = build_session_context(entries, "4")["messages"]
    assert len(ctx_b) == 3
    assert ctx_b[2]["content"] == "branch B"


def test_build_context__with_branches_includes_branch_summary_in_path():
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "response"),
        msg("3", "2", "user", "abandoned path"),
        branch_summary("4", "2", "Summary of abandoned work", "3"),
        msg("5", "4", "user", "new direction"),
    ]
    messages = build_session_context(entries, "5")["messages"]
    assert len(messages) == 4
    assert "Summary of abandoned work" in messages[2]["summary"]
    assert messages[3]["content"] == "new direction"


def test_build_context__with_branches_complex_tree_with_multiple_branches_and_compaction():
    entries = [
        msg("1", None, "user", "start"),
        msg("2", "1", "assistant", "r1"),
        msg("3", "2", "user", "q2"),
        msg("4", "3", "assistant", "r2"),
        compaction("5", "4", "Compacted history", "3"),
        msg("6", "5", "user", "q3"),
        msg("7", "6", "assistant", "r3"),
        msg("8", "3", "user", "wrong path"),
        msg("9", "8", "assistant", "wrong response"),
        branch_summary("10", "3", "Tried wrong approach", "9"),
        msg("11", "10", "user", "better approach"),
    ]
    main = build_session_context(entries, "7")["messages"]
    assert len(main) == 5
    assert "Compacted history" in main[0]["summary"]
    assert main[1]["content"] == "q2"
    assert main[2]["content"][0]["text"] == "r2"
    assert main[3]["content"] == "q3"
    assert main[4]["content"][0]["text"] == "r3"

    branch = build_session_context(entries, "11")["messages"]
    assert len(branch) == 5
    assert branch[0]["content"] == "start"
    assert branch[1]["content"][0]["text"] == "r1"
    assert branch[2]["content"] == "q2"
    assert "Tried wrong approach" in branch[3]["summary"]
    assert branch[4]["content"] == "better approach"


# -- edge cases -------------------------------------------------------------------------------


def test_build_context__edge_cases_uses_last_entry_when_leafId_not_found():
    entries = [msg("1", None, "user", "hello"), msg("2", "1", "assistant", "hi")]
    assert len(build_session_context(entries, "nonexistent")["messages"]) == 2


def test_build_context__edge_cases_handles_orphaned_entries_gracefully():
    entries = [msg("1", None, "user", "hello"), msg("2", "missing", "assistant", "orphan")]
    # the parent chain is broken: only the orphan itself
    assert len(build_session_context(entries, "2")["messages"]) == 1
