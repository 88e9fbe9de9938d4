"""Malformed params for every method listed in ``protocol/`` (a method added there is covered here
by itself), through the real server: huge and negative numbers, numbers written as strings, NaN-ish
strings, nested garbage, unknown keys, a null, unknown or closed ``session``. Each is answered with
a JSON-RPC error of a code the contract documents for the method (or -32602), with a message that
says what is wrong: never -32603, never a traceback, never a hang; the server stays up and no file
changes. Params that the contract accepts after all (a string where any string will do) may be
answered with a result, by the methods that write nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from reliability_rpc import RawServer, encode
from test_hostile_requests import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHODS,
    READ_ONLY,
    REQUEST_CANCELLED,
    World,
    _validator,
    base_params,
    make_world,
)

from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(300)

UNKNOWN_SESSION = -32001
READS = READ_ONLY | {"pi/getPath", "pi/getStats"}


def _nested(depth: int) -> Any:
    value: Any = {"a": [1, None, "x"]}
    for level in range(depth):
        value = [value, {"k": value}] if level < 3 else {"deeper": [value]}
    return value


def _deep(depth: int, wrap: Any) -> Any:
    value: Any = None
    for _ in range(depth):
        value = wrap(value)
    return value


DEEP_ARRAY = _deep(10_000, lambda inner: [inner])  # deeper than Python's recursion goes
DEEP_OBJECT = _deep(10_000, lambda inner: {"a": inner})
# what the schema is asked about instead (the validator's messages are reprs, which recursion ends)
SHALLOW = {id(DEEP_ARRAY): [[None]], id(DEEP_OBJECT): {"a": {"a": None}}}

MALFORMED: list[Any] = [
    2**64,
    -(2**63) - 1,
    10**400,
    1e300,
    -1e-300,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "0x10",
    " 12 ",
    _nested(200),
    DEEP_ARRAY,
    DEEP_OBJECT,
    {"__proto__": {"polluted": True}, "constructor": None},
    [[[[[]]]]],
    "\x00",
    "\ufeff",
]


LONG = "s" * 100_000  # a value an error message must not repeat at length

# what every method may carry besides its own params: where it finds files, which pi it follows
COMMON: dict[str, list[Any]] = {
    "environment": [
        *MALFORMED,
        {"cwd": "relative/dir"},
        {"cwd": "/a\x00b"},
        {"cwd": ""},
        {"home": 5},
        {"home": "~"},
        {"agentDir": []},
        {"cwd": None, "home": None, "agentDir": None},
        {"unknown": {"deep": [1]}},
    ],
    "pi": [*MALFORMED, "", "99.0.0", "latest", None],
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("malformed-params"))


@pytest.fixture(scope="module")
def live(world: World) -> Iterator[RawServer]:
    server = RawServer(world.root)
    server.initialize()
    yield server
    server.close()


@pytest.fixture(scope="module")
def handles(live: RawServer, world: World) -> dict[str, str]:
    open_one = lambda: live.call("pi/open", {"path": world.session_file})["session"]  # noqa: E731
    closed = open_one()
    live.call("pi/close", {"session": closed})
    return {"handle": open_one(), "spare": open_one(), "closed": closed}


def _variants(base: dict[str, Any], closed: str) -> list[dict[str, Any]]:
    """``base`` with each key set to each malformed value; with ``environment`` and ``pi`` (which
    not every method takes) malformed; with unknown keys; with ``session`` null and closed (for the
    methods on a session)."""
    variants = [{**base, key: value} for key in base for value in MALFORMED]
    variants.extend({**base, key: value} for key, values in COMMON.items() for value in values)
    variants.append({**base, "unknownKey": _nested(20), "": None, "a.b": [1]})
    variants.append({**base, "pi": LONG})
    if "session" in base:
        variants.extend({**base, "session": value} for value in (None, closed, LONG))
    return variants


def _shown(value: Any) -> str:
    return encode(value)[:300].decode("utf-8", "replace")


def _problem(reply: dict[str, Any], valid: bool, documented: set[int]) -> str | None:
    error = reply.get("error")
    if error is None:
        return None if valid else "a result for params the contract refuses"
    code, message = error.get("code"), error.get("message")
    if code == INTERNAL_ERROR or code not in documented:
        return f"error {code} is not one the contract documents for the method"
    if not isinstance(message, str) or not message.strip():
        return "an error without a message"
    if "Traceback" in message or 'File "' in message:
        return "a traceback in the message"
    if len(message) > 2000:
        return f"a message of {len(message)} characters"
    return None


@pytest.mark.parametrize("method", sorted(METHODS))
def test_malformed_params_get_a_documented_error(
    live: RawServer, world: World, handles: dict[str, str], method: str
):
    entry_id = SessionManager.open(world.session_file, read_only=True).get_entries()[0].id
    bases = base_params(world, handles["handle"], handles["spare"], entry_id)
    assert method in bases, f"add valid base params for {method} to test_hostile_requests.base_params"
    validator = _validator(method)
    documented = {e["code"] for e in METHODS[method].get("errors", [])} | {INVALID_PARAMS, UNKNOWN_SESSION}
    documented.discard(REQUEST_CANCELLED)  # nothing here is cancelled
    before = world.fingerprint()
    problems: list[str] = []
    sent = 0
    for base in bases[method]:
        for params in _variants(base, handles["closed"]):
            closed = params.get("session") == handles["closed"]
            valid = validator.is_valid({key: SHALLOW.get(id(value), value) for key, value in params.items()})
            if valid and not closed and method not in READS:
                continue  # a valid call of a writing method may write: not this test's business
            reply = live.request(method, params, timeout=30)
            sent += 1
            if not live.alive():
                pytest.fail(f"the server died on {method} {_shown(params)}:\n{live.stderr_text()[-3000:]}")
            problem = _problem(reply, valid and not closed, documented)
            if closed and problem is None and reply.get("error", {}).get("code") != UNKNOWN_SESSION:
                problem = "a closed session not answered -32001"
            if problem:
                problems.append(f"{problem}: {_shown(params)} -> {_shown(reply)}")
    # what the valid calls opened is let go; the handles the test holds stay
    for extra in live.call("pi/sessions", {}):
        if extra["session"] not in (handles["handle"], handles["spare"]):
            live.request("pi/close", {"session": extra["session"]})
    assert sent >= len(MALFORMED) // 2, f"{method}: only {sent} requests sent"
    assert live.garbage == []
    assert world.fingerprint() == before, "a session file (or another file) changed"
    assert not problems, f"{method}:\n" + "\n".join(problems[:15]) + f"\n({len(problems)} problems)"
