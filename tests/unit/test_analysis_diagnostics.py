"""Document diagnostics in domain terms: which code, on which line, where in the line."""

from __future__ import annotations

from pathlib import Path

import builders as S

from pi_session_server.analysis import codes
from pi_session_server.analysis.codes import CODES, Severity, markdown_table
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument

CALL: tuple[tuple[str, str, dict[str, object]], ...] = (("t1", "read", {}),)


def diags(*lines: str, newline: bool = True) -> list[tuple[int, str]]:
    doc = SessionDocument("\n".join(lines) + ("\n" if newline else ""))
    return [(d.line, d.code) for d in document_diagnostics(doc)]


def test_a_clean_session() -> None:
    assert (
        diags(S.header(), S.user("a", None), S.assistant("b", "a", calls=CALL), S.tool_result("c", "b", "t1"))
        == []
    )


def test_empty_file_is_fine_but_blank_lines_only_are_not() -> None:
    assert document_diagnostics(SessionDocument(b"")) == []
    assert diags("", "  ", newline=True) == [(0, "PI004"), (0, "PI010"), (1, "PI004")]


def test_header_cases() -> None:
    assert diags(S.user("a", None)) == [(0, "PI010")]
    assert diags("{oops", S.user("a", None)) == [(0, "PI001"), (1, "PI010")]
    assert diags("", S.header(), S.user("a", None)) == [
        (0, "PI004")
    ]  # blank lines before the header are fine
    assert diags("[1]", S.header()) == [(0, "PI003"), (1, "PI012")]  # a kept non-object comes first
    assert diags("null", S.header()) == [(0, "PI003")]  # falsy values are not kept
    assert diags(S.header().replace('"id":"01a22bbb-5993-736f-8ed9-3b7e7d11bef3"', '"id":5')) == [
        (0, "PI011")
    ]
    assert diags('{"type":"session"}') == [(0, "PI011"), (0, "PI015"), (0, "PI021"), (0, "PI021")]
    assert diags(S.header(), S.header(), S.header()) == [(1, "PI013"), (2, "PI013")]
    assert diags(S.user("a", None), S.header(), S.header()) == [(1, "PI012"), (2, "PI013")]


def test_bom_is_reported_once_and_the_header_still_read() -> None:
    assert diags("\ufeff" + S.header(), S.user("a", None)) == [(0, "PI014")]
    doc = SessionDocument(("\ufeff" + S.header() + "\n").encode())
    (d,) = document_diagnostics(doc)
    assert (d.start, d.end, d.severity) == (0, 3, Severity.ERROR)


def test_a_file_in_utf16_or_utf32_is_not_utf8_and_says_so_once_at_its_mark() -> None:
    text = "\n".join((S.header(), S.user("a", None))) + "\n"
    named = {
        "utf-16-le": "UTF-16LE",
        "utf-16-be": "UTF-16BE",
        "utf-32-le": "UTF-32LE",
        "utf-32-be": "UTF-32BE",
    }
    for encoding, name in named.items():
        doc = SessionDocument("\ufeff".encode(encoding) + text.encode(encoding))  # read from disk
        (not_utf8,) = [d for d in document_diagnostics(doc) if d.code == codes.NOT_UTF8]
        assert (not_utf8.line, not_utf8.start, not_utf8.end) == (0, 0, len("\ufeff".encode(encoding)))
        assert f"the file is {name} " in not_utf8.message


def test_an_editors_decoded_text_of_a_utf16_file_on_disk_is_not_utf8() -> None:
    doc = SessionDocument(S.header() + "\n")  # what an editor sends: the text, decoded
    assert doc.set_disk_start(b"\xff\xfe{\x00") is True
    (d,) = document_diagnostics(doc)
    assert (d.line, d.code, d.start, d.end) == (0, codes.NOT_UTF8, 0, 1)
    assert "UTF-16LE" in d.message and "on disk" in d.message
    assert doc.set_disk_start(b"\xff\xfe{\x00") is False  # the same start: nothing new
    assert doc.set_disk_start(b'{"ty') is True  # saved as UTF-8
    assert document_diagnostics(doc) == []
    assert doc.set_disk_start(b"\xef\xbb\xbf{") is True  # a UTF-8 mark: PI014, not PI017
    assert [d.code for d in document_diagnostics(doc)] == [codes.BOM]


def test_versions() -> None:
    assert diags(S.header(version=None), S.user("a", None)) == [(0, "PI015")]
    assert diags(S.header(version=2), S.user("a", None)) == [(0, "PI015")]
    assert diags(S.header(version="3"), S.user("a", None)) == []
    assert diags(S.header(version="x"), S.user("a", None)) == [(0, "PI016")]
    assert diags(S.header(version=4), S.user("a", None)) == [(0, "PI016")]


def test_v1_files_do_not_report_missing_ids_or_tree_problems() -> None:
    v1 = '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"toolResult","toolCallId":"x","toolName":"t","content":[],"isError":false,"timestamp":1}}'
    assert diags(S.header(version=None), v1, v1) == [(0, "PI015")]
    assert (1, "PI021") in diags(S.header(), v1)  # the same line in a v3 file lacks its ids


def test_last_line() -> None:
    assert diags(S.header(), '{"type":', newline=False) == [(1, "PI002")]
    assert diags(S.header(), '{"type":', newline=True) == [(1, "PI001")]
    assert diags(S.header(), S.user("a", None), newline=False) == [(1, "PI005")]
    assert diags(S.header(), "   ", newline=False) == [(1, "PI004")]


def test_tree_problems() -> None:
    assert diags(S.header(), S.user("a", None), S.user("a", None)) == [(1, "PI030"), (2, "PI030")]
    assert diags(S.header(), S.user("a", "zz")) == [(1, "PI031")]
    assert diags(S.header(), S.user("a", "a")) == [(1, "PI032")]
    assert diags(S.header(), S.user("a", "c"), S.user("b", "a"), S.user("c", "b"), S.user("d", "c")) == [
        (1, "PI032"),
        (2, "PI032"),
        (3, "PI032"),
    ]
    assert diags(S.header(), S.user("a", None), S.label("l", "a", "x")) == [(2, "PI033")]
    assert diags(S.header(), S.user("a", None), S.label("l", "a", "a")) == []
    assert diags(S.header(), S.user("a", None), S.compaction("c", "a", "zz")) == [(2, "PI034")]
    assert diags(S.header(), S.user("a", None), S.user("b", "a"), S.compaction("c", "b", "a")) == []
    assert diags(S.header(), S.user("a", None), S.branch_summary("s", "a", "root")) == []
    assert diags(S.header(), S.user("a", None), S.branch_summary("s", "a", "q")) == [(2, "PI035")]


def test_tool_pairs_follow_paths_not_file_order() -> None:
    # the call is on a sibling branch: the result does not answer it, and the call stays open
    lines = [
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=CALL),
        S.user("x", "a"),
        S.tool_result("c", "x", "t1"),
    ]
    assert diags(*lines) == [(2, "PI037"), (4, "PI036")]
    # answered on one of two branches is enough
    lines = [
        S.header(),
        S.user("a", None),
        S.assistant("b", "a", calls=CALL),
        S.tool_result("c", "b", "t1"),
        S.user("d", "b"),
    ]
    assert diags(*lines) == []
    # a far-away call (beyond the quick look-up) is still found through depths
    chain = [S.header(), S.user("a", None), S.assistant("b", "a", calls=CALL)]
    prev = "b"
    for i in range(40):
        chain.append(S.user(f"u{i}", prev))
        prev = f"u{i}"
    chain.append(S.tool_result("r", prev, "t1"))
    assert diags(*chain) == []


def test_positions_of_tree_diagnostics_are_the_values() -> None:
    line = S.user("b", "zz😀", "text 😀")
    doc = SessionDocument("\n".join([S.header(), S.user("a", None), line]) + "\n")
    (d,) = document_diagnostics(doc)
    raw = line.encode()
    assert raw[d.start : d.end] == '"zz😀"'.encode()


def test_a_parent_that_is_not_a_string_is_quoted_as_short_json_at_any_depth() -> None:
    deep = "[" * 5000 + "]" * 5000
    lines = [S.header(), S.user("a", None)]
    for n, parent in enumerate(('{"a":true,"b":null}', deep)):
        lines.append(S.user(f"b{n}", "p").replace('"parentId":"p"', f'"parentId":{parent}'))
    doc = SessionDocument("\n".join(lines) + "\n")
    messages = [d.message for d in document_diagnostics(doc) if d.code == "PI031"]
    assert messages[0].startswith('parentId `{"a":true,"b":null}` names no entry')
    assert messages[1].startswith("parentId `" + "[" * 39 + "…` names no entry")


def test_codes_have_a_documented_row_each() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "DIAGNOSTICS.md"
    assert markdown_table() in doc.read_text(encoding="utf-8")
    assert all(code.startswith("PI") and len(code) == 5 for code in CODES)


def test_a_call_left_unanswered_beside_an_answered_one_of_the_same_message() -> None:
    calls = (("t1", "read", {}), ("t2", "bash", {}))
    lines = (S.header(), S.user("a", None), S.assistant("b", "a", calls=calls))
    assert diags(*lines, S.tool_result("c", "b", "t2")) == [(2, codes.UNANSWERED_TOOL_CALL)]
    assert diags(*lines, S.tool_result("c", "b", "t1")) == [(2, codes.UNANSWERED_TOOL_CALL)]
    assert diags(*lines, S.tool_result("c", "b", "t1"), S.tool_result("d", "c", "t2")) == []
