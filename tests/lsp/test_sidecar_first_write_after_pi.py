"""A session opened by uri to look at, pi appends to its file, then the first write by uri: pi's
lines are taken in where the session stands (the file is not read again whole) and told once as
``appended``, and our line follows them in the file, on the leaf the session held (what pi's own
SessionManager does when another process wrote: it appends from its leaf).

The point is what happens without a look of the watcher between pi's lines and the write: a look
takes them in itself, and the session follows pi's leaf (another case, told as before). So the
watcher sleeps through these tests. No condition the test controls keeps it away instead: the
write takes pi's lines in before it takes any lock a test could hold (the file's flock comes
after), and no request holds the session's queue (where the watcher's refresh would be queued) on
anything a test controls.
"""

from __future__ import annotations

import json
from pathlib import Path

import builders as S
from sidecar_support import EXAMPLE, Sidecar, start_sidecar, stop_sidecar

WATCHER_ASLEEP = "3600"  # (see above)
MESSAGE = {"role": "user", "content": "mine", "timestamp": 1}


def pi_appends(path: Path, parent: str) -> list[str]:
    """Two lines appended as pi's appendFileSync writes them (no lock, a line a write)."""
    ids = ["ext00001", "ext00002"]
    with path.open("a", encoding="utf-8") as file:
        for entry_id in ids:
            file.write(S.user(entry_id, parent, "from pi") + "\n")
            file.flush()
            parent = entry_id
    return ids


async def _looked_at(side: Sidecar, tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "example.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    uri = path.as_uri()
    assert (await side.request("pi/getInfo", {"uri": uri}))["readOnly"]
    return path, uri


async def test_lines_pi_appended_before_the_first_write_by_uri_come_first_and_are_told_once(tmp_path):
    side = await start_sidecar(tmp_path, "--watch-interval", WATCHER_ASLEEP)
    try:
        path, uri = await _looked_at(side, tmp_path)
        stats = await side.request("pi/getStats", {"uri": uri})
        page = await side.request("pi/getTree", {"uri": uri, "offset": 0, "limit": 10})
        leaf = page["leafId"]
        ids = pi_appends(path, leaf)
        own = await side.request("pi/append", {"uri": uri, "kind": "message", "message": MESSAGE})

        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert [line["id"] for line in lines[-3:]] == [*ids, own["id"]]
        assert lines[-1]["parentId"] == leaf  # the leaf the session held, as pi appends
        info = await side.request("pi/getInfo", {"uri": uri})
        assert info["readOnly"] is False and info["leafId"] == own["id"]
        # pi's lines, then ours (told as pi's are: every view of the session takes it in)
        told = {"session": info["session"], "uri": uri, "kind": "appended"}
        assert side.notifications.get("pi/didChange") == [
            {**told, "newEntryIds": ids, "leafId": leaf},
            {**told, "newEntryIds": [own["id"]], "leafId": own["id"]},
        ]

        after = await side.request("pi/getStats", {"uri": uri})
        assert after["entryCount"] == stats["entryCount"] + 3
        assert after["roles"]["user"] == stats["roles"]["user"] + 3
        # pi's branch and ours both grow from the leaf: one more branch point, one more leaf
        assert after["branchPoints"] == stats["branchPoints"] + 1
        assert after["leaves"] == stats["leaves"] + 1
        page = await side.request("pi/getTree", {"uri": uri, "offset": 0, "limit": 10})
        assert page["total"] == stats["entryCount"] + 3 and page["leafId"] == own["id"]
        whole = await side.request("pi/getTree", {"uri": uri})
        assert [node["id"] for node in whole["nodes"] if node["isLeaf"]] == [own["id"]]
        assert {node["id"] for node in whole["nodes"]} >= {*ids, own["id"]}
        fresh = (await side.request("pi/open", {"path": str(path)}))["session"]
        assert (await side.request("pi/getStats", {"session": fresh})) == after
    finally:
        await stop_sidecar(side)


async def test_the_first_write_by_uri_after_pi_appended_keeps_the_leaf_the_session_was_branched_to(tmp_path):
    side = await start_sidecar(tmp_path, "--watch-interval", WATCHER_ASLEEP)
    try:
        path, uri = await _looked_at(side, tmp_path)
        last = (await side.request("pi/getLeaf", {"uri": uri}))["leafId"]
        await side.request("pi/branch", {"uri": uri, "entryId": "1e2f3a4b"})
        ids = pi_appends(path, last)
        own = await side.request("pi/append", {"uri": uri, "kind": "message", "message": MESSAGE})
        assert (await side.request("pi/getEntry", {"uri": uri, "id": own["id"]}))["parentId"] == "1e2f3a4b"
        # (the branch, told before its answer; pi's lines; ours)
        moved, change, appended = side.notifications["pi/didChange"]
        assert moved["kind"] == "leafMoved" and moved["leafId"] == "1e2f3a4b"
        assert change["newEntryIds"] == ids and change["leafId"] == "1e2f3a4b"
        assert appended["newEntryIds"] == [own["id"]] and appended["leafId"] == own["id"]
        assert (await side.request("pi/getEntry", {"uri": uri, "id": ids[0]}))["parentId"] == last
    finally:
        await stop_sidecar(side)
