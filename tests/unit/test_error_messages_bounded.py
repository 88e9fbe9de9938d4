"""The words of an error reply that repeat a client's value (a request id, a method's name, the
body that is not JSON, an exception's text) keep its start and write its control characters
escaped, whichever part of the server answers: a client may send an id of a megabyte, and an
editor shows the message on one line. An unknown method is refused in one form, with or without
the language server (pygls' own refusal differs in its words and quotes the name whole)."""

from __future__ import annotations

import io
import json
import time
from typing import Any, Literal

import msgspec
import pytest
from in_process_server import InProcess

from pi_session_server.server.errors import MAX_DETAIL, MAX_SHOWN, bounded_validation_message
from pi_session_server.server.framing import encode_frame, read_frames
from pi_session_server.server.jsonrpc import Connection, FrameWriter
from pi_session_server.server.workers import Cancelled

METHOD_NOT_FOUND, PARSE_ERROR, INTERNAL_ERROR, REQUEST_CANCELLED = -32601, -32700, -32603, -32800


def replies(send: Any) -> list[dict[str, Any]]:
    """What a connection without a client wrote for ``send(connection)``."""
    stream = io.BytesIO()
    connection = Connection()
    connection.writer = FrameWriter(stream)
    send(connection)
    return [json.loads(body) for body in read_frames(io.BytesIO(stream.getvalue()))]  # type: ignore[arg-type]


def test_a_cancelled_request_s_id_is_quoted_by_its_start() -> None:
    long_id = "\x1b" + "i" * 1_000_000
    (reply,) = replies(lambda c: c.send_exception(long_id, Cancelled()))
    assert reply["id"] == long_id  # (the client matches the reply by it)
    assert reply["error"]["code"] == REQUEST_CANCELLED
    assert reply["error"]["message"] == 'Request "\\u001b' + "i" * (MAX_SHOWN - 1) + '"... was cancelled'
    (reply,) = replies(lambda c: c.send_exception(7, Cancelled()))
    assert reply["error"]["message"] == "Request 7 was cancelled"
    (reply,) = replies(lambda c: c.send_exception("a\nb", Cancelled()))
    assert reply["error"]["message"] == 'Request "a\\nb" was cancelled'


def test_an_internal_error_s_text_is_its_first_line_bounded_and_escaped() -> None:
    error = ValueError("bad \x1b[31m" + "v" * 100_000 + "\nsecond line")
    (reply,) = replies(lambda c: c.send_exception(1, error))
    message = reply["error"]["message"]
    assert reply["error"]["code"] == INTERNAL_ERROR
    assert message.startswith("Internal error: ValueError: bad \\x1b[31mvvv") and message.endswith("v...")
    assert len(message) < MAX_DETAIL + 60 and "\x1b" not in message and "second" not in message
    (reply,) = replies(lambda c: c.send_exception(1, KeyError("k")))
    assert reply["error"]["message"] == "Internal error: KeyError: 'k'"


def test_an_unknown_method_without_a_language_server_is_quoted_by_its_start_escaped() -> None:
    connection_replies = replies(
        lambda c: c.dispatch_body(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "pi/\x1b" + "m" * 5000}).encode()
        )
    )
    (reply,) = connection_replies
    assert reply["error"] == {
        "code": METHOD_NOT_FOUND,
        "message": "Method not found: pi/\\x1b" + "m" * (MAX_SHOWN - 4) + "...",
    }


@pytest.fixture(scope="module")
def server() -> Any:
    server = InProcess()
    yield server
    server.close()


def test_an_unknown_method_is_refused_in_one_form_before_and_after_initialize(server: InProcess) -> None:
    before = server.request("pi/nothing", {})
    assert before["error"] == {"code": METHOD_NOT_FOUND, "message": "Method not found: pi/nothing"}
    assert "result" in server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    server.notify("initialized", {})
    for method in ("textDocument/nothing", "pi/nothing", "$/nothing"):
        assert server.request(method, {})["error"] == {
            "code": METHOD_NOT_FOUND,
            "message": f"Method not found: {method}",
        }
    escaped = server.request("textDocument/\x1b\u2028", {})
    assert escaped["error"]["message"] == "Method not found: textDocument/\\x1b\\u2028"
    # the language server still answers what it knows
    assert "result" in server.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": "file:///nowhere/a.txt"},
            "position": {"line": 0, "character": 0},
        },
    )


def test_a_body_that_is_not_json_is_quoted_escaped(server: InProcess) -> None:
    server._client_out.write(encode_frame(b'{"a":\x1b"' + b"x" * 5000 + b'"}'))
    server._client_out.flush()
    deadline = time.monotonic() + 10
    while None not in server.replies:  # (a reply to a body without an id has none)
        assert time.monotonic() < deadline, "no reply"
        time.sleep(0.01)
    reply = server.replies.pop(None)
    assert reply["error"]["code"] == PARSE_ERROR
    message = reply["error"]["message"]
    assert message.startswith("Parse error: Unexpected token '\\x1b'") and "\x1b" not in message, message
    assert len(message) < MAX_DETAIL + 40


def _json_quoted(message: str, before: str, after: str) -> Any:
    """The JSON string a message quotes between ``before`` and ``after``, read back as JSON."""
    assert message.startswith(before) and message.endswith(after), message
    return json.loads(message[len(before) : len(message) - len(after)])


def test_a_quoted_id_is_a_json_string_a_front_end_reads_back() -> None:
    message_id = 'it\'s "x" \\ \x1b\x85\u2028é'
    (reply,) = replies(lambda c: c.send_exception(message_id, Cancelled()))
    message = reply["error"]["message"]
    assert _json_quoted(message, "Request ", " was cancelled") == message_id
    assert message == 'Request "it\'s \\"x\\" \\\\ \\u001b\\u0085\\u2028é" was cancelled'


def test_a_quoted_value_of_the_params_is_a_json_string(server: InProcess) -> None:
    kind = 'no "kind"\n\x1b'
    reply = server.request("pi/append", {"session": "s", "kind": kind})
    message = reply["error"]["message"]
    assert _json_quoted(message.split(" - at ")[0], "Invalid params: Invalid value ", "") == kind
    long_kind = "\x1b" + "k" * 5000
    message = server.request("pi/append", {"session": "s", "kind": long_kind})["error"]["message"]
    assert message.startswith('Invalid params: Invalid value "\\u001bkkk') and '"... - at `$.kind`' in message
    assert len(message.split(" - at ")[0]) <= MAX_SHOWN + 50


def test_msgspec_s_refusal_quotes_the_value_as_the_server_s_own_messages_do(server: InProcess) -> None:
    """msgspec quotes an enum's value as a Python literal (``'x'``, ``"it's"``, ``\\x1b``): the
    wire says it as the server's own refusals do, a JSON string a front end reads back."""
    value = 'it\'s "x" \\ \x1b\x85\u2028é😀'
    message = server.request("pi/getTree", {"session": "s", "filter": value})["error"]["message"]
    assert _json_quoted(message, "Invalid params: Invalid enum value ", " - at `$.filter`") == value
    assert message.endswith('"it\'s \\"x\\" \\\\ \\u001b\\u0085\\u2028é😀" - at `$.filter`')
    for plain in ("x", "it's"):  # msgspec quoted these '...' and "..."
        message = server.request("pi/getTree", {"session": "s", "filter": plain})["error"]["message"]
        assert message == f"Invalid params: Invalid enum value {json.dumps(plain)} - at `$.filter`"
    long_value = "'" + "\x07" * 5000  # escaped by msgspec, cut after as many characters as shown
    message = server.request("pi/getTree", {"session": "s", "filter": long_value})["error"]["message"]
    shown = message.removeprefix("Invalid params: Invalid enum value ").removesuffix("... - at `$.filter`")
    assert json.loads(shown) == long_value[:MAX_SHOWN]
    message = server.request("pi/getTree", {"session": "s", "filter": 7})["error"]["message"]
    assert message == "Invalid params: Expected `str`, got `int` - at `$.filter`"  # no value shown


def test_msgspec_s_other_quotings_read_as_the_server_s_own() -> None:
    class Strict(msgspec.Struct, forbid_unknown_fields=True):
        kind: Literal["a", 2] = "a"

    def refusal(value: Any) -> str:
        with pytest.raises(msgspec.ValidationError) as raised:
            msgspec.convert(value, Strict)
        return bounded_validation_message(str(raised.value))

    name = 'a `b` "c"\n\x1b'
    assert refusal({name: 1}) == f"Object contains unknown field {json.dumps(name)}"
    assert refusal({"kind": 3}) == "Invalid enum value 3 - at `$.kind`"  # no string: as msgspec writes it


def test_pi_s_message_quoting_an_id_shows_its_control_characters_escaped(server: InProcess) -> None:
    session = server.request("pi/inMemory", {})["result"]["session"]
    reply = server.request("pi/branch", {"session": session, "entryId": "\x1b[31mred\r\n\u2028"})
    assert reply["error"]["code"] == -32002
    assert reply["error"]["message"] == "Entry \\x1b[31mred\\x0d\\x0a\\u2028 not found"
    long_id = "\x07" + "e" * 5000
    reply = server.request("pi/branch", {"session": session, "entryId": long_id})
    assert reply["error"]["message"] == "Entry \\x07" + "e" * (MAX_SHOWN - 1) + "... not found"
