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
import fcntl
import inspect
import logging
import os
import stat
import sys
from collections.abc import Generator
from functools import partial
from typing import Any, BinaryIO

import attrs
import msgspec
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
            message = self._message_to_builtins(data)
            body = encode_json(message, displayed=_is_display_message(data, message))
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

    def notify_json(self, method: str, params: Any) -> None:
        """A notification whose params are plain JSON already (pygls would want typed params)."""
        self._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def send_error(self, message_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": message_id, "error": error})

    # -- reading ------------------------------------------------------------------------------

    def _open_big_document(self, body: bytes) -> bool:
        """A huge didOpen taken by the language features without decoding its text to a str."""
        return _open_fast_path(self, body)

    def dispatch_body(self, body: bytes) -> None:
        """Parse and dispatch one framed message."""
        if len(body) > _BIG_OPEN and self._open_big_document(body):
            return
        try:
            raw = parse_bytes(body)
        except Exception as error:
            self.send_error(None, PARSE_ERROR, f"Parse error: {error}")
            return
        if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
            message_id = raw.get("id") if isinstance(raw, dict) else None
            self.send_error(
                _valid_id(message_id), INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object"
            )
            return
        if "id" in raw and _valid_id(raw["id"]) is not raw["id"]:
            self.send_error(
                None, INVALID_REQUEST, "Invalid Request: an id must be a string, a number or null"
            )
            return
        if "method" in raw and not isinstance(raw["method"], str):
            self.send_error(raw.get("id"), INVALID_REQUEST, "Invalid Request: method must be a string")
            return
        if self._shutdown and "id" in raw and "method" in raw and raw["method"] != "exit":
            self.send_error(raw["id"], INVALID_REQUEST, "Invalid Request: the server is shutting down")
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
        """Run the handler eagerly up to its first suspension point.

        Most requests (an append, a read of a small session) never suspend: they are answered here,
        without a task (creating and scheduling one costs more than the work). A handler that does
        suspend continues as a task, registered for ``$/cancelRequest``. Order is kept: handlers still
        start in arrival order and take the session's lock before their first suspension point.
        """
        coro = handler(params)
        if not inspect.iscoroutine(coro):
            task = asyncio.ensure_future(coro)
        else:
            try:
                yielded = coro.send(None)
            except StopIteration as done:
                self._send_result(message_id, done.value)
                return
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                self._send_exception(message_id, exc)
                return
            task = asyncio.ensure_future(_continue(coro, yielded))
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
            self._send_result(message_id, task.result())
        else:
            self._send_exception(message_id, exc)

    def _send_result(self, message_id: Any, result: Any) -> None:
        if type(result) is msgspec.Raw and self.writer is not None:
            # the handler encoded its result already: frame the reply without another encoding pass
            try:
                head = _REPLY_HEAD % encode_json(message_id)
            except Exception:
                head = None
            if head is not None:
                length = len(head) + len(result) + 1
                self.writer.write(b"Content-Length: %d\r\n\r\n%s%s}" % (length, head, result))
                return
        self._send_data({"jsonrpc": "2.0", "id": message_id, "result": result})

    def _send_exception(self, message_id: Any, exc: BaseException) -> None:
        if isinstance(exc, asyncio.CancelledError):
            error = JsonRpcRequestCancelled(f'Request with id "{message_id}" is canceled')
            self.send_error(message_id, error.code, error.message)
        elif isinstance(exc, JsonRpcException):
            self.send_error(message_id, exc.code, exc.message, exc.data)
        else:
            logger.error("internal error answering %s", message_id, exc_info=exc)
            self.send_error(message_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


def _is_display_message(data: Any, message: Any) -> bool:
    """LSP traffic is text for an editor to show; pi/* replies and notifications carry session data
    (see wire.encode_json). Replies built as dicts answer pi/* requests; pygls builds its
    own message objects for the LSP requests it answers."""
    if type(data) is not dict:
        return True
    method = message.get("method")
    return isinstance(method, str) and not method.startswith("pi/")


_REPLY_HEAD = b'{"jsonrpc":"2.0","id":%s,"result":'


class _Continuation:
    """Awaitable that drives a coroutine which already ran up to ``yielded`` (its first suspension)."""

    __slots__ = ("_coro", "_yielded")

    def __init__(self, coro: Any, yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, yielded = self._coro, self._yielded
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as done:
                    return done.value


async def _continue(coro: Any, yielded: Any) -> Any:
    return await _Continuation(coro, yielded)


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


def _valid_id(value: Any) -> Any:
    """A request id as given if it is a scalar (string, number, null; a boolean is echoed too); None otherwise."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    return None


# A didOpen this large skips building the document text as a Python str: the text is handed to the
# language features as its raw JSON string token (they unescape it straight to UTF-8 bytes).
_BIG_OPEN = 1_000_000


class _OpenedDocument(msgspec.Struct):
    uri: str
    languageId: str  # noqa: N815 - the LSP field name
    version: int
    text: msgspec.Raw


class _OpenParams(msgspec.Struct):
    textDocument: _OpenedDocument  # noqa: N815 - the LSP field name


class _OpenNotification(msgspec.Struct):
    jsonrpc: str
    method: str
    params: _OpenParams


_decode_open = msgspec.json.Decoder(_OpenNotification).decode


def _open_fast_path(protocol: PiProtocol, body: bytes) -> bool:
    if b'"textDocument/didOpen"' not in body:
        return False
    features = getattr(protocol._server, "language_features", None)
    if features is None:
        return False
    try:
        message = _decode_open(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    if message.jsonrpc != "2.0" or message.method != "textDocument/didOpen":
        return False
    document = message.params.textDocument
    return bool(features.did_open_json(document.uri, document.languageId, document.version, document.text))


# Linux pipes hold 64 KiB by default: a 100 MB didOpen then crosses in ~1,600 reads, each a loop
# wakeup with Python in it. 1 MiB is the most an unprivileged process may ask for by default
# (/proc/sys/fs/pipe-max-size). Measured (bench_language.py, same hour): didOpen of 100 MB to the
# first diagnostics 1.3-1.7 s before, 0.84-1.16 s after. Editors that spawn us through libuv (VS
# Code, Neovim) hand us socket pairs, which this leaves alone.
PIPE_SIZE = 1 << 20


def widen_pipe(stream: Any, size: int = PIPE_SIZE) -> int | None:
    """Grow the kernel buffer of ``stream`` if it is a pipe; its size afterwards, or None if it is
    not a pipe (or the platform cannot tell). Never raises: a smaller pipe still works."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    try:
        fd = stream if isinstance(stream, int) else stream.fileno()
        if set_size is None or get_size is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        current = fcntl.fcntl(fd, get_size)
        if current < size:
            with contextlib.suppress(OSError):  # EPERM above pipe-max-size, EBUSY if too full
                current = fcntl.fcntl(fd, set_size, size)
        return int(current)
    except (OSError, ValueError, AttributeError):
        return None


async def _stdin_reader(stdin: BinaryIO) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    return reader


async def read_messages(reader: asyncio.StreamReader, protocol: PiProtocol) -> None:
    """The message loop: frames from ``reader`` dispatched to ``protocol`` until EOF.

    Reads whatever the pipe holds (up to 1 MiB) and dispatches every complete frame in it before
    reading again, so the replies to one chunk leave in one write. Handlers start in arrival order;
    requests on one session keep that order because each takes the session's (FIFO) lock before its
    first suspension point.

    Headers are lines ending in ``\n`` (or ``\r\n``); an empty line ends them once a valid
    ``Content-Length`` was seen (an empty line before that is skipped). EOF inside a frame ends the loop.
    """
    buffer = b""
    content_length = -1
    in_body = False
    while True:
        chunk = await reader.read(_READ_SIZE)
        if not chunk:
            return
        buffer = buffer + chunk if buffer else chunk
        start = 0
        end = len(buffer)
        while True:
            if in_body:
                stop = start + content_length
                if stop > end:
                    # a big body: read the rest in one go (no buffer regrowth per chunk)
                    try:
                        rest = await reader.readexactly(stop - end)
                    except asyncio.IncompleteReadError:
                        return
                    buffer = buffer[start:] + rest
                    start, stop = 0, content_length
                    end = len(buffer)
                body = buffer[start:stop] if start or stop != end else buffer
                start = stop
                in_body = False
                content_length = -1
                try:
                    protocol.dispatch_body(body)
                except Exception:  # no single message may end the loop
                    logger.exception("failed to dispatch a message")
                continue
            newline = buffer.find(b"\n", start)
            if newline < 0:
                break
            line = buffer[start : newline + 1]
            start = newline + 1
            if line == b"\r\n" or line == b"\n":
                if content_length >= 0:
                    in_body = True
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    content_length = int(value.strip())
                except ValueError:
                    content_length = -1
        buffer = buffer[start:]


_READ_SIZE = 1 << 20


async def serve_streams(
    protocol: PiProtocol, stdin: BinaryIO, stdout: BinaryIO, on_start: Any = None
) -> None:
    # Only the reading side: our replies leave in one blocking write each, and a 1 MiB stdout pipe
    # showed no gain for big replies (bench_sidecar's getTree pages, 2.6-3.4 s either way).
    widen_pipe(stdin)
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
