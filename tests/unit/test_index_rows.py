"""A session reopened from its persistent index makes its entries on demand (session/index_rows.py):
every answer is the one of the same file scanned, whichever is asked first, and the entries made
on demand are the very objects every entry's list later holds."""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, cache_dir, index_rows, loader, scan_index
from pi_session_server.session.index_rows import RowPath
from pi_session_server.session.tree import preorder

pytestmark = pytest.mark.usefixtures("files_settle_at_once")

DATA = Path(__file__).resolve().parents[1] / "reliability" / "data"
HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}


@pytest.fixture(autouse=True)
def _every_size_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)


def _answers(sm: SessionManager) -> dict[str, Any]:
    """What a reader asks of a reopened session, before anything else (the context first)."""
    leaf = sm.get_leaf_entry()
    return {
        "context": sm.build_session_context(),
        "projection": _projection(sm.build_session_projection()),
        "context entries": [(e.id, e.line) for e in sm.build_context_entries()],
        "context at leaf": sm.build_session_context_at(sm.get_leaf_id()),
        "context at none": sm.build_session_context_at(ABSENT),
        "leaf": sm.get_leaf_id(),
        "leaf entry": leaf if leaf is ABSENT else (leaf.id, leaf.line, leaf.value),
        "name": sm.get_session_name(),
        "header": sm.get_header(),
        "count": sm.entry_count(),
        "distinct ids": sm.get_entry_count(),
        "labels": {k: (sm.get_label(k), sm.get_label_timestamp(k)) for k in ("m1", "m2", "a", "b", "x")},
        "envelopes": _envelopes(sm),
    }


def _envelopes(sm: SessionManager) -> list[Any]:
    """The envelope columns of every entry, of the second half and of one entry in the middle."""
    n = sm.entry_count()
    spans = [(0, n), (n // 2, n + 5), (n // 2, n // 2 + 1), (n, n)]
    columns = [sm.envelopes(start, end) for start, end in spans]
    return [
        (
            c.start,
            list(c.types),
            list(c.ids),
            list(c.parents),
            list(c.timestamps),
            list(c.heads),
            list(c.offsets),
        )
        for c in columns
    ]


def _projection(projection: dict[str, Any]) -> Any:
    entries = [(p["sourceEntry"].id, p["sourceEntry"].line, p["messages"]) for p in projection["entries"]]
    return {**projection, "entries": entries}


def _tree_shape(roots: list[Any]) -> list[tuple[int, Any, Any, int]]:
    return [(depth, n.entry.id, n.label, len(n.children)) for depth, n in preorder(roots)]


def _everything(sm: SessionManager) -> Any:
    entries = sm.get_entries()
    return (
        [(e.id, e.parent_id, e.type, e.timestamp, e.role, e.line, e.offset, e.aux) for e in entries],
        [e.value for e in entries],
        [e.id for e in sm.get_branch()],
        _tree_shape(sm.get_tree()),
        [(p.line, p.kind, p.message) for p in sm.problems],
    )


def assert_reopened_alike(path: Path, index_dir: Path, *, lazy: bool | None = True) -> None:
    """Opened without an index, then twice with one (the second from the index): the same answers,
    asked first and after every entry is made; ``lazy``: whether the reopen makes entries on demand
    (None: either)."""
    with contextlib.ExitStack() as stack:
        plain = stack.enter_context(SessionManager.open(str(path), read_only=True, index=False))
        expected = _answers(plain), _everything(plain)
        stack.enter_context(SessionManager.open(str(path), read_only=True, index=str(index_dir)))
        again = stack.enter_context(SessionManager.open(str(path), read_only=True, index=str(index_dir)))
        assert scan_index.last_outcome.read == "used"
        if lazy is not None:
            assert (again._rows is not None) == lazy
        first = _answers(again)
        made = again.build_session_projection()["entries"]
        assert (first, _everything(again)) == expected
        entries = {id(e) for e in again.get_entries()}
        assert all(id(p["sourceEntry"]) in entries for p in made)  # the very objects


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def _write(path: Path, values: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(map(_line, [HEADER, *values])) + "\n", encoding="utf-8")
    return path


def _chat(ids: list[str], *, compaction_at: int | None = None) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = [
        {
            "type": "thinking_level_change",
            "id": "t0",
            "parentId": None,
            "timestamp": "t",
            "thinkingLevel": "low",
        },
        {
            "type": "model_change",
            "id": "mc",
            "parentId": "t0",
            "timestamp": "t",
            "provider": "p",
            "modelId": "m",
        },
    ]
    parent = "mc"
    for n, entry_id in enumerate(ids):
        role = "assistant" if n % 2 else "user"
        message: dict[str, Any] = {"role": role, "content": f"say {n}"}
        if role == "assistant":
            message.update(provider="prov", model=f"model-{n}")
        values.append(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"ts{n}", "message": message}
        )
        parent = entry_id
        if n == compaction_at:
            values.append(
                {
                    "type": "compaction",
                    "id": "c",
                    "parentId": parent,
                    "timestamp": "t",
                    "summary": "so far",
                    "firstKeptEntryId": ids[n - 2],
                    "tokensBefore": 5,
                }
            )
            parent = "c"
    return values


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_real_sessions_reopened_from_their_index_answer_alike(name: str, tmp_path: Path):
    path = tmp_path / name
    path.write_bytes((DATA / name).read_bytes())
    for _ in range(2):
        SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")).close()
    if scan_index.last_outcome.read != "used":  # (test_scan_index: those that must be are)
        pytest.skip("never read from an index: an old version (migrated in memory), or no entries")
    assert_reopened_alike(path, tmp_path / "index", lazy=None)


def test_a_chat_with_a_compaction_branches_labels_and_a_name(tmp_path: Path):
    values = _chat([f"m{n}" for n in range(40)], compaction_at=30)
    values += [
        {
            "type": "label",
            "id": "l1",
            "parentId": "m39",
            "timestamp": "lt",
            "targetId": "m2",
            "label": "here",
        },
        {"type": "session_info", "id": "i", "parentId": "l1", "timestamp": "t", "name": "  named  "},
        {
            "type": "branch_summary",
            "id": "b",
            "parentId": "m10",
            "timestamp": "t",
            "fromId": "m39",
            "summary": "s",
        },
        {
            "type": "message",
            "id": "a",
            "parentId": "b",
            "timestamp": "t",
            "message": {"role": "user", "content": "x"},
        },
    ]
    path = _write(tmp_path / "s.jsonl", values)
    assert_reopened_alike(path, tmp_path / "index")
    with SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")) as sm:
        assert sm._rows is not None
        path_of_rows = sm._session_path(sm.get_leaf_id())
        assert type(path_of_rows) is RowPath
        assert [e.id for e in path_of_rows] == [e.id for e in sm.get_branch()]


def test_a_path_read_from_the_rows_gives_the_managers_entries_after_every_entry_is_made(tmp_path: Path):
    """A viewer's path is read from the rows, then the whole tree is built: the path's entries are
    then the entry list's own objects (found on the path by identity, not made twice)."""
    values = _chat([f"m{n}" for n in range(40)])
    values.append(
        {
            "type": "message",
            "id": "x",
            "parentId": "m10",
            "timestamp": "t",
            "message": {"role": "user", "content": "b"},
        }
    )
    path = _write(tmp_path / "s.jsonl", values)
    SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")).close()
    with SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")) as sm:
        rows = sm._rows
        assert rows is not None
        leaf_path = sm._session_path(sm.get_leaf_id())
        made_before = leaf_path[3]
        assert type(leaf_path) is RowPath and made_before in leaf_path
        entries = sm.get_entries()  # every entry made
        assert sm._rows is None
        by_id = {e.id: e for e in entries}
        assert [id(e) for e in leaf_path] == [id(by_id[e.id]) for e in leaf_path]
        assert leaf_path[3] is made_before and rows.entry(4) is by_id[rows.id_at(4)]
        on_path = {e.id for e in leaf_path}
        assert on_path == {"t0", "mc", *(f"m{n}" for n in range(11)), "x"}
        assert [e.id for e in entries[1:] if e in leaf_path] == [e.id for e in entries[1:] if e.id in on_path]


def test_the_envelopes_of_most_rows_share_their_strings_with_the_entries_made_later(tmp_path: Path):
    """The totals keep every id they counted: the entries made after them hold the same strings,
    not a second copy of each; the envelopes of a few rows split nothing, and those of most rows
    make no string of a timestamp the totals do not read (they read the first and the last)."""
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(40)]))
    SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")).close()
    with SessionManager.open(str(path), read_only=True, index=str(tmp_path / "index")) as sm:
        rows = sm._rows
        assert rows is not None
        few = rows.envelopes(3, 8)
        assert rows._ids is None and few.ids == [rows.id_at(row) for row in range(3, 8)]
        counted = rows.envelopes(0, rows.count)
        assert rows._ids is not None and rows._timestamps is None
        entries = sm.get_entries()  # (the header left out)
        assert [e.id for e in entries] == counted.ids
        assert all(e.id is i for e, i in zip(entries, counted.ids, strict=True))
        assert [e.timestamp for e in entries] == list(counted.timestamps)
        assert counted.timestamps[-1] == entries[-1].timestamp and counted.timestamps[1:3] == [
            e.timestamp for e in entries[1:3]
        ]


def test_non_ascii_ids_and_timestamps(tmp_path: Path):
    ids = ["m\u00e9" + str(n) for n in range(8)] + ["\U0001f600", "\u2028x", "plain"]
    values = _chat(ids, compaction_at=6)
    values[3]["timestamp"] = "\u00fc\U0001f600"
    assert_reopened_alike(_write(tmp_path / "s.jsonl", values), tmp_path / "index")


def test_the_leaf_is_a_compaction(tmp_path: Path):
    values = _chat([f"m{n}" for n in range(6)], compaction_at=5)
    assert_reopened_alike(_write(tmp_path / "s.jsonl", values), tmp_path / "index")


def test_repeated_ids_make_every_entry_at_once(tmp_path: Path):
    values = _chat([f"m{n}" for n in range(6)] + ["m2", "m7"])
    assert_reopened_alike(_write(tmp_path / "s.jsonl", values), tmp_path / "index", lazy=False)


def test_a_parent_cycle_is_walked_as_the_scan_walks_it(tmp_path: Path):
    values = _chat([f"m{n}" for n in range(6)])
    values[0]["parentId"] = "m5"  # t0 -> m5 -> ... -> t0
    values.append({"type": "custom", "id": "x", "parentId": "m3", "timestamp": "t", "customType": "c"})
    assert_reopened_alike(_write(tmp_path / "s.jsonl", values), tmp_path / "index")


_GROWN_MIN_SIZE = 16384  # indexed from this size; a file that grew by less keeps its index
_PADDED_HEADER = {**HEADER, "cwd": "/" + "p" * _GROWN_MIN_SIZE}  # every file big enough to index


def _grow(path: Path, index_dir: Path, before: list[dict[str, Any]], appended: list[dict[str, Any]]) -> bool:
    """``before`` written and indexed, then ``appended`` added as pi appends (the index kept: the
    file grew by less than the index is rewritten for); whether the first reopen was lazy."""
    path.write_text("\n".join(map(_line, [_PADDED_HEADER, *before])) + "\n", encoding="utf-8")
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    with SessionManager.open(str(path), read_only=True, index=str(index_dir)) as sm:
        lazy = sm._rows is not None
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(_line(value) + "\n" for value in appended)
    return lazy


@pytest.fixture
def _grown_files_keep_their_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, str(_GROWN_MIN_SIZE))
    # files this small keep their lines' bytes, and their entries are all made when they grew
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)


def _reopened_grown(path: Path, index_dir: Path) -> SessionManager:
    sm = SessionManager.open(str(path), read_only=True, index=str(index_dir))
    assert scan_index.last_outcome.read == "grown" and not scan_index.last_outcome.written
    return sm


@pytest.mark.usefixtures("_grown_files_keep_their_index")
# the new ids and parents looked for in a map of the ids column, or one by one
@pytest.mark.parametrize("one_by_one", [False, True])
def test_a_grown_file_reads_its_new_lines_and_still_makes_entries_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_by_one: bool
):
    """pi appended a turn, a label of an old entry and a branch from an old entry since the index
    was written: only the new lines are read, the new entries join the rows, and every answer is
    the scanned file's; entries asked for (the context's) are the ones every entry's list holds."""
    monkeypatch.setattr(index_rows, "_one_by_one", lambda rows, wanted, count: one_by_one)
    path, index_dir = tmp_path / "s.jsonl", tmp_path / "index"
    appended = [
        {"type": "message", "id": "n1", "parentId": "m29", "timestamp": "t", "message": {"role": "user"}},
        {"type": "label", "id": "x", "parentId": "n1", "timestamp": "t", "targetId": "m1", "label": "L"},
        {"type": "custom_message", "id": "n2", "parentId": "m12", "timestamp": "t", "content": "c"},
        {
            "type": "message",
            "id": "n3",
            "parentId": "n2",
            "timestamp": "t",
            "message": {"role": "bashExecution"},
        },
    ]
    assert _grow(path, index_dir, _chat([f"m{n}" for n in range(30)], compaction_at=20), appended)
    with (
        _reopened_grown(path, index_dir) as sm,
        SessionManager.open(str(path), read_only=True, index=False) as plain,
    ):
        assert sm._rows is not None and sm._rows.count == plain.entry_count()
        assert _answers(sm) == _answers(plain)
        made = [id(p["sourceEntry"]) for p in sm.build_session_projection()["entries"]]
        assert sm._rows is not None  # (every entry was not needed)
        assert [e.id for e in sm.get_branch()] == ["t0", "mc", *(f"m{n}" for n in range(13)), "n2", "n3"]
        assert _everything(sm) == _everything(plain)
        assert set(made) <= {id(e) for e in sm.get_entries()}  # the very objects


@pytest.mark.usefixtures("_grown_files_keep_their_index")
@pytest.mark.parametrize(
    "appended",
    [
        {"type": "message", "id": "m3", "parentId": "m29", "timestamp": "t"},  # an id the rows have
        {"type": "message", "id": "", "parentId": "m29", "timestamp": "t"},
        {"type": "message", "id": 7, "parentId": "m29", "timestamp": "t"},
        {"type": "session", "id": "h2", "version": 3, "timestamp": "t", "cwd": "/"},
        {"type": "message", "id": "n", "parentId": "m29", "timestamp": 5},
        {"type": "label", "id": "n", "parentId": "m29", "timestamp": "t", "targetId": ["m1"], "label": "L"},
    ],
)
def test_a_grown_file_whose_new_lines_break_the_rows_rules_makes_every_entry(
    tmp_path: Path, appended: dict[str, Any]
):
    path, index_dir = tmp_path / "s.jsonl", tmp_path / "index"
    assert _grow(path, index_dir, _chat([f"m{n}" for n in range(30)]), [appended])
    with (
        _reopened_grown(path, index_dir) as sm,
        SessionManager.open(str(path), read_only=True, index=False) as plain,
    ):
        assert sm._rows is None
        assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))


@pytest.mark.usefixtures("_grown_files_keep_their_index")
def test_a_grown_file_whose_new_line_is_the_missing_parent_of_an_old_one_makes_every_entry(tmp_path: Path):
    """An old row names a parent no row had, and the new line has that id: a parent below its
    child, which the rows' parent rows do not tell (the old row's path goes on through it)."""
    path, index_dir = tmp_path / "s.jsonl", tmp_path / "index"
    orphan = {
        "type": "message",
        "id": "o",
        "parentId": "later",
        "timestamp": "t",
        "message": {"role": "user"},
    }
    appended = {"type": "message", "id": "later", "parentId": "m3", "timestamp": "t"}
    assert _grow(path, index_dir, [*_chat([f"m{n}" for n in range(30)]), orphan], [appended])
    with (
        _reopened_grown(path, index_dir) as sm,
        SessionManager.open(str(path), read_only=True, index=False) as plain,
    ):
        assert [e.id for e in sm.get_branch("o")] == ["t0", "mc", "m0", "m1", "m2", "m3", "later", "o"]
        assert sm._rows is None
        assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))


def test_a_small_grown_file_makes_every_entry(tmp_path: Path):
    """A file small enough to keep its lines' bytes makes every entry when it grew (cheap)."""
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(30)], compaction_at=20))
    index_dir = tmp_path / "index"
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    with open(path, "a", encoding="utf-8") as f:
        f.write(
            _line({"type": "label", "id": "x", "parentId": "m29", "timestamp": "t", "targetId": "m1"}) + "\n"
        )
    with SessionManager.open(str(path), read_only=True, index=str(index_dir)) as sm:
        assert scan_index.last_outcome.read == "grown" and sm._rows is None
        with SessionManager.open(str(path), read_only=True, index=False) as plain:
            assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))


@contextlib.contextmanager
def _on_rows_and_scanned(path: Path, index_dir: Path) -> Iterator[tuple[SessionManager, SessionManager]]:
    """A writable manager reopened from the index of ``path`` (its entries not made yet), and one
    of the file scanned."""
    SessionManager.open(str(path), index=str(index_dir)).close()
    with (
        SessionManager.open(str(path), index=str(index_dir)) as sm,
        SessionManager.open(str(path), index=False) as plain,
    ):
        assert sm._rows is not None
        yield sm, plain


def test_a_manager_on_rows_follows_appends_and_takes_back_a_failed_transaction(tmp_path: Path):
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(10)], compaction_at=8))
    index_dir = tmp_path / "index"
    with _on_rows_and_scanned(path, index_dir) as (sm, plain):
        with pytest.raises(RuntimeError), sm.transaction():
            sm.append_message({"role": "user", "content": "taken back"})
            raise RuntimeError
        assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))
    path = _write(tmp_path / "t.jsonl", _chat([f"m{n}" for n in range(10)], compaction_at=8))
    appended = {"type": "message", "id": "n", "parentId": "m9", "timestamp": "t", "message": {"role": "user"}}
    with _on_rows_and_scanned(path, index_dir) as (sm, plain):
        with open(path, "a", encoding="utf-8") as f:
            f.write(_line(appended) + "\n")
        change = sm.refresh_from_disk()
        assert change.kind == "appended" and change.new_entry_ids == ["n"]
        sm.append_label_change("m1", "one")
        assert plain.refresh_from_disk().new_entry_ids == ["n", sm.get_leaf_id()]
        assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))


@pytest.mark.parametrize("version", [scan_index.FORMAT_VERSION - 1, scan_index.FORMAT_VERSION + 1])
def test_an_index_of_another_format_version_is_rebuilt(tmp_path: Path, version: int):
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(10)]))
    index_dir = tmp_path / "index"
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    (index,) = index_dir.glob("*.pi-index")
    data = bytearray(index.read_bytes())
    struct.pack_into("<I", data, 8, version)
    index.write_bytes(bytes(data))
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    assert scan_index.last_outcome.read == "stale" and scan_index.last_outcome.written
    assert_reopened_alike(path, index_dir)


_IDS = st.sampled_from(["m0", "m1", "m2", "m3", "a", "b", "\u00e9", "x y"])


@st.composite
def _sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 30))):
        entry_id = draw(st.one_of(st.just(f"e{n}"), _IDS))
        parent = draw(
            st.one_of(st.just(values[-1]["id"] if values else None), st.none(), _IDS, st.just("nowhere"))
        )
        kind = draw(
            st.sampled_from(["user", "assistant", "compaction", "thinking", "model", "label", "info"])
        )
        value: dict[str, Any] = {"id": entry_id, "parentId": parent, "timestamp": f"t{n}"}
        if kind in ("user", "assistant"):
            value.update(
                type="message", message={"role": kind, "content": f"c{n}", "provider": "p", "model": f"m{n}"}
            )
        elif kind == "compaction":
            value.update(type="compaction", summary="s", firstKeptEntryId=draw(_IDS), tokensBefore=1)
        elif kind == "thinking":
            value.update(type="thinking_level_change", thinkingLevel=f"level{n}")
        elif kind == "model":
            value.update(type="model_change", provider="p", modelId=f"mc{n}")
        elif kind == "label":
            value.update(type="label", targetId=draw(_IDS), label=draw(st.sampled_from(["L", "", None])))
        else:
            value.update(type="session_info", name=f" n{n} ")
        values.append(value)
    return values


@settings(max_examples=60, deadline=None)
@given(values=_sessions())
def test_any_session_reopened_from_its_index_answers_alike(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]]
):
    directory = tmp_path_factory.mktemp("rows")
    assert_reopened_alike(_write(directory / "s.jsonl", values), directory / "index", lazy=None)


def _renamed(values: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """``values`` with every id made distinct (``prefix`` and its place), and the references to it
    (to the last entry that had it) made the same."""
    names = {value["id"]: f"{prefix}{n}" for n, value in enumerate(values)}
    for n, value in enumerate(values):
        value["id"] = f"{prefix}{n}"
        for key in ("parentId", "targetId", "firstKeptEntryId"):
            if value.get(key) in names:
                value[key] = names[value[key]]
    return values


@settings(max_examples=100, deadline=None)
@given(
    before=_sessions(),
    appended=_sessions(),
    attached=st.booleans(),
    distinct=st.sampled_from(["none", "before", "both"]),
)
def test_any_grown_session_reopened_from_its_index_answers_alike(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[dict[str, Any]],
    appended: list[dict[str, Any]],
    attached: bool,
    distinct: str,
):
    """Any session, indexed, then any lines appended (their ids new or the rows', parents anywhere):
    the answers of the scanned file; the new entries join the rows where the rows' ids were distinct
    and the new ids are distinct, new and not the parent an old row names and no row has."""
    if distinct != "none":
        _renamed(before, "b")
    if distinct == "both":
        _renamed(appended, "n")
    if attached:  # pi's append: the first new entry answers the last one
        appended[0]["parentId"] = before[-1]["id"]
    directory = tmp_path_factory.mktemp("grown")
    path, index_dir = directory / "s.jsonl", directory / "index"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, str(_GROWN_MIN_SIZE))
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
        lazy_before = _grow(path, index_dir, before, appended)
        with (
            _reopened_grown(path, index_dir) as sm,
            SessionManager.open(str(path), read_only=True, index=False) as plain,
        ):
            lazy = sm._rows is not None
            event(f"the new entries joined the rows: {lazy}")
            tree = sm.row_tree() if lazy else None  # (the sidecar's first window)
            if tree is not None:
                assert _tree_shape(tree.roots) == _tree_shape(plain.get_tree())
                assert [e.id for e in tree.leaf_path] == [e.id for e in plain.get_branch()]
            assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))
    new_ids = [value["id"] for value in appended]
    old_ids = {value["id"] for value in before}
    missing_parents = {value["parentId"] for value in before} - old_ids  # (a new id there: a parent below)
    fresh = len(set(new_ids)) == len(new_ids) and not set(new_ids) & (old_ids | missing_parents)
    assert lazy == (lazy_before and fresh)


@pytest.mark.parametrize("piece", [1, 3, 4])
def test_text_columns_written_in_many_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece: int):
    """The ends of ids and timestamps across the pieces a text column is written in, of one width
    or of many, ASCII or not."""
    monkeypatch.setattr(scan_index, "_TEXT_PIECE", piece)
    ids = ["a0", "a1", "a2", "a3", "b", "ccc", "\u00e9\u00e9", "d5", "", "e7", "f8"]
    values = _chat(ids, compaction_at=9)
    for n, value in enumerate(values):
        value["timestamp"] = "" if n == 4 else ("t\u00fc" if n % 5 == 0 else "t1")
    values[10]["id"] = "x"  # no empty id (with one, every entry is made at once)
    assert_reopened_alike(_write(tmp_path / "s.jsonl", values), tmp_path / "index")


def test_a_leaf_reset_or_moved_before_the_context(tmp_path: Path):
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(12)], compaction_at=9))
    with _on_rows_and_scanned(path, tmp_path / "index") as (sm, plain):
        sm.reset_leaf()
        plain.reset_leaf()
        assert (_answers(sm), sm.build_context_entries()) == (_answers(plain), plain.build_context_entries())
        assert sm._rows is not None  # (every entry was not needed)
        assert sm.build_session_context_at("m4") == plain.build_session_context_at("m4")
        sm.branch("m5")
        plain.branch("m5")
        assert (_answers(sm), _everything(sm)) == (_answers(plain), _everything(plain))


def test_entries_and_contexts_at_any_id_are_found_without_making_every_entry(tmp_path: Path):
    """``get_entry`` and the context at an entry (``pi-session context --leaf ID``) look the id up
    in the rows' ids column; an id no row has (or not a string) is not found, and its context is
    the last entry's, as pi's."""
    values = _chat([f"m{n}" for n in range(12)], compaction_at=9)
    values.append(
        {"type": "custom", "id": "\u00e9t\u00e9", "parentId": "m4", "timestamp": "t", "customType": "c"}
    )
    path = _write(tmp_path / "s.jsonl", values)
    with _on_rows_and_scanned(path, tmp_path / "index") as (sm, plain):
        for entry_id in ["m4", "t0", "c", "m11", "\u00e9t\u00e9", "m", "4", "m1x", "", 4, None, ["m4"]]:
            found = sm.get_entry(entry_id)
            expected = plain.get_entry(entry_id)
            assert (found if found is ABSENT else (found.id, found.line)) == (
                expected if expected is ABSENT else (expected.id, expected.line)
            )
            assert sm.build_session_context_at(entry_id) == plain.build_session_context_at(entry_id)
            projection = _projection(sm.build_session_projection_at(entry_id))
            assert projection == _projection(plain.build_session_projection_at(entry_id))
        assert sm._rows is not None  # (every entry was not made)
        assert sm.get_entry("m4") is sm.get_entries()[sm.get_entry("m4").line - 1]


def test_a_slice_of_the_entries_is_made_alone_and_is_the_same_objects_later(tmp_path: Path):
    """``entries_slice`` (what the sidecar asks of every session it holds: its last entry) makes
    only the entries asked for; they are the very objects ``get_entries()`` later returns."""
    path = _write(tmp_path / "s.jsonl", _chat([f"m{n}" for n in range(12)], compaction_at=9))
    with _on_rows_and_scanned(path, tmp_path / "index") as (sm, plain):
        count = sm.entry_count()
        last = sm.entries_slice(count - 1, count)
        middle = sm.entries_slice(3, 7)
        past_the_end = sm.entries_slice(count - 2, count + 5)
        assert sm._rows is not None  # (every entry was not made)
        assert [e.id for e in middle] == [e.id for e in plain.entries_slice(3, 7)]
        assert [e.id for e in past_the_end] == [e.id for e in plain.get_entries()[count - 2 :]]
        assert sm.entries_slice(4, 4) == []
        entries = sm.get_entries()
        assert [id(e) for e in last + middle] == [id(e) for e in entries[count - 1 :] + entries[3:7]]


class _ReadCounted(bytearray):
    """An ids column that counts the bytes read of it: each slice's, and what a search passes over
    (a bytearray: the column grows in place when rows are appended, and goes on counting)."""

    def __init__(self, data: bytes | bytearray) -> None:
        super().__init__(data)
        self.read = 0

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        self.read += len(got) if isinstance(got, bytearray) else 1
        return got

    def find(self, sub: Any, *bounds: Any) -> int:
        at = super().find(sub, *bounds)
        start = bounds[0] if bounds else 0
        self.read += (len(self) if at < 0 else at + len(sub)) - start
        return at


# 4,096 distinct ids in no order (an odd multiplier modulo 2**32 takes no value twice)
_SCATTERED_IDS = [f"{n * 2654435761 % 2**32:08x}" for n in range(4096)]


def _bisection_bytes(rows: index_rows.IndexedRows) -> int:
    """What a lookup may read of the ids column of ``rows`` (pi's ids, 8 bytes): the leaf's id,
    one id per step of the bisection, and the id found."""
    return (rows.count.bit_length() + 2) * 8


@contextlib.contextmanager
def _reopened_rows(
    values: list[dict[str, Any]], directory: Path
) -> Iterator[tuple[index_rows.IndexedRows, dict[str, int]]]:
    """The rows of a session of ``values`` (in ``directory``) reopened from its index, read-only,
    and the row of each of their ids."""
    path, index_dir = _write(directory / "s.jsonl", values), directory / "index"
    SessionManager.open(str(path), read_only=True, index=str(index_dir)).close()
    with SessionManager.open(str(path), read_only=True, index=str(index_dir)) as sm:
        assert sm._rows is not None
        yield sm._rows, {value["id"]: row for row, value in enumerate(values)}


def test_an_id_is_found_reading_a_few_ids_of_the_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Once the rows' order of their ids is made, an id is looked up (is an append's new id
    taken?) by bisection of that order, reading about log2(count) ids of the column, not the
    column: each id the rows have is found at its row, and ids near them (a prefix, an extension,
    an id before the first or after the last in their order) are not."""
    monkeypatch.setattr(index_rows, "SEARCHES_BEFORE_ORDER", 0)
    with _reopened_rows(_chat(_SCATTERED_IDS), tmp_path) as (rows, rows_of):
        column = rows.columns.ids = _ReadCounted(rows.columns.ids)
        near = [*(i[:-1] for i in _SCATTERED_IDS[:64]), *(i + "0" for i in _SCATTERED_IDS[:64])]
        for entry_id in [*rows_of, *near, "", "0", "00000000", "fffffffg", "\u00e9", "m", "t", "t00"]:
            column.read = 0
            assert rows.row_of_id(entry_id) == rows_of.get(entry_id, -1), entry_id
            assert column.read <= _bisection_bytes(rows), entry_id


@pytest.mark.usefixtures("_grown_files_keep_their_index")
@pytest.mark.parametrize("searches", [0, 6])
def test_appends_after_a_reopen_read_a_few_ids_of_the_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: int
):
    """What a front end appending turn after turn to a big session reopened from its index pays
    for each new id (is it taken? does it repeat a row's?): its first appends a search of the ids
    column each (no sort of them all for a session appended to a few times), and once those
    searches add up to what the sort costs (``searches`` of them), a few ids of the column read.
    The appended entries are found by their ids, the first rows' by bisection."""
    monkeypatch.setattr(index_rows, "SEARCHES_BEFORE_ORDER", searches)
    path = _write(tmp_path / "s.jsonl", _chat(_SCATTERED_IDS))
    with _on_rows_and_scanned(path, tmp_path / "index") as (sm, _plain):
        rows = sm._rows
        assert rows is not None
        column = rows.columns.ids = _ReadCounted(rows.columns.ids)
        appended = []
        for turn in range(20):
            column.read = 0
            ordered_before = rows.ordered
            appended.append(sm.append_message({"role": "user", "content": f"turn {turn}"}))
            if ordered_before:
                # the new id looked up when drawn and when it joins the rows, and the leaf's read
                assert column.read <= 3 * _bisection_bytes(rows)
            elif not rows.ordered:
                assert column.read >= len(column) - 64, "a new id was not searched in the column"
            assert rows.ordered == (rows._searches > searches)
        assert rows.ordered, "the order was never made"
        assert sm._rows is rows and rows.columns.ids is column  # (on the rows, the column grown in place)
        assert [rows.row_of_id(entry_id) for entry_id in appended] == list(range(rows.count - 20, rows.count))
        assert [e.id for e in sm.get_branch()][-21:] == [_SCATTERED_IDS[-1], *appended]
        assert rows.row_of_id(_SCATTERED_IDS[7]) == 9


_ID_TEXT = st.text(st.sampled_from("ab.\u00e9\u4e2d\U0001f600"), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(_ID_TEXT, min_size=1, max_size=40, unique=True), probes=st.lists(_ID_TEXT, max_size=20))
def test_any_ids_are_found_at_their_rows(
    tmp_path_factory: pytest.TempPathFactory, ids: list[str], probes: list[str]
):
    """Ids that are prefixes of each other, non-ASCII ones of every UTF-8 length: the search of
    the ids column, then the rows' order of their ids, find each at its row, and none that no row
    has."""
    with _reopened_rows(_chat(ids), tmp_path_factory.mktemp("ids")) as (rows, rows_of):
        for entry_id in [*rows_of, *probes]:
            assert rows.row_of_id(entry_id) == rows_of.get(entry_id, -1)
        rows._ordered()
        for entry_id in [*rows_of, *probes]:
            assert rows.row_of_id(entry_id) == rows_of.get(entry_id, -1)
