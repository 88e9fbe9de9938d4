"""Lines glued together cost about what their entries cost on lines of their own: whole entries
glued one after the other are split where msgspec finds each one ends, with no Python parse of
the line to word an error it does not need and no search through its strings. What is found is
the same as the search finds (the split, the problem, check's report, the repair, the session's
problems and entries), on many random glued files."""

from __future__ import annotations

import gc
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_analysis_long_line import counting_reads
from test_glued_lines import REAL_LINES

from pi_session_server.analysis import autofix
from pi_session_server.analysis import lines as analysis_lines
from pi_session_server.analysis.autofix import FIXABLE_CODES, plan_repairs
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.cli import main
from pi_session_server.format import glued, jsjson, scan
from pi_session_server.format.glued import glued_entries, glued_pieces
from pi_session_server.format.jsjson import JsonSyntaxError, parse_bytes
from pi_session_server.session import SessionManager

HEADER = S.header()
ENTRIES = [
    S.user("aaaa0001", None, "first"),
    S.assistant("bbbb0002", "aaaa0001", "second"),
    S.user("cccc0003", "bbbb0002", "thïrd 😀"),
    S.tool_result("dddd0004", "cccc0003", "t1"),
]
# what may stand between two glued pieces, or end the line (JSON white space, a CR of CRLF, a
# vertical tab JSON.parse rejects but pi's trim takes as blank)
SPACES = ["", "", "", " ", "\t", "\r", "  \r ", "\x0b"]


def _searched(raw: bytes) -> tuple[glued.Piece, ...] | None:
    """The pieces as the search through the line's strings and brackets finds them (the way
    every glued line was split before msgspec found where the whole entries end)."""
    spans = glued._searched_spans(raw)
    if raw.find(glued._LINE_START, 1) < 0 or spans is None or len(spans) < 2:
        return None
    if all(head is None for _, _, head in spans):
        return None
    return glued._pieces(raw, spans)


def _glued_line(rng: random.Random, pool: list[bytes]) -> bytes:
    """Two to four lines glued, each whole or cut off, with white space around them at times,
    some holding what only the exact parser reads (invalid UTF-8, a lone surrogate escape)."""
    parts = []
    for _ in range(rng.randint(2, 4)):
        line = rng.choice(pool)
        roll = rng.random()
        if roll < 0.2:
            line = line[: rng.randint(1, len(line) - 1)]
        elif roll < 0.25:
            line = line.replace(b'"content":', b'"junk":"\xff\xfe","content":', 1)
        elif roll < 0.3:
            line = line.replace(b'"content":', b'"junk":"\\ud800","content":', 1)
        parts.append(line + rng.choice(SPACES).encode())
    return rng.choice(["", " ", "\t"]).encode() + b"".join(parts)


@settings(max_examples=500, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_split_is_the_one_the_search_finds(rng: random.Random) -> None:
    raw = _glued_line(rng, [*REAL_LINES, *(e.encode() for e in ENTRIES)])
    assert glued_pieces(raw) == _searched(raw)
    fast = glued_entries(raw)
    if fast is not None:
        # found without the exact parser: a line JSON.parse rejects
        assert fast == _searched(raw)
        with pytest.raises(JsonSyntaxError):
            parse_bytes(raw)


def test_a_single_entry_or_valid_json_is_no_glued_line() -> None:
    entry = ENTRIES[0].encode()
    assert glued_entries(entry) is None and glued_entries(entry + b" \r") is None
    nested = b'{"a":' + entry + b"}"  # valid JSON holding an entry: for the parser, not for us
    assert glued_entries(nested) is None
    # valid JSON around an entry, which the search would split: only the exact parser tells
    assert glued_entries(b"[" + entry + b"]") is None
    # a first piece that is no entry, or an object cut off: msgspec rejects the line, as JSON.parse does
    for first in (b'{"x":1}', entry[:40], b' {"type":"message","id":"x'):
        assert glued_entries(first + entry) == _searched(first + entry) is not None
    # what msgspec cannot vouch for (a lone surrogate, invalid UTF-8) is the exact parser's
    for first in (b'{"type":"\\ud800","timestamp":1}', b'{"type":"\xff","timestamp":1}'):
        assert glued_entries(first + entry) is None
        pieces = glued_pieces(first + entry)
        assert pieces == _searched(first + entry) is not None
        assert pieces[0].whole  # JSON.parse reads it as an entry: pi's line, not a cut-off one


def test_the_decoding_is_used_only_while_msgspec_words_its_errors_as_it_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """msgspec's messages are no API: the installed release words "a value, then more" as the
    decoding reads it (else every glued line goes the slow way: the bounded-work tests say so
    too), and one that words it otherwise turns the decoding off, the search's answers kept."""
    assert glued._DECODING_TOLD and glued._msgspec_tells_where_values_end()
    entry = ENTRIES[0].encode()
    line = entry + entry[:40] + entry
    monkeypatch.setattr(glued, "_TRAILING", re.compile(r"trailing data at byte (\d+)"))
    assert not glued._msgspec_tells_where_values_end()
    monkeypatch.setattr(glued, "_DECODING_TOLD", False)
    assert glued_entries(line) is None  # (for the exact parser, then the search)
    assert glued_pieces(line) == _searched(line) is not None


# -- whole files, each command, against the search ----------------------------------------------


def _random_file(path: Path, seed: int) -> Path:
    rng = random.Random(seed)
    pool = [e.encode() for e in ENTRIES] + rng.sample(REAL_LINES, 20)
    lines = [HEADER.encode()]
    for _ in range(60):
        lines.append(_glued_line(rng, pool) if rng.random() < 0.6 else rng.choice(pool))
    if rng.random() < 0.5:
        lines.insert(0, _glued_line(rng, [HEADER.encode(), *pool]))  # the header in a glued line
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _searching_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every glued line split by the search after the exact parser rejected it."""
    monkeypatch.setattr(glued, "_decoded_spans", lambda raw: None)


def _answers(path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    main(["check", "--no-index", "--json", str(path)])
    checked = capsys.readouterr().out
    out = tmp_path / "repaired.jsonl"
    out.unlink(missing_ok=True)  # (repair writes no file that is there)
    main(["repair", "-o", str(out), str(path)])
    repair_said = capsys.readouterr()
    manager = SessionManager.open(str(path))
    try:
        return {
            "check": json.loads(checked),
            "repair": (repair_said.out, repair_said.err),
            "repaired": out.read_bytes(),
            "problems": [(p.to_json(), p.offset, p.length) for p in manager.problems],
            "entries": [(e.id, e.parent_id, e.type, e.line, e.offset) for e in manager.get_entries()],
        }
    finally:
        manager.close()


@pytest.mark.parametrize("seed", range(12))
def test_every_command_answers_as_with_the_search(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _random_file(tmp_path / "s.jsonl", seed)
    answers = _answers(path, capsys, tmp_path)
    assert any(p["kind"] == "glued" for p, _, _ in answers["problems"])
    with monkeypatch.context() as searching:
        _searching_only(searching)
        assert answers == _answers(path, capsys, tmp_path)


@pytest.mark.parametrize("seed", range(8))
def test_every_command_answers_as_with_the_exact_parser_s_words(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the cut-off lines of glued files, on lines of their own once split (repair's check of what
    # it wrote) or not: their errors worded from the C scanner's, as the exact parser words them
    path = _random_file(tmp_path / "s.jsonl", 100 + seed)
    answers = _answers(path, capsys, tmp_path)
    assert b"\n" in answers["repaired"]
    with monkeypatch.context() as exact:
        exact.setattr(jsjson, "_SCANNER_TELLS_CUTS", False)
        assert answers == _answers(path, capsys, tmp_path)
    split = tmp_path / "split.jsonl"
    split.write_bytes(answers["repaired"])
    answers = _answers(split, capsys, tmp_path)
    assert any(p["kind"] == "malformed" for p, _, _ in answers["problems"])
    with monkeypatch.context() as exact:
        exact.setattr(jsjson, "_SCANNER_TELLS_CUTS", False)
        assert answers == _answers(split, capsys, tmp_path)


# -- the work is bounded --------------------------------------------------------------------------


def _glued_file(path: Path, count: int, cut: bool = False) -> Path:
    """``count`` lines of two entries each (``cut``: the first cut off halfway, as a writer that
    died mid-line leaves it)."""

    def entries() -> Iterator[str]:
        parent = None
        for n in range(2 * count):
            yield (
                S.user(f"e{n:07d}", parent, "hello") if n % 2 == 0 else S.assistant(f"e{n:07d}", parent, "hi")
            )
            parent = f"e{n:07d}"

    it = entries()
    glued = (first[: len(first) // 2 if cut else None] + next(it) for first in it)
    path.write_text("\n".join([HEADER, *glued]) + "\n")
    return path


@pytest.mark.parametrize("cut", [False, True], ids=["whole entries", "a cut-off line first"])
def test_glued_lines_are_neither_parsed_nor_searched(
    cut: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a crash between each write and its newline (or in the middle of a line): every line glued
    count = 300
    path = _glued_file(tmp_path / "s.jsonl", count, cut)
    calls = {"parse": 0, "exact parser": 0, "searched tokens": 0}

    def counted(name: str, real: Any) -> Any:
        def call(*args: Any) -> Any:
            calls[name] += 1
            return real(*args)

        return call

    monkeypatch.setattr(scan, "parse_bytes", counted("parse", scan.parse_bytes))
    monkeypatch.setattr(analysis_lines, "parse", counted("parse", analysis_lines.parse))
    monkeypatch.setattr(jsjson._Parser, "parse", counted("exact parser", jsjson._Parser.parse))
    spend = glued._Budget.spend
    monkeypatch.setattr(
        glued._Budget,
        "spend",
        lambda self, n: (calls.__setitem__("searched tokens", calls["searched tokens"] + n), spend(self, n))[
            1
        ],
    )
    answers = _answers(path, capsys, tmp_path)
    assert sum(p["kind"] == "glued" for p, _, _ in answers["problems"]) == count
    assert answers["repaired"].count(b"\n") == 2 * count + 1
    # the header's line alone is parsed (the header is read by the exact parser, once per reader)
    assert calls["searched tokens"] == 0
    # (the cut-off lines the split leaves are read in repair's check of what it wrote, once each,
    # their errors worded from the C scanner's: not walked again by the exact parser)
    assert calls["parse"] <= 5 + (count if cut else 0)
    assert calls["exact parser"] <= 5


def test_each_piece_of_a_glued_line_is_decoded_once_and_worded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the split and the problem of a line of whole entries cost about what the entries cost on
    # lines of their own: one decoding each (no second one after msgspec found where it ends), and
    # their words made once for the problem's message and its notes
    calls = {"decoded": 0, "worded": 0}
    decode, words = glued._decode_head, glued.piece_words

    def decoded(data: Any) -> Any:
        calls["decoded"] += 1
        return decode(data)

    def worded(piece: glued.Piece) -> str:
        calls["worded"] += 1
        return words(piece)

    monkeypatch.setattr(glued, "_decode_head", decoded)
    monkeypatch.setattr(analysis_lines, "piece_words", worded)
    lines = [
        a.encode() + b.encode() + c.encode()
        for a, b, c in zip(ENTRIES, ENTRIES[1:], ENTRIES[2:], strict=False)
    ]
    for raw in lines:
        (problem,) = analysis_lines.scan_line(raw).problems
        assert problem.pieces is not None and len(problem.notes) == 3
    assert calls == {"decoded": 3 * len(lines), "worded": 3 * len(lines)}


def test_a_cut_off_line_holding_content_blocks_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line cut off in its content blocks (``{"type":`` inside it, where a glued line could go
    on) is decoded once to look for the pieces: the decoding that found no glued entries answers
    whether it is pieces once the parser has said the line is invalid (it was decoded again)."""
    decoded = Mock(wraps=glued._decoded_spans)
    monkeypatch.setattr(glued, "_decoded_spans", decoded)
    whole = S.assistant("bbbb0002", "aaaa0001", "second").encode()
    blocks = whole.index(b'[{"type":')
    for end in range(blocks + 2, len(whole) - 1, 7):
        decoded.reset_mock()
        (problem,) = analysis_lines.scan_line(whole[:end]).problems
        assert problem.code == "PI001" and problem.ran_out, (end, problem)
        assert decoded.call_count == (1 if b'{"type":' in whole[1:end] else 0), end


def test_the_repair_plan_of_glued_lines_on_disk_reads_each_line_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 200
    path = _glued_file(tmp_path / "s.jsonl", count)
    on_disk = SessionDocument.from_file(str(path))
    collecting: list[bool] = []
    planned_repairs = autofix.repairs_counting
    monkeypatch.setattr(
        autofix, "repairs_counting", lambda *a: (collecting.append(gc.isenabled()), planned_repairs(*a))[1]
    )
    with counting_reads() as reads:
        plan = plan_repairs(on_disk, FIXABLE_CODES)
    assert len(plan.applied) == count
    assert plan.splices() == plan_repairs(SessionDocument(path.read_bytes()), FIXABLE_CODES).splices()
    assert max(reads.values()) == 1  # each glued line read once to split it
    assert collecting and not any(collecting)  # the collector paused while a repair is made for each line


def test_the_diagnostics_of_glued_lines_are_made_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a diagnostic and its related lines per glued line (by the hundred thousand in a file glued
    # everywhere), none in a cycle: the collector does not walk the heap again as they are made
    from pi_session_server.analysis import diagnostics

    count = 200
    doc = SessionDocument.from_file(str(_glued_file(tmp_path / "s.jsonl", count, cut=True)))
    collecting: list[bool] = []
    made = diagnostics._diagnostic
    monkeypatch.setattr(
        diagnostics, "_diagnostic", lambda *a: (collecting.append(gc.isenabled()), made(*a))[1]
    )
    found = diagnostics.document_diagnostics(doc)
    assert sum(d.code == "PI006" for d in found) == count
    assert len(collecting) >= count and not any(collecting)
    assert gc.isenabled()  # (and on again after)


def test_the_pieces_and_diagnostics_of_glued_lines_are_left_out_of_the_collector_s_walks(
    tmp_path: Path,
) -> None:
    # (two or more pieces and related lines per glued line, by the hundred thousand in a file glued
    # everywhere: the collector walked them all at each of its passes over the heap)
    from pi_session_server.analysis import diagnostics

    doc = SessionDocument.from_file(str(_glued_file(tmp_path / "s.jsonl", 20, cut=True)))
    found = [d for d in diagnostics.document_diagnostics(doc) if d.code == "PI006"]
    assert len(found) == 20
    pieces = [piece for info in doc.lines for p in info.problems for piece in p.pieces or ()]
    assert len(pieces) == 40
    assert not any(gc.is_tracked(x) for x in [*pieces, *found, *(r for d in found for r in d.related)])
