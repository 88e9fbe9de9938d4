#!/usr/bin/env python3
"""Conformance runner: executes an oracle scenario against the Python library.

    python tests/conformance/runner.py [--pi VERSION] SCENARIO.json  # print the normalized result document
    python tests/conformance/runner.py [--pi VERSION] - < SCENARIO.json  # same, fixtures relative to the cwd
    python tests/conformance/runner.py [--pi VERSION] --all DIR [-k SUBSTR] [--report FILE]
                                                          # run DIR/**/X.scenario.json, compare
                                                          # with the expected file of VERSION,
                                                          # print a summary

``--pi`` is the pi release the library follows (``0.86.1`` or ``1.6.0``; default: the library's
default, 1.6.0). The output is byte for byte what ``node run.mjs --pi VERSION --rules ours
SCENARIO.json`` prints when the library behaves like that release with our deviations
(the oracle's README.md, in $PI_ORACLE_DIR, is the contract: work directory, environment, directives, views,
records, ``final``, deadline, normalization; §8.4 names the expected files per version).
``run_scenario(path, pi=...)`` does the same in-process for pytest.

Ops run in a worker thread; the calling thread waits for the scenario's deadline (``timeoutMs`` of
the worker's CPU time, with a wall-clock backstop) and, when it expires, reports the running op as
``{"timeout": true}`` and interrupts the worker with an asynchronous exception (pure-Python loops
stop at the next bytecode).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import importlib
import inspect
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script or imported by pytest: find our sibling modules
    sys.path.insert(0, str(HERE))

from pi_session_server.format.jsvalue import ABSENT, truthy  # noqa: E402
from pi_session_server.session.profiles import DEFAULT_PI, PROFILES, profile_for  # noqa: E402

import docformat  # noqa: E402
import piconf  # noqa: E402
from jsbridge import (  # noqa: E402
    NotSerializable,
    OpError,
    get_property,
    has_property,
    is_array,
    is_array_index,
    is_nullish,
    is_object,
    js_date_value,
    js_loads,
    js_stringify_compact,
    js_to_string,
    path_join,
    path_resolve,
    path_to_file_url,
    to_jsonable,
    to_property_key,
)
from nodefs import (  # noqa: E402
    NodeFsError,
    TreeSnapshot,
    changed_files,
    dump_file,
    file_spec_bytes,
    list_dir,
    raw_sort,
    remove_file,
    set_times,
    write_bytes,
    write_file_spec,
)

DEFAULT_TIMEOUT_MS = 10000
LIBRARY_MODULE = "pi_session_server.session"
#: The pi release whose expected files carry no version in their name (oracle README §8.4).
BASELINE_PI = "0.86.1"
#: Every pi release the oracle and the library support.
PI_VERSIONS = tuple(PROFILES)

# ---------------------------------------------------------------------------
# Reference names -> Python names (docs/API.md §10). The one table the runner uses.
#   "SessionManager.<static>"  classmethods of SessionManager
#   "<method>"                 public methods of SessionManager.prototype
#   "fn.<export>"              the other exports of session-manager.js
# Names a pi release does not have (the library's Profile.has_api says which) are unknown ops
# under that release, as they are for the oracle, which lists the loaded module's names.
# ---------------------------------------------------------------------------

API_NAMES: dict[str, str] = {
    "SessionManager.create": "create",
    "SessionManager.open": "open",
    "SessionManager.continueRecent": "continue_recent",
    "SessionManager.inMemory": "in_memory",
    "SessionManager.forkFrom": "fork_from",
    "SessionManager.list": "list",
    "SessionManager.listAll": "list_all",
    "SessionManager.findById": "find_by_id",
    "appendMessage": "append_message",
    "appendThinkingLevelChange": "append_thinking_level_change",
    "appendModelChange": "append_model_change",
    "appendUsage": "append_usage",
    "appendCompaction": "append_compaction",
    "appendCustomEntry": "append_custom_entry",
    "appendSessionInfo": "append_session_info",
    "appendCustomMessageEntry": "append_custom_message_entry",
    "appendLabelChange": "append_label_change",
    "branch": "branch",
    "resetLeaf": "reset_leaf",
    "branchWithSummary": "branch_with_summary",
    "createBranchedSession": "create_branched_session",
    "newSession": "new_session",
    "setSessionFile": "set_session_file",
    "getLeafId": "get_leaf_id",
    "getLeafEntry": "get_leaf_entry",
    "getEntry": "get_entry",
    "getChildren": "get_children",
    "getBranch": "get_branch",
    "getTree": "get_tree",
    "getLabel": "get_label",
    "getSessionName": "get_session_name",
    "getHeader": "get_header",
    "getEntries": "get_entries",
    "buildContextEntries": "build_context_entries",
    "buildSessionContext": "build_session_context",
    "isPersisted": "is_persisted",
    "getCwd": "get_cwd",
    "getSessionDir": "get_session_dir",
    "usesDefaultSessionDir": "uses_default_session_dir",
    "getSessionId": "get_session_id",
    "getSessionFile": "get_session_file",
    "appendContextEdit": "append_context_edit",
    "buildSessionProjection": "build_session_projection",
    "getEntryCount": "get_entry_count",
    "fn.CURRENT_SESSION_VERSION": "CURRENT_SESSION_VERSION",
    "fn.assertValidSessionId": "assert_valid_session_id",
    "fn.buildContextEntries": "build_context_entries",
    "fn.buildSessionContext": "build_session_context",
    "fn.sessionEntryToContextMessages": "session_entry_to_context_messages",
    "fn.findMostRecentSession": "find_most_recent_session",
    "fn.getDefaultSessionDir": "get_default_session_dir",
    "fn.getLatestCompactionEntry": "get_latest_compaction_entry",
    "fn.loadEntriesFromFile": "load_entries_from_file",
    "fn.migrateSessionEntries": "migrate_session_entries",
    "fn.parseSessionEntries": "parse_session_entries",
    "fn.buildSessionProjection": "build_session_projection",
    "fn.projectContextEntry": "project_context_entry",
}

# Reference functions that return undefined; their Python counterparts return None by convention.
VOID_RESULTS = frozenset({"setSessionFile", "branch", "resetLeaf", "fn.assertValidSessionId"})

CONSTRUCTORS = frozenset({"create", "open", "continueRecent", "inMemory", "forkFrom"})
OTHER_STATICS = frozenset({"list", "listAll", "findById"})
INSTANCE_METHODS = frozenset(k for k in API_NAMES if "." not in k)
STATIC_PREFIX = "SessionManager."


class MissingApi(Exception):
    """The library lacks a name the reference has (reported as an ordinary op error)."""


class _Deadline(BaseException):
    """Injected into the worker thread when the scenario's deadline expires."""


class _AbortedSignal:
    """An already-aborted signal, for libraries that do not define their own."""

    aborted = True
    reason = "This operation was aborted"

    def is_set(self) -> bool:
        return True

    def throw_if_aborted(self) -> None:
        raise RuntimeError(self.reason)


_NO_RAW = object()  # "the op's raw value is its reported value"


# ---------------------------------------------------------------------------
# The library under test
# ---------------------------------------------------------------------------


class Api:
    """The library seen through API_NAMES, following pi release ``pi``. ``module`` exposes
    SessionManager and the exports; every function that takes a keyword ``pi`` (the constructors,
    list/findById, the context functions) is given the release. Which reference names a release has
    comes from the library's profiles."""

    def __init__(self, module: Any, pi: str = DEFAULT_PI):
        self.module = module
        self.pi = pi
        self.profile = profile_for(pi)
        self.manager_class = module.SessionManager
        self._arities: dict[Any, tuple[int, int | None, bool]] = {}

    @classmethod
    def load(cls, pi: str = DEFAULT_PI) -> Api:
        return cls(importlib.import_module(LIBRARY_MODULE), pi)

    def has(self, ref_name: str) -> bool:
        """Does the release have the reference name (a method, or ``fn.<export>``)?"""
        return ref_name in API_NAMES and self.profile.has_api(ref_name)

    def _callable(self, owner: Any, ref_name: str) -> Callable[..., Any]:
        py_name = API_NAMES[ref_name]
        fn = getattr(owner, py_name, None)
        if not callable(fn):
            raise MissingApi(f"{LIBRARY_MODULE} has no {py_name} (reference {ref_name})")
        return fn

    def call(self, fn: Callable[..., Any], args: list[Any]) -> Any:
        # JS passes undefined for missing arguments, ignores surplus ones, and a trailing undefined
        # means "not given": required parameters get ABSENT, optional ones keep their default.
        required, limit, takes_pi = self._arity(fn)
        args = list(args)
        while len(args) > required and args[-1] is ABSENT:
            args.pop()
        args += [ABSENT] * (required - len(args))
        if limit is not None:
            args = args[:limit]
        result = fn(*args, pi=self.pi) if takes_pi else fn(*args)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return result

    def _arity(self, fn: Callable[..., Any]) -> tuple[int, int | None, bool]:
        """(required positional parameters, maximum positional parameters or None for *args,
        whether it takes the keyword ``pi``)."""
        key = getattr(fn, "__func__", fn)
        if key not in self._arities:
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                self._arities[key] = (0, None, False)
            else:
                positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                required = sum(p.default is p.empty for p in positional)
                varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
                takes_pi = any(p.name == "pi" and p.kind is p.KEYWORD_ONLY for p in params)
                self._arities[key] = (required, None if varargs else len(positional), takes_pi)
        return self._arities[key]

    def static(self, name: str, args: list[Any]) -> Any:
        return self.call(self._callable(self.manager_class, STATIC_PREFIX + name), args)

    def method(self, sm: Any, name: str, args: list[Any] = ()) -> Any:  # type: ignore[assignment]
        return self.call(self._callable(sm, name), list(args))

    def export(self, name: str) -> tuple[bool, Any]:
        """(exists, value) of the reference export ``name``."""
        ref = "fn." + name
        if not self.has(ref):
            return False, ABSENT
        if not hasattr(self.module, API_NAMES[ref]):
            raise MissingApi(f"{LIBRARY_MODULE} has no {API_NAMES[ref]} (reference {name})")
        return True, getattr(self.module, API_NAMES[ref])

    def manager_info(self, sm: Any) -> dict[str, Any]:
        m = self.method
        return {
            "sessionId": m(sm, "getSessionId"),
            "sessionFile": m(sm, "getSessionFile"),
            "sessionDir": m(sm, "getSessionDir"),
            "cwd": m(sm, "getCwd"),
            "isPersisted": m(sm, "isPersisted"),
            "leafId": m(sm, "getLeafId"),
            "header": m(sm, "getHeader"),
            "entryCount": len(m(sm, "getEntries")),
        }

    def aborted_signal(self) -> Any:
        factory = getattr(self.module, "aborted_signal", None)
        return factory() if callable(factory) else _AbortedSignal()

    def by_id(self, sm: Any) -> Any:
        """The manager's id -> entry index (the reference's private ``byId`` Map)."""
        for name in ("by_id", "_by_id", "id_index", "_id_index"):
            index = getattr(sm, name, None)
            if index is not None:
                return index() if callable(index) else index
        raise MissingApi("the session manager exposes no id index (by_id)")


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _error_fields(exc: BaseException) -> dict[str, Any]:
    """``error``/``errorName``/``errorCode``/``runnerError`` of an op that raised ``exc``."""
    if isinstance(exc, OpError):
        return {"error": str(exc), "runnerError": True}
    # The library's errors and ours carry the JS error name (Python's AttributeError.name does not).
    declared = exc.name if isinstance(exc, NodeFsError) else getattr(type(exc), "name", None)
    name = declared if isinstance(declared, str) else type(exc).__name__
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        message = str(exc)
    code = getattr(exc, "code", None)
    if not isinstance(code, str) and isinstance(exc, OSError) and exc.errno is not None:
        code = __import__("errno").errorcode.get(exc.errno)
    out: dict[str, Any] = {"error": message}
    if name != "Error":
        out["errorName"] = name
    if isinstance(code, str):
        out["errorCode"] = code
    return out


def _is_expected_error(exc: BaseException) -> bool:
    """Errors the reference also raises (anything else gets its traceback kept for diagnosis)."""
    if isinstance(exc, (OpError, NodeFsError)):
        return True
    return isinstance(getattr(type(exc), "name", None), str) and type(exc).__module__.startswith(
        "pi_session_server"
    )


# ---------------------------------------------------------------------------
# Views and pick (README §3.2)
# ---------------------------------------------------------------------------


def is_tree(value: Any) -> bool:
    return is_array(value) and all(
        is_object(n) and has_property(n, "entry") and is_array(get_property(n, "children")) for n in value
    )


def flatten_tree(roots: Any, mode: str) -> list[Any]:
    """Preorder of a getTree result: ``[depth, id]`` pairs (ids) or flat node records."""
    out: list[Any] = []
    stack = [(node, 0) for node in reversed(list(roots))]
    while stack:
        node, depth = stack.pop()
        entry = get_property(node, "entry")
        entry = {} if is_nullish(entry) else entry
        if mode == "ids":
            out.append([depth, get_property(entry, "id")])
        else:
            rec = {
                "depth": depth,
                "id": get_property(entry, "id"),
                "parentId": get_property(entry, "parentId"),
                "type": get_property(entry, "type"),
            }
            for key in ("label", "labelTimestamp"):
                v = get_property(node, key)
                if v is not ABSENT:
                    rec[key] = v
            out.append(rec)
        children = list(get_property(node, "children"))
        stack.extend((child, depth + 1) for child in reversed(children))
    return out


def _member(x: Any, key: str) -> Any:
    """``x && typeof x === "object" ? x[key] : x``."""
    return get_property(x, key) if truthy(x) and is_object(x) else x


def _messages_of(value: Any) -> Any:
    """``value.messages`` when ``value && Array.isArray(value.messages)``, else ABSENT."""
    if not truthy(value):
        return ABSENT
    messages = get_property(value, "messages")
    return messages if is_array(messages) else ABSENT


def _role(m: Any) -> Any:
    return ABSENT if is_nullish(m) else get_property(m, "role")


def apply_view(value: Any, view: Any) -> Any:
    if not truthy(view) or view == "full":
        return value
    if view == "count":
        if is_array(value):
            return len(value)
        messages = _messages_of(value)
        if messages is not ABSENT:
            return len(messages)
        raise OpError('view "count" not applicable')
    if view in ("flat", "ids"):
        if is_tree(value):
            return flatten_tree(value, view)
        if view == "ids":
            if is_array(value):
                return [_member(x, "id") for x in value]
            if truthy(value) and is_object(value):
                return get_property(value, "id")
            return value
        raise OpError('view "flat" only applies to getTree results')
    if view == "roles":
        messages = _messages_of(value)
        if messages is not ABSENT:
            return {
                "messages": [_role(m) for m in messages],
                "thinkingLevel": get_property(value, "thinkingLevel"),
                "model": get_property(value, "model"),
            }
        if is_array(value):
            return [_role(m) for m in value]
        raise OpError('view "roles" only applies to contexts/message arrays')
    if view == "types":
        if is_array(value):
            return [_member(x, "type") for x in value]
        raise OpError('view "types" only applies to arrays of entries')
    if view == "projection":
        entries = get_property(value, "entries") if truthy(value) else ABSENT
        if is_array(entries):
            return {
                "entries": [_projected(p) for p in entries],
                "thinkingLevel": get_property(value, "thinkingLevel"),
                "model": get_property(value, "model"),
            }
        raise OpError('view "projection" only applies to session projections')
    raise OpError(f"unknown view: {js_to_string(view)}")


def _projected(item: Any) -> dict[str, Any]:
    """``{id, type, roles}`` of one projected entry (``p?.sourceEntry?.id`` etc.)."""
    source = ABSENT if is_nullish(item) else get_property(item, "sourceEntry")
    messages = ABSENT if is_nullish(item) else get_property(item, "messages")
    return {
        "id": ABSENT if is_nullish(source) else get_property(source, "id"),
        "type": ABSENT if is_nullish(source) else get_property(source, "type"),
        "roles": [_role(m) for m in messages] if is_array(messages) else messages,
    }


def _pick_keys(obj: Any, keys: list[Any]) -> Any:
    if not truthy(obj) or not is_object(obj) or is_array(obj):
        return obj
    plain = obj if isinstance(obj, Mapping) else (obj.to_json() if hasattr(obj, "to_json") else obj)
    out: dict[str, Any] = {}
    for k in keys:
        k = to_property_key(k)
        if has_property(plain, k):
            out[k] = get_property(plain, k)
    return out


def apply_pick(value: Any, keys: Any) -> Any:
    if not is_array(keys):
        return value
    if is_array(value):
        return [_pick_keys(x, keys) for x in value]
    return _pick_keys(value, keys)


# ---------------------------------------------------------------------------
# One scenario, executed in the worker thread
# ---------------------------------------------------------------------------


@dataclass
class _Progress:
    """What the worker has reported so far (shared with the supervising thread)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    closed: bool = False  # set at the deadline: later reports are dropped
    start: Any = ABSENT
    ops: list[Any] = field(default_factory=list)
    current: tuple[str, int] | None = None
    final: Any = None
    t1: int | None = None
    fatal: str | None = None
    tracebacks: list[str] = field(default_factory=list)
    # the worker's CPU clock, taken by the worker itself: asking for a thread's clock by its ident
    # once it has ended reads a freed thread structure (a segfault, seen when a scenario ended at once)
    cpu_clock: int | None = None
    started: threading.Event = field(default_factory=threading.Event)

    def begin(self, section: str, index: int) -> None:
        with self.lock:
            if not self.closed:
                self.current = (section, index)

    def record(self, section: str, rec: dict[str, Any]) -> None:
        with self.lock:
            if self.closed:
                return
            if section == "start":
                self.start = rec
            else:
                self.ops.append(rec)
            self.current = None


def _op_name(op: Any) -> Any:
    return op["op"] if isinstance(op, Mapping) and isinstance(op.get("op"), str) else None


class _Execution:
    def __init__(
        self, api: Api | None, scenario: Any, base_dir: str, work_dir: str, progress: _Progress, pi: str
    ):
        self.api = api
        self.pi = pi
        self.sc = scenario if isinstance(scenario, Mapping) else {}
        self.base_dir = base_dir
        self.W = work_dir
        self.progress = progress
        self.sm: Any = None
        self.results: dict[int, Any] = {}  # raw return values by op index
        self.named: dict[str, Any] = {}

    # -- helpers ------------------------------------------------------------

    def require_api(self) -> Api:
        if self.api is None:
            self.api = Api.load(self.pi)
        return self.api

    def require_sm(self) -> Any:
        if self.sm is None:
            raise OpError("no current session manager")
        return self.sm

    def abs(self, rel: Any) -> str:
        if not isinstance(rel, str):
            raise OpError("path must be a string")
        return path_resolve(self.W, rel)

    def sm_call(self, name: str, *args: Any) -> Any:
        sm = self.require_sm()
        return self.require_api().method(sm, name, list(args))

    # -- directives (README §2.3) -------------------------------------------

    def resolve(self, v: Any) -> Any:
        if is_array(v):
            return [self.resolve(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "$literal" in v:
            return v["$literal"]
        if "$ref" in v:
            return self._resolve_ref(v)
        if "$path" in v:
            return self.abs(v["$path"])
        if "$fileUrl" in v:
            return path_to_file_url(self.abs(v["$fileUrl"]))
        if "$undefined" in v:
            return ABSENT
        if "$sessionFile" in v:
            return self.sm_call("getSessionFile")
        if "$leafId" in v:
            return self.sm_call("getLeafId")
        if "$entries" in v:
            return self.sm_call("getEntries")
        if "$byId" in v:
            sm = self.require_sm()
            return self.require_api().by_id(sm)
        if "$abortedSignal" in v:
            return self.require_api().aborted_signal()
        if "$number" in v:
            numbers = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"), "-0": -0.0}
            key = to_property_key(v["$number"])
            if key not in numbers:
                raise OpError(f"bad $number {js_to_string(v['$number'])}")
            return numbers[key]
        return {k: self.resolve(x) for k, x in v.items()}

    def _resolve_ref(self, v: dict[str, Any]) -> Any:
        key = v["$ref"]
        if isinstance(key, (int, float)) and not isinstance(key, bool):
            k = to_property_key(key)
            if not (is_array_index(k) and int(k) in self.results):
                raise OpError(f"$ref {js_to_string(key)}: no such op result")
            val = self.results[int(k)]
        else:
            if not (isinstance(key, str) and key in self.named):
                raise OpError(f"$ref {js_stringify_compact(key)}: no such named result")
            val = self.named[key]
        path = v.get("$get", ABSENT)
        if path is not ABSENT:
            parts = path if is_array(path) else js_to_string(path).split(".")
            for p in parts:
                val = ABSENT if is_nullish(val) else get_property(val, p)
        return val

    # -- ops (README §2.1) --------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        sm = self.require_sm()
        api = self.require_api()  # after require_sm: "no current session manager" comes first
        return {
            **api.manager_info(sm),
            "sessionName": api.method(sm, "getSessionName"),
            "entries": api.method(sm, "getEntries"),
            "tree": flatten_tree(api.method(sm, "getTree"), "flat"),
            "context": api.method(sm, "buildSessionContext"),
        }

    def exec(self, op: Mapping[str, Any]) -> tuple[Any, Any]:
        """Runs one op; returns (reported value, raw value or _NO_RAW)."""
        name = op.get("op", ABSENT)
        if not isinstance(name, str):
            raise OpError("op must be a string")
        args = [self.resolve(a) for a in op["args"]] if is_array(op.get("args")) else []
        static = None
        if name.startswith(STATIC_PREFIX):
            static = name[len(STATIC_PREFIX) :]
        elif name in CONSTRUCTORS or name in OTHER_STATICS:
            static = name
        if static is not None:
            if static not in CONSTRUCTORS and static not in OTHER_STATICS:
                raise OpError(f"unknown op: {name}")
            api = self.require_api()
            value = api.static(static, args)
            if static in CONSTRUCTORS:
                if op.get("switch", ABSENT) is not False:
                    self.sm = value
                return api.manager_info(value), value
            return value, value
        if name.startswith("fn."):
            export = name[3:]
            api = self.require_api()
            if not api.has(name):
                raise OpError(f"unknown op: {name}")
            found, f = api.export(export)
            if not found or not callable(f):
                if found:
                    return f, f
                raise OpError(f"unknown op: {name}")
            value = api.call(f, args)
            if value is None and name in VOID_RESULTS:
                value = ABSENT
            if export == "migrateSessionEntries":  # mutates its argument, returns nothing
                first = args[0] if args else ABSENT
                return first, first
            return value, value
        if name in INSTANCE_METHODS and self.require_api().has(name):
            sm = self.require_sm()
            value = self.require_api().method(sm, name, args)
            if value is None and name in VOID_RESULTS:
                value = ABSENT
            return value, value
        return self._helper_op(name, op, args)

    def _helper_op(self, name: str, op: Mapping[str, Any], args: list[Any]) -> tuple[Any, Any]:

        def arg(i: int) -> Any:
            return args[i] if i < len(args) else ABSENT

        if name == "reopen":
            file = self.sm_call("getSessionFile")
            if not truthy(file):
                raise OpError("reopen: current session has no file")
            api = self.require_api()
            nxt = api.static("open", [file, *args])
            if op.get("switch", ABSENT) is not False:
                self.sm = nxt
            return api.manager_info(nxt), nxt
        if name == "info":
            sm = self.require_sm()
            return self.require_api().manager_info(sm), _NO_RAW
        if name == "snapshot":
            return self.snapshot(), _NO_RAW
        if name == "readFile":
            p = args[0] if args and args[0] is not ABSENT else self.sm_call("getSessionFile")
            if not isinstance(p, str):
                raise OpError("readFile: no path (session has no file)")
            dump = dump_file(
                path_resolve(self.W, p), op.get("parsed", ABSENT) is not False, op.get("slice", ABSENT)
            )
            return dump, _NO_RAW
        if name == "writeFile":
            write_file_spec(self.abs(arg(0)), arg(1), self.base_dir)
            return ABSENT, _NO_RAW
        if name == "appendFile":
            p = self.abs(arg(0))
            spec = arg(1)
            data = (
                spec.encode("utf-8", "surrogatepass")
                if isinstance(spec, str)
                else file_spec_bytes(spec, self.base_dir)
            )
            write_bytes(p, data, append=True)
            return ABSENT, _NO_RAW
        if name == "deleteFile":
            remove_file(self.abs(arg(0)))
            return ABSENT, _NO_RAW
        if name == "exists":
            return os.path.exists(self.abs(arg(0))), _NO_RAW
        if name == "listDir":
            target = "." if is_nullish(arg(0)) else arg(0)
            return list_dir(self.abs(target)), _NO_RAW
        if name == "setMtime":
            when = js_date_value(arg(1))
            set_times(self.abs(arg(0)), when)
            return ABSENT, _NO_RAW
        raise OpError(f"unknown op: {name}")

    def run_one(self, op: Any, index: int, section: str) -> None:
        rec: dict[str, Any] = {"i": index, "op": _op_name(op)}
        if isinstance(op, Mapping) and isinstance(op.get("as"), str):
            rec["as"] = op["as"]
        self.progress.begin(section, index)
        raw: Any = ABSENT
        try:
            if not isinstance(op, Mapping):
                raise OpError("op must be an object")
            value, r = self.exec(op)
            raw = value if r is _NO_RAW else r
            shown = apply_pick(apply_view(value, op.get("view", ABSENT)), op.get("pick", ABSENT))
            if shown is not ABSENT:
                rec["result"] = shown
        except _Deadline:
            raise
        except Exception as exc:  # noqa: BLE001 - any error of the library is the op's recorded result
            raw = ABSENT
            rec.update(_error_fields(exc))
            if not _is_expected_error(exc):
                self.progress.tracebacks.append(f"{section}[{index}] {rec['op']}: {traceback.format_exc()}")
        if section == "ops":
            self.results[index] = raw
        if isinstance(op, Mapping) and isinstance(op.get("as"), str):
            self.named[op["as"]] = raw
        try:
            with _recursion_limit(20000):  # deep values nest deeper than Python's default limit
                encoded = to_jsonable(rec)
        except _Deadline:
            raise
        except Exception as exc:  # noqa: BLE001 - JSON.stringify failed on the result: recorded
            message = str(exc) if isinstance(exc, NotSerializable) else _error_fields(exc)["error"]
            encoded = {
                "i": index,
                "op": rec["op"],
                "error": f"result not serializable: {message}",
                "runnerError": True,
            }
            self.progress.tracebacks.append(f"{section}[{index}] {rec['op']}: {traceback.format_exc()}")
        self.progress.record(section, encoded)

    # -- the whole scenario (README §1) ---------------------------------------

    def run(self) -> None:
        sc = self.sc
        files = sc.get("files", ABSENT)
        if isinstance(files, Mapping):
            for rel, spec in files.items():
                write_file_spec(path_join(self.W, rel), spec, self.base_dir)
        elif is_array(files):
            for i, spec in enumerate(files):
                write_file_spec(path_join(self.W, str(i)), spec, self.base_dir)
        before = TreeSnapshot(self.W)
        if "start" in sc:
            self.run_one(sc["start"], 0, "start")
        ops = sc.get("ops", ABSENT)
        for i, op in enumerate(ops if is_array(ops) else []):
            self.run_one(op, i, "ops")

        fin = sc.get("final", ABSENT)
        fin = {} if is_nullish(fin) else fin
        final: dict[str, Any] = {}
        mode = get_property(fin, "files")
        mode = "changed" if is_nullish(mode) else mode
        if mode != "none":
            after = TreeSnapshot(self.W)
            final["files"] = changed_files(before, after, mode, get_property(fin, "parsed") is not False)
            final["dirsCreated"] = raw_sort(sorted(after.dirs - before.dirs))
        if truthy(get_property(fin, "snapshot")):
            try:
                final["snapshot"] = self.snapshot()
            except _Deadline:
                raise
            except Exception as exc:  # noqa: BLE001 - a snapshot that fails is recorded as its error
                final["snapshot"] = {"error": _error_fields(exc)["error"]}
        with _recursion_limit(20000):
            encoded = to_jsonable(final)
        with self.progress.lock:
            if not self.progress.closed:
                self.progress.final = encoded
                self.progress.t1 = _now_ms()

    def run_guarded(self) -> None:
        with suppress(AttributeError, OSError):
            self.progress.cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        self.progress.started.set()
        try:
            self.run()
        except _Deadline:
            pass
        except BaseException:  # noqa: BLE001 - the worker thread reports whatever ended it
            self.progress.fatal = traceback.format_exc()
        finally:
            self.progress.done.set()


# ---------------------------------------------------------------------------
# Supervision: work directory, environment, deadline, normalization
# ---------------------------------------------------------------------------

_PROCESS_LOCK = threading.RLock()  # cwd and environment are process-wide: one scenario at a time
_ENV_KEYS = ("HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "TZ")
_WORKER_STACK = 256 * 1024 * 1024
_GRACE_S = 5.0
_api_cache: dict[str, Api] = {}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def default_api(pi: str = DEFAULT_PI) -> Api:
    """The real library following release ``pi``, imported once (raises while it cannot be imported)."""
    if pi not in _api_cache:
        _api_cache[pi] = Api.load(pi)
    return _api_cache[pi]


@contextmanager
def _scenario_environment(work_dir: str) -> Iterator[None]:
    saved_cwd = os.getcwd()
    saved_env = {k: os.environ.get(k) for k in _ENV_KEYS}
    try:
        os.chdir(work_dir)
        os.makedirs(os.path.join(work_dir, "home"), exist_ok=True)
        os.environ["HOME"] = os.path.join(work_dir, "home")
        os.environ["PI_CODING_AGENT_DIR"] = os.path.join(work_dir, "agent")
        os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)
        os.environ["TZ"] = "UTC"
        time.tzset()
        yield
    finally:
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        time.tzset()


def _wait_for(progress: _Progress, timeout_ms: float, t0: int) -> bool:
    """Waits until the worker is done or the deadline; False at the deadline.

    The deadline is the worker's CPU time reaching ``timeoutMs`` (so a loaded machine does not turn
    a slow scenario into a "timeout"), with a wall-clock backstop for ops that block without
    computing: three times ``timeoutMs`` plus 10 s.
    """
    done = progress.done
    progress.started.wait(30)  # (set first thing in the worker)
    clock = progress.cpu_clock
    try:
        if clock is None:
            raise OSError("no CPU clock")
        cpu0 = time.clock_gettime(clock)
    except OSError:  # none, or the worker has ended already
        return done.wait(max(0.0, (t0 + timeout_ms - _now_ms()) / 1000))
    wall_limit = t0 + 3 * timeout_ms + 10_000
    while not done.wait(min(0.05, timeout_ms / 1000)):
        try:
            cpu_ms = (time.clock_gettime(clock) - cpu0) * 1000
        except OSError:  # the thread just ended
            return done.wait(_GRACE_S)
        if cpu_ms >= timeout_ms or _now_ms() >= wall_limit:
            return done.is_set()
    return True


def _interrupt(thread: threading.Thread) -> None:
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Deadline))


@dataclass
class RunReport:
    text: str  # the normalized document, serialized like the oracle
    doc: Any  # the normalized document
    tracebacks: list[str]  # unexpected Python exceptions (library bugs), for diagnosis


def execute(scenario: Any, base_dir: str, api: Api | None = None, pi: str | None = None) -> RunReport:
    """Runs a parsed scenario; fixture paths are relative to ``base_dir``. ``pi``: the release the
    library follows (default: ``api``'s, or the library's default)."""
    if pi is None:
        pi = api.pi if api is not None else DEFAULT_PI
    elif api is not None and api.pi != pi:
        raise ValueError(f"the Api follows pi {api.pi}, not {pi}")
    timeout = scenario.get("timeoutMs") if isinstance(scenario, Mapping) else None
    timeout_ms = (
        timeout if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else DEFAULT_TIMEOUT_MS
    )
    with _PROCESS_LOCK:
        if api is None:
            try:
                api = default_api(pi)
            except Exception:  # noqa: BLE001 - the library does not import: reported per op
                api = None  # each op that needs the library reports the import error
        t0 = _now_ms()
        work_dir = os.path.realpath(tempfile.mkdtemp(prefix="pi-conf-"))
        progress = _Progress()
        outcome = "ok"
        marker = None
        try:
            with _scenario_environment(work_dir):
                execution = _Execution(api, scenario, base_dir, work_dir, progress, pi)
                old_stack = threading.stack_size(_WORKER_STACK)
                try:
                    worker = threading.Thread(
                        target=execution.run_guarded, name="conformance-scenario", daemon=True
                    )
                    worker.start()
                finally:
                    threading.stack_size(old_stack)
                if not _wait_for(progress, timeout_ms, t0):
                    with progress.lock:
                        progress.closed = True
                        if not progress.done.is_set():
                            outcome = "timeout"
                            marker = progress.current
                    if outcome == "timeout":
                        _interrupt(worker)
                        worker.join(_GRACE_S)
                        if worker.is_alive():
                            print(
                                f"conformance runner: worker still busy after {_GRACE_S} s", file=sys.stderr
                            )
                else:
                    worker.join(_GRACE_S)
        finally:
            if not os.environ.get("PI_ORACLE_KEEP"):
                shutil.rmtree(work_dir, ignore_errors=True)
    t1 = progress.t1 if outcome == "ok" and progress.t1 is not None else _now_ms()

    doc: dict[str, Any] = {"status": "ok"}
    if progress.start is not ABSENT:
        doc["start"] = progress.start
    if outcome == "timeout":
        doc["status"] = "timeout"
        if marker is not None:
            section, index = marker
            op = scenario["start"] if section == "start" else scenario["ops"][index]
            rec = {"i": index, "op": _op_name(op), "timeout": True}
            if section == "start":
                doc["start"] = rec
            else:
                progress.ops.append(rec)
    elif progress.fatal is not None:
        doc["status"] = "runner-error"
        doc["error"] = progress.fatal
    doc["ops"] = progress.ops
    if outcome == "ok" and progress.fatal is None and progress.final is not None:
        doc["final"] = progress.final

    with _recursion_limit(20000):  # deep trees in "full" views nest two levels per tree level
        normalized = docformat.normalize(doc, scenario, base_dir, work_dir, t0, t1)
        text = docformat.js_dumps(normalized) + "\n"
    return RunReport(text, normalized, progress.tracebacks)


@contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def load_scenario(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as f:
        return js_loads(f.read())


def run_scenario_report(
    path: str | os.PathLike[str], api: Api | None = None, pi: str | None = None
) -> RunReport:
    p = Path(path).resolve()
    return execute(load_scenario(p), str(p.parent), api, pi)


def run_scenario(path: str | os.PathLike[str], pi: str = DEFAULT_PI) -> str:
    """The normalized result document for the scenario file, as the oracle prints it for ``pi``."""
    return run_scenario_report(path, pi=pi).text


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def find_scenarios(root: str | os.PathLike[str]) -> list[Path]:
    return sorted(Path(root).rglob("*.scenario.json"))


def expected_path(scenario: Path, pi: str = DEFAULT_PI) -> Path:
    """``X.expected.json`` (pi 0.86.1) or ``X.expected.pi-<version>.json`` (oracle README §8.4)."""
    suffix = ".expected.json" if pi == BASELINE_PI else f".expected.pi-{pi}.json"
    return scenario.with_name(scenario.name[: -len(".scenario.json")] + suffix)


def compare_texts(expected: str, actual: str, max_diffs: int = 5) -> list[str]:
    diffs = piconf.compare(
        piconf.load_ordered(expected, True), piconf.load_ordered(actual, True), max_diffs=max_diffs
    )
    return diffs or ["byte-level difference only"]


def differences_from_expected(scenarios: list[Path], pi: str) -> list[str]:
    """For each of ``scenarios`` whose run under ``pi`` is not its expected document: its name,
    the first differences and the first traceback, on one string."""
    failures = []
    for scenario in scenarios:
        expected = expected_path(scenario, pi).read_text(encoding="utf-8")
        report = run_scenario_report(scenario, pi=pi)
        if report.text != expected:
            diffs = compare_texts(expected, report.text, max_diffs=5)
            failures.append(f"{scenario.name}: " + "; ".join(diffs) + "".join(report.tracebacks[:1]))
    return failures


def _run_all(root: str, substring: str | None, max_diffs: int, report: str | None, pi: str) -> int:
    scenarios = [p for p in find_scenarios(root) if substring is None or substring in str(p)]
    started = time.monotonic()
    failed: list[str] = []
    statuses: dict[str, int] = {}
    lines = []
    for sp in scenarios:
        rel = str(sp.relative_to(root))
        exp = expected_path(sp, pi)
        rr = run_scenario_report(sp, pi=pi)
        status = rr.doc.get("status", "?") if isinstance(rr.doc, dict) else "?"
        statuses[status] = statuses.get(status, 0) + 1
        if not exp.exists():
            print(f"NO EXPECTED {rel}")
            continue
        expected = exp.read_text(encoding="utf-8")
        ok = expected == rr.text
        diffs = [] if ok else compare_texts(expected, rr.text, max_diffs)
        if not ok:
            failed.append(rel)
            print(f"FAIL {rel}: {diffs[0]}")
            for d in diffs[1:]:
                print(f"     {d}")
            if rr.tracebacks:
                last = rr.tracebacks[0].rstrip().splitlines()
                print(f"     first Python exception: {last[0]} ... {last[-1]}")
        if report:
            lines.append(
                piconf.js_dumps({"scenario": rel, "ok": ok, "diffs": diffs, "tracebacks": rr.tracebacks}, 0)
            )
    if report:
        Path(report).write_text("\n".join(x.replace("\n", "") for x in lines) + "\n", encoding="utf-8")
    elapsed = time.monotonic() - started
    status_text = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    print(
        f"pi {pi}: {len(scenarios)} scenarios: {len(scenarios) - len(failed)} passed, {len(failed)} failed "
        f"(status: {status_text}) in {elapsed:.1f} s"
    )
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", help="scenario file, or - for stdin")
    ap.add_argument(
        "--pi",
        choices=PI_VERSIONS,
        default=DEFAULT_PI,
        help=f"the pi release the library follows (default {DEFAULT_PI})",
    )
    ap.add_argument("--all", metavar="DIR", help="run every DIR/**/*.scenario.json against its expected file")
    ap.add_argument("-k", dest="substring", help="with --all: only scenarios whose path contains this")
    ap.add_argument("--max-diffs", type=int, default=3, help="with --all: differences shown per failure")
    ap.add_argument("--report", help="with --all: write one JSON line per scenario to this file")
    ap.add_argument("--tracebacks", action="store_true", help="print unexpected Python exceptions to stderr")
    args = ap.parse_args(argv)
    if args.all:
        return _run_all(args.all, args.substring, args.max_diffs, args.report, args.pi)
    if not args.scenario:
        ap.error("give a scenario file, - or --all DIR")
    if args.scenario == "-":
        rr = execute(js_loads(sys.stdin.read()), os.getcwd(), pi=args.pi)
    else:
        rr = run_scenario_report(args.scenario, pi=args.pi)
    sys.stdout.write(rr.text)
    if args.tracebacks:
        for tb in rr.tracebacks:
            print(tb, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
