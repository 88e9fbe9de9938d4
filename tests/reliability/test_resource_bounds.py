"""Resource bounds: the server's memory (RSS of the real process, peak per request) when a client
opens a very large session, pages through it, asks for its whole tree, or lists thousands of
sessions. The figures behind the limits are in docs/GUARANTEES.md ("Resource bounds").

Peaks are read from /proc/<pid>/status (VmHWM), reset before each request through
/proc/<pid>/clear_refs; psutil gives the steady RSS.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from reliability_helpers import HEADER, TS, chain_file, new_session_file
from reliability_rpc import RawServer

from pi_session_server.session import SessionManager

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for peak memory"),
]

MB = 1 << 20


class Memory:
    def __init__(self, pid: int):
        self.pid = pid
        self.process = psutil.Process(pid)

    def rss(self) -> int:
        return int(self.process.memory_info().rss)

    def reset_peak(self) -> None:
        # without it the peak counts from the start of the process: only stricter
        with contextlib.suppress(OSError):
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")

    def peak(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return self.rss()


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[tuple[RawServer, Memory]]:
    server = RawServer(tmp_path)
    server.initialize()
    yield server, Memory(server.process.pid)
    assert server.alive(), server.stderr_text()[-3000:]
    server.close()


def _measure(
    server: RawServer, memory: Memory, method: str, params: dict, timeout: float = 300
) -> tuple[dict, int]:
    """(reply, peak RSS during the request minus RSS before it)."""
    before = memory.rss()
    memory.reset_peak()
    reply = server.request(method, params, timeout=timeout)
    return reply, memory.peak() - before


def bodies_file(path: Path, count: int, size: int) -> Path:
    with open(path, "wb") as f:
        f.write(HEADER)
        parent = "null"
        for i in range(count):
            f.write(
                f'{{"type":"message","id":"b{i:07d}","parentId":{parent},"timestamp":"{TS}","message":{{"role":"user","content":"'.encode()
                + b"z" * size
                + b'","timestamp":1}}\n'
            )
            parent = f'"b{i:07d}"'
    return path


@pytest.mark.slow
def test_large_bodies_are_not_held_in_memory(tmp_path: Path, srv, figures):
    server, memory = srv
    path = bodies_file(tmp_path / "bodies.jsonl", 20, 10 * MB)
    size = path.stat().st_size
    start = memory.rss()
    handle = server.call("pi/open", {"path": str(path)}, timeout=300)["session"]
    held = memory.rss() - start
    reply, tree_peak = _measure(server, memory, "pi/getTree", {"session": handle})
    assert len(reply["result"]["nodes"]) == 20
    reply, page_peak = _measure(server, memory, "pi/getEntries", {"session": handle, "limit": 1})
    assert len(reply["result"]["entries"]) == 1
    assert held < size // 8, f"opening a {size // MB} MB session holds {held // MB} MB"
    assert tree_peak < size // 2, f"the tree of 20 entries of 10 MB peaked at +{tree_peak // MB} MB"
    assert page_peak < size // 2, f"one page of one entry peaked at +{page_peak // MB} MB"
    figures["memory: 200 MB session of 10 MB bodies: held after open / getTree peak / 1-entry page peak"] = (
        f"+{held // MB} MB / +{tree_peak // MB} MB / +{page_peak // MB} MB"
    )


@pytest.fixture(scope="module")
def big_chain(tmp_path_factory: pytest.TempPathFactory, long_run: bool) -> tuple[Path, int]:
    n = 1_000_000 if long_run else 200_000
    return chain_file(tmp_path_factory.mktemp("chain") / "chain.jsonl", n), n


def test_a_200k_entry_session_opens_and_pages_in_bounded_memory(big_chain, srv, figures):
    server, memory = srv
    path, n = big_chain
    start = memory.rss()
    handle = server.call("pi/open", {"path": str(path)}, timeout=600)["session"]
    held = memory.rss() - start
    assert held < 1536 * n, f"{held / n:.0f} bytes held per entry"
    worst = 0
    offset = 0
    for _ in range(20):
        params = {"session": handle, "offset": offset, "limit": 1000}
        reply, peak = _measure(server, memory, "pi/getEntries", params)
        page = reply["result"]
        assert len(page["entries"]) == 1000 and page["total"] == n
        offset += len(page["entries"])
        worst = max(worst, peak)
    assert worst < 64 * MB, f"a page of 1000 entries peaked at +{worst // MB} MB"
    figures[
        f"memory: {n}-entry session ({path.stat().st_size // MB} MB): held after open / 1000-entry page peak"
    ] = f"+{held // MB} MB ({held // n} B per entry) / +{worst // MB} MB"


@pytest.mark.slow
def test_a_huge_tree_request_is_bounded_or_refused(big_chain, srv, figures):
    server, memory = srv
    path, n = big_chain
    size = path.stat().st_size
    handle = server.call("pi/open", {"path": str(path)}, timeout=600)["session"]
    reply, peak = _measure(server, memory, "pi/getTree", {"session": handle, "form": "flat"}, timeout=600)
    if "error" in reply:
        documented = {e["code"] for e in _protocol_method("pi/getTree").get("errors", [])}
        assert reply["error"]["code"] in documented, reply["error"]
    else:
        assert peak < 2 * size, (
            f"the whole tree of {n} entries peaked at +{peak // MB} MB for a {size // MB} MB file"
        )
    # what a front end does instead: a page of the flat form
    params = {"session": handle, "offset": n // 2, "limit": 10_000}
    before = memory.rss()
    reply, page_peak = _measure(server, memory, "pi/getTree", params, timeout=600)
    held = memory.rss() - before  # the walk the server keeps for the pages that follow
    page = reply["result"]
    assert len(page["nodes"]) == 10_000 and page["total"] == n and page["nodes"][0]["depth"] == n // 2
    assert page_peak < 2 * size, f"a page of 10,000 nodes peaked at +{page_peak // MB} MB"
    assert held < 2 * size, f"between two pages the server held +{held // MB} MB"
    params["offset"] = page["nextOffset"]
    reply, next_peak = _measure(server, memory, "pi/getTree", params, timeout=600)
    assert reply["result"]["nodes"][0]["depth"] == n // 2 + 10_000
    assert next_peak < page_peak, f"the next page peaked at +{next_peak // MB} MB"
    figures[
        f"memory: pi/getTree flat of {n} entries: refusal peak / 10,000-node page peak / "
        "held until the next page / next page peak"
    ] = f"+{peak // MB} MB / +{page_peak // MB} MB / +{held // MB} MB / +{next_peak // MB} MB"


def _protocol_method(name: str) -> dict:
    doc = json.loads(
        (Path(__file__).resolve().parents[2] / "protocol" / "pi-session.openrpc.json").read_text()
    )
    return next(m for m in doc["methods"] if m["name"] == name)


def test_listing_thousands_of_sessions(tmp_path: Path, srv, long_run: bool, figures):
    server, memory = srv
    count = 20_000 if long_run else 3_000
    template = Path(new_session_file(tmp_path / "one", cwd="/proj")).read_bytes()
    many = tmp_path / "many"
    many.mkdir()
    for i in range(count):
        (many / f"2026-01-01T00-00-00-000Z_{i:06d}.jsonl").write_bytes(template)
    reply, peak = _measure(server, memory, "pi/listAll", {"sessionDir": str(many)})
    assert len(reply["result"]) == count
    reply_bytes = len(json.dumps(reply["result"]))
    assert peak < 32 * MB + 16 * 1024 * count, f"listing {count} sessions peaked at +{peak // MB} MB"
    reply, _list_peak = _measure(server, memory, "pi/list", {"cwd": "/proj", "sessionDir": str(many)})
    assert len(reply["result"]) == count
    figures[f"memory: pi/listAll of {count} small sessions: peak / reply size"] = (
        f"+{peak // MB} MB / {reply_bytes // 1024} KB"
    )


def test_listing_sessions_with_much_text_is_bounded(tmp_path: Path, srv, figures):
    """The reference's SessionInfo carries all text (the default); a front end asks for a bounded
    amount with `maxTextChars` (or `text`), and every file is still read whole."""
    server, memory = srv
    manager = SessionManager.create("/p", str(tmp_path / "one"))
    manager.append_message({"role": "user", "content": "q" * (512 << 10), "timestamp": 1})
    manager.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a" * (512 << 10)}],
            "provider": "p",
            "model": "m",
            "timestamp": 2,
        }
    )
    data = Path(manager.get_session_file()).read_bytes()
    many = tmp_path / "many"
    many.mkdir()
    for i in range(100):
        (many / f"2026-01-01T00-00-00-000Z_{i:06d}.jsonl").write_bytes(data)
    total = 100 * len(data)
    params = {"sessionDir": str(many), "maxTextChars": 1000}
    reply, peak = _measure(server, memory, "pi/listAll", params)
    sessions = reply["result"]
    reply_bytes = len(json.dumps(sessions))
    figures[
        "memory: pi/listAll (maxTextChars 1000) of 100 sessions with 1 MB of text each: peak / reply size"
    ] = f"+{peak // MB} MB / {reply_bytes // 1024} KB"
    assert len(sessions) == 100 and all(s["messageCount"] == 2 and s["textTruncated"] for s in sessions)
    assert all(len(s["allMessagesText"]) == 1000 and s["firstMessage"] == "q" * 1000 for s in sessions)
    assert peak < total // 2, f"listing {total // MB} MB of sessions peaked at +{peak // MB} MB"
    reply, page_peak = _measure(server, memory, "pi/listAll", {**params, "text": "none", "limit": 10})
    page = reply["result"]
    assert len(page["sessions"]) == 10 and page["total"] == 100 and page["nextOffset"] == 10
    assert all("allMessagesText" not in s and "firstMessage" not in s for s in page["sessions"])
    assert page_peak < total // 2, f"a page of 10 sessions peaked at +{page_peak // MB} MB"
    # a page with the whole text (the default): only the page's sessions have their text read
    reply, text_page_peak = _measure(server, memory, "pi/listAll", {"sessionDir": str(many), "limit": 10})
    page = reply["result"]
    assert len(page["sessions"]) == 10 and page["total"] == 100
    assert all(len(s["allMessagesText"]) == 2 * (512 << 10) + 1 for s in page["sessions"])
    assert text_page_peak < total // 2, f"a page of 10 with all text peaked at +{text_page_peak // MB} MB"
    figures["memory: pi/listAll page of 10 (all text) of 100 sessions with 1 MB of text each: peak"] = (
        f"+{text_page_peak // MB} MB"
    )


# Runs the command as its child and writes the child's peak RSS to argv[1]. A process forked from
# this (big) test process starts with the parent's pages counted in its peak RSS, which exec does
# not reset: measured directly, the command's peak could never fall below this process's size.
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(done.returncode)"
)


def _check_peak_rss(*paths: Path, command: tuple[str, ...] = ("check", "-q")) -> tuple[int, str]:
    """(peak RSS of a `pi-session check` (or other ``command``) process, its output)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _PEAK_OF_CHILD,
                peak.name,
                sys.executable,
                "-m",
                "pi_session_server",
                *command,
                *map(str, paths),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=600,
        )
        return int(peak.read()) * 1024, done.stdout.decode("utf-8", "replace")


def test_checking_a_big_session_holds_its_line_facts_not_its_bytes(tmp_path: Path, figures):
    # 12 lines of 10 MB and one broken line at the end: the problem must still be placed, from
    # the bytes read again
    path = bodies_file(tmp_path / "bodies.jsonl", 12, 10 * MB)
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"cut","parentId":"b0000011","timestamp":"' + b"x" * 100 + b"\n")
    small = bodies_file(tmp_path / "small.jsonl", 1, 1000)
    baseline, _ = _check_peak_rss(small)
    peak, output = _check_peak_rss(path)
    size = path.stat().st_size
    assert f"{path}:14:" in output and "PI001" in output, output
    # a line at a time: a few times the longest line (10 MB) at most, not the file
    assert peak - baseline < size // 3, (
        f"checking a {size // MB} MB session peaked {(peak - baseline) // MB} MB above checking a tiny one"
    )
    figures["memory: pi-session check of a 120 MB session: peak RSS above a tiny file's"] = (
        f"+{(peak - baseline) // MB} MB (peak {peak // MB} MB)"
    )


@pytest.mark.slow
def test_repairing_a_big_session_streams_it(tmp_path: Path, figures):
    # 12 lines of 10 MB with two lines glued together in the middle: repaired into a new file
    path = bodies_file(tmp_path / "bodies.jsonl", 12, 10 * MB)
    glued = b'{"type":"message","id":"cut","parentId":"b0000005","timest'
    whole = path.with_suffix(".whole")
    path.rename(whole)
    with open(whole, "rb") as source, open(path, "wb") as f:
        for line in source:  # glue a cut-off line onto the 7th entry
            if line.startswith(b'{"type":"message","id":"b0000006"'):
                middle = f.tell()
                f.write(glued)
            f.write(line)
    whole.unlink()
    small = bodies_file(tmp_path / "small.jsonl", 1, 1000)
    # the baseline is the same command on a tiny file: what it imports is not what the file costs
    baseline, _ = _check_peak_rss(small, "-o", str(tmp_path / "small-fixed.jsonl"), command=("repair",))
    out = tmp_path / "fixed.jsonl"
    peak, output = _check_peak_rss(path, "-o", str(out), command=("repair",))
    size = path.stat().st_size
    assert "PI006 Split the glued line into its 2 lines" in output and "1 repair made" in output, output
    assert out.stat().st_size == size + 1
    with open(out, "rb") as f:
        f.seek(middle)
        assert f.read(len(glued) + 1) == glued + b"\n"
    # a few times the longest line (10 MB), a figure that moves from one environment to the next;
    # holding the file would add all of it
    assert peak - baseline < size // 2, (
        f"repairing a {size // MB} MB session peaked {(peak - baseline) // MB} MB above repairing a tiny one"
    )
    figures["memory: pi-session repair -o of a 120 MB session: peak RSS above repairing a tiny file"] = (
        f"+{(peak - baseline) // MB} MB (peak {peak // MB} MB)"
    )


def test_a_big_file_the_editor_does_not_send_holds_its_line_facts_not_its_bytes(tmp_path: Path, srv, figures):
    # editors do not send big files (VS Code: over 50 MB); the server reads them from disk
    server, memory = srv
    path = bodies_file(tmp_path / "2026-11-30T09-13-48-180Z_big.jsonl", 12, 10 * MB)
    size = path.stat().st_size
    start = memory.rss()
    memory.reset_peak()
    hover = server.call(
        "textDocument/hover",
        {"textDocument": {"uri": path.as_uri()}, "position": {"line": 5, "character": 3}},
        timeout=300,
    )
    peak = memory.peak() - start
    held = memory.rss() - start
    assert hover is not None and "user" in json.dumps(hover)
    assert held < size // 8, f"following a {size // MB} MB file on disk holds {held // MB} MB"
    figures["memory: a 120 MB file read from disk by the language server: held / peak"] = (
        f"+{held // MB} MB / +{peak // MB} MB"
    )
