"""Repairs as text edits: what each one produces, and that the problem is gone afterwards."""

from __future__ import annotations

import base64
import json
import re

import builders as S
import pytest
from analysis_documents import make

from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import (
    Repair,
    header_for,
    image_plan,
    migrated_text,
    nearest_surviving_ancestor,
    repairs,
)


def apply(doc: SessionDocument, repair: Repair) -> SessionDocument:
    for e in sorted(repair.edits(), key=lambda e: (e.start_line, e.start), reverse=True):
        doc.apply_edit(e.start_line, e.start, e.end_line, e.end, e.new_text)
    return doc


def only(doc: SessionDocument, line: int, path: str | None = None) -> Repair:
    (repair,) = repairs(doc, line, line, path)
    return repair


# docs/FORMAT.md §8.4, verbatim
V1_IN = """{"type":"session","id":"v1sess","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c","provider":"anthropic","modelId":"m","thinkingLevel":"off"}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}
{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":3}}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":1,"tokensBefore":10}
{"type":"compaction","timestamp":"2025-01-01T00:00:04.000Z","summary":"s2","firstKeptEntryIndex":0,"tokensBefore":10}
"""
V1_OUT = """{"type":"session","id":"v1sess","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/c","provider":"anthropic","modelId":"m","thinkingLevel":"off","version":3}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1},"id":"8645759c","parentId":null}
{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"custom","customType":"x","content":"h","display":true,"timestamp":3},"id":"4fcbc44c","parentId":"8645759c"}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","tokensBefore":10,"id":"c60cfb10","parentId":"4fcbc44c","firstKeptEntryId":"8645759c"}
{"type":"compaction","timestamp":"2025-01-01T00:00:04.000Z","summary":"s2","tokensBefore":10,"id":"ff83aefc","parentId":"c60cfb10"}
"""


def normalize_ids(text: str) -> str:
    ids: dict[str, str] = {}
    return re.sub(r'"([0-9a-f]{8})"', lambda m: '"' + ids.setdefault(m.group(1), f"id{len(ids)}") + '"', text)


def test_migration_matches_the_reference_example() -> None:
    doc = SessionDocument(V1_IN)
    assert normalize_ids(migrated_text(doc)) == normalize_ids(V1_OUT)
    repair = only(doc, 0)
    assert repair.title.startswith("Migrate to version 3")
    # the second compaction pointed at the header: the reference leaves it without firstKeptEntryId,
    # which pi reads as keeping nothing, as it wrote "keep nothing" (0.86.1): no problem
    migrated = apply(doc, repair)
    assert "firstKeptEntryId" not in migrated.line_text(4)
    assert document_diagnostics(migrated) == []


def test_migration_keeps_unparsable_lines_and_counts_non_objects_as_positions() -> None:
    lines = V1_IN.split("\n")
    # a non-object line before the compaction shifts its firstKeptEntryIndex positions (D3)
    text = (
        "\n".join(
            [
                lines[0],
                "[1]",
                lines[1],
                "",
                "{broken",
                lines[3].replace('"firstKeptEntryIndex":1', '"firstKeptEntryIndex":2'),
            ]
        )
        + "\n"
    )
    out = migrated_text(SessionDocument(text)).split("\n")
    assert out[1] == "[1]" and out[3] == "{broken" and len(out) == 6  # the blank line is dropped
    message, compaction = json.loads(out[2]), json.loads(out[4])
    assert compaction["firstKeptEntryId"] == message["id"]


def test_v2_migration_renames_hook_messages_only() -> None:
    hook = '{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":3}}'
    out = migrated_text(make(S.header(version=2), hook))
    assert out == S.header(version=3) + "\n" + hook.replace("hookMessage", "custom") + "\n"


def test_remove_truncated_line_and_bom_and_duplicate_header() -> None:
    doc = make(S.header(), S.user("a", None), '{"type":"mess', newline=False)
    assert apply(doc, only(doc, 2)).text() == S.header() + "\n" + S.user("a", None) + "\n"
    doc = make("\ufeff" + S.header(), S.user("a", None))
    assert apply(doc, only(doc, 0)).text() == make(S.header(), S.user("a", None)).text()
    doc = make(S.header(), S.user("a", None), S.header(), newline=False)
    assert apply(doc, only(doc, 2)).text() == S.header() + "\n" + S.user("a", None)


def test_insert_header_from_pi_file_name() -> None:
    path = "/home/me/.pi/agent/sessions/--home-me-proj--/2026-11-30T09-13-48-180Z_01a22bbb-5993-736f-8ed9-3b7e7d11bef3.jsonl"
    header = header_for(make(S.user("a", None)), path)
    assert header == {
        "type": "session",
        "version": 3,
        "id": "01a22bbb-5993-736f-8ed9-3b7e7d11bef3",
        "timestamp": "2026-11-30T09:13:48.180Z",
        "cwd": "/home/me/proj",
    }
    doc = make(S.user("a", None, timestamp="2025-05-05T05:05:05.005Z"))
    anywhere = header_for(doc, "/tmp/notes.jsonl")
    assert anywhere["timestamp"] == "2025-05-05T05:05:05.005Z" and len(anywhere["id"]) == 36
    assert document_diagnostics(apply(doc, only(doc, 0, "/tmp/notes.jsonl"))) == []


def test_the_header_of_a_document_without_a_file_names_the_directory_given_else_the_working_one(
    tmp_path, monkeypatch
) -> None:
    """pi writes its working directory in a header: a document that has no file (an editor's
    untitled one) has no session directory to read it from."""
    doc = make(S.user("a", None))
    assert header_for(doc, None, "/home/me/proj")["cwd"] == "/home/me/proj"
    monkeypatch.chdir(tmp_path)
    assert header_for(doc, None)["cwd"] == str(tmp_path)
    # a file's own place wins over the directory given
    assert header_for(doc, "/tmp/notes.jsonl", "/home/me/proj")["cwd"] == "/tmp"


def test_the_header_inserted_before_version_1_entries_is_version_1_and_its_cwd_absolute(
    tmp_path, monkeypatch
) -> None:
    """Entries without ids were written before pi had them: a version 3 header would make pi read
    them as they are (every entry a root without an id); without a version pi migrates them. The
    cwd of a file named relative to the working directory is that directory, absolute."""
    v1 = make(
        '{"type":"message","timestamp":"2025-05-05T05:05:05.005Z","message":{"role":"user","content":"hi"}}'
    )
    header = header_for(v1, "/tmp/old.jsonl")
    assert "version" not in header and header["cwd"] == "/tmp"
    assert header_for(make(S.user("a", None)), "/tmp/new.jsonl")["version"] == 3
    monkeypatch.chdir(tmp_path)
    assert header_for(v1, "old.jsonl")["cwd"] == str(tmp_path)
    pi_dir = tmp_path / "--home-me-proj--"
    pi_dir.mkdir()
    monkeypatch.chdir(pi_dir)
    assert header_for(v1, "old.jsonl")["cwd"] == "/home/me/proj"


def test_no_header_is_offered_for_a_jsonl_file_of_something_else() -> None:
    """A JSONL file none of whose lines is a pi entry is not a session that lost its header: PI010
    says pi refuses it, and no repair makes it a session (`repair DIR` would have, by default)."""
    data = make('{"name":"alice","age":3}', '{"type":"click","at":1}')
    assert [d.code for d in document_diagnostics(data)][:1] == ["PI010"]
    assert [r for r in repairs(data, 0, data.line_count - 1, "/tmp/data.jsonl") if r.code == "PI010"] == []
    session = make(S.user("a", None))
    assert [r.title for r in repairs(session, 0, 0, "/tmp/s.jsonl") if r.code == "PI010"] == [
        "Insert a session header"
    ]


def test_move_header_first() -> None:
    doc = make(S.user("a", None), S.header())
    assert apply(doc, only(doc, 1)).text() == make(S.header(), S.user("a", None)).text()


def test_repairs_are_offered_for_the_problems_reported_only() -> None:
    tree_problems = [
        S.user("a", "b"),  # a cycle
        S.user("b", "a"),
        S.user("c", "gone"),  # a missing parent
        S.tool_result("r", "c", "t9"),  # a result without its call
    ]
    offered: dict[str, set[tuple[str, int]]] = {}
    for version in (3, None):
        doc = make(S.header(version=version), *tree_problems)
        reported = {(d.code, d.line) for d in document_diagnostics(doc)}
        offered[str(version)] = {(r.code, r.line) for r in repairs(doc, 0, doc.line_count - 1)}
        assert offered[str(version)] <= reported
    assert {"PI031", "PI032", "PI036"} <= {code for code, _ in offered["3"]}
    assert offered["None"] == {("PI015", 0)}  # version 1: tree checks are not reported, nor repaired


def test_nearest_surviving_ancestor_skips_descendants() -> None:
    doc = make(S.header(), S.user("a", None), S.user("x", "a"), S.user("c", "gone"), S.user("d", "c"))
    assert nearest_surviving_ancestor(doc, doc.lines[3]).id == "x"  # type: ignore[union-attr]
    # d descends from the orphan c: an orphan that came *before* its descendants cannot pick them
    doc = make(S.header(), S.user("d", "c"), S.user("c", "gone"))
    assert nearest_surviving_ancestor(doc, doc.lines[2]) is None
    repair = only(doc, 2)
    assert repair.title.startswith("Make this entry a root")
    assert document_diagnostics(apply(doc, repair)) == []


@pytest.mark.parametrize(
    "data",
    [
        # two base64 strings written one after the other: a lenient decode stops at the padding
        base64.b64encode(b"\x89PNG one") + base64.b64encode(b"two"),
        # base64url: a lenient decode drops '-' and '_' and returns other bytes
        base64.urlsafe_b64encode(b"\x89PN\xfb\xef\xfe"),
        base64.b64encode(b"\x89PNG wrapped") + b"\n",
        b"QR==",  # non-zero bits after the data: it would not come back the same
    ],
    ids=["concatenated", "base64url", "whitespace", "non-canonical"],
)
def test_image_plan_refuses_data_that_is_not_one_strict_base64_string(data: bytes) -> None:
    doc = make(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t", "r", {}),)),
        S.tool_result("c", "b", "t", images=((data.decode(), "image/png"),)),
    )
    assert image_plan(doc, doc.lines[3], ("message", "content", 1), "/s/x.jsonl") is None


def test_a_repair_of_a_key_written_twice_changes_the_value_pi_reads() -> None:
    # JSON.parse keeps the last "parentId": the first one is left as it is, the last one repaired
    doc = make(
        S.header(),
        S.user("a", None),
        S.user("b", "a").replace('"parentId":"a"', '"parentId":"a","parentId":"gone"'),
    )
    repair = only(doc, 2)
    assert repair.title.startswith("Re-parent to `a`")
    assert '"parentId":"a","parentId":"a"' in apply(doc, repair).line_text(2)
    assert document_diagnostics(doc) == []


def test_image_plan_decodes_and_replaces_the_block() -> None:
    data = base64.b64encode(b"\x89PNG fake").decode()
    doc = make(
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=(("t", "r", {}),)),
        S.tool_result("c", "b", "t", images=((data, "image/png"),)),
    )
    plan = image_plan(doc, doc.lines[3], ("message", "content", 1), "/s/2026_x.jsonl")
    assert plan is not None
    assert plan.data == b"\x89PNG fake" and plan.file_name == "2026_x.c.1.png"
    doc.apply_edit(
        plan.edit.start_line, plan.edit.start, plan.edit.end_line, plan.edit.end, plan.edit.new_text
    )
    block = json.loads(doc.line_text(3))["message"]["content"][1]
    assert block == {
        "type": "text",
        "text": "[image moved out of the session: 2026_x.c.1.png (image/png, 9 bytes)]",
    }


def test_removing_the_unterminated_last_line_of_a_crlf_file_takes_the_whole_crlf_before_it() -> None:
    """The edit starts before the CR: one between CR and LF is past the line's end to an editor,
    which would clamp it (and remove the CRLF) where a byte splice leaves a lone CR."""
    lines = (S.header(), S.user("a", None), S.header())  # a second header, last, unterminated
    doc = SessionDocument("\r\n".join(lines).encode())
    (edit,) = only(doc, 2).edits()
    assert (edit.start_line, edit.start) == (1, len(lines[1].encode()))  # before the CR
    assert apply(doc, only(doc, 2)).data() == "\r\n".join(lines[:2]).encode()
