"""SessionManager behaviour beyond the conformance vectors: deviations, laziness, following files."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from builders import assistant_message, message_entry, user_message

from pi_session_server.errors import InvalidSessionFileError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager, build_session_context, file_follow, storage
from pi_session_server.session.tree import preorder

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _msg(eid, parent, role="user", text="t", ts="2025-01-01T00:00:01.000Z"):
    content = [{"type": "text", "text": text}]
    message = (
        user_message(content, 1)
        if role == "user"
        else assistant_message(text, 1, provider="prov", model="mod")
    )
    return message_entry(eid, parent, message, ts)


def _write(path, values):
    path.write_text("".join(json.dumps(v, separators=(",", ":")) + "\n" for v in values))
    return str(path)


# -- D1: parent cycles end the walk -----------------------------------------------------------


def test_d1_self_parent_path_is_the_entry_itself(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", "a")])
    sm = SessionManager.open(path)
    assert [e.id for e in sm.get_branch()] == ["a"]
    assert len(sm.build_session_context()["messages"]) == 1


def test_d1_two_cycle_stops_before_revisit(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", "b"), _msg("b", "a")])
    sm = SessionManager.open(path)
    assert [e.id for e in sm.get_branch("a")] == ["b", "a"]
    assert [e.id for e in sm.get_branch("b")] == ["a", "b"]
    sm.append_compaction("s", "a", 1)  # builds a context first: must terminate


def test_d2_duplicate_ids_cycle_edges_removed(tmp_path):
    lines = [HEADER, _msg("R", None), _msg("x", "R"), _msg("y", "x"), _msg("x", "y")]
    sm = SessionManager.open(_write(tmp_path / "s.jsonl", lines))
    shape = [(depth, node.entry.id) for depth, node in preorder(sm.get_tree())]
    assert shape == [(0, "R"), (1, "x"), (2, "y")]


# -- D5: failed setSessionFile leaves the manager untouched -----------------------------------


def test_d5_failed_set_session_file_keeps_state(tmp_path):
    sm = SessionManager.create("/proj", str(tmp_path))
    sm.append_message({"role": "user", "content": "a", "timestamp": 1})
    before = (sm.get_session_file(), sm.get_session_id(), [e.id for e in sm.get_entries()], sm.get_leaf_id())
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(InvalidSessionFileError):
        sm.set_session_file(str(bad))
    after = (sm.get_session_file(), sm.get_session_id(), [e.id for e in sm.get_entries()], sm.get_leaf_id())
    assert after == before
    assert bad.read_text() == "not json\n"


# -- laziness ---------------------------------------------------------------------------------


def test_open_does_not_decode_large_bodies(tmp_path):
    big = "x" * 100_000
    lines = [HEADER, _msg("a", None, text=big), _msg("b", "a", role="assistant", text=big)]
    sm = SessionManager.open(_write(tmp_path / "s.jsonl", lines))
    entries = sm.get_entries()
    assert not any(e.is_loaded for e in entries)
    tree = sm.get_tree()
    assert [e.id for e in sm.get_branch()] == ["a", "b"]
    assert tree[0].entry.id == "a"
    assert not any(e.is_loaded for e in entries)  # tree and branch used envelopes only
    context = sm.build_session_context()
    assert context["model"] == {"provider": "prov", "modelId": "mod"}
    assert context["messages"][1]["content"][0]["text"] == big


def test_context_decodes_only_returned_messages(tmp_path):
    big = "y" * 10_000
    lines = [
        HEADER,
        _msg("a", None, text=big),
        _msg("b", "a", text=big),
        {
            "type": "compaction",
            "id": "c",
            "parentId": "b",
            "timestamp": "2025-01-01T00:00:02.000Z",
            "summary": "s",
            "firstKeptEntryId": "b",
            "tokensBefore": 5,
        },
        _msg("d", "c", text=big),
    ]
    sm = SessionManager.open(_write(tmp_path / "s.jsonl", lines))
    reads = []
    source = sm.get_entries()[0]._source
    original = source.read_line

    def counting(offset, length):
        reads.append(offset)
        return original(offset, length)

    source.read_line = counting
    roles = [m["role"] for m in sm.build_session_context()["messages"]]
    assert roles == ["compactionSummary", "user", "user"]
    entry_a = sm.get_entry("a")
    assert entry_a.offset not in reads


@pytest.mark.slow
def test_long_linear_chain_everywhere(tmp_path):
    n = 200_000
    path = tmp_path / "chain.jsonl"
    with open(path, "w") as f:
        f.write(json.dumps(HEADER) + "\n")
        parent = None
        for i in range(n):
            eid = f"{i:08x}"
            f.write(json.dumps(_msg(eid, parent, text=str(i))) + "\n")
            parent = eid
    sm = SessionManager.open(str(path))
    assert len(sm.get_branch()) == n
    assert len(sm.build_session_context()["messages"]) == n
    tree = sm.get_tree()
    assert len(preorder(tree)) == n
    from pi_session_server.session.tree import tree_to_json

    assert tree_to_json(tree)[0]["entry"]["id"] == "00000000"
    new_file = sm.create_branched_session(sm.get_leaf_id())
    assert new_file is not ABSENT


# -- following a file another process appends to (D14) ----------------------------------------


def test_refresh_takes_in_appended_lines(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None), _msg("b", "a", role="assistant")])
    sm = SessionManager.open(path)
    assert sm.refresh_from_disk().kind == "unchanged"
    with open(path, "a") as f:
        f.write(json.dumps(_msg("c", "b")) + "\n")
        f.write('{"type":"message","id":"d","par')  # still being written: not taken yet
    change = sm.refresh_from_disk()
    assert change.kind == "appended"
    assert change.new_entry_ids == ["c"]
    assert sm.get_leaf_id() == "c"
    with open(path, "a") as f:
        f.write(
            'entId":"c","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"z"}}\n'
        )
    change = sm.refresh_from_disk()
    assert change.new_entry_ids == ["d"]
    fresh = SessionManager.open(path)
    assert [e.id for e in fresh.get_entries()] == [e.id for e in sm.get_entries()]
    assert fresh.get_leaf_id() == sm.get_leaf_id()


def test_refresh_reloads_a_rewritten_file(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None), _msg("b", "a", role="assistant")])
    sm = SessionManager.open(path)
    _write(tmp_path / "s.jsonl", [HEADER, _msg("z", None)])
    change = sm.refresh_from_disk()
    assert change.kind == "reloaded"
    assert [e.id for e in sm.get_entries()] == ["z"]


def _with_an_orphan(path: Path) -> str:
    """A session whose "c0000003" hangs off a missing parent, its times an hour back (an edit of
    it in place then has other times, however fast it comes)."""
    written = _write(
        path, [HEADER, _msg("a0000001", None), _msg("c0000003", "gone0001"), _msg("d0000004", "c0000003")]
    )
    an_hour_ago = time.time() - 3600
    os.utime(written, (an_hour_ago, an_hour_ago))
    return written


def _quick_fix_in_place(path: str) -> bytes:
    """An editor's quick fix of the orphan, saved in place: "gone0001" becomes "a0000001" (the same
    length: same inode, same size, same last bytes). Returns the file as it was."""
    data = Path(path).read_bytes()
    with open(path, "r+b") as f:
        f.write(data.replace(b'"parentId":"gone0001"', b'"parentId":"a0000001"'))
    return data


def test_refresh_reloads_a_file_rewritten_in_place_with_its_size_and_tail(tmp_path):
    # an editor's quick fix: the orphan "c" re-parented from "gone0001" to "a" + 7 characters (the
    # same length), saved in place: same inode, same size, same last 64 bytes
    path = _with_an_orphan(tmp_path / "s.jsonl")
    sm = SessionManager.open(path, read_only=True)
    before = os.stat(path)
    data = _quick_fix_in_place(path)
    after = os.stat(path)
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert sm.refresh_from_disk().kind == "reloaded"
    assert [r.entry.id for r in sm.get_tree()] == ["a0000001"]  # one root: the orphan is gone
    assert sm.refresh_from_disk().kind == "unchanged"
    assert Path(path).read_bytes() == data.replace(b'"parentId":"gone0001"', b'"parentId":"a0000001"')


def test_a_rewrite_caught_while_the_file_was_empty_is_read_whole_when_it_ends_longer(tmp_path):
    """``cat edited > FILE``: a look while the file is empty reports "rewriting"; the file then
    holds an edited copy that ends longer, with the session's last bytes where they were. It is
    read whole ("reloaded"), not taken as the old lines with new ones appended."""
    lines = [HEADER, _msg("a0000001", None), _msg("b0000002", "a0000001")]
    path = _write(tmp_path / "s.jsonl", lines)
    sm = SessionManager.open(path, read_only=True)
    with open(path, "r+b") as f:
        f.truncate(0)
    assert sm.refresh_from_disk().kind == "rewriting"
    edited = [HEADER, _msg("a0000001", None, text="T"), lines[2], _msg("c0000003", "b0000002")]
    with open(path, "r+b") as f:
        f.write("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in edited).encode())
    change = sm.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("reloaded", ["c0000003"])
    assert sm.get_entry("a0000001").value == edited[1]


def _shell(command: str, *args: str) -> None:
    """Another program writes the file: ``sh -c command FILE ...`` (FILE is ``$0``)."""
    subprocess.run(["sh", "-c", command, *args], check=True)


def test_a_file_left_without_a_header_is_rewriting_once_then_unreadable_then_reloaded(tmp_path, monkeypatch):
    """A shell's ``>`` leaves other text, then an editor saves the session with a byte order mark
    (pi cannot read either), then a proper save brings the header back. Each change without a
    header is told once ("rewriting"), the file holding still so is "unreadable" once, and nothing
    more is said while it stays so; the session stays as it was; the header's return is
    "reloaded"."""
    # the follower's clock, which moves only where the test moves it: two looks in a row on a
    # loaded machine are not UNREADABLE_AFTER apart
    now = [0.0]
    monkeypatch.setattr(file_follow, "time", SimpleNamespace(monotonic=lambda: now[0]))
    lines = [HEADER, _msg("a0000001", None), _msg("b0000002", "a0000001")]
    path = _write(tmp_path / "s.jsonl", lines)
    whole = Path(path).read_bytes()
    copy = str(tmp_path / "copy.jsonl")
    Path(copy).write_bytes(whole)
    sm = SessionManager.open(path)

    def looks() -> list[str]:
        kinds = [sm.refresh_from_disk().kind, sm.refresh_from_disk().kind]
        now[0] += storage.UNREADABLE_AFTER
        return [*kinds, sm.refresh_from_disk().kind, sm.refresh_from_disk().kind]

    _shell('echo "notes, not a session" > "$0"', path)
    assert looks() == ["rewriting", "unchanged", "unreadable", "unchanged"]
    assert [e.id for e in sm.get_entries()] == ["a0000001", "b0000002"]  # as it was

    _shell('printf "\\357\\273\\277" > "$0" && cat "$1" >> "$0"', path, copy)
    assert Path(path).read_bytes().startswith(b"\xef\xbb\xbf{")
    assert looks() == ["rewriting", "unchanged", "unreadable", "unchanged"]

    _shell('cat "$1" > "$0"', path, copy)
    change = sm.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("reloaded", [])
    ours = sm.append_message({"role": "user", "content": "mine", "timestamp": 1})
    assert sm.refresh_from_disk().kind == "unchanged"
    assert Path(path).read_bytes().startswith(whole)
    assert [e.id for e in SessionManager.open(path, read_only=True).get_entries()][-1] == ours


def test_a_headerless_file_that_is_deleted_is_no_longer_waited_for(tmp_path):
    """A follower looks at a headerless file on every tick until it is told apart: once the file is
    gone that stops (a "deleted" at each look would be told at each tick); a session written there
    again is "reloaded"."""
    lines = [HEADER, _msg("a0000001", None)]
    path = _write(tmp_path / "s.jsonl", lines)
    sm = SessionManager.open(path)
    assert not sm.awaiting_header
    _shell('echo "notes" > "$0"', path)
    assert sm.refresh_from_disk().kind == "rewriting" and sm.awaiting_header
    os.unlink(path)
    assert sm.refresh_from_disk().kind == "deleted" and not sm.awaiting_header
    _write(tmp_path / "s.jsonl", lines)
    assert sm.refresh_from_disk().kind == "reloaded" and not sm.awaiting_header


def test_an_append_to_a_file_another_program_filled_with_other_text_is_told_not_glued(tmp_path):
    """As pi's: our line goes after the other text, on a line of its own, and the foreign write
    is reported (pi/foreignWriter on the wire); the file is still no session ("rewriting")."""
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a0000001", None)])
    sm = SessionManager.open(path)
    sm.append_message({"role": "user", "content": "first", "timestamp": 1})
    _shell('printf "a shopping list" > "$0"', path)
    ours = sm.append_message({"role": "user", "content": "second", "timestamp": 1})
    text, line = Path(path).read_bytes().split(b"\n")[:2]
    assert text == b"a shopping list" and json.loads(line)["id"] == ours
    assert [e.message for e in sm.drain_events()] == [f"{path} was truncated or rewritten by another process"]
    assert sm.refresh_from_disk().kind == "rewriting"


def test_a_rewrite_in_place_keeping_the_size_is_reloaded_after_our_own_append(tmp_path):
    # the same quick fix, but we append before the next look: our append must not take the
    # rewrite's times for ours; the next refresh reloads, keeping our line
    path = _with_an_orphan(tmp_path / "s.jsonl")
    sm = SessionManager.open(path)
    _quick_fix_in_place(path)
    ours = sm.append_message({"role": "user", "content": "mine", "timestamp": 1})
    assert sm.refresh_from_disk().kind == "reloaded"
    fresh = SessionManager.open(path, read_only=True)
    assert [r.entry.id for r in sm.get_tree()] == [r.entry.id for r in fresh.get_tree()] == ["a0000001"]
    assert [e.id for e in sm.get_entries()] == [e.id for e in fresh.get_entries()]
    assert sm.get_entries()[-1].id == ours
    assert sm.refresh_from_disk().kind == "unchanged"


def test_refresh_reports_deleted_file(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None)])
    sm = SessionManager.open(path)
    os.unlink(path)
    assert sm.refresh_from_disk().kind == "deleted"
    assert [e.id for e in sm.get_entries()] == ["a"]


def test_a_deleted_file_our_append_makes_again_is_ours_not_another_process(tmp_path):
    # pi's appendFileSync makes the file again, headerless, and so do we: no foreign write, no
    # reload of a file without a header; lines others append to it later are read from it
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a0000001", None, text="old")])
    sm = SessionManager.open(path)
    os.unlink(path)
    assert sm.refresh_from_disk().kind == "deleted"
    ours = sm.append_message({"role": "user", "content": "mine", "timestamp": 1})
    assert sm.drain_events() == []
    assert sm.refresh_from_disk().kind == "unchanged"
    with open(path, "a") as f:
        f.write(json.dumps(_msg("b0000002", ours, text="theirs " * 20), separators=(",", ":")) + "\n")
    change = sm.refresh_from_disk()
    assert (change.kind, change.new_entry_ids) == ("appended", ["b0000002"])
    texts = [sm.get_entry(i)["message"]["content"] for i in ("a0000001", ours, "b0000002")]
    assert texts == [[{"type": "text", "text": "old"}], "mine", [{"type": "text", "text": "theirs " * 20}]]


def test_free_function_accepts_plain_values():
    entries = [_msg("a", None), _msg("b", "a", role="assistant")]
    context = build_session_context(entries)
    assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
    assert context["model"] == {"provider": "prov", "modelId": "mod"}


# -- D15: bodies read on demand never come from a different line -------------------------------


@pytest.mark.parametrize(
    ("loaded", "rewritten"),
    [
        (b'"id":"b"', b'"id":"z"'),
        (b'"parentId":"a"', b'"parentId":"z"'),
        (b'"type":"message"', b'"type":"massage"'),
        (b'"timestamp":"2025-01-01T00:00:02.000Z"', b'"timestamp":"2025-01-01T00:00:03.000Z"'),
    ],
)
def test_d14_large_file_rewritten_in_place_raises_instead_of_lying(tmp_path, monkeypatch, loaded, rewritten):
    from pi_session_server.errors import StaleFileError
    from pi_session_server.session import loader

    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)  # behave like a file over the limit
    second = _msg("b", "a", ts="2025-01-01T00:00:02.000Z")
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None, text="original"), second])
    sm = SessionManager.open(path)
    with open(path, "r+b") as f:  # same length, another entry's envelope (any member of it)
        data = f.read()
        line = data.index(b'"id":"b"') - len(b'{"type":"message",')
        f.seek(line)
        f.write(data[line:].replace(loaded, rewritten, 1))
    with pytest.raises(StaleFileError):
        _ = sm.get_entry("b")["message"]


def test_d14_large_file_reads_bodies_of_entries_with_huge_integer_ids(tmp_path, monkeypatch):
    # JSON.parse holds 12345678901234567890 as its nearest double, and so does the loaded envelope;
    # the exact parser that reads the body again keeps the integer: still the same entry (this
    # raised StaleFileError, so the entry could not be read at all)
    from pi_session_server.session import loader

    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    odd = '{"type":"custom","id":9007199254740993,"parentId":12345678901234567890,"data":"kept"}'
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + odd + "\n")
    sm = SessionManager.open(str(path))
    (entry,) = sm.get_entries()
    assert entry.id == 9007199254740992.0 and entry.parent_id == 1.2345678901234567e19
    assert entry["data"] == "kept"


@pytest.mark.parametrize("bodies_kept", [True, False])
def test_bodies_of_entries_whose_type_and_timestamp_are_huge_integers_are_read(
    tmp_path, monkeypatch, bodies_kept
):
    # as the ids above: an envelope that kept the integer, compared with a body read again
    from pi_session_server.session import loader

    if not bodies_kept:
        monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    odd = '{"type":123456789012345678901234567890,"id":"a","parentId":null,"timestamp":98765432109876543210,"data":"kept"}'
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + odd + "\n")
    sm = SessionManager.open(str(path), read_only=True)
    (entry,) = sm.get_entries()
    assert entry["data"] == "kept"


def test_d14_small_file_keeps_loaded_bodies(tmp_path):
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None, text="original")])
    sm = SessionManager.open(path)
    _write(tmp_path / "s.jsonl", [HEADER])
    assert sm.get_entry("a")["message"]["content"][0]["text"] == "original"


def test_d14_deleted_large_file_still_reads_from_open_inode(tmp_path, monkeypatch):
    from pi_session_server.session import loader

    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None, text="original")])
    sm = SessionManager.open(path)
    os.unlink(path)
    assert sm.get_entry("a")["message"]["content"][0]["text"] == "original"


def test_refresh_after_own_appends_is_unchanged(tmp_path):
    sm = SessionManager.create("/proj", str(tmp_path))
    sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 1})
    sm.append_message({"role": "user", "content": "x", "timestamp": 2})
    assert sm.refresh_from_disk().kind == "unchanged"
    sm.append_message({"role": "user", "content": "y", "timestamp": 3})
    assert sm.refresh_from_disk().kind == "unchanged"


def test_foreign_append_between_ours_is_taken_in_as_a_fresh_open_has_it(tmp_path):
    sm = SessionManager.create("/proj", str(tmp_path))
    sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 1})
    path = sm.get_session_file()
    with open(path, "a") as f:
        f.write(json.dumps(_msg("f0reign1", sm.get_leaf_id())) + "\n")
    mine = sm.append_message({"role": "user", "content": "x", "timestamp": 2})
    assert [e.message for e in sm.drain_events()]
    change = sm.refresh_from_disk()
    assert (change.kind, change.new_entry_ids, change.leaf_id) == ("appended", ["f0reign1"], mine)
    fresh = SessionManager.open(path)
    assert [e.id for e in sm.get_entries()] == [e.id for e in fresh.get_entries()]
    assert [e.id for e in sm.get_entries()][-2:] == ["f0reign1", mine]


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_managers_nobody_closed_do_not_keep_their_files_open(tmp_path):
    # A script that opens thousands of sessions and never calls close() must not run out of
    # descriptors (the default limit is often 1,024): dropping a manager closes its files.
    import gc

    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None), _msg("b", "a", role="assistant")])
    gc.collect()  # files an earlier test left to the collector (in this process) are closed first
    before = _open_descriptors()
    for _ in range(50):
        reader = SessionManager.open(path, read_only=True)
        reader.get_tree()
        writer = SessionManager.open(path)
        writer.append_message({"role": "user", "content": "x", "timestamp": 1})
        assert _open_descriptors() > before
    del reader, writer
    gc.collect()
    assert _open_descriptors() == before
