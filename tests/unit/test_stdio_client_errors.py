"""The Python client's error reply (stdio_client.RpcError): what its docstring names is what it holds."""

from __future__ import annotations

import re

from pi_session_server.errors import PiSessionError
from pi_session_server.server.stdio_client import RpcError, error_class


def test_a_file_system_error_carries_the_rpc_code_and_the_node_code():
    data = {"name": "Error", "code": "ENOENT", "syscall": "open", "path": "/x.jsonl"}
    error = error_class("Error")(-32005, "ENOENT: no such file or directory, open '/x.jsonl'", data)
    assert isinstance(error, RpcError) and isinstance(error, PiSessionError)
    assert (error.rpc_code, error.code, error.name) == (-32005, "ENOENT", "Error")
    assert error.message == str(error) == "ENOENT: no such file or directory, open '/x.jsonl'"
    assert error.data == data


def test_an_error_without_a_node_code_has_none():
    error = error_class("TypeError")(-32008, "Cannot read properties of undefined", {"name": "TypeError"})
    assert (error.rpc_code, error.code, error.name) == (-32008, None, "TypeError")
    assert RpcError(-32001, "Unknown session handle: s9", {"session": "s9"}).code is None


def test_the_docstring_names_the_attributes_the_error_has():
    named = set(re.findall(r"``([a-z_]+)``", RpcError.__doc__ or ""))
    assert {"rpc_code", "code", "name", "message", "data"} <= named
    error = RpcError(-32005, "m", {"code": "EEXIST"})
    assert all(hasattr(error, attribute) for attribute in named)
