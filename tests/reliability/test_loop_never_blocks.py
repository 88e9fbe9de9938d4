"""The server's event loop never blocks: one session stuck delays no other (issue 20, 5-6, 9-10).

Every request on a session is a job on that session's queue, run by a worker thread; the loop only
parses, routes and answers. So while session A waits for a lock another process holds, opens a
200 MB file, searches a big tree, or while the language server reads a big file the editor did not
send, ``pi/getLeaf`` on session B answers within a second (it takes milliseconds; the work on A
takes seconds to forever, so a loaded machine cannot make these tests pass or fail by luck).
Files that would block an open (a FIFO) or never end (a device) are refused without being opened.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from file_locks import NEEDS_PROC_LOCKS, until_a_process_waits_for_the_lock_of
from reliability_helpers import check_session_file, new_session_file
from reliability_rpc import RawServer, file_uri

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, flock and /dev/zero as on Linux"),
]

BOUND = 1.0  # seconds pi/getLeaf on an idle session may take while another session is busy
PATH_REFUSED, REQUEST_CANCELLED, INVALID_PARAMS = -32010, -32800, -32602
USER = {"role": "user", "content": "hello", "timestamp": 1}
ROOT = Path(__file__).resolve().parents[2]


def _idle_session(server: RawServer, tmp_path: Path) -> str:
    return server.call("pi/open", {"path": new_session_file(tmp_path / "idle", cwd=str(tmp_path))})["session"]


def _leaf_time(server: RawServer, handle: str) -> float:
    started = time.monotonic()
    reply = server.request("pi/getLeaf", {"session": handle}, timeout=30)
    assert "result" in reply, reply
    return time.monotonic() - started


def _pending(server: RawServer, msg_id: int) -> bool:
    with server._cond:
        return msg_id not in server.replies


def _hold_lock(path: str) -> subprocess.Popen[str]:
    """Another process holding the file's flock (as a second sidecar or pi-session repair does)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'rb+')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "time.sleep(600)\n",
            path,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


@NEEDS_PROC_LOCKS
def test_a_foreign_lock_on_one_session_delays_no_other(server: RawServer, tmp_path: Path):
    idle = _idle_session(server, tmp_path)
    locked_file = new_session_file(tmp_path / "locked", cwd=str(tmp_path))
    locked = server.call("pi/open", {"path": locked_file})["session"]
    holder = _hold_lock(locked_file)
    try:
        append = server.send_request("pi/append", {"session": locked, "kind": "message", "message": USER})
        behind = server.send_request("pi/getLeaf", {"session": locked})
        until_a_process_waits_for_the_lock_of(locked_file)  # the append runs, and waits for the lock
        assert _leaf_time(server, idle) < BOUND
        assert _pending(server, append) and _pending(server, behind)  # A waits, in order
        # a request queued behind the stuck write can be given up at once
        server.notify("$/cancelRequest", {"id": behind})
        assert server.wait_reply(behind, timeout=5)["error"]["code"] == REQUEST_CANCELLED
        assert _pending(server, append)  # a write that started is never cancelled
        server.notify("$/cancelRequest", {"id": append})
        # (handled before the request sent after it is answered: a cancel answers at once)
        assert _leaf_time(server, idle) < BOUND
        assert _pending(server, append)
    finally:
        holder.kill()
        holder.wait()
    written = server.wait_reply(append, timeout=30)["result"]["id"]  # the lock is free: it is written
    check_session_file(locked_file, [written])


def _never_opened(fifo: Path) -> bool:
    """Nobody holds the FIFO open for reading (opening its write end without blocking fails)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as error:
        return error.errno == errno.ENXIO
    return False


def test_fifos_and_devices_are_refused_without_being_opened(server: RawServer, tmp_path: Path):
    idle = _idle_session(server, tmp_path)
    fifo = tmp_path / "2026-11-30T09-13-48-180Z_fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "2026-11-30T09-13-48-180Z_zero.jsonl"
    zero.symlink_to("/dev/zero")
    for path, kind in ((fifo, "FIFO"), (zero, "character device")):
        requests = [
            ("pi/open", {"path": str(path)}),
            ("pi/getLeaf", {"uri": file_uri(path)}),
            ("pi/forkFrom", {"sourcePath": str(path), "targetCwd": str(tmp_path)}),
            (
                "textDocument/hover",
                {"textDocument": {"uri": path.as_uri()}, "position": {"line": 0, "character": 0}},
            ),
            ("textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}),
        ]
        for method, params in requests:
            started = time.monotonic()
            reply = server.request(method, params, timeout=30)
            assert time.monotonic() - started < 5, (method, path)
            error = reply.get("error")
            assert error is not None and error["code"] == PATH_REFUSED, (method, reply)
            assert error["data"]["kind"] == kind and kind in error["message"]
        handle = server.call("pi/inMemory", {"cwd": str(tmp_path)})["session"]
        reply = server.request("pi/setSessionFile", {"session": handle, "path": str(path)})
        assert reply["error"]["code"] == PATH_REFUSED
    assert _never_opened(fifo)
    assert _leaf_time(server, idle) < BOUND


def test_a_held_file_replaced_by_a_fifo_is_gone_not_waited_on(server: RawServer, tmp_path: Path):
    """Another program renames a FIFO over the file of a held session (and of one addressed by
    uri): the watcher reports the file deleted without opening the FIFO, the session still answers
    from memory, and a write by uri is refused before anything opens it."""
    held = Path(new_session_file(tmp_path / "held", cwd=str(tmp_path)))
    by_uri = Path(new_session_file(tmp_path / "by-uri", cwd=str(tmp_path)))
    handle = server.call("pi/open", {"path": str(held)})["session"]
    leaf = server.call("pi/getLeaf", {"uri": file_uri(by_uri)})["leafId"]
    for path in (held, by_uri):
        fifo = path.with_suffix(".fifo")
        os.mkfifo(fifo)
        os.replace(fifo, path)
    changed = server.wait_notification("pi/didChange", lambda p: p.get("session") == handle, timeout=15)
    assert changed["kind"] == "deleted"
    assert _leaf_time(server, handle) < BOUND
    started = time.monotonic()
    message = {"role": "user", "content": "hi", "timestamp": 1}
    reply = server.request("pi/append", {"uri": file_uri(by_uri), "kind": "message", "message": message})
    assert time.monotonic() - started < 5 and reply["error"]["code"] == PATH_REFUSED, reply
    assert server.call("pi/getLeaf", {"uri": file_uri(by_uri)})["leafId"] == leaf
    assert _never_opened(held) and _never_opened(by_uri)


def test_an_append_by_handle_to_a_file_a_fifo_replaced_is_refused_unwritten(
    server: RawServer, tmp_path: Path
):
    """The appender of a held session reopens the path that now names a FIFO: it is refused
    (-32010) before a byte is written, where a line bigger than the pipe waited for a reader for
    good, holding the file's lock (a small one went into the pipe and answered ESPIPE). The
    session still answers, and the file put back and opened again takes appends."""
    held = Path(new_session_file(tmp_path / "held", cwd=str(tmp_path)))
    original = held.read_bytes()
    handle = server.call("pi/open", {"path": str(held)})["session"]
    fifo = held.with_suffix(".fifo")
    os.mkfifo(fifo)
    os.replace(fifo, held)
    big = {"role": "user", "content": "x" * 100_000, "timestamp": 1}  # more than a pipe holds
    reply = server.request("pi/append", {"session": handle, "kind": "message", "message": big}, timeout=10)
    assert reply["error"]["code"] == PATH_REFUSED and reply["error"]["data"]["kind"] == "FIFO", reply
    assert _never_opened(held)
    assert _leaf_time(server, handle) < BOUND
    held.unlink()
    held.write_bytes(original)
    again = server.call("pi/open", {"path": str(held)})["session"]
    small = {"role": "user", "content": "back", "timestamp": 1}
    added = server.call("pi/append", {"session": again, "kind": "message", "message": small}, timeout=10)
    assert held.read_bytes().startswith(original) and added["id"].encode() in held.read_bytes()


def _rename_fifo_over(path: Path) -> None:
    fifo = path.with_suffix(".fifo")
    os.mkfifo(fifo)
    os.replace(fifo, path)


def test_get_stats_of_a_held_session_whose_file_became_a_fifo_answers_from_memory(
    server: RawServer, tmp_path: Path
):
    """pi/getStats reads the assistant turns' usage from the file: a FIFO renamed over it is not
    opened (it waited for a writer, and every later request on the session behind it)."""
    held = Path(new_session_file(tmp_path / "held", cwd=str(tmp_path)))
    handle = server.call("pi/open", {"path": str(held)})["session"]
    _rename_fifo_over(held)
    changed = server.wait_notification("pi/didChange", lambda p: p.get("session") == handle, timeout=15)
    assert changed["kind"] == "deleted"
    stats = server.request("pi/getStats", {"session": handle}, timeout=5)
    assert stats["result"]["roles"] == {"user": 1, "assistant": 1}, stats
    assert _leaf_time(server, handle) < BOUND
    assert _never_opened(held)


def _bom_document(server: RawServer, path: Path) -> tuple[str, dict[str, Any]]:
    """``path`` (a session with a byte order mark) open in the editor, and its Fix All command
    (pi.session.repairFile: the mark is repaired in the file on disk)."""
    data = Path(new_session_file(path.parent / "source", cwd=str(path.parent))).read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + data)
    uri = path.as_uri()
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": data.decode()}},
    )
    actions = server.call(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fixAll.pi-session"], "triggerKind": 1},
        },
    )
    commands = [
        a["command"] for a in actions if a.get("command", {}).get("command") == "pi.session.repairFile"
    ]
    assert commands, actions
    return uri, commands[0]


def test_the_repair_of_a_document_whose_file_became_a_fifo_is_refused(server: RawServer, tmp_path: Path):
    path = tmp_path / "2026-11-30T09-13-48-180Z_bom.jsonl"
    uri, command = _bom_document(server, path)
    _rename_fifo_over(path)
    reply = server.request(
        "workspace/executeCommand",
        {"command": command["command"], "arguments": command["arguments"]},
        timeout=5,
    )
    result = reply["result"]
    assert result["applied"] is False and "FIFO" in result["reason"], reply
    shown = server.wait_notification("window/showMessage", lambda p: "FIFO" in p["message"], timeout=5)
    assert "nothing repaired" in shown["message"]
    hover = server.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}},
        timeout=5,
    )
    assert hover["result"] is not None
    assert _never_opened(path)


@pytest.mark.parametrize("replacement", ["FIFO", "/dev/zero"])
def test_a_followed_file_replaced_by_a_fifo_or_a_device_is_gone_not_read(
    server: RawServer, tmp_path: Path, replacement: str
):
    """A file the editor did not send is read from disk and followed as it changes: replaced by a
    FIFO (its read waited for a writer, for good) or a symlink to /dev/zero (read until memory ran
    out), it is gone, as a deleted file is: its problems are taken back, and a request about it is
    refused as for such a path never read (-32010), never opening it."""
    import psutil

    path = Path(new_session_file(tmp_path / "followed", cwd=str(tmp_path)))
    uri = path.as_uri()
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}}
    assert server.call("textDocument/hover", hover) is not None
    server.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)  # (as read)
    if replacement == "FIFO":
        _rename_fifo_over(path)
    else:
        link = path.with_suffix(".link")
        link.symlink_to(replacement)
        os.replace(link, path)
    server.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p["diagnostics"] == [], timeout=5
    )
    assert server.request("textDocument/hover", hover, timeout=5)["error"]["code"] == -32010
    symbols = server.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=5)
    assert symbols["error"]["code"] == -32010, symbols
    assert psutil.Process(server.process.pid).memory_info().rss < 500 << 20
    if replacement == "FIFO":
        assert _never_opened(path)


def _writer_waiting_on(fifo: Path) -> subprocess.Popen[bytes]:
    """A shell whose redirection opens the FIFO's write end, once it waits there for a reader (the
    kernel's wait for the other end of a FIFO, as /proc tells it)."""
    writer = subprocess.Popen(["sh", "-c", 'printf x > "$0"', str(fifo)])
    wchan = Path(f"/proc/{writer.pid}/wchan")
    deadline = time.monotonic() + 30
    while wchan.read_text() != "wait_for_partner":
        if writer.poll() is not None or time.monotonic() > deadline:
            writer.kill()
            pytest.skip("this system does not tell a process waiting to open a FIFO (/proc/PID/wchan)")
        time.sleep(0.01)
    return writer


def test_a_followed_file_replaced_by_a_fifo_a_writer_waits_on_leaves_the_writer_waiting(
    server: RawServer, tmp_path: Path
):
    """A FIFO is not opened even for an instant: a program waiting to write into it still waits
    after the server found it (an open and close at once would let the writer's open through, and
    break its write)."""
    path = Path(new_session_file(tmp_path / "followed", cwd=str(tmp_path)))
    uri = path.as_uri()
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 3}}
    assert server.call("textDocument/hover", hover) is not None
    server.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    fifo = path.with_suffix(".fifo")
    os.mkfifo(fifo)
    writer = _writer_waiting_on(fifo)
    try:
        os.replace(fifo, path)
        server.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p["diagnostics"] == [], timeout=5
        )
        assert server.request("textDocument/hover", hover, timeout=5)["error"]["code"] == -32010
        assert writer.poll() is None, "the writer's open was let through: the FIFO was opened"
    finally:
        writer.kill()
        writer.wait()


def _big_session(path: Path, size_mb: int) -> int:
    search_path = list(sys.path)
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_sidecar import generate_session
    finally:
        sys.path[:] = search_path  # (bench_sidecar puts entries of its own before ours as it is imported)
    return generate_session(path, size_mb)


@pytest.mark.slow
def test_a_200_mb_open_and_a_big_search_delay_no_other_session(server: RawServer, tmp_path: Path, figures):
    idle = _idle_session(server, tmp_path)
    big = tmp_path / "big.jsonl"
    _big_session(big, 200)
    opening = server.send_request("pi/open", {"path": str(big)})
    waited = _leaf_time(server, idle)
    assert waited < BOUND and _pending(server, opening)
    handle = server.wait_reply(opening, timeout=300)["result"]["session"]
    # pi's /tree search over every entry, none matching (so every entry's text is read)
    words = "the forecast parser reads daily temperatures and caches them zzzz"
    search = server.send_request(
        "pi/getTree", {"session": handle, "search": words, "filter": "all", "limit": 10}
    )
    during_search = _leaf_time(server, idle)
    assert during_search < BOUND and _pending(server, search)
    assert server.wait_reply(search, timeout=300)["result"]["total"] == 0
    figures["event loop: pi/getLeaf on an idle session during a 200 MB open / a search of it"] = (
        f"{waited * 1000:.0f} ms / {during_search * 1000:.0f} ms"
    )


@pytest.mark.slow
def test_a_big_file_the_editor_did_not_send_delays_no_other_session(server: RawServer, tmp_path: Path):
    idle = _idle_session(server, tmp_path)
    big = tmp_path / "2026-11-30T09-13-48-180Z_unsent.jsonl"
    _big_session(big, 185)
    hover = server.send_request(
        "textDocument/hover", {"textDocument": {"uri": big.as_uri()}, "position": {"line": 3, "character": 5}}
    )
    assert _leaf_time(server, idle) < BOUND and _pending(server, hover)
    assert "result" in server.wait_reply(hover, timeout=300)


def test_search_words_are_bounded(server: RawServer, tmp_path: Path):
    source = ROOT / "pi_session_server" / "examples" / "example-session.jsonl"
    path = tmp_path / "example.jsonl"
    path.write_bytes(source.read_bytes())
    handle = server.call("pi/open", {"path": str(path)})["session"]
    for search in (" ".join(["forecast"] * 100_000), " ".join(f"w{i}" for i in range(33))):
        started = time.monotonic()
        reply = server.request("pi/getTree", {"session": handle, "search": search})
        assert time.monotonic() - started < 5
        assert reply["error"]["code"] == INVALID_PARAMS and "search" in reply["error"]["message"]
    # a word given many times counts once
    found = server.call(
        "pi/getTree", {"session": handle, "search": " ".join(["forecast"] * 100), "filter": "all"}
    )
    assert (
        found["nodes"]
        == server.call("pi/getTree", {"session": handle, "search": "forecast", "filter": "all"})["nodes"]
    )
    assert found["nodes"]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's memory from /proc")
def test_requests_during_the_analysis_of_a_big_document_leave_nothing_behind(tmp_path: Path):
    """Requests about a document sent while it is analysed (2M characters and more) wait in its
    queue and are answered; nothing of them stays once they are (they used to stay forever: two MB
    a round, without end). The first ten rounds warm the allocator up (it grows in steps, then
    stays); the next ten must not grow the server by as much as the leak did. One malloc arena: the
    figure is then the server's own growth, not how glibc spreads blocks over its threads."""
    import psutil
    from builders import generate_session

    text = generate_session(2_400_000, seed=5).decode()
    uri = "file:///tmp/pi-leak-check/2026-11-30T09-13-48-180Z_big.jsonl"
    server = RawServer(tmp_path, env={"MALLOC_ARENA_MAX": "1"})
    server.initialize()
    process = psutil.Process(server.process.pid)
    sizes = []
    for round_ in range(20):
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "pi-session", "version": round_, "text": text}},
        )
        asked = [
            server.send_request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}),
            server.send_request(
                "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 5}}
            ),
            server.send_request("textDocument/foldingRange", {"textDocument": {"uri": uri}}),
        ]
        for msg_id in asked:
            assert "result" in server.wait_reply(msg_id, timeout=120)
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        server.call("pi/sessions", {})  # the close went before this
        sizes.append(process.memory_info().rss)
    server.kill()
    grown = sizes[-1] - sizes[9]
    assert grown < 10 << 20, f"ten rounds grew the server by {grown >> 20} MB: {[s >> 20 for s in sizes]}"


def test_requests_sent_before_shutdown_are_answered_before_it(server: RawServer, tmp_path: Path):
    path = new_session_file(tmp_path / "s", cwd=str(tmp_path))
    handle = server.call("pi/open", {"path": path})["session"]
    sent = [
        server.send_request("pi/append", {"session": handle, "kind": "message", "message": USER})
        for _ in range(300)
    ]
    shutdown = server.send_request("shutdown")
    assert server.wait_reply(shutdown, timeout=60).get("result") is None
    with server._cond:  # every append was answered before shutdown was
        answered = [server.replies.get(msg_id) for msg_id in sent]
    assert all(reply is not None and "result" in reply for reply in answered)
    check_session_file(path, [reply["result"]["id"] for reply in answered if reply])
