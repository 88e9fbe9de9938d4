"""Opening a file takes shortcuts for the files pi writes; each must agree with the general rules.

- the scanner builds the id index while it reads (``IdIndex``) and the manager adopts it instead
  of indexing every entry again;
- ``get_entries`` is a slice when the header is the only "session" line;
- the walk to the root and getTree take one lookup / one identity test per step over a "plain"
  index (every id a non-empty string);
- a parentId equal to the line before's id is that very string object;
- entry types and roles pi 0.86.1 writes come from msgspec Literals, any other type or role is
  decoded by the open decoder, and a line cannot set the Entry's own fields.

Random files with duplicate, numeric, empty and missing ids, forward and missing parents, cycles,
extra "session" lines, labels, unknown types and roles, and blank or broken lines must give the
same index, leaf, labels, entries, path, context and tree either way.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_session_server.format.entry import Entry
from pi_session_server.format.jsvalue import index_key
from pi_session_server.session import SessionManager
from pi_session_server.session.chains import path_by_chains
from pi_session_server.session.context import _walk_to_root_remembering, is_plain_index, walk_to_root
from pi_session_server.session.projection import build_session_context
from pi_session_server.session.tree import TreeNode, build_tree, preorder

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
IDS = st.sampled_from(["a", "b", "c", "", 7, None, "dup"])
TYPES = st.sampled_from(
    [
        "message",
        "message",
        "message",
        "label",
        "session",
        "thinking_level_change",
        "model_change",
        "brand_new",
        5,
    ]
)
ROLES = st.sampled_from(["user", "assistant", "toolResult", "system", "robot", None])


@st.composite
def session_lines(draw: Any) -> list[str]:
    lines = [json.dumps(HEADER)]
    count = draw(st.integers(0, 14))
    previous: Any = None
    for n in range(count):
        kind = draw(st.sampled_from(["entry"] * 8 + ["blank", "broken"]))
        if kind == "blank":
            lines.append("")
            continue
        if kind == "broken":
            lines.append('{"type":"message","id":"x' + str(n))
            continue
        entry_id = draw(st.one_of(st.just(f"e{n}"), st.just(f"e{n}"), IDS))
        parent = draw(
            st.sampled_from([previous, previous, previous, None, "a", "missing", f"e{max(n - 2, 0)}"])
        )
        etype = draw(TYPES)
        value: dict[str, Any] = {
            "type": etype,
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2026-01-01T00:00:{n % 9:02d}.000Z",
        }
        if etype == "message":
            value["message"] = {"role": draw(ROLES), "content": "x", "provider": "p", "model": "m"}
        elif etype == "label":
            value["targetId"] = draw(st.sampled_from(["a", "e0", "e1", 7]))
            value["label"] = draw(st.sampled_from(["L", "", None]))
        elif etype == "thinking_level_change":
            value["thinkingLevel"] = "high"
        if draw(st.booleans()) and n % 5 == 0:
            value["_value"] = {"not": "ours"}  # a member named like an Entry field
            value["line"] = 99
        lines.append(json.dumps(value))
        previous = entry_id
    return lines


def user_line(entry_id: str) -> dict[str, Any]:
    """A root user message saying "hi"."""
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi"},
    }


def write(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def general_state(manager: SessionManager) -> tuple[Any, ...]:
    """Index, leaf, labels and entries as the general loop computes them."""
    manager._build_index()
    return (*state(manager), list(e for e in manager._file_entries if e.type != "session"))


def state(manager: SessionManager) -> tuple[Any, ...]:
    by_id = manager._by_id
    return (
        [(k, id(v)) for k, v in by_id.items()],
        manager._leaf_id,
        dict(manager._labels),
        dict(manager._label_timestamps),
        is_plain_index(by_id),
    )


def shape(roots: list[Any]) -> list[tuple[int, int, Any]]:
    return [(depth, id(node.entry), node.label) for depth, node in preorder(roots)]


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session_lines())
def test_the_open_shortcuts_agree_with_the_general_rules(tmp_path: Path, lines: list[str]):
    manager = SessionManager.open(write(tmp_path, lines), read_only=True)
    fast = state(manager)
    assert manager._plain_index == fast[4]
    entries = manager.get_entries()
    tree = shape(manager.get_tree())
    context = manager.build_session_context()
    branch = [id(e) for e in manager.get_branch()]

    general = general_state(manager)
    assert fast == general[:5]
    assert [id(e) for e in entries] == [id(e) for e in general[5]]
    # pi/getEntries pages: count, slices and "after this id" without a list of every entry
    assert manager.entry_count() == len(entries)
    assert [id(e) for e in manager.entries_slice(1, 4)] == [id(e) for e in entries[1:4]]
    for e in entries:
        last = max(k for k, x in enumerate(entries) if index_key(x.id) == index_key(e.id))
        assert manager.position_of(e.id) == last
    assert manager.position_of("no-such-id") == -1
    labels = {key: label for key, (_target, label) in manager._labels.items()}
    assert tree == shape(build_tree(entries, labels, manager._label_timestamps, plain_index=False))
    assert context == build_session_context(entries, manager._leaf_id, manager._by_id, plain_index=False)
    if manager._leaf_id is not None and branch:
        start = manager._by_id[index_key(manager._leaf_id)]
        assert branch == [id(e) for e in _walk_to_root_remembering(start, manager._by_id)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d", "u"]), st.sampled_from([None, "a", "b", "c", "x"]))
    )
)
def test_the_plain_walk_and_tree_equal_the_general_ones(pairs: list[tuple[str, Any]]):
    entries = [
        Entry.of(
            {"type": "message", "id": f"{i}{i_d}", "parentId": p, "timestamp": f"2026-01-01T00:00:0{i % 9}Z"}
        )
        for i, (i_d, p) in enumerate(pairs)
    ]
    # ids like "0a", "1b" are unique; parents name ids that may not exist, be later, or repeat
    for i, e in enumerate(entries):
        if e.parent_id in ("a", "b", "c") and i:
            e.parent_id = entries[(i * 7) % len(entries)].id  # any entry: earlier, later or itself
    index = {e.id: e for e in entries}
    assert is_plain_index(index)
    for start in entries:
        assert walk_to_root(start, index, plain_index=True) == _walk_to_root_remembering(start, index)
    labels = {e.id: f"L{i}" for i, e in enumerate(entries) if i % 3 == 0}
    general = build_tree(entries, labels, {}, plain_index=False)
    assert shape(build_tree(entries, labels, {}, plain_index=True)) == shape(general)
    # with the manager's index: in-memory entries (line -1) are found by identity, numbered ones
    # (as loaded from a file) by line
    assert shape(build_tree(entries, labels, {}, plain_index=True, by_id=index)) == shape(general)
    for line, e in enumerate(entries):
        e.line = line
    assert shape(build_tree(entries, labels, {}, plain_index=True, by_id=index)) == shape(general)


def test_parent_ids_share_the_string_of_the_line_before(tmp_path: Path):
    lines = [json.dumps(HEADER)]
    for n in range(5):
        value = {"type": "message", "id": f"id{n}", "parentId": f"id{n - 1}" if n else None}
        value.update(timestamp="2026-01-01T00:00:00.000Z", message={"role": "user", "content": "x"})
        lines.append(json.dumps(value))
    manager = SessionManager.open(write(tmp_path, lines), read_only=True)
    entries = manager.get_entries()
    assert all(child.parent_id is parent.id for parent, child in itertools.pairwise(entries))
    # one chain: the walk to the root is one slice
    assert manager._chain_starts == [0]
    path = path_by_chains(entries[-1], entries, manager._chain_starts, manager._by_id)
    assert path is not None and [id(e) for e in path] == [id(e) for e in entries]


def test_unknown_types_and_roles_read_lazily_like_known_ones(tmp_path: Path):
    body = {
        "type": "brand_new",
        "id": "n",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "x": [1],
    }
    robot = {
        "type": "message",
        "id": "r",
        "parentId": "n",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "robot", "content": "beep"},
    }
    manager = SessionManager.open(write(tmp_path, [json.dumps(HEADER), json.dumps(body), json.dumps(robot)]))
    new, message = manager.get_entries()
    assert (new.type, message.role) == ("brand_new", "robot")
    assert not new.is_loaded and not message.is_loaded  # envelopes only: bodies are read on demand
    assert new.value == body and message.value == robot
    assert manager.build_session_context()["messages"] == [robot["message"]]


def test_a_line_cannot_set_the_entry_s_own_fields(tmp_path: Path):
    evil = {
        **user_line("e"),
        "_body": {"forged": True},
        "_value": {"forged": True},
        "_raw": "x",
        "_source": 3,
        "line": 99,
        "offset": 0,
        "length": 1,
    }
    path = write(tmp_path, [json.dumps(HEADER), json.dumps(evil)])
    (entry,) = SessionManager.open(path, read_only=True).get_entries()
    assert entry.line == 1 and entry.offset == len(json.dumps(HEADER)) + 1
    assert entry.value == evil  # the members are data, read back from the line


def test_a_small_file_keeps_its_lines_and_decodes_them_on_demand(tmp_path: Path):
    value = user_line("a")
    path = write(tmp_path, [json.dumps(HEADER), json.dumps(value)])
    manager = SessionManager.open(path, read_only=True)
    (entry,) = manager.get_entries()
    Path(path).write_text("")  # the line was kept at load: nothing more is read from the file
    assert not entry.is_loaded and entry.value == value
    assert entry.hold() == value and entry.is_loaded


def test_an_entry_holding_bytes_hands_them_back_undecoded():
    # A held value is never taken for a kept line, whatever its type (values handed to inMemory
    # are the caller's).
    assert Entry.of(b'{"type": "message"}').value == b'{"type": "message"}'


def test_an_entry_and_a_tree_node_stay_small():
    # Tens of thousands of each per 100 MB of session, kept for as long as the session is open.
    # 112 bytes: twelve fields after the object header (each field more is 8 bytes in every
    # entry, and crossing 112 puts entries in the next 16-byte allocation class).
    assert sys.getsizeof(Entry()) <= 112
    assert sys.getsizeof(TreeNode(Entry(), [])) <= 48


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["append", "branch", "summary", "fail"]), st.integers(0, 50)), max_size=25
    )
)
def test_chains_stay_true_through_appends_branches_and_failed_writes(
    tmp_path: Path, ops: list[tuple[str, int]]
):
    lines = [json.dumps(HEADER)]
    for n in range(6):
        value = {"type": "message", "id": f"id{n}", "parentId": f"id{n - 1}" if n else None}
        value.update(timestamp="2026-01-01T00:00:00.000Z", message={"role": "assistant", "content": "x"})
        lines.append(json.dumps(value))
    manager = SessionManager.open(write(tmp_path, lines))
    manager.rollback_failed_appends = True
    for op, pick in ops:
        ids = [e.id for e in manager.get_entries()]
        if op == "append":
            manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
        elif op == "branch":
            manager.branch(ids[pick % len(ids)])
        elif op == "summary":
            manager.branch_with_summary(ids[pick % len(ids)], "summary")
        else:
            persist = manager._persist_entry

            def broken(entry: Any, line: bytes) -> None:
                raise OSError(28, "No space left on device")

            manager._persist_entry = broken  # type: ignore[method-assign]
            try:
                manager.append_message({"role": "user", "content": "lost", "timestamp": 1})
            except OSError:
                pass
            finally:
                manager._persist_entry = persist  # type: ignore[method-assign]
        starts = manager._chain_starts
        assert starts is not None and starts == sorted(starts)
        for e in manager.get_entries():
            expected = [id(x) for x in _walk_to_root_remembering(e, manager._by_id)]
            assert [id(x) for x in manager.get_branch(e.id)] == expected
        assert shape(manager.get_tree()) == shape(
            build_tree(manager.get_entries(), {}, {}, plain_index=False)
        )
    assert manager.build_session_context() == build_session_context(
        manager.get_entries(), manager._leaf_id, manager._by_id, plain_index=False
    )


def test_the_envelope_literals_name_every_type_and_role_the_records_know():
    from typing import get_args

    from pi_session_server.format.entry import KnownRole, KnownType
    from pi_session_server.format.records import ENTRY_TYPES, MESSAGE_ROLES

    assert set(get_args(KnownType)) == ENTRY_TYPES | {"session"}
    assert set(get_args(KnownRole)) == MESSAGE_ROLES
