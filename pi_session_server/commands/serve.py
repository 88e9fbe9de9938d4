"""``pi-session serve``: the JSON-RPC sidecar / language server on stdio."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..format.gcpause import gc_paused
from ._common import add_pi_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stdio", action="store_true", help="serve on stdin/stdout (the default; for editors that pass it)"
    )
    parser.add_argument(
        "--fsync", action="store_true", help="fsync every append before answering (durable, slower)"
    )
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=0.15,
        metavar="SECONDS",
        help="how often held session files are checked for changes by other processes (default 0.15)",
    )
    parser.add_argument(
        "--keep-failed-appends",
        action="store_true",
        help="like pi, keep an entry in memory when writing it failed (default: the session stays as it was)",
    )
    add_pi_argument(parser)
    parser.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(args: argparse.Namespace) -> int:
    with imported_for_good():
        import_asyncio_without_tls()
        from pi_session_server.server import ServerOptions, create_server
        from pi_session_server.session.profiles import profile_for

    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8")
        if args.log_file
        else logging.StreamHandler(sys.stderr)
    )
    logging.basicConfig(level=getattr(logging, args.log_level), handlers=[handler], force=True)
    options = ServerOptions(
        fsync=args.fsync,
        watch_interval=max(0.01, args.watch_interval),
        rollback_failed_writes=not args.keep_failed_appends,
        pi=profile_for(args.pi),
    )
    create_server(options).serve_stdio()
    return 0


def import_asyncio_without_tls() -> None:
    """Import asyncio as on a Python built without ``ssl``, which asyncio supports (it imports
    ``ssl`` only for its TLS transports). A server on stdio opens no TLS connection, and importing
    ``ssl`` (OpenSSL loaded, its constants made into enums) is a large part of the server's start,
    which an editor waits for before its first request is read. ``ssl`` stays importable: only
    asyncio, in this process, goes without it. Nothing happens if asyncio or ssl is imported already."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError meanwhile
    try:
        import asyncio  # noqa: F401
    finally:
        del sys.modules["ssl"]


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
