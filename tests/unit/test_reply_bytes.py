"""Replies of whole entries that the request does not bound are refused past MAX_REPLY_BYTES, by an
estimate told from the entries' envelopes before anything is encoded (server/reply_bytes.py, the
handlers of server/methods_read.py); below it they are what they were. And pi/getEntries pages by
``offset``, which ids repeated in a damaged file do not lead astray (``since`` does)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_protocol_tree_filters import EXAMPLE

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.format.scan import SHORT_LINE
from pi_session_server.server import errors, methods_read
from pi_session_server.server import params as P
from pi_session_server.server.errors import PiRpcError
from pi_session_server.server.reply_bytes import entries_bytes, reply_bytes
from pi_session_server.server.wire import encode_result
from pi_session_server.session import SessionManager

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def _line(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def message(entry_id: str, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": role, "content": text, "timestamp": 1},
    }


def write_session(path: Path, entries: list[dict[str, Any]]) -> SessionManager:
    path.write_text("".join(_line(v) + "\n" for v in [HEADER, *entries]))
    return SessionManager.open(str(path))


def mixed_chain(count: int) -> list[dict[str, Any]]:
    """A chain of user messages, every third one on a line longer than SHORT_LINE."""
    entries, parent = [], None
    for i in range(count):
        text = ("x" * SHORT_LINE if i % 3 == 0 else "y" * (100 + 37 * i)) + f" {i}"
        entries.append(message(f"e{i}", parent, text))
        parent = f"e{i}"
    return entries


@pytest.fixture
def mixed(tmp_path: Path) -> SessionManager:
    return write_session(tmp_path / "mixed.jsonl", mixed_chain(12))


@pytest.fixture
def example(tmp_path: Path) -> SessionManager:
    path = tmp_path / "example.jsonl"
    shutil.copy(EXAMPLE, path)
    return SessionManager.open(str(path))


def entries_json(entries: list[Any]) -> int:
    return sum(len(encode_result(e)) for e in entries)


# --- the estimate -----------------------------------------------------------------------------


def test_the_estimate_of_a_path_is_its_lines(mixed: SessionManager):
    branch = mixed.get_branch()
    assert len(branch) == 12 and any(e.length for e in branch) and any(not e.length for e in branch)
    lines = Path(mixed.get_session_file()).read_bytes().splitlines()[1:]
    assert [len(encode_result(e)) for e in branch] == [len(line) for line in lines]  # (written compact)
    estimate = entries_bytes(branch)
    # each short line counted to where the next one begins, the last one encoded
    assert estimate == entries_json(branch)


def test_a_short_line_is_counted_up_to_the_next_line_of_the_reply(mixed: SessionManager):
    every = mixed.get_entries()
    shorts = [e for e in every if not e.length]
    # lines left out between two of the reply's lines count with the first (at most SHORT_LINE each)
    assert entries_json(shorts) < entries_bytes(shorts) <= entries_json(shorts) + SHORT_LINE * len(shorts)
    assert entries_bytes(shorts[:1]) == entries_json(shorts[:1])  # nothing follows it in the reply
    assert entries_bytes(shorts[::-1]) == entries_bytes(shorts)  # in file order, whatever the reply's


def test_entries_made_in_memory_are_counted_by_their_json():
    m = SessionManager.in_memory("/w")
    m.append_message({"role": "user", "content": "hello", "timestamp": 1})
    m.append_message({"role": "assistant", "content": [{"type": "text", "text": "hi" * 500}], "timestamp": 2})
    entries = m.get_entries()
    assert entries_bytes(entries) == entries_json(entries)


# --- the refusals -----------------------------------------------------------------------------


def refused(call: Any) -> PiRpcError:
    with pytest.raises(PiRpcError) as failure:
        call()
    assert failure.value.code == errors.TOO_LARGE == -32011
    return failure.value


CALLS: dict[str, tuple[type[Any], dict[str, Any], Any]] = {
    "getBranch": (P.GetBranchParams, {}, methods_read._branch),
    "getBranch fromId": (P.GetBranchParams, {"fromId": "0a9b8c7d"}, methods_read._branch),
    "getEntries": (P.GetEntriesParams, {}, methods_read._entries_page),
    "getEntries limit": (P.GetEntriesParams, {"limit": 20}, methods_read._entries_page),
    "getChildren": (P.GetChildrenParams, {"parentId": "9d0e1f2a"}, methods_read._children),
    "buildContextEntries": (P.ContextParams, {}, lambda m, p: methods_read._context_entries(m, p.leaf_id)),
    "buildContextEntries leafId": (
        P.ContextParams,
        {"leafId": "0a9b8c7d"},
        lambda m, p: methods_read._context_entries(m, p.leaf_id),
    ),
    "buildSessionContext": (P.SessionContextParams, {}, methods_read._context),
    "buildSessionContext markdown": (P.SessionContextParams, {"format": "markdown"}, methods_read._context),
    "buildSessionContext leafId": (P.SessionContextParams, {"leafId": "0a9b8c7d"}, methods_read._context),
    "buildSessionProjection": (P.ContextParams, {}, lambda m, p: methods_read._projection(m, p.leaf_id)),
    "getTree reference": (P.GetTreeParams, {"form": "reference"}, methods_read._tree),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_reply_past_the_maximum_is_refused_and_one_at_it_is_what_it_was(
    name: str, example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    struct, params, handler = CALLS[name]
    p = P.parse(params, struct)
    before = encode_result(handler(example, p))  # the maximum is far away
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", 100)
    failure = refused(lambda: handler(example, p))
    estimate = failure.data["bytes"]
    assert failure.data == {"bytes": estimate, "max": 100} and estimate > 100
    assert "pi/get" in failure.message  # what to ask for instead
    if name.startswith(("getBranch", "getEntries", "getChildren", "buildContextEntries")):
        assert estimate >= len(before) - 2 * len(before) // 100  # no less than the reply, but its commas
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", estimate)
    assert encode_result(handler(example, p)) == before
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", estimate - 1)
    refused(lambda: handler(example, p))


def test_the_context_is_refused_before_it_is_built(example: SessionManager, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", 100)

    def no_context(*_args: Any) -> Any:
        raise AssertionError("the context was built")

    monkeypatch.setattr(example, "build_session_context_of", no_context)
    monkeypatch.setattr(example, "build_session_projection_of", no_context)
    refused(lambda: methods_read._context(example, P.SessionContextParams()))
    refused(lambda: methods_read._projection(example, P.ContextParams().leaf_id))


@pytest.mark.parametrize("leaf", [{}, {"leafId": "0a9b8c7d"}, {"leafId": None}])
def test_the_estimate_and_the_context_share_one_walk_to_the_leaf(
    leaf: dict[str, Any], example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    """The context and the projection are measured before they are built, from the path to the
    leaf and its context entries that they are then built from: the path is walked once."""
    leaf_id = leaf.get("leafId", ABSENT)
    expected_context = example.build_session_context_at(leaf_id) if leaf else example.build_session_context()
    expected_projection = (
        example.build_session_projection_at(leaf_id) if leaf else example.build_session_projection()
    )
    walks = []
    walk = example._session_path

    def counted(at: Any) -> Any:
        walks.append(at)
        return walk(at)

    monkeypatch.setattr(example, "_session_path", counted)
    context = methods_read._context(example, P.parse(leaf, P.SessionContextParams))
    assert encode_result(context) == encode_result(expected_context) and len(walks) == 1
    projection = methods_read._projection(example, P.parse(leaf, P.ContextParams).leaf_id)
    assert encode_result(projection) == encode_result(expected_projection) and len(walks) == 2


def test_the_projection_counts_each_message_three_times(
    example: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    context_bytes = entries_bytes(example.build_context_entries())
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", 2 * context_bytes)
    methods_read._context(example, P.SessionContextParams())
    assert refused(lambda: methods_read._projection(example, P.ContextParams().leaf_id)).data == {
        "bytes": 3 * context_bytes,
        "max": 2 * context_bytes,
    }


def test_a_page_of_huge_entries_is_refused_and_a_smaller_one_is_not(
    mixed: SessionManager, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", 3 * SHORT_LINE)
    refused(lambda: methods_read._entries_page(mixed, P.GetEntriesParams(limit=12)))
    page = methods_read._entries_page(mixed, P.GetEntriesParams(offset=3, limit=2))
    assert [e.id for e in page["entries"]] == ["e3", "e4"] and page["hasMore"] is True


# --- pi/getEntries with offset -----------------------------------------------------------------


def test_pages_by_offset_hold_every_entry_where_ids_repeat(tmp_path: Path):
    values = [message(f"e{i}", f"e{i - 1}" if i else None, f"m{i}") for i in range(7)]
    values.insert(5, message("e1", "e4", "again"))  # a damaged file: e1 twice
    m = write_session(tmp_path / "repeated.jsonl", values)
    every = [e.value for e in m.get_entries()]
    assert len(every) == 8
    pages, offset = [], 0
    while True:
        page = methods_read._entries_page(m, P.GetEntriesParams(offset=offset, limit=2))
        assert page["total"] == 8
        pages.extend(e.value for e in page["entries"])
        offset += len(page["entries"])
        if not page["hasMore"]:
            break
    assert pages == every
    # `since` the last id of the page (e1) starts after its last occurrence: entries are skipped
    second = methods_read._entries_page(m, P.GetEntriesParams(since="e1", limit=2))
    assert [e.value for e in second["entries"]] == every[6:]
    past = methods_read._entries_page(m, P.GetEntriesParams(offset=50))
    assert past == {"entries": [], "total": 8, "hasMore": False}


def test_since_and_offset_together_are_invalid_params():
    with pytest.raises(PiRpcError) as failure:  # (checked as the request arrives, before its session)
        methods_read._refuse_since_with_offset(P.GetEntriesParams(since="0a9b8c7d", offset=1))
    assert failure.value.code == -32602 and "`since` and `offset`" in failure.value.message


def test_a_path_past_other_branches_lines_is_measured_again_not_refused_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A path's entries lie apart in the file (other branches between them): each is counted to the
    next line of the path, other branches' lines with it. Past the bound the estimate is made again
    to the file's next entry: the path is answered, as small as it is."""
    entries, parent = [], None
    for i in range(10):
        entries.append(message(f"p{i}", parent, f"on the path {i}"))
        entries.append(message(f"b{i}", f"p{i}", "z" * (SHORT_LINE // 2)))  # another branch, a short line
        parent = f"p{i}"
    manager = write_session(tmp_path / "branches.jsonl", entries)
    branch = manager.get_branch("p9")
    assert [e.id for e in branch] == [f"p{i}" for i in range(10)]
    size = entries_json(branch)
    assert entries_bytes(branch) > 10 * size  # (the branches' lines counted in)
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", 2 * size)
    assert reply_bytes(manager, branch) == size
    params = P.parse({"fromId": "p9"}, P.GetBranchParams)
    assert methods_read._branch(manager, params) == branch
    monkeypatch.setattr(errors, "MAX_REPLY_BYTES", size - 1)
    assert refused(lambda: methods_read._branch(manager, params)).data == {
        "bytes": size,
        "max": size - 1,
    }


@pytest.mark.parametrize(
    "text",
    [
        "plain words of a prompt",
        "日本語のプロンプト" * 50,
        "emoji 🙂 and accents é à" * 20,
        'a "quoted" C:\\path\n\ttabbed\r\x01\x1f\b\f' * 40,
        "lone \ud800 surrogate\n" * 30,
    ],
    ids=["ascii", "cjk", "mixed", "escapes", "surrogates"],
)
def test_a_listing_is_counted_in_the_bytes_its_reply_writes(tmp_path: Path, text: str):
    from pi_session_server.server.reply_bytes import listing_bytes
    from pi_session_server.session.listing import list_sessions

    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    manager.append_message({"role": "user", "content": text, "timestamp": 1764500000000})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 1})
    infos = list_sessions(str(tmp_path), str(tmp_path / "sessions"))
    assert len(infos) == 1
    written = len(encode_result([info.to_json() for info in infos]))
    # every string at its encoded length, the rest within the allowance for the object's other members
    assert written <= listing_bytes(infos) <= written + 200
