"""Moving a huge image out of a session (PI040) writes only next to the session (issue 20, finding 4).

The image's file is named after the entry, and the entry's id comes from the file: a hostile file
(a session shared in a project, say) must not be able to name a place outside the session's
directory. Tried through the library's repair plan and through the real server (code action, then
the command that writes the image).
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

import builders as S
import pytest
from reliability_rpc import RawServer, file_uri

from pi_session_server.analysis import SessionDocument
from pi_session_server.analysis.repairs import image_plan, repairs

pytestmark = pytest.mark.timeout(120)

IMAGE = base64.b64encode(b"\x89PNG planted " * 80_000).decode()  # over the 1,000,000-char PI040 bound

HOSTILE_IDS = [
    "x/../../../outside/planted",
    "../../outside/planted",
    "/tmp/outside/planted",
    "..",
    ".",
    "a\\..\\..\\b",
    "nul\x00byte",
    "new\nline",
    "x" * 5000,
]


def hostile_session(directory: Path, entry_id: str, image: str = IMAGE) -> Path:
    path = directory / "s.jsonl"
    lines = [
        S.header(),
        S.user("u1", None, "look"),
        S.assistant("a1", "u1", "reading", calls=(("call1", "read", {"path": "x.png"}),)),
        S.tool_result(entry_id, "a1", "call1", images=((image, "image/png"),)),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("entry_id", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_the_image_file_name_is_a_plain_name_whatever_the_id(tmp_path: Path, entry_id: str):
    path = hostile_session(tmp_path, entry_id)
    doc = SessionDocument(path.read_bytes())
    found = [r for r in repairs(doc, 3, 3, str(path)) if r.image is not None]
    assert found, "no PI040 repair offered"
    plan = image_plan(doc, doc.lines[3], ("message", "content", 1), str(path))
    assert plan is not None
    name = plan.file_name
    assert "/" not in name and "\\" not in name and "\x00" not in name and "\n" not in name
    assert name not in (".", "..") and len(name.encode()) < 255
    session, entry_part, place_part, extension = name.split(".")  # the id and the place hold no "."
    assert (session, extension) == ("s", "png") and 0 < len(entry_part) <= 64 and 0 < len(place_part) <= 64
    target = os.path.normpath(os.path.join(tmp_path, name))
    assert os.path.dirname(target) == str(tmp_path)
    assert name in plan.edit.new_text  # the placeholder names the file that is written


def test_the_server_writes_a_hostile_sessions_image_only_next_to_it(tmp_path: Path, server: RawServer):
    sessions = tmp_path / "project" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "s.x").mkdir()  # shipped with the hostile file: the first step of its path
    (tmp_path / "outside").mkdir()
    path = hostile_session(sessions, "x/../../../outside/planted")
    command = _image_command(server, path)
    # the image is written first, then the edit goes to the client (which this one does not apply)
    command_id = server.send_request(
        "workspace/executeCommand", {"command": command["command"], "arguments": command["arguments"]}
    )
    deadline = time.monotonic() + 60
    written: list[Path] = []
    while not written and time.monotonic() < deadline:
        time.sleep(0.05)
        written = [p for p in tmp_path.rglob("*.png") if p.stat().st_size == len(base64.b64decode(IMAGE))]
    assert written, "no image was written"
    assert list((tmp_path / "outside").iterdir()) == [], (
        "the image was written outside the session's directory"
    )
    assert [p.parent for p in written] == [sessions]
    # this client answers workspace/applyEdit with a null result, which is no ApplyWorkspaceEditResult:
    # the command still ends (the edit counts as not applied) instead of waiting for a reply forever
    reply = server.wait_reply(command_id, timeout=60)
    assert reply.get("result", {}).get("applied") is False, reply
    assert reply["result"]["file"] == str(written[0])


def _actions_on_the_image(server: RawServer, path: Path) -> list[dict[str, Any]]:
    """Open the session and ask for the code actions on its image's line."""
    uri = file_uri(path)
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": path.read_text()}},
    )
    actions = server.call(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}},
            "context": {"diagnostics": []},
        },
        timeout=60,
    )
    return list(actions or [])


def _image_command(server: RawServer, path: Path) -> dict[str, Any]:
    actions = _actions_on_the_image(server, path)
    commands = [a["command"] for a in actions if a.get("command")]
    assert commands, f"no image command among the code actions: {actions}"
    return commands[0]


@pytest.mark.parametrize("case", ["dangling symlink", "long session name", "directory gone"])
def test_an_image_file_that_cannot_be_made_as_named_is_never_an_internal_error(
    tmp_path: Path, server: RawServer, case: str
):
    """The image's name taken by a dangling symlink: the next free name (the symlink is left
    alone). A session name so long that the image's name would pass the system's limit: the
    session's part is cut. Any other failure (here the directory is gone): `{applied: false,
    reason}` and a message to the user, never -32603."""
    directory = tmp_path / "sessions"
    directory.mkdir()
    path = hostile_session(directory, "e1")
    if case == "long session name":
        path = path.rename(directory / ("n" * 249 + ".jsonl"))
    command = _image_command(server, path)
    if case == "dangling symlink":
        (directory / "s.e1.1.png").symlink_to(tmp_path / "nowhere")
    elif case == "directory gone":
        path.unlink()
        directory.rmdir()
    reply = server.request(
        "workspace/executeCommand",
        {"command": command["command"], "arguments": command["arguments"]},
        timeout=60,
    )
    assert "result" in reply, reply
    result = reply["result"]
    assert result["applied"] is False  # (this client does not apply the edit)
    if case == "directory gone":
        assert "could not be written" in result["reason"] and "file" not in result, result
        shown = server.wait_notification(
            "window/showMessage", lambda p: "could not be written" in p["message"]
        )
        assert str(directory) in shown["message"]
        return
    written = Path(result["file"])
    assert written.parent == directory and written.read_bytes() == base64.b64decode(IMAGE)
    if case == "dangling symlink":
        assert written.name == "s.e1.1-2.png"
        assert os.readlink(directory / "s.e1.1.png") == str(tmp_path / "nowhere")
    else:
        assert len(written.name.encode()) <= 255 and written.name.endswith(".e1.1.png")


def test_image_data_that_is_not_one_strict_base64_string_stays_and_the_user_is_told(
    tmp_path: Path, server: RawServer
):
    """Two base64 strings one after the other (padding inside): a lenient decode writes half the
    image and the edit would remove the whole data. The action is not offered; the command, sent
    all the same (by a client that kept an older offer), writes and removes nothing, and the
    editor is told why."""
    half = base64.b64encode(b"\x89PNG half " * 40_001).decode()
    assert half.endswith("=")
    path = hostile_session(tmp_path, "e1", image=half + half)
    actions = _actions_on_the_image(server, path)
    assert [a for a in actions if a["title"].startswith("Move the image")] == [], actions
    arguments = [file_uri(path), 1, ["PI040", 3, "message", "content", 1]]
    reply = server.request(
        "workspace/executeCommand", {"command": "pi.session.extractImage", "arguments": arguments}, timeout=60
    )
    assert reply["result"]["applied"] is False and "not valid base64" in reply["result"]["reason"], reply
    server.wait_notification("window/showMessage", lambda p: "not valid base64" in p["message"])
    assert list(tmp_path.glob("*.png")) == []
