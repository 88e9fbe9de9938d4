"""A scan holds one message head per role, not one per entry: the head decoded from a line (a tool
result's with its call's fields, for an observer of the scan) gives way to the shared one. Only a
scan with an observer decodes those fields; every scan makes entries of the one class Entry."""

from __future__ import annotations

import contextlib
from pathlib import Path

import builders as S
import pytest

from pi_session_server.format.entry import SHARED_HEADS, Entry, MessageHead, ObservedHead
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.format.scan import observing_lines
from pi_session_server.session import SessionManager, loader


@pytest.mark.parametrize("observed", [False, True], ids=["plain", "observed"])
@pytest.mark.parametrize("held", [False, True], ids=["read", "held"])
def test_the_entries_a_scan_decodes_share_their_roles_heads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bool, observed: bool
):
    if not held:
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    lines = [S.header(), S.user("u1", None, "go")]
    for n in range(2, 40, 3):
        parent = "u1" if n == 2 else f"r{n - 2}"
        lines.append(S.assistant(f"a{n}", parent, calls=((f"c{n}", "read", {"path": "f"}),)))
        lines.append(S.tool_result(f"r{n + 1}", f"a{n}", f"c{n}", "out " * 100))
    lines.append(
        '{"type":"message","id":"x","parentId":"r39","timestamp":"t","message":{"content":"no role"}}'
    )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    seen: list[MessageHead] = []
    observing = observing_lines(lambda entry, line: seen.append(entry.message)) if observed else None
    with (
        observing or contextlib.nullcontext(),
        SessionManager.open(str(path), read_only=True, index=False) as sm,
    ):
        entries = sm.get_entries()
        heads = [e.message for e in entries if e.message is not None]
    if observed:
        # the observer had each head as decoded: a tool result's with its call's fields
        assert all(type(h) is ObservedHead for h in seen)
        assert [
            (h.toolCallId, h.toolName) for h in seen if type(h) is ObservedHead and h.role == "toolResult"
        ] == [(f"c{n}", "read") for n in range(2, 40, 3)]
    assert all(type(e) is Entry for e in entries)
    assert len(heads) == len(lines) - 1
    assert all(head is SHARED_HEADS[head.role] for head in heads)
    assert {head.role for head in heads} == {"user", "assistant", "toolResult", ABSENT}
