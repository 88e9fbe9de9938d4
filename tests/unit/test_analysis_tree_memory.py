"""The tree index keeps little per entry (a group of one is the entry itself, children and members are
built when asked, a depth is kept every few steps, a parentId shares the string of the id it names)
and answers exactly what a full index would."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import builders as S
import pytest

from pi_session_server.analysis import lines as L
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lines import BomLineInfo, LineInfo, scan_line
from pi_session_server.analysis.tree import Groups, TreeIndex


def _entry(line: int) -> LineInfo:
    info = scan_line(S.user(f"u{line}", None).encode())
    info.line = line
    return info


def test_a_group_of_one_is_its_entry_and_a_group_keeps_file_order() -> None:
    a, b, c = _entry(1), _entry(2), _entry(3)
    groups = Groups()
    groups.insert("k", b)
    assert groups["k"] == (b,) and groups.last("k") is b
    groups.insert("k", c)
    groups.insert("k", a)  # arrives last, comes first
    assert list(groups["k"]) == [a, b, c] and groups.last("k") is c
    assert [key for key, _ in groups.shared()] == ["k"]
    groups.remove("k", c)
    groups.remove("k", a)
    assert groups["k"] == (b,) and groups.last("k") is b
    assert list(groups.shared()) == []  # one left: the entry again, not a list of one
    groups.remove("k", a)  # not in it: nothing happens
    assert groups.get("k") == (b,)
    groups.remove("k", b)
    assert "k" not in groups and groups.get("k", ()) == () and groups.last("k") is None and not groups


def _branchy(n: int, seed: int) -> list[str]:
    """A long path with branches anywhere along it, parents always above their children."""
    rnd = random.Random(seed)
    out = [S.header(), S.user("e0", None)]
    for i in range(1, n):
        parent = f"e{i - 1}" if rnd.random() < 0.8 else f"e{rnd.randrange(i)}"
        out.append(S.user(f"e{i}", parent))
    return out


def _walked_depth(doc: SessionDocument, e: LineInfo) -> int:
    return len(list(doc.tree.walk_up(e))) - 1


@pytest.mark.parametrize("seed", range(4))
def test_depths_are_the_length_of_the_walk_in_any_order_of_asking(seed: int) -> None:
    doc = SessionDocument("\n".join(_branchy(300, seed)) + "\n")
    entries = list(doc.entries())
    random.Random(seed).shuffle(entries)
    assert [doc.tree.depth(e) for e in entries] == [_walked_depth(doc, e) for e in entries]


def test_the_depth_of_a_far_entry_keeps_a_few_depths_not_one_per_entry_above_it() -> None:
    lines = [S.header(), S.user("e0", None)] + [S.user(f"e{i}", f"e{i - 1}") for i in range(1, 1000)]
    doc = SessionDocument("\n".join(lines) + "\n")
    last = doc.lines[1000]
    assert doc.tree.depth(last) == 999
    assert len(doc.tree._depth) < 100
    assert doc.tree.depth(doc.lines[500]) == 499  # found a few steps up
    assert doc.tree.is_ancestor(doc.lines[3], last) and not doc.tree.is_ancestor(last, doc.lines[3])


def test_depths_follow_a_subtree_moved_by_an_edit() -> None:
    lines = _branchy(200, 7)
    doc = SessionDocument("\n".join(lines) + "\n")
    entries = list(doc.entries())
    assert [doc.tree.depth(e) for e in entries] == [_walked_depth(doc, e) for e in entries]
    # e150 now hangs below e3: its subtree is much higher up
    moved = lines.index(next(x for x in lines if '"id":"e150"' in x))
    doc.apply_edit(moved, 0, moved, len(lines[moved].encode()), S.user("e150", "e3"))
    entries = list(doc.entries())
    assert [doc.tree.depth(e) for e in entries] == [_walked_depth(doc, e) for e in entries]


def _children_by_hand(doc: SessionDocument) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for e in doc.entries():
        parent = doc.tree.parent(e)
        if parent is not None:
            kids.setdefault(parent.line, []).append(e.line)
    return kids


@pytest.mark.parametrize("asked_first", [False, True])
def test_children_and_members_built_when_asked_are_those_kept_under_edits(asked_first: bool) -> None:
    lines = [
        S.header(),
        S.user("a", None),
        S.user("b", "a"),
        S.user("c", "a"),
        S.user("b", "c"),  # a duplicate id: its children go to the last one
        S.user("d", "b"),
        S.user("e", "zz"),
    ]
    doc = SessionDocument("\n".join(lines) + "\n")
    tree = doc.tree
    if asked_first:
        assert len(tree.members) == 6 and len(tree.children) == 4
    doc.apply_edit(2, 0, 2, 0, S.user("f", "d") + "\n")  # a line in, everything below moves down
    doc.apply_edit(7, 0, 8, 0, "")  # e gone
    assert doc.tree.members == set(doc.entries())
    found = {e.line: [k.line for k in doc.tree.kids(e)] for e in doc.entries() if doc.tree.kids(e)}
    assert found == _children_by_hand(doc)
    fresh = SessionDocument(doc.text())
    assert {e.line: [k.line for k in fresh.tree.kids(e)] for e in fresh.entries()} == {
        e.line: [k.line for k in doc.tree.kids(e)] for e in doc.entries()
    }


_TOOL_TURN = [
    S.header(),
    S.user("u1", None),
    S.assistant("a1", "u1", calls=(("call-1", "read", {}),)),
    S.tool_result("r1", "a1", "call-1"),
]


@pytest.mark.parametrize("from_file", [False, True])
def test_a_parent_id_and_a_tool_call_id_share_the_string_they_name(tmp_path: Path, from_file: bool) -> None:
    # each line decodes strings of its own: equal, not the same object, until the index is built
    text = "\n".join(_TOOL_TURN) + "\n"
    if from_file:
        path = tmp_path / "s.jsonl"
        path.write_text(text, encoding="utf-8")
        doc = SessionDocument.from_file(str(path))
    else:
        doc = SessionDocument(text)
    user, call, result = (doc.lines[n] for n in (1, 2, 3))
    assert call.parent_id is user.id and result.parent_id is call.id
    assert call.pkey is user.id
    assert result.result_call_id is call.call_ids[0]
    assert result.kind == L.ENTRY and not doc.tree.cross  # and nothing reported


def test_an_entry_of_a_bulk_load_shares_the_strings_it_names_as_soon_as_it_is_added() -> None:
    # (given up at the end of the load instead, every line's own string would leave a hole in
    # the heap that nothing fills)
    user, call, result = (scan_line(line.encode()) for line in _TOOL_TURN[1:])
    assert call.parent_id == user.id and call.parent_id is not user.id
    tree = TreeIndex()
    add = tree.start_build()
    add(user)
    add(call)
    assert call.parent_id is user.id and call.pkey is user.id
    add(result)
    assert result.parent_id is call.id and result.result_call_id is call.call_ids[0]
    for n, e in enumerate((user, call, result), 1):
        e.line = n
    tree.finish_build([user, call, result])
    assert tree.resolve("a1") is call and tree.parent(result) is call and not tree.cross


def test_a_line_holds_no_slot_for_what_only_the_first_line_can_have() -> None:
    # the size of every line's facts: a slot more is 16 bytes per line of a multi-GB session
    plain = scan_line(S.user("u1", None).encode())
    marked = scan_line(b"\xef\xbb\xbf" + S.header().encode(), first=True)
    assert sys.getsizeof(plain) <= 176
    assert not plain.bom and marked.bom and isinstance(marked, BomLineInfo)
    assert marked.kind == L.HEADER and marked.raw.startswith(b"\xef\xbb\xbf")


def _tool_turns(seed: int) -> list[str]:
    """Tool calls and their results the way pi writes them, and bent: ids of entries and of calls
    written twice, results on another branch or with no call at all, calls left unanswered."""
    rnd = random.Random(seed)
    out = [S.header(), S.user("e0", None)]
    ids = ["e0"]
    call_ids = ["c-first"]

    def entry_id() -> str:
        return f"e{len(out)}" if rnd.random() < 0.95 else rnd.choice(ids)  # now and then an id again

    def parent() -> str:
        return ids[-1] if rnd.random() < 0.9 else rnd.choice(ids)

    while len(out) < 150:
        pick = rnd.random()
        if pick < 0.7:
            calls = [
                f"c{len(out)}-{k}" if rnd.random() < 0.93 else rnd.choice(call_ids)
                for k in range(rnd.choice((1, 1, 1, 2, 3)))
            ]
            eid = entry_id()
            out.append(S.assistant(eid, parent(), calls=tuple((c, "read", {}) for c in calls)))
            ids.append(eid)
            call_ids.extend(calls)
            for c in calls:
                if rnd.random() < 0.92:  # else left unanswered
                    eid = entry_id()
                    out.append(S.tool_result(eid, parent(), c))
                    ids.append(eid)
        elif pick < 0.8:
            eid = entry_id()
            out.append(S.tool_result(eid, parent(), rnd.choice([*call_ids, "c-none"])))
            ids.append(eid)
        else:
            eid = entry_id()
            out.append(S.user(eid, parent()))
            ids.append(eid)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_problems_of_a_whole_file_are_those_of_checking_every_entry(seed: int) -> None:
    # the first pass checks in full only the entries a quick look cannot clear (a result right below
    # its only call is cleared without one)
    doc = SessionDocument("\n".join(_tool_turns(seed)) + "\n")
    tree = doc.tree
    every = {e.line: [(p.code, p.message) for p in tree._problems_of(e)] for e in doc.entries()}
    assert {e.line: [(p.code, p.message) for p in found] for e, found in tree.cross.items()} == {
        line: found for line, found in every.items() if found
    }
