"""The assistant turns' usage kept with a session file's index (session/turn_store.py): the totals of
a reopen read none of the file's assistant lines, those of a file pi appended to read only the new
ones, and the totals are those of a plain read whatever happened to the file or to what is kept."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from server_process import Replies, talk
from test_index_keeping import ROOT, SERVE

from pi_session_server.server import session_stats
from pi_session_server.server.wire import encode_result
from pi_session_server.session import SessionManager, cache_dir, preview_store, scan_index, turn_store

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
# the turns of a file are kept once it has not changed for a while (see cache_dir.RACY_NS, patched here
# for the tests in this process, not in a sidecar's)
SETTLED_SECONDS = cache_dir.RACY_NS / 1e9 + 0.1
ODD_USAGES: list[Any] = [
    {
        "input": 10,
        "output": 2.5,
        "cacheRead": 0,
        "cacheWrite": None,
        "totalTokens": 12,
        "cost": {"total": 0.1},
    },
    {"input": "12", "output": True, "totalTokens": 1e300, "cost": {"total": -0.25}},
    {"input": [1], "output": {"n": 1}, "cacheRead": 9007199254740993, "cost": {"total": None}},
    {"input": 3},
]


@pytest.fixture(autouse=True)
def _small_sessions_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    monkeypatch.setattr(turn_store, "MIN_STORED", 4)
    monkeypatch.setattr(cache_dir, "RACY_NS", 0)  # the files written here are kept at once


def _turn_line(n: int, parent: str, usage: Any, model: Any = "m") -> dict[str, Any]:
    message = {"role": "assistant", "content": [{"type": "text", "text": f"t{n}"}], "provider": "p"}
    message.update(model=model, usage=usage)
    return {
        "type": "message",
        "id": f"a{n}",
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01Z",
        "message": message,
    }


def _write(path: Path, turns: int, first: int = 0, parent: str | None = None) -> str:
    """``turns`` user/assistant pairs (appended to ``path`` when ``first``), the usages odd in
    every way JSON allows; the id of the last entry."""
    lines = [] if first else [HEADER]
    for n in range(first, first + turns):
        user = {"role": "user", "content": f"q{n}"}
        lines.append(
            {"type": "message", "id": f"u{n}", "parentId": parent, "timestamp": "t", "message": user}
        )
        lines.append(_turn_line(n, f"u{n}", ODD_USAGES[n % len(ODD_USAGES)], model=f"m{n % 3}"))
        parent = f"a{n}"
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    assert parent is not None
    return parent


def _plain(path: Path) -> dict[str, Any]:
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        return session_stats.session_stats(manager, session_stats.StatsCache())


def _kept(path: Path, index: Path) -> dict[str, Any]:
    with SessionManager.open(str(path), read_only=True, index=str(index)) as manager:
        return session_stats.session_stats(manager, session_stats.StatsCache())


def _store(index: Path) -> list[Path]:
    return sorted(index.glob("*" + cache_dir.TURNS_SUFFIX))


@pytest.fixture
def lines_read(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The assistant lines the totals read from the file, as they read them (not the lines of the
    other entries with usage: those are read each time)."""
    read: list[Any] = []
    decode = session_stats._turn_of

    def counted(line: Any, entry_id: Any, other_usage: bool = False) -> Any:
        if not other_usage:
            read.append(entry_id)
        return decode(line, entry_id, other_usage)

    monkeypatch.setattr(session_stats, "_turn_of", counted)
    return read


def test_a_reopen_reads_no_assistant_line_and_counts_the_same(tmp_path: Path, lines_read: list[Any]):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    expected = _plain(path)
    lines_read.clear()
    assert _kept(path, index) == expected
    assert len(lines_read) == 12 and len(_store(index)) == 1
    lines_read.clear()
    assert _kept(path, index) == expected  # the same sums, float for float
    assert lines_read == []
    assert (
        expected["models"]["p/m1"]["turns"] == 4 and expected["tokens"]["totalTokens"] == 1e300 * 3 + 12 * 3
    )


def test_few_turns_are_neither_kept_nor_loaded(tmp_path: Path, lines_read: list[Any]):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, turn_store.MIN_STORED - 1)
    assert _kept(path, index) == _plain(path)
    assert _store(index) == []


def test_after_pi_appends_only_the_new_lines_are_read_and_kept(tmp_path: Path, lines_read: list[Any]):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    last = _write(path, 12)
    _kept(path, index)
    _write(path, 3, first=12, parent=last)  # fewer than are worth keeping again
    expected = _plain(path)
    lines_read.clear()
    assert _kept(path, index) == expected
    assert lines_read == ["a12", "a13", "a14"]
    _write(path, 5, first=15, parent="a14")
    expected = _plain(path)
    lines_read.clear()
    assert _kept(path, index) == expected
    assert lines_read == ["a12", "a13", "a14", "a15", "a16", "a17", "a18", "a19"]  # and kept
    lines_read.clear()
    assert _kept(path, index) == expected and lines_read == []


def test_turns_kept_for_another_file_under_the_same_inode_number_are_not_used(
    tmp_path: Path, lines_read: list[Any], monkeypatch: pytest.MonkeyPatch
):
    """A file saved by renaming a new one over it can get the inode number of the one it replaced
    (see cache_dir.generation)."""
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    expected = _kept(path, index)
    real_generation = cache_dir.generation
    monkeypatch.setattr(cache_dir, "generation", lambda fd: real_generation(fd) ^ 1)
    lines_read.clear()
    assert _kept(path, index) == expected
    assert len(lines_read) == 12


def test_a_line_still_being_written_is_counted_and_not_kept(tmp_path: Path, lines_read: list[Any]):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    with open(path, "rb+") as f:  # the last line without its newline yet
        f.truncate(os.path.getsize(path) - 1)
    expected = _plain(path)
    assert _kept(path, index) == expected
    lines_read.clear()
    assert _kept(path, index) == expected
    assert lines_read == ["a11"]


def _rewrite_in_place(path: Path) -> None:
    """An editor's save of the same size: each turn's input of 10 becomes 99."""
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.write(data.replace(b'"input": 10', b'"input": 99'))


def _replace_by_rename(path: Path) -> None:
    other = path.with_suffix(".new")
    other.write_bytes(path.read_bytes().replace(b'"input": 10', b'"input": 77'))
    os.replace(other, path)


def _truncate(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))


def _same_size_same_times(path: Path) -> None:
    st = os.stat(path)
    _rewrite_in_place(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the ctime still moves


@pytest.mark.parametrize("change", [_rewrite_in_place, _replace_by_rename, _truncate, _same_size_same_times])
def test_a_file_changed_otherwise_than_by_appends_is_read_again(tmp_path: Path, change: Any):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    before = _kept(path, index)
    change(path)
    after = _plain(path)
    assert after != before
    assert _kept(path, index) == after


def _damage(store: Path) -> None:
    data = bytearray(store.read_bytes())
    data[-3] ^= 0xFF
    store.write_bytes(bytes(data))


def _other_version(store: Path) -> None:
    data = bytearray(store.read_bytes())
    data[8] += 1  # the format version, after the magic
    store.write_bytes(bytes(data))


def _other_code(store: Path) -> None:
    data = bytearray(store.read_bytes())
    data[12] ^= 0xFF  # the code stamp, after the format version (cache_dir.code_stamp)
    store.write_bytes(bytes(data))


def _cut(store: Path) -> None:
    store.write_bytes(store.read_bytes()[:40])


def _garbage(store: Path) -> None:
    store.write_bytes(b"not what is kept")


def _other_file(store: Path) -> None:
    """What is kept of another session file, under this one's name."""
    other, other_index = store.parent.parent / "o.jsonl", store.parent.parent / "other-index"
    _write(other, 10)
    _kept(other, other_index)
    (kept,) = _store(other_index)
    store.write_bytes(kept.read_bytes())


def _name_not_there(store: Path) -> None:
    """Well framed, but a turn names a provider the store does not hold."""
    body = cache_dir.unframed(store.read_bytes(), turn_store.MAGIC, turn_store.FORMAT_VERSION)
    assert body is not None
    stored = turn_store._decode(body)
    stored.providers[-1] = len(stored.names)
    framed = cache_dir.framed(turn_store.MAGIC, turn_store.FORMAT_VERSION, turn_store._encode(stored))
    store.write_bytes(b"".join(framed))


@pytest.mark.parametrize(
    "spoil", [_damage, _other_version, _other_code, _cut, _garbage, _other_file, _name_not_there]
)
def test_what_is_kept_that_does_not_describe_the_file_is_not_used(
    tmp_path: Path, lines_read: list[Any], spoil: Any
):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    expected = _kept(path, index)
    (store,) = _store(index)
    spoil(store)
    lines_read.clear()
    assert _kept(path, index) == expected
    assert len(lines_read) == 12  # read again, and kept again
    lines_read.clear()
    assert _kept(path, index) == expected and lines_read == []


def test_the_names_of_the_turns_kept_are_read_back_once_each(tmp_path: Path):
    """A session of GBs has hundreds of thousands of turns and a few models: read back, each turn's
    provider and model are the one string of that name, not a string each."""
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    expected = _kept(path, index)
    with SessionManager.open(str(path), read_only=True, index=str(index)) as manager:
        first = next(entry for entry in manager.get_entries() if entry.role == "assistant")
        held = preview_store.hold([first])
        assert held is not None
        try:
            kept = turn_store.load(held, first)
        finally:
            held.close()
    providers, models = kept.columns[:2]
    assert len(providers) == 12 and len({id(name) for name in providers}) == 1
    assert sorted(set(models)) == ["m0", "m1", "m2"] and len({id(name) for name in models}) == 3
    assert _kept(path, index) == expected


def test_turns_that_cannot_be_kept_are_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    with open(path, "a", encoding="utf-8") as f:  # a number msgpack cannot hold
        f.write(json.dumps(_turn_line(99, "a11", {"input": 2**70})) + "\n")
    assert _kept(path, index) == _plain(path)
    assert _store(index) == []

    def refused(*_args: Any) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(cache_dir, "write_whole", refused)
    _write(path := tmp_path / "t.jsonl", 12)
    assert _kept(path, index) == _plain(path)


def test_the_sidecar_keeps_the_turns_after_its_reply(tmp_path: Path):
    """Within ``index_writes_deferred`` (the sidecar's requests), the write waits for its caller."""
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    with scan_index.index_writes_deferred() as writes:
        expected = _kept(path, index)
    assert _store(index) == [] and len(writes) == 2  # the index of the open, and the turns
    assert all(write() for write in writes)
    assert len(_store(index)) == 1 and _kept(path, index) == expected


def test_pi_session_serve_keeps_the_turns_of_its_totals_for_the_next_process(tmp_path: Path):
    """The sidecar's pi/getStats: the turns are kept by the time the process ends, and the next
    process's totals, the same, read them (what is kept is not written again)."""
    path, index, log = tmp_path / "s.jsonl", tmp_path / "index", tmp_path / "log"
    _write(path, 1000)  # as many turns as are worth keeping, in a process not patched
    time.sleep(SETTLED_SECONDS)

    def stats(replies: Replies) -> dict[str, Any]:
        session = replies[1]["result"]["session"]
        return {"jsonrpc": "2.0", "id": 2, "method": "pi/getStats", "params": {"session": session}}

    messages: list[Any] = [
        {"jsonrpc": "2.0", "id": 1, "method": "pi/open", "params": {"path": str(path)}},
        stats,
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SESSION_")}
    env.update(PI_SESSION_INDEX_DIR=str(index), PI_SESSION_INDEX_MIN_SIZE="0")
    serve = SERVE.replace('main(["serve"])', f'main(["serve", "--log-file", {str(log)!r}])')
    first, _ended = talk(serve, messages, env=env, cwd=ROOT)
    (kept,) = _store(index)
    written = kept.stat()
    again, _ended = talk(serve, messages, env=env, cwd=ROOT)
    assert again[2]["result"] == first[2]["result"] == json.loads(encode_result(_plain(path)))
    assert kept.stat().st_ino == written.st_ino and log.read_text() == ""


def test_turns_read_from_a_file_that_changed_before_their_write_are_not_kept(tmp_path: Path):
    """pi appended while the write waited for a quiet moment: the turns read may no longer describe
    the file as it is (it could as well have been rewritten), so nothing is written."""
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    _write(path, 12)
    SessionManager.open(str(path), read_only=True, index=str(index)).close()  # the index, written
    with scan_index.index_writes_deferred() as writes:
        _kept(path, index)
    (keep_turns,) = writes
    _write(path, 1, first=12, parent="a11")
    assert keep_turns() is False and _store(index) == []
    assert _kept(path, index) == _plain(path)


def test_the_other_entries_usage_is_kept_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The usage pi's totals add beside the turns' (tool results', usage entries') was read from the
    file at every count: it is kept with the index too, in a file of its own, and a reopen reads
    none of those lines."""
    read: list[Any] = []
    decode = session_stats._turn_of

    def counted(line: Any, entry_id: Any, other_usage: bool = False) -> Any:
        if other_usage:
            read.append(entry_id)
        return decode(line, entry_id, other_usage)

    monkeypatch.setattr(session_stats, "_turn_of", counted)
    path, index = tmp_path / "s.jsonl", tmp_path / "index"
    parent = _write(path, 2)
    lines = []
    for n in range(12):
        result = {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "bash",
            "content": [],
            "isError": False,
        }
        result["usage"] = ODD_USAGES[n % len(ODD_USAGES)]
        entry = {"type": "message", "id": f"r{n}", "parentId": parent, "timestamp": "t", "message": result}
        usage = {
            "type": "usage",
            "id": f"g{n}",
            "parentId": f"r{n}",
            "timestamp": "t",
            "usage": ODD_USAGES[0],
        }
        lines += [entry, usage]
        parent = f"g{n}"
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    expected = _plain(path)
    read.clear()
    assert _kept(path, index) == expected
    assert len(read) == 24 and len(sorted(index.glob("*" + turn_store.OTHER_USAGE_SUFFIX))) == 1
    read.clear()
    assert _kept(path, index) == expected  # the same sums, float for float
    assert read == []
    assert expected["tokens"]["input"] == 10 * 12 + 10 + 3 * 3 + 10 * 3  # the two turns' too (10 and "12")
