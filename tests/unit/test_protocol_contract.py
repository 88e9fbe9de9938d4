"""protocol/ and the server agree: same methods, same schemas, and the session-line schema describes
what the library writes. (The end-to-end tests check every reply against the same documents.)"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server import errors as E
from pi_session_server.server.app import create_server
from pi_session_server.server.language_disk_reads import LARGE_FILE
from pi_session_server.server.protocol_doc import (
    METHODS,
    NOTIFICATIONS,
    TYPESCRIPT_PATH,
    render,
    render_typescript,
)
from pi_session_server.server.protocol_ts import ts_type
from pi_session_server.session import SessionManager

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "protocol"
DOCUMENT = PROTOCOL / "pi-session.openrpc.json"
LINE_SCHEMA = PROTOCOL / "session-line.schema.json"
TYPESCRIPT = ROOT / TYPESCRIPT_PATH
EXAMPLE = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"


def test_the_committed_document_is_the_generated_one() -> None:
    assert DOCUMENT.read_text(encoding="utf-8") == render(), (
        "protocol/ is stale: run `python -m pi_session_server.server.protocol_doc protocol`"
    )


def test_the_committed_typescript_is_the_generated_one() -> None:
    assert TYPESCRIPT.read_text(encoding="utf-8") == render_typescript(), (
        f"{TYPESCRIPT_PATH} is stale: run `python -m pi_session_server.server.protocol_doc protocol`"
    )


def test_every_registered_method_is_documented_and_vice_versa() -> None:
    server = create_server()
    registered = {name for name in server.connection.routes if name.startswith("pi/")}
    documented = {m["name"] for m in json.loads(DOCUMENT.read_text())["methods"]}
    assert registered == documented


def test_notifications_and_error_codes_are_documented() -> None:
    document = json.loads(DOCUMENT.read_text())
    notifications = ["pi/didChange", "pi/foreignWriter", LARGE_FILE]
    assert [n["name"] for n in document["x-notifications"]] == notifications
    assert {e["code"] for e in document["components"]["errors"].values()} == set(E.ERROR_CODES)
    for method in document["methods"]:
        for error in method["errors"]:
            assert error["code"] in E.ERROR_CODES
    assert [n.name for n in NOTIFICATIONS] == notifications


@pytest.mark.parametrize("method", [m.name for m in METHODS])
def test_schemas_are_valid_json_schema(method: str) -> None:
    document = json.loads(DOCUMENT.read_text())
    entry = next(m for m in document["methods"] if m["name"] == method)
    components = {"schemas": document["components"]["schemas"]}
    for schema in (
        entry["result"]["schema"],
        entry["x-paramsSchema"],
        *(p["schema"] for p in entry["params"]),
    ):
        jsonschema.Draft202012Validator.check_schema({**schema, "components": components})


def _line_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(LINE_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_example_session_matches_the_line_schema() -> None:
    validator = _line_validator()
    for number, line in enumerate(EXAMPLE.read_text(encoding="utf-8").splitlines()):
        errors = list(validator.iter_errors(json.loads(line)))
        assert not errors, f"line {number}: {errors[0].message}"


def test_what_the_library_writes_matches_the_line_schema(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), str(tmp_path))
    m.append_model_change("anthropic", "claude")
    m.append_thinking_level_change("high")
    user = m.append_message({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})
    m.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "api": "a",
            "provider": "anthropic",
            "model": "claude",
            "usage": {"input": 1},
            "stopReason": "stop",
            "timestamp": 2,
        }
    )
    m.append_usage("cache_warm", "anthropic", "claude", {"input": 1}, "n")
    m.append_custom_entry("ext", {"a": 1})
    m.append_custom_message_entry("ext", "text", True, {"d": 1})
    m.append_label_change(user, "here")
    m.append_label_change(user)
    m.append_session_info("name")
    m.append_compaction("summary", user, 100, {"readFiles": []}, False, {"input": 1})
    m.branch_with_summary(user, "summary")
    validator = _line_validator()
    written = Path(m.get_session_file()).read_text().splitlines()
    assert len(written) == 13
    for line in written:
        errors = list(validator.iter_errors(json.loads(line)))
        assert not errors, f"{line[:80]}: {errors[0].message}"


def test_pi_0_86_1_s_keep_nothing_compactions_match_the_line_schema(tmp_path: Path) -> None:
    """pi 0.86.1 writes "keep nothing" as ``firstKeptEntryId: null``, or without the key."""
    m = SessionManager.create(str(tmp_path), str(tmp_path), pi="0.86.1")
    m.append_message({"role": "user", "content": "hi", "timestamp": 1})
    m.append_message(
        {
            "role": "assistant",
            "content": [],
            "api": "a",
            "provider": "p",
            "model": "m",
            "usage": {"input": 1},
            "stopReason": "stop",
            "timestamp": 2,
        }
    )
    m.append_compaction("summary", None, 100)
    m.append_compaction("summary", ABSENT, 100)
    compactions = Path(m.get_session_file()).read_text().splitlines()[3:]
    assert '"firstKeptEntryId":null' in compactions[0] and "firstKeptEntryId" not in compactions[1]
    validator = _line_validator()
    for line in compactions:
        errors = list(validator.iter_errors(json.loads(line)))
        assert not errors, f"{line[:80]}: {errors[0].message}"


def test_the_line_schema_rejects_what_pi_does_not_write() -> None:
    validator = _line_validator()
    bad = [
        {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": "label", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z", "label": "x"},
        {"type": "session", "id": 5},
        {
            "type": "model_change",
            "id": "a",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "provider": "p",
            "modelId": "m",
        },
    ]
    for value in bad:
        assert list(validator.iter_errors(value)), value


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({}, "unknown"),
        ({"description": "any value"}, "unknown"),
        ({"$ref": "#/components/schemas/Entry"}, "Entry"),
        ({"anyOf": [{"$ref": "#/components/schemas/Entry"}, {"type": "null"}]}, "Entry | null"),
        ({"anyOf": [{"type": "string"}, {}]}, "unknown"),
        ({"type": ["integer", "null"]}, "number | null"),
        ({"enum": ["a", "it's"]}, "'a' | 'it\\'s'"),
        ({"const": True}, "true"),
        ({"enum": [1]}, "1"),
        ({"type": "array"}, "unknown[]"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "(string | null)[]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "Record<string, number>"),
        ({"type": "object"}, "Record<string, unknown>"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}, "b-c": {}}, "required": ["a"]},
            "{ a: string; 'b-c'?: unknown }",
        ),
    ],
)
def test_json_schemas_become_typescript_types(schema: dict[str, object], expected: str) -> None:
    assert ts_type(schema) == expected


def test_structures_become_interfaces_open_only_where_the_document_says_so() -> None:
    source = render_typescript()
    entry = source[source.index("export interface Entry {") :]
    assert "[member: string]: unknown;" in entry[: entry.index("\n}")]
    node = source[source.index("export interface TreeNode {") :]
    node = node[: node.index("\n}")]
    assert "[member: string]" not in node
    assert "  isLeaf: boolean;" in node and "  childIds?: unknown[];" in node
    assert "'pi/getTree': TreeView | TreeLevels | TreeReload | ReferenceTreeNode[];" in source
    assert "  getTree: 'pi/getTree'," in source and "  didChange: 'pi/didChange'," in source
    assert f"  UnknownSession: {E.UNKNOWN_SESSION}," in source
    # a param's documentation (a content descriptor of the document) reaches its member
    params = source[source.index("export interface GetEntriesParams {") :]
    assert (
        "   * ids repeat (a damaged file) that skips entries: page with `offset` instead (not both).\n"
        "   * pi/getTree (with `levels`, not with `revision`)" in params
    )
    assert "(`{reload: true, revision}`): load the tree anew.\n   */\n  since?: string;" in params
