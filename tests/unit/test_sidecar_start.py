"""The sidecar's start: an editor's tree view waits for ``serve`` to start, open its session and
send the first window, so the process imports only what those requests use.

* Modules that only other requests use (statistics, the context's Markdown, the trash, the
  listings) are imported by those requests, and pygls/lsprotocol only when a client speaks LSP
  (the replies' ``file:`` URIs are made without pygls or urllib: server/file_uri.py).
* asyncio is imported without ``ssl`` (a server on stdio opens no TLS connection); ``ssl`` itself
  stays importable, and asyncio works without it.
* msgspec is imported without ``typing_extensions``, and finds the same type hints (typing's);
  ``typing_extensions`` stays importable.
* uuid (which msgspec imports) is imported with a stand-in for ``platform``, which tells it the
  same system name; ``platform`` stays importable.
* ``pi-session serve`` as editors run it (``serve``, and ``serve --stdio`` as VS Code's language
  client runs it) makes no parser (argparse, gettext's lookups, shutil for the terminal's width):
  its options take the values the parser gives them. Other command lines are parsed.
* The records the start's modules define are msgspec Structs: a dataclass costs many times more
  to define (its methods are made from source, compiled when its module is imported).
* What the imports make is left out of the cyclic collector's walks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from server_process import Message, Replies, talk

from pi_session_server.cli import EDITORS_SERVE, _serve_with_defaults, build_parser
from pi_session_server.commands.serve import (
    import_asyncio_without_tls,
    import_uuid_without_platform,
    import_without,
    imported_for_good,
)
from pi_session_server.session import cache_dir

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
    "platform",
    "shutil",
    "bz2",
    "lzma",
    "argparse",
    "gettext",
)

# the dataclasses the start may still define (in modules this change left to others); any other
# record a module on the start's path defines is a msgspec Struct
DATACLASSES_AT_START = {
    "pi_session_server.session.environment.Environment",
    "pi_session_server.server.tree_pages._Kept",
    "pi_session_server.server.tree_levels.TreeLevel",
    "pi_session_server.server.tree_window.TreeWindow",
}

# `pi-session serve` as an editor runs it (its arguments in argv); what it imported, written to
# stderr when it ends
SERVE = f"""
import json, sys
from pi_session_server.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as done:
    code = done.code
unwanted = {NOT_AT_START!r}
imported = sorted(m for m in sys.modules if any(m == u or m.startswith(u + ".") for u in unwanted))
dataclasses = sorted(
    f"{{name}}.{{value.__qualname__}}"
    for name, module in list(sys.modules.items()) if name.startswith("pi_session_server")
    for value in vars(module).values()
    if isinstance(value, type) and value.__module__ == name and "__dataclass_fields__" in vars(value)
)
print(json.dumps({{"code": code, "imported": imported, "dataclasses": dataclasses}}), file=sys.stderr)
"""


def _serve(
    messages: list[Message], index: Path | None = None, argv: list[str] = EDITORS_SERVE[0]
) -> tuple[Replies, dict[str, Any]]:
    """The replies (by id) of ``pi-session `` + ``argv`` to ``messages`` and what it imported
    (:func:`server_process.talk`). ``index``: the index directory (every file indexed), else none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SESSION_")}
    if index is None:
        env["PI_SESSION_NO_INDEX"] = "1"
    else:
        env.update(PI_SESSION_INDEX_DIR=str(index), PI_SESSION_INDEX_MIN_SIZE="0")
    replies, ended = talk(SERVE, messages, env=env, cwd=ROOT, args=argv)
    return replies, ended


def _request(number: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


@pytest.mark.parametrize("argv", EDITORS_SERVE)
def test_a_tree_views_first_requests_import_only_what_they_use(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    time.sleep(cache_dir.RACY_NS / 1e9 + 0.1)  # settled: its index serves the next open unchanged

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
    first, _ended = _serve(tree_view, tmp_path / "index", argv)  # the index and the previews kept
    replies, ended = _serve(tree_view, tmp_path / "index", argv)
    assert replies[2]["result"]["nodes"] == first[2]["result"]["nodes"] != []
    assert replies[3]["result"] is None
    assert ended["code"] == 0
    assert ended["imported"] == []
    assert set(ended["dataclasses"]) <= DATACLASSES_AT_START, ended["dataclasses"]
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


UUID_WITHOUT_PLATFORM = """
import json, sys
from pi_session_server.commands.serve import import_uuid_without_platform
import_uuid_without_platform()
without = "platform" not in sys.modules
import uuid
import platform  # still there for whoever wants it, and the real one
print(json.dumps({
    "without": without,
    "system": uuid._platform_system == platform.system(),
    "linux": uuid._LINUX == (platform.system() == "Linux"),
    "aix": uuid._AIX == (platform.system() == "AIX"),
    "real": callable(platform.uname) and platform.uname().system == platform.system(),
    "uuid4": uuid.UUID(str(uuid.uuid4())).version,
}))
"""


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="uuid imports platform elsewhere only")
def test_uuid_without_platform_knows_the_same_system() -> None:
    done = subprocess.run(
        [sys.executable, "-c", UUID_WITHOUT_PLATFORM], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "without": True,
        "system": True,
        "linux": True,
        "aix": True,
        "real": True,
        "uuid4": 4,
    }


def test_uuid_imported_already_is_left_alone() -> None:
    import uuid

    had_platform = sys.modules.get("platform")
    import_uuid_without_platform()
    assert sys.modules.get("uuid") is uuid
    assert sys.modules.get("platform") is had_platform


@pytest.mark.parametrize("argv", EDITORS_SERVE)
def test_the_sidecar_as_editors_start_it_has_what_the_parser_gives(argv: list[str]) -> None:
    parsed = build_parser(argv).parse_args(argv)
    assert vars(_serve_with_defaults(argv)) == vars(parsed)
    assert vars(parsed)["watch_interval"] == 0.15 and vars(parsed)["log_level"] == "WARNING"
    assert vars(parsed)["stdio"] is ("--stdio" in argv)


def test_vs_codes_language_client_starts_the_sidecar_with_stdio() -> None:
    """VS Code's client adds ``--stdio`` to a server it starts on stdio: an editors' command line."""
    extension = (ROOT / "editors" / "vscode" / "src" / "extension.ts").read_text(encoding="utf-8")
    assert "withSubcommand(cli, 'serve')" in extension and "transport: TransportKind.stdio" in extension
    assert ["serve", "--stdio"] in EDITORS_SERVE


@pytest.mark.parametrize(
    ("argv", "changed"),
    [
        (["serve", "--stdio", "--fsync"], {"stdio": True, "fsync": True}),
        (["serve", "--watch-interval", "1"], {"watch_interval": 1.0}),
        (["serve", "--log-level", "INFO", "--pi", "0.86.1"], {"log_level": "INFO", "pi": "0.86.1"}),
    ],
)
def test_other_serve_command_lines_are_parsed(argv: list[str], changed: dict[str, object]) -> None:
    defaults = vars(_serve_with_defaults(EDITORS_SERVE[0]))
    assert vars(build_parser(argv).parse_args(argv)) == {**defaults, **changed}
