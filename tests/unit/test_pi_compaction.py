"""Port of the session-layer parts of pi's ``packages/coding-agent/test/compaction.test.ts``.

Sources: badlogic/pi-mono @ 3ebd3438 and earendil-works/pi (as indexed) @ 247ad32f. Ported: the
``buildSessionContext`` describe block, the "Large session fixture" cases that only parse, migrate
and build a context, and the context half of "should preserve kept messages across repeated
compactions". Not ported (not session layer): token counting, ``shouldCompact``, ``findCutPoint``,
``prepareCompaction``, LLM summarization.

The fixture is pi's own ``test/fixtures/large-session.jsonl`` (a genuine v1 session), copied into
``data/pi_fixtures``. Upstream asserts "> 100"; the exact figures below were taken from the
reference (0.86.1) with the same calls.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from builders import assistant_message, user_message

from pi_session_server.session import build_session_context, migrate_session_entries, parse_session_entries

FIXTURE = Path(__file__).parent / "data" / "pi_fixtures" / "large-session.jsonl"


def load_large_session_entries():
    entries = parse_session_entries(FIXTURE.read_text(encoding="utf-8"))
    migrate_session_entries(entries)  # adds id/parentId to the v1 fixture
    return [e for e in entries if e.get("type") != "session"]


def create_mock_usage(inp, out, cache_read=0, cache_write=0):
    return {
        "input": inp,
        "output": out,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": inp + out + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


create_user_message = user_message


def create_assistant_message(text, usage=None):
    return assistant_message(text, usage=usage or create_mock_usage(100, 50), model="claude-sonnet-4-5")


class _Chain:
    """The test's module-level ``entryCounter``/``lastId`` pair, reset per test."""

    def __init__(self):
        self.counter = 0
        self.last_id = None

    def _base(self, entry_type):
        entry_id = f"test-id-{self.counter}"
        self.counter += 1
        entry = {
            "type": entry_type,
            "id": entry_id,
            "parentId": self.last_id,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        }
        self.last_id = entry_id
        return entry

    def message(self, message):
        return {**self._base("message"), "message": message}

    def compaction(self, summary, first_kept_entry_id):
        return {
            **self._base("compaction"),
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": 10000,
        }

    def model_change(self, provider, model_id):
        return {**self._base("model_change"), "provider": provider, "modelId": model_id}

    def thinking_level(self, level):
        return {**self._base("thinking_level_change"), "thinkingLevel": level}


@pytest.fixture
def chain():
    return _Chain()


def _text(messages):
    parts = []
    for m in messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            parts.append(m["summary"])
        elif isinstance(m.get("content"), str):
            parts.append(m["content"])
        else:
            parts.append(" ".join(b["text"] for b in m.get("content", []) if b.get("type") == "text"))
    return "\n".join(parts)


# -- buildSessionContext ----------------------------------------------------------------------


def test_compaction__buildSessionContext_should_load_all_messages_when_no_compaction(chain):
    entries = [
        chain.message(create_user_message("1")),
        chain.message(create_assistant_message("a")),
        chain.message(create_user_message("2")),
        chain.message(create_assistant_message("b")),
    ]
    loaded = build_session_context(entries)
    assert len(loaded["messages"]) == 4
    assert loaded["thinkingLevel"] == "off"
    assert loaded["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}


def test_compaction__buildSessionContext_should_handle_single_compaction(chain):
    u1 = chain.message(create_user_message("1"))
    a1 = chain.message(create_assistant_message("a"))
    u2 = chain.message(create_user_message("2"))
    a2 = chain.message(create_assistant_message("b"))
    comp = chain.compaction("Summary of 1,a,2,b", u2["id"])
    u3 = chain.message(create_user_message("3"))
    a3 = chain.message(create_assistant_message("c"))

    loaded = build_session_context([u1, a1, u2, a2, comp, u3, a3])
    assert len(loaded["messages"]) == 5  # summary + kept (u2, a2) + after (u3, a3)
    assert loaded["messages"][0]["role"] == "compactionSummary"
    assert "Summary of 1,a,2,b" in loaded["messages"][0]["summary"]


def test_compaction__buildSessionContext_should_handle_multiple_compactions_only_latest_matters(chain):
    u1 = chain.message(create_user_message("1"))
    a1 = chain.message(create_assistant_message("a"))
    compact1 = chain.compaction("First summary", u1["id"])
    u2 = chain.message(create_user_message("2"))
    b = chain.message(create_assistant_message("b"))
    u3 = chain.message(create_user_message("3"))
    c = chain.message(create_assistant_message("c"))
    compact2 = chain.compaction("Second summary", u3["id"])
    u4 = chain.message(create_user_message("4"))
    d = chain.message(create_assistant_message("d"))

    loaded = build_session_context([u1, a1, compact1, u2, b, u3, c, compact2, u4, d])
    assert len(loaded["messages"]) == 5  # summary + (u3, c) + (u4, d)
    assert "Second summary" in loaded["messages"][0]["summary"]


def test_compaction__buildSessionContext_should_keep_all_messages_when_firstKeptEntryId_is_first_entry(chain):
    u1 = chain.message(create_user_message("1"))
    a1 = chain.message(create_assistant_message("a"))
    compact1 = chain.compaction("First summary", u1["id"])
    u2 = chain.message(create_user_message("2"))
    b = chain.message(create_assistant_message("b"))

    loaded = build_session_context([u1, a1, compact1, u2, b])
    assert len(loaded["messages"]) == 5


def test_compaction__buildSessionContext_should_track_model_and_thinking_level_changes(chain):
    entries = [
        chain.message(create_user_message("1")),
        chain.model_change("openai", "gpt-4"),
        chain.message(create_assistant_message("a")),
        chain.thinking_level("high"),
    ]
    loaded = build_session_context(entries)
    # the model change is overridden by the later assistant message's model
    assert loaded["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert loaded["thinkingLevel"] == "high"


# -- repeated compactions (context half of a prepareCompaction test) --------------------------


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_compaction__preserves_kept_messages_across_repeated_compactions_when_they_still_fit(chain, pi):
    u1 = chain.message(create_user_message("user msg 1 (summarized by compaction1)"))
    a1 = chain.message(create_assistant_message("assistant msg 1"))
    u2 = chain.message(create_user_message("user msg 2 - kept by compaction1"))
    a2 = chain.message(create_assistant_message("assistant msg 2"))
    u3 = chain.message(create_user_message("user msg 3 - kept by compaction1"))
    a3 = chain.message(create_assistant_message("assistant msg 3", create_mock_usage(5000, 1000)))
    compaction1 = chain.compaction("First summary", u2["id"])
    u4 = chain.message(create_user_message("user msg 4 (new after compaction1)"))
    a4 = chain.message(create_assistant_message("assistant msg 4", create_mock_usage(8000, 2000)))
    path_entries = [u1, a1, u2, a2, u3, a3, compaction1, u4, a4]

    # upstream: prepareCompaction keeps firstKeptEntryId = u2 for the second compaction
    compaction2 = {
        "type": "compaction",
        "id": "compaction2-id",
        "parentId": a4["id"],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "summary": "Second summary",
        "firstKeptEntryId": u2["id"],
        "tokensBefore": 1234,
    }
    after = build_session_context([*path_entries, compaction2], pi=pi)["messages"]
    text = _text(after)
    assert "user msg 2 - kept by compaction1" in text
    assert "user msg 3 - kept by compaction1" in text
    # docs/API.md §7.2: under pi 0.86.1 the earlier compaction inside the kept range still yields its
    # summary; pi 1.6.0 (docs/API.md §7.6) lets only the newest compaction speak
    earlier = ["compactionSummary"] if pi == "0.86.1" else []
    assert [m["role"] for m in after] == [
        "compactionSummary",
        "user",
        "assistant",
        "user",
        "assistant",
        *earlier,
        "user",
        "assistant",
    ]


# -- Large session fixture --------------------------------------------------------------------


def test_compaction__large_session_fixture_should_parse_the_large_session():
    entries = load_large_session_entries()
    assert len(entries) == 1018  # upstream: > 100
    assert len([e for e in entries if e["type"] == "message"]) == 914  # upstream: > 100
    # v1 migration chained every entry in file order
    assert entries[0]["parentId"] is None
    assert all(entries[i]["parentId"] == entries[i - 1]["id"] for i in range(1, len(entries)))


def test_compaction__large_session_fixture_should_load_session_correctly():
    loaded = build_session_context(load_large_session_entries())
    assert len(loaded["messages"]) == 914  # upstream: > 100
    assert loaded["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}  # upstream: not null
    assert loaded["thinkingLevel"] == "off"
