"""A scan holds one message head per role, not one per entry: the head decoded from a line (a tool
result's with its call's fields, for an observer of the scan) gives way to the shared one."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest

from pi_session_server.format.entry import SHARED_HEADS, MessageHead
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.format.scan import observing_lines
from pi_session_server.session import SessionManager, loader


@pytest.mark.parametrize("held", [False, True], ids=["read", "held"])
def test_the_entries_a_scan_decodes_share_their_roles_heads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bool
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
    observed = observing_lines(lambda entry, line: seen.append(entry.message))
    with observed, SessionManager.open(str(path), read_only=True, index=False) as sm:
        heads = [e.message for e in sm.get_entries() if e.message is not None]
    # the observer had each head as decoded: a tool result's with its call's fields
    assert [(h.toolCallId, h.toolName) for h in seen if h.role == "toolResult"] == [
        (f"c{n}", "read") for n in range(2, 40, 3)
    ]
    assert len(heads) == len(lines) - 1
    assert all(head is SHARED_HEADS[head.role] for head in heads)
    assert {head.role for head in heads} == {"user", "assistant", "toolResult", ABSENT}
