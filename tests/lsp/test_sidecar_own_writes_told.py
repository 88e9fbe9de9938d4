"""The server's own writes are told as pi/didChange, as pi's are: an append through one view of a
session (a label, a name, a message) reaches every other view of it, once; a request that leaves a
handle on another file or a new session has its views load what it shows now."""

from __future__ import annotations

import asyncio
from typing import Any

import builders as S
from sidecar_support import Sidecar, expect_error, sidecar_fixture  # noqa: F401  (fixture)

MINE = {"role": "user", "content": "mine", "timestamp": 1}


def told(sidecar: Sidecar, session: str) -> list[dict[str, Any]]:
    return [p for p in sidecar.notifications.get("pi/didChange", []) if p["session"] == session]


async def test_an_append_through_one_view_is_told_to_every_view_before_its_answer(sidecar, tmp_path):
    """The tree view and the viewer of one file address it by uri (one session): a label, a name, a
    message or a context edit one of them appends is told as ``appended`` before the answer (the
    other view takes it in with one ``since`` request), once: the watcher, finding the file grown
    by it, tells nothing more."""
    path = tmp_path / "example.jsonl"
    path.write_text(
        "\n".join([S.header(), S.user("u1", None, "hi"), S.assistant("a1", "u1", "hello")]) + "\n"
    )
    uri = path.as_uri()
    base = {"uri": uri, "levels": True, "limit": 10, "activeBranchFirst": True}
    held = await sidecar.request("pi/getTree", {**base, "aroundId": "a1"})
    session = (await sidecar.request("pi/getInfo", {"uri": uri}))["session"]
    appends = [
        {"kind": "label", "targetId": "u1", "label": "start"},
        {"kind": "session_info", "name": "a name"},
        {"kind": "message", "message": MINE},
    ]
    ids = []
    for params in appends:
        own = await sidecar.request("pi/append", {"uri": uri, **params})
        ids.append(own["id"])
        # (notifications and answers arrive in the order the server sent them)
        assert told(sidecar, session)[-1] == {
            "session": session,
            "uri": uri,
            "kind": "appended",
            "newEntryIds": [own["id"]],
            "leafId": own["id"],
        }
    edit = await sidecar.request("pi/appendContextEdit", {"uri": uri, "targetId": "u1", "replacement": None})
    ids.append(edit["id"])
    assert told(sidecar, session)[-1]["newEntryIds"] == [edit["id"]]
    # the other view follows with one since request: the label, the new rows
    delta = await sidecar.request("pi/getTree", {**base, "aroundId": edit["id"], "since": held["revision"]})
    assert {"id": "u1", "label": "start"}.items() <= delta["relabelled"][0].items()
    await asyncio.sleep(0.5)  # (the watcher looks at the file grown by them)
    assert [change["newEntryIds"] for change in told(sidecar, session)] == [[i] for i in ids]


async def test_a_handle_left_on_another_file_is_told_reloaded_before_the_answer(sidecar, tmp_path):
    """pi/createBranchedSession, pi/newSession and pi/setSessionFile leave the handle on another
    file (or a new session): ``reloaded``, with the uri of what it shows now, comes before the
    answer, so that every view of the handle loads it; a request refused tells nothing."""
    session, path = await sidecar.open_example(tmp_path)
    leaf = (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"]
    count = len(told(sidecar, session))

    def last() -> dict[str, Any]:
        changes = told(sidecar, session)
        assert len(changes) == count + 1
        return changes[-1]

    branched = await sidecar.request("pi/createBranchedSession", {"session": session, "leafId": leaf})
    assert branched["uri"] != path.as_uri()
    assert last() == {
        "session": session,
        "uri": branched["uri"],
        "kind": "reloaded",
        "newEntryIds": [],
        "leafId": branched["leafId"],
    }
    count += 1
    back = await sidecar.request("pi/setSessionFile", {"session": session, "path": str(path)})
    assert (last()["kind"], last()["uri"], last()["leafId"]) == ("reloaded", path.as_uri(), back["leafId"])
    count += 1
    fresh = await sidecar.request("pi/newSession", {"session": session})
    assert (last()["kind"], last()["uri"], last()["leafId"]) == ("reloaded", fresh.get("uri"), None)
    count += 1
    with expect_error(-32005):  # (a folder: the handle stays where it was)
        await sidecar.request("pi/setSessionFile", {"session": session, "path": str(tmp_path)})
    assert len(told(sidecar, session)) == count
