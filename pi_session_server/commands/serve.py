"""``pi-session serve``: the JSON-RPC sidecar / language server on stdio."""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..format.gcpause import gc_paused
from ..session.releases import DEFAULT_PI
from ._common import add_pi_argument

if TYPE_CHECKING:
    import argparse

# every option's value when none is given (``pi-session serve`` as editors run it takes these
# without making a parser: see cli.main)
DEFAULTS: dict[str, Any] = {
    "stdio": False,
    "fsync": False,
    "watch_interval": 0.15,
    "keep_failed_appends": False,
    "pi": DEFAULT_PI,
    "log_file": None,
    "log_level": "WARNING",
}


def seconds(text: str) -> float:
    """A --watch-interval: a number of seconds, 0 (never) or more (argparse names it "seconds"
    when it is no number)."""
    import math

    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        import argparse

        raise argparse.ArgumentTypeError(f"must be 0 (never) or a number of seconds, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(**DEFAULTS)
    parser.add_argument(
        "--stdio", action="store_true", help="serve on stdin/stdout (the default; for editors that pass it)"
    )
    parser.add_argument(
        "--fsync", action="store_true", help="fsync every append before answering (durable, slower)"
    )
    parser.add_argument(
        "--watch-interval",
        type=seconds,
        metavar="SECONDS",
        help="how often held session files are checked for changes by other processes "
        f"(default {DEFAULTS['watch_interval']}; 0: never, a session keeps what it read, as pi's does)",
    )
    parser.add_argument(
        "--keep-failed-appends",
        action="store_true",
        help="like pi, keep an entry in memory when writing it failed (default: the session stays as it was)",
    )
    add_pi_argument(parser)
    parser.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help=f"the least severe log lines written (default {DEFAULTS['log_level']})",
    )


def run(args: argparse.Namespace) -> int:
    # opened first: a log file that cannot be written is said alone, not after "waiting for a client"
    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8")
        if args.log_file
        else logging.StreamHandler(sys.stderr)
    )
    if sys.stdin.isatty():  # typed at a prompt: it would wait there for a client, saying nothing
        print(TYPED_AT_A_TERMINAL, file=sys.stderr, flush=True)
    with imported_for_good():
        import_asyncio_without_tls()
        import_uuid_without_platform()
        import_msgspec_without_typing_extensions()
        from pi_session_server.server.app import ServerOptions, create_server, watch_interval
        from pi_session_server.session.profiles import profile_for

    # timed lines, to be set beside a client's trace of the messages
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=getattr(logging, args.log_level), handlers=[handler], force=True)
    options = ServerOptions(
        fsync=args.fsync,
        watch_interval=watch_interval(args.watch_interval),
        rollback_failed_writes=not args.keep_failed_appends,
        pi=profile_for(args.pi),
    )
    create_server(options).serve_stdio()
    return 0


# What `pi-session serve` says when its input is a terminal, not a client's pipe.
TYPED_AT_A_TERMINAL = (
    "pi-session serve: waiting for a JSON-RPC client on stdin (LSP framing): an editor or a program "
    "starts this command; `pi-session demo` shows one talking to it. Ctrl-C stops it."
)


def import_asyncio_without_tls() -> None:
    """Import asyncio as on a Python built without ``ssl``, which asyncio supports (it imports
    ``ssl`` only for its TLS transports). A server on stdio opens no TLS connection, and importing
    ``ssl`` (OpenSSL loaded, its constants made into enums) is a large part of the server's start,
    which an editor waits for before its first request is read."""
    import_without("asyncio", "ssl")


def import_msgspec_without_typing_extensions() -> None:
    """Import msgspec as where ``typing_extensions`` is not installed, which msgspec supports: it
    then takes ``get_type_hints``, ``Required`` and ``NotRequired`` from ``typing``. On the Pythons
    this package runs on (3.11 and later) those of typing_extensions are typing's (its
    ``get_type_hints`` with the extras, which msgspec asks for, is typing's), so msgspec does the
    same either way; typing_extensions is a big module to import for that, at the server's start."""
    import_without("msgspec", "typing_extensions")


def import_uuid_without_platform() -> None:
    """Import uuid (msgspec imports it, to encode UUIDs) with a stand-in for ``platform``. Where
    uuid imports ``platform`` (neither Windows nor macOS), it asks it one thing, once: the system's
    name (``platform.system()``, to know how to find a MAC address for ``uuid1``), which on those
    systems is ``os.uname().sysname`` (``platform.uname`` changes it only on Windows), so the
    stand-in answers that; the server's start does not pay for ``platform``'s module body (a dozen
    regular expressions compiled). ``platform`` stays importable. A uuid that asks the stand-in for
    more is imported again, with ``platform``."""
    if "uuid" in sys.modules or "platform" in sys.modules:
        return
    stand_in = types.ModuleType("platform")
    stand_in.system = lambda: os.uname().sysname  # type: ignore[attr-defined]
    sys.modules["platform"] = stand_in
    try:
        importlib.import_module("uuid")
    except AttributeError:
        sys.modules.pop("uuid", None)  # another uuid than the one this stand-in was made for
    finally:
        del sys.modules["platform"]


def import_without(module: str, unused: str) -> None:
    """Import ``module`` while ``import unused`` fails (ImportError), where ``module`` does without
    it. ``unused`` stays importable: only ``module``, in this process, goes without it. Nothing
    happens if either is imported already."""
    if module in sys.modules or unused in sys.modules:
        return
    sys.modules[unused] = None  # type: ignore[assignment]  # `import unused` raises ImportError meanwhile
    try:
        importlib.import_module(module)
    finally:
        del sys.modules[unused]


@contextmanager
def imported_for_good() -> Iterator[None]:
    """Import, in the ``with`` block, modules that stay for the life of the process. What they make
    (functions, classes, tables) lives as long as they do, yet the cyclic collector would walk it
    again and again while it piles up, and at every full collection after: a good part of the time
    an editor waits for the sidecar to start. The collector is off meanwhile, and what exists at the
    end is left out of its walks from then on (``gc.freeze``: it is not freed, as a module is not)."""
    with gc_paused():
        try:
            yield
        finally:
            gc.freeze()
