"""The file poller looks at every followed file; a stat that hangs at one of them (a stuck network
mount) must not keep it from seeing the changes of the others, through the real server: another
process appends to one session's file while the stat of another session's file hangs, and the
client hears of the append while that stat still hangs; once the stuck stat answers, the change it
found is told too.

The server runs with the ``sitecustomize`` of ``stuck_stat.py``: every stat of a path under a
directory named ``stuck-mount`` waits while a flag file exists (and the hook marks when one began
and ended to wait: nothing here depends on how fast a loaded machine answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import new_session_file
from reliability_rpc import RawServer, file_uri
from stuck_stat import answered_mark, until_a_stat_hangs

# far longer than a look takes on a loaded machine, shorter than the hook lets a stat hang
TOLD_WITHIN = 30.0


def _append_line(path: str, entry_id: str, parent: str | None = None) -> None:
    """Another process appends an entry (plain bytes: this process's stat never hangs)."""
    parent_id = b"null" if parent is None else b'"' + parent.encode() + b'"'
    with open(path, "ab") as f:
        f.write(
            b'{"type":"message","id":"' + entry_id.encode() + b'","parentId":' + parent_id + b","
            b'"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}\n'
        )


def _told(server: RawServer, session: str, timeout: float) -> Any:
    return server.wait_notification("pi/didChange", lambda p: p.get("session") == session, timeout=timeout)


def test_a_stat_that_hangs_at_one_file_delays_no_change_of_another(
    stuck_server: RawServer, tmp_path: Path, stuck_flag: Path
):
    stuck = new_session_file(tmp_path / "stuck-mount", cwd=str(tmp_path))
    good = new_session_file(tmp_path / "good", cwd=str(tmp_path))
    on_stuck = stuck_server.call("pi/open", {"path": stuck})["session"]
    on_good = stuck_server.call("pi/open", {"path": good})["session"]
    stuck_flag.touch()
    until_a_stat_hangs(stuck_flag)  # a look waits for the stuck file's stat
    for n in range(1, 4):
        entry_id = f"zz00000{n}"
        _append_line(good, entry_id)
        change = _told(stuck_server, on_good, timeout=TOLD_WITHIN)
        assert change["kind"] == "appended" and change["newEntryIds"] == [entry_id], change
        assert not answered_mark(stuck_flag).exists()  # told while that stat still hung
    _append_line(stuck, "yy000001")
    _append_line(good, "zz000004")  # a later look, seen by its change told
    assert _told(stuck_server, on_good, timeout=TOLD_WITHIN)["newEntryIds"] == ["zz000004"]
    with pytest.raises(TimeoutError):  # its stat still hangs: nothing is known of it
        _told(stuck_server, on_stuck, timeout=0)
    stuck_flag.unlink()
    # the stat that hung answers: the change it found is told
    change = _told(stuck_server, on_stuck, timeout=10)
    assert change["kind"] == "appended" and change["newEntryIds"] == ["yy000001"], change
    _append_line(good, "zz000009")  # and the good file is still followed
    assert _told(stuck_server, on_good, timeout=TOLD_WITHIN)["newEntryIds"] == ["zz000009"]


def test_a_stat_that_hangs_at_a_session_file_delays_no_document_followed_on_disk(
    stuck_server: RawServer, tmp_path: Path, stuck_flag: Path
):
    """The language features follow a file the editor did not send through the same poller."""
    stuck = new_session_file(tmp_path / "stuck-mount", cwd=str(tmp_path))
    followed = new_session_file(tmp_path / "followed", cwd=str(tmp_path))
    uri = file_uri(followed)
    stuck_server.call("pi/open", {"path": stuck})
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}}
    assert stuck_server.call("textDocument/hover", hover) is not None  # read from disk, and followed
    stuck_flag.touch()
    until_a_stat_hangs(stuck_flag)  # a look waits for the stuck file's stat
    line = len(Path(followed).read_bytes().split(b"\n")) - 1
    _append_line(followed, "zz000001", parent="gone0000")  # its parent is missing: a diagnostic
    published = stuck_server.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d["range"]["start"]["line"] == line for d in p["diagnostics"]),
        timeout=TOLD_WITHIN,
    )
    assert published["diagnostics"]
    assert not answered_mark(stuck_flag).exists()  # published while that stat still hung
