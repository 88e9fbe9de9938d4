"""A session file reached through a symlink and through its real path is one session for the
server: one view (a leaf moved through one spelling is where the other continues), not two
readings of the same file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import ASSISTANT, USER, new_session_file
from reliability_rpc import RawServer, file_uri

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[RawServer]:
    server = RawServer(tmp_path)
    server.initialize()
    yield server
    assert server.alive(), server.stderr_text()[-3000:]
    server.close()


def test_a_leaf_moved_through_the_link_is_where_the_real_path_continues(tmp_path: Path, srv: RawServer):
    target = Path(new_session_file(tmp_path / "real", cwd=str(tmp_path)))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    handle = srv.call("pi/open", {"path": str(link)})["session"]
    first = srv.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
    srv.call("pi/append", {"session": handle, "kind": "message", "message": ASSISTANT})
    # branching moves the leaf in memory only: a second reading of the file would not know it
    srv.call("pi/branch", {"session": handle, "entryId": first})
    real = file_uri(target)
    assert srv.call("pi/getLeaf", {"uri": real})["leafId"] == first
    answer = srv.call("pi/append", {"uri": real, "kind": "message", "message": ASSISTANT})
    assert srv.call("pi/getLeaf", {"session": handle})["leafId"] == answer["id"]
