"""Listing and discovery (docs/FORMAT.md §9.2, docs/API.md §3.4, §9; D6).

Every expectation here was checked against the reference (0.86.1 with our deviations, the oracle's
``--rules ours`` module). Files are real files in a temporary directory; HOME, the agent directory
and the process cwd are redirected per test.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.errors import AbortError, FsError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import discovery, listing
from pi_session_server.session.discovery import (
    MAX_HEADER_SCAN_BYTES,
    SessionHeaderScanLimitError,
    discover_header,
    find_by_id,
    find_most_recent_session,
    most_recent_candidate,
)
from pi_session_server.session.listing import (
    AbortSignal,
    SessionInfo,
    list_all_sessions,
    list_sessions,
    session_info,
)

T0 = "2025-01-01T00:00:00.000Z"


# ---- helpers ---------------------------------------------------------------------------------------


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory that is the process cwd, with HOME=work/home and the agent dir work/agent."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def header(sid: Any = "s1", cwd: Any = "/proj", timestamp: Any = T0, **extra: Any) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": sid, "timestamp": timestamp, "cwd": cwd, **extra}


def message(
    role: Any, content: Any, ts: Any = ABSENT, entry_ts: Any = "2025-01-01T00:00:01.000Z"
) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if ts is not ABSENT:
        msg["timestamp"] = ts
    return {"type": "message", "id": "m", "parentId": None, "timestamp": entry_ts, "message": msg}


def user(content: Any, ts: Any = 1700000000000) -> dict[str, Any]:
    return message("user", content, ts)


def assistant(text: str, ts: Any = 1700000000000) -> dict[str, Any]:
    return message("assistant", [{"type": "text", "text": text}], ts)


def session_info_entry(name: Any) -> dict[str, Any]:
    return {"type": "session_info", "id": "n", "parentId": None, "timestamp": T0, "name": name}


def write(
    path: Path, *lines: Any, eol: str = "\n", final_eol: bool = True, mtime_ms: int | None = None
) -> str:
    """Write JSON values (dicts/lists/...) or raw text lines (str) or raw bytes, one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = []
    for line in lines:
        if isinstance(line, bytes):
            parts.append(line)
        elif isinstance(line, str):
            parts.append(line.encode("utf-8", "surrogatepass"))
        else:
            parts.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode())
    data = eol.encode().join(parts) + (eol.encode() if final_eol and parts else b"")
    path.write_bytes(data)
    if mtime_ms is not None:
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return str(path)


def info_of(path: str) -> dict[str, Any]:
    info = session_info(path)
    assert info is not None
    return info.to_json()


def ids(infos: list[SessionInfo]) -> list[Any]:
    return [info.id for info in infos]


# ---- 92-94: one file's SessionInfo ----------------------------------------------------------------


def test_session_info_fields_in_reference_order(work: Path) -> None:
    path = write(
        work / "s" / "a.jsonl",
        header("sess-a", parentSession="/x/parent.jsonl"),
        user("  first question  ", 1700000010000),
        assistant("an answer", 1700000011000),
        message("toolResult", [{"type": "text", "text": "tool out"}], 1700000099000),
        user([{"type": "text", "text": "block one"}, {"type": "text", "text": "block two"}], 1700000012000),
        session_info_entry("  Named Session  "),
    )
    info = info_of(path)
    assert list(info) == [
        "path", "id", "cwd", "name", "parentSessionPath", "created", "modified",
        "messageCount", "firstMessage", "allMessagesText",
    ]  # fmt: skip
    assert info == {
        "path": path,
        "id": "sess-a",
        "cwd": "/proj",
        "name": "Named Session",
        "parentSessionPath": "/x/parent.jsonl",
        "created": "2025-01-01T00:00:00.000Z",
        "modified": "2023-11-14T22:13:32.000Z",  # the latest user/assistant time, not the toolResult's
        "messageCount": 4,
        "firstMessage": "  first question  ",
        "allMessagesText": "  first question   an answer block one block two",
    }


def test_header_id_is_not_validated_and_absent_fields_are_omitted(work: Path) -> None:
    numeric = info_of(write(work / "n.jsonl", {"type": "session", "id": 5, "cwd": 7, "parentSession": None}))
    assert numeric["id"] == 5
    assert numeric["cwd"] == ""  # a non-string cwd reads as ""
    assert numeric["parentSessionPath"] is None  # null is kept, only ABSENT is omitted
    assert numeric["created"] is None  # new Date(undefined) is an invalid date
    missing = info_of(write(work / "m.jsonl", {"type": "session"}))
    assert "id" not in missing and "name" not in missing and "parentSessionPath" not in missing


def test_session_name_is_the_latest_session_info_including_clears(work: Path) -> None:
    cleared = write(work / "c.jsonl", header(), session_info_entry("old"), session_info_entry("   "))
    assert "name" not in info_of(cleared)
    renamed = write(
        work / "r.jsonl", header(), session_info_entry("old"), session_info_entry("\u00a0new\ufeff")
    )
    assert info_of(renamed)["name"] == "new"  # JS trim set: NBSP and BOM are trimmed


@pytest.mark.parametrize("bad_name", [42, True, {"text": "obj"}, ["x"]])
def test_non_string_name_clears_the_name_d6(work: Path, bad_name: Any) -> None:
    path = write(work / "n.jsonl", header(), session_info_entry("first"), session_info_entry(bad_name))
    assert "name" not in info_of(path)


def test_modified_fallbacks(work: Path) -> None:
    d = work / "s"
    msg_ts = info_of(write(d / "a.jsonl", header(), user("x", 1600000000000)))
    assert msg_ts["modified"] == "2020-09-13T12:26:40.000Z"
    entry_ts = message("user", "y", entry_ts="2024-02-02T02:02:02.000Z")  # no message.timestamp
    assert info_of(write(d / "b.jsonl", header(), entry_ts))["modified"] == "2024-02-02T02:02:02.000Z"
    header_ts = info_of(write(d / "c.jsonl", header(timestamp="2023-03-03T03:03:03Z")))
    assert header_ts["modified"] == "2023-03-03T03:03:03.000Z"
    mtime = info_of(write(d / "d.jsonl", header(timestamp="not a date"), mtime_ms=1500000000000))
    assert mtime["modified"] == "2017-07-14T02:40:00.000Z"
    assert mtime["created"] is None
    # activity 0 (or negative: Math.max(0, t)) is not > 0: the header time is used
    zero = info_of(
        write(d / "e.jsonl", header(timestamp="2022-01-01T00:00:00.000Z"), user("z", 0), user("n", -5))
    )
    assert zero["modified"] == "2022-01-01T00:00:00.000Z"
    # a numeric header timestamp counts for created but not for modified (only strings do)
    numeric = info_of(write(d / "f.jsonl", header(timestamp=1000), mtime_ms=1500000000000))
    assert (numeric["created"], numeric["modified"]) == (
        "1970-01-01T00:00:01.000Z",
        "2017-07-14T02:40:00.000Z",
    )
    # a message time beyond the Date range makes modified an invalid date
    assert info_of(write(d / "g.jsonl", header(), user("h", 1e20)))["modified"] is None


def test_mtime_fallback_rounds_like_node(work: Path) -> None:
    path = work / "r.jsonl"
    write(path, header(timestamp=None))
    ns = 1_700_000_000_999_600_000  # mtimeMs 1700000000999.6 -> Date(Math.round(...))
    os.utime(path, ns=(ns, ns))
    assert info_of(str(path))["modified"] == "2023-11-14T22:13:21.000Z"


def test_text_rules(work: Path) -> None:
    path = write(
        work / "t.jsonl",
        header(),
        message("custom", "custom text", 1700000050000),
        user([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]),  # no text blocks: nothing
        user([{"type": "text", "text": ""}, {"type": "text", "text": ""}]),  # joined: " " (non-empty)
        assistant("hello  "),
        user(
            [
                {"type": "text", "text": 5},
                {"type": "text", "text": None},
                {"type": "text"},
                {"type": "text", "text": "w"},
            ]
        ),
    )
    info = info_of(path)
    assert info["messageCount"] == 5
    assert info["firstMessage"] == " "
    assert info["allMessagesText"] == "  hello   5   w"


def test_no_user_text_gives_placeholder(work: Path) -> None:
    info = info_of(write(work / "a.jsonl", header(), assistant("only the assistant")))
    assert info["firstMessage"] == "(no messages)"
    assert info["allMessagesText"] == "only the assistant"


def test_wrongly_typed_messages_are_counted_without_text_d6(work: Path) -> None:
    path = write(
        work / "d6.jsonl",
        header(),
        {"type": "message", "timestamp": T0, "message": None},
        {"type": "message", "timestamp": T0},
        user(None, 1700000009000),  # activity still counts
        message("assistant", {"type": "text", "text": "object content"}, 1700000002000),
        user(5, 1700000003000),
        user([None, "str", 7, [], {"type": "text", "text": "kept text"}], 1700000004000),
        message("assistant", [{"type": "text", "text": "answer"}, None], 1700000005000),
        message(7, "role is not a string", 1800000000000),
    )
    info = info_of(path)
    assert info["messageCount"] == 8
    assert info["firstMessage"] == "kept text"
    assert info["allMessagesText"] == "kept text answer"
    assert info["modified"] == "2023-11-14T22:13:29.000Z"


def test_non_object_lines_after_the_header_are_ignored(work: Path) -> None:
    path = write(work / "x.jsonl", header(), "123", '"message"', "[1]", "true", "null", "0", '""', user("u"))
    assert info_of(path)["messageCount"] == 1


def test_values_msgspec_refuses_are_read_exactly(work: Path) -> None:
    deep = '{"type":"message","x":' + "[" * 5000 + "]" * 5000 + ',"message":{"role":"user","content":"deep"}}'
    path = write(
        work / "x.jsonl",
        header(),
        '{"type":"message","message":{"role":"user","content":"lone \\ud800 surrogate"}}',
        deep,
        '{"type":"message","message":{"role":"user","content":"big","timestamp":1' + "0" * 400 + "}}",
        '{"type":"message","message":{"role":"user","content":"dup"},"message":{"role":"assistant","content":"last"}}',
    )
    info = info_of(path)
    assert info["messageCount"] == 4
    assert info["allMessagesText"] == "lone \ud800 surrogate deep big last"
    assert info["modified"] is None  # 1e400 is +Infinity: Math.max gives Infinity, an invalid Date


def test_malformed_lines_do_not_count(work: Path) -> None:
    path = write(
        work / "m.jsonl",
        header(),
        '{"type":"message","message":{"role":"user","content":"x"}} trailing',
        '{"type":"message","message":{"role":"user","content":NaN}}',
        '\ufeff{"type":"message","message":{"role":"user","content":"bom"}}',
        '{"type":"message","message":{"role":"user","content":"trunc',
    )
    assert info_of(path)["messageCount"] == 0


def test_invalid_utf8_is_replaced(work: Path) -> None:
    path = write(
        work / "u.jsonl", header(), b'{"type":"message","message":{"role":"user","content":"a\xffb"}}'
    )
    assert info_of(path)["firstMessage"] == "a\ufffdb"


# ---- 95: files that are not listed, line splitting ---------------------------------------------------


def test_files_that_give_no_info(work: Path) -> None:
    bom = work / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(header()).encode() + b"\n")
    assert session_info(str(bom)) is None
    assert session_info(write(work / "first.jsonl", user("x"), header())) is None
    assert session_info(write(work / "empty.jsonl")) is None
    assert session_info(write(work / "blank.jsonl", "", "   ", "junk", "null")) is None
    assert session_info(str(work / "missing.jsonl")) is None
    (work / "dir.jsonl").mkdir()
    assert session_info(str(work / "dir.jsonl")) is None
    split_header = '{"type":"session","id":"x",\r"cwd":"/proj"}'  # a lone CR splits the header line
    assert session_info(write(work / "cr.jsonl", split_header)) is None


def test_header_after_blank_and_malformed_lines_is_found(work: Path) -> None:
    assert info_of(write(work / "late.jsonl", "", "not json", "0", header("late")))["id"] == "late"


def test_crlf_and_lone_cr(work: Path) -> None:
    crlf = write(work / "crlf.jsonl", header(), user("1", 1), assistant("2", 2), eol="\r\n")
    assert info_of(crlf)["allMessagesText"] == "1 2"
    cr_only = write(work / "cr.jsonl", header(), user("1", 1), assistant("2", 2), eol="\r")
    assert info_of(cr_only)["messageCount"] == 2
    broken = '{"type":"message","message":{"role":"user",\r"content":"split"}}'
    assert info_of(write(work / "lone.jsonl", header(), broken, user("kept")))["allMessagesText"] == "kept"


def test_unicode_line_separators_do_not_split(work: Path) -> None:
    path = write(work / "u.jsonl", header(), user("a\u2028b\u2029c\u0085d"))
    assert info_of(path)["firstMessage"] == "a\u2028b\u2029c\u0085d"


@pytest.mark.parametrize("chunk_size", [1, 7, 64])
def test_lines_spanning_read_chunks(work: Path, monkeypatch: pytest.MonkeyPatch, chunk_size: int) -> None:
    reference = write(
        work / "r.jsonl",
        header(),
        user("first", 5),
        assistant("x" * 300, 6),
        session_info_entry("n"),
        eol="\r\n",
    )
    expected = info_of(reference)
    monkeypatch.setattr(listing, "_CHUNK_SIZE", chunk_size)
    assert info_of(reference) == expected  # also a "\r" at the end of one chunk, "\n" at the next


def test_fifo_named_jsonl_is_not_listed(work: Path) -> None:
    fifo = work / "s" / "pipe.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    write(work / "s" / "real.jsonl", header("real"))
    assert ids(list_sessions("/proj", str(work / "s"))) == ["real"]


# ---- 90, 91, 96: list -----------------------------------------------------------------------------


def test_list_creates_the_default_dir(work: Path) -> None:
    default = work / "agent" / "sessions" / "--proj--"
    assert not default.exists()
    assert list_sessions("/proj") == []
    assert default.is_dir()


def test_list_missing_custom_dir_is_empty_and_not_created(work: Path) -> None:
    assert list_sessions("/proj", str(work / "nope")) == []
    assert not (work / "nope").exists()


def test_list_considers_only_jsonl_files(work: Path) -> None:
    d = work / "s"
    write(d / "a.jsonl", header("a"))
    write(d / "b.txt", header("b"))
    write(d / "c.jsonl.bak", header("c"))
    (d / "dir.jsonl").mkdir()
    assert ids(list_sessions("/proj", str(d))) == ["a"]


def test_list_filters_by_cwd_only_for_a_custom_dir(work: Path) -> None:
    default = work / "agent" / "sessions" / "--proj--"
    write(default / "1.jsonl", header("here", "/proj"), user("x", 1700000000001))
    write(default / "2.jsonl", header("elsewhere", "/elsewhere"), user("y", 1700000000002))
    write(default / "3.jsonl", header("empty-cwd", ""), user("z", 1700000000003))
    everything = ["empty-cwd", "elsewhere", "here"]
    assert ids(list_sessions("/proj")) == everything
    assert ids(list_sessions("/proj", str(default))) == everything  # equal to the default: no filter
    assert ids(list_sessions("/proj/", str(default))) == everything  # cwd resolves to the same default
    # pi 0.86.1 compares the directory strings: a trailing slash or a relative spelling is a custom
    # directory; pi 1.6.0 compares the resolved paths (pathsEqual)
    assert ids(list_sessions("/proj", str(default) + "/", pi="0.86.1")) == ["here"]
    assert ids(list_sessions("/proj", str(default) + "/", pi="1.6.0")) == everything
    relative = os.path.relpath(default, os.getcwd())
    assert ids(list_sessions("/proj", relative, pi="0.86.1")) == ["here"]
    assert ids(list_sessions("/proj", relative, pi="1.6.0")) == everything
    custom = work / "custom"
    write(custom / "a.jsonl", header("a", "/proj/sub/.."), user("x", 1))
    write(custom / "b.jsonl", header("b", "/other"), user("x", 2))
    write(custom / "c.jsonl", header("c", 5), user("x", 3))
    assert ids(list_sessions("/proj", str(custom))) == ["a"]
    assert ids(list_sessions("/other", str(custom))) == ["b"]


def test_list_with_tilde_dir(work: Path) -> None:
    write(work / "home" / "s" / "a.jsonl", header("a"))
    [info] = list_sessions("/proj", "~/s")
    assert info.path == str(work / "home" / "s" / "a.jsonl")


def test_list_relative_dir_keeps_relative_paths(work: Path) -> None:
    write(work / "rel" / "a.jsonl", header("a"))
    assert [info.path for info in list_sessions("/proj", "./rel/")] == ["rel/a.jsonl"]


def test_list_sorts_by_modified_then_name_descending_by_icu(work: Path) -> None:
    d = work / "s"
    names = ["a", "B", "_x", "x10", "x9", "A-x", "a_x", "b"]
    for name in names:
        write(d / f"{name}.jsonl", header(name))  # all modified = header time
    write(d / "newest.jsonl", header("newest"), user("n", 1800000000000))
    # ICU (en-US), file names ascending: _x.jsonl < a_x.jsonl < A-x.jsonl < a.jsonl < b.jsonl < B.jsonl
    # < x10.jsonl < x9.jsonl (the "." of ".jsonl" sorts after "_" and "-")
    assert ids(list_sessions("/proj", str(d))) == ["newest", "x9", "x10", "B", "b", "a", "A-x", "a_x", "_x"]


def test_invalid_modified_dates_sort_like_v8(work: Path) -> None:
    d = work / "s"
    write(d / "a.jsonl", header("a"), user("x", 1e20))  # modified: invalid date
    write(d / "b.jsonl", header("b"), user("x", 1700000000000))
    write(d / "c.jsonl", header("c"), user("x", 1800000000000))
    # comparisons with NaN are "not less" in V8's TimSort (and CPython's)
    assert ids(list_sessions("/proj", str(d))) == ["c", "b", "a"]


# ---- 97, 98: listAll ---------------------------------------------------------------------------------


def test_list_all_reads_subdirectories_and_symlinks_of_the_root(work: Path) -> None:
    root = work / "agent" / "sessions"
    write(root / "--a--" / "x.jsonl", header("la-x", "/a"), user("x", 1700000000100))
    write(root / "--a--" / "y.jsonl", header("la-y", "/a"), user("y", 1700000000300))
    write(root / "--b--" / "z.jsonl", header("la-z", "/b"), user("z", 1700000000200))
    write(root / "top.jsonl", header("la-top", "/"), user("top", 1700000000400))
    write(work / "elsewhere" / "l.jsonl", header("linked"), user("l", 1700000000050))
    os.symlink(work / "elsewhere", root / "link")
    write(work / "f.jsonl", header("file-link"))
    os.symlink(work / "f.jsonl", root / "file-link")  # readdir of a file fails: contributes nothing
    assert ids(list_all_sessions()) == ["la-y", "la-z", "la-x", "linked"]
    assert ids(list_all_sessions(str(root))) == ["la-top"]  # a directory argument is not descended
    assert ids(list_all_sessions(str(root / "--b--"))) == ["la-z"]
    assert ids(list_all_sessions("")) == ids(list_all_sessions())  # "" is no directory: the root


def test_list_all_does_not_filter_by_cwd(work: Path) -> None:
    d = work / "s"
    write(d / "a.jsonl", header("a", "/one"))
    write(d / "b.jsonl", header("b", "/two"))
    assert sorted(ids(list_all_sessions(str(d)))) == ["a", "b"]


def test_list_all_without_root_is_empty(work: Path) -> None:
    assert list_all_sessions() == []
    assert not (work / "agent").exists()


def test_list_all_ties_keep_candidate_order_mtime_then_base_name(work: Path) -> None:
    root = work / "agent" / "sessions"
    for directory, name, mtime in [
        ("--d1--", "b", 2),
        ("--d2--", "a", 2),
        ("--d2--", "c", 1),
        ("--d1--", "a", 2),
    ]:
        write(root / directory / f"{name}.jsonl", header(f"{directory}{name}"), mtime_ms=mtime * 1000)
    # equal modified (header time): newest mtime first, then base name descending, then readdir order
    assert ids(list_all_sessions()) == ["--d1--b", "--d1--a", "--d2--a", "--d2--c"]


# ---- 99: progress and abort ------------------------------------------------------------------------


def test_list_progress_passes_partials_at_1_every_10_and_the_end(work: Path) -> None:
    d = work / "s"
    for i in range(23):
        cwd = "/proj" if i % 2 == 0 else "/other"
        write(d / f"f{i:02d}.jsonl", header(f"s{i:02d}", cwd), user("x", 1700000000000 + i))
    write(d / "bad.jsonl", "junk")
    calls: list[tuple[int, int, Any]] = []
    result = list_sessions(
        "/proj", str(d), lambda loaded, total, partial: calls.append((loaded, total, partial))
    )
    assert [c[:2] for c in calls] == [(n, 24) for n in range(1, 25)]
    published = {c[0]: c[2] for c in calls if c[2] is not None}
    assert sorted(published) == [1, 10, 20, 24]
    # names descending: f22, f21, ..., f00, bad; partials are sorted by modified and filtered by cwd
    assert ids(published[1]) == ["s22"]
    assert ids(published[10]) == ["s22", "s20", "s18", "s16", "s14"]
    assert published[24] == result
    assert len(result) == 12


def test_list_all_root_progress_publishes_first_every_100_and_end(work: Path) -> None:
    root = work / "agent" / "sessions" / "--p--"
    for i in range(205):
        write(root / f"f{i:03d}.jsonl", header(f"s{i}"), mtime_ms=1_600_000_000_000 + i)
    calls: list[tuple[int, int, Any]] = []
    list_all_sessions(lambda loaded, total, partial: calls.append((loaded, total, partial)))
    assert len(calls) == 205 and all(total == 205 for _, total, _ in calls)
    assert [loaded for loaded, _, partial in calls if partial is not None] == [1, 100, 200, 205]


def test_aborted_signal_raises(work: Path) -> None:
    signal = AbortSignal()
    signal.abort()
    write(work / "s" / "a.jsonl", header("a"))
    with pytest.raises(AbortError, match=r"^This operation was aborted$"):
        list_sessions("/proj", str(work / "s"), None, signal)
    with pytest.raises(AbortError):
        list_all_sessions(ABSENT, signal)  # listAll(undefined, signal)
    with pytest.raises(AbortError):
        list_all_sessions(str(work / "s"), None, signal)
    with pytest.raises(AbortError):
        list_all_sessions(lambda *_: None, signal)  # listAll(onProgress, signal)
    # a signal as the first argument is not a directory, not a callback: ignored (scenario list-03)
    assert list_all_sessions(signal) == []
    # list computes (and creates) the default directory before it checks the signal, like the reference
    with pytest.raises(AbortError):
        list_sessions("/fresh", ABSENT, None, signal)
    assert (work / "agent" / "sessions" / "--fresh--").is_dir()


def test_abort_during_listing_raises(work: Path) -> None:
    d = work / "s"
    for i in range(5):
        write(d / f"{i}.jsonl", header(f"s{i}"))
    signal = AbortSignal()
    seen: list[int] = []

    def on_progress(loaded: int, total: int, partial: Any) -> None:
        seen.append(loaded)
        if loaded == 2:
            signal.abort()

    with pytest.raises(AbortError):
        list_sessions("/proj", str(d), on_progress, signal)
    assert seen == [1, 2]


def test_a_failing_progress_callback_gives_an_empty_list(work: Path) -> None:
    write(work / "s" / "a.jsonl", header("a"))

    def boom(*_: Any) -> None:
        raise RuntimeError("callback failed")

    assert list_sessions("/proj", str(work / "s"), boom) == []  # the reference's catch-all


# ---- 100: findById ----------------------------------------------------------------------------------


def test_find_by_id(work: Path) -> None:
    s = work / "s"
    write(s / "1.jsonl", header("sess-1"))
    write(s / "2.jsonl", "", "not json", header("late-header"))
    write(s / "3.jsonl", header("other-cwd", "/other"))
    write(s / "4.jsonl", user("x"), header("not-first"))
    write(work / "agent" / "sessions" / "--proj--" / "d.jsonl", header("in-default", "/anything"))
    assert find_by_id("/proj", "sess-1", str(s)) == str(s / "1.jsonl")
    assert find_by_id("/proj", "sess", str(s)) is ABSENT  # exact match only
    assert find_by_id("/proj", "late-header", str(s)) == str(s / "2.jsonl")
    assert find_by_id("/proj", "other-cwd", str(s)) is ABSENT  # custom dir: filtered by cwd
    assert find_by_id("/other", "other-cwd", str(s)) == str(s / "3.jsonl")
    assert find_by_id("/proj", "not-first", str(s)) is ABSENT
    assert find_by_id("/proj", "nothing", str(work / "missing-dir")) is ABSENT
    assert find_by_id("/proj", "in-default") == str(work / "agent" / "sessions" / "--proj--" / "d.jsonl")


def test_find_by_id_takes_the_first_match_in_byte_order(work: Path) -> None:
    s = work / "s"
    for name in ["b", "B", "a", "_"]:
        write(s / f"{name}.jsonl", header("same"))
    assert find_by_id("/proj", "same", str(s)) == str(s / "B.jsonl")  # Node's readdir is strcmp-sorted


def test_find_by_id_with_undefined_id_matches_a_non_session_file(work: Path) -> None:
    s = work / "s"
    write(s / "a.jsonl", header("a"))
    write(s / "b.jsonl", "junk")  # header?.id is undefined, which equals an undefined id
    assert find_by_id("/proj", ABSENT, str(s)) is ABSENT  # filtering reads the cwd of null: throws
    assert find_by_id("/proj", ABSENT, str(work / "agent" / "sessions" / "--proj--")) is ABSENT
    d = work / "agent" / "sessions" / "--proj--"
    write(d / "x.jsonl", "junk")
    assert find_by_id("/proj", ABSENT) == str(d / "x.jsonl")


# ---- 101 and continueRecent: the most recent session ----------------------------------------------------


def test_find_most_recent_session(work: Path) -> None:
    s = work / "s"
    write(s / "a.jsonl", header("a", "/other"), mtime_ms=1700000300000)
    write(s / "b.jsonl", header("b", "/proj"), mtime_ms=1700000200000)
    write(s / "c.txt", "x", mtime_ms=1700000400000)
    bom = s / "newest-bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(header("bom")).encode() + b"\n")
    os.utime(bom, ns=(1700000500000 * 10**6,) * 2)
    (work / "empty").mkdir()
    assert find_most_recent_session(str(s)) == str(s / "a.jsonl")
    assert find_most_recent_session(str(s), "/proj") == str(s / "b.jsonl")
    assert find_most_recent_session(str(s), "/none") is None
    assert find_most_recent_session(str(work / "empty")) is None
    assert find_most_recent_session(str(work / "missing")) is None
    assert most_recent_candidate(str(s), "/proj") == str(s / "b.jsonl")
    assert most_recent_candidate(str(s), None) == str(s / "a.jsonl")


def test_most_recent_ties_keep_byte_order(work: Path) -> None:
    s = work / "s"
    for name in ["b", "a", "C"]:
        write(s / f"{name}.jsonl", header(name), mtime_ms=1700000000000)
    assert find_most_recent_session(str(s)) == str(s / "C.jsonl")


def test_session_dir_for(work: Path) -> None:
    default = str(work / "agent" / "sessions" / "--proj--")
    assert discovery.session_dir_for("/proj", ABSENT) == (default, False)
    assert discovery.session_dir_for("/proj", None) == (default, False)  # passed, but equal to the default
    assert discovery.session_dir_for("/proj", "") == (default, False)
    assert discovery.session_dir_for("/proj", default + "/", "0.86.1") == (default + "/", True)
    assert discovery.session_dir_for("/proj", default + "/", "1.6.0") == (default + "/", False)
    assert discovery.session_dir_for("/proj", default + "/./x/..") == (default + "/./x/..", False)
    assert discovery.session_dir_for("/proj", "~/x") == (str(work / "home" / "x"), True)


# ---- 48: header discovery ------------------------------------------------------------------------------


def test_discover_header(work: Path) -> None:
    assert discover_header(write(work / "a.jsonl", "", "junk", "false", header("a"), user("x"))) == header(
        "a"
    )
    assert discover_header(write(work / "b.jsonl", user("x"), header("b"))) is None
    assert discover_header(write(work / "c.jsonl", {"type": "session", "id": 5})) is None
    assert discover_header(write(work / "d.jsonl", header("d"), final_eol=False)) == header("d")
    assert discover_header(write(work / "e.jsonl")) is None
    crlf = discover_header(write(work / "f.jsonl", header("f"), eol="\r\n"))
    assert crlf == header("f")


def test_discover_header_gives_up_after_one_mib(work: Path) -> None:
    line = json.dumps(header("h"))
    exactly = work / "exact.jsonl"
    exactly.write_text(" " * (MAX_HEADER_SCAN_BYTES - len(line)) + line)  # ends exactly at the limit
    assert discover_header(str(exactly)) == header("h")
    (work / "big").mkdir()
    over = work / "big" / "over.jsonl"
    over.write_text(" " * (MAX_HEADER_SCAN_BYTES - len(line)) + line + "\n")  # one byte more
    with pytest.raises(SessionHeaderScanLimitError, match="exceeds 1048576-byte scan limit"):
        discover_header(str(over))
    assert discovery.discover_header_quietly(str(over)) is None
    assert find_by_id("/proj", "h", str(work / "big")) is ABSENT  # invisible to discovery ...
    assert find_most_recent_session(str(work / "big")) is None
    assert ids(list_sessions("/proj", str(work / "big"))) == ["h"]  # ... but listed


def test_discover_header_of_a_directory_raises_eisdir(work: Path) -> None:
    (work / "d.jsonl").mkdir()
    with pytest.raises(FsError) as err:
        discover_header(str(work / "d.jsonl"))
    assert (err.value.code, str(err.value)) == ("EISDIR", "EISDIR: illegal operation on a directory, read")
    assert stat.S_ISDIR(os.stat(work / "d.jsonl").st_mode)


# ---- beyond the reference: how much text a listing keeps ---------------------------------------


def _long_session(work: Path, name: str = "long.jsonl") -> str:
    return write(
        work / name,
        header(),
        assistant("a" * 30),
        user("first question " * 4),
        user([{"type": "text", "text": "x" * 50}]),
    )


def test_text_options_keep_everything_by_default(work: Path) -> None:
    path = _long_session(work)
    assert session_info(path, text=listing.ALL_TEXT) == session_info(path)
    assert "textTruncated" not in info_of(path)


@pytest.mark.parametrize("max_chars", [0, 1, 29, 30, 31, 45, 90, 91, 92, 200])
def test_max_chars_cuts_exactly_the_reference_text(work: Path, max_chars: int) -> None:
    path = _long_session(work)
    whole = info_of(path)
    info = session_info(path, text=listing.TextOptions(max_chars=max_chars))
    assert info is not None
    cut = info.to_json()
    assert cut["allMessagesText"] == whole["allMessagesText"][:max_chars]
    assert cut["firstMessage"] == whole["firstMessage"][:max_chars]
    cut_anything = len(whole["allMessagesText"]) > max_chars or len(whole["firstMessage"]) > max_chars
    assert cut.get("textTruncated", False) is cut_anything
    assert {
        k: v for k, v in cut.items() if k not in ("allMessagesText", "firstMessage", "textTruncated")
    } == {k: v for k, v in whole.items() if k not in ("allMessagesText", "firstMessage")}


def test_texts_left_out_are_absent(work: Path) -> None:
    path = _long_session(work)
    first_only = session_info(path, text=listing.TextOptions(all_messages_text=False))
    assert first_only is not None and first_only.all_messages_text is ABSENT
    assert "allMessagesText" not in first_only.to_json()
    assert first_only.to_json()["firstMessage"] == "first question " * 4
    none = session_info(path, text=listing.TextOptions(first_message=False, all_messages_text=False))
    assert none is not None and {"firstMessage", "allMessagesText"}.isdisjoint(none.to_json())
    assert none.message_count == 3


def test_listings_pass_the_text_options_on(work: Path) -> None:
    directory = work / "sessions"
    for i in range(3):
        _long_session(directory, f"s{i}.jsonl")
    options = listing.TextOptions(first_message=False, max_chars=10)
    for infos in (
        list_sessions("/proj", str(directory), text=options),
        list_all_sessions(str(directory), text=options),
    ):
        assert len(infos) == 3
        assert all(
            i.first_message is ABSENT and len(i.all_messages_text) == 10 and i.text_truncated for i in infos
        )
    assert [i.path for i in list_all_sessions(str(directory), text=options)] == [
        i.path for i in list_all_sessions(str(directory))
    ]
