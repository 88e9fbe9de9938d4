"""Whether an assistant message is a silent turn (hidden by the tree's filters), read without its
whole value: ``preview_pass.silences`` decodes the line's stop reason and the types and texts of its
content's blocks, ``PreviewCache.silent_turn`` answers from that (a batch of the messages after the
one asked for, in file order, once many were asked), and the answers are ``is_silent_turn``'s of
the whole message, for every kind of assistant message: text or not, content a string or none,
thinking or tool calls only, an error or an abort, odd blocks and odd JSON (those the decoder will
not take are read the usual way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tree_view_keeping import _levels as tree_levels_answer
from test_tree_view_keeping import _server_cache as server_tree_cache

from pi_session_server.format.entry import Entry, LineBytes
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, entry_facts, known_silences, preview_cache, preview_pass
from pi_session_server.session.describe import is_silent_turn
from pi_session_server.session.preview_cache import PreviewCache

_TS = "2025-01-01T00:00:00.000Z"

# raw JSON of message members (written as they are: some are JSON that json.dumps would not write)
TEXTS = [
    '"hello"',
    '""',
    '" "',
    '"\\n\\t "',
    '"\\u00a0\\u3000"',
    '" x "',
    '"\\ufeff"',
    "1",
    "null",
    "[]",
    "{}",
]
STOPS = [
    '"stop"',
    '"toolUse"',
    '"error"',
    '"aborted"',
    '"length"',
    '""',
    "null",
    "0",
    "1",
    "-0",
    "true",
    "false",
]
STOPS += ["[]", "{}", '"Stop"', "1e999", "123456789012345678901234567890"]
BLOCKS = [f'{{"type":"text","text":{text}}}' for text in TEXTS]
BLOCKS += [
    '{"type":"thinking","thinking":"mulling it over","thinkingSignature":"abc"}',
    '{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}',
    '{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}',
    '{"text":"no type"}',
    '{"type":"text"}',
    '{"type":"TEXT","text":"other case"}',
    '{"type":1,"text":"x"}',
    '{"type":"text","text":"first","text":" "}',  # JSON.parse keeps the last
    '{"type":"text","text":"\\ud800 lone"}',
]
ODD_BLOCKS = ["1", '"text"', "null", "[]", "true"]  # not objects: read the usual way
CONTENTS = [*TEXTS, '"  hi"']
CONTENTS += [f"[{block}]" for block in BLOCKS]
CONTENTS += [f"[{BLOCKS[1]},{BLOCKS[-7]},{BLOCKS[0]}]", f"[{BLOCKS[-8]},{BLOCKS[-9]}]"]
CONTENTS += [f"[{odd},{BLOCKS[0]}]" for odd in ODD_BLOCKS]


def _message(content: str | None, stop: str | None, extra: str = "") -> str:
    members = ['"role":"assistant"']
    if content is not None:
        members.append(f'"content":{content}')
    if stop is not None:
        members.append(f'"stopReason":{stop}')
    if extra:
        members.append(extra)
    return "{" + ",".join(members) + "}"


MESSAGES = [_message(content, stop) for content in CONTENTS for stop in (None, '"stop"', '"error"')]
MESSAGES += [_message('"  "', stop) for stop in STOPS] + [_message(None, stop) for stop in STOPS]
MESSAGES += [
    _message('"hi"', '"stop"', '"stopReason":"aborted"'),  # the last of a repeated member counts
    _message('""', None, '"content":"said twice"'),
    _message('[{"type":"text","text":"hi"}]', '"error"', '"errorMessage":"overloaded","usage":{"input":1}'),
    '{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop","content":null}',
]


def _write(path: Path, messages: list[str]) -> Path:
    """A session: a user message, then the assistant ``messages`` one below another."""
    lines = [S.header(), S.user("u0", None, "first")]
    parent = "u0"
    for n, message in enumerate(messages):
        entry_id = f"a{n:04d}"
        envelope = json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": _TS})
        lines.append(envelope[:-1] + f',"message":{message}}}')
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _assistants(manager: SessionManager, *, from_file: bool) -> list[Entry]:
    entries = [e for e in manager.get_entries() if e.type == "message" and e.role == "assistant"]
    if from_file:  # read from the file, as a big session's are (a small one's lines are held)
        for entry in entries:
            if type(entry._body) is LineBytes:
                entry._body = ABSENT
    return entries


def _expected(entries: list[Entry]) -> list[bool]:
    return [is_silent_turn(entry.value["message"]) for entry in entries]


def test_the_messages_are_of_every_kind() -> None:
    """(So that the tests below can fail: both answers, and lines the decoder leaves out.)"""
    values = [json.loads(message) for message in MESSAGES]
    answers = [is_silent_turn(value) for value in values]
    assert any(answers) and not all(answers)


@pytest.mark.parametrize("from_file", [True, False], ids=["read", "held"])
def test_the_decoded_silences_are_those_of_the_whole_messages(tmp_path: Path, from_file: bool) -> None:
    path = _write(tmp_path / "s.jsonl", MESSAGES)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=from_file)
        expected = dict(zip(map(id, entries), _expected(entries), strict=True))
        decoded = list(preview_pass.silences(entries))
        assert {id(e): entry_facts.is_silent_decoded_turn(message) for e, message in decoded} == {
            id(e): expected[id(e)] for e, _ in decoded
        }
        assert len(MESSAGES) // 2 < len(decoded) < len(entries)  # the odd ones left out
        assert [PreviewCache().silent_turn(e) for e in entries] == list(expected.values())


@pytest.mark.parametrize("from_file", [True, False], ids=["read", "held"])
def test_the_silent_turns_read_a_batch_at_a_time_are_those_of_the_whole_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, from_file: bool
) -> None:
    """Once many were asked, the messages after the one asked for are read with it (a batch), and
    not the whole of any: the answers are the same, asked in any order."""
    monkeypatch.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 4)
    monkeypatch.setattr(preview_cache, "SILENCE_BATCH", 16)
    path = _write(tmp_path / "s.jsonl", MESSAGES * 2)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=from_file)
        expected = _expected(entries)
        whole_reads = _count_whole_reads(monkeypatch)
        batches: list[int] = []
        ends_given: list[bool] = []  # (whether a batch was read knowing where its lines end)

        def counted(batch: list[Entry], ends: list[int] | None = None) -> Any:
            batches.append(len(batch))
            ends_given.append(ends is not None)
            return real(batch, ends)

        real = preview_pass.silences
        monkeypatch.setattr(preview_cache, "silences", counted)
        cache = PreviewCache(entries=manager.get_entries, entry_count=manager.entry_count)
        order = list(range(len(entries)))
        order = order[len(order) // 2 :] + order[: len(order) // 2]  # a walk that starts midway
        answers = {at: cache.silent_turn(entries[at]) for at in order}
        assert [answers[at] for at in range(len(entries))] == expected
        assert [cache.silent_turn(e) for e in entries] == expected  # kept: nothing read again
        assert max(batches) == 16 and len(batches) < len(entries) // 4
        assert all(given for size, given in zip(batches, ends_given, strict=True) if size > 1)
        assert sum(batches) <= len(entries)  # none read twice
        odd = len(entries) - sum(1 for _ in preview_pass.silences(entries))
        assert whole_reads() == odd  # the lines the decoder leaves out, and those alone


def _count_whole_reads(monkeypatch: pytest.MonkeyPatch) -> Any:
    count = [0]
    real = Entry.value

    def counted(entry: Entry) -> Any:
        count[0] += 1
        return real.fget(entry)  # type: ignore[attr-defined]

    monkeypatch.setattr(Entry, "value", property(counted))
    return lambda: count[0]


def test_a_line_changed_under_the_silences_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", MESSAGES[:40])
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=True)
        data = path.read_bytes()
        middle = entries[len(entries) // 2]
        at = data.index(f'"{middle.id}"'.encode(), middle.offset)
        path.write_bytes(data[:at] + b'"X' + data[at + 2 :])  # its id, one letter changed
        with pytest.raises(Exception, match="changed underneath"):
            list(preview_pass.silences(entries))
        with pytest.raises(Exception, match="changed underneath"):
            PreviewCache().silent_turn(middle)


def _next_entries(manager: SessionManager, entries: list[Entry]) -> list[int]:
    """Where the next entry of the file starts after each of ``entries`` (0: none)."""
    offsets = sorted(e.offset for e in manager.get_entries())
    return [next((o for o in offsets if o > e.offset), 0) for e in entries]


def _with_lines_between(path: Path, between: dict[int, str]) -> None:
    """Put a line that is not an entry before some of the file's lines (by their number)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for at in sorted(between, reverse=True):
        lines.insert(at, between[at])
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize("window", [600, 4096, 1 << 20])
def test_the_silences_read_to_the_next_entries_are_those_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Lines whose end is known by where the next entry starts are decoded a window at a time; the
    windows holding a blank line between entries are as well, those holding a line that is not an
    entry (or a line the decoder refuses) are read line by line: the same answers, the same lines
    left out, each entry given once."""
    path = _write(tmp_path / "s.jsonl", MESSAGES * 2)
    _with_lines_between(path, {7: "", 30: "   ", 61: "not json", 90: '{"not":"an entry line"'})
    monkeypatch.setattr(preview_pass, "SILENCE_WINDOW", window)
    windows: list[int] = []
    real = preview_pass._decode_silence_lines
    monkeypatch.setattr(preview_pass, "_decode_silence_lines", lambda data: windows.append(1) or real(data))
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=True)
        expected = {
            id(e): entry_facts.is_silent_decoded_turn(message)
            for e, message in preview_pass.silences(entries)
        }
        assert not windows
        given = list(preview_pass.silences(entries, _next_entries(manager, entries)))
        assert len(given) == len({id(e) for e, _ in given})
        assert {id(e): entry_facts.is_silent_decoded_turn(message) for e, message in given} == expected
        assert len(windows) > 1
        assert dict(zip(map(id, entries), _expected(entries), strict=True)).items() >= expected.items()


def test_a_line_changed_under_the_silences_read_to_the_next_entries_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [_message('"hi"', '"stop"')] * 40)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=True)
        ends = _next_entries(manager, entries)
        assert len(list(preview_pass.silences(entries, ends))) == len(entries)
        data = path.read_bytes()
        middle = entries[len(entries) // 2]
        at = data.index(f'"{middle.id}"'.encode(), middle.offset)
        path.write_bytes(data[:at] + b'"X' + data[at + 2 :])  # its id, one letter changed
        with pytest.raises(Exception, match="changed underneath"):
            list(preview_pass.silences(entries, ends))


_json_text = st.sampled_from(TEXTS) | st.text(alphabet=" \t\n\u00a0\u2028x", max_size=4).map(json.dumps)
_block = st.one_of(
    st.builds(lambda text: f'{{"type":"text","text":{text}}}', _json_text),
    st.sampled_from(BLOCKS + ODD_BLOCKS),
)
_content = st.one_of(
    st.none(), _json_text, st.lists(_block, max_size=4).map(lambda blocks: "[" + ",".join(blocks) + "]")
)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.builds(_message, _content, st.none() | st.sampled_from(STOPS)), min_size=1, max_size=30
    ),
    from_file=st.booleans(),
)
def test_any_assistant_message_is_as_silent_as_its_whole_value_says(
    tmp_path_factory: pytest.TempPathFactory, messages: list[str], from_file: bool
) -> None:
    path = _write(tmp_path_factory.mktemp("silent") / "s.jsonl", messages)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = _assistants(manager, from_file=from_file)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 1)
            mp.setattr(preview_cache, "SILENCE_BATCH", 3)
            cache = PreviewCache(entries=manager.get_entries, entry_count=manager.entry_count)
            assert [cache.silent_turn(e) for e in entries] == _expected(entries)


def _branchy(path: Path, turns: int = 90) -> Path:
    """Turns of a user message and assistant messages of every kind (MESSAGES, in turn), every
    fifth turn branching off an earlier user message."""
    lines = [S.header()]
    users: list[str] = []
    parent: str | None = None
    n = 0
    for turn in range(turns):
        if turn % 5 == 4:
            parent = users[turn // 2 % len(users)]
        n += 1
        lines.append(S.user(f"e{n:05d}", parent, f"question {turn}"))
        users.append(parent := f"e{n:05d}")
        for step in range(turn % 4 + 1):
            n += 1
            envelope = json.dumps(
                {"type": "message", "id": f"e{n:05d}", "parentId": parent, "timestamp": _TS}
            )
            message = MESSAGES[(turn * 4 + step) % len(MESSAGES)]
            lines.append(envelope[:-1] + f',"message":{message}}}')
            parent = f"e{n:05d}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["default", "no-tools", "all"])
def test_levels_and_whole_trees_read_the_silent_turns_in_batches_and_answer_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    from pi_session_server.server.tree_following import tree_shape
    from pi_session_server.server.tree_levels import encode_tree_levels, tree_levels
    from pi_session_server.server.tree_tool_calls import CallReading
    from pi_session_server.server.tree_view import encode_flat_tree_view

    monkeypatch.setenv("HOME", "/home/u")
    path = _branchy(tmp_path / "s.jsonl")

    def answers(manager: SessionManager, cache: PreviewCache | None) -> list[bytes]:
        shape = tree_shape(
            manager.get_tree(),
            manager.get_leaf_id(),
            manager.by_id,
            mode=mode,
            active_branch_first=True,
            cache=cache,
            calls=CallReading.NEAR_EACH_RESULT,
        )
        levels, complete = tree_levels(shape, manager.get_leaf_id())
        whole = encode_flat_tree_view(
            manager.get_tree(), manager.get_leaf_id(), manager.by_id, mode=mode, cache=cache
        )
        return [encode_tree_levels(shape, levels, complete, 5, 50_000), whole]

    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        expected = answers(manager, None)
    assert b'"kind":"branches"' in expected[0]
    monkeypatch.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 8)
    monkeypatch.setattr(preview_cache, "SILENCE_BATCH", 32)
    batches: list[int] = []
    real = preview_pass.silences
    monkeypatch.setattr(
        preview_cache, "silences", lambda batch, *ends: batches.append(len(batch)) or real(batch, *ends)
    )
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        _assistants(manager, from_file=True)
        cache = PreviewCache("/home/u", entries=manager.get_entries, entry_count=manager.entry_count)
        assert answers(manager, cache) == expected
    assert max(batches) == 32


def test_the_silent_turns_read_for_levels_are_kept_for_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree view's levels show few assistant messages and ask every one whether it is a silent
    turn: what was read for that is kept with the file's index beside the previews made (not a
    preview of each), and the next process's levels take it from there instead of reading it."""
    import time

    from pi_session_server.session import cache_dir, preview_store

    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    monkeypatch.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 1)
    monkeypatch.setattr(preview_cache, "SILENT_LOAD_SHARE", 1 << 40)  # the kept ones taken at once
    path = _branchy(tmp_path / "s.jsonl")
    index_dir = str(tmp_path / "index")
    time.sleep(0.1)  # past the racy window: what is read of it may be kept

    def levels(manager: SessionManager, cache: PreviewCache | None) -> bytes:
        return tree_levels_answer(manager, cache, limit=2)

    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        expected = levels(manager, None)
    with SessionManager.open(str(path), read_only=True, index=index_dir) as manager:
        cache = server_tree_cache(manager)
        assert levels(manager, cache) == expected
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and keep()
    read: list[int] = []
    real = preview_pass.silences
    monkeypatch.setattr(
        preview_cache, "silences", lambda batch, *ends: read.append(len(batch)) or real(batch, *ends)
    )
    with SessionManager.open(str(path), read_only=True, index=index_dir) as manager:
        assistants = [e for e in manager.get_entries() if e.role == "assistant"]
        head = preview_store.kept_head(manager.get_entries())
        assert head is not None
        whole = {e.offset: is_silent_turn(e.get("message")) for e in assistants}
        assert head.silent.items() <= whole.items()
        decoded = sum(1 for _ in preview_pass.silences(_assistants(manager, from_file=True)))
        assert len(head.silent) >= decoded  # (the lines the decoder leaves out: those the walk asked)
        hidden = [e for e in assistants if not head.describes(e.offset)]  # no preview made of them
        assert hidden and any(e.offset in head.silent for e in hidden)
        assert any(head.silent.values()) and not all(head.silent.values())
        assert levels(manager, server_tree_cache(manager)) == expected
    assert sum(read) <= 1


def test_the_assistant_messages_of_a_file_are_listed_with_where_the_next_entry_starts(tmp_path: Path) -> None:
    """In file order, or sorted when the session lists its entries in another order."""
    path = _write(tmp_path / "s.jsonl", MESSAGES[:10])
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = list(manager.get_entries())
        assistants = _assistants(manager, from_file=True)
        found = known_silences.assistants_and_next_entries(entries)
        assert found is not None
        listed, starts, ends = found
        assert listed == assistants and list(starts) == [e.offset for e in assistants]
        assert list(ends) == _next_entries(manager, assistants) and ends[-1] == 0 and all(ends[:-1])
        assert known_silences.assistants_and_next_entries(entries[::-1]) is None
        cache = PreviewCache(entries=lambda: entries[::-1], entry_count=manager.entry_count)
        order = cache._file_order(assistants[0])
        assert (order.listed, order.starts, order.ends) == (listed, starts, ends)
