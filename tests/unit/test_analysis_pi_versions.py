"""The analysis follows a pi release (``SessionDocument(..., pi=...)``): files pi 1.6.0 writes raise
no false alarm, ``context_edit`` lines get their own diagnostics, hovers, hints and outline names
under 1.6.0 and are an unknown entry type under 0.86.1."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import builders as S
import pytest
from analysis_documents import at, make
from builders import assistant_message, tool_result_message, user_message

from pi_session_server.analysis import codes
from pi_session_server.analysis.codes import Severity
from pi_session_server.analysis.diagnostics import Diagnostic, document_diagnostics, first_pass_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.edits import edit_effect
from pi_session_server.analysis.hints import code_lenses, inlay_hints
from pi_session_server.analysis.hover import hover
from pi_session_server.analysis.navigation import definition, references
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.commands.check_analysis import check_file
from pi_session_server.errors import PiVersionError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, build_session_context
from pi_session_server.session.describe import preview_of
from pi_session_server.session.releases import RELEASES

VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "vectors"
REAL_160 = sorted((VECTORS / "fixtures" / "real-1.6.0").glob("*.jsonl"))
REAL = VECTORS / "fixtures" / "real"
TS = 1764000000000


def found(diagnostics: list[Diagnostic], *wanted: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in diagnostics if not wanted or d.code in wanted]


def serious(diagnostics: list[Diagnostic]) -> list[tuple[int, str, str]]:
    return [(d.line + 1, d.code, d.message) for d in diagnostics if d.severity <= Severity.WARNING]


# -- messages in the shapes pi-ai produces -----------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return user_message([{"type": "text", "text": text}], TS)


def assistant(text: str, calls: tuple[str, ...] = (), stop: str | None = None) -> dict[str, Any]:
    return assistant_message(
        text, TS, calls=calls, model="claude-sonnet-4-5", usage=S.USAGE, stop_reason=stop
    )


def tool_result(call_id: str, text: str, error: bool = False) -> dict[str, Any]:
    return tool_result_message(call_id, text, error=error, timestamp=TS)


@pytest.fixture
def written_by_pi_1_6_0(tmp_path: Path) -> tuple[Path, Path]:
    """A session the library wrote under pi="1.6.0" with every kind of entry pi 1.6.0 appends (edits
    of each kind, a failed attempt taken out with edits, a label, a branch left with a summary from
    an assistant message whose tool result stays on the abandoned branch, a "keep nothing"
    compaction, an edit after a compaction), and the session ``/fork`` makes of its leaf."""
    m = SessionManager.create("/proj", str(tmp_path / "sessions"), pi="1.6.0")
    m.append_model_change("anthropic", "claude-sonnet-4-5")
    m.append_thinking_level_change("high")
    m.append_message({"role": "system", "content": "You are pi.", "timestamp": TS})
    u1 = m.append_message(user("read the parser"))
    a1 = m.append_message(assistant("", ("c1",)))
    r1 = m.append_message(tool_result("c1", "60 lines of code"))
    m.append_message(assistant("It parses forecasts."))
    m.append_context_edit(r1, {"content": "[file content elided]"})  # a string: one text block
    m.append_context_edit(a1, {"content": "I read src/parse.py."})
    note = m.append_custom_message_entry("reminder", "run the tests", True)
    m.append_context_edit(note, {"content": "(acknowledged)"})
    m.append_label_change(u1, "start")
    m.append_session_info("parser work")
    m.append_usage("cache_warm", "anthropic", "claude-sonnet-4-5", S.USAGE)
    m.append_custom_entry("state", {"step": 2})
    m.append_message(user("now run them"))
    failed = m.append_message(assistant("", ("c2", "c3"), stop="length"))
    aborted = [m.append_message(tool_result(c, "Operation aborted", error=True)) for c in ("c2", "c3")]
    for target in (failed, *aborted):
        m.append_context_edit(target, None)
    m.append_message(assistant("All 8 tests pass."))
    m.branch_with_summary(a1, "Tried reading the parser; went another way.")
    m.append_message(user("try the client instead"))
    m.append_message(assistant("The client caches nothing."))
    m.append_compaction("Goal: speed up the client.", None, 5000)  # "keep nothing": its own id
    u4 = m.append_message(user("add a cache"))
    a6 = m.append_message(assistant("Added a cache."))
    m.append_compaction("Goal: cache added.", u4, 6000)
    m.append_context_edit(a6, {"content": "Cache added."})
    m.append_message(user("thanks"))
    m.append_message(assistant("You're welcome."))
    original = Path(m.get_session_file())
    forked = Path(m.create_branched_session(m.get_leaf_id()))
    return original, forked


# -- no false alarms on what pi 1.6.0 writes ---------------------------------------------------


@pytest.mark.parametrize("path", REAL_160, ids=lambda p: p.name)
def test_check_is_clean_on_the_files_pi_1_6_0_wrote(path: Path) -> None:
    assert len(REAL_160) == 7
    doc, diagnostics, failure = check_file(str(path))
    assert failure is None and doc is not None
    assert serious(diagnostics) == []


def test_check_is_clean_on_sessions_written_and_forked_under_pi_1_6_0(
    written_by_pi_1_6_0: tuple[Path, Path],
) -> None:
    original, forked = written_by_pi_1_6_0
    header = json.loads(forked.read_text().splitlines()[0])
    assert header["parentSession"] == str(original)
    for path in (original, forked):
        _, diagnostics, _ = check_file(str(path))
        assert serious(diagnostics) == [], path.name
        # not even an information: only PI037 hints (the fork left c1's result behind)
        assert {d.code for d in diagnostics} <= {codes.UNANSWERED_TOOL_CALL}


def test_keep_nothing_compaction_is_not_pi034_under_either_release() -> None:
    real = VECTORS / "fixtures" / "real-1.6.0" / "pi160-compaction-retain-none.jsonl"
    compaction = next(json.loads(x) for x in real.read_text().splitlines() if '"compaction"' in x)
    assert compaction["firstKeptEntryId"] == compaction["id"]
    for pi in ("1.6.0", "0.86.1"):
        assert found(check_file(str(real), pi)[1], codes.FIRST_KEPT_NOT_ON_PATH) == []
    # a first kept entry on another branch still keeps nothing by mistake
    doc = make(S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "a"), S.compaction("k", "c", "b"))
    assert found(document_diagnostics(doc), codes.FIRST_KEPT_NOT_ON_PATH) == [
        (4, codes.FIRST_KEPT_NOT_ON_PATH)
    ]
    (shown, _) = hover(make(S.header(), S.user("a", None), S.compaction("k", "a", "k")), 2, 1)  # type: ignore[misc]
    assert "keeps nothing from before it" in shown


def test_pi_0_86_1_s_keep_nothing_compactions_are_no_problem_under_either_release(tmp_path: Path) -> None:
    """pi 0.86.1 writes "keep nothing" as ``firstKeptEntryId: null``, or without the key when it is
    not given (pi's v1 migration leaves it out too); both releases read either as keeping nothing.
    Neither is a field that pi "always writes" missing (PI021) or of the wrong type (PI022)."""
    m = SessionManager.create("/proj", str(tmp_path / "sessions"), pi="0.86.1")
    m.append_message(user("hello"))
    m.append_message(assistant("hi"))
    m.append_compaction("Goal: greet.", None, 100)
    m.append_compaction("Goal: still greet.", ABSENT, 100)
    m.append_message(user("thanks"))
    path = Path(m.get_session_file())
    lines = path.read_text(encoding="utf-8").splitlines()
    assert '"firstKeptEntryId":null' in lines[3] and "firstKeptEntryId" not in lines[4]
    for pi in ("1.6.0", "0.86.1"):
        doc = SessionDocument.from_file(str(path), pi=pi)
        assert document_diagnostics(doc) == [], pi
        for n in (3, 4):
            shown, _ = hover(doc, n, 1)  # type: ignore[misc]
            assert "keeps nothing from before it" in shown


def test_fork_output_keeps_fromid_and_unanswered_calls_quiet(written_by_pi_1_6_0: tuple[Path, Path]) -> None:
    _, forked = written_by_pi_1_6_0
    doc = SessionDocument.from_file(str(forked))
    summary = next(i for i in doc.entries() if i.etype == "branch_summary")
    assert doc.entry_by_id(summary.ref) is None  # the abandoned leaf stayed in the original
    diagnostics = document_diagnostics(doc)
    assert found(diagnostics, codes.FROM_ID_UNKNOWN) == []
    (unanswered,) = [d for d in diagnostics if d.code == codes.UNANSWERED_TOOL_CALL]
    assert unanswered.severity == Severity.HINT and '"No result provided"' in unanswered.message
    text, _ = hover(doc, summary.line, at(doc, summary.line, f'"{summary.ref}"'))  # type: ignore[misc]
    assert "forked from another one" in text
    # in a file that was not forked, a fromId naming nothing still means a lost entry
    lost = make(S.header(), S.user("a", None), S.branch_summary("s", "a", "gone"))
    assert found(document_diagnostics(lost), codes.FROM_ID_UNKNOWN) == [(2, codes.FROM_ID_UNKNOWN)]


def test_missing_total_tokens_is_never_reported_and_the_other_pi021_are_real() -> None:
    """Each PI021 on the real files: 455 were `usage.totalTokens`, which pi never needs (it adds up
    the counts); the others are fields pi reads, in hand-made files (DIAGNOSTICS.md, "pi versions")."""
    remaining: Counter[tuple[str, str]] = Counter()
    for path in sorted(REAL.glob("*.jsonl")):
        for pi in ("1.6.0", "0.86.1"):
            _, diagnostics, _ = check_file(str(path), pi)
            assert not [d for d in diagnostics if "totalTokens" in d.message]
        for d in check_file(str(path))[1]:
            if d.code == codes.FIELD_MISSING:
                remaining[(path.name, d.message)] += 1
    assert sum(remaining.values()) == 569 - 455
    assert {(name, message.split("`")[1]) for name, message in remaining} == {
        ("juicetin-session-multi.jsonl", field)
        for field in ("parentId", "timestamp", "usage", "stopReason", "provider", "model", "api", "thinking")
    } | {
        ("whamp-pi-session-reuse-history.jsonl", "timestamp"),
        ("whamp-canonical-unicode-separators.jsonl", "timestamp"),
        ("whamp-pi-v1-linear.jsonl", "cost"),
        ("whamp-pi-v1-canonical-equivalent.jsonl", "cost"),
    }


# -- context_edit diagnostics ------------------------------------------------------------------

BASE = (S.header(), S.user("u", None), S.assistant("a", "u"), S.label("l", "a", "u"))


@pytest.mark.parametrize(
    ("replacement", "path", "says"),
    [
        (ABSENT, "(line)", "throws a TypeError on every context build"),
        ({}, "replacement", "has no `content`"),
        ("text", "replacement", "is a string"),
        (False, "replacement", "is a boolean"),
        ([{"type": "text", "text": "x"}], "replacement", "is an array"),
        ({"content": 5}, "replacement.content", "`replacement.content` is a number"),
        ({"content": None}, "replacement.content", "`replacement.content` is null"),
    ],
)
def test_a_malformed_edit_is_an_error_of_its_own(replacement: Any, path: str, says: str) -> None:
    doc = make(*BASE, S.context_edit("e", "l", "u", replacement))
    diagnostics = document_diagnostics(doc)
    assert found(diagnostics) == [(4, codes.MALFORMED_CONTEXT_EDIT)]  # no PI021/PI022 besides
    (d,) = diagnostics
    assert d.severity == Severity.ERROR and says in d.message and "(D10)" in d.message
    raw = doc.lines[4].raw
    if path == "(line)":
        assert (d.start, d.end) == (0, len(raw))
    else:
        value = json.loads(raw)
        expected = value["replacement"]["content"] if path == "replacement.content" else value["replacement"]
        assert json.loads(raw[d.start : d.end]) == expected
    assert "not an edit (D10)" in hover(doc, 4, 1)[0]  # type: ignore[index]
    # pi 0.86.1 does not know the type: nothing about what would make it an edit
    old = make(*BASE, S.context_edit("e", "l", "u", replacement), pi="0.86.1")
    (unknown,) = document_diagnostics(old)
    assert (unknown.code, unknown.severity) == (codes.UNKNOWN_ENTRY_TYPE, Severity.INFORMATION)
    assert "pi 0.86.1" in unknown.message


def test_block_problems_inside_a_valid_replacement_stay_field_problems() -> None:
    doc = make(*BASE, S.context_edit("e", "l", "a", {"content": [{"type": "video"}]}))
    assert found(document_diagnostics(doc)) == [(4, codes.UNKNOWN_BLOCK_TYPE)]


def test_an_edit_that_cannot_edit_its_target_is_a_warning() -> None:
    doc = make(
        S.header(),
        S.user("u", None),
        S.assistant("a", "u"),
        S.user("side", "u"),  # another branch
        S.context_edit("e1", "a", "nowhere"),
        S.context_edit("e2", "e1", "side"),
        S.context_edit("e3", "e2", "e4"),  # below it, not above
        S.context_edit("e4", "e3", "u", {"content": "ok"}),
        '{"type":"message","id":"b","parentId":"e4","timestamp":"2026-11-30T09:13:48.180Z","message":'
        '{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}',
        S.context_edit("e5", "b", "b"),
        S.label("l", "e5", "u"),
        S.context_edit("e6", "l", "l", {"content": "x"}),
    )
    diagnostics = document_diagnostics(doc)
    assert found(diagnostics) == [(n, codes.CONTEXT_EDIT_TARGET) for n in (4, 5, 6, 9, 11)]
    by_line = {d.line: d for d in diagnostics}
    assert all(d.severity == Severity.WARNING for d in diagnostics)
    assert "names no entry" in by_line[4].message
    assert "is not above this edit" in by_line[5].message and by_line[5].related[0].line == 3
    assert by_line[6].message.endswith("yet applies this one where the path goes on through line 8")
    assert "refuses this target (line 9 (bashExecution message))" in by_line[9].message
    assert by_line[9].message.endswith("still leaves its messages out of the context")
    assert by_line[11].message.endswith("changes nothing")
    start, end = by_line[4].start, by_line[4].end
    assert doc.lines[4].raw[start:end] == b'"nowhere"'
    # pi 0.86.1: unknown entry types, nothing else
    doc.set_profile("0.86.1")
    assert found(document_diagnostics(doc)) == [(n, codes.UNKNOWN_ENTRY_TYPE) for n in (4, 5, 6, 7, 9, 11)]


def test_an_edit_above_its_target_is_a_warning_yet_applies_below_both() -> None:
    """pi writes an edit after its target, but applies the edits of a path to any entry on it."""
    doc = make(
        S.header(),
        S.user("u", None),
        S.context_edit("down", "u", "v", None),
        S.user("v", "down", "dropped"),
        S.assistant("w", "v"),
    )
    (d,) = document_diagnostics(doc)
    assert d.code == codes.CONTEXT_EDIT_TARGET and "through line 4" in d.message
    assert "**leaves out** line 4 (user message) of the context at the leaf" in hover(doc, 2, 1)[0]  # type: ignore[index]
    assert _effects_agree_with_the_projection(doc) == 1
    side = make(*doc.text().splitlines()[:4], S.user("x", "u"))  # the leaf no longer goes through v
    assert "is not on the path at the leaf" not in hover(side, 2, 1)[0]  # type: ignore[index]
    assert "not on the path on this edit's branch" in hover(side, 2, 1)[0]  # type: ignore[index]
    assert _effects_agree_with_the_projection(side) == 0


def test_the_profile_is_passed_and_can_change() -> None:
    lines = (*BASE, S.context_edit("e", "l", "gone"))
    doc = make(*lines)
    assert doc.profile.version == "1.6.0"
    assert found(document_diagnostics(doc)) == [(4, codes.CONTEXT_EDIT_TARGET)]
    version = doc.version
    doc.set_profile("0.86.1")
    assert doc.version == version + 1 and doc.profile.version == "0.86.1"
    assert found(document_diagnostics(doc)) == [(4, codes.UNKNOWN_ENTRY_TYPE)]
    doc.set_profile(doc.profile)
    assert doc.version == version + 1  # nothing changed
    with pytest.raises(PiVersionError):
        SessionDocument(b"", pi="2.0")
    data = ("\n".join(lines) + "\n").encode()
    for pi in ("0.86.1", "1.6.0"):
        quick = SessionDocument(data, quick=True, pi=pi)
        assert SessionDocument.from_editor_bytes(data, pi=pi).profile.version == pi  # type: ignore[union-attr]
        assert first_pass_diagnostics(quick) == [
            d
            for d in document_diagnostics(SessionDocument(data, pi=pi))
            if d.code != codes.CONTEXT_EDIT_TARGET
        ]


def test_edits_follow_incremental_changes() -> None:
    doc = make(*BASE, S.context_edit("e", "l", "x"))
    assert found(document_diagnostics(doc)) == [(4, codes.CONTEXT_EDIT_TARGET)]
    raw = doc.lines[4].raw
    start = raw.index(b'"x"') + 1
    doc.apply_edit(4, start, 4, start + 1, "u")  # now it names the user message above it
    assert document_diagnostics(doc) == []
    doc.apply_edit(4, 0, 5, 0, "")  # the edit line goes
    assert doc.edits == set() and document_diagnostics(doc) == []


# -- hovers, hints, lenses, outline, navigation ---------------------------------------------------


def edits_doc(pi: str = "1.6.0") -> SessionDocument:
    return make(
        S.header(),
        S.user("u", None, "question"),
        S.assistant("a", "u", calls=(("t1", "read", {}),)),
        S.tool_result("r", "a", "t1", "sixty lines"),
        S.context_edit("e1", "r", "r", None),
        S.context_edit("e2", "e1", "r", {"content": [{"type": "text", "text": "[elided]"}]}),  # wins
        S.context_edit("e3", "e2", "u", {"content": "shorter question"}),
        S.context_edit("e4", "u", "u", None),  # a branch of its own
        S.user("v", "e3", "next"),  # the leaf
        pi=pi,
    )


def test_hover_on_an_edit_says_what_it_does_to_the_context() -> None:
    doc = edits_doc()
    texts = {n: hover(doc, n, 1)[0] for n in (4, 5, 6, 7)}  # type: ignore[index]
    assert "**no effect**: the edit on line 6, later on the path, replaces it (at the leaf)" in texts[4]
    assert "**replaces the content** of line 4 (toolResult message) at the leaf with 1 block" in texts[5]
    # (the replacement's text as plain text: its brackets escaped, they would make a link)
    assert "“\\[elided\\]”" in texts[5] and "**context replace** of `r`" in texts[5]
    assert "with the text “shorter question”" in texts[6]
    assert "**leaves out** line 2 (user message) of the context on this edit's branch" in texts[7]
    target = hover(doc, 3, 1)[0]  # type: ignore[index]
    assert "**edited** by line 5 (`e1`): no effect (line 6 replaces it)" in target
    assert "**edited** by line 6 (`e2`): content replaced at the leaf" in target
    old = hover(edits_doc("0.86.1"), 5, 1)[0]  # type: ignore[index]
    assert "pi 0.86.1 does not know `context_edit` entries" in old
    assert "**edited**" not in hover(edits_doc("0.86.1"), 3, 1)[0]  # type: ignore[index]


def test_hover_explains_a_summarized_target_and_a_summarized_edit() -> None:
    doc = make(
        S.header(),
        S.user("u", None),
        S.assistant("a", "u"),
        S.context_edit("early", "a", "u", None),  # before the kept range: pi never collects it
        S.user("k", "early"),
        S.compaction("c", "k", "k"),
        S.context_edit("late", "c", "a", None),  # its target is summarized
        S.context_edit("kept", "late", "k", None),
    )
    assert "the compaction on line 6 summarizes this edit (at the leaf)" in hover(doc, 3, 1)[0]  # type: ignore[index]
    assert "summarizes its target, line 3 (assistant message)" in hover(doc, 6, 1)[0]  # type: ignore[index]
    assert "**leaves out** line 5 (user message)" in hover(doc, 7, 1)[0]  # type: ignore[index]


def test_hints_and_lenses_show_edits() -> None:
    doc = edits_doc()
    labels = {h.line: h.label for h in inlay_hints(doc)}
    assert labels[3].endswith("edited by line 5, 6")
    assert labels[4].endswith("no effect: line 6 replaces it")
    assert labels[5].endswith("replaces line 4's content")
    assert labels[7].endswith("omits line 2") and labels[8].endswith("leaf")
    lenses = {lens.line: lens.title for lens in code_lenses(doc)}
    assert lenses[3] == (
        "edited by line 5: no effect (line 6 replaces it) · edited by line 6: content replaced at the leaf"
    )
    old = edits_doc("0.86.1")
    assert not any("edit" in h.label for h in inlay_hints(old) if h.line == 3)
    assert "ignores context edits" in {h.line: h.label for h in inlay_hints(old)}[4]
    assert 3 not in {lens.line for lens in code_lenses(old)}


def test_go_to_definition_and_references_through_target_id() -> None:
    doc = edits_doc()
    assert [t.line for t in definition(doc, 5, at(doc, 5, '"r"'))] == [3]
    # the declaration, e1's parentId and targetId, e2's targetId
    assert [t.line for t in references(doc, 3, 1)] == [3, 4, 4, 5]
    (target,) = definition(doc, 6, at(doc, 6, '"u"'))
    assert doc.lines[1].raw[target.start : target.end] == b'"u"'


def _outline_names(symbols: list[Symbol]) -> dict[int, str]:
    """Each symbol's name by its line, nested ones too."""
    out: dict[int, str] = {}
    for s in symbols:
        out[s.line] = s.name
        out.update(_outline_names(s.children))
    return out


def test_the_outline_names_edits_as_pi_1_6_0_s_tree_selector_does() -> None:
    doc = edits_doc()
    names = _outline_names(document_symbols(doc))
    assert names[4] == "[context omit: r]" and names[5] == "[context replace: r]"
    for n in (4, 5, 6, 7):
        assert names[n] == preview_of(json.loads(doc.lines[n].raw), {})  # the CLI tree's text


def test_the_outline_says_pi_0_86_1_ignores_edits_in_the_words_of_the_hints() -> None:
    """Not pi 1.6.0's ``[context omit: r]``: under 0.86.1 the line is an unknown entry type that
    changes nothing, and the outline says so as the inlay hint on the line does."""
    old = edits_doc("0.86.1")
    names = _outline_names(document_symbols(old))
    hints = {h.line: h.label for h in inlay_hints(old)}
    for n in (4, 5, 6, 7):
        assert names[n] == "[context_edit]: pi 0.86.1 ignores context edits"
        assert "no effect: pi 0.86.1 ignores context edits" in hints[n]
    assert _outline_names(document_symbols(edits_doc()))[4] == "[context omit: r]"  # 1.6.0 unchanged


def test_the_cli_tree_names_edits_as_the_outline_does_under_either_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tree showed pi 1.6.0's ``[context omit: r]`` under 0.86.1 too, an edit that release does
    not make; it now says so in the outline's words (the sidecar's tree previews too:
    tests/lsp/test_sidecar_pi_versions.py)."""
    from pi_session_server.cli import main

    path = tmp_path / "edited.jsonl"
    path.write_text(edits_doc().text(), encoding="utf-8")
    for release in RELEASES:
        assert main(["tree", "--no-index", "--ids", "--width", "80", "--pi", release, str(path)]) == 0
        rows = capsys.readouterr().out.splitlines()
        names = _outline_names(document_symbols(edits_doc(release)))
        for n, entry_id in ((4, "e1"), (5, "e2"), (6, "e3"), (7, "e4")):
            (row,) = [r for r in rows if f" {entry_id} " in r]
            assert row.split(f" {entry_id} ", 1)[1].startswith(names[n]), (release, row)


def test_the_unknown_version_remedy_holds_for_every_release() -> None:
    """PI016's remedy names every release this tool knows and the version each of them writes: the
    one in the headers pi 1.6.0 wrote, and the one the library writes under either release."""
    fix = codes.CODES[codes.UNKNOWN_VERSION].fix
    written = {json.loads(path.read_text(encoding="utf-8").splitlines()[0])["version"] for path in REAL_160}
    for release in RELEASES:
        header = SessionManager.in_memory("/proj", pi=release).get_header()
        assert header is not None
        written.add(header["version"])
        assert release in fix
    (version,) = written
    assert fix.startswith(f"Set `version` to {version} if pi ")


def _version_messages(version: int) -> list[tuple[str, str]]:
    found = document_diagnostics(make(S.header(version=version)))
    return [(d.code, d.message) for d in found if d.code in (codes.OLD_VERSION, codes.UNKNOWN_VERSION)]


def test_the_unknown_version_message_gives_the_version_the_releases_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PI016's message names the newest version this tool knows from where its remedy takes it (the
    version every release in RELEASES writes), not from a number of its own: with a release that
    writes version 4 added, version 4 is known and version 5 is the newer one."""
    assert _version_messages(4) == [(codes.UNKNOWN_VERSION, "version 4 is newer than this tool knows (3)")]
    assert "Set `version` to 3 " in codes.CODES[codes.UNKNOWN_VERSION].fix
    monkeypatch.setattr("pi_session_server.analysis.diagnostics.CURRENT_SESSION_VERSION", 4)
    assert _version_messages(4) == []
    assert _version_messages(5) == [(codes.UNKNOWN_VERSION, "version 5 is newer than this tool knows (4)")]
    assert _version_messages(2) == [
        (
            codes.OLD_VERSION,
            "version 2 session: pi migrates it to version 4 and rewrites the file when it opens it",
        )
    ]


def _context(entries: list[dict[str, Any]], tip: str) -> str:
    return json.dumps(build_session_context(entries, tip, pi="1.6.0"), sort_keys=True)


def _effects_agree_with_the_projection(doc: SessionDocument) -> int:
    """Each edit applies (per :func:`edit_effect`) exactly when taking it away changes the context pi
    1.6.0 builds at the tip the effect is about. Returns how many edits apply."""
    entries = [json.loads(i.raw) for i in doc.entries()]
    leaf = doc.leaf()
    assert leaf is not None
    applying = 0
    for edit in doc.edits:
        tip = leaf if edit in doc.leaf_path() else edit
        position = [i for i in doc.entries()].index(edit)
        neutral = [dict(e) for e in entries]
        neutral[position]["targetId"] = "\u2205 no such entry"
        changed = _context(entries, tip.id) != _context(neutral, tip.id)
        effect = edit_effect(doc, edit)
        assert effect.applies == changed, (edit.line + 1, effect.text)
        applying += effect.applies
    return applying


@pytest.mark.parametrize("path", [p for p in REAL_160 if "ctxedit" in p.name], ids=lambda p: p.name)
def test_effects_agree_with_the_projection_on_pi_1_6_0_s_files(path: Path) -> None:
    assert _effects_agree_with_the_projection(SessionDocument.from_file(str(path))) > 0


def test_effects_agree_with_the_projection_on_written_and_synthetic_sessions(
    written_by_pi_1_6_0: tuple[Path, Path],
) -> None:
    for path in written_by_pi_1_6_0:
        _effects_agree_with_the_projection(SessionDocument.from_file(str(path)))
    assert _effects_agree_with_the_projection(edits_doc()) == 3


# -- issue 23 G: version 1 files and columns ----------------------------------------------------


def test_a_version_1_file_reads_as_the_chain_pi_migrates_it_to() -> None:
    doc = SessionDocument.from_file(str(REAL / "large-session.jsonl"))
    text = hover(doc, 3, 1)[0]  # type: ignore[index]
    assert "undefined" not in text
    assert "no id yet (version 1)" in text
    assert "line 4 · depth 2 · parent (line 3) · 1 child · on the current path" in text
    hints = inlay_hints(doc, 0, 5)
    assert [h.label.strip() for h in hints] == [f"depth {n}" for n in range(5)]
    last = inlay_hints(doc, doc.line_count - 2, doc.line_count - 1)
    assert [h.label.strip() for h in last] == ["depth 1017 · no children · leaf"]
    assert document_symbols(doc)[1].detail == "no id yet (version 1)"
    header = hover(doc, 0, 1)[0]  # type: ignore[index]
    assert "undefined" not in header and "**leaf** (line 1019): assistant: " in header


def test_messages_name_no_column_and_glued_pieces_are_placed_by_range() -> None:
    emoji = "😀" * 3  # three characters, six UTF-16 units, twelve bytes
    bad = (
        '{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-30T09:13:48.180Z",'
        f'"message":{{"role":"user","content":"{emoji}", oops}}}}'
    )
    doc = make(S.header(), bad)
    (d,) = [d for d in document_diagnostics(doc) if d.code == codes.INVALID_JSON]
    assert "column" not in d.message and d.start == bad.encode().index(b"oops")
    cut = S.user("a", None)[:40]
    whole = S.user("b", None, emoji)
    glued = make(S.header(), cut + whole)
    (g,) = [d for d in document_diagnostics(glued) if d.code == codes.GLUED_LINES]
    assert "column" not in g.message
    assert [(r.line, r.start, r.message) for r in g.related] == [
        (1, 0, "a cut-off line"),
        (1, len(cut.encode()), "entry `b` (message)"),
    ]
