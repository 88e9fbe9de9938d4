"""One line: its envelope and its own problems, on the fast (typed) and the slow (exact) path."""

from __future__ import annotations

import json

import builders as S
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.analysis import lines as L
from pi_session_server.analysis.fields import NOT_NEEDED, check_fields, render_path
from pi_session_server.analysis.lines import scan_line
from pi_session_server.format import records as R
from pi_session_server.format.jsjson import parse
from pi_session_server.format.jsvalue import ABSENT


def scan(text: str) -> L.LineInfo:
    return scan_line(text.encode("utf-8", "surrogatepass"), "surrogatepass")


def codes(info: L.LineInfo) -> list[tuple[str, object]]:
    return [(p.code, p.path) for p in info.problems]


def test_envelope_of_a_conforming_assistant_line() -> None:
    info = scan(S.assistant("b", "a", calls=(("t1", "read", {}), ("t2", "bash", {}))))
    assert (info.kind, info.etype, info.id, info.parent_id, info.role) == (
        L.ENTRY,
        "message",
        "b",
        "a",
        "assistant",
    )
    assert info.call_ids == ("t1", "t2") and info.call_blocks == (1, 2)
    assert info.problems == ()


def test_envelope_of_tool_results_labels_compactions_and_headers() -> None:
    assert scan(S.tool_result("c", "b", "t1")).result_call_id == "t1"
    assert scan(S.label("l", "c", "a")).ref == "a"
    assert scan(S.compaction("k", "c", "a")).ref == "a"
    assert scan(S.branch_summary("s", "c", "root")).ref == "root"
    header = scan(S.header(version=2))
    assert (header.kind, header.version, header.id) == (L.HEADER, 2, "01a22bbb-5993-736f-8ed9-3b7e7d11bef3")
    assert scan(S.header(version=None)).version is ABSENT


def test_invalid_json_column_is_a_byte_offset_after_multibyte_text() -> None:
    text = '{"type":"message","content":"😀数据\u2028", oops}'
    info = scan(text)
    assert info.kind == L.MALFORMED
    (problem,) = info.problems
    # the range says where: a column in the text would count in one unit while the editor shows its own
    assert problem.code == "PI001" and problem.message == "invalid JSON: Expected double-quoted property name"
    index = text.index("oops")
    start = len(text[:index].encode())
    assert problem.span == (start, start + 1)


def test_blank_non_object_and_falsy_lines() -> None:
    assert scan("").kind == L.BLANK and codes(scan("   \u3000")) == [("PI004", None)]
    for text, kept in (
        ("123", True),
        ('"x"', True),
        ("[]", True),
        ("null", False),
        ("0", False),
        ('""', False),
    ):
        info = scan(text)
        assert (info.kind, info.kept) == (L.NON_OBJECT, kept)
        assert codes(info) == [("PI003", None)]


def test_bom_is_looked_through_only_on_the_first_line() -> None:
    text = "\ufeff" + S.header()
    assert scan(text).kind == L.MALFORMED
    first = scan_line(text.encode(), first=True)
    assert first.kind == L.HEADER and first.bom and first.problems == ()


def test_slow_path_names_every_problem_with_its_path() -> None:
    line = {
        "type": "message",
        "id": 5,
        "parentId": None,
        "timestamp": "2026-11-30T09:13:48.180Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text"},
                {"type": "video"},
                {"type": "toolCall", "id": "t", "name": "n", "arguments": []},
            ],
            "api": "a",
            "provider": "p",
            "usage": {"input": 1},
            "stopReason": "pending",
            "timestamp": 1,
        },
    }
    info = scan(json.dumps(line))
    found = sorted((p.code, render_path(p.path or ())) for p in info.problems)
    assert found == sorted(
        [
            ("PI022", "id"),
            ("PI021", "message.content[0]"),
            ("PI024", "message.content[1].type"),
            ("PI022", "message.content[2].arguments"),
            ("PI021", "message"),  # model
            ("PI021", "message.usage"),  # output
            ("PI021", "message.usage"),  # cacheRead
            ("PI021", "message.usage"),  # cacheWrite
            # not totalTokens: pi adds up the token counts when it is missing
            ("PI021", "message.usage"),  # cost
            ("PI026", "message.stopReason"),
        ]
    )
    assert info.call_ids == ("t",)


def test_unknown_type_and_role_are_information_not_errors() -> None:
    info = scan('{"type":"newthing","id":"x","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z"}')
    assert codes(info) == [("PI020", ("type",))]
    info = scan(
        '{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z","message":{"role":"robot"}}'
    )
    assert codes(info) == [("PI023", ("message", "role"))]


def test_v1_lines_mark_missing_ids_as_expected() -> None:
    info = scan(
        '{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":1,"tokensBefore":10}'
    )
    assert {p.v1_expected for p in info.problems} == {True}
    # id and parentId (no firstKeptEntryId: keeping nothing is written without it, by pi 0.86.1)
    assert [p.missing for p in info.problems] == ["id", "parentId"]


def test_timestamps_pi_cannot_read() -> None:
    assert scan(S.user("a", None, timestamp="2025-01-01T00:00:00Z")).problems == ()
    assert scan(S.user("a", None, timestamp="2025-01-01 00:00:00")).problems == ()  # V8 accepts (D9)
    assert codes(scan(S.user("a", None, timestamp="soon"))) == [("PI025", ("timestamp",))]


def test_huge_images(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "HUGE_IMAGE_CHARS", 100)
    line = S.tool_result("c", "b", "t", images=(("QUJD" * 30, "image/png"), ("QQ==", "image/png")))
    assert codes(scan(line)) == [("PI040", ("message", "content", 1))]
    custom = json.dumps(
        {
            "type": "custom_message",
            "customType": "x",
            "content": [{"type": "image", "data": "A" * 200, "mimeType": "image/jpeg"}],
            "display": True,
            "id": "i",
            "parentId": None,
            "timestamp": "2026-11-30T09:13:48.180Z",
        }
    )
    (problem,) = scan(custom).problems
    assert problem.code == "PI040" and "image/jpeg" in problem.message and "150 bytes" in problem.message


# --- the fast path and the slow path agree ----------------------------------------------------

BASE_LINES = [
    S.header(),
    S.user("a", None, "hi"),
    S.user(
        "a", None, [{"type": "text", "text": "x"}, {"type": "image", "data": "QQ==", "mimeType": "image/png"}]
    ),
    S.assistant("b", "a", calls=(("t", "read", {"p": 1}),), thinking="t"),
    S.tool_result("c", "b", "t"),
    S.label("l", "c", "a"),
    S.compaction("k", "c", "a"),
    S.branch_summary("s", "c", "root"),
    S.model_change("m", None),
    S.session_info("i", None, "name"),
]

REPLACEMENTS = [None, 1, "s", True, [], {}, [1], {"type": "text"}]


def _mutations(value: object, path: tuple = ()) -> list[tuple]:
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_mutations(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_mutations(v, (*path, i)))
    return out


def _mutate(value: object, path: tuple, replacement: object, delete: bool) -> object:
    value = json.loads(json.dumps(value))
    target = value
    for part in path[:-1]:
        target = target[part]  # type: ignore[index]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = replacement  # type: ignore[index]
    return value


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_typed_decode_and_field_checks_agree(data: st.DataObject) -> None:
    """msgspec accepts a line exactly when the field checker finds nothing (same record types)."""
    base = json.loads(data.draw(st.sampled_from(BASE_LINES)))
    paths = _mutations(base)
    path = data.draw(st.sampled_from(paths))
    delete = data.draw(st.booleans())
    mutated = _mutate(base, path, data.draw(st.sampled_from(REPLACEMENTS)), delete)
    text = json.dumps(mutated)
    try:
        R.decode_line(text)
        typed_ok = True
    except msgspec.ValidationError:
        typed_ok = False
    problems = (
        [p for p in check_fields(parse(text)) if p.code not in ("PI020", "PI023")]
        if isinstance(mutated, dict)
        else ["x"]
    )
    # a required field pi never needs (usage.totalTokens) is not reported missing: the one exception
    never_needed = delete and path[-1] in {name for _, name in NOT_NEEDED}
    assert typed_ok == (not problems) or (never_needed and not typed_ok and not problems), (text, problems)
