"""Every pi/* method end to end on the real server process (replies checked against protocol/)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import builders as S
import pytest
from builders import assistant_message, user_message
from pygls.exceptions import JsonRpcException
from sidecar_support import EXAMPLE, expect_error, sidecar_fixture  # noqa: F401  (fixture)

from pi_session_server.render.context_markdown import context_markdown
from pi_session_server.server.errors import SESSION_ERROR

USER = user_message("hello", 1)
ASSISTANT = assistant_message("hi", 2, model="claude-test")


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


async def test_open_reads_the_example_session(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    info = await sidecar.request("pi/getInfo", {"session": session})
    assert info["sessionId"] == "019ceb3f-5a1c-7b2e-9d41-6f0e3c8a27b5"
    assert info["sessionFile"] == str(path)
    assert info["uri"] == path.as_uri()
    assert info["cwd"] == "/home/dev/projects/weather-cli"
    assert info["sessionName"] == "Fix forecast parsing, add caching"
    assert info["entryCount"] == len(lines(path)) - 1
    assert info["leafId"] == lines(path)[-1]["id"]
    assert (
        await sidecar.request("pi/getSessionName", {"session": session})
        == "Fix forecast parsing, add caching"
    )
    header = await sidecar.request("pi/getHeader", {"session": session})
    assert header == lines(path)[0]


async def test_a_damaged_file_says_which_lines_pi_skips(sidecar, tmp_path):
    a, b = S.user("aaaa0001", None, "first"), S.assistant("bbbb0002", "aaaa0001", "second")
    c, d = S.user("cccc0003", "bbbb0002", "third"), S.user("dddd0004", "cccc0003", "fourth")
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_text("\n".join([S.header(), a, b[:57] + c, "null", *["{"] * 25, d]) + "\n")
    opened = await sidecar.request("pi/open", {"path": str(crashed)})
    viewed = await sidecar.request("pi/getInfo", {"uri": crashed.as_uri()})
    for info in (opened, viewed):
        assert info["entryCount"] == 2 and info["skippedLines"] == 27
        assert len(info["skipped"]) == 20  # the first ones; the diagnostics have them all
        glued, falsy, broken = info["skipped"][:3]
        assert glued == {
            "line": 2,
            "column": 57,
            "kind": "glued",
            "message": "2 lines glued together (a cut-off line, then entry `cccc0003` (message)): "
            "pi skips the whole line, and with it entry cccc0003",
        }
        assert (falsy["line"], falsy["kind"]) == (3, "falsy")
        assert (broken["line"], broken["kind"]) == (4, "malformed")
        assert broken["message"].startswith("invalid JSON: ")
    whole = await sidecar.request("pi/getInfo", {"session": (await sidecar.open_example(tmp_path))[0]})
    assert whole["skippedLines"] == 0 and "skipped" not in whole


async def test_entries_keep_the_file_values_and_key_order(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    page = await sidecar.request("pi/getEntries", {"session": session})
    assert page["entries"] == lines(path)[1:]
    assert [list(e) for e in page["entries"]] == [list(e) for e in lines(path)[1:]]
    assert page["total"] == len(page["entries"]) and page["hasMore"] is False
    # incremental reads with an id cursor
    first = await sidecar.request("pi/getEntries", {"session": session, "limit": 5})
    assert first["entries"] == page["entries"][:5] and first["hasMore"] is True
    rest = await sidecar.request("pi/getEntries", {"session": session, "since": first["entries"][-1]["id"]})
    assert rest["entries"] == page["entries"][5:]
    with expect_error(-32002):
        await sidecar.request("pi/getEntries", {"session": session, "since": "no-such-id"})


async def test_lookups(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    by_id = {e["id"]: e for e in lines(path)[1:]}
    assert await sidecar.request("pi/getEntry", {"session": session, "id": "9d0e1f2a"}) == by_id["9d0e1f2a"]
    assert await sidecar.request("pi/getEntry", {"session": session, "id": "missing"}) is None
    assert await sidecar.request("pi/getLabel", {"session": session, "id": "9d0e1f2a"}) == "tests-green"
    assert await sidecar.request("pi/getLabel", {"session": session, "id": "1e2f3a4b"}) is None
    children = await sidecar.request("pi/getChildren", {"session": session, "parentId": "9d0e1f2a"})
    assert [c["id"] for c in children] == ["b1c2d3e4", "d9e0f1a2"]
    roots = await sidecar.request("pi/getChildren", {"session": session, "parentId": None})
    assert [c["id"] for c in roots] == ["a3f1c2d4"]
    leaf = await sidecar.request("pi/getLeaf", {"session": session})
    assert leaf["leafId"] == "e2f3a4b5" and leaf["entry"] == by_id["e2f3a4b5"]
    branch = await sidecar.request("pi/getBranch", {"session": session, "fromId": "0a9b8c7d"})
    assert [e["id"] for e in branch] == [
        "a3f1c2d4",
        "5b7e9a01",
        "c0d2e4f6",
        "1e2f3a4b",
        "6c7d8e9f",
        "0a9b8c7d",
    ]


async def test_context_at_leaf_and_at_an_entry(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    context = await sidecar.request("pi/buildSessionContext", {"session": session})
    roles = [m["role"] for m in context["messages"]]
    assert roles[:2] == ["system", "compactionSummary"]  # the compaction's checkpoint, then its summary
    assert roles[-1] == "custom"
    assert context["thinkingLevel"] == "medium"
    assert context["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    at = await sidecar.request("pi/buildSessionContext", {"session": session, "leafId": "1e2f3a4b"})
    assert [m["role"] for m in at["messages"]] == ["system", "user"]
    empty = await sidecar.request("pi/buildSessionContext", {"session": session, "leafId": None})
    assert empty == {"messages": [], "thinkingLevel": "off", "model": None}
    entries = await sidecar.request("pi/buildContextEntries", {"session": session})
    assert entries[0]["type"] == "compaction" and entries[1]["id"] == "e0f1a2b3"
    # the leaf did not move
    assert (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"] == "e2f3a4b5"


async def test_context_as_markdown_is_the_documents_the_cli_prints(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    shown = await sidecar.request("pi/buildSessionContext", {"session": session, "format": "markdown"})
    context = await sidecar.request("pi/buildSessionContext", {"session": session})
    assert shown == {"markdown": context_markdown(context, "Context of example.jsonl at the leaf")}
    assert shown["markdown"].startswith("# Context of example.jsonl at the leaf\n\n- model: anthropic/")
    at = await sidecar.request(
        "pi/buildSessionContext", {"uri": path.as_uri(), "leafId": "1e2f3a4b", "format": "markdown"}
    )
    assert at["markdown"].startswith("# Context of example.jsonl at entry 1e2f3a4b\n")
    assert "## 2. user\n" in at["markdown"]
    memory = (await sidecar.request("pi/inMemory", {}))["session"]
    empty = await sidecar.request("pi/buildSessionContext", {"session": memory, "format": "markdown"})
    assert empty["markdown"].startswith("# Context of an in-memory session at the leaf\n\n- model: none\n")
    with expect_error(-32602):
        await sidecar.request("pi/buildSessionContext", {"session": session, "format": "html"})


async def test_append_every_kind_to_a_persisted_session(sidecar, tmp_path):
    info = await sidecar.request("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")})
    s = info["session"]
    assert info["isPersisted"] is True and info["leafId"] is None
    ids = {}
    ids["model"] = (
        await sidecar.request(
            "pi/append",
            {"session": s, "kind": "model_change", "provider": "anthropic", "modelId": "claude-test"},
        )
    )["id"]
    ids["thinking"] = (
        await sidecar.request(
            "pi/append", {"session": s, "kind": "thinking_level_change", "thinkingLevel": "high"}
        )
    )["id"]
    ids["user"] = (await sidecar.request("pi/append", {"session": s, "kind": "message", "message": USER}))[
        "id"
    ]
    # the first user message writes the file (pi 1.6.0, the default; 0.86.1 waited for an assistant)
    assert os.path.exists(info["sessionFile"])
    ids["assistant"] = (
        await sidecar.request("pi/append", {"session": s, "kind": "message", "message": ASSISTANT})
    )["id"]
    usage = await sidecar.request(
        "pi/append",
        {
            "session": s,
            "kind": "usage",
            "usageKind": "cache_warm",
            "provider": "anthropic",
            "model": "m",
            "usage": {"input": 1},
            "note": "warm",
        },
    )
    assert usage["entry"]["kind"] == "cache_warm" and usage["entry"]["note"] == "warm"
    ids["custom"] = (
        await sidecar.request(
            "pi/append", {"session": s, "kind": "custom", "customType": "ext", "data": {"n": 1}}
        )
    )["id"]
    ids["cm"] = (
        await sidecar.request(
            "pi/append",
            {
                "session": s,
                "kind": "custom_message",
                "customType": "ext",
                "content": "shown",
                "display": True,
            },
        )
    )["id"]
    ids["name"] = (
        await sidecar.request("pi/append", {"session": s, "kind": "session_info", "name": " My\nsession "})
    )["id"]
    ids["label"] = (
        await sidecar.request(
            "pi/append", {"session": s, "kind": "label", "targetId": ids["user"], "label": "start"}
        )
    )["id"]
    compaction = await sidecar.request(
        "pi/append",
        {
            "session": s,
            "kind": "compaction",
            "summary": "sum",
            "firstKeptEntryId": ids["user"],
            "tokensBefore": 1234,
        },
    )
    assert compaction["leafId"] == compaction["id"]
    written = lines(Path(info["sessionFile"]))
    assert [line["type"] for line in written] == [
        "session",
        "model_change",
        "thinking_level_change",
        "message",
        "message",
        "usage",
        "custom",
        "custom_message",
        "session_info",
        "label",
        "compaction",
    ]
    assert list(written[6]) == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert written[8]["name"] == "My session"
    assert written[9] == {**written[9], "targetId": ids["user"], "label": "start"}
    assert await sidecar.request("pi/getLabel", {"session": s, "id": ids["user"]}) == "start"
    assert await sidecar.request("pi/getSessionName", {"session": s}) == "My session"
    # parent chain: every entry is the child of the one before
    assert [e.get("parentId") for e in written[1:]] == [None] + [e["id"] for e in written[1:-1]]


async def test_branching_methods(sidecar, tmp_path):
    info = await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)})
    s = info["session"]
    a = (await sidecar.request("pi/append", {"session": s, "kind": "message", "message": USER}))["id"]
    b = (await sidecar.request("pi/append", {"session": s, "kind": "message", "message": ASSISTANT}))["id"]
    assert await sidecar.request("pi/branch", {"session": s, "entryId": a}) == {"leafId": a}
    summary = await sidecar.request(
        "pi/branchWithSummary", {"session": s, "branchFromId": a, "summary": "tried b"}
    )
    entry = await sidecar.request("pi/getEntry", {"session": s, "id": summary["id"]})
    assert entry["parentId"] == a and entry["fromId"] == a  # the leaf before was a (after branch)
    assert await sidecar.request("pi/resetLeaf", {"session": s}) == {"leafId": None}
    root = await sidecar.request("pi/append", {"session": s, "kind": "message", "message": USER})
    assert (await sidecar.request("pi/getEntry", {"session": s, "id": root["id"]}))["parentId"] is None
    branched = await sidecar.request("pi/createBranchedSession", {"session": s, "leafId": b})
    assert branched["session"] == s and branched["entryCount"] == 2 and "result" not in branched
    assert [e["id"] for e in (await sidecar.request("pi/getEntries", {"session": s}))["entries"]] == [a, b]
    fresh = await sidecar.request("pi/newSession", {"session": s, "options": {"id": "my-session"}})
    assert fresh["sessionId"] == "my-session" and fresh["entryCount"] == 0


async def test_leaf_moves_are_told_as_did_change_before_their_answers(sidecar, tmp_path):
    """pi/branch, pi/resetLeaf and pi/branchWithSummary tell the move as pi/didChange leafMoved
    before they answer (every view of the session follows it, not only the one that asked); a
    request that leaves the leaf where it was tells nothing."""
    session, path = await sidecar.open_example(tmp_path)
    branch = await sidecar.request("pi/getBranch", {"session": session})
    older = branch[len(branch) // 2]["id"]

    def moves() -> list[Any]:
        return [p for p in sidecar.notifications.get("pi/didChange", []) if p["kind"] == "leafMoved"]

    told = {"session": session, "uri": path.as_uri(), "kind": "leafMoved", "newEntryIds": []}
    await sidecar.request("pi/branch", {"session": session, "entryId": older})
    assert moves() == [{**told, "leafId": older}]
    await sidecar.request("pi/branch", {"session": session, "entryId": older})  # (where it is)
    summary = await sidecar.request(
        "pi/branchWithSummary", {"session": session, "branchFromId": branch[0]["id"], "summary": "back"}
    )
    assert moves()[1:] == [{**told, "leafId": summary["id"]}]
    await sidecar.request("pi/resetLeaf", {"session": session})
    await sidecar.request("pi/resetLeaf", {"session": session})
    assert moves()[2:] == [{**told, "leafId": None}]
    assert [p["kind"] for p in sidecar.notifications["pi/didChange"]] == ["leafMoved"] * 3


async def test_errors_carry_the_reference_messages(sidecar, tmp_path):
    info = await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)})
    s = info["session"]
    with expect_error(-32002) as failure:
        await sidecar.request("pi/branch", {"session": s, "entryId": "nope"})
    assert failure.value.message == "Entry nope not found"
    with expect_error(-32002) as failure:
        await sidecar.request("pi/branch", {"session": s, "entryId": None})
    assert failure.value.message == "Entry null not found"
    with expect_error(-32002) as failure:
        await sidecar.request("pi/append", {"session": s, "kind": "label", "targetId": "x", "label": "l"})
    assert failure.value.message == "Entry x not found"
    with expect_error(-32004) as failure:
        await sidecar.request("pi/newSession", {"session": s, "options": {"id": "-bad-"}})
    assert failure.value.message.startswith("Session id must be non-empty")
    bad = tmp_path / "not-a-session.jsonl"
    bad.write_text('{"type":"message"}\n')
    with expect_error(-32003) as failure:
        await sidecar.request("pi/open", {"path": str(bad)})
    assert failure.value.message == f"Session file is not a valid pi session: {bad}"
    with expect_error(-32005) as failure:
        await sidecar.request("pi/open", {"path": str(tmp_path)})
    assert failure.value.data["code"] == "EISDIR"
    with expect_error(-32006) as failure:
        await sidecar.request("pi/forkFrom", {"sourcePath": str(tmp_path / "none.jsonl"), "targetCwd": "/x"})
    assert (
        failure.value.message
        == f"Cannot fork: source session file is empty or invalid: {tmp_path / 'none.jsonl'}"
    )
    with expect_error(-32001):
        await sidecar.request("pi/getLeaf", {"session": "s999"})


async def test_invalid_params_name_the_field(sidecar, tmp_path):
    s = (await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)}))["session"]
    cases = [
        ("pi/open", {}, "`path`"),
        ("pi/setSessionFile", {"session": s}, "`path`"),
        ("pi/open", {"path": 5}, "`$.path`"),
        ("pi/append", {"session": s}, "`kind`"),
        ("pi/append", {"session": s, "kind": "bogus"}, "`$.kind`"),
        ("pi/getTree", {"session": s, "filter": "everything"}, "`$.filter`"),
        ("pi/getEntries", {"session": s, "limit": "ten"}, "`$.limit`"),
        ("pi/getLeaf", {}, "`session` or `uri`"),
        ("pi/getLeaf", {"uri": "http://example.com/x"}, "`$.uri`"),
        ("pi/getLeaf", {"uri": "file:relative.jsonl"}, "`$.uri`"),  # (file:// and a path)
        ("pi/create", {"cwd": "/x", "options": []}, "`$.options`"),
    ]
    for method, params, needle in cases:
        with expect_error(-32602) as failure:
            await sidecar.request(method, params)
        assert needle in failure.value.message, (method, failure.value.message)
    # a value the reference takes as it is may be left out: that is JS undefined, as in pi
    with expect_error(-32002) as failure:
        await sidecar.request("pi/branch", {"session": s})
    assert failure.value.message == "Entry undefined not found"
    # (a session's name is one of them: pi calls name.replace, a TypeError for anything but a string)
    typed = {"session": s, "kind": "session_info"}
    for params, text in [
        (typed, "Cannot read properties of undefined (reading 'replace')"),
        ({**typed, "name": 7}, "name.replace is not a function"),
    ]:
        with expect_error(SESSION_ERROR) as failure:
            await sidecar.request("pi/append", params)
        assert (failure.value.message, failure.value.data["name"]) == (text, "TypeError")
    with pytest.raises(JsonRpcException) as unknown:
        await sidecar.client.protocol.send_request_async("pi/noSuchMethod", {})
    assert unknown.value.code == -32601


async def test_failed_append_leaves_the_session_as_it_was(sidecar, tmp_path):
    directory = tmp_path / "s"
    info = await sidecar.request("pi/open", {"path": str(directory / "new.jsonl")})
    s = info["session"]
    await sidecar.request(
        "pi/append", {"session": s, "kind": "model_change", "provider": "p", "modelId": "m"}
    )
    before = await sidecar.request("pi/getInfo", {"session": s})
    (directory / "new.jsonl").write_text("someone else's file\n")  # the first batch write will find it
    with expect_error(-32005) as failure:  # at the first user message (pi 1.6.0, the default)
        await sidecar.request("pi/append", {"session": s, "kind": "message", "message": USER})
    assert failure.value.data["code"] == "EEXIST"
    assert failure.value.message == f"EEXIST: file already exists, open '{directory / 'new.jsonl'}'"
    after = await sidecar.request("pi/getInfo", {"session": s})
    assert after == before  # same leaf, same entry count
    assert (directory / "new.jsonl").read_text() == "someone else's file\n"


async def test_uri_addressing_opens_on_demand_without_writing(sidecar, tmp_path):
    v2 = tmp_path / "old.jsonl"
    text = (
        '{"type":"session","version":2,"id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}\n'
        '{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":1}}'
    )
    v2.write_text(text)  # v2 and no final newline: open() would rewrite it
    uri = v2.as_uri()
    context = await sidecar.request("pi/buildSessionContext", {"uri": uri})
    assert [m["role"] for m in context["messages"]] == ["custom"]  # migrated in memory
    info = await sidecar.request("pi/getInfo", {"uri": uri})
    assert info["readOnly"] is True and info["leafId"] == "m1"
    # the view keeps the file's line numbers and problems (issue 23, item A)
    assert (await sidecar.request("pi/getEntryAtLine", {"uri": uri, "line": 1}))["id"] == "m1"
    assert v2.read_text() == text  # untouched by reads
    # a write would convert the whole file (new ids): never without the user asking (item B)
    with expect_error(-32012) as refused:
        await sidecar.request("pi/append", {"uri": uri, "kind": "message", "message": USER})
    assert refused.value.data == {"path": str(v2), "version": 2}
    assert "pi/open" in refused.value.message
    assert v2.read_text() == text
    assert (await sidecar.request("pi/getInfo", {"uri": uri}))["readOnly"] is True

    v3 = tmp_path / "crashed.jsonl"
    v3_text = (
        '{"type":"session","version":3,"id":"new","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}\n'
        '{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"h","timestamp":1}}'
    )
    v3.write_text(v3_text)  # a crash cut the final newline
    uri = v3.as_uri()
    info = await sidecar.request("pi/getInfo", {"uri": uri})
    assert info["readOnly"] is True and info["leafId"] == "m1"
    assert v3.read_text() == v3_text
    await sidecar.request("pi/append", {"uri": uri, "kind": "message", "message": USER})
    written = lines(v3)
    assert [w.get("id") for w in written[:2]] == ["new", "m1"]  # the ids stay the file's
    assert written[2]["parentId"] == "m1"
    info = await sidecar.request("pi/getInfo", {"uri": uri})
    assert info["readOnly"] is False and info["entryCount"] == 2


async def test_a_view_by_uri_keeps_the_files_lines_and_problems(sidecar, tmp_path):
    """Issue 23, item A: a v1 file and a file a crash cut are looked at as they are: every tree node
    has its line, the entry on a line is found, and the lines pi skips are counted."""
    v1 = tmp_path / "v1.jsonl"
    v1.write_text(
        '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}\n'
        "not json\n"
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],'
        '"api":"a","provider":"p","model":"m","usage":{},"stopReason":"stop","timestamp":2}}'
    )
    before = v1.read_bytes()
    uri = v1.as_uri()
    tree = await sidecar.request("pi/getTree", {"uri": uri})
    assert [node["line"] for node in tree["nodes"]] == [1, 3]
    ids = [node["id"] for node in tree["nodes"]]
    assert (await sidecar.request("pi/getEntryAtLine", {"uri": uri, "line": 3}))["id"] == ids[1]
    info = await sidecar.request("pi/getInfo", {"uri": uri})
    assert info["readOnly"] is True and info["skippedLines"] == 1 and info["skipped"][0]["line"] == 2
    assert v1.read_bytes() == before
    # a label aimed at an id of the view: refused, the file untouched (issue 23, item B)
    with expect_error(-32012):
        await sidecar.request("pi/append", {"uri": uri, "kind": "label", "targetId": ids[0], "label": "x"})
    assert v1.read_bytes() == before
    assert [n["id"] for n in (await sidecar.request("pi/getTree", {"uri": uri}))["nodes"]] == ids


async def test_close_and_sessions(sidecar, tmp_path):
    a = (await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)}))["session"]
    b = (await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)}))["session"]
    held = await sidecar.request("pi/sessions", {})
    assert [h["session"] for h in held] == [a, b]
    assert await sidecar.request("pi/close", {"session": a}) == {"session": a, "closed": True}
    assert [h["session"] for h in await sidecar.request("pi/sessions", {})] == [b]
    with expect_error(-32001):
        await sidecar.request("pi/close", {"session": a})


async def test_fork_continue_recent_list_and_find(sidecar, tmp_path):
    source = tmp_path / "example.jsonl"
    source.write_bytes(EXAMPLE.read_bytes())
    sessions = tmp_path / "sessions"
    fork = await sidecar.request(
        "pi/forkFrom", {"sourcePath": str(source), "targetCwd": str(tmp_path), "sessionDir": str(sessions)}
    )
    assert fork["header"]["parentSession"] == str(source) and fork["entryCount"] == 36
    recent = await sidecar.request("pi/continueRecent", {"cwd": str(tmp_path), "sessionDir": str(sessions)})
    assert recent["sessionFile"] == fork["sessionFile"]
    listed = await sidecar.request("pi/list", {"cwd": str(tmp_path), "sessionDir": str(sessions)})
    assert [x["path"] for x in listed] == [fork["sessionFile"]]
    assert listed[0]["name"] == "Fix forecast parsing, add caching"
    assert listed[0]["firstMessage"].startswith("The test suite fails")
    everything = await sidecar.request("pi/listAll", {"sessionDir": str(sessions)})
    assert everything == listed
    found = await sidecar.request(
        "pi/findById", {"cwd": str(tmp_path), "id": fork["sessionId"], "sessionDir": str(sessions)}
    )
    assert found == fork["sessionFile"]
    assert (
        await sidecar.request(
            "pi/findById", {"cwd": str(tmp_path), "id": "nope", "sessionDir": str(sessions)}
        )
        is None
    )
    created = await sidecar.request("pi/create", {"cwd": "/proj/x"})  # default directory under the agent dir
    assert created["usesDefaultSessionDir"] is True
    assert created["sessionDir"] == str(tmp_path / "agent" / "sessions" / "--proj-x--")


async def test_set_session_file(sidecar, tmp_path):
    s = (await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)}))["session"]
    source = tmp_path / "example.jsonl"
    source.write_bytes(EXAMPLE.read_bytes())
    switched = await sidecar.request("pi/setSessionFile", {"session": s, "path": str(source)})
    assert switched["entryCount"] == 36 and switched["sessionFile"] == str(source)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with expect_error(-32003):
        await sidecar.request("pi/setSessionFile", {"session": s, "path": str(bad)})
    assert (await sidecar.request("pi/getInfo", {"session": s}))["sessionFile"] == str(source)


async def test_line_breaks_tell_an_editor_that_ends_lines_at_a_lone_cr_how_it_numbers_them(sidecar, tmp_path):
    """pi/getLineBreaks: the lines holding a lone CR (JSON white space to pi, a line break to VS
    Code). The lines of the other methods stay pi's; with the reply, a client finds the line where
    VS Code shows each entry of the tree, and pi's line of each of VS Code's lines."""
    text = "".join(
        line + "\n"
        for line in (
            S.header(),
            S.user("a", None).replace('"id"', '\r"id"', 1),
            S.assistant("b", "a").replace('"id"', '\r"id"', 1).replace('"timestamp"', '\r"timestamp"', 1),
            S.user("c", "b") + "\r",  # (a CRLF: no lone CR)
        )
    )
    path = tmp_path / "cr.jsonl"
    path.write_bytes(text.encode())
    uri = path.as_uri()
    breaks = (await sidecar.request("pi/getLineBreaks", {"uri": uri}))["loneCarriageReturns"]
    assert breaks == [{"line": 1, "count": 1}, {"line": 2, "count": 2}]

    def editor_line(pi_line: int) -> int:
        return pi_line + sum(b["count"] for b in breaks if b["line"] < pi_line)

    starts = [0] + [at + 1 for at, char in enumerate(text) if char == "\n"]
    tree = await sidecar.request("pi/getTree", {"uri": uri})
    for node in tree["nodes"]:  # VS Code's line where the entry's line starts
        before = text[: starts[node["line"]]]
        assert editor_line(node["line"]) == len(re.findall("\r\n|\r|\n", before)), node["id"]
    assert (await sidecar.request("pi/getEntryAtLine", {"uri": uri, "line": 2}))["id"] == "b"
    # the file changed (another program appended a line with a lone CR): asked again, it is read again
    with path.open("ab") as file:
        file.write((S.user("d", "c").replace('"id"', '\r"id"', 1) + "\n").encode())
    breaks = (await sidecar.request("pi/getLineBreaks", {"uri": uri}))["loneCarriageReturns"]
    assert breaks[-1] == {"line": 4, "count": 1}

    held = (await sidecar.request("pi/inMemory", {"cwd": str(tmp_path)}))["session"]
    assert await sidecar.request("pi/getLineBreaks", {"session": held}) == {"loneCarriageReturns": []}
