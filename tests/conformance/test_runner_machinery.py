"""The conformance runner's own machinery, checked against a small fake library.

The fake stands in for ``pi_session_server.session`` so directives, views, records, file specs,
``final``, the deadline, normalization and serialization can be tested on their own. Expected
values follow the oracle's contract (its README.md, in $PI_ORACLE_DIR).
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pi_session_server.format.jsvalue import ABSENT  # noqa: E402

import docformat  # noqa: E402
import jsbridge  # noqa: E402
import nodefs  # noqa: E402
import piconf  # noqa: E402
import runner  # noqa: E402

VECTORS = HERE / "vectors"

# ---------------------------------------------------------------------------
# The fake library
# ---------------------------------------------------------------------------


class FakeError(Exception):
    name = "Error"
    code: str | None = None


class FakeAbort(FakeError):
    name = "AbortError"


class FakeExists(FakeError):
    code = "EEXIST"


class FakeNode:
    def __init__(self, entry: dict[str, Any], label: Any = ABSENT):
        self.entry = entry
        self.children: list[FakeNode] = []
        self.label = label
        self.label_timestamp = ABSENT if label is ABSENT else "2025-01-01T00:00:00.000Z"

    def to_json(self) -> dict[str, Any]:
        out = {"entry": self.entry, "children": [c.to_json() for c in self.children]}
        if self.label is not ABSENT:
            out["label"] = self.label
            out["labelTimestamp"] = self.label_timestamp
        return out


class FakeContext:
    def __init__(self, messages: list[Any]):
        self.messages = messages
        self.thinking_level = "off"
        self.model = None

    def to_json(self) -> dict[str, Any]:
        return {"messages": self.messages, "thinkingLevel": self.thinking_level, "model": self.model}


class FakeManager:
    calls: ClassVar[list[tuple[str, tuple[Any, ...]]]] = []  # every instance's, reset by each test

    def __init__(self, cwd: Any):
        self.cwd = cwd
        self.entries: list[dict[str, Any]] = []
        self.leaf: Any = None
        self.labels: dict[str, str] = {}
        self.counter = 0

    @classmethod
    def in_memory(cls, cwd: Any = ABSENT, options: Any = ABSENT, entries: Any = ABSENT) -> FakeManager:
        cls.calls.append(("in_memory", (cwd, options, entries)))
        return cls("/fake" if cwd is ABSENT else cwd)

    @classmethod
    def list(cls, cwd: Any, session_dir: Any = ABSENT, on_progress: Any = None, signal: Any = None) -> Any:
        if signal is not None and getattr(signal, "aborted", False):
            raise FakeAbort("This operation was aborted")
        return []

    @classmethod
    def find_by_id(cls, cwd: Any, session_id: Any, session_dir: Any = ABSENT) -> Any:
        while True:
            pass

    def get_session_id(self) -> str:
        return "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

    def get_session_file(self) -> Any:
        return ABSENT

    def get_session_dir(self) -> str:
        return ""

    def get_cwd(self) -> Any:
        return self.cwd

    def is_persisted(self) -> bool:
        return False

    def get_leaf_id(self) -> Any:
        return self.leaf

    def get_header(self) -> dict[str, Any]:
        return {"type": "session", "version": 3, "id": self.get_session_id(), "cwd": self.cwd}

    def get_entries(self) -> list[dict[str, Any]]:
        return list(self.entries)

    def get_session_name(self) -> Any:
        return ABSENT

    def append_message(self, message: Any) -> str:
        self.counter += 1
        entry_id = "%08x" % (0xC0FFEE00 + self.counter)  # looks generated: renamed #n
        self.entries.append({"type": "message", "id": entry_id, "parentId": self.leaf, "message": message})
        self.leaf = entry_id
        return entry_id

    def append_label_change(self, target_id: Any, label: Any = ABSENT) -> str:
        self.calls.append(("append_label_change", (target_id, label)))
        if isinstance(target_id, str):
            self.labels[target_id] = label
        return self.append_message({"role": "label"})

    def branch(self, entry_id: Any) -> None:
        if not any(e["id"] == entry_id for e in self.entries):
            raise FakeError(f"Entry {jsbridge.js_to_string(entry_id)} not found")
        self.leaf = entry_id

    def reset_leaf(self) -> None:
        self.leaf = None

    def set_session_file(self, path: Any) -> None:
        raise FakeExists(f"EEXIST: file already exists, open '{path}'")

    def get_tree(self) -> list[FakeNode]:
        nodes = {e["id"]: FakeNode(e, self.labels.get(e["id"], ABSENT)) for e in self.entries}
        roots = []
        for e in self.entries:
            parent = nodes.get(e["parentId"])
            (parent.children if parent else roots).append(nodes[e["id"]])
        return roots

    def get_branch(self, from_id: Any = ABSENT) -> list[Any]:
        while True:  # the reference on a parentId cycle
            pass

    def build_session_context(self) -> FakeContext:
        return FakeContext([e["message"] for e in self.entries])

    def get_entry(self, entry_id: Any) -> Any:
        return next((e for e in self.entries if e["id"] == entry_id), ABSENT)

    def build_context_entries(self) -> Any:
        deep: list[Any] = []
        for _ in range(5000):  # deeper than the default recursion limit
            deep = [deep]
        return deep

    def get_children(self, parent_id: Any) -> Any:
        raise KeyError("boom")

    def get_label(self, entry_id: Any) -> Any:
        return os.environ.get("HOME")  # lets a test see the scenario's environment


def _fake_module() -> types.ModuleType:
    m = types.ModuleType("fake_session")
    m.SessionManager = FakeManager  # type: ignore[attr-defined]
    m.CURRENT_SESSION_VERSION = 3  # type: ignore[attr-defined]

    def migrate_session_entries(entries: list[Any]) -> None:
        for e in entries:
            e["migrated"] = True

    def assert_valid_session_id(value: Any) -> None:
        if value == "":
            raise FakeError("bad id")

    def build_session_context(entries: Any, leaf_id: Any = ABSENT, by_id: Any = None) -> dict[str, Any]:
        return {"messages": [e.get("message") for e in entries], "leaf": leaf_id}

    m.migrate_session_entries = migrate_session_entries  # type: ignore[attr-defined]
    m.assert_valid_session_id = assert_valid_session_id  # type: ignore[attr-defined]
    m.build_session_context = build_session_context  # type: ignore[attr-defined]
    return m


def run(
    scenario: dict[str, Any], tmp_path: Path | None = None, pi: str = runner.DEFAULT_PI
) -> dict[str, Any]:
    FakeManager.calls = []
    base = str(tmp_path) if tmp_path else str(HERE)
    report = runner.execute(json.loads(json.dumps(scenario)), base, runner.Api(_fake_module(), pi))
    assert report.text.endswith("\n")
    with runner._recursion_limit(20000):
        return json.loads(report.text)


def mem(*ops: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"start": {"op": "inMemory", "args": ["/p"]}, "ops": list(ops), **extra}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


# ---------------------------------------------------------------------------
# Records, directives, views
# ---------------------------------------------------------------------------


def test_records_name_generated_ids_and_omit_undefined() -> None:
    doc = run(
        mem(
            {"op": "appendMessage", "args": [user("a")], "as": "u1"},
            {"op": "getEntry", "args": ["nope"]},
            {"op": "getLeafId"},
            {"op": "resetLeaf"},
            {"op": "getLeafId"},
        )
    )
    assert doc["status"] == "ok"
    assert doc["start"]["result"]["sessionId"] == "S1"
    assert "sessionFile" not in doc["start"]["result"]
    assert doc["ops"][0] == {"i": 0, "op": "appendMessage", "as": "u1", "result": "#1"}
    assert doc["ops"][1] == {"i": 1, "op": "getEntry"}  # undefined: no result key
    assert doc["ops"][2]["result"] == "#1"
    assert doc["ops"][3] == {"i": 3, "op": "resetLeaf"}  # void method returning None
    assert doc["ops"][4]["result"] is None  # null stays null
    assert doc["final"] == {"files": [], "dirsCreated": []}


def test_ref_get_and_failed_ops() -> None:
    doc = run(
        mem(
            {"op": "appendMessage", "args": [user("a")], "as": "u1"},
            {"op": "getEntries", "as": "all"},
            {"op": "branch", "args": [{"$ref": "all", "$get": "0.id"}]},
            {"op": "branch", "args": [{"$ref": 1, "$get": ["0", "message", "content"]}]},
            {"op": "getEntry", "args": ["missing"], "as": "gone"},
            {"op": "branch", "args": [{"$ref": "gone", "$get": "id"}]},
            {"op": "branch", "args": [{"$ref": 9}]},
            {"op": "branch", "args": [{"$ref": "nobody"}]},
            {"op": "branch", "args": [{"$ref": None}]},
            {"op": "getEntries", "view": "count", "as": "n"},
            {"op": "branch", "args": [{"$ref": "n", "$get": "length"}]},
        )
    )
    ops = doc["ops"]
    assert "error" not in ops[2]
    assert ops[3]["error"] == "Entry a not found"
    assert ops[5]["error"] == "Entry undefined not found"  # a missing required argument is undefined
    assert ops[6] == {"i": 6, "op": "branch", "error": "$ref 9: no such op result", "runnerError": True}
    assert ops[7]["error"] == '$ref "nobody": no such named result'
    assert ops[8]["error"] == "$ref null: no such named result"
    assert ops[10]["error"] == "Entry 1 not found"  # $ref is the raw value, not the viewed one


def test_directive_values_reach_the_library() -> None:
    doc = run(
        mem(
            {"op": "appendLabelChange", "args": [{"$path": "a/../b"}, {"$undefined": True}]},
            {"op": "appendLabelChange", "args": [{"$fileUrl": "x y"}, {"$number": "-0"}]},
            {"op": "appendLabelChange", "args": [{"$literal": {"$path": "kept"}}, {"$number": "NaN"}]},
            {"op": "appendLabelChange", "args": ["t", {"$number": "nope"}]},
            {"op": "appendLabelChange", "args": [{"$leafId": True}, {"$sessionFile": True}, "surplus"]},
        )
    )
    calls = [args for name, args in FakeManager.calls if name == "append_label_change"]
    assert len(calls) == 4  # the op with a bad directive never reached the library
    work_dir = calls[0][0][: -len("/b")]
    assert calls[0] == (work_dir + "/b", ABSENT)
    assert calls[1][0] == "file://" + work_dir + "/x%20y"
    assert str(calls[1][1]) == "-0.0"
    assert calls[2][0] == {"$path": "kept"} and calls[2][1] != calls[2][1]
    assert doc["ops"][3] == {
        "i": 3,
        "op": "appendLabelChange",
        "error": "bad $number nope",
        "runnerError": True,
    }
    assert calls[3] == (
        "c0ffee03",
        ABSENT,
    )  # the leaf id; $sessionFile is undefined in memory; surplus dropped


def test_views_and_pick() -> None:
    doc = run(
        mem(
            {"op": "appendMessage", "args": [user("a")], "as": "u1"},
            {"op": "appendMessage", "args": [{"role": "assistant"}]},
            {"op": "branch", "args": [{"$ref": "u1"}]},
            {"op": "appendMessage", "args": [None]},
            {"op": "appendLabelChange", "args": [{"$ref": "u1"}, "L"]},
            {"op": "getTree", "view": "ids"},
            {"op": "getTree", "view": "flat"},
            {"op": "getTree", "view": "flat", "pick": ["type", "id", "label", "nope"]},
            {"op": "buildSessionContext", "view": "roles"},
            {"op": "buildSessionContext", "view": "count"},
            {"op": "getEntries", "view": "types"},
            {"op": "getEntries", "view": "ids"},
            {"op": "getLeafId", "view": "count"},
            {"op": "getEntries", "view": "flat"},
            {"op": "getEntries", "view": "sideways"},
            {"op": "info", "pick": ["leafId", "entryCount", "sessionFile"]},
        )
    )
    ops = doc["ops"]
    assert ops[5]["result"] == [[0, "#1"], [1, "#2"], [1, "#3"], [2, "#4"]]
    assert ops[6]["result"][0] == {
        "depth": 0,
        "id": "#1",
        "parentId": None,
        "type": "message",
        "label": "L",
        "labelTimestamp": "2025-01-01T00:00:00.000Z",
    }
    assert list(ops[7]["result"][0]) == ["type", "id", "label"]
    assert ops[8]["result"] == {
        "messages": ["user", "assistant", None, "label"],
        "thinkingLevel": "off",
        "model": None,
    }
    assert ops[9]["result"] == 4
    assert ops[10]["result"] == ["message"] * 4
    assert ops[11]["result"] == ["#1", "#2", "#3", "#4"]
    assert ops[12] == {
        "i": 12,
        "op": "getLeafId",
        "error": 'view "count" not applicable',
        "runnerError": True,
    }
    assert ops[13]["error"] == 'view "flat" only applies to getTree results'
    assert ops[14]["error"] == "unknown view: sideways"
    assert list(ops[15]["result"]) == ["leafId", "entryCount"]  # pick order; undefined dropped


def test_unknown_and_misplaced_ops() -> None:
    doc = run(
        {
            "ops": [
                {"op": "getLeafId"},
                {"op": "appendBranchSummary"},
                {"op": "_persist"},
                {"op": "SessionManager.appendMessage"},
                {"op": "fn.SessionManager"},
                {"op": "fn.nothing"},
                {"op": "fn.CURRENT_SESSION_VERSION", "args": [1]},
                {"op": 3},
                "text",
                {"op": "info"},
                {"op": "readFile"},
            ]
        }
    )
    ops = doc["ops"]
    assert "start" not in doc
    assert ops[0]["error"] == "no current session manager"
    assert [o["error"] for o in ops[1:6]] == [
        "unknown op: appendBranchSummary",
        "unknown op: _persist",
        "unknown op: SessionManager.appendMessage",
        "unknown op: fn.SessionManager",
        "unknown op: fn.nothing",
    ]
    assert all(o["runnerError"] for o in ops[:6])
    assert ops[6]["result"] == 3
    assert ops[7] == {"i": 7, "op": None, "error": "op must be a string", "runnerError": True}
    assert ops[8] == {"i": 8, "op": None, "error": "op must be an object", "runnerError": True}
    assert ops[9]["error"] == ops[10]["error"] == "no current session manager"


def test_library_errors_names_and_codes() -> None:
    doc = run(
        mem(
            {"op": "setSessionFile", "args": ["x"]},
            {
                "op": "list",
                "args": ["/p", {"$undefined": True}, {"$undefined": True}, {"$abortedSignal": True}],
            },
            {"op": "branch", "args": [7]},
            {"op": "fn.assertValidSessionId", "args": ["ok"]},
            {"op": "fn.migrateSessionEntries", "args": [[{"a": 1}]]},
            {"op": "fn.buildSessionContext", "args": [{"$entries": True}]},
        )
    )
    ops = doc["ops"]
    assert ops[0] == {
        "i": 0,
        "op": "setSessionFile",
        "error": "EEXIST: file already exists, open 'x'",
        "errorCode": "EEXIST",
    }
    assert ops[1] == {"i": 1, "op": "list", "error": "This operation was aborted", "errorName": "AbortError"}
    assert ops[2]["error"] == "Entry 7 not found" and "errorName" not in ops[2]
    assert ops[3] == {"i": 3, "op": "fn.assertValidSessionId"}
    assert ops[4]["result"] == [{"a": 1, "migrated": True}]


def test_python_exceptions_are_reported_with_their_class() -> None:
    doc = run(mem({"op": "getChildren", "args": ["x"]}, {"op": "getEntry"}))
    assert doc["ops"][0] == {"i": 0, "op": "getChildren", "error": "'boom'", "errorName": "KeyError"}
    assert doc["ops"][1] == {"i": 1, "op": "getEntry"}  # getEntry(undefined) -> undefined


def test_deep_results_are_reported() -> None:
    doc = run(mem({"op": "buildContextEntries"}))
    depth, value = 0, doc["ops"][0]["result"]
    while value:
        depth, value = depth + 1, value[0]
    assert depth == 5000


def test_switch_false_and_constructor_results() -> None:
    doc = run(
        mem(
            {"op": "appendMessage", "args": [user("a")]},
            {"op": "inMemory", "args": ["/other"], "switch": False, "as": "other"},
            {"op": "getCwd"},
            {"op": "inMemory", "args": [{"$undefined": True}, {"id": "x"}], "pick": ["cwd", "entryCount"]},
            {"op": "getCwd"},
        )
    )
    assert doc["ops"][1]["result"]["cwd"] == "/other"
    assert doc["ops"][2]["result"] == "/p"
    assert doc["ops"][3]["result"] == {"cwd": "/fake", "entryCount": 0}
    assert doc["ops"][4]["result"] == "/fake"


# ---------------------------------------------------------------------------
# Environment, deadline
# ---------------------------------------------------------------------------


def test_environment_is_set_and_restored() -> None:
    cwd, home = os.getcwd(), os.environ.get("HOME")
    doc = run(
        mem(
            {"op": "getLabel", "args": ["x"]},
            {"op": "listDir", "args": [""]},
            {"op": "exists", "args": ["agent"]},
        )
    )
    assert doc["ops"][0]["result"] == "<W>/home"
    assert doc["ops"][1]["result"] == ["home"]
    assert doc["ops"][2]["result"] is False
    assert os.getcwd() == cwd and os.environ.get("HOME") == home


def test_deadline_reports_the_running_op_and_drops_final() -> None:
    cwd = os.getcwd()
    doc = run(
        mem(
            {"op": "appendMessage", "args": [user("a")]},
            {"op": "getBranch", "as": "never"},
            {"op": "getLeafId"},
            timeoutMs=300,
            final={"snapshot": True},
        )
    )
    assert doc["status"] == "timeout"
    assert doc["ops"][-1] == {"i": 1, "op": "getBranch", "timeout": True}
    assert len(doc["ops"]) == 2 and "final" not in doc
    assert os.getcwd() == cwd


def test_deadline_in_start() -> None:
    doc = run({"start": {"op": "findById", "args": ["/p", "x"]}, "ops": [{"op": "info"}], "timeoutMs": 200})
    assert doc == {"status": "timeout", "start": {"i": 0, "op": "findById", "timeout": True}, "ops": []}


# ---------------------------------------------------------------------------
# Files: specs, dumps, final
# ---------------------------------------------------------------------------


def test_file_specs_and_final_sections(tmp_path: Path) -> None:
    (tmp_path / "fx.jsonl").write_bytes(b'{"a":1}\n')
    doc = run(
        {
            "files": {
                "crlf.jsonl": {"lines": ['{"b":2}', "bad"], "eol": "\r\n", "trailingNewline": False},
                "bom.txt": {"text": "x", "bom": True},
                "raw.bin": {"base64": "_-8"},
                "copy.jsonl": {"fixture": "fx.jsonl"},
                "empty": {"lines": []},
                "d/sub": {"dir": True},
                "old.txt": {"text": "keep"},
                "gone.txt": {"text": "bye"},
            },
            "ops": [
                {"op": "readFile", "args": ["crlf.jsonl"]},
                {"op": "readFile", "args": ["raw.bin"], "parsed": False},
                {"op": "readFile", "args": ["crlf.jsonl"], "slice": [-1]},
                {"op": "readFile", "args": ["d/sub"]},
                {
                    "op": "writeFile",
                    "args": ["new/n.jsonl", {"lines": ["1", "1e400", "-0", '{"2":1,"1":2}']}],
                },
                {"op": "appendFile", "args": ["empty", "text"]},
                {"op": "deleteFile", "args": ["gone.txt"]},
                {"op": "deleteFile", "args": ["d/sub"]},
                {"op": "listDir", "args": ["nowhere"]},
            ],
            "final": {"files": "all"},
        },
        tmp_path,
    )
    ops = doc["ops"]
    assert ops[0]["result"] == {
        "exists": True,
        "lineCount": 2,
        "trailingNewline": False,
        "lines": [{"raw": '{"b":2}\r', "json": {"b": 2}}, {"raw": "bad", "invalid": True}],
    }
    assert ops[1]["result"]["lines"] == [{"raw": "\ufffd\ufffd"}]
    assert (
        ops[2]["result"]["lines"] == [{"raw": "bad", "invalid": True}] and ops[2]["result"]["lineCount"] == 2
    )
    assert ops[3]["result"] == {"exists": True, "directory": True}
    assert ops[7] == {
        "i": 7,
        "op": "deleteFile",
        "error": "Path is a directory: rm returned EISDIR (is a directory) <W>/d/sub",
        "errorName": "SystemError",
        "errorCode": "ERR_FS_EISDIR",
    }
    assert ops[8]["error"] == "ENOENT: no such file or directory, scandir '<W>/nowhere'"
    files = {f["path"]: f for f in doc["final"]["files"]}
    assert [f["path"] for f in doc["final"]["files"]] == sorted(files)
    assert files["gone.txt"] == {"path": "gone.txt", "status": "deleted"}
    assert files["old.txt"]["status"] == "unchanged"
    assert files["empty"]["status"] == "modified" and files["empty"]["lines"] == [
        {"raw": "text", "invalid": True}
    ]
    assert files["bom.txt"]["lines"][0]["raw"] == "\ufeffx"
    assert files["copy.jsonl"]["lines"] == [{"raw": '{"a":1}', "json": {"a": 1}}]
    created = files["new/n.jsonl"]
    assert created["status"] == "created"
    assert [line.get("json") for line in created["lines"]] == [1, None, 0, {"1": 2, "2": 1}]
    assert doc["final"]["dirsCreated"] == ["new"]
    text = runner.execute(
        {"files": {"a": {"text": "x"}}, "ops": [], "final": {"files": "none"}}, str(tmp_path)
    ).text
    assert json.loads(text) == {"status": "ok", "ops": [], "final": {}}


def test_set_mtime_matches_node() -> None:
    # Node: utimesSync(p, new Date(1700000000123)) gives mtimeNs 1700000000122999000 (libuv
    # truncates seconds-as-double to microseconds); -1500.7 gives -1500000000.
    doc = run(
        {
            "files": {"a": {"text": "x", "mtimeMs": 1700000000123}},
            "ops": [
                {"op": "setMtime", "args": ["b", 5]},
                {"op": "setMtime", "args": ["a", {"$undefined": True}]},
            ],
        }
    )
    assert doc["ops"][0]["error"] == "ENOENT: no such file or directory, utime '<W>/b'"
    assert doc["ops"][1]["error"] == "EINVAL: invalid argument, utime '<W>/a'"
    path = os.path.join(os.getcwd(), "mtime-probe")
    try:
        Path(path).write_text("x")
        nodefs.set_times(path, jsbridge.js_date_value(1700000000123))
        assert os.stat(path).st_mtime_ns == 1700000000122999000
        nodefs.set_times(path, jsbridge.js_date_value(-1500.7))
        assert os.stat(path).st_mtime_ns == -1500000000
    finally:
        os.unlink(path)


def test_snapshot_in_final() -> None:
    doc = run(mem({"op": "appendMessage", "args": [user("a")]}, final={"snapshot": True, "files": "none"}))
    snap = doc["final"]["snapshot"]
    assert list(snap) == [
        "sessionId",
        "sessionDir",
        "cwd",
        "isPersisted",
        "leafId",
        "header",
        "entryCount",
        "entries",
        "tree",
        "context",
    ]
    assert snap["tree"] == [{"depth": 0, "id": "#1", "parentId": None, "type": "message"}]
    assert run({"ops": [], "final": {"snapshot": True}})["final"]["snapshot"] == {
        "error": "no current session manager"
    }


# ---------------------------------------------------------------------------
# JS value semantics
# ---------------------------------------------------------------------------


def test_js_loads_follows_json_parse() -> None:
    v = jsbridge.js_loads('{"b":1,"10":2,"2":3,"b":4,"x":-0,"big":12345678901234567890,"f":1.0}')
    assert list(v) == ["2", "10", "b", "x", "big", "f"] and v["b"] == 4
    assert str(v["x"]) == "-0.0" and v["big"] == 12345678901234567890.0
    for bad in ("NaN", "[Infinity]", "\ufeff{}", "{} x", "\u00a0{}", '"\x01"'):
        with pytest.raises(ValueError):
            jsbridge.js_loads(bad)
    assert jsbridge.js_loads(" \t\r\n[1e400]\r") == [float("inf")]


def test_to_jsonable_mirrors_json_stringify() -> None:
    import datetime

    value = {
        "u": ABSENT,
        "n": float("nan"),
        "z": -0.0,
        "a": [ABSENT, float("inf"), 2.0],
        "d": datetime.datetime(2025, 1, 2, 3, 4, 5, 678900, tzinfo=datetime.UTC),
        "o": FakeContext(["m"]),
        "5": 1,
    }
    assert list(jsbridge.to_jsonable(value).items()) == [
        ("5", 1),
        ("n", None),
        ("z", 0),
        ("a", [None, None, 2]),
        ("d", "2025-01-02T03:04:05.678Z"),
        ("o", {"messages": ["m"], "thinkingLevel": "off", "model": None}),
    ]
    assert jsbridge.to_jsonable(ABSENT) is ABSENT
    with pytest.raises(jsbridge.NotSerializable):
        jsbridge.to_jsonable(object())


def test_path_helpers_follow_node() -> None:
    assert jsbridge.path_resolve("/w", "") == "/w"
    assert jsbridge.path_resolve("/w", "a/../b/") == "/w/b"
    assert jsbridge.path_resolve("/w", "//x//y") == "/x/y"
    assert jsbridge.path_join("/w", "d/") == "/w/d/"
    assert jsbridge.path_to_file_url("/tmp/a b/c#d?e%f~ü") == "file:///tmp/a%20b/c%23d%3Fe%25f%7E%C3%BC"
    assert jsbridge.js_slice([1, 2, 3, 4], [-3, -1]) == [2, 3]
    assert jsbridge.js_slice([1, 2, 3], [1]) == [2, 3]
    assert jsbridge.js_slice([1, 2, 3], [None, 2.9]) == [1, 2]


def test_dates_follow_new_date() -> None:
    assert jsbridge.js_date_value(1.9) == 1
    assert jsbridge.js_date_value(None) == 0
    assert jsbridge.js_date_value("2025-01-01T00:00:00Z") == 1735689600000
    assert jsbridge.js_date_value("2025-01-01") == 1735689600000
    assert jsbridge.js_date_value(8.64e15 + 1) != jsbridge.js_date_value(8.64e15 + 1)  # NaN


# ---------------------------------------------------------------------------
# The fast document formatter agrees with piconf
# ---------------------------------------------------------------------------


def _sample_expected_files() -> list[Path]:
    top = sorted(VECTORS.glob("*.expected.json"))
    gen = sorted((VECTORS / "generated").glob("*.expected.json"))[::40]
    return top + gen


@pytest.mark.parametrize("path", _sample_expected_files(), ids=lambda p: p.name)
def test_fast_dumps_reproduces_expected_files(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert docformat.js_dumps(doc) + "\n" == text


def test_fast_formatter_agrees_with_piconf_on_raw_values() -> None:
    work = "/tmp/pi-conf-abc123"
    raw = {
        "status": "ok",
        "ops": [
            {"s": f"{work}/agent/sessions/--tmp-pi-conf-abc123--/2025-01-01T00-00-00-000Z_x.jsonl"},
            {"ids": ["0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "deadbeef", "cafebabe x deadbeef", "literal1"]},
            {
                "t": [
                    "2025-01-01T00:00:00.000Z",
                    "1999-01-01T00:00:00.000Z",
                    1735689600000,
                    1735689600000.0,
                    17,
                ]
            },
            {"k": {"deadbeef": 1, "12345678": 2, "\u2028\x7f\ud800": '\x00\x1f"\\'}},
            {"n": [1e21, 1e-7, 5e-324, -1.5, 2**53, 2**60, 0.1 + 0.2]},
        ],
    }
    scenario = {"ops": [{"op": "x", "args": ["literal1"]}]}
    t0, t1 = 1735689600000 - 500, 1735689600000 + 500
    expected = piconf.js_dumps(piconf.normalize(raw, scenario, "/", work, t0, t1))
    assert docformat.js_dumps(docformat.normalize(raw, scenario, "/", work, t0, t1)) == expected
    assert '"<W>/agent/sessions/--<W->--/<FTS>_x.jsonl"' in expected


def test_runner_cli_prints_the_document(tmp_path: Path) -> None:
    import subprocess

    sc = tmp_path / "x.scenario.json"
    sc.write_text(json.dumps({"ops": [{"op": "exists", "args": ["home"]}]}))
    out = subprocess.run(
        [sys.executable, str(HERE / "runner.py"), str(sc)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout)["ops"] == [{"i": 0, "op": "exists", "result": True}]


# ---------------------------------------------------------------------------
# pi releases
# ---------------------------------------------------------------------------


class FakeManager16(FakeManager):
    """A library with pi 1.6.0's additions; the constructor records the release it is given."""

    @classmethod
    def in_memory(
        cls, cwd: Any = ABSENT, options: Any = ABSENT, entries: Any = ABSENT, *, pi: str = "?"
    ) -> FakeManager:
        cls.calls.append(("in_memory", (cwd, pi)))
        return cls("/fake" if cwd is ABSENT else cwd)

    def get_entry_count(self) -> int:
        return len(self.entries) + 100

    def build_session_projection(self) -> dict[str, Any]:
        entries = [{"sourceEntry": e, "messages": [e["message"]]} for e in self.entries]
        return {"entries": [*entries, None], "messages": [], "thinkingLevel": "off", "model": None}


def _run_16(scenario: dict[str, Any], pi: str) -> dict[str, Any]:
    module = _fake_module()
    module.SessionManager = FakeManager16  # type: ignore[attr-defined]
    module.project_context_entry = lambda entry, edit: ["projected"]  # type: ignore[attr-defined]
    FakeManager.calls = []
    report = runner.execute(json.loads(json.dumps(scenario)), str(HERE), runner.Api(module, pi))
    return json.loads(report.text)


NEW_IN_1_6_0 = mem(
    {"op": "appendMessage", "args": [user("a")]},
    {"op": "getEntryCount"},
    {"op": "buildSessionProjection", "view": "projection"},
    {"op": "fn.projectContextEntry", "args": [{}, None]},
)


def test_names_of_a_newer_release_are_unknown_ops_under_an_older_one() -> None:
    doc = _run_16(NEW_IN_1_6_0, "0.86.1")
    assert [r.get("error") for r in doc["ops"][1:]] == [
        "unknown op: getEntryCount",
        "unknown op: buildSessionProjection",
        "unknown op: fn.projectContextEntry",
    ]
    assert all(r.get("runnerError") for r in doc["ops"][1:])
    assert FakeManager.calls == [("in_memory", ("/p", "0.86.1"))]  # the release reaches the constructor


def test_names_of_the_release_are_called_and_projections_have_a_view() -> None:
    doc = _run_16(NEW_IN_1_6_0, "1.6.0")
    assert doc["ops"][1] == {"i": 1, "op": "getEntryCount", "result": 101}
    assert doc["ops"][2]["result"] == {
        "entries": [{"id": "#1", "type": "message", "roles": ["user"]}, {}],
        "thinkingLevel": "off",
        "model": None,
    }
    assert doc["ops"][3]["result"] == ["projected"]
    assert FakeManager.calls == [("in_memory", ("/p", "1.6.0"))]


def test_the_projection_view_needs_a_projection() -> None:
    doc = run(mem({"op": "getEntries", "view": "projection"}))
    assert doc["ops"][0] == {
        "i": 0,
        "op": "getEntries",
        "error": 'view "projection" only applies to session projections',
        "runnerError": True,
    }


def test_functions_without_a_pi_parameter_are_called_without_it() -> None:
    doc = run(mem({"op": "fn.buildSessionContext", "args": [[], "leaf"]}), pi="0.86.1")
    assert doc["ops"][0]["result"] == {"messages": [], "leaf": "leaf"}


def test_an_api_and_a_different_release_do_not_mix() -> None:
    with pytest.raises(ValueError, match=r"follows pi 1\.6\.0"):
        runner.execute(mem(), str(HERE), runner.Api(_fake_module(), "1.6.0"), "0.86.1")


def test_unknown_release_is_refused() -> None:
    from pi_session_server.errors import PiVersionError

    with pytest.raises(PiVersionError, match=r"unknown pi version '0\.9'"):
        runner.Api(_fake_module(), "0.9")


@pytest.mark.parametrize("pi", runner.PI_VERSIONS)
def test_runner_cli_takes_the_release(tmp_path: Path, pi: str) -> None:
    import subprocess

    sc = tmp_path / "x.scenario.json"
    sc.write_text(json.dumps(mem({"op": "getEntryCount"})))
    out = subprocess.run(
        [sys.executable, str(HERE / "runner.py"), "--pi", pi, str(sc)],
        capture_output=True,
        text=True,
        check=True,
    )
    record = json.loads(out.stdout)["ops"][0]
    assert record == (
        {"i": 0, "op": "getEntryCount", "result": 0}
        if pi == "1.6.0"
        else {
            "i": 0,
            "op": "getEntryCount",
            "error": "unknown op: getEntryCount",
            "runnerError": True,
        }
    )
