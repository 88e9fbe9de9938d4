"""pi's one-line rendering of a tool call (its tree selector's ``formatToolCall``), which a tool
result's preview shows, and the home directory its paths are shortened against."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, Final

from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, truthy
from .environment import Environment, process_home
from .preview_pass import ToolArguments
from .preview_text import js_str, utf16_longer, utf16_slice

ToolCalls = dict[Any, tuple[Any, Any]]


def _stringify(value: Any) -> str:
    try:
        from pi_session_server.format.jsjson import dumps

        return dumps(value)
    except (TypeError, ValueError, RecursionError):  # not a JSON value: shown as Python sees it
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def home_directory(env: Environment | None = None) -> str:
    """What pi's tree selector shortens to ``~`` in the paths of tool calls: ``$HOME`` of ``env``
    (pi: ``HOME || USERPROFILE || ""``; USERPROFILE is Windows')."""
    return (env.home if env is not None else process_home()) or ""


def _shorten_path(path: str, home: str) -> str:
    if home and path.startswith(home):
        return "~" + path[len(home) :]
    return path


def _arg(get: Callable[[str, Any], Any], *names: str, default: str = "") -> str:
    """The first of the arguments ``names`` that is truthy, as a string (``get``: see
    :func:`_argument_getter`)."""
    for name in names:
        value = get(name, ABSENT)
        if truthy(value):
            return js_str(value)
    return default


def _argument_getter(args: Any) -> Callable[[str, Any], Any]:
    """``get(argument, ABSENT)`` of a call's arguments: of their object, or of the fields a pass
    decoded of them (preview_pass.ToolArguments, read without a call of Python's per argument);
    arguments that are no object read as ``{}``."""
    if isinstance(args, dict):
        return args.get
    if type(args) is ToolArguments:
        return partial(getattr, args)
    return _NO_ARGUMENTS.get


_NO_ARGUMENTS: Final[dict[str, Any]] = {}  # (never written to)


def format_tool_call(name: Any, args: Any, home: str | None = None) -> str:
    """pi's one-line rendering of a tool call (``formatToolCall``); ``home``: the home directory
    (default: :func:`home_directory`)."""
    get = _argument_getter(args)
    if home is None:
        home = home_directory()
    if name == "read":
        display = _shorten_path(_arg(get, "path", "file_path"), home)
        offset, limit = get("offset", ABSENT), get("limit", ABSENT)
        if offset is not ABSENT or limit is not ABSENT:
            start = 1 if offset is ABSENT or offset is None else offset
            end: Any = ""
            if limit is not ABSENT and isinstance(start, (int, float)) and isinstance(limit, (int, float)):
                end = start + limit - 1
            display += f":{js_str(start)}" + (f"-{js_str(end)}" if end != "" and end != 0 else "")
        return f"[read: {display}]"
    if name in ("write", "edit"):
        return f"[{name}: {_shorten_path(_arg(get, 'path', 'file_path'), home)}]"
    if name == "bash":
        raw = _arg(get, "command")
        cmd = utf16_slice(js_trim(raw.replace("\n", " ").replace("\t", " ")), 50)
        return f"[bash: {cmd}{'...' if utf16_longer(raw, 50) else ''}]"
    if name == "grep":
        return f"[grep: /{_arg(get, 'pattern')}/ in {_shorten_path(_arg(get, 'path', default='.'), home)}]"
    if name == "find":
        return f"[find: {_arg(get, 'pattern')} in {_shorten_path(_arg(get, 'path', default='.'), home)}]"
    if name == "ls":
        return f"[ls: {_shorten_path(_arg(get, 'path', default='.'), home)}]"
    text = _stringify(args) if args is not ABSENT else ""
    return f"[{js_str(name)}: {utf16_slice(text, 40)}{'...' if utf16_longer(text, 40) else ''}]"
