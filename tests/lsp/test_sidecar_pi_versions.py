"""The pi release the server follows, end to end: chosen once (``serve --pi``,
``initializationOptions.piVersion``) or per opening request (``pi``), and pi 1.6.0's calls on the wire
(pi/appendContextEdit, ``context_edit`` in pi/append, pi/getEntryCount, pi/buildSessionProjection),
with their refusals as documented errors (replies checked against protocol/)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import builders as S
import pytest
from lsprotocol import types
from sidecar_support import expect_error, sidecar_fixture, start_sidecar, stop_sidecar  # noqa: F401

PI_VERSION = -32013
CONTEXT_EDIT_REFUSED = -32014
ENTRY_NOT_FOUND = -32002
INVALID_PARAMS = -32602

# a 1.6.0 session: the assistant's answer "b" is omitted from the context by the edit "c"
EDITED = [
    S.header(),
    S.user("a", None, "question"),
    S.assistant("b", "a", "a wrong answer"),
    S.context_edit("c", "b", "b"),
    S.user("d", "c", "again"),
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def roles(context: dict[str, Any]) -> list[str]:
    return [m["role"] for m in context["messages"]]


async def test_the_server_follows_1_6_0_by_default_and_a_request_may_ask_for_0_86_1(sidecar, tmp_path):
    path = write(tmp_path / "edited.jsonl", EDITED)
    by_uri = await sidecar.request("pi/getInfo", {"uri": path.as_uri()})
    assert by_uri["piVersion"] == "1.6.0"
    assert roles(await sidecar.request("pi/buildSessionContext", {"uri": path.as_uri()})) == ["user", "user"]
    old = await sidecar.request("pi/open", {"path": str(path), "pi": "0.86.1"})
    assert old["piVersion"] == "0.86.1"
    # 0.86.1 knows no context edits: the answer stays in its context
    context = await sidecar.request("pi/buildSessionContext", {"session": old["session"]})
    assert roles(context) == ["user", "assistant", "user"]
    with expect_error(PI_VERSION) as refused:
        await sidecar.request(
            "pi/appendContextEdit", {"session": old["session"], "targetId": "a", "replacement": None}
        )
    assert refused.value.data["supported"] == ["0.86.1", "1.6.0"]
    assert "appendContextEdit is not part of pi 0.86.1" in refused.value.message
    with expect_error(PI_VERSION):
        await sidecar.request(
            "pi/append",
            {"session": old["session"], "kind": "context_edit", "targetId": "a", "replacement": None},
        )
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["id"] == "d"  # nothing written
    for method, params in (
        ("pi/open", {"path": str(path)}),
        ("pi/inMemory", {}),
        ("pi/create", {"cwd": str(tmp_path)}),
        ("pi/list", {"cwd": str(tmp_path)}),
        ("pi/findById", {"cwd": str(tmp_path), "id": "x"}),
    ):
        with expect_error(INVALID_PARAMS) as unknown:
            await sidecar.request(method, {**params, "pi": "0.9"})
        assert "unknown pi version '0.9': supported versions are 0.86.1, 1.6.0" in unknown.value.message
    made = await sidecar.request("pi/inMemory", {"pi": "0.86.1"})
    assert made["piVersion"] == "0.86.1"


async def test_append_context_edit_and_its_refusals(sidecar, tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        [
            S.header(),
            S.user("a", None, "question"),
            S.assistant("b", "a", "answer"),
            S.model_change("m", "b"),
            S.user("x", "a", "another branch"),
            S.user("x", "a", "the same id again"),  # getEntryCount counts ids, entryCount entries
        ],
    )
    opened = await sidecar.request("pi/open", {"path": str(path)})
    session = opened["session"]
    await sidecar.request("pi/branch", {"session": session, "entryId": "m"})
    with expect_error(CONTEXT_EDIT_REFUSED) as bad:
        await sidecar.request(
            "pi/appendContextEdit", {"session": session, "targetId": "b", "replacement": {"content": 5}}
        )
    assert bad.value.message == "Context edit replacement must be null or contain string/array content"
    with expect_error(CONTEXT_EDIT_REFUSED):  # no replacement at all is undefined: refused the same way
        await sidecar.request("pi/appendContextEdit", {"session": session, "targetId": "b"})
    with expect_error(ENTRY_NOT_FOUND) as missing:
        await sidecar.request(
            "pi/appendContextEdit", {"session": session, "targetId": "nope", "replacement": None}
        )
    assert missing.value.message == "Entry nope not found"
    with expect_error(CONTEXT_EDIT_REFUSED) as off:
        await sidecar.request(
            "pi/appendContextEdit", {"session": session, "targetId": "x", "replacement": None}
        )
    assert off.value.message == "Entry x is not on the active branch"
    with expect_error(CONTEXT_EDIT_REFUSED) as inert:
        await sidecar.request(
            "pi/appendContextEdit", {"session": session, "targetId": "m", "replacement": None}
        )
    assert inert.value.message == "Entry m does not contribute editable model content"
    assert len(path.read_text(encoding="utf-8").splitlines()) == 6  # every refusal wrote nothing

    replaced = await sidecar.request(
        "pi/appendContextEdit", {"session": session, "targetId": "b", "replacement": {"content": "shorter"}}
    )
    assert replaced["leafId"] == replaced["id"]
    written = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert written["type"] == "context_edit" and written["targetId"] == "b"
    assert written["replacement"] == {"content": [{"type": "text", "text": "shorter"}]}  # a block, as pi does
    omitted = await sidecar.request(
        "pi/append", {"session": session, "kind": "context_edit", "targetId": "a", "replacement": None}
    )
    assert omitted["leafId"] == omitted["id"]

    projection = await sidecar.request("pi/buildSessionProjection", {"session": session})
    by_id = {item["sourceEntry"]["id"]: item["messages"] for item in projection["entries"]}
    assert by_id["a"] == []  # omitted
    assert by_id["b"][0]["content"] == [{"type": "text", "text": "shorter"}]
    assert [m["role"] for m in projection["messages"]] == ["assistant"]
    assert projection["model"] == {"provider": "anthropic", "modelId": "m"}
    at_b = await sidecar.request("pi/buildSessionProjection", {"session": session, "leafId": "b"})
    assert [item["sourceEntry"]["id"] for item in at_b["entries"]] == ["a", "b"]
    assert await sidecar.request("pi/getEntryCount", {"session": session}) == 6
    info = await sidecar.request("pi/getInfo", {"session": session})
    assert info["entryCount"] == 7


async def test_the_tree_shows_context_edits_as_pi_1_6_0s_selector_does(sidecar, tmp_path):
    path = write(tmp_path / "edited.jsonl", EDITED)
    uri = path.as_uri()
    default = await sidecar.request("pi/getTree", {"uri": uri, "filter": "default"})
    assert [n["id"] for n in default["nodes"]] == ["a", "b", "d"]
    everything = await sidecar.request("pi/getTree", {"uri": uri, "filter": "all"})
    edit = next(n for n in everything["nodes"] if n["id"] == "c")
    assert edit["preview"] == "[context omit: b]"


async def test_under_0_86_1_the_tree_says_a_context_edit_is_ignored_as_the_outline_does(sidecar, tmp_path):
    # it showed pi 1.6.0's "[context omit: b]", an edit pi 0.86.1 does not make
    path = write(tmp_path / "edited.jsonl", EDITED)
    old = await sidecar.request("pi/open", {"path": str(path), "pi": "0.86.1"})
    everything = await sidecar.request("pi/getTree", {"session": old["session"], "filter": "all"})
    edit = next(n for n in everything["nodes"] if n["id"] == "c")
    assert edit["preview"] == "[context_edit]: pi 0.86.1 ignores context edits"
    nested = json.dumps(await sidecar.request("pi/getTree", {"session": old["session"], "form": "nested"}))
    assert "[context_edit]: pi 0.86.1 ignores context edits" in nested and "context omit" not in nested


async def test_serve_pi_and_initialization_options_choose_the_release(tmp_path):
    path = write(tmp_path / "edited.jsonl", EDITED)
    side = await start_sidecar(tmp_path, "--pi", "0.86.1")
    try:
        info = await side.request("pi/getInfo", {"uri": path.as_uri()})
        assert info["piVersion"] == "0.86.1"
        made = await side.request("pi/inMemory", {})
        assert made["piVersion"] == "0.86.1"
        with expect_error(PI_VERSION):
            await side.request(
                "pi/appendContextEdit", {"session": made["session"], "targetId": "x", "replacement": None}
            )
    finally:
        await stop_sidecar(side)


async def start_with_options(tmp_path: Path, options: Any) -> Any:
    """A sidecar whose initialize carries ``initializationOptions``."""
    from sidecar_support import SERVER_COMMAND, Sidecar, make_client, server_env

    client = make_client()
    side = Sidecar(client, tmp_path)
    await client.start_io(*SERVER_COMMAND, env=server_env(tmp_path), cwd=str(tmp_path))
    await client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options=options)
    )
    return side


async def test_initialization_options_pi_version_reaches_sessions_and_documents(tmp_path):
    path = write(tmp_path / "edited.jsonl", EDITED)
    side = await start_with_options(tmp_path, {"piVersion": "0.86.1"})
    try:
        assert (await side.request("pi/getInfo", {"uri": path.as_uri()}))["piVersion"] == "0.86.1"
        # the documents the editor opens are read as pi 0.86.1 reads them: it does not know edits
        side.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(path.as_uri(), "pi-session", 1, path.read_text(encoding="utf-8"))
            )
        )
        for _ in range(500):
            if path.as_uri() in side.client.diagnostics:
                break
            await asyncio.sleep(0.02)
        codes = [(d.range.start.line, d.code) for d in side.client.diagnostics[path.as_uri()]]
        assert codes == [(3, "PI020")]
    finally:
        await stop_sidecar(side)


@pytest.mark.slow
async def test_an_unknown_pi_version_in_initialization_options_is_said_and_the_default_stays(tmp_path):
    path = write(tmp_path / "edited.jsonl", EDITED)
    side = await start_with_options(tmp_path, {"piVersion": "2.0.0", "watchInterval": 0.5})
    try:
        for _ in range(100):
            if side.client.messages:
                break
            await asyncio.sleep(0.02)
        (shown,) = side.client.messages
        shown = shown if isinstance(shown, dict) else {"type": shown.type, "message": shown.message}
        assert shown["type"] == types.MessageType.Warning.value
        assert "unknown pi version '2.0.0'" in shown["message"] and "follows pi 1.6.0" in shown["message"]
        assert (await side.request("pi/getInfo", {"uri": path.as_uri()}))["piVersion"] == "1.6.0"
    finally:
        await stop_sidecar(side)


@pytest.mark.slow
@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_demo_follows_pi(pi: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    path = write(tmp_path / "edited.jsonl", EDITED)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pi_session_server",
            "demo",
            str(path),
            "--pi",
            pi,
            "--ascii",
            "--width",
            "100",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    context = done.stdout.split("Context at", 1)[1]
    assert ("a wrong answer" in context) == (pi == "0.86.1")
