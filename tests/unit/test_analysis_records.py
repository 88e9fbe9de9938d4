"""Typed records of session lines and the JSON Schema generated from them."""

from __future__ import annotations

import json

import jsonschema
import msgspec
import pytest

from pi_session_server.format import records as R

# one line of each type, as pi writes them (docs/FORMAT.md §4, §6)
SPEC_LINES = {
    "session": '{"type":"session","version":3,"id":"01a22bbb-5993-736f-8ed9-3b7e7d11bef3","timestamp":"2026-11-30T09:13:48.180Z","cwd":"/proj"}',
    "message": '{"type":"message","id":"d58e845e","parentId":"3d60fd9a","timestamp":"2026-11-30T09:13:48.184Z","message":{"role":"user","content":"hi","timestamp":1}}',
    "model_change": '{"type":"model_change","id":"83fe4f09","parentId":null,"timestamp":"2026-11-30T09:13:48.184Z","provider":"anthropic","modelId":"m"}',
    "branch_summary": '{"type":"branch_summary","id":"8dddb6e9","parentId":"2381aac9","timestamp":"2026-11-30T09:15:38.690Z","fromId":"f8b8cc34","summary":"summary","details":{"d":1},"fromHook":true}',
    "custom": '{"type":"custom","customType":"ct","data":{"k":1},"id":"870d8733","parentId":"0953e7fc","timestamp":"2026-11-30T08:56:22.634Z"}',
    "custom_message": '{"type":"custom_message","customType":"cm","content":"content","display":false,"id":"654746a4","parentId":"870d8733","timestamp":"2026-11-30T08:56:22.637Z"}',
    "label": '{"type":"label","id":"j0k1l2m3","parentId":"i9j0k1l2","timestamp":"2024-12-03T14:30:00.000Z","targetId":"a1b2c3d4","label":"checkpoint-1"}',
    "session_info": '{"type":"session_info","id":"1f174029","parentId":null,"timestamp":"2026-11-30T09:16:40.980Z","name":"a  b c"}',
}

USAGE = '{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cacheWrite1h":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}'
ASSISTANT = (
    '{"type":"message","id":"b","parentId":"a","timestamp":"2026-11-30T09:13:48.184Z","message":{"role":"assistant",'
    '"content":[{"type":"thinking","thinking":"t","redacted":false},{"type":"text","text":"x"},'
    '{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/a"}}],"api":"a","provider":"p","model":"m",'
    f'"usage":{USAGE},"stopReason":"toolUse","timestamp":2}}}}'
)


@pytest.mark.parametrize("name", sorted(SPEC_LINES))
def test_spec_examples_decode_to_their_record(name: str) -> None:
    record = R.decode_line(SPEC_LINES[name])
    expected = {
        "session": R.SessionHeader,
        "message": R.MessageEntry,
        "model_change": R.ModelChangeEntry,
        "branch_summary": R.BranchSummaryEntry,
        "custom": R.CustomEntry,
        "custom_message": R.CustomMessageEntry,
        "label": R.LabelEntry,
        "session_info": R.SessionInfoEntry,
    }[name]
    assert type(record) is expected


def test_assistant_message_fields_are_typed_and_camel_cased() -> None:
    record = R.decode_line(ASSISTANT)
    assert isinstance(record, R.MessageEntry) and isinstance(record.message, R.AssistantMessage)
    message = record.message
    assert [type(b) for b in message.content] == [R.ThinkingContent, R.TextContent, R.ToolCall]
    assert message.usage.cache_write_1h == 0 and message.usage.total_tokens == 3
    assert message.stop_reason == "toolUse"
    assert record.parent_id == "a"


def test_newer_types_and_roles_are_representable() -> None:
    unknown = R.decode_line('{"type":"future_entry","id":"x","parentId":null,"timestamp":"t","extra":1}')
    assert isinstance(unknown, R.UnknownEntry) and unknown.type == "future_entry"
    edit = R.decode_line(
        '{"type":"context_edit","id":"x","parentId":"a","timestamp":"t","targetId":"a","replacement":null}'
    )
    assert isinstance(edit, R.ContextEditEntry) and edit.target_id == "a" and edit.replacement is None
    with pytest.raises(msgspec.ValidationError, match="replacement"):  # D10: not an edit
        R.decode_line('{"type":"context_edit","id":"x","parentId":"a","timestamp":"t","targetId":"a"}')
    odd = R.decode_line(
        '{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{"role":"robot","beep":1}}'
    )
    assert isinstance(odd, R.MessageEntry) and isinstance(odd.message, R.UnknownMessage)
    assert odd.message.role == "robot"


def test_unknown_fields_are_accepted_and_wrong_types_rejected() -> None:
    line = json.loads(SPEC_LINES["model_change"])
    line["futureField"] = {"a": 1}
    assert isinstance(R.decode_line(json.dumps(line)), R.ModelChangeEntry)
    line["modelId"] = 5
    with pytest.raises(msgspec.ValidationError):
        R.decode_line(json.dumps(line))


def test_known_sets() -> None:
    assert {
        "message",
        "model_change",
        "thinking_level_change",
        "usage",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "context_edit",
        "label",
        "session_info",
    } == R.ENTRY_TYPES
    assert {"system", "user", "assistant", "toolResult", "bashExecution", "custom"} <= R.MESSAGE_ROLES


def test_json_schema_accepts_what_pi_writes_and_names_the_wrong() -> None:
    validator = jsonschema.Draft202012Validator(R.session_line_schema())
    jsonschema.Draft202012Validator.check_schema(R.session_line_schema())
    for line in (*SPEC_LINES.values(), ASSISTANT):
        assert list(validator.iter_errors(json.loads(line))) == [], line
    # newer entry types and roles are valid lines
    assert validator.is_valid({"type": "future_entry", "id": "x", "parentId": None, "timestamp": "t"})
    edit = {"type": "context_edit", "id": "x", "parentId": "a", "timestamp": "t", "targetId": "a"}
    assert validator.is_valid({**edit, "replacement": {"content": [{"type": "text", "text": "t"}]}})
    assert not validator.is_valid(edit)  # D10: a context_edit without a replacement is malformed
    assert not validator.is_valid({**edit, "replacement": {"content": 5}})
    assert validator.is_valid(
        {"type": "message", "id": "x", "parentId": None, "timestamp": "t", "message": {"role": "robot"}}
    )
    bad = json.loads(SPEC_LINES["label"])
    bad["targetId"] = 7
    assert not validator.is_valid(bad)
    assert not validator.is_valid({"type": "message", "id": "x", "parentId": None, "timestamp": "t"})


def test_message_schema() -> None:
    validator = jsonschema.Draft202012Validator(R.message_schema())
    assert validator.is_valid({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})
    assert not validator.is_valid({"role": "user", "content": 5, "timestamp": 1})
    assert validator.is_valid({"role": "somethingNew"})
