"""Replies of whole entries past the most one reply holds (MAX_REPLY_BYTES, made small in the
server for these tests) are refused with TooLarge over the wire, the server answers on, and what the
refusal says to ask for instead gives the whole of it; pi/getEntries pages by `offset`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sidecar_support import RpcFailure, expect_error, sidecar_fixture, start_sidecar, stop_sidecar  # noqa: F401

MAX = 3000
CWD = "/home/dev/projects/weather-cli"  # the example session's
SMALL_REPLIES = [
    sys.executable,
    "-c",
    "import sys; from pi_session_server.server import errors; "
    f"errors.MAX_REPLY_BYTES = {MAX}; "
    "from pi_session_server.cli import main; sys.exit(main(['serve']))",
]


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    ("method", "params", "instead"),
    [
        ("pi/getBranch", {}, "pi/getPath"),
        ("pi/getEntries", {}, "pi/getEntries with `limit`"),
        ("pi/getEntries", {"limit": 30, "offset": 2}, "pi/getEntries with `limit`"),
        ("pi/buildContextEntries", {}, "pi/getPath"),
        ("pi/buildSessionContext", {}, "pi/getPath"),
        ("pi/buildSessionContext", {"format": "markdown", "leafId": "0a9b8c7d"}, "pi/getPath"),
        ("pi/buildSessionProjection", {}, "pi/getPath"),
        ("pi/getTree", {"form": "reference"}, "form flat"),
    ],
)
async def test_a_reply_too_large_is_refused_and_the_server_answers_on(tmp_path, method, params, instead):
    side = await start_sidecar(tmp_path, command=SMALL_REPLIES)
    try:
        session, path = await side.open_example(tmp_path)
        with expect_error(-32011) as failure:
            await side.request(method, {"session": session, **params})
        assert failure.value.data["max"] == MAX and failure.value.data["bytes"] > MAX
        assert set(failure.value.data) == {"bytes", "max"} and instead in failure.value.message
        # the pages asked for instead hold all of it
        items, offset = [], 0
        while True:
            page = await side.request("pi/getPath", {"session": session, "offset": offset, "limit": 5})
            items.extend(item["entry"] for item in page["items"])
            if not page["hasMore"]:
                break
            offset = page["nextOffset"]
        assert len(items) == page["total"] == 28 and items[-1]["id"] == "e2f3a4b5"
        entries, offset = [], 0
        while True:
            page = await side.request("pi/getEntries", {"session": session, "offset": offset, "limit": 1})
            entries.extend(page["entries"])
            offset += len(page["entries"])
            if not page["hasMore"]:
                break
        assert entries == lines(path)[1:]
    finally:
        await stop_sidecar(side)


async def test_get_entries_pages_by_offset_where_ids_repeat(sidecar, tmp_path):
    path = tmp_path / "repeated.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "r",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
    }
    values = [
        {"type": "label", "id": entry_id, "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
        for entry_id in ("a", "b", "c", "b", "d", "e")  # a damaged file: b twice
    ]
    path.write_text("".join(json.dumps(v) + "\n" for v in [header, *values]))
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    first = await sidecar.request("pi/getEntries", {"session": session, "limit": 2})
    assert [e["id"] for e in first["entries"]] == ["a", "b"] and first["total"] == 6
    after_b = await sidecar.request("pi/getEntries", {"session": session, "since": "b", "limit": 2})
    assert [e["id"] for e in after_b["entries"]] == ["d", "e"]  # c and the second b skipped
    second = await sidecar.request("pi/getEntries", {"session": session, "offset": 2, "limit": 2})
    assert [e["id"] for e in second["entries"]] == ["c", "b"] and second["hasMore"] is True
    last = await sidecar.request("pi/getEntries", {"session": session, "offset": 4})
    assert [e["id"] for e in last["entries"]] == ["d", "e"] and last["hasMore"] is False
    with expect_error(-32602):
        await sidecar.request("pi/getEntries", {"session": session, "since": "a", "offset": 1})


@pytest.mark.parametrize("method", ["pi/list", "pi/listAll"])
async def test_a_listing_with_all_its_text_is_bounded_as_other_replies_are(tmp_path, method):
    """pi's listing carries every session's whole text: past the most one reply holds it is refused,
    and what the refusal says to ask for instead (less text, pages) is answered."""
    directory = tmp_path / "sessions"
    directory.mkdir()
    example = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"
    for i in range(3):
        (directory / f"s{i}.jsonl").write_bytes(example.read_bytes())
    side = await start_sidecar(tmp_path, command=SMALL_REPLIES)
    try:
        params = {"sessionDir": str(directory), **({"cwd": CWD} if method == "pi/list" else {})}
        for asked in ({}, {"text": "all"}, {"offset": 0, "limit": 3}):
            with expect_error(-32011) as failure:
                await side.request(method, {**params, **asked})
            assert set(failure.value.data) == {"bytes", "max"} and failure.value.data["max"] == MAX
            assert failure.value.data["bytes"] > MAX
            assert "`text`" in failure.value.message and "`maxTextChars`" in failure.value.message
        assert len(await side.request(method, {**params, "text": "none"})) == 3
        cut = await side.request(method, {**params, "maxTextChars": 100})
        assert len(cut) == 3 and all(len(s["allMessagesText"]) == 100 for s in cut)
        page = await side.request(method, {**params, "offset": 0, "limit": 1})
        assert len(page["sessions"]) == 1 and page["total"] == 3
    finally:
        await stop_sidecar(side)


@pytest.mark.parametrize("method", ["pi/list", "pi/listAll"])
async def test_a_listing_past_the_bound_only_by_its_escapes_is_refused(tmp_path, method):
    """Text of newlines, quotes, backslashes and control characters takes two or six bytes a
    character in the reply: a listing whose characters fit in the bound but whose JSON does not is
    refused, as its reply would be larger than one reply may be."""
    directory = tmp_path / "sessions"
    directory.mkdir()
    escaped = '\n"\\\x01' * 150  # 600 characters, 1,500 bytes in the reply
    header = {"type": "session", "version": 3, "id": "e", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD}
    message = {
        "type": "message",
        "id": "m1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": escaped, "timestamp": 1},
    }
    (directory / "escaped.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(message) + "\n")
    side = await start_sidecar(tmp_path, command=SMALL_REPLIES)
    try:
        params = {"sessionDir": str(directory), **({"cwd": CWD} if method == "pi/list" else {})}
        # the text twice (first message and all the text): 1,200 characters, 3,000 bytes written
        short = await side.request(method, {**params, "text": "none"})
        assert len(short) == 1 and len(json.dumps(short, separators=(",", ":"))) + 2 * 1200 < MAX
        with expect_error(-32011) as failure:
            await side.request(method, params)
        assert failure.value.data["bytes"] > MAX
    finally:
        await stop_sidecar(side)
