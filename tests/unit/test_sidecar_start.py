"""The sidecar's start: an editor's tree view waits for ``serve`` to start, open its session and
send the first window, so the process imports only what those requests use.

* Modules that only other requests use (statistics, the context's Markdown, the trash, the
  listings) are imported by those requests, and pygls/lsprotocol only when a client speaks LSP
  (the replies' ``file:`` URIs are made without pygls or urllib: server/file_uri.py).
* asyncio is imported without ``ssl`` (a server on stdio opens no TLS connection); ``ssl`` itself
  stays importable, and asyncio works without it.
* msgspec is imported without ``typing_extensions``, and finds the same type hints (typing's);
  ``typing_extensions`` stays importable.
* What the imports make is left out of the cyclic collector's walks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from server_process import Message, Replies, talk

from pi_session_server.commands.serve import import_asyncio_without_tls, import_without, imported_for_good

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"

# what the first requests of a tree view on a session indexed before never use
NOT_AT_START = (
    "ssl",
    "typing_extensions",
    "urllib",
    "pygls",
    "hashlib",
    "tempfile",
    "send2trash",
    "pi_session_server.server.session_stats",
    "pi_session_server.render.context_markdown",
    "lsprotocol",
    "cattrs",
    "attrs",
    "pi_session_server.session.listing",
    "pi_session_server.session.discovery",
    "pi_session_server.format.collation",
    "pi_session_server.format.glued",
    "unicodedata",
)

# `pi-session serve` as an editor runs it; what it imported, written to stderr when it ends
SERVE = f"""
import json, sys
from pi_session_server.cli import main
try:
    code = main(["serve"])
except SystemExit as done:
    code = done.code
unwanted = {NOT_AT_START!r}
imported = sorted(m for m in sys.modules if any(m == u or m.startswith(u + ".") for u in unwanted))
print(json.dumps({{"code": code, "imported": imported}}), file=sys.stderr)
"""


def _serve(messages: list[Message], index: Path | None = None) -> tuple[Replies, dict[str, Any]]:
    """The replies (by id) of ``pi-session serve`` to ``messages`` and what it imported
    (:func:`server_process.talk`). ``index``: the index directory (every file indexed), else none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SESSION_")}
    if index is None:
        env["PI_SESSION_NO_INDEX"] = "1"
    else:
        env.update(PI_SESSION_INDEX_DIR=str(index), PI_SESSION_INDEX_MIN_SIZE="0")
    replies, ended = talk(SERVE, messages, env=env, cwd=ROOT)
    return replies, ended


def _request(number: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


def test_a_tree_views_first_requests_import_only_what_they_use(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())

    def first_window(replies: Replies) -> dict[str, Any]:
        window = {"filter": "default", "form": "flat", "activeBranchFirst": True, "chain": True}
        session = replies[1]["result"]["session"]
        return _request(2, "pi/getTree", {"session": session, **window, "offset": 0, "limit": 200})

    tree_view = [
        _request(1, "pi/open", {"path": str(path)}),
        first_window,
        _request(3, "shutdown", None),
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    first, _ended = _serve(tree_view, tmp_path / "index")  # the index and the previews kept
    replies, ended = _serve(tree_view, tmp_path / "index")
    assert replies[2]["result"]["nodes"] == first[2]["result"]["nodes"] != []
    assert replies[3]["result"] is None
    assert ended == {"code": 0, "imported": []}
    assert list((tmp_path / "index").iterdir())  # the second read it


def test_the_other_requests_import_what_they_use_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    replies, ended = _serve(
        [
            _request(1, "pi/open", {"path": str(path)}),
            _request(2, "pi/getStats", {"uri": path.as_uri()}),
            _request(3, "pi/buildSessionContext", {"uri": path.as_uri(), "format": "markdown"}),
            _request(4, "pi/listAll", {"sessionDir": str(tmp_path), "text": "none"}),
            _request(5, "shutdown", None),
            {"jsonrpc": "2.0", "method": "exit"},
        ]
    )
    assert "result" in replies[2] and "result" in replies[3], replies
    assert "markdown" in replies[3]["result"]
    assert [info["path"] for info in replies[4]["result"]] == [str(path)]
    assert ended["code"] == 0
    assert ended["imported"] == [
        "pi_session_server.format.collation",
        "pi_session_server.render.context_markdown",
        "pi_session_server.server.session_stats",
        "pi_session_server.session.discovery",
        "pi_session_server.session.listing",
        "unicodedata",
    ]


ASYNCIO_WITHOUT_TLS = """
import json, sys
from pi_session_server.commands.serve import import_asyncio_without_tls
import_asyncio_without_tls()
without_ssl = "ssl" not in sys.modules
import asyncio

async def echo():
    reader, writer = await asyncio.open_connection(sock=right)
    writer.write(b"ping")
    await writer.drain()
    return await reader.read(4)

import socket
left, right = socket.socketpair()
left.sendall(b"pong")
answer = asyncio.run(echo())
import ssl  # still there for whoever wants it
print(json.dumps({"without_ssl": without_ssl, "answer": answer.decode(), "sent": left.recv(4).decode(),
                  "ssl": bool(ssl.OPENSSL_VERSION)}))
"""


def test_asyncio_without_tls_still_runs_and_ssl_stays_importable() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ASYNCIO_WITHOUT_TLS], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"without_ssl": True, "answer": "pong", "sent": "ping", "ssl": True}


def test_asyncio_imported_already_is_left_alone() -> None:
    import asyncio  # noqa: F401 - the test process has it

    had_ssl = sys.modules.get("ssl")
    import_asyncio_without_tls()
    assert sys.modules.get("ssl") is had_ssl


MSGSPEC_WITHOUT_TYPING_EXTENSIONS = """
import json, sys, typing
from typing import Annotated, NotRequired, Required, TypedDict
from pi_session_server.commands.serve import import_msgspec_without_typing_extensions
import_msgspec_without_typing_extensions()
without = "typing_extensions" not in sys.modules
import msgspec
from msgspec import _utils

class Options(TypedDict, total=False):
    name: Required[Annotated[str, msgspec.Meta(min_length=1)]]
    size: NotRequired[int]

class Point(msgspec.Struct):
    x: Annotated[int, msgspec.Meta(ge=0)]
    options: Options | None = None

decode = msgspec.json.Decoder(Point).decode
point = decode(b'{"x": 1, "options": {"name": "a"}}')
errors = []
for bad in (b'{"x": -1}', b'{"x": 1, "options": {"size": 2}}', b'{"x": 1, "options": {"name": ""}}'):
    try:
        decode(bad)
    except msgspec.ValidationError as error:
        errors.append(str(error))
import typing_extensions  # still there for whoever wants it
print(json.dumps({
    "without": without,
    "typing's": _utils._get_type_hints is typing.get_type_hints and _utils.Required is typing.Required
        and _utils.NotRequired is typing.NotRequired,
    "point": msgspec.to_builtins(point),
    "errors": errors,
    "importable": bool(typing_extensions.__name__),
}))
"""


def test_msgspec_without_typing_extensions_finds_the_same_hints() -> None:
    done = subprocess.run(
        [sys.executable, "-c", MSGSPEC_WITHOUT_TYPING_EXTENSIONS],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "without": True,
        "typing's": True,
        "point": {"x": 1, "options": {"name": "a"}},
        "errors": [
            "Expected `int` >= 0 - at `$.x`",
            "Object missing required field `name` - at `$.options`",
            "Expected `str` of length >= 1 - at `$.options.name`",
        ],
        "importable": True,
    }


def test_a_module_imported_already_is_left_alone() -> None:
    import msgspec  # noqa: F401 - the test process has it

    had = sys.modules.get("typing_extensions")
    import_without("msgspec", "typing_extensions")
    assert sys.modules.get("typing_extensions") is had


def test_what_the_imports_made_is_left_out_of_collections() -> None:
    import gc

    frozen = gc.get_freeze_count()
    try:
        with imported_for_good():
            assert not gc.isenabled()
            made = [{"table": n} for n in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(made)
        gc.disable()
        with imported_for_good():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()
        gc.unfreeze()  # the test process goes on collecting as before
