"""Lines glued together (PI006): found in a line JSON.parse rejects, reported with their pieces, and
split back into lines pi reads again (the entries after them get their parent back)."""

from __future__ import annotations

import itertools
from pathlib import Path

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.analysis.diagnostics import Diagnostic, document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.hover import hover
from pi_session_server.analysis.positions import UTF32, to_column
from pi_session_server.analysis.repairs import Repair, repairs
from pi_session_server.commands.check_analysis import report_file
from pi_session_server.format import glued
from pi_session_server.format.glued import glued_pieces
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

HEADER = S.header()
A = S.user("aaaa0001", None, "first")
B = S.assistant("bbbb0002", "aaaa0001", "second")
C = S.user("cccc0003", "bbbb0002", "third")
D = S.user("dddd0004", "cccc0003", "fourth")


def doc(*lines: str, final_newline: bool = True) -> SessionDocument:
    return SessionDocument("\n".join(lines) + ("\n" if final_newline else ""))


def found(d: SessionDocument) -> list[tuple[int, str]]:
    return [(x.line, x.code) for x in document_diagnostics(d)]


def the(d: SessionDocument, code: str) -> Diagnostic:
    (one,) = [x for x in document_diagnostics(d) if x.code == code]
    return one


def repaired(d: SessionDocument, repair: Repair) -> str:
    for e in sorted(repair.edits(), key=lambda e: (e.start_line, e.start), reverse=True):
        d.apply_edit(e.start_line, e.start, e.end_line, e.end, e.new_text)
    return d.text()


def titled(d: SessionDocument, line: int, start: str) -> Repair:
    (one,) = [r for r in repairs(d, line, line) if r.title.startswith(start)]
    return one


# -- finding the pieces ------------------------------------------------------------------------


def test_a_cut_off_line_with_a_whole_entry_glued_after_it() -> None:
    cut = B[:57]
    pieces = glued_pieces((cut + C).encode())
    assert pieces is not None
    assert [(p.start, p.end, p.whole, p.id) for p in pieces] == [
        (0, len(cut), False, pieces[0].id),
        (len(cut), len(cut) + len(C), True, "cccc0003"),
    ]
    assert pieces[1].type == "message" and pieces[1].column == len(cut)


def test_whole_entries_glued_and_a_trailing_cut_off_line() -> None:
    pieces = glued_pieces((A + B + C[:40]).encode())
    assert pieces is not None
    assert [(p.whole, p.id) for p in pieces][:2] == [(True, "aaaa0001"), (True, "bbbb0002")]
    assert not pieces[2].whole and pieces[2].start == len(A) + len(B)


def test_interleaved_writes_cut_a_line_in_two_around_another() -> None:
    # a writer that splits a line into two writes, with another whole line landing in between
    head, tail = C[:50], C[50:]
    pieces = glued_pieces((head + B + tail + D).encode())
    assert pieces is not None
    assert [(p.whole, p.id if p.whole else None) for p in pieces] == [
        (False, None),
        (True, "bbbb0002"),
        (False, None),
        (True, "dddd0004"),
    ]


@pytest.mark.parametrize("space", [" ", "\t", "\r", "  \r "])
def test_json_white_space_between_glued_entries_is_no_line_of_its_own(space: str) -> None:
    d = doc(HEADER, A + space + B, C)
    assert the(d, "PI006").message.startswith("2 lines glued together: entry `aaaa0001`")
    text = repaired(d, titled(d, 1, "Split the glued line into its 2 lines"))
    assert text == "\n".join([HEADER, A + space, B, C]) + "\n"  # no blank line left (PI004)
    assert found(SessionDocument(text)) == []


def test_content_blocks_inside_a_cut_off_line_are_not_entries() -> None:
    # cut right after a content block: the block is an object starting with {"type": too
    message = S.tool_result("eeee0005", "bbbb0002", "t1")
    block_end = message.index("}]") + 1
    pieces = glued_pieces((message[:block_end] + C).encode())
    assert pieces is not None
    assert [(p.whole, p.start) for p in pieces] == [(False, 0), (True, block_end)]


def test_no_glue_without_a_whole_entry_or_with_one_json_parse_rejects() -> None:
    assert glued_pieces(b'{"type":"message","id":"x"') is None  # just cut off
    assert glued_pieces(B[:80].encode() + C[:60].encode()) is None  # two cut-off lines
    nan = C.replace('"content":"third"', '"content":NaN')
    assert glued_pieces((B[:80] + nan).encode()) is None  # Python's scanner takes NaN, JSON.parse not
    assert glued_pieces(b"plain garbage") is None


def test_offsets_are_bytes_even_past_invalid_utf8_and_emoji() -> None:
    cut = B[:57].encode() + b"\xff\xfe" + "😀".encode()
    pieces = glued_pieces(cut + C.encode())
    assert pieces is not None
    assert pieces[1].start == len(cut) and pieces[1].column == 57 + 2 + 1


def test_a_crlf_line_keeps_its_carriage_return_with_the_last_piece() -> None:
    raw = (B[:57] + C + "\r").encode()
    pieces = glued_pieces(raw)
    assert pieces is not None and pieces[-1].end == len(raw)


# -- diagnostics -------------------------------------------------------------------------------


def test_reported_instead_of_invalid_json_at_the_glue() -> None:
    cut = B[:57]
    d = doc(HEADER, A, cut + C, D)
    assert found(d) == [(2, "PI006"), (3, "PI031")]
    glued = the(d, "PI006")
    assert (glued.start, glued.end) == (len(cut), len(cut) + 1)
    assert "entry `cccc0003` (message)" in glued.message and "pi skips the whole line" in glued.message


@pytest.mark.parametrize("first", ["é", "数", "😀"])
def test_the_range_at_the_glue_is_the_whole_first_character_of_the_piece(first: str) -> None:
    cut = first + '","timestamp":1}}'  # the end of a line cut inside a string, after a whole entry
    d = doc(HEADER, A, B + cut + C, D)
    glued = the(d, "PI006")
    assert (glued.start, glued.end) == (len(B), len(B) + len(first.encode()))


def test_the_entry_after_a_glued_parent_is_told_where_its_parent_is() -> None:
    d = doc(HEADER, A, B[:57] + C, D)
    orphan = the(d, "PI031")
    assert "inside line 3" in orphan.message
    assert [(r.line, r.message) for r in orphan.related] == [(2, "the glued line holding the parent")]


def test_a_parent_that_is_really_gone_keeps_the_plain_message() -> None:
    d = doc(HEADER, A, B[:57] + C, S.user("ffff0006", "gone0000"))
    assert "names no entry: pi shows" in the(d, "PI031").message


def test_a_glued_last_line_without_newline_is_not_called_truncated() -> None:
    d = doc(HEADER, A, B + C, final_newline=False)
    assert found(d) == [(2, "PI006")]


def test_a_glued_first_line_after_a_byte_order_mark() -> None:
    d = doc("\ufeff" + HEADER + A, B)
    glued = the(d, "PI006")
    assert glued.line == 0 and glued.start == 3 + len(HEADER)


def test_a_plain_malformed_line_is_still_invalid_json() -> None:
    assert found(doc(HEADER, A, '{"type":"message","id":"zz",oops}', B)) == [(2, "PI001")]


# -- repairs -----------------------------------------------------------------------------------


def test_split_puts_each_piece_on_its_own_line() -> None:
    d = doc(HEADER, A + B + C, D)
    text = repaired(d, titled(d, 1, "Split the glued line into its 3 lines"))
    assert text == "\n".join([HEADER, A, B, C, D]) + "\n"  # exactly the lines before they were glued
    assert found(SessionDocument(text)) == []


def test_split_keeps_a_cut_off_part_as_its_own_line() -> None:
    cut = B[:57]
    d = doc(HEADER, A, cut + C, D)
    text = repaired(d, titled(d, 2, "Split the glued line into its 2 lines"))
    assert text == "\n".join([HEADER, A, cut, C, D]) + "\n"
    assert found(SessionDocument(text)) == [(2, "PI001"), (3, "PI031")]  # C's parent B was cut off


def test_split_and_drop_removes_only_the_cut_off_parts() -> None:
    head, tail = C[:50], C[50:]
    d = doc(HEADER, A, head + B + tail + D)
    (preferred,) = [r for r in repairs(d, 2, 2) if r.preferred]
    assert preferred.title == "Split the glued line into its 4 lines"
    text = repaired(d, titled(d, 2, "Split the glued line and remove the cut-off 2 parts"))
    assert text == "\n".join([HEADER, A, B, D]) + "\n"


def test_split_and_drop_in_a_crlf_file() -> None:
    text = "\r\n".join([HEADER, A, B + C[:40], D]) + "\r\n"
    d = SessionDocument(text)
    fixed = repaired(d, titled(d, 2, "Split the glued line and remove"))
    # the cut-off part goes, the line's "\r" stays: the file keeps one kind of line break
    assert fixed == "\r\n".join([HEADER, A, B, D]) + "\r\n"
    assert found(SessionDocument(fixed)) == [(3, "PI031")]  # D's parent C was the cut-off line


def test_split_in_a_crlf_file_breaks_lines_as_the_file_does() -> None:
    text = "\r\n".join([HEADER, A, B[:57] + C + D]) + "\r\n"
    d = SessionDocument(text)
    fixed = repaired(d, titled(d, 2, "Split the glued line into"))
    assert fixed == "\r\n".join([HEADER, A, B[:57], C, D]) + "\r\n"
    d = SessionDocument("\r\n".join([A, B]) + "\r\n")
    fixed = repaired(d, titled(d, 0, "Insert a session header"))
    assert fixed.endswith("\r\n".join(["", A, B, ""])) and fixed.count("\r\n") == 3 == fixed.count("\n")


def test_the_orphan_offers_to_split_the_line_holding_its_parent_first() -> None:
    d = doc(HEADER, A, B + C, D)
    offered = repairs(d, 3, 3)
    assert [(r.title.split(",")[0], r.preferred) for r in offered] == [
        ("Split line 3", True),
        ("Re-parent to `aaaa0001` (line 2)", False),
    ]
    text = repaired(d, offered[0])
    assert text == "\n".join([HEADER, A, B, C, D]) + "\n"


def test_pi_reads_the_entries_back_after_the_split(tmp_path: Path) -> None:
    glued_file = tmp_path / "glued.jsonl"
    glued_file.write_text("\n".join([HEADER, A, B[:57] + C, D]) + "\n", encoding="utf-8")
    before = SessionManager.open(str(glued_file), read_only=True)
    assert [e["id"] for e in before.get_branch()] == ["dddd0004"]  # pi: C is lost, D is a root
    d = SessionDocument(glued_file.read_bytes())
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text(repaired(d, titled(d, 2, "Split the glued line into")), encoding="utf-8")
    after = SessionManager.open(str(fixed), read_only=True)
    assert [e["id"] for e in after.get_branch()] == ["cccc0003", "dddd0004"]


def test_the_loader_says_a_line_is_lines_glued_together(tmp_path: Path) -> None:
    # what a library user (and pi-session tree / context) learns of the line pi skips
    glued_file = tmp_path / "glued.jsonl"
    glued_file.write_text("\n".join([HEADER, A, B[:57] + C, "{broken", D]) + "\n", encoding="utf-8")
    problems = SessionManager.open(str(glued_file), read_only=True).problems
    assert [(p.line, p.column, p.kind) for p in problems] == [(2, 57, "glued"), (3, 1, "malformed")]
    assert problems[0].message == (
        "2 lines glued together (a cut-off line, then entry `cccc0003` (message)): "
        "pi skips the whole line, and with it entry cccc0003"
    )
    assert problems[1].message.startswith("invalid JSON: ")


def test_a_glued_line_is_placed_alike_by_the_loader_check_and_the_language_server(tmp_path: Path) -> None:
    """The loader's column is 0-based like its line (as on the wire: SkippedLine), ``pi-session
    check`` prints the same place 1-based, the language server's range starts there, and no
    message carries a column number of its own that one of them would contradict. The line is cut
    inside a character (a crash mid-write), after one outside the BMP."""
    cut = A.encode()[:-20] + "😀".encode() + "😀".encode()[:3]
    path = tmp_path / "glued.jsonl"
    path.write_bytes(HEADER.encode() + b"\n" + cut + C.encode() + b"\n")
    column = len(cut.decode("utf-8", "replace"))  # characters before the glued-on line
    (problem,) = SessionManager.open(str(path), read_only=True).problems
    assert (problem.line, problem.column, problem.kind) == (1, column, "glued")
    (finding,) = report_file(str(path)).findings
    assert (finding.code, finding.line, finding.column) == ("PI006", 2, column + 1)
    diagnostic = the(SessionDocument(path.read_bytes()), "PI006")
    raw = path.read_bytes().split(b"\n")[1]
    assert to_column(raw, diagnostic.start, UTF32, "replace") == column
    assert "column" not in problem.message and "column" not in finding.message


def test_a_header_glued_to_the_first_entry() -> None:
    d = doc(HEADER + A, B)
    assert found(d) == [(0, "PI006"), (1, "PI031")]  # not PI010: the split gives the header back
    glued = the(d, "PI006")
    assert "the session header, then entry `aaaa0001`" in glued.message
    assert "with it the session header and that entry" in glued.message
    text = repaired(d, titled(d, 0, "Split the glued line"))
    assert text == "\n".join([HEADER, A, B]) + "\n" and found(SessionDocument(text)) == []


@pytest.mark.parametrize("before", ["\n\ufeff", '{"type":"mess', B[:57]])  # a BOM on line 2, cut-off lines
def test_a_header_glued_behind_something_is_not_missing(before: str) -> None:
    d = SessionDocument(before + "\n".join([HEADER, A, B]) + "\n")
    assert "PI010" not in [code for _, code in found(d)]
    assert "with it the session header" in the(d, "PI006").message
    assert [r.code for r in repairs(d, 0, d.line_count - 1)] == ["PI006"] * 2  # splits, no header made up


def test_a_file_of_glued_lines_only_has_its_header_in_them() -> None:
    d = doc(HEADER + A + B[:57])
    assert found(d) == [(0, "PI006")]


def test_hover_names_the_glued_lines() -> None:
    found_hover = hover(doc(HEADER, A, B[:57] + C, D), 2, 3)
    assert found_hover is not None
    assert found_hover[0].startswith(
        "**lines glued together** (line 3): 2 lines glued together: a cut-off line"
    )


def test_a_line_of_nested_objects_that_never_close_costs_a_few_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every candidate's scan runs to the end of the line: without a bound, 20,000 candidates
    # would scan 320 KB each (minutes); the search gives up after a few passes instead
    visited: list[int] = []
    spend = glued._Budget.spend
    monkeypatch.setattr(glued._Budget, "spend", lambda self, n: (visited.append(n), spend(self, n))[1])
    line = b'{"type":"x","a":' * 20_000 + C.encode()
    assert glued_pieces(line) is None
    tokens = len(glued._TOKEN.findall(line))
    # the first allowance, the line's tokens a few times, and the one scan that overran
    allowed = len(line) // glued._BYTES_PER_TOKEN + glued._BUDGET_BASE + (glued._PASSES + 1) * tokens
    assert sum(visited) <= allowed


def test_a_dense_glued_line_is_still_found() -> None:
    # a cut-off tool call with 100,000 small arguments, then the whole line again
    entry = S.assistant("bbbb0002", "aaaa0001", calls=(("t1", "x", {f"k{i}": "v" for i in range(100_000)}),))
    pieces = glued_pieces((entry[: len(entry) // 2] + entry).encode())
    assert pieces is not None and [(p.whole, p.id) for p in pieces] == [(False, ABSENT), (True, "bbbb0002")]


# -- real lines, glued at random -----------------------------------------------------------------

_DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"
REAL_LINES = sorted(
    {
        line
        for f in sorted(_DATA.glob("*.jsonl"))
        for line in f.read_bytes().split(b"\n")
        if line.startswith(b'{"type":') and len(line) < 200_000
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(REAL_LINES),
    st.sampled_from(REAL_LINES),
    st.floats(0.05, 0.95),
    st.booleans(),
)
def test_a_real_line_cut_anywhere_with_a_real_line_glued_after_it(
    first: bytes, second: bytes, where: float, whole_first: bool
) -> None:
    cut = first if whole_first else first[: max(1, int(len(first) * where))]
    raw = cut + second
    pieces = glued_pieces(raw)
    assert pieces is not None
    assert pieces[-1].whole and (pieces[-1].start, pieces[-1].end) == (len(cut), len(raw))
    assert pieces[0].start == 0
    assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
    if whole_first:
        assert [p.whole for p in pieces] == [True, True]
    # the split gives the lines back: the cut-off part (or the first line) and the glued one
    d = SessionDocument(raw + b"\n")
    (split,) = [r for r in repairs(d, 0, 0) if r.title.startswith("Split the glued line into")]
    # an editor holds text: a character cut in half was U+FFFD before the split and stays so after
    lines = b"\n".join(raw[p.start : p.end] for p in pieces) + b"\n"
    assert repaired(d, split) == lines.decode("utf-8", "replace")
    assert raw[pieces[-1].start :] == second
