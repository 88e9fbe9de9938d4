"""Shared pieces of the sidecar end-to-end tests: the real server process behind a pytest-lsp client.

``Sidecar.request`` sends a ``pi/*`` request and checks the reply against ``protocol/``: a result
must validate against the method's documented result schema, an error must carry a code the method
documents. So every e2e test is also a test of the wire contract.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "protocol" / "pi-session.openrpc.json"
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"
SERVER_COMMAND = [sys.executable, "-m", "pi_session_server", "serve"]


class Contract:
    """protocol/pi-session.openrpc.json as validators: params and result schemas, error codes."""

    def __init__(self, path: Path = PROTOCOL) -> None:
        self.document = json.loads(path.read_text(encoding="utf-8"))
        self.methods = {m["name"]: m for m in self.document["methods"]}
        components = {"schemas": self.document["components"]["schemas"]}
        self._results: dict[str, Any] = {}
        self._params: dict[str, Any] = {}
        for name, method in self.methods.items():
            result = {**method["result"]["schema"], "components": components}
            self._results[name] = jsonschema.Draft202012Validator(result)
            params = {**method["x-paramsSchema"], "components": components}
            self._params[name] = jsonschema.Draft202012Validator(params)
        self.notifications = {n["name"]: n for n in self.document["x-notifications"]}
        self._notification_params = {
            name: jsonschema.Draft202012Validator({**n["params"]["schema"], "components": components})
            for name, n in self.notifications.items()
        }

    @staticmethod
    def _first_error(validator: Any, value: Any) -> str | None:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        return None if not errors else f"{errors[0].message} at {list(errors[0].path)}"

    def check_result(self, method: str, params: Any, result: Any) -> None:
        assert method in self.methods, f"{method} is not documented in protocol/"
        problem = self._first_error(self._results[method], result)
        assert problem is None, f"{method} result does not match protocol/: {problem}"
        problem = self._first_error(self._params[method], params if params is not None else {})
        assert problem is None, f"{method} accepted params that protocol/ rejects: {problem}"

    def check_error(self, method: str, params: Any, code: int) -> None:
        assert method in self.methods, f"{method} is not documented in protocol/"
        documented = {e["code"] for e in self.methods[method].get("errors", [])}
        documented |= {-32602, -32603}
        assert code in documented, f"{method} answered error {code}, which protocol/ does not list for it"
        if code == -32602 and isinstance(params, dict):
            problem = self._first_error(self._params[method], params)
            assert problem is not None, f"{method} refused params that protocol/ accepts: {params}"

    def check_notification(self, method: str, params: Any) -> None:
        assert method in self.notifications, f"notification {method} is not documented in protocol/"
        problem = self._first_error(self._notification_params[method], params)
        assert problem is None, f"{method} params do not match protocol/: {problem}"


_contract: list[Contract] = []


def contract() -> Contract:
    if not _contract:
        _contract.append(Contract())
    return _contract[0]


class RpcFailure(Exception):
    def __init__(self, code: int, message: str, data: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


@dataclass
class Sidecar:
    client: LanguageClient
    home: Path
    notifications: dict[str, list[Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    _waiters: list[tuple[str, Callable[[Any], bool], asyncio.Future[Any]]] = field(default_factory=list)

    async def request(self, method: str, params: Any = None) -> Any:
        return await self._answer(method, params, self.client.protocol.send_request_async(method, params))

    def send(self, method: str, params: Any = None) -> asyncio.Future[Any]:
        """What :meth:`request` answers, for a request sent now: before any sent after this call
        (a ``request`` not awaited yet is not sent yet)."""
        return asyncio.ensure_future(
            self._answer(method, params, self.client.protocol.send_request_async(method, params))
        )

    async def _answer(self, method: str, params: Any, reply: asyncio.Future[Any]) -> Any:
        try:
            result = await reply
        except JsonRpcException as error:
            if method.startswith("pi/"):
                contract().check_error(method, params, error.code)
            raise RpcFailure(error.code, error.message, error.data) from None
        if method.startswith("pi/"):
            contract().check_result(method, params, result)
        return result

    def record(self, method: str, params: Any) -> None:
        try:
            contract().check_notification(method, params)
        except AssertionError as problem:  # raised inside the client's handler: keep it for teardown
            self.problems.append(str(problem))
        self.notifications.setdefault(method, []).append(params)
        for waiter in list(self._waiters):
            name, predicate, future = waiter
            if name == method and not future.done() and predicate(params):
                future.set_result(params)
                self._waiters.remove(waiter)

    async def wait_for(
        self, method: str, predicate: Callable[[Any], bool] = lambda p: True, timeout: float = 10
    ) -> Any:
        for params in self.notifications.get(method, []):
            if predicate(params):
                return params
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters.append((method, predicate, future))
        return await asyncio.wait_for(future, timeout)

    async def open_example(self, tmp_path: Path) -> tuple[str, Path]:
        path = tmp_path / "example.jsonl"
        path.write_bytes(EXAMPLE.read_bytes())
        info = await self.request("pi/open", {"path": str(path)})
        return info["session"], path


def plain_json_converter() -> Any:
    """pygls' converter, except that untyped params/results stay plain JSON (pygls makes
    namedtuples of them, renaming keys that are not identifiers)."""
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=plain_json_converter)
    register_lsp_features(client)
    return client


def server_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HOME"] = str(home / "home")
    env["PI_CODING_AGENT_DIR"] = str(home / "agent")
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    (home / "home").mkdir(parents=True, exist_ok=True)
    return env


async def start_sidecar(
    tmp_path: Path, *extra_args: str, capabilities: Any = None, command: Sequence[str] = SERVER_COMMAND
) -> Sidecar:
    client = make_client()
    sidecar = Sidecar(client, tmp_path)
    for method in ("pi/didChange", "pi/foreignWriter"):
        client.feature(method)(lambda params, m=method: sidecar.record(m, params))
    await client.start_io(*command, *extra_args, env=server_env(tmp_path), cwd=str(tmp_path))
    caps = capabilities or types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True)
    )
    await client.initialize_session(types.InitializeParams(capabilities=caps, process_id=os.getpid()))
    return sidecar


@pytest_asyncio.fixture(name="sidecar")
async def sidecar_fixture(tmp_path: Path) -> AsyncIterator[Sidecar]:
    side = await start_sidecar(tmp_path)
    yield side
    await stop_sidecar(side)


async def stop_sidecar(side: Sidecar) -> None:
    await side.client.shutdown_session()
    await side.client.stop()
    assert not side.problems, side.problems


def expect_error(code: int) -> Any:
    return pytest.raises(RpcFailure, match=f"^{code}:")
