"""Library values on the wire: the JSON ``JSON.stringify`` would write for them.

Results of the library are JSON values plus ``ABSENT`` (JS ``undefined``: left out of objects,
``null`` in arrays), entries and tree nodes (msgspec Structs with a ``to_json``), other result
objects with a ``to_json``, and ``msgspec.Raw`` or ``RawParts`` (a reply encoded already, whole or
in parts). One encoder writes them all: :func:`pi_session_server.format.jsjson.encode_value`
(numbers as JavaScript spells them, integer-like keys first, any depth), given the hook that turns
library objects into JSON values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsjson import encode_value, is_array_index_key, parse_bytes
from pi_session_server.session.tree import TreeNode

from .raw_parts import RawParts


def library_json(value: Any) -> Any:
    """The JSON value of a library object (an entry, a tree node, a result with ``to_json``)."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, Mapping):
        return dict(value.items())
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot send a {type(value).__name__} over the wire")


def encode_json(value: Any, *, displayed: bool = False) -> bytes:
    """The JSON of a library value (``displayed``: for an editor to show, see ``encode_value``)."""
    return encode_value(value, default=library_json, displayed=displayed)


def encode_rows(value: Any) -> bytes:
    """The JSON of rows the server built itself, whose numbers it made and whose values from files
    went through :func:`to_wire` (tree rows): written as msgspec writes them, unchecked."""
    return encode_value(value, default=library_json, checked=False)


def encode_rows_into(value: Any, buffer: bytearray, offset: int) -> None:
    """:func:`encode_rows` of ``value`` written into ``buffer`` from ``offset`` on (what followed is
    replaced), without a bytes object of its own: a whole tree's rows, encoded a batch at a time,
    go into one buffer (not a copy per batch, then per join)."""
    try:
        _encode_into(value, buffer, offset)  # rows are JSON builtins and Structs: no hook needed
    except (TypeError, ValueError, RecursionError, OverflowError, msgspec.EncodeError):
        buffer[offset:] = encode_rows(value)  # what msgspec refuses: the way encode_rows takes


_encode_into = msgspec.json.Encoder().encode_into


def encode_result(value: Any) -> bytes:
    """The JSON of a pi/* result. msgspec encodes Structs and dataclasses (entries, tree nodes,
    session infos) field by field without asking the hook, so library objects at the top and up to
    two levels down (where results carry them) are replaced by their JSON first. An entry deeper
    shows by its ``_source`` field: the value is then written by the exact path, which asks the hook
    for everything."""
    if type(value) is msgspec.Raw or type(value) is RawParts:
        return bytes(value)
    if _small_and_plain(value):  # an append's {"id", "leafId"}: nothing JavaScript writes otherwise
        try:
            return _plain_encode(value)
        except UnicodeEncodeError:  # a lone surrogate: the exact path escapes it
            pass
    value = _unwrapped(value, 2)
    out = encode_json(value)
    if _STRUCT_FIELD in out:
        return encode_value(value, default=library_json, exact=True)
    return out


def encoded_reply(value: Any) -> msgspec.Raw | RawParts:
    """A pi/* result as the connection writes it: :func:`encode_result`'s JSON, or the JSON the
    result is already (not copied: a big reply is written as it is)."""
    if type(value) is msgspec.Raw or type(value) is RawParts:
        return value
    return msgspec.Raw(encode_result(value))


def to_wire(value: Any) -> Any:
    """``JSON.parse(JSON.stringify(value))``: a library value as JSON builtins."""
    return parse_bytes(encode_result(value))


_STRUCT_FIELD = b'"_source":'
_PLAIN = frozenset({str, int, float, bool, type(None), msgspec.Raw})
_plain_encode = msgspec.json.Encoder().encode


def _small_and_plain(value: Any) -> bool:
    """A small object of strings, booleans and nulls under keys JavaScript keeps in place."""
    return (
        type(value) is dict
        and len(value) <= 8
        and all(type(v) is str or v is None or type(v) is bool for v in value.values())
        and not any(is_array_index_key(k) for k in value)
    )


_CONTAINERS = frozenset({dict, list, tuple})


def _unwrapped(value: Any, depth: int) -> Any:
    """``value`` with the library objects in its first ``depth`` levels replaced by their JSON
    (a container is copied only if something in it was replaced)."""
    t = type(value)
    if t in _PLAIN:
        return value
    if t in _CONTAINERS:
        return _unwrapped_members(value, depth) if depth else value
    if isinstance(value, (Entry, TreeNode)) or callable(getattr(value, "to_json", None)):
        return value.to_json()
    return value


def _unwrapped_members(value: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> Any:
    """A container's members unwrapped (``_unwrapped``); the container is copied only if needed."""
    members: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, dict) else enumerate(value)
    copy: Any = None
    for key, item in members:
        if type(item) in _PLAIN or (depth == 1 and type(item) in _CONTAINERS):
            continue
        new = _unwrapped(item, depth - 1)
        if new is not item:
            if copy is None:
                copy = dict(value) if isinstance(value, dict) else list(value)
            copy[key] = new
    return value if copy is None else copy
