"""pi/delete (trash by default) and work-done progress for long operations."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from sidecar_support import EXAMPLE, expect_error, sidecar_fixture  # noqa: F401  (fixture)


def trash_files(home: Path) -> list[Path]:
    trash = home / "home" / ".local" / "share" / "Trash" / "files"
    return sorted(trash.iterdir()) if trash.is_dir() else []


async def test_delete_moves_to_the_trash_and_closes_handles(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    other = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    result = await sidecar.request("pi/delete", {"path": str(path)})
    assert result == {"path": str(path), "trashed": True, "closedSessions": [session, other]}
    assert not path.exists()
    assert [p.name for p in trash_files(tmp_path)] == ["example.jsonl"]
    assert (trash_files(tmp_path)[0]).read_bytes() == EXAMPLE.read_bytes()
    with expect_error(-32001):
        await sidecar.request("pi/getInfo", {"session": session})


async def test_delete_permanently_only_when_asked(sidecar, tmp_path):
    path = tmp_path / "gone.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    result = await sidecar.request("pi/delete", {"uri": path.as_uri(), "permanent": True})
    assert result["trashed"] is False and not path.exists() and trash_files(tmp_path) == []


async def test_delete_refuses_files_that_are_not_sessions(sidecar, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"type":"message","id":"x"}\n')
    with expect_error(-32010) as failure:
        await sidecar.request("pi/delete", {"path": str(notes)})
    assert failure.value.data == {"path": str(notes)}
    with expect_error(-32010):
        await sidecar.request("pi/delete", {"path": str(tmp_path)})
    with expect_error(-32005) as failure:
        await sidecar.request("pi/delete", {"path": str(tmp_path / "missing.jsonl")})
    assert failure.value.data["code"] == "ENOENT"
    assert notes.exists()


async def test_progress_while_listing_and_opening(sidecar, tmp_path):
    directory = tmp_path / "many"
    directory.mkdir()
    for i in range(30):
        (directory / f"s{i:02}.jsonl").write_bytes(EXAMPLE.read_bytes())
    sidecar.client.progress_reports.setdefault("list-1", [])
    listed = await sidecar.request("pi/listAll", {"sessionDir": str(directory), "workDoneToken": "list-1"})
    assert len(listed) == 30
    reports = sidecar.client.progress_reports["list-1"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "Listing all sessions"
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    middle = [r for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    assert middle and middle[-1].message == "30/30 session files" and middle[-1].percentage == 100

    sidecar.client.progress_reports.setdefault(7, [])
    await sidecar.request("pi/open", {"path": str(directory / "s00.jsonl"), "workDoneToken": 7})
    kinds = [type(r) for r in sidecar.client.progress_reports[7]]
    assert kinds[0] is types.WorkDoneProgressBegin and kinds[-1] is types.WorkDoneProgressEnd


async def test_no_progress_without_a_token(sidecar, tmp_path):
    await sidecar.request("pi/listAll", {"sessionDir": str(tmp_path)})
    assert sidecar.client.progress_reports == {}
