"""The JSON-RPC sidecar and language server (pygls). Only this package imports pygls/lsprotocol."""

from .app import PiSessionServer, ServerOptions, create_server

__all__ = ["PiSessionServer", "ServerOptions", "create_server"]
