"""Session-layer part of pi's ``packages/coding-agent/test/session-manager/transcript-projection.test.ts``.

Source: earendil-works/pi (as indexed) @ 1c78a971. ``buildTranscriptProjection`` is a later pi module
(not in 0.86.1); the one assertion about the session layer is what ``buildContextEntries()`` returns
after two compactions, while the full branch stays available through ``getBranch()``.
"""

from __future__ import annotations

from functools import partial

from builders import assistant_message, user_message

from pi_session_server.session import SessionManager

user = partial(user_message, timestamp=1)
assistant = partial(assistant_message, timestamp=1, model="test-model")


def test_transcript_projection__repeated_compaction_narrows_model_context_but_keeps_the_full_branch():
    session = SessionManager.in_memory()
    user1 = session.append_message(user("one"))
    assistant1 = session.append_message(assistant("answer one"))
    user2 = session.append_message(user("two"))
    assistant2 = session.append_message(assistant("answer two"))
    compaction1 = session.append_compaction("first summary", user2, 100)
    user3 = session.append_message(user("three"))
    assistant3 = session.append_message(assistant("answer three"))
    compaction2 = session.append_compaction("second summary", user3, 200)
    user4 = session.append_message(user("four"))

    full_human = [user1, assistant1, user2, assistant2, compaction1, user3, assistant3, compaction2, user4]
    assert [e["id"] for e in session.get_branch()] == full_human
    assert [e["id"] for e in session.build_context_entries()] == [compaction2, user3, assistant3, user4]
