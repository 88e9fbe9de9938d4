"""A request by `uri` on a file that is not there: a read is an error naming the file (a new, empty
session in its place would hide a mistyped or deleted file), an open or a write is pi's open of a
missing path (a new session there)."""

from __future__ import annotations

import pytest
from sidecar_support import expect_error, sidecar_fixture  # noqa: F401  (fixture)

FS_ERROR = -32005

READS = [
    ("pi/getInfo", {}),
    ("pi/getTree", {}),
    ("pi/getTree", {"form": "flat", "limit": 10}),
    ("pi/getBranch", {}),
    ("pi/getEntries", {}),
    ("pi/getEntry", {"id": "1e2f3a4b"}),
    ("pi/getEntryCount", {}),
    ("pi/getHeader", {}),
    ("pi/getLeaf", {}),
    ("pi/getSessionName", {}),
    ("pi/getStats", {}),
    ("pi/buildSessionContext", {}),
    ("pi/resetLeaf", {}),
]


@pytest.mark.parametrize(("method", "params"), READS, ids=[f"{m}{sorted(p)}" for m, p in READS])
async def test_a_read_by_uri_of_a_missing_file_is_an_error_naming_it(sidecar, tmp_path, method, params):
    path = tmp_path / "mistyped.jsonl"
    with expect_error(FS_ERROR) as failure:
        await sidecar.request(method, {"uri": path.as_uri(), **params})
    assert failure.value.message == f"ENOENT: no such file or directory, open '{path}'"
    assert failure.value.data == {"name": "Error", "code": "ENOENT", "syscall": "open", "path": str(path)}
    assert not path.exists()
    assert await sidecar.request("pi/sessions") == []  # nothing held for it


async def test_a_file_made_after_a_failed_read_is_read(sidecar, tmp_path):
    path = tmp_path / "later.jsonl"
    with expect_error(FS_ERROR):
        await sidecar.request("pi/getEntryCount", {"uri": path.as_uri()})
    header = '{"type":"session","version":3,"id":"a","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
    path.write_text(header, encoding="utf-8")
    assert (await sidecar.request("pi/getHeader", {"uri": path.as_uri()}))["id"] == "a"


async def test_an_open_of_a_missing_path_is_a_new_session_there_as_pi_opens_it(sidecar, tmp_path):
    path = tmp_path / "new.jsonl"
    info = await sidecar.request("pi/open", {"path": str(path)})
    assert info["entryCount"] == 0 and info["sessionFile"] == str(path)
    # the session held on that path answers for it, by handle and by uri
    assert await sidecar.request("pi/getEntryCount", {"uri": path.as_uri()}) == 0
    assert (await sidecar.request("pi/getInfo", {"uri": path.as_uri()}))["session"] == info["session"]


async def test_a_write_by_uri_to_a_missing_file_starts_the_session_there(sidecar, tmp_path):
    path = tmp_path / "started.jsonl"
    message = {"role": "user", "content": "first", "timestamp": 1}
    written = await sidecar.request(
        "pi/append", {"uri": path.as_uri(), "kind": "message", "message": message}
    )
    entries = (await sidecar.request("pi/getEntries", {"uri": path.as_uri()}))["entries"]
    assert [entry["id"] for entry in entries] == [written["id"]]
