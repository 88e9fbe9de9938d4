"""Hostile requests against the real server process (``python -m pi_session_server``).

Malformed framing and JSON, wrong JSON-RPC versions, odd request ids, unknown methods, handles and
ids, wrong types in every param of every method listed in ``protocol/``, huge params, requests
after ``shutdown``, ``$/cancelRequest`` midway and a client that disappears. The server answers
with proper JSON-RPC errors, stays up, and every session file stays byte-identical.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from reliability_helpers import ASSISTANT, HEADER, USER, check_session_file, new_session_file, sha256_tree
from reliability_rpc import REPO_ROOT, RawServer, file_uri, frame

from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(300)

PROTOCOL = json.loads((REPO_ROOT / "protocol" / "pi-session.openrpc.json").read_text())
METHODS = {m["name"]: m for m in PROTOCOL["methods"]}
COMPONENTS = {"schemas": PROTOCOL["components"]["schemas"]}

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
REQUEST_CANCELLED = -32800


@dataclass
class World:
    """A session directory the server works on, and what must never change in it."""

    root: Path
    sessions: Path  # holds the session file, a decoy session and a file that is not a session
    session_file: str
    decoy_session: str
    not_a_session: str
    cwd: str

    def fingerprint(self) -> dict[str, str]:
        return sha256_tree(self.sessions)


def make_world(root: Path) -> World:
    sessions = root / "sessions"
    session_file = new_session_file(sessions, cwd=str(root))
    decoy = new_session_file(sessions / "decoy", cwd=str(root))
    not_a_session = sessions / "notes.jsonl"
    not_a_session.write_bytes(b'{"hello": "world"}\nnot json\n')
    (root / "work").mkdir()
    return World(root, sessions, session_file, decoy, str(not_a_session), str(root / "work"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("hostile-requests"))


@pytest.fixture(scope="module")
def shared_server(world: World) -> Iterator[RawServer]:
    """One server for the checks that must not kill it (restarted by `live` if a test did)."""
    server = RawServer(world.root)
    server.initialize()
    holder = {"server": server}
    yield holder  # type: ignore[misc]
    holder["server"].close()


@pytest.fixture
def live(shared_server: Any, world: World) -> Iterator[RawServer]:
    server = shared_server["server"]
    if not server.alive():
        server.close()
        server = shared_server["server"] = RawServer(world.root)
        server.initialize()
    before = world.fingerprint()
    yield server
    assert server.alive(), f"the server died:\n{server.stderr_text()[-3000:]}"
    assert server.garbage == []
    assert world.fingerprint() == before, "a session file (or another file) changed"


def _error_code(reply: dict[str, Any]) -> int | None:
    error = reply.get("error")
    return error.get("code") if isinstance(error, dict) else None


def _still_serving(server: RawServer) -> None:
    assert server.call("pi/sessions", {}, timeout=20) is not None


# -- framing and envelopes ------------------------------------------------------------------------

BAD_BODIES = [
    (b"{bad json", PARSE_ERROR),
    (b"", PARSE_ERROR),
    (b"\xff\xfe\x00", PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"pi/sessions"', PARSE_ERROR),
    (b"[" * 100_000, PARSE_ERROR),
    (b"[]", INVALID_REQUEST),
    (b'[{"jsonrpc":"2.0","id":1,"method":"pi/sessions"}]', INVALID_REQUEST),
    (b"5", INVALID_REQUEST),
    (b"null", INVALID_REQUEST),
    (b'"string"', INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","id":"v1","method":"pi/sessions"}', INVALID_REQUEST),
    (b'{"id":"nover","method":"pi/sessions"}', INVALID_REQUEST),
    (b'{"jsonrpc":2,"id":"numver","method":"pi/sessions"}', INVALID_REQUEST),
]


def test_malformed_bodies_get_json_rpc_errors(live: RawServer):
    for body, code in BAD_BODIES:
        live.unmatched.clear()
        live.send_bytes(frame(body))
        reply = live.wait_unmatched(lambda m: "error" in m, timeout=20)
        assert _error_code(reply) == code, (body[:60], reply)
        assert live.alive()
    _still_serving(live)


def test_broken_framing_is_survived(live: RawServer):
    for raw in [
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"X-Other: 1\r\n\r\n",
        b"no colon at all\r\n\r\n",
        b"\r\n\r\n\r\n",
        b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
        b"content-length: 2\n\n{}",  # bare LF and lower case
    ]:
        live.send_bytes(raw)
    _still_serving(live)


def test_unknown_methods_and_notifications(live: RawServer):
    assert _error_code(live.request("pi/doesNotExist", {})) == METHOD_NOT_FOUND
    assert _error_code(live.request("textDocument/doesNotExist", {})) == METHOD_NOT_FOUND
    assert _error_code(live.request("", {})) == METHOD_NOT_FOUND
    live.notify("pi/doesNotExist", {"x": 1})
    live.notify("$/unknownNotification", None)
    live.notify("$/cancelRequest", {"id": 987654})  # nothing to cancel
    live.notify("$/cancelRequest", {"id": {"odd": True}})
    live.notify("$/cancelRequest", "not params")
    _still_serving(live)


@pytest.mark.parametrize("msg_id", [0, -1, 2**53, 1.5, "", "x" * 10_000, True, None])
def test_request_ids_of_odd_but_scalar_types_are_echoed(live: RawServer, msg_id: Any):
    live.unmatched.clear()
    live.send_bytes(
        frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "pi/sessions", "params": {}}).encode())
    )
    reply = live.wait_unmatched(
        lambda m: m.get("id") == msg_id and type(m.get("id")) is type(msg_id), timeout=20
    )
    assert "result" in reply or _error_code(reply) == INVALID_REQUEST


@pytest.mark.parametrize("msg_id", [{"a": 1}, [1]])
def test_request_ids_that_are_objects_or_arrays_are_refused(tmp_path: Path, msg_id: Any):
    server = RawServer(tmp_path)
    try:
        server.initialize()
        server.send_bytes(
            frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "pi/sessions"}).encode())
        )
        reply = server.wait_unmatched(lambda m: "error" in m or "result" in m, timeout=10)
        assert _error_code(reply) == INVALID_REQUEST
        _still_serving(server)
    finally:
        server.close()


def test_a_method_that_is_not_a_string_is_an_invalid_request(live: RawServer):
    live.unmatched.clear()
    live.send_bytes(frame(b'{"jsonrpc":"2.0","id":"m5","method":5}'))
    reply = live.wait_unmatched(lambda m: m.get("id") == "m5", timeout=20)
    assert _error_code(reply) == INVALID_REQUEST


def test_an_overlong_header_line_is_skipped(tmp_path: Path):
    server = RawServer(tmp_path)
    try:
        server.initialize()
        server.send_bytes(b"X" * (2 << 20) + b"\r\n\r\n")
        time.sleep(0.5)
        _still_serving(server)
    finally:
        server.kill()


# -- unknown handles, uris and ids -------------------------------------------------------------


def test_unknown_handles_uris_and_ids(live: RawServer, world: World):
    assert _error_code(live.request("pi/getTree", {"session": "s999999"})) == -32001
    assert _error_code(live.request("pi/close", {"session": "nope"})) == -32001
    assert (
        _error_code(live.request("pi/append", {"session": "nope", "kind": "message", "message": USER}))
        == -32001
    )
    assert _error_code(live.request("pi/getTree", {"uri": "http://example.com/x.jsonl"})) == INVALID_PARAMS
    assert _error_code(live.request("pi/getTree", {})) == INVALID_PARAMS
    missing = live.request("pi/getTree", {"uri": file_uri(world.root / "missing" / "x.jsonl")})
    assert "result" in missing or _error_code(missing) not in (None, INTERNAL_ERROR)
    for target in (world.not_a_session, str(world.sessions)):
        reply = live.request("pi/getTree", {"uri": file_uri(target)})
        assert _error_code(reply) in (-32003, -32005, -32010), reply
    handle = live.call("pi/open", {"path": world.session_file})["session"]
    try:
        assert live.call("pi/getEntry", {"session": handle, "id": "nope"}) is None
        assert live.call("pi/getEntry", {"session": handle, "id": {"an": "object"}}) is None
        assert _error_code(live.request("pi/branch", {"session": handle, "entryId": "nope"})) == -32002
        assert (
            _error_code(
                live.request(
                    "pi/append", {"session": handle, "kind": "label", "targetId": "nope", "label": "x"}
                )
            )
            == -32002
        )
        assert _error_code(live.request("pi/getEntries", {"session": handle, "since": "nope"})) == -32002
        assert (
            _error_code(live.request("pi/createBranchedSession", {"session": handle, "leafId": "nope"}))
            == -32002
        )
    finally:
        live.call("pi/close", {"session": handle})
    assert _error_code(live.request("pi/close", {"session": handle})) == -32001  # closed twice


# -- wrong types in every param of every method --------------------------------------------------

# (NUL bytes in paths: test_path_safety.py, finding #10)
CANDIDATES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.5,
    1e308,
    "",
    "x",
    "\ud800",
    "../../../etc/passwd",
    [],
    [1],
    {},
    {"a": 1},
]
READ_ONLY = {
    "pi/sessions", "pi/getInfo", "pi/list", "pi/listAll", "pi/findById", "pi/getTree", "pi/getBranch",
    "pi/getChildren", "pi/getEntry", "pi/getEntries", "pi/getEntryAtLine", "pi/getLeaf", "pi/getLabel", "pi/getSessionName",
    "pi/getHeader", "pi/buildContextEntries", "pi/buildSessionContext", "pi/open", "pi/inMemory",
    "pi/create", "pi/continueRecent", "pi/branch", "pi/resetLeaf", "pi/buildSessionProjection", "pi/getEntryCount",
    "pi/getLineBreaks",
}  # fmt: skip
APPEND_BASES = {
    "message": {"message": USER},
    "thinking_level_change": {"thinkingLevel": "high"},
    "model_change": {"provider": "p", "modelId": "m"},
    "usage": {"usageKind": "turn", "provider": "p", "model": "m", "usage": {"input": 1}},
    "compaction": {"summary": "s", "firstKeptEntryId": None, "tokensBefore": 1},
    "custom": {"customType": "t"},
    "custom_message": {"customType": "t", "content": "c", "display": True},
    "session_info": {"name": "n"},
    "label": {"targetId": None, "label": "l"},
    "context_edit": {"targetId": None, "replacement": None},
}


def base_params(world: World, handle: str, spare: str, entry_id: str) -> dict[str, list[dict[str, Any]]]:
    """Valid params for every method (several for pi/append: one per kind)."""
    on = {"session": handle}
    out: dict[str, list[dict[str, Any]]] = {
        "pi/open": [
            {
                "path": world.session_file,
                "sessionDir": str(world.root / "elsewhere"),
                "cwdOverride": world.cwd,
            }
        ],
        "pi/create": [
            {"cwd": world.cwd, "sessionDir": str(world.root / "created"), "options": {"id": "abc"}}
        ],
        "pi/continueRecent": [{"cwd": world.cwd, "sessionDir": str(world.root / "empty-dir")}],
        "pi/inMemory": [{"cwd": world.cwd, "options": {"id": "mem"}, "entries": []}],
        "pi/forkFrom": [
            {
                "sourcePath": world.session_file,
                "targetCwd": world.cwd,
                "sessionDir": str(world.root / "forks"),
                "options": {},
            }
        ],
        "pi/close": [{"session": spare}],
        "pi/sessions": [{}],
        "pi/getInfo": [on],
        "pi/list": [{"cwd": world.cwd, "sessionDir": str(world.sessions)}],
        "pi/listAll": [{"sessionDir": str(world.sessions)}],
        "pi/findById": [{"cwd": world.cwd, "id": "nope", "sessionDir": str(world.sessions)}],
        "pi/delete": [{"path": world.decoy_session, "permanent": True}],
        "pi/append": [{**on, "kind": kind, **fields} for kind, fields in APPEND_BASES.items()],
        "pi/branch": [{**on, "entryId": entry_id}],
        "pi/resetLeaf": [on],
        "pi/branchWithSummary": [
            {**on, "branchFromId": entry_id, "summary": "s", "details": {}, "fromHook": False}
        ],
        "pi/createBranchedSession": [{**on, "leafId": entry_id}],
        "pi/newSession": [{**on, "options": {"id": "n1"}}],
        "pi/setSessionFile": [{**on, "path": world.session_file}],
        "pi/getTree": [
            {
                **on,
                "filter": "all",
                "form": "flat",
                "search": "x",
                "activeBranchFirst": True,
                "previews": True,
            },
            # a tree view's requests: the levels down to an entry, a page of a chain around it
            {**on, "form": "flat", "levels": True, "aroundId": entry_id, "limit": 50},
            {**on, "form": "flat", "chain": True, "aroundId": entry_id, "limit": 10},
        ],
        "pi/getBranch": [{**on, "fromId": entry_id}],
        "pi/getPath": [{**on, "entryId": entry_id, "descend": True, "offset": 0, "limit": 10}],
        "pi/getStats": [on],
        "pi/getChildren": [{**on, "parentId": entry_id}],
        "pi/getEntry": [{**on, "id": entry_id}],
        "pi/getEntries": [{**on, "since": entry_id, "limit": 5}],
        "pi/getEntryAtLine": [{**on, "line": 1}],
        "pi/getLineBreaks": [on],
        "pi/getLeaf": [on],
        "pi/getLabel": [{**on, "id": entry_id}],
        "pi/getSessionName": [on],
        "pi/getHeader": [on],
        "pi/buildContextEntries": [{**on, "leafId": entry_id}],
        "pi/buildSessionContext": [{**on, "leafId": entry_id, "format": "json"}],
        "pi/buildSessionProjection": [{**on, "leafId": entry_id}],
        "pi/getEntryCount": [on],
        "pi/appendContextEdit": [{**on, "targetId": entry_id, "replacement": None}],
    }
    for params_list in out.values():
        for params in params_list:
            params.setdefault("workDoneToken", "tok")
    return out


def _validator(method: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**METHODS[method]["x-paramsSchema"], "components": COMPONENTS})


def _wrong_variants(base: dict[str, Any]) -> list[dict[str, Any]]:
    """``base`` without each key, with each key set to each candidate, and with an unexpected key."""
    variants: list[dict[str, Any]] = []
    for key in base:
        variants.append({k: v for k, v in base.items() if k != key})
        variants.extend({**base, key: candidate} for candidate in CANDIDATES)
    variants.append({**base, "unexpectedExtra": {"x": [1, 2]}})
    return variants


def _reply_problem(reply: dict[str, Any], valid: bool, documented: set[int]) -> str | None:
    """What is wrong with the reply to params that are ``valid`` or not (None: nothing)."""
    code = _error_code(reply)
    if not valid:
        return None if code == INVALID_PARAMS else f"expected -32602, got {reply}"
    if code is not None and (code == INTERNAL_ERROR or code not in documented):
        return f"undocumented error {reply}"
    return None


def test_wrong_types_in_every_param_of_every_method(live: RawServer, world: World, figures):
    handle = live.call("pi/open", {"path": world.session_file})["session"]
    spare = live.call("pi/open", {"path": world.session_file})["session"]
    entry_id = SessionManager.open(world.session_file, read_only=True).get_entries()[0].id
    bases = base_params(world, handle, spare, entry_id)
    undocumented = sorted(set(METHODS) - set(bases))
    assert not undocumented, f"add valid base params for the new methods {undocumented}"
    sent = refused = 0
    problems: list[str] = []
    for method, params_list in bases.items():
        validator = _validator(method)
        documented = {e["code"] for e in METHODS[method].get("errors", [])} | {INVALID_PARAMS}
        for base in params_list:
            assert validator.is_valid(base), (method, base, next(validator.iter_errors(base)).message)
            for params in _wrong_variants(base):
                valid = validator.is_valid(params)
                if valid and method not in READ_ONLY:
                    continue  # a valid call of a writing method may write: not this test's business
                reply = live.request(method, params, timeout=30)
                sent += 1
                refused += not valid
                problem = _reply_problem(reply, valid, documented)
                if problem:
                    problems.append(f"{method} {params}: {problem}")
                if not live.alive():
                    pytest.fail(f"the server died on {method} {params}:\n{live.stderr_text()[-3000:]}")
    for extra in live.call("pi/sessions", {}):
        if extra["session"] not in (handle, spare):
            live.request("pi/close", {"session": extra["session"]})
    live.call("pi/close", {"session": handle})
    live.call("pi/close", {"session": spare})
    figures["hostile requests: wrong-type/missing-param requests sent / refused with -32602"] = (
        f"{sent} / {refused}"
    )
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} problems)"


def test_a_client_that_never_initializes_may_ask_for_progress(tmp_path: Path):
    """``initialize`` is optional for pi/* clients: a ``workDoneToken`` from one that never sent
    it is ignored (no progress without the client's capabilities), not an internal error."""
    world = make_world(tmp_path)
    server = RawServer(world.root)
    try:
        handle = server.call("pi/open", {"path": world.session_file})["session"]
        spare = server.call("pi/open", {"path": world.session_file})["session"]
        entry_id = SessionManager.open(world.session_file, read_only=True).get_entries()[0].id
        problems = []
        for method, params_list in base_params(world, handle, spare, entry_id).items():
            if method not in READ_ONLY:
                continue
            for params in params_list:
                reply = server.request(method, {**params, "workDoneToken": "tok"}, timeout=30)
                if "error" in reply:
                    problems.append(f"{method}: {reply['error']}")
        assert not problems, "\n".join(problems)
        assert not [name for name, _ in server.notifications if name == "$/progress"]
        assert server.garbage == []
    finally:
        server.close()


def test_params_that_are_not_objects(live: RawServer):
    for method in METHODS:
        for params in ([], [1, 2], 5, "x", True):
            reply = live.request(method, params)
            assert _error_code(reply) == INVALID_PARAMS, (method, params, reply)
    _still_serving(live)


# -- huge params ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_huge_params(tmp_path: Path, figures):
    world = make_world(tmp_path)
    server = RawServer(world.root)
    try:
        server.initialize()
        before = world.fingerprint()
        target = new_session_file(tmp_path / "target", cwd=str(tmp_path))
        handle = server.call("pi/open", {"path": target})["session"]
        big_text = "y" * (16 << 20)
        ids = [
            server.call(
                "pi/append",
                {
                    "session": handle,
                    "kind": "message",
                    "message": {"role": "user", "content": big_text, "timestamp": 1},
                },
                timeout=120,
            )["id"]
        ]
        deep: Any = 1
        for _ in range(50_000):
            deep = [deep]
        ids.append(
            server.call(
                "pi/append",
                {"session": handle, "kind": "custom", "customType": "deep", "data": deep},
                timeout=120,
            )["id"]
        )
        wide = list(range(300_000))
        ids.append(
            server.call(
                "pi/append",
                {"session": handle, "kind": "custom", "customType": "wide", "data": wide},
                timeout=120,
            )["id"]
        )
        # huge wrong-typed params are refused like small ones
        assert (
            _error_code(
                server.request(
                    "pi/getTree", {"session": handle, "search": list(range(1_000_000))}, timeout=120
                )
            )
            == INVALID_PARAMS
        )
        reply = server.request(
            "pi/open", {"path": "p" * (20 << 20)}, timeout=120
        )  # a new session for that name
        assert _error_code(reply) != INTERNAL_ERROR
        if "result" in reply:
            server.call("pi/close", {"session": reply["result"]["session"]})
        entries = [
            {"type": "session", "version": 3, "id": "m", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
        ]
        entries += [
            {
                "type": "custom",
                "customType": "x",
                "id": f"{i:08x}",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
            for i in range(50_000)
        ]
        info = server.call("pi/inMemory", {"cwd": "/", "entries": entries}, timeout=120)
        assert info["entryCount"] == 50_000
        _still_serving(server)
        assert (
            server.call("pi/getEntry", {"session": handle, "id": ids[0]}, timeout=120)["message"]["content"]
            == big_text
        )
        read_back = server.call("pi/getEntry", {"session": handle, "id": ids[1]}, timeout=120)["data"]
        levels = 0
        while type(read_back) is list and len(read_back) == 1:  # (== would recurse 50,000 deep)
            read_back, levels = read_back[0], levels + 1
        assert (levels, read_back) == (50_000, 1)
        assert server.call("pi/getEntry", {"session": handle, "id": ids[2]}, timeout=120)["data"] == wide
        last = server.call("pi/getEntry", {"session": info["session"], "id": f"{49_999:08x}"}, timeout=120)
        assert last["customType"] == "x"
        check_session_file(target, ids)
        assert world.fingerprint() == before
        figures[
            "huge params: 16 MB string, 50,000-deep value, 300,000-element array, 50,000 in-memory entries"
        ] = "ok"
    finally:
        server.close()


# -- lifecycle -------------------------------------------------------------------------------------


def test_requests_after_shutdown_get_invalid_request(tmp_path: Path):
    world = make_world(tmp_path)
    server = RawServer(world.root)
    try:
        server.initialize()
        before = world.fingerprint()
        assert server.call("shutdown") is None
        for method, params in [
            ("pi/sessions", {}),
            ("pi/open", {"path": world.session_file}),
            (
                "textDocument/hover",
                {
                    "textDocument": {"uri": file_uri(world.session_file)},
                    "position": {"line": 0, "character": 0},
                },
            ),
        ]:
            assert _error_code(server.request(method, params, timeout=3)) == INVALID_REQUEST
        assert world.fingerprint() == before
    finally:
        server.kill()


def test_exit_after_shutdown_ends_the_process(tmp_path: Path):
    server = RawServer(tmp_path)
    try:
        server.initialize()
        server.call("shutdown")
        server.notify("exit")
        assert server.process.wait(20) == 0
    finally:
        server.close()


def test_cancel_request_midway(tmp_path: Path):
    world = make_world(tmp_path)
    many = tmp_path / "many"
    many.mkdir()
    template = Path(world.session_file).read_bytes()
    for i in range(3000):
        (many / f"2026-01-01T00-00-00-000Z_{i:05d}.jsonl").write_bytes(template)
    before = sha256_tree(many), world.fingerprint()
    server = RawServer(world.root)
    try:
        server.initialize()
        outcomes = []
        for delay in (0.0, 0.01, 0.05, 0.2):
            msg_id = server.send_request("pi/listAll", {"sessionDir": str(many)})
            time.sleep(delay)
            server.notify("$/cancelRequest", {"id": msg_id})
            reply = server.wait_reply(msg_id, timeout=120)
            if "result" in reply:
                assert len(reply["result"]) == 3000
                outcomes.append("finished")
            else:
                assert _error_code(reply) in (REQUEST_CANCELLED, -32007), reply
                outcomes.append("cancelled")
        handle = server.call("pi/open", {"path": world.session_file})["session"]
        msg_id = server.send_request("pi/getTree", {"session": handle})
        server.notify("$/cancelRequest", {"id": msg_id})
        reply = server.wait_reply(msg_id, timeout=30)
        assert "result" in reply or _error_code(reply) == REQUEST_CANCELLED
        _still_serving(server)
        assert "cancelled" in outcomes, outcomes
    finally:
        server.close()
    assert (sha256_tree(many), world.fingerprint()) == before


@pytest.mark.parametrize("how", ["stdin closed", "client killed mid-stream"])
def test_a_client_that_disappears(tmp_path: Path, how: str):
    """The server exits by itself (it serves one client on stdio) and the file holds every
    acknowledged append and no broken line."""
    path = new_session_file(tmp_path / "sessions", cwd=str(tmp_path))
    server = RawServer(tmp_path)
    server.initialize()
    handle = server.call("pi/open", {"path": path})["session"]
    acknowledged = [
        server.call("pi/append", {"session": handle, "kind": "message", "message": ASSISTANT})["id"]
        for _ in range(20)
    ]
    for n in range(300):  # requests in flight when the client goes
        server.send_request(
            "pi/append",
            {
                "session": handle,
                "kind": "message",
                "message": {"role": "user", "content": f"x{n}", "timestamp": n},
            },
        )
    if how == "stdin closed":
        server.process.stdin.close()
    else:
        server.process.stdin.close()
        server.process.stdout.close()  # nobody reads the replies any more: writes fail with EPIPE
    try:
        server.process.wait(30)
    except subprocess.TimeoutExpired:
        os.kill(server.process.pid, signal.SIGKILL)
        pytest.fail(f"the server did not exit after its client disappeared ({how})")
    finally:
        server.close()
    acknowledged += [r["result"]["id"] for r in server.replies.values() if "result" in r]
    check_session_file(path, acknowledged)


def test_a_large_document_does_not_stop_other_requests(tmp_path: Path):
    """While a 28 MB session document full of problems (150,000 entries without timestamps) is
    analysed after didOpen, pi/* requests on other sessions are still answered (they take
    milliseconds; 5 s is a hang bound, not a speed target)."""
    big = tmp_path / "big.jsonl"
    big.write_bytes(
        HEADER
        + b"".join(
            b'{"type":"message","id":"%08x","parentId":null,"message":{"role":"user","content":"' % i
            + b"x" * 100
            + b'"}\n'
            for i in range(150_000)
        )
    )
    small = new_session_file(tmp_path / "small", cwd=str(tmp_path))
    server = RawServer(tmp_path)
    try:
        server.initialize()
        handle = server.call("pi/open", {"path": small})["session"]
        text = big.read_text()
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": file_uri(big), "languageId": "pi-session", "version": 1, "text": text}},
        )
        time.sleep(0.5)
        server.call("pi/getLeaf", {"session": handle}, timeout=5)  # TimeoutError: it waits for the analysis
    finally:
        server.kill()
