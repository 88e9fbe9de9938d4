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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import builders as S
import pytest
import reference_locations
from file_locks import NEEDS_PROC_LOCKS, a_process_waits_for_the_lock_of
from sidecar_support import (  # noqa: F401  (fixture)
    EXAMPLE,
    ROOT,
    Sidecar,
    sidecar_fixture,
    start_sidecar,
    stop_sidecar,
)

ORACLE = reference_locations.oracle_dir()
ORACLE_APPEND = ROOT / "tests" / "node_client" / "oracle_append.mjs"

MINE = {"role": "user", "content": "mine", "timestamp": 1}

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
    # our own append first: told once, before its answer (every view of the session takes it in,
    # not only the one that asked), and not again when the watcher finds the file grown by it
    own = await sidecar.request(
        "pi/append",
        {
            "session": session,
            "kind": "message",
            "message": {"role": "user", "content": "mine", "timestamp": 1},
        },
    )
    told = {"session": session, "uri": path.as_uri(), "kind": "appended"}
    ours = {**told, "newEntryIds": [own["id"]], "leafId": own["id"]}
    assert sidecar.notifications["pi/didChange"] == [ours]
    await asyncio.sleep(0.5)  # (the watcher looks at the file grown by ours)
    append_elsewhere(path, own["id"], "ext00001", "ext00002")
    change = await sidecar.wait_for("pi/didChange", lambda p: p != ours)
    assert change == {**told, "newEntryIds": ["ext00001", "ext00002"], "leafId": "ext00002"}
    assert sidecar.notifications["pi/didChange"] == [ours, change]
    page = await sidecar.request("pi/getEntries", {"session": session, "since": own["id"]})
    assert [e["id"] for e in page["entries"]] == ["ext00001", "ext00002"]
    assert (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"] == "ext00002"
    assert leaf != "ext00002"


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
    while not a_process_waits_for_the_lock_of(path):
        await asyncio.sleep(0.01)


async def append_while_another_writes(
    side: Sidecar, path: Path, params: dict[str, Any], write_elsewhere: Callable[[], None]
) -> Any:
    """The result of ``pi/append`` with ``params`` on the session of ``path``, whose write waited
    for the file's lock while ``write_elsewhere()`` wrote to it: the session had not seen that
    write when its append looked at the file. The watcher may look at any time: a refresh it
    queues then runs after the append (the session's requests run one at a time, in order)."""
    with appends_held_back(path):
        appending = side.send("pi/append", params)
        await asyncio.wait_for(until_a_process_waits_for_the_lock_of(path), 10)
        write_elsewhere()
    return await appending


async def until_the_server_read(side: Sidecar, idle_session: str) -> None:
    """Until the server read every request sent so far: it queues each request on its session as
    it reads it, in the order sent, so a later one on ``idle_session`` (whose queue holds nothing
    else) is answered only once the earlier ones were queued."""
    await side.request("pi/getLeaf", {"session": idle_session})


@NEEDS_PROC_LOCKS
async def test_lines_another_process_appended_right_before_ours_are_appended(sidecar, tmp_path):
    """pi appends whole lines and an append of ours follows before the server looked at the file:
    pi/foreignWriter says so, and pi/didChange tells them as ``appended`` (a front end fetches just
    them), not ``reloaded`` (it would fetch everything), with ours after them in one notification;
    the session is what a fresh open gives."""
    session, path = await sidecar.open_example(tmp_path)
    leaf = (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"]

    def pi_appends() -> None:
        with path.open("a", encoding="utf-8") as file:  # pi's appendFileSync: no lock, a line a write
            for entry_id, parent in (("ext00001", leaf), ("ext00002", "ext00001")):
                file.write(S.user(entry_id, parent, "from pi") + "\n")
                file.flush()

    own = await append_while_another_writes(
        sidecar, path, {"session": session, "kind": "message", "message": MINE}, pi_appends
    )
    # told before the answer, whose entry follows them: a front end never meets a parent it was
    # not told of (notifications and answers arrive in the order the server sent them)
    [warning] = sidecar.notifications["pi/foreignWriter"]
    assert warning["session"] == session and warning["foundSize"] > warning["expectedSize"]
    [change] = sidecar.notifications["pi/didChange"]
    assert change == {
        "session": session,
        "uri": path.as_uri(),
        "kind": "appended",
        "newEntryIds": ["ext00001", "ext00002", own["id"]],
        "leafId": own["id"],
    }
    page = await sidecar.request("pi/getEntries", {"session": session, "since": leaf})
    assert [e["id"] for e in page["entries"]] == ["ext00001", "ext00002", own["id"]]
    fresh = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    for method in ("pi/getEntries", "pi/getTree", "pi/getBranch", "pi/buildSessionContext"):
        held = await sidecar.request(method, {"session": session})
        assert held == await sidecar.request(method, {"session": fresh}), method


@NEEDS_PROC_LOCKS
async def test_a_file_rewritten_right_before_our_write_is_told_reloaded_before_the_answer(sidecar, tmp_path):
    """Another program rewrites the file (an editor saves it shorter) and an append of ours follows
    before the server looked at it: pi/didChange ``reloaded`` comes before the answer, so a front
    end refetches the session (our entry in it) instead of adding our entry to a tree it is about
    to throw away; the session is then what a fresh open gives."""
    session, path = await sidecar.open_example(tmp_path)
    kept = path.read_text(encoding="utf-8").splitlines()[:5]

    def an_editor_saves_it_shorter() -> None:
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")  # in place: truncated, then written

    own = await append_while_another_writes(
        sidecar, path, {"session": session, "kind": "message", "message": MINE}, an_editor_saves_it_shorter
    )
    [change] = sidecar.notifications["pi/didChange"]  # (notifications and answers come in the order sent)
    assert change["session"] == session and change["kind"] == "reloaded" and change["leafId"] == own["id"]
    page = await sidecar.request("pi/getEntries", {"session": session})
    assert [e["id"] for e in page["entries"]] == [*(json.loads(line)["id"] for line in kept[1:]), own["id"]]
    fresh = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    for method in ("pi/getEntries", "pi/getTree", "pi/buildSessionContext"):
        held = await sidecar.request(method, {"session": session})
        assert held == await sidecar.request(method, {"session": fresh}), method


@NEEDS_PROC_LOCKS
async def test_a_server_that_follows_no_file_keeps_what_a_session_read(tmp_path):
    """``serve --watch-interval 0``: a file rewritten right before our append is not read again
    (no ``reloaded``): the session keeps what it read, as pi's does, and our entry follows it."""
    side = await start_sidecar(tmp_path, "--watch-interval", "0")
    try:
        session, path = await side.open_example(tmp_path)
        before = [e["id"] for e in (await side.request("pi/getEntries", {"session": session}))["entries"]]
        kept = path.read_text(encoding="utf-8").splitlines()[:5]

        def an_editor_saves_it_shorter() -> None:
            path.write_text("\n".join(kept) + "\n", encoding="utf-8")

        own = await append_while_another_writes(
            side, path, {"session": session, "kind": "message", "message": MINE}, an_editor_saves_it_shorter
        )
        [change] = side.notifications["pi/didChange"]  # (our entry only: nothing read again)
        assert (change["kind"], change["newEntryIds"]) == ("appended", [own["id"]])
        page = await side.request("pi/getEntries", {"session": session})
        assert [e["id"] for e in page["entries"]] == [*before, own["id"]]
    finally:
        await stop_sidecar(side)


class Lookout:
    """Another held session, whose file a test appends to to see the watcher look: each look
    at it tells its new line, and a look queues the refreshes of all the files it found changed
    before any of them tells, so a request on a session answered after that follows the refresh
    of it that look queued (and what that refresh told)."""

    def __init__(self, side: Sidecar, path: Path, leaf: str) -> None:
        self.side, self.path, self.ids = side, path, [leaf]

    @classmethod
    async def open(cls, side: Sidecar, tmp_path: Path) -> Lookout:
        (tmp_path / "lookout").mkdir()
        session, path = await side.open_example(tmp_path / "lookout")
        return cls(side, path, (await side.request("pi/getLeaf", {"session": session}))["leafId"])

    async def looked_at(self, session: str, times: int = 1) -> None:
        """Until the watcher looked ``times`` more times and what they found of ``session`` was told."""
        for _ in range(times):
            entry_id = f"look{len(self.ids):04d}"
            with self.path.open("a", encoding="utf-8") as file:
                file.write(S.user(entry_id, self.ids[-1], "still here") + "\n")
            self.ids.append(entry_id)
            await self.side.wait_for("pi/didChange", lambda p, told=[entry_id]: p["newEntryIds"] == told)
        await self.side.request("pi/getLeaf", {"session": session})


async def test_a_partial_line_waits_until_it_is_complete(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    lookout = await Lookout.open(sidecar, tmp_path)
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
    await lookout.looked_at(session)  # the watcher saw the line cut short
    with path.open("a") as f:
        f.write(line[20:] + "\n")
    change = await sidecar.wait_for("pi/didChange", lambda p: p["session"] == session)
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
    # (the pause lasts until the test says so: the watcher sees the truncated file however late it looks)
    writer = subprocess.Popen(
        ["sh", "-c", 'exec 3>"$0"; read go; cat "$1" >&3', str(path), str(backup)], stdin=subprocess.PIPE
    )
    rewriting = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "rewriting")
    assert rewriting["newEntryIds"] == [] and rewriting["session"] == session
    assert (await sidecar.request("pi/getInfo", {"session": session}))["entryCount"] == 36  # as it was
    writer.communicate(b"go\n")
    reloaded = await sidecar.wait_for("pi/didChange", lambda p: p["kind"] == "reloaded")
    assert writer.returncode == 0
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

    lookout = await Lookout.open(sidecar, tmp_path)

    def kinds() -> list[str]:
        return [p["kind"] for p in sidecar.notifications.get("pi/didChange", []) if p["session"] == session]

    async def told_unreadable(count: int) -> None:
        await sidecar.wait_for("pi/didChange", lambda p: kinds().count("unreadable") == count)
        await lookout.looked_at(session, times=3)  # nothing more is said of a file that holds still

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


async def test_a_file_the_session_created_and_another_program_deleted_between_two_looks_is_reported(
    tmp_path,
):
    """pi/create writes nothing until the first message: the poller's looks find the file missing.
    The session then writes it and another program deletes it before the next look, which finds it
    missing again, as the last one did: the session's write has that look refresh it all the same."""
    side = await start_sidecar(tmp_path, "--watch-interval", "0.4")
    try:
        created = await side.request("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")})
        session, path = created["session"], Path(created["sessionFile"])
        await asyncio.sleep(1.0)  # looked at, missing
        await side.request("pi/append", {"session": session, "kind": "message", "message": MINE})
        path.unlink()  # (well before the next look, as a rule)
        change = await side.wait_for("pi/didChange", lambda p: p["kind"] != "appended", timeout=5)
        assert (change["session"], change["kind"]) == (session, "deleted")
    finally:
        await stop_sidecar(side)


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


@NEEDS_PROC_LOCKS
async def test_foreign_writes_between_ours_are_reported(sidecar, tmp_path):
    """Another process appends a line after the session read the file and before our append
    writes: pi/foreignWriter says so, and both lines are intact in the file."""
    session, path = await sidecar.open_example(tmp_path)
    await append_while_another_writes(
        sidecar,
        path,
        {"session": session, "kind": "message", "message": MINE},
        lambda: append_elsewhere(path, "e2f3a4b5", "ext00001"),
    )
    warning = await sidecar.wait_for("pi/foreignWriter")
    assert warning["session"] == session and warning["path"] == str(path)
    assert "another process appended" in warning["message"]
    # both lines are intact in the file
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert next(x["id"] for x in lines[-2:]) == "ext00001"


@NEEDS_PROC_LOCKS
async def test_an_append_through_another_handle_is_not_blamed_on_another_process(sidecar, tmp_path):
    """Two handles on one file: the second appends before it saw the first one's line, and is not
    told another process wrote it; a line another process appends is still reported."""
    first, path = await sidecar.open_example(tmp_path)
    second = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    leaf = (await sidecar.request("pi/getLeaf", {"session": second}))["leafId"]
    (tmp_path / "idle").mkdir()
    idle, _ = await sidecar.open_example(tmp_path / "idle")

    def append_through(session: str) -> asyncio.Future[Any]:
        return sidecar.send("pi/append", {"session": session, "kind": "message", "message": MINE})

    # The first append waits for the file's lock, the second is queued on its session behind it: a
    # refresh of the second session (the watcher seeing the first one's line) can only follow it.
    with appends_held_back(path):
        appending = [append_through(first)]
        await asyncio.wait_for(until_a_process_waits_for_the_lock_of(path), 10)
        appending.append(append_through(second))
        await until_the_server_read(sidecar, idle)
    _, own = await asyncio.gather(*appending)
    # (the second session had not seen the first line: its entry hangs where it stood)
    assert (await sidecar.request("pi/getEntry", {"session": second, "id": own["id"]}))["parentId"] == leaf
    await append_while_another_writes(  # a real other writer is still reported
        sidecar,
        path,
        {"session": first, "kind": "message", "message": MINE},
        lambda: append_elsewhere(path, "e2f3a4b5", "ext00001"),
    )
    warning = await sidecar.wait_for("pi/foreignWriter")
    assert warning["session"] == first and "another process appended" in warning["message"]
    assert [w["session"] for w in sidecar.notifications["pi/foreignWriter"]] == [first]


async def test_two_handles_on_one_file_see_each_other(sidecar, tmp_path):
    first, path = await sidecar.open_example(tmp_path)
    second = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    added = await sidecar.request("pi/append", {"session": first, "kind": "custom", "customType": "x"})
    change = await sidecar.wait_for("pi/didChange", lambda p: p["session"] == second)
    assert change["newEntryIds"] == [added["id"]]
