"""External changes: another process writes a held session file; the sidecar notices and says so."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import builders as S
import pytest
import reference_locations
from sidecar_support import (  # noqa: F401  (fixture)
    EXAMPLE,
    ROOT,
    sidecar_fixture,
    start_sidecar,
    stop_sidecar,
)

ORACLE = reference_locations.oracle_dir()
ORACLE_APPEND = ROOT / "tests" / "node_client" / "oracle_append.mjs"

APPEND_SCRIPT = r"""
import json, sys
path, parent, *ids = sys.argv[1:]
with open(path, "a", encoding="utf-8") as f:  # one write per line, as pi's appendFileSync does
    for i, entry_id in enumerate(ids):
        line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-03-14T10:00:0%d.000Z" % i,
                "message": {"role": "user", "content": "from another process", "timestamp": 1}}
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
        f.flush()
        parent = entry_id
"""


def append_elsewhere(path: Path, parent: str, *ids: str) -> None:
    subprocess.run([sys.executable, "-c", APPEND_SCRIPT, str(path), parent, *ids], check=True)


async def test_appends_by_another_process_arrive_as_did_change(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    leaf = (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"]
    # our own append first: it must not be reported as a change
    own = await sidecar.request(
        "pi/append",
        {
            "session": session,
            "kind": "message",
            "message": {"role": "user", "content": "mine", "timestamp": 1},
        },
    )
    append_elsewhere(path, own["id"], "ext00001", "ext00002")
    change = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "appended")
    assert change == {
        "session": session,
        "uri": path.as_uri(),
        "kind": "appended",
        "newEntryIds": ["ext00001", "ext00002"],
        "leafId": "ext00002",
    }
    assert sidecar.notifications["pi/didChange"] == [change]
    page = await sidecar.request("pi/getEntries", {"session": session, "since": own["id"]})
    assert [e["id"] for e in page["entries"]] == ["ext00001", "ext00002"]
    assert (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"] == "ext00002"
    assert leaf != "ext00002"


PROC_LOCKS = Path("/proc/locks")


@contextlib.contextmanager
def appends_held_back(path: Path) -> Iterator[None]:
    """Hold the lock every append of the server takes on ``path`` (flock): its appends wait."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (the lock goes with it)


async def until_a_process_waits_for_the_lock_of(path: Path) -> None:
    """Until some process waits for the flock of ``path`` (``/proc/locks`` lists its waiters with
    ``->``, the file as MAJOR:MINOR:INODE)."""
    st = path.stat()
    file = f" {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    while not any(" -> " in line and file in line for line in PROC_LOCKS.read_text().splitlines()):
        await asyncio.sleep(0.01)


@pytest.mark.skipif(not PROC_LOCKS.exists(), reason="no /proc/locks to see the server wait for the lock")
async def test_lines_another_process_appended_right_before_ours_are_appended(sidecar, tmp_path):
    """pi appends whole lines and an append of ours follows before the server looked at the file:
    pi/foreignWriter says so, and pi/didChange tells them as ``appended`` (a front end fetches just
    them), not ``reloaded`` (it would fetch everything); the session is what a fresh open gives."""
    session, path = await sidecar.open_example(tmp_path)
    leaf = (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"]
    message = {"role": "user", "content": "mine", "timestamp": 1}
    # Our append runs and waits for the file's lock before pi writes: whenever the watcher looks,
    # its refresh is queued behind the append, which finds pi's lines first.
    with appends_held_back(path):
        appending = asyncio.ensure_future(
            sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
        )
        await asyncio.wait_for(until_a_process_waits_for_the_lock_of(path), 10)
        with path.open("a", encoding="utf-8") as file:  # pi's appendFileSync: no lock, a line a write
            for entry_id, parent in (("ext00001", leaf), ("ext00002", "ext00001")):
                file.write(S.user(entry_id, parent, "from pi") + "\n")
                file.flush()
    own = await appending
    warning = await sidecar.wait_for("pi/foreignWriter")
    assert warning["session"] == session and warning["foundSize"] > warning["expectedSize"]
    change = await sidecar.wait_for("pi/didChange")
    assert change == {
        "session": session,
        "uri": path.as_uri(),
        "kind": "appended",
        "newEntryIds": ["ext00001", "ext00002"],
        "leafId": own["id"],
    }
    page = await sidecar.request("pi/getEntries", {"session": session, "since": leaf})
    assert [e["id"] for e in page["entries"]] == ["ext00001", "ext00002", own["id"]]
    fresh = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    for method in ("pi/getEntries", "pi/getTree", "pi/getBranch", "pi/buildSessionContext"):
        held = await sidecar.request(method, {"session": session})
        assert held == await sidecar.request(method, {"session": fresh}), method


async def test_a_partial_line_waits_until_it_is_complete(sidecar, tmp_path):
    _session, path = await sidecar.open_example(tmp_path)
    line = json.dumps(
        {
            "type": "custom",
            "customType": "x",
            "id": "late0001",
            "parentId": "e2f3a4b5",
            "timestamp": "2026-03-14T10:00:00.000Z",
        },
        separators=(",", ":"),
    )
    with path.open("a") as f:
        f.write(line[:20])
    append_elsewhere(path.with_suffix(".other"), "x", "unrelated")  # let some time pass, deterministically
    with path.open("a") as f:
        f.write(line[20:] + "\n")
    change = await sidecar.wait_for("pi/didChange")
    assert change["kind"] == "appended" and change["newEntryIds"] == ["late0001"]


async def test_a_rewritten_file_is_reloaded(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    kept = path.read_text().splitlines()[:5]
    path.write_text("\n".join(kept) + "\n")  # truncated underneath us
    change = await sidecar.wait_for("pi/didChange")
    assert change["kind"] == "reloaded" and change["leafId"] == json.loads(kept[-1])["id"]
    info = await sidecar.request("pi/getInfo", {"session": session})
    assert info["entryCount"] == 4


async def test_a_file_rewritten_in_place_with_a_pause_is_rewriting_then_reloaded(sidecar, tmp_path):
    """Another program truncates the file and writes it again a moment later (``cat backup >
    FILE`` with a pause): the client is told ``rewriting`` (the session stays as it was) and then
    ``reloaded``; both as protocol/ documents them."""
    session, path = await sidecar.open_example(tmp_path)
    backup = tmp_path / "backup.jsonl"
    backup.write_text("\n".join(path.read_text().splitlines()[:5]) + "\n")
    writer = subprocess.Popen(["sh", "-c", 'exec 3>"$0"; sleep 1; cat "$1" >&3', str(path), str(backup)])
    rewriting = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "rewriting")
    assert rewriting["newEntryIds"] == [] and rewriting["session"] == session
    assert (await sidecar.request("pi/getInfo", {"session": session}))["entryCount"] == 36  # as it was
    reloaded = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "reloaded")
    assert writer.wait() == 0
    assert reloaded["newEntryIds"] == [] and path.read_bytes() == backup.read_bytes()
    assert (await sidecar.request("pi/getInfo", {"session": session}))["entryCount"] == 4


async def test_a_file_left_without_a_header_is_told_rewriting_then_unreadable_once_each(sidecar, tmp_path):
    """A shell's ``>`` leaves other text in the held session's file, then an editor saves it with a
    byte order mark, then properly. Each headerless state is told once as ``rewriting`` and, once
    the file holds still, once as ``unreadable`` (no notification per poll); the session stays as
    it was; the header's return is ``reloaded``."""
    session, path = await sidecar.open_example(tmp_path)
    whole = path.read_bytes()
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(whole)

    def kinds() -> list[str]:
        return [p["kind"] for p in sidecar.notifications.get("pi/didChange", []) if p["session"] == session]

    async def told_unreadable(count: int) -> None:
        await sidecar.wait_for("pi/didChange", lambda p: kinds().count("unreadable") == count)
        await asyncio.sleep(1)  # a few more polls: nothing more is said of a file that holds still

    subprocess.run(["sh", "-c", 'echo "notes, not a session" > "$0"', str(path)], check=True)
    await told_unreadable(1)
    assert kinds() == ["rewriting", "unreadable"]
    assert (await sidecar.request("pi/getInfo", {"session": session}))["entryCount"] == 36  # as it was

    subprocess.run(
        ["sh", "-c", 'printf "\\357\\273\\277" > "$0" && cat "$1" >> "$0"', str(path), str(copy)], check=True
    )
    await told_unreadable(2)
    assert kinds() == ["rewriting", "unreadable"] * 2

    subprocess.run(["sh", "-c", 'cat "$1" > "$0"', str(path), str(copy)], check=True)
    await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "reloaded")
    # (a look may catch the file empty in between: a change after "unreadable" is "rewriting")
    assert kinds()[4:] in (["reloaded"], ["rewriting", "reloaded"])
    await sidecar.request(
        "pi/append", {"session": session, "kind": "label", "targetId": "1e2f3a4b", "label": "x"}
    )
    assert path.read_bytes().startswith(whole)


async def test_a_rewrite_in_place_that_keeps_size_and_tail_is_reloaded(sidecar, tmp_path):
    """An editor's quick fix swaps one id for another of the same length and saves in place."""
    path = tmp_path / "example.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))  # the rewrite's times differ, however fast it comes
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    lines = path.read_text().splitlines()
    second, third = json.loads(lines[2]), json.loads(lines[3])
    assert third["parentId"] == second["id"]
    first_id = json.loads(lines[1])["id"]
    assert len(first_id) == len(second["id"])
    lines[3] = lines[3].replace(f'"parentId":"{second["id"]}"', f'"parentId":"{first_id}"')
    before = path.stat()
    with open(path, "r+", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    assert (path.stat().st_ino, path.stat().st_size) == (before.st_ino, before.st_size)
    change = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "reloaded")
    assert change["session"] == session
    moved = await sidecar.request("pi/getEntry", {"session": session, "id": third["id"]})
    assert moved["parentId"] == first_id


async def test_a_deleted_file_is_reported(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    path.unlink()
    change = await sidecar.wait_for("pi/didChange")
    assert change["kind"] == "deleted"
    assert (await sidecar.request("pi/getInfo", {"session": session}))["entryCount"] == 36  # kept in memory


@pytest.mark.skipif(
    shutil.which("node") is None or not reference_locations.pi_086_package(ORACLE).is_dir(),
    reason="pi 0.86.1 (the oracle copy) is not installed",
)
async def test_pi_itself_appending_is_seen(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    out = subprocess.run(
        ["node", str(ORACLE_APPEND), str(ORACLE), str(path), "first", "second"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    ids = json.loads(out.stdout)
    change = await sidecar.wait_for("pi/didChange")
    assert change["kind"] == "appended" and change["newEntryIds"] == ids and change["leafId"] == ids[-1]
    context = await sidecar.request("pi/buildSessionContext", {"session": session})
    assert [m.get("content") for m in context["messages"][-2:]] == ["first", "second"]


async def test_foreign_writes_between_ours_are_reported(tmp_path):
    # a slow watcher, so the other process's line is still unseen when we append
    side = await start_sidecar(tmp_path, "--watch-interval", "30")
    try:
        session, path = await side.open_example(tmp_path)
        append_elsewhere(path, "e2f3a4b5", "ext00001")
        await side.request(
            "pi/append",
            {
                "session": session,
                "kind": "message",
                "message": {"role": "user", "content": "mine", "timestamp": 1},
            },
        )
        warning = await side.wait_for("pi/foreignWriter")
        assert warning["session"] == session and warning["path"] == str(path)
        assert "another process appended" in warning["message"]
        # both lines are intact in the file
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert next(x["id"] for x in lines[-2:]) == "ext00001"
    finally:
        await stop_sidecar(side)


async def test_an_append_through_another_handle_is_not_blamed_on_another_process(tmp_path):
    # a slow watcher, so the second handle has not seen the first one's line when it appends
    side = await start_sidecar(tmp_path, "--watch-interval", "30")
    try:
        first, path = await side.open_example(tmp_path)
        second = (await side.request("pi/open", {"path": str(path)}))["session"]
        message = {"role": "user", "content": "mine", "timestamp": 1}
        for session in (first, second):
            await side.request("pi/append", {"session": session, "kind": "message", "message": message})
        append_elsewhere(path, "e2f3a4b5", "ext00001")  # a real other writer is still reported
        await side.request("pi/append", {"session": first, "kind": "message", "message": message})
        warning = await side.wait_for("pi/foreignWriter")
        assert warning["session"] == first and "another process appended" in warning["message"]
        assert [w["session"] for w in side.notifications["pi/foreignWriter"]] == [first]
    finally:
        await stop_sidecar(side)


async def test_two_handles_on_one_file_see_each_other(sidecar, tmp_path):
    first, path = await sidecar.open_example(tmp_path)
    second = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    added = await sidecar.request("pi/append", {"session": first, "kind": "custom", "customType": "x"})
    change = await sidecar.wait_for("pi/didChange", lambda p: p["session"] == second)
    assert change["newEntryIds"] == [added["id"]]
