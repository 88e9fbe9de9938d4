"""Language-server requests with bad params, through the real server: the -32602 error says which
member is wrong (by its place in the params, as the client wrote it) and why, not only which
class of the protocol library could not be made."""

from __future__ import annotations

import pytest
from reliability_rpc import RawServer

INVALID_PARAMS = -32602
URI = "file:///tmp/pi-bad-params/2026-11-30T09-13-48-180Z_s.jsonl"


@pytest.mark.parametrize(
    ("method", "params", "told"),
    [
        (
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0}},
            ["`$.position`", "line", "-1"],
        ),
        (
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": "x", "character": 0}},
            ["`$.position.line`", "int"],
        ),
        ("textDocument/hover", {"position": {"line": 0, "character": 0}}, ["`$.textDocument`", "missing"]),
        (
            "textDocument/selectionRange",
            {"textDocument": {"uri": URI}, "positions": [{"line": 0, "character": 0}, {"line": 1}]},
            ["`$.positions[1].character`", "missing"],
        ),
    ],
)
def test_a_bad_member_is_named_with_what_is_wrong(
    server: RawServer, method: str, params: dict[str, object], told: list[str]
) -> None:
    reply = server.request(method, params, timeout=10)
    error = reply["error"]
    assert error["code"] == INVALID_PARAMS
    message = error["message"]
    assert message.startswith("Invalid params: ")
    for words in told:
        assert words in message, message
    assert "While structuring" not in message
