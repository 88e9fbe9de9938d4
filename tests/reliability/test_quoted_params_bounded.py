"""An error about a request's params or method quotes the client's value: a value of 5,000
characters made a message of 5,000 characters. Every such message keeps its words and the start of
the value (errors.MAX_SHOWN), as pi's messages quoting an id do (test_quoted_ids_bounded.py)."""

from __future__ import annotations

from typing import Any

from reliability_rpc import RawServer

from pi_session_server.server.errors import MAX_SHOWN

LONG = 5000


def error_of(reply: dict[str, Any]) -> tuple[int | None, str]:
    error = reply.get("error", {})
    return error.get("code"), error.get("message", "")


def test_an_invalid_enum_value_is_quoted_by_its_start(server: RawServer):
    code, message = error_of(server.request("pi/getTree", {"session": "s", "filter": "f" * LONG}))
    assert code == -32602, message[:200]
    assert message.startswith("Invalid params: Invalid enum value ") and message.endswith(
        " - at `$.filter`"
    ), message[:200]
    assert 'Invalid enum value "ffff' in message and len(message) <= MAX_SHOWN + 60, len(message)


def test_an_unknown_method_is_quoted_by_its_start(server: RawServer):
    code, message = error_of(server.request("pi/" + "m" * LONG, {}))
    assert code == -32601, message[:200]
    assert message.startswith("Method not found: pi/mmmm"), message[:200]
    assert len(message) <= MAX_SHOWN + 40, len(message)


def test_an_unknown_command_is_quoted_by_its_start(server: RawServer):
    server.initialize()
    code, message = error_of(server.request("workspace/executeCommand", {"command": "c" * LONG}))
    assert code == -32602, message[:200]
    assert message.startswith('Invalid params: no command "cccc'), message[:200]
    assert len(message) <= MAX_SHOWN + 40, len(message)
