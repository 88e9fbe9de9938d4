"""pi/delete (trash by default) and work-done progress for long operations."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from pathlib import Path

import pytest
from builders import assistant_message, generate_session
from lsprotocol import types
from sidecar_support import EXAMPLE, expect_error, sidecar_fixture  # noqa: F401  (fixture)

from pi_session_server.server.errors import SESSION_ERROR


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


async def test_a_delete_waits_for_the_requests_sent_before_it_on_the_sessions_it_closes(sidecar, tmp_path):
    """An append sent before the delete, queued behind a slow read of the same session, is written
    before the file goes: it cannot come back after the delete as a line without a header."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(generate_session(20_000_000, seed=4))
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    message = {"role": "user", "content": "sent before the delete", "timestamp": 1}
    slow = asyncio.ensure_future(sidecar.request("pi/getBranch", {"session": session}))
    append = asyncio.ensure_future(
        sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    )
    delete = asyncio.ensure_future(sidecar.request("pi/delete", {"path": str(path), "permanent": True}))
    appended, deleted = await append, await delete
    assert appended["id"] and deleted == {"path": str(path), "trashed": False, "closedSessions": [session]}
    assert not path.exists()
    await asyncio.wait([slow])


@pytest.mark.parametrize("address", ["session", "uri"])
async def test_requests_sent_after_a_delete_find_the_session_closed_and_write_nothing(
    sidecar, tmp_path, address
):
    """Sent right behind the delete, without waiting for its reply (the delete waits for a slow
    read sent before it): the append must not write to the file the delete removes (and be told it
    succeeded), nor bring it back."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(generate_session(5_000_000, seed=5))
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    target = {"session": session} if address == "session" else {"uri": path.as_uri()}
    message = {"role": "user", "content": "sent after the delete", "timestamp": 1}
    slow = asyncio.ensure_future(sidecar.request("pi/getBranch", {"session": session}))
    delete = asyncio.ensure_future(sidecar.request("pi/delete", {"path": str(path), "permanent": True}))
    append = asyncio.ensure_future(
        sidecar.request("pi/append", {**target, "kind": "message", "message": message})
    )
    read = asyncio.ensure_future(sidecar.request("pi/getEntryCount", target))
    assert await delete == {"path": str(path), "trashed": False, "closedSessions": [session]}
    for after in (append, read):
        with expect_error(-32001):
            await after
    assert not path.exists()
    await asyncio.wait([slow])
    # once the delete answered, a read of the file's uri finds it gone
    with expect_error(-32005):
        await sidecar.request("pi/getEntryCount", {"uri": path.as_uri()})
    assert not path.exists()


async def test_an_open_sent_after_a_delete_opens_the_file_the_delete_left(sidecar, tmp_path):
    """pi/open of the path sent right behind a pi/delete of it (the delete waits for a slow read
    sent before it): the open comes after the delete, as pi's open of a missing path, not before
    it, on the file about to go (the session's next write then landed in a new file without its
    header, as the continuation of entries no file held)."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(generate_session(5_000_000, seed=5))
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    slow = asyncio.ensure_future(sidecar.request("pi/getBranch", {"session": session}))
    delete = asyncio.ensure_future(sidecar.request("pi/delete", {"path": str(path), "permanent": True}))
    opened = asyncio.ensure_future(sidecar.request("pi/open", {"path": str(path)}))
    assert (await delete)["closedSessions"] == [session]
    again = (await opened)["session"]
    assert again != session
    assert await sidecar.request("pi/getEntryCount", {"session": again}) == 0
    message = {"role": "user", "content": "after the delete", "timestamp": 1}
    await sidecar.request("pi/append", {"session": again, "kind": "message", "message": message})
    assistant = assistant_message("hi", 2)
    await sidecar.request("pi/append", {"session": again, "kind": "message", "message": assistant})
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "session"
    assert [line["message"]["role"] for line in lines[1:]] == ["user", "assistant"]
    await asyncio.wait([slow])


async def test_a_delete_of_a_home_path_without_home_is_resolved_off_the_loop(sidecar, tmp_path):
    """`~/...` with `$HOME` not set names the user's password entry's home: read on a worker, and
    the delete answers as for any other path (here: no such file there)."""
    name = f"no-such-session-{tmp_path.name}.jsonl"
    with expect_error(-32005) as failure:
        await sidecar.request("pi/delete", {"path": f"~/{name}", "environment": {"home": None}})
    home = pwd.getpwuid(os.getuid()).pw_dir
    assert failure.value.data["path"] == os.path.join(home, name)


async def test_a_refused_delete_closes_no_session(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    path.write_text('{"type":"note"}\n')  # another program put other text there
    with expect_error(-32010):
        await sidecar.request("pi/delete", {"path": str(path)})
    assert (await sidecar.request("pi/getInfo", {"session": session}))["session"] == session
    assert path.exists()


async def test_a_session_file_whose_name_is_not_utf8_is_held_and_named(sidecar, tmp_path):
    """continueRecent picks the newest file, whatever its name's bytes: the reply names it (its URI
    percent-encodes the bytes), and pi/sessions lists it."""
    directory = tmp_path / "odd"
    directory.mkdir()
    odd = os.fsencode(directory) + b"/\xff\xfe-odd.jsonl"
    with open(odd, "wb") as f:
        f.write(EXAMPLE.read_bytes())
    cwd = json.loads(EXAMPLE.read_text().splitlines()[0])["cwd"]
    held = await sidecar.request("pi/continueRecent", {"cwd": cwd, "sessionDir": str(directory)})
    assert held["uri"] == directory.as_uri() + "/%FF%FE-odd.jsonl"
    assert held["sessionFile"] == os.fsdecode(odd)
    listed = await sidecar.request("pi/sessions", {})
    assert [info["session"] for info in listed] == [held["session"]]


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


CWD = "/home/dev/projects/weather-cli"  # the example session's


async def test_listing_text_options_and_pages(sidecar, tmp_path):
    directory = tmp_path / "many"
    directory.mkdir()
    asked = "The test suite fails on test_parse_forecast"
    for i in range(7):  # each with its own first question, so the pages' texts can be told apart
        text = EXAMPLE.read_text().replace(asked, f"{asked} ({'again ' * i}{i})")
        (directory / f"s{i:02}.jsonl").write_text(text)
    whole = await sidecar.request("pi/listAll", {"sessionDir": str(directory)})
    assert len({s["firstMessage"] for s in whole}) == 7
    assert len(whole) == 7 and all("textTruncated" not in s for s in whole)  # the reference's shape
    cut = await sidecar.request("pi/listAll", {"sessionDir": str(directory), "maxTextChars": 20})
    assert [s["allMessagesText"] for s in cut] == [s["allMessagesText"][:20] for s in whole]
    assert [s["firstMessage"] for s in cut] == [s["firstMessage"][:20] for s in whole]
    assert all(s["textTruncated"] for s in cut)
    first = await sidecar.request("pi/list", {"cwd": CWD, "sessionDir": str(directory), "text": "first"})
    assert [s["firstMessage"] for s in first] == [s["firstMessage"] for s in whole]
    assert all("allMessagesText" not in s for s in first)
    none = await sidecar.request("pi/listAll", {"sessionDir": str(directory), "text": "none"})
    strip = ("firstMessage", "allMessagesText")
    assert none == [{k: v for k, v in s.items() if k not in strip} for s in whole]

    for method, params, expected in (
        ("pi/listAll", {}, whole),
        ("pi/list", {"cwd": CWD}, whole),
        ("pi/listAll", {"maxTextChars": 20}, cut),
        ("pi/listAll", {"text": "first"}, first),
    ):
        sessions, offset = [], 0
        while True:
            page = await sidecar.request(
                method, {**params, "sessionDir": str(directory), "offset": offset, "limit": 3}
            )
            assert page["total"] == 7 and len(page["sessions"]) <= 3
            sessions.extend(page["sessions"])
            if not page["hasMore"]:
                assert "nextOffset" not in page
                break
            offset = page["nextOffset"]
        assert sessions == expected  # the page's text is read after the order: the same text
    beyond = await sidecar.request("pi/listAll", {"sessionDir": str(directory), "offset": 50})
    assert beyond == {"sessions": [], "total": 7, "hasMore": False}
    for bad in ({"text": "some"}, {"maxTextChars": -1}, {"limit": 0}, {"offset": -2}):
        with expect_error(-32602):
            await sidecar.request("pi/listAll", {"sessionDir": str(directory), **bad})


async def test_a_nul_byte_in_a_path_is_nodes_type_error(sidecar, tmp_path):
    directory = str(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for method, params in [
        ("pi/open", {"path": directory + "/a\x00.jsonl"}),
        ("pi/create", {"cwd": directory, "sessionDir": directory + "/\x00"}),
        ("pi/continueRecent", {"cwd": directory, "sessionDir": directory + "/\x00"}),
        ("pi/listAll", {"sessionDir": directory + "/\x00"}),
        ("pi/forkFrom", {"sourcePath": directory + "/\x00", "targetCwd": directory}),
        ("pi/delete", {"path": directory + "/\x00"}),
    ]:
        with expect_error(-32008) as failure:
            await sidecar.request(method, params)
        assert failure.value.data == {"name": "TypeError", "code": "ERR_INVALID_ARG_VALUE"}, method
        assert failure.value.message.startswith("The argument 'path' must be a string, Uint8Array, or URL")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


async def test_a_listing_with_cli_session_dir_looks_where_pis_settings_say(sidecar, tmp_path):
    project, custom = tmp_path / "project", tmp_path / "custom"
    (project / ".pi").mkdir(parents=True)
    custom.mkdir()
    (custom / "s.jsonl").write_text(EXAMPLE.read_text().replace(CWD, str(project)))
    (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": str(custom)}))
    environment = {"cwd": str(project), "agentDir": str(tmp_path / "agent")}
    for method, params in (("pi/list", {"cwd": str(project)}), ("pi/listAll", {})):
        asked = {**params, "environment": environment, "text": "none"}
        assert await sidecar.request(method, asked) == []  # SessionManager's default directory
        listed = await sidecar.request(method, {**asked, "cliSessionDir": True})
        assert [s["path"] for s in listed] == [str(custom / "s.jsonl")]
        # a sessionDir given is the one listed
        assert (
            await sidecar.request(method, {**asked, "cliSessionDir": True, "sessionDir": str(tmp_path)}) == []
        )


def _pi_settings_session(tmp_path: Path, setting: object) -> tuple[Path, dict[str, str], str]:
    """A project whose pi settings say ``sessionDir: setting``, the example session (of the
    project) in ``tmp_path/custom``, the request's environment, and the session's id."""
    project, custom = tmp_path / "project", tmp_path / "custom"
    (project / ".pi").mkdir(parents=True)
    custom.mkdir()
    (custom / "s.jsonl").write_text(EXAMPLE.read_text().replace(CWD, str(project)))
    (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": setting}))
    environment = {"cwd": str(project), "agentDir": str(tmp_path / "agent")}
    return project, environment, json.loads(EXAMPLE.read_text().splitlines()[0])["id"]


async def test_find_continue_and_create_with_cli_session_dir_use_pis_directory(sidecar, tmp_path):
    project, environment, session_id = _pi_settings_session(tmp_path, str(tmp_path / "custom"))
    mine = str(tmp_path / "custom" / "s.jsonl")
    asked = {"cwd": str(project), "environment": environment}
    found = {**asked, "id": session_id}
    assert await sidecar.request("pi/findById", found) is None  # SessionManager's default directory
    assert await sidecar.request("pi/findById", {**found, "cliSessionDir": True}) == mine
    recent = await sidecar.request("pi/continueRecent", {**asked, "cliSessionDir": True})
    assert recent["sessionFile"] == mine
    created = await sidecar.request("pi/create", {**asked, "cliSessionDir": True})
    assert created["sessionDir"] == str(tmp_path / "custom")
    # without it: SessionManager's default, a new session in the agent directory's sessions
    recent = await sidecar.request("pi/continueRecent", asked)
    assert recent["sessionDir"].startswith(str(tmp_path / "agent" / "sessions"))


async def test_open_and_fork_with_cli_session_dir_keep_new_sessions_in_pis_directory(sidecar, tmp_path):
    """As `pi --session FILE` (its /new and forks go to the chosen directory) and `pi --fork`."""
    project, environment, _ = _pi_settings_session(tmp_path, str(tmp_path / "custom"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = elsewhere / "t.jsonl"
    theirs.write_text(EXAMPLE.read_text().replace(CWD, str(project)))
    asked = {"path": str(theirs), "environment": environment}
    opened = await sidecar.request("pi/open", {**asked, "cliSessionDir": True})
    assert opened["sessionDir"] == str(tmp_path / "custom")
    assert (await sidecar.request("pi/open", asked))["sessionDir"] == str(elsewhere)  # the file's own
    fork = {"sourcePath": str(theirs), "targetCwd": str(project), "environment": environment}
    forked = await sidecar.request("pi/forkFrom", {**fork, "cliSessionDir": True})
    assert Path(forked["sessionFile"]).parent == tmp_path / "custom"
    forked = await sidecar.request("pi/forkFrom", fork)  # SessionManager's default for the project
    assert Path(forked["sessionFile"]).parent.parent == tmp_path / "agent" / "sessions"


@pytest.mark.parametrize(
    ("setting", "nodes_words", "name", "code"),
    [
        (
            "file://host/custom",
            'File URL host must be "localhost" or empty on linux',
            "TypeError",
            "ERR_INVALID_FILE_URL_HOST",
        ),
        (
            "file:///custom%2fx",
            "File URL path must not include encoded / characters",
            "TypeError",
            "ERR_INVALID_FILE_URL_PATH",
        ),
        ("file:///%zz", "URI malformed", "URIError", None),
        (5, "must be a path (a string), not a number", "TypeError", None),
    ],
)
async def test_a_session_dir_setting_that_stops_pi_is_an_error_naming_the_settings_file(
    sidecar, tmp_path, setting, nodes_words, name, code
):
    """pi stops at its start on it, whatever it was asked: it was taken as not set (the default
    directory listed, a session made there)."""
    project, environment, session_id = _pi_settings_session(tmp_path, setting)
    default = tmp_path / "agent" / "sessions" / f"--{str(project)[1:].replace('/', '-')}--"
    default.mkdir(parents=True)
    (default / "d.jsonl").write_text(EXAMPLE.read_text().replace(CWD, str(project)))
    asked = {"cwd": str(project), "environment": environment, "cliSessionDir": True}
    for method, params in [
        ("pi/list", {**asked, "text": "none"}),
        ("pi/findById", {**asked, "id": session_id}),
        ("pi/continueRecent", asked),
        ("pi/create", asked),
    ]:
        with expect_error(SESSION_ERROR) as refused:
            await sidecar.request(method, params)
        assert refused.value.message == f"{project / '.pi' / 'settings.json'}: sessionDir: {nodes_words}", (
            method
        )
        assert refused.value.data.get("name") == name and refused.value.data.get("code") == code, method
    assert sorted(p.name for p in default.iterdir()) == ["d.jsonl"]  # nothing made


@pytest.mark.parametrize("setting", ["{}/custom\x00", "file://{}/custom%00"])
async def test_a_session_dir_setting_with_a_nul_byte_holds_no_session(sidecar, tmp_path, setting):
    project, environment, session_id = _pi_settings_session(tmp_path, setting.format(tmp_path))
    asked = {"cwd": str(project), "environment": environment, "cliSessionDir": True}
    # pi's listings and findById find nothing in it
    assert await sidecar.request("pi/list", {**asked, "text": "none"}) == []
    assert await sidecar.request("pi/listAll", {"environment": environment, "cliSessionDir": True}) == []
    assert await sidecar.request("pi/findById", {**asked, "id": session_id}) is None
    # pi stops at its mkdir: the default directory instead
    for method in ("pi/continueRecent", "pi/create"):
        info = await sidecar.request(method, asked)
        assert info["sessionDir"].startswith(str(tmp_path / "agent" / "sessions")), method
    opened = await sidecar.request("pi/open", {**asked, "path": str(tmp_path / "custom" / "s.jsonl")})
    assert opened["sessionDir"] == str(tmp_path / "custom")  # the file's own, SessionManager's default
