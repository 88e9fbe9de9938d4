"""Appends to a session loaded from its persistent index keep its entries on demand
(session/index_rows.py): our appends, another program's lines taken in by a refresh or before one of
ours, branches and failed appends join the index's rows, and every answer (and the file's bytes) is
the one of the same calls on the same file opened without the index."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, cache_dir, loader, manager, storage
from pi_session_server.session.index_rows import IndexedRows
from pi_session_server.session.tree import preorder

pytestmark = pytest.mark.usefixtures("files_settle_at_once")

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}
NOW = "2026-01-02T03:04:05.678Z"


@pytest.fixture(autouse=True)
def _indexed_and_read_by_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file indexed and its entries read by offset (a big session's way: a small file's
    entries are all made when it changes, as they cost little)."""
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)


@pytest.fixture(autouse=True)
def _same_ids_and_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids and times of new entries depend only on the ids the session has: the same calls on
    two managers of one session write the same lines."""

    def first_free(is_taken: Any) -> str:
        return next(c for c in (f"n{k:03}" for k in itertools.count()) if not is_taken(c))

    monkeypatch.setattr(manager, "new_entry_id", first_free)
    monkeypatch.setattr(manager, "_now", lambda: NOW)


@pytest.fixture
def every_entry_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the rows made every entry."""
    calls: list[int] = []
    every_entry = IndexedRows.every_entry

    def counted(rows: IndexedRows) -> Any:
        calls.append(rows.count)
        return every_entry(rows)

    monkeypatch.setattr(IndexedRows, "every_entry", counted)
    return calls


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False) + "\n"


def _message(entry_id: str, parent: Any, role: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": f"say {n}"}
    if role == "assistant":
        message.update(provider="prov", model=f"model-{n}")
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"ts{n}", "message": message}


def _chat(count: int) -> list[dict[str, Any]]:
    """A chat of ``count`` messages with a compaction, a label, a branch and a name."""
    values = [
        _message(f"m{n}", f"m{n - 1}" if n else None, "assistant" if n % 2 else "user", n)
        for n in range(count)
    ]
    values.append(
        {
            "type": "compaction",
            "id": "c",
            "parentId": values[-1]["id"],
            "timestamp": "t",
            "summary": "so far",
            "firstKeptEntryId": f"m{count - 2}",
            "tokensBefore": 5,
        }
    )
    values.append(
        {"type": "label", "id": "l", "parentId": "c", "timestamp": "t", "targetId": "m1", "label": "one"}
    )
    values.append(_message("b0", "m2", "user", 99))  # a branch from an old entry
    values.append({"type": "session_info", "id": "i", "parentId": "b0", "timestamp": "t", "name": " chat "})
    return values


def _write(path: Path, values: list[dict[str, Any]]) -> None:
    path.write_text("".join(map(_line, [HEADER, *values])), encoding="utf-8")


@contextlib.contextmanager
def _on_rows_and_scanned(
    directory: Path, pi: str = "1.6.0"
) -> Iterator[tuple[SessionManager, SessionManager]]:
    """A writable manager of a chat reopened from its index (its entries not made), and one of the
    same chat in another file opened without the index."""
    indexed, plain = directory / "indexed.jsonl", directory / "plain.jsonl"
    for path in (indexed, plain):
        _write(path, _chat(12))
    index_dir = directory / "index"
    SessionManager.open(str(indexed), index=str(index_dir)).close()
    with (
        SessionManager.open(str(indexed), index=str(index_dir), pi=pi) as on_rows,
        SessionManager.open(str(plain), index=False, pi=pi) as scanned,
    ):
        assert on_rows._rows is not None
        yield on_rows, scanned


def _entry(found: Any) -> Any:
    return found if found is ABSENT else (found.id, found.parent_id, found.line, found.offset, found.value)


_ASKED = ["m0", "m1", "m5", "m11", "c", "b0", "n000", "n001", "n002", "f0", "f1", "nowhere", "", 3]


def _answers(sm: SessionManager) -> dict[str, Any]:
    """What a front end asks of a session after a change, none of it every entry."""
    return {
        "leaf": sm.get_leaf_id(),
        "leaf entry": _entry(sm.get_leaf_entry()),
        "branch": [e.id for e in sm.get_branch()],
        "branches": {str(i): [e.id for e in sm.get_branch(i)] for i in _ASKED},
        "entries": {str(i): _entry(sm.get_entry(i)) for i in _ASKED},
        "children": {str(i): [e.id for e in sm.get_children(i)] for i in [*_ASKED, None]},
        "positions": {str(i): sm.position_of(i) for i in _ASKED},
        "labels": {str(i): (sm.get_label(i), sm.get_label_timestamp(i)) for i in _ASKED},
        "context": sm.build_session_context(),
        "context entries": [(e.id, e.line) for e in sm.build_context_entries()],
        "name": sm.get_session_name(),
        "counts": (sm.entry_count(), sm.get_entry_count()),
        "last": [_entry(e) for e in sm.entries_slice(max(sm.entry_count() - 3, 0), sm.entry_count())],
    }


def _everything(sm: SessionManager) -> Any:
    """What needs every entry: the entries (not the length of their lines, a hint for reading them
    that an index and a scan may tell apart), the tree."""
    entries = sm.get_entries()
    return (
        [(e.id, e.parent_id, e.type, e.timestamp, e.role, e.line, e.offset, e.value) for e in entries],
        [(depth, n.entry.id, n.label, len(n.children)) for depth, n in preorder(sm.get_tree())],
        [(p.line, p.kind, p.message) for p in sm.problems],
    )


# a line of another program's that is not an entry (a problem of the file's)
_NOT_JSON = "{not json\n"


def _append_elsewhere(sm: SessionManager, *values: dict[str, Any] | str) -> None:
    """Another program's appends to the file of ``sm`` (a string: that line as it is)."""
    with open(sm.get_session_file(), "a", encoding="utf-8") as file:
        file.writelines(value if isinstance(value, str) else _line(value) for value in values)


@pytest.mark.parametrize("totals_first", [False, True])  # (the totals split the rows' ids column)
def test_appends_branches_and_other_programs_lines_make_no_entry_but_theirs(
    tmp_path: Path, every_entry_made: list[int], totals_first: bool
) -> None:
    """The library's first append to a session reopened from its index (and all that follows it
    here) makes no entry of the rows: the session stays on its rows, and answers as the file
    opened without the index does."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        if totals_first:
            assert on_rows.envelopes(0, on_rows.entry_count()).ids == scanned.envelopes(0, 17).ids
        for sm in (on_rows, scanned):
            sm.append_message({"role": "user", "content": "one more"})
            sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
            sm.append_label_change("m3", "three")
            sm.branch("m4")
            sm.append_custom_entry("note", {"k": 1})
            sm.branch_with_summary("n001", "back")
            _append_elsewhere(sm, _message("f0", "n003", "user", 50))
            assert sm.refresh_from_disk().new_entry_ids == ["f0"]
            _append_elsewhere(sm, _message("f1", "f0", "assistant", 51))
            sm.append_session_info("renamed")  # after their line, taken in before ours
            assert sm.refresh_from_disk().new_entry_ids == ["f1"]
        assert _answers(on_rows) == _answers(scanned)
        assert on_rows._rows is not None and every_entry_made == []
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


# ids near the chat's (_chat(12)) it has not: a prefix, extensions, between two of them in their
# order, before the first, after the last, near an appended one
_NEAR_IDS = [
    "m",
    "m1x",
    "m12",
    "m00",
    "b",
    "b00",
    "c0",
    "i ",
    "l\u00e9",
    "a",
    "zz",
    "\U0001f600",
    "n0000",
    "",
]


def _drawing(asked: list[str]) -> tuple[Any, list[list[bool]]]:
    """An id draw (``manager.new_entry_id``) that asks whether each of ``asked``, the ids it drew
    before and _NEAR_IDS is taken, then takes n000, n001, ...; and the answers it was given."""
    answers: list[list[bool]] = []
    drawn: list[str] = []

    def draw(is_taken: Any) -> str:
        answers.append([is_taken(candidate) for candidate in [*asked, *drawn, *_NEAR_IDS]])
        drawn.append(f"n{len(drawn):03}")
        return drawn[-1]

    return draw, answers


def test_new_ids_are_drawn_again_exactly_where_without_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_entry_made: list[int]
) -> None:
    """An append's new id is drawn again while the session has it: on the index's rows (looked up
    in the order of their ids, then among the ids appended since) exactly as on the scanned file,
    for each id the session has and for ids near them that it has not."""
    held = [*(f"m{n}" for n in range(12)), "c", "l", "b0", "i"]
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            draw, answers = _drawing(held)
            monkeypatch.setattr(manager, "new_entry_id", draw)
            for turn in range(3):
                sm.append_message({"role": "user", "content": f"turn {turn}"})
            assert answers == [[True] * (len(held) + turn) + [False] * len(_NEAR_IDS) for turn in range(3)]
        assert on_rows._rows is not None and every_entry_made == []
        assert _answers(on_rows) == _answers(scanned)


@pytest.mark.parametrize(("pi", "rollback"), [("1.6.0", False), ("0.86.1", True), ("0.86.1", False)])
def test_a_failed_append_is_taken_back_or_kept_as_without_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pi: str, rollback: bool
) -> None:
    """A write that fails leaves the session as without the index: taken back (pi 1.6.0, or the
    sidecar's switch) without making an entry, or kept in memory though not in the file (pi 0.86.1)."""
    with _on_rows_and_scanned(tmp_path, pi) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            sm.rollback_failed_appends = rollback
            sm.append_message({"role": "user", "content": "written"})
            with _failing_writes(monkeypatch), pytest.raises(OSError):
                sm.append_message({"role": "assistant", "content": "lost"})
            assert sm.get_leaf_id() == ("n000" if pi == "1.6.0" or rollback else "n001")
        assert _answers(on_rows) == _answers(scanned)
        assert (on_rows._rows is not None) == (pi == "1.6.0" or rollback)
        for sm in (on_rows, scanned):
            sm.append_message({"role": "user", "content": "after"})
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


@contextlib.contextmanager
def _failing_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as patched:

        def fail(*_args: Any, **_kwargs: Any) -> Any:
            raise OSError("disk full")

        patched.setattr(storage.Appender, "append", fail)
        yield


def test_lines_that_break_the_rows_rules_make_every_entry(
    tmp_path: Path, every_entry_made: list[int]
) -> None:
    """Another program's line with an id the session has (or a second header) cannot be a row: the
    entries are all made then, as before, and the answers are still the scanned file's."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            sm.append_message({"role": "user", "content": "one more"})
            _append_elsewhere(sm, _message("m3", "n000", "user", 50))
            sm.refresh_from_disk()
        assert on_rows._rows is None and len(every_entry_made) == 1
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)


def test_an_append_that_makes_the_deleted_file_again_answers_as_without_the_index(tmp_path: Path) -> None:
    """Our line alone in a new file at the path (pi's appendFileSync after the file was deleted)
    is not after the rows' lines: every entry is made, and the answers are the scanned file's."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            Path(sm.get_session_file()).unlink()
            sm.append_message({"role": "user", "content": "alone"})
            sm.append_message({"role": "assistant", "content": "then"})
        assert on_rows._rows is None
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


# ----------------------------------------------------------------------------- transactions


class _TakenBack(Exception):
    """What a block raises for its calls to be taken back."""


_BLOCKS: dict[str, Any] = {
    "appends": lambda sm: (
        sm.append_message({"role": "user", "content": "in the block"}),
        sm.append_label_change("m3", "three"),
        sm.branch("m4"),
        sm.append_custom_entry("note", {"k": 1}),
        sm.branch_with_summary("n001", "back"),
    ),
    "branch with summary": lambda sm: (sm.branch("m5"), sm.branch_with_summary("m2", "summed up")),
}


@pytest.mark.parametrize("block", sorted(_BLOCKS))
def test_a_transaction_that_succeeds_makes_no_entry(
    tmp_path: Path, every_entry_made: list[int], block: str
) -> None:
    """A block run all or nothing (the sidecar's every write but an append: pi/branchWithSummary)
    on a session reopened from its index keeps it on its rows."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            with sm.transaction():
                _BLOCKS[block](sm)
        assert on_rows._rows is not None and every_entry_made == []
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


def _switch_to_new_file(sm: SessionManager) -> None:
    sm.set_session_file(str(Path(sm.get_session_file()).with_suffix(".new.jsonl")))


# how a block ends before it raises: its appends, then...
_ENDINGS: dict[str, Any] = {
    "raise": lambda sm: None,
    "every entry made, one more appended": lambda sm: (
        sm.get_entries(),
        sm.append_message({"role": "assistant", "content": "then"}),
    ),
    "new session": lambda sm: sm.new_session(),
    "another file": lambda sm: sm.set_session_file(sm.get_session_file().replace("indexed", "plain")),
    "a new file": _switch_to_new_file,
}


@pytest.mark.parametrize("block", sorted(_BLOCKS))
@pytest.mark.parametrize("ending", sorted(_ENDINGS))
def test_a_transaction_that_raises_runs_on_the_rows_and_is_taken_back_as_without_the_index(
    tmp_path: Path, every_entry_made: list[int], block: str, ending: str
) -> None:
    """A block that raises after it appended makes no entry while it runs; what it did is taken
    back (every entry made then, as they were before it), and the session answers as the file
    opened without the index does: after a new session, a switch to another file, entries made in
    the block."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            sm.append_label_change("m5", "before")
            before, made = _answers(sm), len(every_entry_made)
            with pytest.raises(_TakenBack), sm.transaction():
                _BLOCKS[block](sm)
                assert len(every_entry_made) == made
                _ENDINGS[ending](sm)
                raise _TakenBack
            assert _answers(sm) == before
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        for sm in (on_rows, scanned):  # the lines written stay: the next refresh takes them in
            sm.refresh_from_disk()
            sm.append_message({"role": "user", "content": "after"})
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


@pytest.mark.parametrize("ending", ["raise", "new session", "a new file"])
def test_a_transaction_that_raises_before_it_appends_keeps_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_entry_made: list[int], ending: str
) -> None:
    """A block that raises having appended no row (a branch, a label whose write failed, a switch of
    session) leaves the session on its rows, no entry made."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            sm.rollback_failed_appends = True
            with pytest.raises(_TakenBack), sm.transaction():
                sm.branch("m4")
                with _failing_writes(monkeypatch), pytest.raises(OSError):
                    sm.append_label_change("m2", "lost")
                _ENDINGS[ending](sm)
                raise _TakenBack
        assert on_rows._rows is not None and every_entry_made == []
        assert _answers(on_rows) == _answers(scanned)
        for sm in (on_rows, scanned):
            sm.append_message({"role": "user", "content": "after"})
        assert on_rows._rows is not None and every_entry_made == []
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()


def test_entries_made_by_a_block_that_raises_are_made_once(
    tmp_path: Path, every_entry_made: list[int]
) -> None:
    """Every entry made in a block that then raises, having appended nothing, stays made: the
    entries are not made a second time (other objects for the same rows) by what follows."""
    with _on_rows_and_scanned(tmp_path) as (on_rows, scanned):
        made = {}
        for sm in (scanned, on_rows):  # (the scan makes no rows' entries)
            with pytest.raises(_TakenBack), sm.transaction():
                sm.branch("m4")
                assert every_entry_made == []
                made[sm] = sm.get_entries()
                raise _TakenBack
        assert on_rows._rows is None and len(every_entry_made) == 1
        for sm in (on_rows, scanned):
            sm.append_message({"role": "user", "content": "after"})
        assert len(every_entry_made) == 1
        assert all(a is b for a, b in zip(on_rows.get_entries()[:-1], made[on_rows], strict=True))
        assert _answers(on_rows) == _answers(scanned)
        assert _everything(on_rows) == _everything(scanned)


# ----------------------------------------------------------------------------- random sequences

_IDS = st.sampled_from(_ASKED)
_ROLES = st.sampled_from(["user", "assistant", "toolResult", "bashExecution"])


@st.composite
def _foreign(draw: st.DrawFn) -> list[dict[str, Any] | str]:
    """Lines another program appends: most go on from an entry; some break the rows' rules; some
    are not entries at all."""
    lines: list[dict[str, Any] | str] = []
    for n in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)) == 0:
            lines.append(_NOT_JSON)
            continue
        entry_id = draw(st.one_of(st.just(f"f{n}"), st.sampled_from(["m3", "f0", "n000", ""])))
        parent = draw(st.one_of(_IDS, st.none()))
        value = _message(entry_id, parent, draw(_ROLES), 60 + n)
        if draw(st.integers(0, 9)) == 0:
            value = {
                "type": "label",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "t",
                "targetId": draw(_IDS),
            }
        lines.append(value)
    return lines


_CALL_STEPS = st.one_of(
    st.tuples(st.just("message"), _ROLES),
    st.tuples(st.just("label"), _IDS, st.sampled_from(["L", "", ABSENT])),
    st.tuples(st.just("branch"), _IDS),
    st.tuples(st.just("summary"), st.one_of(_IDS, st.none())),
    st.tuples(st.just("custom"), st.integers(0, 3)),
    st.tuples(st.just("name"), st.sampled_from(["x", " y "])),
    st.tuples(st.just("reset"), st.none()),
    st.tuples(st.just("failed"), _ROLES),
    st.tuples(st.just("refresh"), _foreign()),
    st.tuples(st.just("before ours"), _foreign()),
)
# a block of calls run all or nothing: kept, or taken back after how it ends (_ENDINGS)
_STEPS = st.one_of(
    _CALL_STEPS,
    st.tuples(
        st.just("transaction"),
        st.lists(_CALL_STEPS, min_size=1, max_size=4),
        st.sampled_from(["commit", *sorted(_ENDINGS)]),
    ),
)


_CALLS: dict[str, Any] = {
    "message": lambda sm, role: sm.append_message({"role": role, "content": "c"}),
    "label": lambda sm, target, label: sm.append_label_change(target, label),
    "branch": lambda sm, entry_id: sm.branch(entry_id),
    "summary": lambda sm, entry_id: sm.branch_with_summary(entry_id, "s"),
    "custom": lambda sm, data: sm.append_custom_entry("t", data),
    "name": lambda sm, name: sm.append_session_info(name),
    "reset": lambda sm, _none: sm.reset_leaf(),
}


def _step(sm: SessionManager, step: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch, made: list[int]) -> Any:
    """One call (or a foreign write and a call, or a transaction's block); its answer, or the error
    it raised."""
    kind, arg = step[0], step[1]
    if kind == "transaction":
        return _transaction(sm, arg, step[2], monkeypatch, made)
    try:
        if kind in _CALLS:
            return _CALLS[kind](sm, *step[1:])
        if kind == "failed":
            with _failing_writes(monkeypatch):
                return sm.append_message({"role": arg, "content": "lost"})
        _append_elsewhere(sm, *arg)
        if kind == "before ours":
            sm.append_message({"role": "user", "content": "ours"})
        return sm.refresh_from_disk().to_json()
    except (PiSessionError, OSError) as error:  # (the same error of both is the same answer)
        return type(error).__name__, str(error)


def _transaction(
    sm: SessionManager,
    block: list[tuple[Any, ...]],
    ending: str,
    monkeypatch: pytest.MonkeyPatch,
    made: list[int],
) -> list[Any]:
    """``block`` run in a transaction, kept ("commit") or taken back after ``ending``: whether the
    block began with no entry made (every entry made: ``made``), its calls' answers, how it ended."""
    before = len(made)
    answers: list[Any] = []
    try:
        with sm.transaction():
            answers.append(len(made) == before)
            answers.extend(_step(sm, step, monkeypatch, made) for step in block)
            if ending != "commit":
                _ENDINGS[ending](sm)
                raise _TakenBack
    except _TakenBack:
        answers.append("taken back")
    return answers


# (monkeypatch: only its context(), undone after each failed write; the autouse patches hold for all)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# a refresh in a block taken back read a line that is not an entry: the next refresh reads it again
@example(steps=[("transaction", [("refresh", [_NOT_JSON])], "raise")], pi="1.6.0", rollback=False)
@given(
    steps=st.lists(_STEPS, min_size=1, max_size=8),
    pi=st.sampled_from(["1.6.0", "0.86.1"]),
    rollback=st.booleans(),
)
def test_any_sequence_of_calls_answers_as_without_the_index(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    every_entry_made: list[int],
    steps: list[tuple[Any, ...]],
    pi: str,
    rollback: bool,
) -> None:
    with _on_rows_and_scanned(tmp_path_factory.mktemp("calls"), pi) as (on_rows, scanned):
        for sm in (on_rows, scanned):
            sm.rollback_failed_appends = rollback
        for step in steps:
            assert _step(on_rows, step, monkeypatch, every_entry_made) == _step(
                scanned, step, monkeypatch, every_entry_made
            )
            assert _answers(on_rows) == _answers(scanned)
        event(f"on rows after the calls: {on_rows._rows is not None}")
        assert _everything(on_rows) == _everything(scanned)
        assert Path(on_rows.get_session_file()).read_bytes() == Path(scanned.get_session_file()).read_bytes()
        # what the session says of the file's lines, once it looked at them, is what a fresh open
        # of the file says (after a block taken back, too: its lines are taken in and told again)
        scanned.refresh_from_disk()
        fresh = SessionManager.open(scanned.get_session_file(), index=False, read_only=True, pi=pi)
        assert _everything(scanned)[2] == _everything(fresh)[2]
