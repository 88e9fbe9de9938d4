"""The revision of a session's tree (server/tree_pages.Revisions): one token per state of the
session, kept while the session holds still, a new one for any change a page of its tree would
show, never one given before."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

from test_protocol_tree_filters import random_session

from pi_session_server.server.tree_pages import Revisions
from pi_session_server.session import SessionManager


def _session(tmp_path: Path, name: str = "s.jsonl") -> SessionManager:
    path = tmp_path / name
    random_session(random.Random(3), path)
    return SessionManager.open(str(path))


def test_a_session_keeps_its_revision_until_it_changes(tmp_path: Path) -> None:
    revisions = Revisions()
    session = _session(tmp_path)
    first = revisions.current(session)
    assert revisions.current(session) == first
    seen = {first}
    session.append_message({"role": "user", "content": "one more", "timestamp": 1})
    appended = revisions.current(session)
    seen.add(appended)
    session.branch(session.get_entries()[0].id)  # another leaf, the same entries
    seen.add(revisions.current(session))
    session.append_label_change(session.get_entries()[0].id, "here")
    seen.add(revisions.current(session))
    assert len(seen) == 4


def test_a_failed_write_taken_back_keeps_the_revision(tmp_path: Path) -> None:
    revisions = Revisions()
    session = _session(tmp_path)
    before = revisions.current(session)
    with contextlib.suppress(RuntimeError), session.transaction():
        session.append_message({"role": "user", "content": "written, then taken back", "timestamp": 1})
        raise RuntimeError("the request failed after the write")
    assert revisions.current(session) == before


def test_another_session_in_the_same_state_has_another_revision(tmp_path: Path) -> None:
    """A session closed and opened again (an idle `uri` session) is another tree for a client
    paging through the first: its tokens are new."""
    revisions = Revisions()
    first = _session(tmp_path)
    token = revisions.current(first)
    first.close()
    again = SessionManager.open(first.get_session_file())
    assert revisions.current(again) != token
