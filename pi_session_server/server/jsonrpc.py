"""The server's one seam to pygls: the stdio connection, and the few LSP methods answered otherwise.

pygls 2.1 reads stdin on a thread (one hop per header line), parses with the stdlib ``json``
(recursive, and it accepts ``NaN``), does not answer a body that is not JSON, serializes replies
on the event loop, keeps a ``TextDocument`` that rebuilds its whole text on every change, and
leaves an entry in its table of pending requests for every notification or nested handler it runs
as a generator or coroutine (its text-sync handlers among them). This module owns the stream and
keeps pygls for what it does well, through its public API only (tested against the version
``pyproject.toml`` pins, ``pygls~=2.1``):

* **reading**: asyncio, frames cut by :mod:`framing`, each body parsed like ``JSON.parse``
  (:func:`~pi_session_server.format.jsjson.parse_bytes`: any depth). A body that is not JSON is
  answered ``-32700``, one that is not a JSON-RPC 2.0 message ``-32600``.
* **routing**: what the server answers itself is routed here: its own methods (``pi/*``, plain
  JSON; :meth:`Connection.route`), the LSP features of session documents and their text
  synchronisation (typed by lsprotocol; :meth:`Connection.lsp_route`) and its commands
  (:meth:`Connection.command`). A handler queues a job on a worker, which encodes the result and
  writes the reply: the loop never waits for one, and requests on one document or session keep
  their order because each is queued as it is read. pygls keeps the lifecycle (``initialize`` and
  the capabilities it announces from the features registered with it, ``shutdown``, ``exit``),
  replies to its own requests to the client, and the notifications nobody else knows: those
  messages are structured and handled by it (``structure_message`` / ``handle_message``), and it
  writes through the same writer (``set_writer``). A request for a method it has no handler for is
  refused here, in the words of the server's other refusals (:func:`errors.method_not_found`). A
  big ``textDocument/didOpen`` may be taken before it is parsed (:meth:`Connection.raw_route`).
* **writing**: :class:`~.frame_writer.FrameWriter`, safe from any thread: the loop's frames are
  queued together at the end of its iteration, a worker's at once (a reply does not wait for the
  loop), and a thread of the writer's own writes them: neither the loop nor a worker waits for the
  client to read. ``exit`` and the end of the input write what is queued before the process ends.
* **cancelling**: ``$/cancelRequest`` for one of our requests cancels its job; others go to pygls.
* **starting**: pygls and lsprotocol take most of a second to import, which a client of the ``pi/*``
  methods alone (a tree view, a script) never needs: pygls is made when the first message for it
  comes (:class:`LanguageServerPart`), its imports on a thread of their own; ``pi/*`` requests are
  answered meanwhile, and what came for pygls waits for it, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import inspect
import logging
import os
import re
import selectors
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, cast

import msgspec

from pi_session_server.format.jsjson import encode_value, parse_bytes

from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_SHOWN,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RpcError,
    method_not_found,
    quoted_start,
    shown_detail,
    shown_start,
)
from .frame_writer import DRAIN_SECONDS, FrameWriter
from .framing import FrameDecoder, FramingError
from .raw_parts import RawParts
from .workers import Cancelled, Job

logger = logging.getLogger(__name__)

# the LSP methods the connection looks at itself (lsprotocol's names, without importing it)
INITIALIZED = "initialized"
SET_TRACE = "$/setTrace"
SHUTDOWN = "shutdown"
EXIT = "exit"
CANCEL_REQUEST = "$/cancelRequest"
WORKSPACE_EXECUTE_COMMAND = "workspace/executeCommand"
WINDOW_SHOW_MESSAGE = "window/showMessage"
MESSAGE_TYPE_WARNING = 2  # lsprotocol MessageType.Warning
_TRACE_VALUES = frozenset({"off", "messages", "verbose"})

#: bodies at least this big are offered to a raw route before they are parsed
BIG_BODY = 1_000_000

Handler = Callable[[Any], Any]


# Linux pipes hold 64 KiB by default: a 100 MB didOpen then crosses in ~1,600 reads, each a loop
# wakeup with Python in it. 1 MiB is the most an unprivileged process may ask for by default
# (/proc/sys/fs/pipe-max-size); bench/RESULTS.md has the effect on a big didOpen. Editors that
# spawn us through libuv (VS Code, Neovim) hand us socket pairs, which this leaves alone.
PIPE_SIZE = 1 << 20
# what one read of a stdin the loop cannot watch (a file) asks for
READ_CHUNK = 1 << 20


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


def _request_key(message_id: Any) -> tuple[bool, Any]:
    """A request id as a dict key: the string "1" and the number 1 are different ids."""
    return (type(message_id) is str, message_id)


_encode_plain = msgspec.json.Encoder().encode


def _encoded_id(message_id: Any) -> bytes:
    """A request id as JSON (a string or a safe integer, nearly always: msgspec writes those as
    JavaScript does)."""
    if type(message_id) is int and -(2**53) <= message_id <= 2**53:
        return b"%d" % message_id
    if type(message_id) is str:
        with contextlib.suppress(UnicodeEncodeError):
            return _encode_plain(message_id)
    return encode_value(message_id)


def _shown_id(message_id: Any) -> str:
    """A request id in an error message: a string quoted as the errors quote a client's string
    (its start), any other id as its JSON."""
    if type(message_id) is str:
        return quoted_start(message_id)
    return shown_start(_encoded_id(message_id).decode())


def _scalar_id(value: Any) -> Any:
    """A request id as given if it is a scalar (string, number, null; a boolean is echoed too), else None."""
    return value if value is None or isinstance(value, (str, int, float)) else None


class LanguageServerPart:
    """How the connection gets pygls when a message needs it: :meth:`prepare` imports what it takes
    (on a thread of its own: importing lsprotocol is the longest part of the server's start),
    :meth:`create` makes the language server on the event loop's thread and returns its protocol."""

    def prepare(self) -> None:
        raise NotImplementedError

    def create(self) -> Any:
        raise NotImplementedError


class Connection:
    """One client on stdio: reads and routes messages, writes replies and notifications.

    pygls is made on demand (``lsp``): the ``pi/*`` methods never wait for it. The first message
    routed to pygls (``initialize``, as a rule) starts it; messages for it that arrive while it is
    being made wait, in order, and go to it once it is there."""

    def __init__(self, lsp: LanguageServerPart | None = None) -> None:
        self.protocol: Any = None  # pygls' LanguageServerProtocol, once made
        self._lsp = lsp
        self._for_lsp: list[dict[str, Any]] | None = None  # waiting while pygls is made
        self._trace: str | None = None  # a $/setTrace before pygls was made
        self.routes: dict[str, Handler] = {}
        self._params_types: dict[str, type] = {}
        self._converter: Any = None  # lsprotocol's, made with the first typed route
        self._raw_routes: dict[str, Callable[[bytes], bool]] = {}
        self._commands: dict[str, Handler] = {}
        self._pending: dict[tuple[bool, Any], Job[Any] | asyncio.Future[Any]] = {}
        self._last_answered = time.monotonic()  # when a request of ours last left _pending
        self.writer: FrameWriter | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._shutdown: asyncio.Future[None] | None = None  # answering ``shutdown``, once it came
        # two notifications pygls handles as generators, each leaving an entry behind in its table
        # of pending requests: what they do is done here
        self.routes[INITIALIZED] = lambda _params: None
        self.routes[SET_TRACE] = self._set_trace

    @property
    def shutting_down(self) -> bool:
        """``shutdown`` came: requests are refused from now on, and ``exit`` ends with status 0."""
        return self._shutdown is not None

    @property
    def quiet_seconds(self) -> float:
        """Seconds since a request of ours was last answered, 0 while one is being answered (from
        any thread). A time, not a flag: a request that came and went between two looks is seen."""
        if self._pending:
            return 0.0
        return max(0.0, time.monotonic() - self._last_answered)

    def _answered(self, key: tuple[bool, Any], outcome: Job[Any] | asyncio.Future[Any]) -> None:
        """The request ``key`` leaves the in-flight set: stamped first, so a look from another
        thread sees it in flight or just answered, never quiet since the one before."""
        self._last_answered = time.monotonic()
        if self._pending.get(key) is outcome:
            del self._pending[key]

    def _set_trace(self, params: Any) -> None:
        value = params.get("value") if isinstance(params, dict) else None
        if value in _TRACE_VALUES:
            if self.protocol is None:
                self._trace = value
            else:
                self._apply_trace(value)

    def _apply_trace(self, value: str) -> None:
        from lsprotocol import types

        self.protocol.trace = types.TraceValue(value)

    # -- registering --------------------------------------------------------------------------

    def route(self, method: str) -> Callable[[Handler], Handler]:
        """Register the handler of one of our methods: ``handler(params)`` gets the params as plain
        JSON and returns the result (``msgspec.Raw`` or ``RawParts`` for JSON encoded already, or a
        JSON value), a :class:`~pi_session_server.server.workers.Job` or an awaitable that gives it.
        A :class:`RpcError` (or pygls' ``JsonRpcException``) it raises is the error reply."""

        def register(handler: Handler) -> Handler:
            self.routes[method] = handler
            return handler

        return register

    def lsp_route(self, server: Any, method: str, options: Any = None) -> Callable[[Handler], Handler]:
        """Register the handler of an LSP method the server answers itself: it gets the params typed
        (lsprotocol; -32602 when they do not fit) and returns what :meth:`route` handlers return.
        ``server`` (pygls' ``LanguageServer``) is told about the method too, so that ``initialize``
        announces it (with ``options``), but never runs it: the connection routes the method
        before pygls sees it. (Registered while pygls is made: see :class:`LanguageServerPart`.)"""
        from lsprotocol import converters, types

        if self._converter is None:
            self._converter = converters.get_converter()

        def register(handler: Handler) -> Handler:
            self.routes[method] = handler
            params_type: Any = types.METHOD_TO_TYPES[method][2]
            if params_type is not None:
                self._params_types[method] = params_type
            server.feature(method, options)(_routed_by_the_connection)
            return handler

        return register

    def command(self, server: Any, name: str) -> Callable[[Handler], Handler]:
        """Register a ``workspace/executeCommand`` command: ``handler(arguments)`` (the arguments as
        plain JSON). Announced by pygls (``server``), run by the connection."""

        def register(handler: Handler) -> Handler:
            self._commands[name] = handler
            server.command(name)(_routed_by_the_connection)
            if WORKSPACE_EXECUTE_COMMAND not in self.routes:
                self.routes[WORKSPACE_EXECUTE_COMMAND] = self._execute_command
            return handler

        return register

    def _execute_command(self, params: Any) -> Any:
        if not isinstance(params, dict) or not isinstance(params.get("command"), str):
            raise RpcError(INVALID_PARAMS, "Invalid params: `command` must be a string")
        handler = self._commands.get(params["command"])
        if handler is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: no command {quoted_start(params['command'])}")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, list):
            raise RpcError(INVALID_PARAMS, "Invalid params: `arguments` must be an array")
        return handler(arguments or [])

    def _typed(self, method: str, params: Any) -> Any:
        params_type = self._params_types.get(method)
        if params_type is None:
            return params
        import cattrs

        try:
            return self._converter.structure(params, params_type)
        except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError) as error:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {_params_problem(error)}") from None

    def raw_route(self, method: str, take: Callable[[bytes], bool]) -> None:
        """Offer big bodies naming ``method`` to ``take(body)`` before parsing them; it returns
        whether it handled the message (else the message takes the usual path)."""
        self._raw_routes[method] = take

    # -- writing ------------------------------------------------------------------------------

    def _send(self, message: Any, displayed: bool = False) -> None:
        if self.writer is None:
            return
        try:
            body = encode_value(message, displayed=displayed)
        except Exception:  # never let one message kill the connection
            logger.exception("cannot encode a message")
            return
        self.writer.write_frame(body)

    def notify(self, method: str, params: Any, *, displayed: bool = False) -> None:
        """A notification with plain-JSON params, from any thread (``displayed``: text for an
        editor to show, see ``encode_value``)."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params}, displayed)

    def send_result(self, message_id: Any, result: Any) -> None:
        if self.writer is None:
            return
        try:
            if type(result) is RawParts:  # (its parts go into the frame as they are: not joined)
                parts = result.parts
            else:
                parts = (result if type(result) is msgspec.Raw else encode_value(result),)
        except Exception as error:
            logger.exception("cannot encode the result of %r", message_id)
            self.send_error(
                message_id,
                INTERNAL_ERROR,
                f"Internal error: cannot encode the result: {shown_detail(str(error))}",
            )
            return
        head = b'{"jsonrpc":"2.0","id":%s,"result":' % _encoded_id(message_id)
        self.writer.write_frame(head, *cast("Sequence[bytes]", parts), b"}")  # (any buffer is written)

    def send_error(self, message_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send({"jsonrpc": "2.0", "id": message_id, "error": error})

    def send_exception(self, message_id: Any, error: BaseException) -> None:
        """The error reply for what a handler raised (never a traceback: those go to the log)."""
        if isinstance(error, (Cancelled, asyncio.CancelledError)):
            self.send_error(message_id, REQUEST_CANCELLED, f"Request {_shown_id(message_id)} was cancelled")
        elif isinstance(error, RpcError) or _is_pygls_error(error):
            self.send_error(message_id, error.code, error.message, error.data)  # type: ignore[attr-defined]
        else:
            logger.error("internal error answering %r", message_id, exc_info=error)
            self.send_error(
                message_id,
                INTERNAL_ERROR,
                f"Internal error: {type(error).__name__}: {shown_detail(str(error))}",
            )

    # -- reading ------------------------------------------------------------------------------

    async def serve(
        self, stdin: BinaryIO, stdout: BinaryIO, on_start: Callable[[], Any] | None = None
    ) -> None:
        """Read and dispatch messages from ``stdin`` until it ends; replies go to ``stdout``."""
        loop = self.loop = asyncio.get_running_loop()
        widen_pipe(stdin)  # the reading side only: replies leave in one write each anyway
        self.writer = FrameWriter(stdout, loop)
        if self.protocol is not None:
            self.protocol.set_writer(self.writer, include_headers=True)
        closed: asyncio.Future[None] = loop.create_future()
        protocol = _FrameProtocol(self.dispatch_frames, closed)
        transport: asyncio.BaseTransport | None = None
        if loop_can_watch(stdin.fileno()):
            transport, _ = await loop.connect_read_pipe(lambda: protocol, stdin)
        else:  # a file or /dev/null (`serve < requests`): read on a thread, to its end
            read_on_thread(stdin.fileno(), protocol, loop)
        if on_start is not None:
            on_start()
        try:
            await closed
            await self.drain()  # the client closed its end: the requests it sent still get done
            if self._shutdown is not None:  # and the shutdown it sent is answered (then its exit)
                await asyncio.wait([self._shutdown])
        finally:
            if transport is not None:  # (closed by itself at the end of input; not when cancelled)
                transport.close()
            self.writer.finish()  # the loop's last act: the replies queued reach a client that reads

    async def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Wait until every request we were sent is answered (or ``timeout`` seconds: a job stuck
        on another process's lock does not keep the process forever)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (self._pending or self._for_lsp is not None) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)

    def dispatch_frames(self, frames: list[bytes | FramingError]) -> None:
        """Dispatch the messages the framing completed, in order."""
        for item in frames:
            if isinstance(item, FramingError):
                self.send_error(None, PARSE_ERROR, f"Parse error: {shown_detail(str(item))}")
                continue
            try:
                self.dispatch_body(item)
            except Exception:  # no single message may end the loop
                logger.exception("failed to dispatch a message")

    def dispatch_body(self, body: bytes) -> None:
        """Parse and dispatch one message: to its route, else to pygls."""
        if len(body) >= BIG_BODY and self._take_raw(body):
            return
        try:
            message = parse_bytes(body)
        except Exception as error:  # noqa: BLE001 - the wire boundary: any unreadable body is answered -32700
            self.send_error(None, PARSE_ERROR, f"Parse error: {shown_detail(str(error))}")
            return
        # (only the language server sends requests of its own, which a response answers)
        problem = _envelope_problem(message, awaits_responses=self.protocol is not None)
        if problem is not None:
            message_id = message.get("id") if isinstance(message, dict) else None
            self.send_error(_scalar_id(message_id), INVALID_REQUEST, f"Invalid Request: {problem}")
            return
        method = message.get("method")
        is_request = "id" in message
        if is_request and method is not None and self.shutting_down and method != EXIT:
            self.send_error(message["id"], INVALID_REQUEST, "Invalid Request: the server is shutting down")
            return
        if is_request and method == SHUTDOWN:
            # answered once the requests sent before it are answered
            self._shutdown = asyncio.ensure_future(self._shut_down_after(message))
            self._shutdown.add_done_callback(_log_failure)
            return
        if method == EXIT and not is_request:
            self._exit_once_shut_down(message)
            return
        handler = self.routes.get(method) if method is not None else None
        if handler is not None:
            if is_request:
                self._start(message["id"], method, handler, message.get("params"))
            else:
                self._start_notification(method, handler, message.get("params"))
        elif not (method == CANCEL_REQUEST and self._cancel(message.get("params"))):
            self._to_pygls(message)

    def _take_raw(self, body: bytes) -> bool:
        for method, take in self._raw_routes.items():
            if b'"%s"' % method.encode() in body:
                try:
                    return take(body)
                except Exception:
                    logger.exception("the raw route of %s failed; the message takes the usual path", method)
        return False

    async def _shut_down_after(self, message: dict[str, Any]) -> None:
        """Answer ``shutdown`` once the requests before it are: by pygls when it runs; when it never
        started (a client of the ``pi/*`` methods alone), here, without importing it to say null."""
        await self.drain()
        if self._without_lsp():
            self.send_result(message["id"], None)
            return
        self._to_pygls(message)

    def _exit_once_shut_down(self, message: dict[str, Any]) -> None:
        """``exit``, after the answer to a ``shutdown`` sent before it: a client that sent ``exit``
        right behind it (a script, or both in one write) still gets the answers to the requests
        before them, then ``shutdown``'s, which waits for them no longer than drain() does."""
        if self._shutdown is not None and not self._shutdown.done():
            self._shutdown.add_done_callback(lambda _done: self._dispatch_exit(message))
        else:
            self._dispatch_exit(message)

    def _dispatch_exit(self, message: dict[str, Any]) -> None:
        """``exit``, once the ``shutdown`` before it was answered: here without pygls, else by it."""
        if self._without_lsp():
            self._exit()
        else:
            self._to_pygls(message)

    def _without_lsp(self) -> bool:
        """pygls was never made, nor is being made (it never will be once this is true at
        ``shutdown``: the messages that follow are refused or end the process)."""
        return self.protocol is None and self._for_lsp is None

    def _exit(self) -> None:
        """``exit`` without pygls, as pygls ends the process: status 0 once ``shutdown`` came, else 1."""
        if self.writer is not None:
            self.writer.close()
        sys.exit(0 if self.shutting_down else 1)

    def _to_pygls(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if "id" in message and type(method) is str and not self._lsp_may_answer(method):
            self.send_error(message["id"], METHOD_NOT_FOUND, method_not_found(method))
            return
        if self.protocol is None:
            if self._for_lsp is not None:  # being made
                self._for_lsp.append(message)
                return
            if self._lsp is None:
                logger.warning("no language server: %s dropped", message.get("method", "a reply"))
                if "id" in message and "method" in message:
                    self.send_error(message["id"], METHOD_NOT_FOUND, method_not_found(message["method"]))
                return
            self._for_lsp = [message]
            self._start_lsp(self._lsp)
            return
        from pygls.exceptions import JsonRpcException

        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as error:
            if "id" in message and "method" in message:
                self.send_error(
                    message["id"], error.code, f"Invalid params: {shown_detail(error.message)}", error.data
                )
            elif "id" in message:
                # a reply we cannot read still ends the request it answers: its waiter gets an error
                # instead of waiting forever (and keeping shutdown waiting for it)
                logger.warning("a malformed reply to request %r: %s", message["id"], error.message)
                self._to_pygls(_error_reply(message["id"], error))
            else:
                logger.warning("dropping a malformed %s message", message.get("method", "reply"))
            return
        self.protocol.handle_message(structured)

    def _lsp_may_answer(self, method: str) -> bool:
        """Whether pygls has a handler for ``method`` (its own, or a feature registered with it);
        until it is made, whether the name could be one's. A request for any other method is
        refused here, in the words every other path refuses it with (pygls' own differ, and quote
        the name whole)."""
        if self.protocol is None:
            return len(method) <= MAX_SHOWN  # (no method has a name this long)
        features = self.protocol.fm
        return method in features.builtin_features or method in features.features

    def _start_lsp(self, lsp: LanguageServerPart) -> None:
        """Import pygls on a thread, then make it on the loop and hand it what waited for it."""
        loop = asyncio.get_running_loop()

        def prepare() -> None:
            try:
                lsp.prepare()
            except BaseException as error:  # noqa: BLE001 - reported on the loop, to those waiting
                loop.call_soon_threadsafe(self._lsp_ready, lsp, error)
            else:
                loop.call_soon_threadsafe(self._lsp_ready, lsp, None)

        threading.Thread(target=prepare, name="pi-lsp-import", daemon=True).start()

    def _lsp_ready(self, lsp: LanguageServerPart, failure: BaseException | None) -> None:
        waiting, self._for_lsp = self._for_lsp or [], None
        if failure is None:
            failure = self._install_lsp(lsp)
        if failure is not None:
            logger.error("the language server could not start", exc_info=failure)
            self._lsp = None  # what comes for it from now on is refused at once
            for message in waiting:
                if "id" in message and "method" in message:
                    self.send_error(
                        message["id"],
                        INTERNAL_ERROR,
                        f"Internal error: no language server: {shown_detail(str(failure))}",
                    )
            return
        for message in waiting:  # in the order they came; the features have their routes now
            try:
                self._dispatch_waiting(message)
            except Exception:
                logger.exception("failed to dispatch a message")

    def _install_lsp(self, lsp: LanguageServerPart) -> Exception | None:
        """Make the language server's protocol and plug it in; returns why it could not be made."""
        try:
            protocol = lsp.create()
        except Exception as error:  # noqa: BLE001 - answered to every request waiting for the LSP
            return error
        self.protocol = protocol
        if self.writer is not None:
            protocol.set_writer(self.writer, include_headers=True)
        if self._trace is not None:
            self._apply_trace(self._trace)
        return None

    def _dispatch_waiting(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        handler = self.routes.get(method) if method is not None else None
        if handler is None:
            self._to_pygls(message)
        elif "id" in message:
            self._start(message["id"], method, handler, message.get("params"))  # type: ignore[arg-type]
        else:
            self._start_notification(method, handler, message.get("params"))  # type: ignore[arg-type]

    # -- our own requests ---------------------------------------------------------------------

    def _start(self, message_id: Any, method: str, handler: Handler, params: Any) -> None:
        try:
            outcome = handler(self._typed(method, params))
        except BaseException as error:
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            self.send_exception(message_id, error)
            return
        key = _request_key(message_id)
        if isinstance(outcome, Job):
            self._pending[key] = outcome
            outcome.add_done_callback(lambda job: self._job_done(message_id, key, job))
        elif inspect.isawaitable(outcome):
            task = asyncio.ensure_future(outcome)
            self._pending[key] = task
            task.add_done_callback(lambda done: self._task_done(message_id, key, done))
        else:
            self._last_answered = time.monotonic()
            self.send_result(message_id, outcome)

    def _job_done(self, message_id: Any, key: tuple[bool, Any], job: Job[Any]) -> None:
        """On the thread that finished (or cancelled) the job."""
        self._answered(key, job)
        try:
            result = job.result()
        except BaseException as error:  # noqa: BLE001 - the request boundary: every failure is answered
            self.send_exception(message_id, error)
            return
        self.send_result(message_id, result)

    def _task_done(self, message_id: Any, key: tuple[bool, Any], task: asyncio.Future[Any]) -> None:
        self._answered(key, task)
        if task.cancelled():
            self.send_exception(message_id, Cancelled())
            return
        error = task.exception()
        if error is not None:
            self.send_exception(message_id, error)
        else:
            self.send_result(message_id, task.result())

    def _start_notification(self, method: str, handler: Handler, params: Any) -> None:
        try:
            outcome = handler(self._typed(method, params))
        except RpcError as error:
            logger.warning("dropping %s: %s", method, error.message)
            return
        except Exception as error:
            if _is_pygls_error(error):
                logger.warning("dropping %s: %s", method, error.message)  # type: ignore[attr-defined]
            else:
                logger.exception("the handler of %s failed", method)
            return
        if inspect.isawaitable(outcome):
            asyncio.ensure_future(outcome).add_done_callback(_log_failure)

    def _cancel(self, params: Any) -> bool:
        """Cancel one of our requests; False when the id is not ours (pygls may know it)."""
        message_id = params.get("id") if isinstance(params, dict) else None
        if message_id is None:
            return False
        pending = self._pending.get(_request_key(message_id))
        if pending is None:
            return False
        pending.cancel()
        return True


def _envelope_problem(message: Any, *, awaits_responses: bool) -> str | None:
    """What makes ``message`` neither a request, a notification nor a response, or None.
    ``awaits_responses``: the server sent requests of its own; without, a message with an id alone
    (a response holds a result or an error) is a client's mistake that waits for an answer."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "expected a JSON-RPC 2.0 object"
    if "id" in message and _scalar_id(message["id"]) is not message["id"]:
        return "an id must be a string, a number or null"
    if "method" in message and not isinstance(message["method"], str):
        return "method must be a string"
    if "method" not in message and "id" not in message:
        return "expected a request, a notification or a response"
    if (
        "method" not in message
        and "result" not in message
        and "error" not in message
        and not awaits_responses
    ):
        return "expected a method (a request), or a result or an error (a response)"
    return None


def _routed_by_the_connection(*_: Any) -> Any:
    """What pygls holds for the methods the connection answers (it never calls it)."""
    raise RpcError(INTERNAL_ERROR, "Internal error: this method is routed by the connection")


def _is_pygls_error(error: BaseException) -> bool:
    """Is ``error`` pygls' ``JsonRpcException`` (raised by the language features; pygls is then
    imported already)?"""
    exceptions = sys.modules.get("pygls.exceptions")
    return exceptions is not None and isinstance(error, exceptions.JsonRpcException)


def _params_problem(error: BaseException) -> str:
    """What is wrong with a request's params: for the protocol library's validation errors, each
    problem and the member it is in, as the client spelled it (``$.positions[1].character``), the
    way the sidecar's own methods say it; else the error's first line (either bounded: they may
    quote the value)."""
    import cattrs
    from cattrs.v import transform_error

    if isinstance(error, cattrs.BaseValidationError):
        problems = [_at_member(problem) for problem in transform_error(error, "$", _validation_problem)[:3]]
        return shown_detail("; ".join(problems))
    return shown_detail(str(error) or type(error).__name__)


def _validation_problem(error: BaseException, expected: Any) -> str:
    """One problem of a validation error: a validator's own words (lsprotocol's say the bounds and
    the value: "Position.line should be in range [0:2147483647], but was -1."), else cattrs'."""
    from cattrs.v import format_exception

    if isinstance(error, ValueError) and expected is None and str(error):
        return str(error).splitlines()[0].rstrip(".")
    return format_exception(error, expected)


def _at_member(problem: str) -> str:
    """cattrs' "<what> @ $.text_document" as "<what> - at `$.textDocument`" (the protocol's member
    names are the attributes' in camel case)."""
    what, at, path = problem.rpartition(" @ ")
    if not at:
        return problem
    path = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), path)
    return f"{what} - at `{path}`"


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("notification handler failed", exc_info=task.exception())


class _FrameProtocol(asyncio.Protocol):
    """The reading end of the pipe: each chunk the loop reads goes straight to the framing (a
    stream reader would copy a big body again as it grows, and wake its reader for each chunk);
    ``closed`` is set when the client closes its end."""

    def __init__(self, dispatch: Callable[[list[bytes | FramingError]], None], closed: asyncio.Future[None]):
        self._decoder = FrameDecoder()
        self._dispatch = dispatch
        self._closed = closed

    def data_received(self, data: bytes) -> None:
        frames = self._decoder.feed(data)
        if frames:
            self._dispatch(frames)

    def eof_received(self) -> bool:
        self._close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002 - asyncio.Protocol signature
        self._close()

    def _close(self) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


def loop_can_watch(fd: int) -> bool:
    """Whether the event loop can wait for ``fd`` to be readable: a pipe, a socket or a terminal,
    not a regular file nor ``/dev/null``, which epoll refuses (the loop would log the refusal and
    wait for ever)."""
    try:
        with selectors.DefaultSelector() as probe:
            probe.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


def read_on_thread(fd: int, protocol: asyncio.Protocol, loop: asyncio.AbstractEventLoop) -> threading.Thread:
    """Read ``fd`` to its end on a thread of its own, handing each chunk to ``protocol`` on the
    loop's thread, then its end (``connection_lost``), as the loop's pipe transport would."""

    def read() -> None:
        error: OSError | None = None
        try:
            while chunk := os.read(fd, READ_CHUNK):
                loop.call_soon_threadsafe(protocol.data_received, chunk)
        except OSError as err:
            error = err
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(protocol.connection_lost, error)

    reader = threading.Thread(target=read, name="pi-stdin", daemon=True)
    reader.start()
    return reader


def run_stdio(server: Any, connection: Connection, on_start: Callable[[], Any] | None = None) -> None:
    """Serve ``connection`` on stdin/stdout until the client closes it or sends ``exit``."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the protocol channel
    try:
        asyncio.run(connection.serve(stdin, stdout, on_start))
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        server.shutdown()


def _error_reply(message_id: Any, error: Any) -> dict[str, Any]:
    """The error reply that stands for a client's reply the server could not read."""
    return {
        "jsonrpc": "2.0",
        "id": message_id,
        "error": {
            "code": error.code,
            "message": f"the client's reply was malformed: {shown_detail(error.message)}",
        },
    }
