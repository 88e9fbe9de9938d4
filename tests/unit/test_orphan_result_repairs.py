"""Repairs of a tool result without its call on its path (PI036, pi #4570): moved to the assistant
message that made the call (after that message's other results), kept as a custom message (its text
still in the context, nothing lost), or removed with its children moving up; each way the context
no longer holds a result providers reject."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import builders as S

from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import Repair, repairs
from pi_session_server.session import SessionManager

CALLS: tuple[tuple[str, str, dict[str, object]], ...] = (("t1", "read", {}), ("t2", "bash", {}))
KEEP = "Keep it as a custom message: its text stays in the context, the tool result in its details"


def doc(*lines: str) -> SessionDocument:
    return SessionDocument("\n".join(lines) + "\n")


def found(d: SessionDocument) -> list[tuple[int, str]]:
    return [(x.line, x.code) for x in document_diagnostics(d)]


def apply(d: SessionDocument, repair: Repair) -> str:
    for e in sorted(repair.edits(), key=lambda e: (e.start_line, e.start), reverse=True):
        d.apply_edit(e.start_line, e.start, e.end_line, e.end, e.new_text)
    return d.text()


def offered(d: SessionDocument, line: int) -> list[tuple[str, bool]]:
    return [(r.title, r.preferred) for r in repairs(d, line, line)]


def pick(d: SessionDocument, line: int, start: str) -> Repair:
    (one,) = [r for r in repairs(d, line, line) if r.title.startswith(start)]
    return one


def test_a_result_on_the_wrong_branch_moves_after_the_calls_other_results() -> None:
    # the assistant made two calls; t1's result is chained under it, t2's landed on another branch
    d = doc(
        S.header(),
        S.user("u1", None),
        S.assistant("a1", "u1", calls=CALLS),
        S.tool_result("r1", "a1", "t1"),
        S.user("u2", "u1", "another branch"),
        S.tool_result("r2", "u2", "t2"),
        S.user("u3", "r2", "go on"),
    )
    assert found(d) == [(2, "PI037"), (5, "PI036")]
    assert offered(d, 5) == [
        (
            "Move under the assistant message that made the call (line 3, after its other results (line 4))",
            True,
        ),
        (KEEP, False),  # the move keeps it a tool result: preferred
        ("Remove this tool result; its child entry moves up to its parent", False),
    ]
    text = apply(d, pick(d, 5, "Move under"))
    assert found(SessionDocument(text)) == []
    assert '"id":"r2","parentId":"r1"' in text
    # the context at the leaf now holds the call, then both results in order
    manager = SessionManager.in_memory("/w", entries=[json.loads(x) for x in text.splitlines()[1:]])
    manager.branch("u3")
    roles = [m["role"] for m in manager.build_session_context()["messages"]]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "user"]


def test_a_result_whose_call_is_nowhere_is_kept_as_a_custom_message_or_removed() -> None:
    d = doc(
        S.header(),
        S.user("u1", None),
        S.tool_result("r9", "u1", "gone"),
        S.user("u2", "r9"),
        S.user("u3", "r9", "sibling"),
    )
    assert found(d) == [(2, "PI036")]
    assert offered(d, 2) == [
        (KEEP, True),  # nothing lost: what `repair --all` makes
        ("Remove this tool result; its 2 child entries move up to its parent", False),
    ]
    text = apply(d, pick(d, 2, "Remove"))
    assert (
        text
        == "\n".join([S.header(), S.user("u1", None), S.user("u2", "u1"), S.user("u3", "u1", "sibling")])
        + "\n"
    )
    assert found(SessionDocument(text)) == []


def test_a_result_kept_as_a_custom_message_keeps_every_byte_of_it_and_its_place() -> None:
    result = json.loads(S.tool_result("r9", "u1", "gone", "the output", images=(("aGk=", "image/png"),)))
    result["extra"] = {"kept": [1, 2]}  # a member pi does not write: it stays too
    result["message"]["isError"] = True
    d = doc(S.header(), S.user("u1", None), json.dumps(result), S.user("u2", "r9"))
    text = apply(d, pick(d, 2, "Keep it as a custom message"))
    assert found(SessionDocument(text)) == []
    line = text.splitlines()[2]
    # pi's key order for a custom message, then the envelope of the result, then what else it held
    assert line.startswith('{"type":"custom_message","customType":"orphan-tool-result","content":[')
    note = json.loads(line)
    assert list(note) == [
        "type", "customType", "content", "display", "details", "id", "parentId", "timestamp", "extra",
    ]  # fmt: skip
    message = dict(result["message"])
    assert note["content"] == message.pop("content")
    assert note["details"] == {"toolResult": message}  # call id, tool name, error flag, time
    assert (note["id"], note["parentId"], note["timestamp"], note["extra"]) == (
        "r9", "u1", result["timestamp"], {"kept": [1, 2]},
    )  # fmt: skip
    # the model reads its text (a custom message is sent as the user's), where the child was
    manager = SessionManager.in_memory("/w", entries=[json.loads(x) for x in text.splitlines()[1:]])
    manager.branch("u2")
    messages = manager.build_session_context()["messages"]
    assert [m["role"] for m in messages] == ["user", "custom", "user"]
    assert messages[1]["content"] == note["content"]


def test_content_that_is_no_text_nor_blocks_stays_in_the_details() -> None:
    result = json.loads(S.tool_result("r9", "u1", "gone"))
    result["message"]["content"] = {"odd": True}
    d = doc(S.header(), S.user("u1", None), json.dumps(result))
    note = json.loads(apply(d, pick(d, 2, "Keep it as a custom message")).splitlines()[2])
    assert note["content"] == "" and note["details"] == {"toolResult": result["message"]}


def test_removing_a_root_result_makes_its_children_roots() -> None:
    d = doc(S.header(), S.tool_result("r9", None, "gone"), S.user("u2", "r9"))
    text = apply(d, pick(d, 1, "Remove"))
    assert text == "\n".join([S.header(), S.user("u2", None)]) + "\n"


def test_no_move_that_would_make_a_cycle() -> None:
    # the only assistant with the call sits below the orphan result itself
    d = doc(
        S.header(),
        S.tool_result("r1", None, "t1"),
        S.assistant("a1", "r1", calls=(("t1", "read", {}),)),
    )
    titles = [title for title, _ in offered(d, 1)]
    assert not any(t.startswith("Move under") for t in titles)


def _without_parent(line: str) -> str:
    value = json.loads(line)
    del value["parentId"]
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_a_result_without_a_parent_id_gets_one() -> None:
    # entries with no parentId at all (pi takes each for a root): the move adds the member where
    # pi writes it, instead of offering a repair that changes nothing
    d = doc(
        S.header(),
        S.user("u1", None),
        _without_parent(S.assistant("a1", "u1", calls=CALLS[:1])),
        _without_parent(S.tool_result("r1", "a1", "t1")),
    )
    assert (3, "PI036") in found(d)
    move = pick(d, 3, "Move under the assistant message that made the call (line 3)")
    text = apply(d, move)
    assert text.splitlines()[3].startswith('{"type":"message","id":"r1","parentId":"a1","timestamp":')
    assert (3, "PI036") not in found(SessionDocument(text))


def test_every_repair_offered_on_the_sample_files_changes_something() -> None:
    data = Path(__file__).resolve().parents[1] / "reliability" / "data"
    checked = 0
    for path in sorted(data.glob("*.jsonl")):
        d = SessionDocument(path.read_bytes())
        for repair in repairs(d, 0, max(0, d.line_count - 1), str(path)):
            checked += 1
            assert repair.image is not None or repair.edits(), (path.name, repair.line, repair.title)
    assert checked > 20  # juicetin-session-multi.jsonl alone offers 22


def _without_ids(line: str) -> str:
    value = json.loads(line)
    value.pop("id", None)
    value.pop("parentId", None)
    return json.dumps(value, separators=(",", ":"))


def test_a_version_1_session_gets_no_tree_repair_where_nothing_is_reported() -> None:
    # pi reads a version 1 file in order and gives it ids when it migrates it: its tree checks are
    # not reported (PI015 only), so nothing may offer to remove or move its tool result
    d = doc(
        S.header(version=None),
        *map(
            _without_ids,
            [
                S.user("u1", None),
                S.assistant("a1", "u1", calls=CALLS[:1]),
                S.tool_result("r1", "a1", "t1"),
                S.assistant("a2", "r1"),
            ],
        ),
    )
    assert found(d) == [(0, "PI015")]
    assert [(r.code, r.line) for r in repairs(d, 0, d.line_count - 1)] == [("PI015", 0)]


def _disjoint(repair: Repair) -> bool:
    spans = sorted(((e.start_line, e.start), (e.end_line, e.end)) for e in repair.edits())
    return all(end <= nxt_start for (_, end), (nxt_start, _) in itertools.pairwise(spans))


def test_a_result_that_reuses_its_assistants_id_is_its_own_parent() -> None:
    # the result's parentId names its assistant, whose id it repeats: pi's index keeps the result,
    # so the parentId resolves to the result itself, and so does the next message's
    d = doc(
        S.header(),
        S.user("u1", None),
        S.assistant("a1", "u1", calls=CALLS[:1]),
        S.tool_result("a1", "a1", "t1"),
        S.assistant("a2", "a1"),
    )
    assert {(3, "PI032"), (3, "PI036")} <= set(found(d))
    # moving it under "a1" changes nothing: that id names the result itself
    assert [title for title, _ in offered(d, 3) if title.startswith(("Move", "Remove"))] == [
        "Remove this tool result; its child entry moves up to its parent"
    ]
    remove = pick(d, 3, "Remove")
    assert _disjoint(remove)  # it was counted as its own child: an edit inside the deleted line
    text = apply(d, remove)
    # once it is gone "a1" names the assistant again: the next message needs no edit
    assert (
        text
        == "\n".join(
            [
                S.header(),
                S.user("u1", None),
                S.assistant("a1", "u1", calls=CALLS[:1]),
                S.assistant("a2", "a1"),
            ]
        )
        + "\n"
    )
    assert not {"PI030", "PI032", "PI036"} & {code for _, code in found(SessionDocument(text))}


def test_removing_a_result_in_a_cycle_does_not_close_another() -> None:
    d = doc(S.header(), S.tool_result("r9", "u2", "gone"), S.user("u2", "r9"))
    assert (1, "PI036") in found(d)
    text = apply(d, pick(d, 1, "Remove"))
    assert text == "\n".join([S.header(), S.user("u2", None)]) + "\n"  # not its own parent
