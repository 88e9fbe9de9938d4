"""A scan hands the entries it decodes, with their lines' bytes, to whoever observes it
(scan.observing_lines): a caller that needs more of every line reads it while the scan holds it,
not from the file a second time."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import builders as S

from pi_session_server.format.scan import observing_lines
from pi_session_server.session import SessionManager


def _session(path: Path) -> Path:
    lines = [S.header(), S.user("u1", None, "first")]
    lines.append(S.assistant("a1", "u1", "reply " * 20_000))  # longer than a chunk's share
    lines.append("not json")
    lines.append(S.user("u2", "a1", "second"))
    # an envelope the hot loop's decoder refuses (a type it does not know): the exact slow path
    lines.append(json.dumps({"type": "future", "id": "f1", "parentId": "u2", "timestamp": "t"}))
    lines.append(S.user("u3", "u2", "third"))
    lines.append(S.user("u4", "u3", "no newline after it"))
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_a_scan_hands_each_entry_it_decodes_its_own_line_within_the_block_only(tmp_path: Path):
    path = _session(tmp_path / "s.jsonl")
    file_lines = path.read_bytes().split(b"\n")
    seen: list[tuple[Any, bytes]] = []
    with observing_lines(lambda entry, line: seen.append((entry, bytes(line)))):
        sm = SessionManager.open(str(path), read_only=True, index=False)
    with sm:
        entries = sm.get_entries()
        assert [e.id for e, _ in seen] == ["u1", "a1", "u2", "u3"]  # not the slow path's, nor the last line's
        assert all(entry is next(e for e in entries if e.id == entry.id) for entry, _ in seen)
        assert [line for _, line in seen] == [file_lines[entry.line] for entry, _ in seen]
    seen.clear()
    SessionManager.open(str(path), read_only=True, index=False).close()
    assert seen == []  # outside the block


def test_a_scan_on_another_thread_is_not_observed(tmp_path: Path):
    """The observer is the context's: a scan another thread runs meanwhile (a server's worker) is
    not handed to it."""
    path = _session(tmp_path / "s.jsonl")
    seen: list[Any] = []
    with observing_lines(lambda entry, line: seen.append(entry)):
        worker = threading.Thread(
            target=lambda: SessionManager.open(str(path), read_only=True, index=False).close()
        )
        worker.start()
        worker.join()
        assert seen == []
        SessionManager.open(str(path), read_only=True, index=False).close()
    assert len(seen) == 4
