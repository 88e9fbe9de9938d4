"""Port of pi's ``packages/coding-agent/test/session-manager/save-entry.test.ts``.

Source: earendil-works/pi (as indexed) @ fef6108d.
"""

from __future__ import annotations

from pi_session_server.session import SessionManager


def test_save_entry__saves_custom_entries_and_includes_them_in_tree_traversal():
    session = SessionManager.in_memory()
    msg_id = session.append_message({"role": "user", "content": "hello", "timestamp": 1})
    custom_id = session.append_custom_entry("my_data", {"foo": "bar"})
    msg2_id = session.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "test",
            "usage": {
                "input": 1,
                "output": 1,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 2,
                "cost": {
                    "input": 0,
                    "output": 0,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "total": 0,
                    "source": "pi",
                },
            },
            "stopReason": "stop",
            "timestamp": 2,
        }
    )

    entries = session.get_entries()
    assert len(entries) == 3
    custom = next(e for e in entries if e["type"] == "custom")
    assert custom["customType"] == "my_data"
    assert custom["data"] == {"foo": "bar"}
    assert custom["id"] == custom_id
    assert custom["parentId"] == msg_id

    assert [e["id"] for e in session.get_branch()] == [msg_id, custom_id, msg2_id]
    # custom entries are not part of the LLM context
    assert len(session.build_session_context()["messages"]) == 2
