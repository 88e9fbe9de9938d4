"""The sidecar holding a large version 1 session read-only by uri (its entries read lazily), while
other programs write the file (tests/version_1_writers.py): it tells each change, and every answer
after it is the one it gives on a copy of the file as it is now, or, for an emptied or deleted file,
the session as it was (a body it cannot read any more a clear error); before it looks at the file,
a read is the old file's, the new file's or a clear error. The file is never written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from sidecar_support import RpcFailure, Sidecar, start_sidecar, stop_sidecar
from test_sidecar_old_sessions import LAZY_SERVER, answers
from version_1_writers import CHANGES, NEEDS_PI, OTHER_SESSION, pi_is_here, told, version_1_session


async def answers_as_a_copys(sidecar: Sidecar, path: Path, tmp_path: Path) -> tuple[list[str], str]:
    """The answers on a copy of the file at ``path`` as it is now, named as ``path``'s."""
    copy = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}.jsonl"
    shutil.copy(path, copy)
    ids, got = await answers(sidecar, {"uri": copy.as_uri()})
    return ids, got.replace(str(copy), str(path)).replace(copy.name, path.name)


async def entry_reads(sidecar: Sidecar, address: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """``pi/getEntry`` of each id: its answer, or the error's code."""
    read = {}
    for entry_id in ids:
        try:
            read[entry_id] = await sidecar.request("pi/getEntry", {**address, "id": entry_id})
        except RpcFailure as failure:
            read[entry_id] = failure.code
    return read


async def context_read(sidecar: Sidecar, address: dict[str, Any]) -> Any:
    """``pi/buildSessionContext``'s answer, or the error's code."""
    try:
        return await sidecar.request("pi/buildSessionContext", address)
    except RpcFailure as failure:
        return failure.code


@pytest.mark.parametrize("name", list(CHANGES))
async def test_a_lazy_version_1_view_by_uri_answers_as_the_file_now_is(tmp_path: Path, name: str) -> None:
    if name in NEEDS_PI and not pi_is_here():
        pytest.skip("needs node and pi (PI_ORACLE_DIR)")
    path = tmp_path / "old.jsonl"
    path.write_bytes(version_1_session())
    sidecar = await start_sidecar(tmp_path, command=LAZY_SERVER)
    try:
        address = {"uri": path.as_uri()}
        ids, before = await answers(sidecar, address)
        assert (ids, before) == await answers_as_a_copys(sidecar, path, tmp_path)
        CHANGES[name](path)
        written = path.read_bytes() if path.exists() else None
        kind = told(name)
        await sidecar.wait_for("pi/didChange", lambda p: p["uri"] == path.as_uri() and p["kind"] == kind)
        if kind == "reloaded":
            assert await answers(sidecar, address) == await answers_as_a_copys(sidecar, path, tmp_path)
        else:  # the session stays as it was: what it read, or a clear error for a body it reads again
            try:
                entries = (await sidecar.request("pi/getEntries", address))["entries"]
                assert [e["id"] for e in entries] == ids
            except RpcFailure as failure:
                assert "changed underneath" in failure.message
            old = await entry_reads(sidecar, {"uri": (tmp_path / "copy-0.jsonl").as_uri()}, ids)
            for entry_id, read in (await entry_reads(sidecar, address, ids)).items():
                assert read == old[entry_id] or isinstance(read, int), entry_id
        if name == "shell empties it":  # ... until the file has a header again
            path.write_bytes(OTHER_SESSION)
            written = OTHER_SESSION
            await sidecar.wait_for(
                "pi/didChange", lambda p: p["uri"] == path.as_uri() and p["kind"] == "reloaded"
            )
            assert await answers(sidecar, address) == await answers_as_a_copys(sidecar, path, tmp_path)
        assert (path.read_bytes() if path.exists() else None) == written  # never written
    finally:
        await stop_sidecar(sidecar)


@pytest.mark.parametrize(
    "name", ["editor saves in place, same size and time", "shell writes another session"]
)
async def test_before_it_looks_a_lazy_version_1_view_reads_the_old_file_the_new_or_fails(
    tmp_path: Path, name: str
) -> None:
    """The watcher asleep: a read after another program wrote the file in place, before the view
    looked at it, is what the view read before, what a copy of the new file gives, or an error."""
    path = tmp_path / "old.jsonl"
    path.write_bytes(version_1_session())
    sidecar = await start_sidecar(tmp_path, "--watch-interval", "3600", command=LAZY_SERVER)
    try:
        address = {"uri": path.as_uri()}
        ids = [e["id"] for e in (await sidecar.request("pi/getEntries", address))["entries"]]
        old = await entry_reads(sidecar, address, ids)
        old_context = await context_read(sidecar, address)
        CHANGES[name](path)
        copy = tmp_path / "copy.jsonl"
        shutil.copy(path, copy)
        new = await entry_reads(sidecar, {"uri": copy.as_uri()}, ids)
        reads = await entry_reads(sidecar, address, ids)
        assert any(isinstance(read, int) for read in reads.values())  # (the file changed under them)
        for entry_id, read in reads.items():
            assert isinstance(read, int) or read in (old[entry_id], new.get(entry_id)), entry_id
        context = await context_read(sidecar, address)
        assert isinstance(context, int) or context in (
            old_context,
            await context_read(sidecar, {"uri": copy.as_uri()}),
        )
    finally:
        await stop_sidecar(sidecar)
