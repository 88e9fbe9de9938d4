"""Domain values -> JSON-RPC wire values, and JSON-RPC message bodies -> bytes.

Results of the library are plain JSON values plus ``ABSENT`` (JS ``undefined``) and ``Entry``
objects (read-only mappings). :func:`to_wire` turns any of them into builtins exactly as
``JSON.stringify`` would see them: ABSENT object members are dropped (ABSENT array items become
``null``), non-finite numbers become ``null``, ``-0`` becomes ``0`` and integer-like keys move first
(JS property order). It walks iteratively, so a value nested 100,000 levels deep converts fine.

:func:`encode_json` serializes with msgspec (fast) and falls back to an iterative encoder for what
msgspec refuses (lone surrogates, very deep nesting).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from pi_session_server.format.entry import Entry
from pi_session_server.format.jstext import as_displayed
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session.tree import TreeNode

_MAX_ARRAY_INDEX = 4294967294
_encoder = msgspec.json.Encoder()


def is_array_index(key: str) -> bool:
    """``key`` is a canonical array index (``0`` or ``[1-9][0-9]*`` up to 2**32-2)."""
    if not key or not key.isascii() or not key.isdigit():
        return False
    if len(key) > 1 and key[0] == "0":
        return False
    return int(key) <= _MAX_ARRAY_INDEX


def _js_key_order(keys: list[str]) -> list[str]:
    index_keys = [k for k in keys if k[:1].isdigit() and is_array_index(k)]
    if not index_keys:
        return keys
    index_keys.sort(key=int)
    return index_keys + [k for k in keys if not (k[:1].isdigit() and is_array_index(k))]


def _scalar(value: Any) -> Any:
    """A JSON scalar as it comes out of ``JSON.parse(JSON.stringify(value))``."""
    if type(value) is float:
        if math.isnan(value) or math.isinf(value):
            return None
        if value == 0:
            return 0
    return value


def _entry_json(value: Any) -> Any:
    """The plain JSON of an ``Entry`` (or any result object offering ``to_json``)."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    return dict(value.items())


_CONTAINERS = (dict, list, tuple)


def to_wire(value: Any) -> Any:
    """Convert a library value into JSON builtins, iteratively (no recursion on depth)."""
    value = _prepare(value)
    if not isinstance(value, _CONTAINERS):
        return _scalar(value)
    root: list[Any] = [None]
    # work items: (source container, target container, key in target for the converted copy)
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, Mapping):
            target_dict: dict[str, Any] = {}
            parent[slot] = target_dict
            keys = list(source.keys())
            for key in _js_key_order(keys):
                item = _prepare(source[key])
                if item is ABSENT:
                    continue
                if isinstance(item, _CONTAINERS):
                    target_dict[key] = None
                    stack.append((item, target_dict, key))
                else:
                    target_dict[key] = _scalar(item)
        else:
            target_list: list[Any] = [None] * len(source)
            parent[slot] = target_list
            for index, item in enumerate(source):
                item = _prepare(item)
                if item is ABSENT or item is None:
                    continue
                if isinstance(item, _CONTAINERS):
                    stack.append((item, target_list, index))
                else:
                    target_list[index] = _scalar(item)
    return root[0]


def _prepare(value: Any) -> Any:
    """Unwrap library objects (entries, tree nodes, ...) into dict/list/scalars."""
    t = type(value)
    if t is Clean:
        return value.value
    if t is dict or t is list or t is str or t is int or t is float or t is bool or value is None:
        return value
    if value is ABSENT:
        return ABSENT
    if isinstance(value, Mapping):
        return value if isinstance(value, dict) else _entry_json(value)
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, msgspec.Raw):
        return value
    raise TypeError(f"cannot send a {t.__name__} over the wire")


def _enc_hook(value: Any) -> Any:
    """msgspec's fallback for library objects: an Entry is its JSON value, a result object its to_json()."""
    if value is ABSENT:
        raise TypeError("ABSENT needs the exact path")
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, Mapping):
        return dict(value.items())
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot send a {type(value).__name__} over the wire")


_hooked_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
# a member whose key JavaScript would move to the front of its object (a literal first character
# keeps the scan fast); "-0.0" (JS writes 0) is looked for with bytes.find first
_INDEX_KEY = re.compile(rb'"(?:0|[1-9][0-9]{0,9})":')
_NEGATIVE_ZERO = re.compile(rb"[:,\[]-0\.0(?![0-9eE])")


class Clean:
    """A value its producer built from builtins with known keys (no integer-like keys, no ABSENT,
    no -0): :func:`encode_result` skips the scan."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _needs_exact(out: bytes) -> bool:
    if _INDEX_KEY.search(out) is not None:
        return True
    return out.find(b"-0.0") >= 0 and _NEGATIVE_ZERO.search(out) is not None


def encode_result(value: Any) -> bytes:
    """The JSON of a library value as ``JSON.stringify`` would write it, fast.

    msgspec encodes in one C pass (entries and result objects through a hook). Its output is the
    JavaScript one unless the value holds ABSENT (msgspec refuses), lone surrogates (refused), nesting
    deeper than msgspec recurses (refused), integer-like object keys (JS moves them first) or -0
    (JS writes 0); the last two are found by a scan of the bytes. Those cases take :func:`to_wire`.
    """
    clean = type(value) is Clean
    if clean:
        value = value.value
    else:
        value = _structs_unwrapped(value)
    try:
        out = _hooked_encoder.encode(value)
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError, OverflowError):
        return encode_json(to_wire(value))
    if _STRUCT_FIELD in out or (not clean and _needs_exact(out)):
        return encode_json(to_wire(value))
    return out


# Entry and TreeNode are msgspec Structs (for decoding speed), and msgspec encodes a Struct field by
# field without asking the hook. Results carry them at the top or one level down; those are
# replaced by their JSON here. One anywhere deeper would come out as its fields, which always
# include this one: the output is then thrown away and made again by the exact path.
_LIBRARY_STRUCTS = (Entry, TreeNode)
_STRUCT_FIELD = b'"_source":'


def _structs_unwrapped(value: Any) -> Any:
    t = type(value)
    if t is Entry or t is TreeNode:
        return value.to_json()
    if t is list:
        return _list_unwrapped(value)
    if t is dict and any(type(v) in _LIBRARY_STRUCTS or type(v) is list for v in value.values()):
        return {k: _structs_unwrapped(v) if type(v) is not dict else v for k, v in value.items()}
    return value


def _list_unwrapped(items: list[Any]) -> list[Any]:
    for item in items:
        if type(item) in _LIBRARY_STRUCTS:
            return [item.to_json() if type(item) in _LIBRARY_STRUCTS else item for item in items]
    return items


def encode_json(value: Any, *, displayed: bool = False) -> bytes:
    """Serialize builtins (as produced by :func:`to_wire`) to compact JSON bytes.

    ``displayed``: the message is made for display (the language features' replies and
    notifications): a lone surrogate in a string is sent as U+FFFD (:func:`as_displayed`), not as
    an escape that Neovim's JSON decoder rejects with the whole message. pi/* data keeps its
    escapes: it is the session's content, which pi writes the same way."""
    try:
        return _encoder.encode(value)
    except (UnicodeEncodeError, RecursionError, OverflowError):
        return iterative_dumps(value, displayed=displayed).encode("utf-8")


def _dump_str(text: str) -> str:
    # ensure_ascii escapes lone surrogates (which cannot be UTF-8 encoded) as \udXXX
    return json.dumps(text, ensure_ascii=True)


def _dump_displayed_str(text: str) -> str:
    return json.dumps(as_displayed(text), ensure_ascii=True)


def iterative_dumps(value: Any, *, displayed: bool = False) -> str:
    """Compact JSON text of builtins without recursion (slow path); ``displayed``: lone surrogates
    as U+FFFD (see :func:`encode_json`)."""
    dump_str = _dump_displayed_str if displayed else _dump_str
    out: list[str] = []
    # stack holds either values to emit or literal text tokens (wrapped in a 1-tuple)
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            out.append(item[0])
            continue
        if isinstance(item, dict):
            if not item:
                out.append("{}")
                continue
            out.append("{")
            pending: list[Any] = []
            for i, (key, member) in enumerate(item.items()):
                pending.append(((("," if i else "") + dump_str(str(key)) + ":"),))
                pending.append(member)
            pending.append(("}",))
            stack.extend(reversed(pending))
        elif isinstance(item, list):
            if not item:
                out.append("[]")
                continue
            out.append("[")
            pending = []
            for i, member in enumerate(item):
                if i:
                    pending.append((",",))
                pending.append(member)
            pending.append(("]",))
            stack.extend(reversed(pending))
        elif isinstance(item, str):
            out.append(dump_str(item))
        elif isinstance(item, msgspec.Raw):
            out.append(bytes(item).decode("utf-8"))
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif item is None:
            out.append("null")
        elif isinstance(item, float):
            out.append("null" if (math.isnan(item) or math.isinf(item)) else repr(item))
        elif isinstance(item, int):
            out.append(str(item))
        else:
            raise TypeError(f"cannot encode {type(item).__name__}")
    return "".join(out)
