"""The conformance runner's ``Api`` over JSON-RPC: every SessionManager operation of a scenario
becomes a ``pi/*`` request to one sidecar process (``tests/conformance/runner.py`` does the rest:
directives, views, files, normalization).

The thin mapping, per reference name:

* statics (``create``, ``open``, ``continueRecent``, ``inMemory``, ``forkFrom``, ``list``,
  ``listAll``, ``findById``) -> ``pi/<name>``; a manager is a handle;
* appenders -> ``pi/append`` with ``kind`` = the entry type they write;
* ``appendContextEdit`` -> ``pi/appendContextEdit`` (pi 1.6.0);
* everything else -> the ``pi/*`` method of the same name (getLeafId/getLeafEntry -> ``pi/getLeaf``;
  getTree -> ``pi/getTree`` with ``form: "reference"``; the accessors -> ``pi/getInfo``);
* ``undefined`` results: the wire answers ``null`` (or leaves a key out) where the reference returns
  ``undefined``; the adapter maps those back per method, as the protocol documents.

The ``fn.*`` exports are not session operations: they run in-process on values that came over the
wire (``$entries``, ``$byId``). An already-aborted ``signal`` for list/listAll cannot travel: the
adapter raises the library's AbortError itself, as the reference does before any work.

The runner gives every scenario its own working directory, ``HOME`` and ``PI_CODING_AGENT_DIR`` (in
this process). The sidecar keeps its own: each request that opens or lists sessions carries the
scenario's as its ``environment`` (a session keeps it for its later requests), and the sessions of a
scenario are closed when the next one starts. The runner's time zone (UTC) is the sidecar's from its
start.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pi_session_server.errors import AbortError
from pi_session_server.format.jsvalue import ABSENT, index_key
from pi_session_server.server.stdio_client import SidecarClient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))

import runner  # noqa: E402

# the methods that find files by path: they carry the scenario's environment
LOCATED = frozenset(
    {
        "pi/create",
        "pi/open",
        "pi/continueRecent",
        "pi/inMemory",
        "pi/forkFrom",
        "pi/list",
        "pi/listAll",
        "pi/findById",
    }
)


def _drop_absent(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not ABSENT}


def _null_to_absent(value: Any) -> Any:
    return ABSENT if value is None else value


class Wire:
    """One sidecar process; its requests find files in the runner's per-scenario environment."""

    def __init__(self, *extra_args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["TZ"] = "UTC"  # the runner's (date-times without an offset are local time)
        command = [
            sys.executable,
            "-m",
            "pi_session_server",
            "serve",
            "--watch-interval",
            "0",  # files not followed: a session keeps what it read, as pi's does
            *extra_args,
        ]
        self.client = SidecarClient(command, env=env)
        self.environment: dict[str, Any] | None = None

    def call(self, method: str, params: dict[str, Any]) -> Any:
        environment = {
            "cwd": os.getcwd(),
            "home": os.environ.get("HOME"),
            "agentDir": os.environ.get("PI_CODING_AGENT_DIR"),
        }
        if environment != self.environment:  # a new scenario: the last one's sessions are done
            self._close_sessions()
            self.environment = environment
        if method in LOCATED:
            params = {**params, "environment": environment}
        return self.client.request(method, _drop_absent(params))

    def _close_sessions(self) -> None:
        for info in self.client.request("pi/sessions", {}):
            self.client.request("pi/close", {"session": info["session"]})

    def close(self) -> None:
        self.client.close()


class WireManager:
    """A SessionManager whose every method is a request to the sidecar."""

    wire: Wire

    def __init__(self, handle: str) -> None:
        self.handle = handle

    def _call(self, method: str, **params: Any) -> Any:
        return self.wire.call(method, {"session": self.handle, **params})

    def _append(self, kind: str, **fields: Any) -> Any:
        return self._call("pi/append", kind=kind, **fields)["id"]

    def _info(self) -> dict[str, Any]:
        return self._call("pi/getInfo")

    # -- statics ------------------------------------------------------------------------------

    @classmethod
    def _opened(cls, info: dict[str, Any]) -> WireManager:
        return cls(info["session"])

    @classmethod
    def create(cls, cwd: Any, session_dir: Any = ABSENT, options: Any = ABSENT) -> WireManager:
        return cls._opened(
            cls.wire.call("pi/create", {"cwd": cwd, "sessionDir": session_dir, "options": options})
        )

    @classmethod
    def open(cls, path: Any, session_dir: Any = ABSENT, cwd_override: Any = ABSENT) -> WireManager:
        return cls._opened(
            cls.wire.call("pi/open", {"path": path, "sessionDir": session_dir, "cwdOverride": cwd_override})
        )

    @classmethod
    def continue_recent(cls, cwd: Any, session_dir: Any = ABSENT) -> WireManager:
        return cls._opened(cls.wire.call("pi/continueRecent", {"cwd": cwd, "sessionDir": session_dir}))

    @classmethod
    def in_memory(cls, cwd: Any = ABSENT, options: Any = ABSENT, entries: Any = ABSENT) -> WireManager:
        return cls._opened(cls.wire.call("pi/inMemory", {"cwd": cwd, "options": options, "entries": entries}))

    @classmethod
    def fork_from(
        cls, source_path: Any, target_cwd: Any, session_dir: Any = ABSENT, options: Any = ABSENT
    ) -> WireManager:
        params = {
            "sourcePath": source_path,
            "targetCwd": target_cwd,
            "sessionDir": session_dir,
            "options": options,
        }
        return cls._opened(cls.wire.call("pi/forkFrom", params))

    @classmethod
    def list(cls, cwd: Any, session_dir: Any = ABSENT, on_progress: Any = None, signal: Any = None) -> Any:
        if getattr(signal, "aborted", False):
            raise AbortError("This operation was aborted")
        return cls.wire.call("pi/list", {"cwd": cwd, "sessionDir": session_dir})

    @classmethod
    def list_all(cls, session_dir: Any = ABSENT, on_progress: Any = None, signal: Any = None) -> Any:
        if not isinstance(session_dir, str):  # listAll(onProgress?, signal?)
            session_dir, signal = ABSENT, on_progress
        if getattr(signal, "aborted", False):
            raise AbortError("This operation was aborted")
        return cls.wire.call("pi/listAll", {"sessionDir": session_dir})

    @classmethod
    def find_by_id(cls, cwd: Any, session_id: Any, session_dir: Any = ABSENT) -> Any:
        found = cls.wire.call("pi/findById", {"cwd": cwd, "id": session_id, "sessionDir": session_dir})
        return _null_to_absent(found)

    # -- appenders ----------------------------------------------------------------------------

    def append_message(self, message: Any) -> Any:
        return self._append("message", message=message)

    def append_thinking_level_change(self, thinking_level: Any) -> Any:
        return self._append("thinking_level_change", thinkingLevel=thinking_level)

    def append_model_change(self, provider: Any, model_id: Any) -> Any:
        return self._append("model_change", provider=provider, modelId=model_id)

    def append_usage(self, kind: Any, provider: Any, model: Any, usage: Any, note: Any = ABSENT) -> Any:
        reply = self._call(
            "pi/append", kind="usage", usageKind=kind, provider=provider, model=model, usage=usage, note=note
        )
        return reply["entry"]

    def append_compaction(
        self,
        summary: Any,
        first_kept_entry_id: Any,
        tokens_before: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        return self._append(
            "compaction",
            summary=summary,
            firstKeptEntryId=first_kept_entry_id,
            tokensBefore=tokens_before,
            details=details,
            fromHook=from_hook,
            usage=usage,
        )

    def append_custom_entry(self, custom_type: Any, data: Any = ABSENT) -> Any:
        return self._append("custom", customType=custom_type, data=data)

    def append_session_info(self, name: Any) -> Any:
        return self._append("session_info", name=name)

    def append_custom_message_entry(
        self, custom_type: Any, content: Any, display: Any, details: Any = ABSENT
    ) -> Any:
        return self._append(
            "custom_message", customType=custom_type, content=content, display=display, details=details
        )

    def append_label_change(self, target_id: Any, label: Any = ABSENT) -> Any:
        return self._append("label", targetId=target_id, label=label)

    def append_context_edit(self, target_id: Any, replacement: Any) -> Any:
        return self._call("pi/appendContextEdit", targetId=target_id, replacement=replacement)["id"]

    # -- moving the leaf, switching sessions -----------------------------------------------------

    def branch(self, branch_from_id: Any) -> None:
        self._call("pi/branch", entryId=branch_from_id)

    def reset_leaf(self) -> None:
        self._call("pi/resetLeaf")

    def branch_with_summary(
        self,
        branch_from_id: Any,
        summary: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        return self._call(
            "pi/branchWithSummary",
            branchFromId=branch_from_id,
            summary=summary,
            details=details,
            fromHook=from_hook,
            usage=usage,
        )["id"]

    def create_branched_session(self, leaf_id: Any) -> Any:
        return self._call("pi/createBranchedSession", leafId=leaf_id).get("result", ABSENT)

    def new_session(self, options: Any = ABSENT) -> Any:
        return self._call("pi/newSession", options=options).get("result", ABSENT)

    def set_session_file(self, path: Any) -> None:
        self._call("pi/setSessionFile", path=path)

    # -- reading ------------------------------------------------------------------------------

    def get_leaf_id(self) -> Any:
        return self._call("pi/getLeaf").get("leafId", ABSENT)

    def get_leaf_entry(self) -> Any:
        return _null_to_absent(self._call("pi/getLeaf")["entry"])

    def get_entry(self, entry_id: Any) -> Any:
        return _null_to_absent(self._call("pi/getEntry", id=entry_id))

    def get_children(self, parent_id: Any) -> Any:
        return self._call("pi/getChildren", parentId=parent_id)

    def get_branch(self, from_id: Any = ABSENT) -> Any:
        return self._call("pi/getBranch", fromId=from_id)

    def get_tree(self) -> Any:
        return self._call("pi/getTree", form="reference")

    def get_label(self, entry_id: Any) -> Any:
        return _null_to_absent(self._call("pi/getLabel", id=entry_id))

    def get_session_name(self) -> Any:
        return _null_to_absent(self._call("pi/getSessionName"))

    def get_header(self) -> Any:
        return self._call("pi/getHeader")

    def get_entries(self) -> Any:
        return self._call("pi/getEntries")["entries"]

    def build_context_entries(self) -> Any:
        return self._call("pi/buildContextEntries")

    def build_session_context(self) -> Any:
        return self._call("pi/buildSessionContext")

    def build_session_projection(self) -> Any:
        return self._call("pi/buildSessionProjection")

    def get_entry_count(self) -> Any:
        return self._call("pi/getEntryCount")

    def is_persisted(self) -> Any:
        return self._info()["isPersisted"]

    def get_cwd(self) -> Any:
        return self._info()["cwd"]

    def get_session_dir(self) -> Any:
        return self._info()["sessionDir"]

    def uses_default_session_dir(self) -> Any:
        return self._info()["usesDefaultSessionDir"]

    def get_session_id(self) -> Any:
        return self._info()["sessionId"]

    def get_session_file(self) -> Any:
        return self._info().get("sessionFile", ABSENT)


class WireApi(runner.Api):
    """``runner.Api`` whose SessionManager is :class:`WireManager` (the exports stay in-process),
    following pi release ``pi``: the sidecar must have been started with ``--pi`` that release
    (its sessions follow it), and the runner asks the profile which reference names exist."""

    def __init__(self, wire: Wire, pi: str = runner.DEFAULT_PI) -> None:
        library = runner.Api.load(pi).module
        manager_class = type("BoundWireManager", (WireManager,), {"wire": wire})
        module = SimpleNamespace(
            **{name: getattr(library, name) for name in dir(library) if not name.startswith("_")}
        )
        module.SessionManager = manager_class
        super().__init__(module, pi)

    def manager_info(self, sm: Any) -> dict[str, Any]:
        info = sm._info()
        return {
            "sessionId": info["sessionId"],
            "sessionFile": info.get("sessionFile", ABSENT),
            "sessionDir": info["sessionDir"],
            "cwd": info["cwd"],
            "isPersisted": info["isPersisted"],
            "leafId": info.get("leafId", ABSENT),
            "header": info["header"],
            "entryCount": info["entryCount"],
        }

    def by_id(self, sm: Any) -> Any:
        index: dict[Any, Any] = {}
        for entry in sm.get_entries():
            index[index_key(entry.get("id", ABSENT))] = entry
        return index
