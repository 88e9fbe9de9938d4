"""Sessions older pis wrote (version 1 and 2) through the real server: read by `uri` (holding their
values, and read lazily as a file past the size bound is) and opened writable, every answer is the
answer on the file pi's own migration writes (pi, run by node, opens a copy writable), the ids a
version 1 file draws named as pi's by position; and so after another program appends to the file
the view holds (a version 1 line without ids, a version 2 hook message)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import reference_locations
from old_sessions import KIT_FIXTURES, as_version_2
from sidecar_support import SERVER_COMMAND, Sidecar, start_sidecar, stop_sidecar
from version_1_writers import pi_opens

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not reference_locations.session_manager_module().is_file(),
    reason="needs node and pi (PI_ORACLE_DIR)",
)

# the server with its size bound at 0: every read-only open reads its file lazily (the command's
# arguments are serve's)
LAZY_SERVER = [
    sys.executable,
    "-c",
    "import sys; from pi_session_server.session import loader; loader.KEEP_BYTES_LIMIT = 0; "
    "from pi_session_server.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))",
]


VERSION_1 = (KIT_FIXTURES / "real" / "whamp-pi-v1-linear.jsonl").read_bytes()
VERSION_2 = as_version_2((KIT_FIXTURES / "real" / "twkrash-0.85.1-branching.jsonl").read_bytes())
APPENDED_1 = {
    "type": "message",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "message": {"role": "user", "content": "appended by another program", "timestamp": 1},
}


def appended_2(data: bytes) -> dict[str, Any]:
    leaf = json.loads(data.splitlines()[-1])["id"]
    message = {"role": "hookMessage", "customType": "hook", "display": True, "content": "h", "timestamp": 1}
    return {
        "type": "message",
        "id": "f00d0001",
        "parentId": leaf,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }


def migrated_by_pi(path: Path, tmp_path: Path) -> Path:
    """A copy of ``path`` as pi's writable open leaves it (a new copy at each call: the server may
    hold the earlier ones)."""
    copy = tmp_path / f"pi-{len(list(tmp_path.glob('pi-*')))}-{path.name}"
    shutil.copy(path, copy)
    pi_opens(copy)
    return copy


async def answers(sidecar: Sidecar, address: dict[str, Any]) -> tuple[list[str], str]:
    """The ids of the session's entries, and the answers of the calls that read it (as JSON text)."""
    entries = (await sidecar.request("pi/getEntries", address))["entries"]
    ids = [e["id"] for e in entries]
    got: list[Any] = [entries]
    for method in ("pi/getHeader", "pi/getLeaf", "pi/getBranch", "pi/buildSessionContext", "pi/getStats"):
        got.append(await sidecar.request(method, address))
    got.append(await sidecar.request("pi/buildSessionContext", {**address, "format": "markdown"}))
    trees = [{"form": form, "filter": "all"} for form in ("nested", "flat")]
    trees.append({"form": "flat", "limit": 2, "offset": 1})
    trees += [{"form": "flat", "rootId": entry_id, "depth": 1} for entry_id in ids]
    for params in trees:  # (a revision names the file's state: the two files' differ)
        got.append({**await sidecar.request("pi/getTree", {**address, **params}), "revision": None})
    for entry_id in ids:
        got.append(await sidecar.request("pi/getEntry", {**address, "id": entry_id}))
        got.append(await sidecar.request("pi/getLabel", {**address, "id": entry_id}))
        got.append(await sidecar.request("pi/getPath", {**address, "id": entry_id}))
        got.append(await sidecar.request("pi/buildSessionContext", {**address, "leafId": entry_id}))
    return ids, json.dumps(got, sort_keys=True)


async def assert_answers_as_pis(
    sidecar: Sidecar, address: dict[str, Any], path: Path, tmp_path: Path
) -> None:
    reference = migrated_by_pi(path, tmp_path)
    ids, ours = await answers(sidecar, address)
    pis_ids, pis = await answers(sidecar, {"uri": reference.as_uri()})
    for drawn, pis_id in zip(ids, pis_ids, strict=True):  # (a version 2 file's ids are its own: the same)
        ours = ours.replace(json.dumps(drawn), json.dumps(pis_id))
    ours = ours.replace(str(path), str(reference)).replace(path.name, reference.name)
    assert ours == pis


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("command", [SERVER_COMMAND, LAZY_SERVER], ids=["held", "lazy"])
async def test_a_read_only_view_of_an_older_file_answers_as_the_file_pi_migrates_also_after_appends(
    tmp_path: Path, version: int, command: list[str]
) -> None:
    data = VERSION_1 if version == 1 else VERSION_2
    path = tmp_path / "old.jsonl"
    path.write_bytes(data)
    sidecar = await start_sidecar(tmp_path, command=command)
    try:
        address = {"uri": path.as_uri()}
        await assert_answers_as_pis(sidecar, address, path, tmp_path)
        line = json.dumps(APPENDED_1 if version == 1 else appended_2(data)).encode()
        with path.open("ab") as file:  # a partial line first, then its end
            file.write(line[:25])
            file.flush()
            await sidecar.request("pi/getEntries", address)
            file.write(line[25:] + b"\n")
        await sidecar.wait_for("pi/didChange", lambda p: p["uri"] == path.as_uri() and p["newEntryIds"])
        await assert_answers_as_pis(sidecar, address, path, tmp_path)
        # pi opens the file the view holds: it rewrites it as version 3, its ids now the file's
        told = list(sidecar.notifications["pi/didChange"])
        pi_opens(path)
        await sidecar.wait_for(
            "pi/didChange", lambda p: p["kind"] == "reloaded" and not any(p is q for q in told)
        )
        await assert_answers_as_pis(sidecar, address, path, tmp_path)
    finally:
        await stop_sidecar(sidecar)


@pytest.mark.parametrize("version", [1, 2])
async def test_a_writable_open_of_an_older_file_answers_as_the_file_pi_migrates(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(VERSION_1 if version == 1 else VERSION_2)
    pristine = tmp_path / "pristine.jsonl"
    shutil.copy(path, pristine)
    sidecar = await start_sidecar(tmp_path)
    try:
        opened = await sidecar.request("pi/open", {"path": str(path)})
        ids, ours = await answers(sidecar, {"session": opened["session"]})
        reference = migrated_by_pi(pristine, tmp_path)
        pis_ids, pis = await answers(sidecar, {"uri": reference.as_uri()})
        for drawn, pis_id in zip(ids, pis_ids, strict=True):
            ours = ours.replace(json.dumps(drawn), json.dumps(pis_id))
        assert ours.replace(str(path), str(reference)).replace(path.name, reference.name) == pis
    finally:
        await stop_sidecar(sidecar)
