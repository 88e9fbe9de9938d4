"""LSP base protocol on stdio: Content-Length framing, JS-compatible parsing, fast replies.

pygls' own stdio loop hops to a thread for every header line, parses with Python's ``json``
(recursive: a deeply nested pi message would raise, and ``NaN`` tokens would be accepted), turns
the params of custom methods into namedtuples and serializes replies through cattrs. This module
replaces those steps for the whole connection:

* reading uses an asyncio ``StreamReader`` on stdin;
* bodies are parsed like ``JSON.parse`` (the library's parser: any depth), and a body that is not
  JSON gets a ``-32700`` reply instead of silence;
* ``pi/*`` requests go straight to their handler with plain-JSON params; LSP messages still take
  pygls' path (typed params, built-in lifecycle handling);
* replies are encoded with msgspec and written in batches (one syscall per loop iteration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from functools import partial
from typing import Any, BinaryIO

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.protocol.language_server import lsp_method

from pi_session_server.format.jsjson import parse_bytes

from .wire import encode_json

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class PiProtocol(LanguageServerProtocol):
    """The LSP protocol with a direct path for custom requests and a batching writer."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        apply = getattr(self._server, "apply_initialization_options", None)
        if callable(apply):
            apply(params.initialization_options)
        result = yield from super().lsp_initialize(params)
        return result

    # -- writing ------------------------------------------------------------------------------

    def _message_to_builtins(self, data: Any) -> Any:
        t = type(data)
        if t is dict:
            return data
        if t is JsonRPCResponseMessage:
            return {"jsonrpc": data.jsonrpc, "id": data.id, "result": self._payload(data.result)}
        if t is JsonRPCNotification:
            message = {"jsonrpc": data.jsonrpc, "method": data.method}
            if data.params is not None:
                message["params"] = self._payload(data.params)
            return message
        if t is JsonRPCRequestMessage:
            return {
                "jsonrpc": data.jsonrpc,
                "id": data.id,
                "method": data.method,
                "params": self._payload(data.params),
            }
        return self._converter.unstructure(data)

    def _payload(self, value: Any) -> Any:
        if attrs.has(type(value)):
            return self._converter.unstructure(value)
        return value

    def _send_data(self, data: Any) -> None:
        if not data or self.writer is None:
            return
        try:
            body = encode_json(self._message_to_builtins(data))
        except Exception as error:  # never let a reply kill the loop
            logger.exception("cannot serialize a message")
            message_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
            if message_id is None:
                return
            body = encode_json(
                {
                    "jsonrpc": "2.0",
                    "id": message_id,
                    "error": {"code": INTERNAL_ERROR, "message": f"cannot serialize the result: {error}"},
                }
            )
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_error(self, message_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": message_id, "error": error})

    # -- reading ------------------------------------------------------------------------------

    def dispatch_body(self, body: bytes) -> None:
        """Parse and dispatch one framed message."""
        try:
            raw = parse_bytes(body)
        except Exception as error:
            self.send_error(None, PARSE_ERROR, f"Parse error: {error}")
            return
        if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
            message_id = raw.get("id") if isinstance(raw, dict) else None
            self.send_error(message_id, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
            return
        method = raw.get("method")
        if isinstance(method, str) and self.get_message_type(method) is None:
            handler = self.fm.features.get(method)
            if "id" in raw:
                if handler is not None and not self._shutdown:
                    self._start_request(raw["id"], handler, raw.get("params"))
                    return
            elif handler is not None:
                self._start_notification(handler, raw.get("params"))
                return
            elif method == "$/cancelRequest":
                pass  # typed by lsprotocol; never reaches here
        try:
            message = self._structure(raw)
        except Exception as error:
            if "id" in raw and "method" in raw:
                self.send_error(raw.get("id"), INVALID_PARAMS, f"Invalid params: {error}")
            else:
                logger.warning("dropping malformed message: %s", error)
            return
        try:
            self.handle_message(message)
        except Exception:
            logger.exception("unable to handle message")

    def _structure(self, raw: dict[str, Any]) -> Any:
        """Custom methods keep plain-JSON params (pygls would make namedtuples of them)."""
        method = raw.get("method")
        if isinstance(method, str) and self.get_message_type(method) is None:
            params = raw.get("params")
            if "id" in raw:
                return JsonRPCRequestMessage(id=raw["id"], method=method, jsonrpc="2.0", params=params)
            return JsonRPCNotification(method=method, jsonrpc="2.0", params=params)
        return self.structure_message(raw)

    def _start_request(self, message_id: Any, handler: Any, params: Any) -> None:
        task = asyncio.ensure_future(handler(params))
        self._request_futures[message_id] = task  # $/cancelRequest finds it here
        task.add_done_callback(partial(self._reply, message_id=message_id))

    def _start_notification(self, handler: Any, params: Any) -> None:
        task = asyncio.ensure_future(handler(params))
        task.add_done_callback(_log_failure)

    def _reply(self, task: asyncio.Future[Any], *, message_id: Any) -> None:
        self._request_futures.pop(message_id, None)
        if task.cancelled():
            error = JsonRpcRequestCancelled(f'Request with id "{message_id}" is canceled')
            self.send_error(message_id, error.code, error.message)
            return
        exc = task.exception()
        if exc is None:
            self._send_data({"jsonrpc": "2.0", "id": message_id, "result": task.result()})
        elif isinstance(exc, JsonRpcException):
            self.send_error(message_id, exc.code, exc.message, exc.data)
        else:
            logger.error("internal error answering %s", message_id, exc_info=exc)
            self.send_error(message_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("notification handler failed", exc_info=task.exception())


class BatchingWriter:
    """Collects frames and writes them in one go at the end of the current loop iteration."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self._pending: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes) -> None:
        self._pending.append(data)
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.flush()
            self._stream.close()


async def _stdin_reader(stdin: BinaryIO) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    return reader


async def read_messages(reader: asyncio.StreamReader, protocol: PiProtocol) -> None:
    """The message loop: frames from ``reader`` dispatched to ``protocol`` until EOF.

    Handlers run as tasks in arrival order; requests on one session keep that order because each
    takes the session's (FIFO) lock before its first suspension point.
    """
    while True:
        content_length = -1
        while True:
            line = await reader.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                if content_length >= 0:
                    break
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    content_length = int(value.strip())
                except ValueError:
                    content_length = -1
        try:
            body = await reader.readexactly(content_length)
        except asyncio.IncompleteReadError:
            return
        protocol.dispatch_body(body)


async def serve_streams(
    protocol: PiProtocol, stdin: BinaryIO, stdout: BinaryIO, on_start: Any = None
) -> None:
    writer = BatchingWriter(stdout)
    protocol.set_writer(writer)
    reader = await _stdin_reader(stdin)
    if on_start is not None:
        on_start()
    try:
        await read_messages(reader, protocol)
    finally:
        writer.flush()


def run_stdio(server: Any) -> None:
    """Serve ``server`` (a pygls ``LanguageServer`` using :class:`PiProtocol`) on stdin/stdout."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    # nothing else may write to the protocol channel
    sys.stdout = sys.stderr
    try:
        asyncio.run(serve_streams(server.protocol, stdin, stdout, getattr(server, "start_background", None)))
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        server.shutdown()
