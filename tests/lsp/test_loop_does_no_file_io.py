"""The event loop never touches the session files: every open, listing, rename, link or removal of a
file under the test's directory happens on a worker, never on the loop's thread.

The real server process runs with an audit hook (``sys.addaudithook``, installed by a
``sitecustomize`` on its ``PYTHONPATH``) that records each such file operation made on the main
thread while its asyncio loop runs. The test drives what reads or writes files: documents opened,
saved and repaired on disk (a byte order mark), a document read from disk, an image moved out of a
session, sessions opened, listed, shown as a tree and deleted. (``stat`` raises no audit event;
the loop's stats are covered by ``tests/reliability/test_loop_never_blocks.py``.)
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import builders as S
import pytest

from pi_session_server.server.stdio_client import SidecarClient

ROOT = Path(__file__).resolve().parents[2]

HOOK = """
import asyncio, os, sys, threading

_watched = os.environ["PI_TEST_WATCHED_DIR"]
_report = os.open(os.environ["PI_TEST_LOOP_IO_REPORT"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
_EVENTS = {"open", "os.listdir", "os.scandir", "os.rename", "os.remove", "os.link", "os.mkdir",
           "os.rmdir", "os.truncate", "os.chmod", "os.symlink", "shutil.copyfile", "shutil.move"}


def _on_the_loop():
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return asyncio._get_running_loop() is not None
    except Exception:
        return False


def _hook(event, args):
    if event not in _EVENTS or not args or not _on_the_loop():
        return
    path = args[0]
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, str) and path.startswith(_watched):
        os.write(_report, f"{event} {path}\\n".encode("utf-8", "replace"))


sys.addaudithook(_hook)
"""


class EditorClient(SidecarClient):
    """The standard-library client, answering ``workspace/applyEdit`` as an editor does."""

    def _dispatch(self, message: Any) -> None:
        if isinstance(message, dict) and message.get("method") == "workspace/applyEdit" and "id" in message:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"applied": True}})
            return
        super()._dispatch(message)


def notifications(client: SidecarClient, method: str, uri: str, timeout: float = 20) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for m, p in list(client.notifications) if m == method and p.get("uri") == uri]
        if found:
            return found
        time.sleep(0.02)
    raise TimeoutError(f"no {method} for {uri}")


@pytest.mark.slow
def test_the_loop_opens_lists_renames_and_removes_no_file(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    work = tmp_path / "work"
    (work / "home").mkdir(parents=True)
    report = tmp_path / "loop-io.txt"
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(hooks), str(ROOT), env.get("PYTHONPATH", "")]),
        PI_TEST_WATCHED_DIR=str(work),
        PI_TEST_LOOP_IO_REPORT=str(report),
        HOME=str(work / "home"),
        PI_CODING_AGENT_DIR=str(work / "agent"),
        XDG_DATA_HOME=str(work / "home" / ".local" / "share"),
        PI_SESSION_INDEX_DIR=str(work / "index"),
    )
    sessions = work / "sessions"
    sessions.mkdir()
    text = "\n".join([S.header(), S.user("a", None, "first"), S.assistant("b", "a")]) + "\n"
    bom = sessions / "2026-11-30T09-13-48-180Z_bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    image = base64.b64encode(os.urandom(900_000)).decode()
    pictured_text = (
        "\n".join(
            [
                S.header(),
                S.user("a", None),
                S.assistant("b", "a", calls=(("t1", "read", {}),)),
                S.tool_result("c", "b", "t1", "a screenshot", images=((image, "image/png"),)),
            ]
        )
        + "\n"
    )
    pictured = sessions / "2026-11-30T09-13-48-180Z_img.jsonl"
    pictured.write_text(pictured_text, encoding="utf-8")
    unsent = sessions / "2026-11-30T09-13-48-180Z_unsent.jsonl"
    unsent.write_text(text, encoding="utf-8")
    doomed = sessions / "2026-11-30T09-13-48-180Z_doomed.jsonl"
    doomed.write_text(text, encoding="utf-8")

    command = [sys.executable, "-m", "pi_session_server", "serve"]
    with EditorClient(command, env=env, cwd=str(work)) as client:
        client.initialize({"textDocument": {"diagnostic": None}, "window": {"workDoneProgress": False}})
        client.notify("initialized", {})
        for path, content in ((bom, text), (pictured, pictured_text)):
            client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": path.as_uri(),
                        "languageId": "pi-session",
                        "version": 1,
                        "text": content,
                    }
                },
            )
            notifications(client, "textDocument/publishDiagnostics", path.as_uri())
        where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        (fix_all,) = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": bom.as_uri()},
                "range": where,
                "context": {"diagnostics": [], "only": ["source.fixAll"], "triggerKind": 1},
            },
        )
        done = client.request("workspace/executeCommand", fix_all["command"])
        assert done["applied"] is True and not bom.read_bytes().startswith(b"\xef\xbb\xbf")
        client.notify("textDocument/didSave", {"textDocument": {"uri": bom.as_uri()}})
        on_image = {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}
        actions = client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": pictured.as_uri()}, "range": on_image, "context": {"diagnostics": []}},
        )
        (move,) = [a for a in actions if a["title"].startswith("Move the image")]
        moved = client.request("workspace/executeCommand", move["command"])
        assert moved["applied"] is True
        assert len(list(sessions.glob("*.png"))) == 1
        hover = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": unsent.as_uri()}, "position": {"line": 1, "character": 5}},
        )
        assert hover is not None
        opened = client.request("pi/open", {"path": str(unsent)})
        client.request(
            "pi/append", {"session": opened["session"], "kind": "label", "targetId": "a", "label": "x"}
        )
        client.request("pi/getTree", {"uri": doomed.as_uri(), "filter": "default"})
        client.request("pi/list", {"cwd": str(work), "sessionDir": str(sessions), "limit": 2})
        client.request("pi/listAll", {"sessionDir": str(sessions)})
        client.request("pi/delete", {"path": str(doomed), "permanent": True})
        assert not doomed.exists()
        client.request("shutdown")
    found = report.read_text(encoding="utf-8").splitlines() if report.exists() else []
    assert found == [], "file operations on the event loop:\n" + json.dumps(found, indent=1)
