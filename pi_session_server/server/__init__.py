"""The JSON-RPC sidecar and language server (pygls, in ``app``). Only this package imports
pygls/lsprotocol. Empty on purpose: a command that uses one of its modules (``stats`` its totals)
does not pay for the server's imports."""
