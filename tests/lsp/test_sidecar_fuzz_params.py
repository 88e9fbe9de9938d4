"""Every method of ``protocol/`` against hostile params, over the wire, from seeded random draws.

For each method, params are drawn from its schema (aimed at a real session, its ids and files),
then broken: members of the wrong type, left out or added, null, huge, negative and fractional
numbers, deep nesting, very long strings, lone surrogates, ids that do not exist, paths that are
directories, FIFOs, devices, missing or not sessions, uris of other schemes. Each reply must be a
result that matches the method's result schema (for params the schema accepts) or an error of a
code the method documents with a message, ``-32602`` exactly when the schema refuses the params;
never ``-32603``, a crash or a hang. After each request a plain one must still be answered, and no
file may have changed unless the request was a write that succeeded.

``PI_SIDECAR_FUZZ_SEED=N`` runs seed N instead of the default ones (the seed is in every failure).
"""

from __future__ import annotations

import contextlib
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sidecar_fuzz import Draw, Places, broken, params_schema, protocol_methods, seeds
from sidecar_support import EXAMPLE, contract, server_env

from pi_session_server.server.stdio_client import RpcError, SidecarClient

pytestmark = pytest.mark.timeout(900)

#: requests per method and seed (the first few as drawn, the rest broken)
DRAWS = 24
AS_DRAWN = 4
#: the longest a request may take before it counts as a hang, in seconds
HANG = 60.0

INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602
UNKNOWN_SESSION = -32001
#: the methods that may change a file when they succeed
WRITES = {
    "pi/append",
    "pi/appendContextEdit",
    "pi/branchWithSummary",
    "pi/createBranchedSession",
    "pi/delete",
    "pi/create",
    "pi/forkFrom",
    "pi/newSession",
    "pi/setSessionFile",
    "pi/open",
    "pi/continueRecent",
}
#: the methods after whose success the session handle may no longer stand for the session file
SWITCHES = {"pi/close", "pi/delete", "pi/setSessionFile", "pi/newSession", "pi/createBranchedSession"}


class Fuzz:
    def __init__(self, root: Path, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.example = EXAMPLE.read_bytes()
        self.places = Places.make(root, self.example)
        self.client = SidecarClient(env=server_env(root), cwd=str(root))
        self.client.initialize()
        self.kept = {path: path.read_bytes() for path in self.places.watched()}
        self.handle = ""
        self.reopen()
        self.counts: dict[str, int] = {}

    def reopen(self) -> None:
        """The session file (back as it was kept, if a request deleted it) held again."""
        if self.handle:
            with contextlib.suppress(RpcError):
                self.client.request("pi/close", {"session": self.handle})
        for path, data in self.kept.items():
            if not path.exists():
                path.write_bytes(data)
        self.handle = self.client.request("pi/open", {"path": str(self.places.session)})["session"]
        entries = self.client.request("pi/getEntries", {"session": self.handle})["entries"]
        self.places.ids = [entry["id"] for entry in entries if isinstance(entry.get("id"), str)]

    def where(self, method: str, params: Any) -> str:
        shown = repr(params)
        shown = shown if len(shown) < 600 else shown[:600] + "..."
        return f"seed {self.seed} (PI_SIDECAR_FUZZ_SEED={self.seed}): {method} {shown}"

    def send(self, method: str, params: Any) -> None:
        schema_problem = contract()._first_error(contract()._params[method], {} if params is None else params)
        succeeded = False
        try:
            result = self.client.request(method, params, timeout=HANG)
        except RpcError as error:
            where = self.where(method, params)
            assert error.rpc_code != INTERNAL_ERROR, f"{where}: internal error {error.message}"
            assert isinstance(error.message, str) and error.message.strip(), f"{where}: no message"
            assert "Traceback" not in error.message, f"{where}: {error.message}"
            if schema_problem is not None:
                assert error.rpc_code == INVALID_PARAMS, (
                    f"{where}: the schema refuses ({schema_problem}), the server answered "
                    f"{error.rpc_code} {error.message}"
                )
            contract().check_error(method, params, error.rpc_code)
            self._count(f"error {error.rpc_code}")
        except (TimeoutError, ConnectionError) as error:
            raise AssertionError(f"{self.where(method, params)}: {error}") from None
        else:
            assert schema_problem is None, f"{self.where(method, params)}: answered params the schema refuses"
            contract().check_result(method, params, result)
            succeeded = True
            self._count("result")
        self._count("requests")
        self._check_files(method, params, succeeded)
        if succeeded and method in SWITCHES:
            self.reopen()
        self._still_answers(method, params)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _check_files(self, method: str, params: Any, succeeded: bool) -> None:
        for path, data in self.kept.items():
            now = path.read_bytes() if path.is_file() else None
            if now == data:
                continue
            may_change = succeeded and method in WRITES
            assert may_change, f"{self.where(method, params)} changed {path.name} and answered an error"
            if now is not None:
                self.kept[path] = now

    def _still_answers(self, method: str, params: Any) -> None:
        try:
            count = self.client.request("pi/getEntryCount", {"session": self.handle}, timeout=HANG)
        except RpcError as error:
            raise AssertionError(f"after {self.where(method, params)}: {error.rpc_code} {error}") from None
        except (TimeoutError, ConnectionError) as error:
            raise AssertionError(f"after {self.where(method, params)}: {error}") from None
        assert isinstance(count, int) and count >= 1

    def method(self, method: str) -> None:
        schema = params_schema(method)
        for draw in range(DRAWS):
            params = Draw(self.rng, self.places, self.handle).object(schema)
            if method == "pi/append" and "kind" not in params:
                params["kind"] = "message"
            if draw >= AS_DRAWN:
                params = broken(self.rng, params, schema, self.places)
            self.send(method, params)

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """The schema checks (jsonschema) and repr of params nested thousands deep recurse as deep."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 20_000))
    yield
    sys.setrecursionlimit(before)


@pytest.mark.parametrize("seed", seeds())
@pytest.mark.usefixtures("deep_recursion")
def test_every_method_survives_hostile_params(tmp_path: Path, seed: int) -> None:
    fuzz = Fuzz(tmp_path, seed)
    try:
        methods = protocol_methods()
        fuzz.rng.shuffle(methods)
        for method in methods:
            fuzz.method(method)
            # a different params object each time: also params that are not an object at all
            fuzz.send(method, fuzz.rng.choice((None, [], [fuzz.handle], 7, "x", True)))
    finally:
        fuzz.close()
        shutil.rmtree(tmp_path / "a-directory.jsonl", ignore_errors=True)
    print(f"seed {seed}: {fuzz.counts}")
    assert fuzz.counts["requests"] >= len(protocol_methods()) * DRAWS
