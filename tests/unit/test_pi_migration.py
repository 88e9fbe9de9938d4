"""Port of pi's ``packages/coding-agent/test/session-manager/migration.test.ts``.

Source: badlogic/pi-mono @ b66177e2. Two of its three expectations predate 0.86.1 and contradict
docs/FORMAT.md (§8, verified against the reference): ``migrateSessionEntries`` migrates to version **3**
(upstream expects 2), and a v2 file's id-less entries are **not** repaired (only v2→v3 runs). The
cases below keep the upstream scenario and assert 0.86.1 behaviour; ``PI_TESTS.md`` lists them.
"""

from __future__ import annotations

import re

from pi_session_server.session import CURRENT_SESSION_VERSION, migrate_session_entries

ASSISTANT = {
    "role": "assistant",
    "content": [{"type": "text", "text": "hello"}],
    "api": "test",
    "provider": "test",
    "model": "test",
    "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
    "stopReason": "stop",
    "timestamp": 2,
}

ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")


def test_migration__should_add_id_parentId_to_v1_entries_spec_differs():
    entries = [
        {"type": "session", "id": "sess-1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/tmp"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
        {"type": "message", "timestamp": "2025-01-01T00:00:02Z", "message": dict(ASSISTANT)},
    ]
    assert migrate_session_entries(entries) is None  # in place, returns nothing

    # upstream expects 2 (pre-v3 pi); 0.86.1 runs v1->v2->v3 (docs/FORMAT.md §8.1)
    assert entries[0]["version"] == CURRENT_SESSION_VERSION == 3
    msg1, msg2 = entries[1], entries[2]
    assert ENTRY_ID.match(msg1["id"])
    assert msg1["parentId"] is None
    assert ENTRY_ID.match(msg2["id"])
    assert msg2["parentId"] == msg1["id"]


def test_migration__should_repair_v2_sessions_that_contain_trailing_entries_without_id_parentId_spec_differs():
    # upstream (a later pi repair) gives the trailing entries ids and chains them. 0.86.1 only renames
    # hookMessage roles for v2 (docs/FORMAT.md §8.3): id-less entries stay id-less.
    entries = [
        {"type": "session", "id": "sess-1", "version": 2, "timestamp": "2025-01-01T00:00:00Z", "cwd": "/tmp"},
        {
            "type": "message",
            "id": "abc12345",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
        {"type": "message", "timestamp": "2025-01-01T00:00:02Z", "message": dict(ASSISTANT)},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:03Z",
            "message": {"role": "user", "content": "later", "timestamp": 3},
        },
    ]
    migrate_session_entries(entries)

    assert entries[0]["version"] == 3
    assert entries[1]["id"] == "abc12345"
    assert entries[1]["parentId"] is None
    for trailing in entries[2:]:
        assert "id" not in trailing
        assert "parentId" not in trailing


def test_migration__should_be_idempotent_skip_already_migrated():
    entries = [
        {"type": "session", "id": "sess-1", "version": 2, "timestamp": "2025-01-01T00:00:00Z", "cwd": "/tmp"},
        {
            "type": "message",
            "id": "abc12345",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "def67890",
            "parentId": "abc12345",
            "timestamp": "2025-01-01T00:00:02Z",
            "message": dict(ASSISTANT),
        },
    ]
    migrate_session_entries(entries)
    assert entries[1]["id"] == "abc12345"
    assert entries[2]["id"] == "def67890"
    assert entries[2]["parentId"] == "abc12345"

    # and once at the current version nothing changes at all
    snapshot = [dict(e) for e in entries]
    migrate_session_entries(entries)
    assert entries == snapshot


def test_an_array_among_v1_values_handed_in_is_left_as_it_is_d22():
    """pi gives an array handed to it as a v1 entry an id (an array is an object in JS) and links
    it into the chain; a Python list cannot hold an id: it is left as it is, and a compaction's
    firstKeptEntryIndex pointing at it names no entry (docs/DEVIATIONS.md D22)."""
    entries = [
        {"type": "session", "id": "v1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "x"},
        },
        [1],
        {
            "type": "compaction",
            "summary": "s",
            "firstKeptEntryIndex": 2,
            "timestamp": "2025-01-01T00:00:02.000Z",
        },
    ]
    migrate_session_entries(entries)
    message, array, compaction = entries[1:]
    assert array == [1]
    assert compaction["parentId"] == message["id"] and "firstKeptEntryId" not in compaction
    assert "firstKeptEntryIndex" not in compaction
