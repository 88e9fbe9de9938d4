#!/usr/bin/env python3
"""Benchmark of the JSON-RPC sidecar over stdio, next to pi's own SessionManager in-process.

    .venv/bin/python bench/bench_sidecar.py [--size-mb 100] [--appends 20000] [--fsync-appends 2000]

1. ``pi/append`` throughput: requests pipelined over stdio to a persisted session, with the server's
   default durability (the OS writes back) and with ``serve --fsync`` (every append fsynced).
2. On a generated session of ``--size-mb`` MB: latency of ``pi/open``, ``pi/getTree`` (flat form, every page of 50,000 nodes) and
   ``pi/buildSessionContext``, request sent to reply parsed, median of ``--runs``.
3. The same work done by the reference (pi 0.86.1's SessionManager, in the oracle copy) in one Node
   process: open, getTree(), buildSessionContext() (also with JSON.stringify of the result, which is
   what crossing a process boundary costs at least), appendMessage throughput. When the oracle copy or
   Node is missing (CI), the comparison is skipped with a message.

Prints a table and the ratios sidecar / reference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # reference_locations: where the oracle copy is
import reference_locations  # noqa: E402

from pi_session_server.server.framing import FrameDecoder, encode_frame  # noqa: E402

DEFAULT_ORACLE = reference_locations.oracle_dir()

REFERENCE_SCRIPT = r"""
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [oracleDir, file, appendDir, appendsText, runsText] = process.argv.slice(2);
const dist = path.resolve(oracleDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const { SessionManager } = await import(pathToFileURL(path.join(dist, "core/session-manager.js")).href);
const runs = Number(runsText), appends = Number(appendsText);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const time = (fn) => { const t = process.hrtime.bigint(); const r = fn(); return [Number(process.hrtime.bigint() - t) / 1e6, r]; };
const out = { open: [], getTree: [], getTreeJson: [], context: [], contextJson: [] };
for (let i = 0; i < runs; i++) {
  const [openMs, sm] = time(() => SessionManager.open(file));
  out.open.push(openMs);
  const [treeMs, tree] = time(() => sm.getTree());
  out.getTree.push(treeMs);
  let flat = null;
  const [treeJsonMs] = time(() => {
    // the flat form a client needs (nested JSON this deep cannot be stringified): preorder ids + parents
    const nodes = []; const stack = [...tree].reverse().map((n) => [n, 0]);
    while (stack.length) { const [n, d] = stack.pop(); nodes.push({ id: n.entry.id, parentId: n.entry.parentId, type: n.entry.type, depth: d, childIds: n.children.map((c) => c.entry.id), label: n.label });
      for (let k = n.children.length - 1; k >= 0; k--) stack.push([n.children[k], d + 1]); }
    flat = JSON.stringify({ leafId: sm.getLeafId(), nodes });
  });
  out.getTreeJson.push(treeMs + treeJsonMs);
  const [ctxMs, ctx] = time(() => sm.buildSessionContext());
  out.context.push(ctxMs);
  const [ctxJsonMs] = time(() => JSON.stringify(ctx));
  out.contextJson.push(ctxMs + ctxJsonMs);
}
const sm = SessionManager.create(appendDir, appendDir);
sm.appendMessage({ role: "assistant", content: [], api: "a", provider: "p", model: "m", usage: {}, stopReason: "stop", timestamp: 1 });
const message = { role: "user", content: [{ type: "text", text: "hello world, a typical short user message" }], timestamp: 1700000000000 };
const t = process.hrtime.bigint();
for (let i = 0; i < appends; i++) sm.appendMessage(message);
const appendSec = Number(process.hrtime.bigint() - t) / 1e9;
const result = {};
for (const [k, v] of Object.entries(out)) result[k] = median(v);
result.appendsPerSec = appends / appendSec;
process.stdout.write(JSON.stringify(result));
"""


# --- a minimal, fast stdio JSON-RPC client ----------------------------------------------------


class Pipe:
    """Frames requests onto the server's stdin and reads replies in big chunks."""

    def __init__(self, *server_args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_session_server", "serve", *server_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._decoder = FrameDecoder()
        self._bodies: deque[bytes] = deque()
        self._next = 1
        self._encode = msgspec.json.encode

    def frame(self, method: str, params: Any) -> bytes:
        body = self._encode({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        self._next += 1
        return encode_frame(body)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_reply(self) -> bytes:
        """The next message body (notifications included)."""
        assert self.proc.stdout is not None
        while not self._bodies:
            chunk = self.proc.stdout.read1(max(1 << 20, self._decoder.missing))
            if not chunk:
                raise ConnectionError("server closed the connection")
            self._bodies.extend(b for b in self._decoder.feed(chunk) if isinstance(b, bytes))
        return self._bodies.popleft()

    def request(self, method: str, params: Any) -> Any:
        self.send(self.frame(method, params))
        while True:
            reply = msgspec.json.decode(self.read_reply())
            if "id" in reply:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


# --- the measurements ----------------------------------------------------------------------


def append_throughput(count: int, *server_args: str) -> float:
    directory = tempfile.mkdtemp(prefix="pi-bench-append-")
    pipe = Pipe(*server_args)
    try:
        session = pipe.request("pi/create", {"cwd": directory, "sessionDir": directory})["session"]
        # the first assistant message makes the file appear; every later append writes one line
        pipe.request(
            "pi/append",
            {
                "session": session,
                "kind": "message",
                "message": {
                    "role": "assistant",
                    "content": [],
                    "api": "a",
                    "provider": "p",
                    "model": "m",
                    "usage": {},
                    "stopReason": "stop",
                    "timestamp": 1,
                },
            },
        )
        message = {
            "role": "user",
            "content": [{"type": "text", "text": "hello world, a typical short user message"}],
            "timestamp": 1700000000000,
        }
        frames = b"".join(
            pipe.frame("pi/append", {"session": session, "kind": "message", "message": message})
            for _ in range(count)
        )
        started = time.perf_counter()
        writer = threading.Thread(target=pipe.send, args=(frames,))
        writer.start()
        replies = 0
        while replies < count:
            body = pipe.read_reply()
            if b'"id"' in body[:40]:
                replies += 1
        elapsed = time.perf_counter() - started
        writer.join()
        with open(pipe.request("pi/getInfo", {"session": session})["sessionFile"], "rb") as written:
            lines = sum(1 for _ in written)
        assert lines == count + 2, f"expected {count + 2} lines, found {lines}"
        return count / elapsed
    finally:
        pipe.close()
        shutil.rmtree(directory, ignore_errors=True)


def generate_session(path: Path, size_mb: int) -> int:
    """A realistic session of about ``size_mb`` MB: turns of user, assistant (text + tool call) and
    tool result, a model change, a compaction and a few branches. Returns the number of entries."""
    target = size_mb * 1024 * 1024
    filler = "The forecast parser reads daily temperatures from the v2 API and caches them per city. " * 30
    header = {
        "type": "session",
        "version": 3,
        "id": "bench-session",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/bench",
    }
    written = 0
    count = 0
    parent: str | None = None
    ids: list[str] = []
    encode = msgspec.json.encode
    with path.open("wb") as out:

        def emit(value: dict[str, Any]) -> None:
            nonlocal written, count, parent
            line = encode(value) + b"\n"
            out.write(line)
            written += len(line)
            if value["type"] != "session":
                count += 1
                parent = value["id"]
                ids.append(value["id"])

        emit(header)
        emit(
            {
                "type": "model_change",
                "id": "m0000000",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.001Z",
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            }
        )
        turn = 0
        while written < target:
            turn += 1
            stamp = f"2026-01-01T{(turn // 3600) % 24:02}:{(turn // 60) % 60:02}:{turn % 60:02}.000Z"
            if turn % 500 == 0 and len(ids) > 10:
                parent = ids[-7]  # go back a few entries: a branch
            base = f"{turn:07x}"
            emit(
                {
                    "type": "message",
                    "id": f"u{base}",
                    "parentId": parent,
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": f"Turn {turn}: please look at the cache. " + filler[:300],
                        "timestamp": 1767225600000 + turn,
                    },
                }
            )
            emit(
                {
                    "type": "message",
                    "id": f"a{base}",
                    "parentId": parent,
                    "timestamp": stamp,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": filler[: 1000 + turn % 500]},
                            {
                                "type": "toolCall",
                                "id": f"call_{turn}",
                                "name": "read",
                                "arguments": {"path": f"src/f{turn}.py"},
                            },
                        ],
                        "api": "anthropic-messages",
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-5",
                        "usage": {
                            "input": 1000,
                            "output": 200,
                            "cacheRead": 0,
                            "cacheWrite": 0,
                            "totalTokens": 1200,
                            "cost": {
                                "input": 0.003,
                                "output": 0.003,
                                "cacheRead": 0,
                                "cacheWrite": 0,
                                "total": 0.006,
                            },
                        },
                        "stopReason": "toolUse",
                        "timestamp": 1767225600000 + turn,
                    },
                }
            )
            emit(
                {
                    "type": "message",
                    "id": f"t{base}",
                    "parentId": parent,
                    "timestamp": stamp,
                    "message": {
                        "role": "toolResult",
                        "toolCallId": f"call_{turn}",
                        "toolName": "read",
                        "content": [{"type": "text", "text": filler[:1800]}],
                        "isError": False,
                        "timestamp": 1767225600000 + turn,
                    },
                }
            )
            if turn == 1000:
                emit(
                    {
                        "type": "compaction",
                        "id": "c0000001",
                        "parentId": parent,
                        "timestamp": stamp,
                        "summary": "Earlier turns were about the parser.",
                        "firstKeptEntryId": ids[-30],
                        "tokensBefore": 120000,
                    }
                )
    return count


def timed_request(pipe: Pipe, method: str, params: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = pipe.request(method, params)
    return time.perf_counter() - started, result


def timed_whole_tree(pipe: Pipe, session: str) -> tuple[float, int]:
    """The whole flat tree, in pages of 50,000 nodes (the most one pi/getTree reply holds)."""
    started = time.perf_counter()
    count, offset = 0, 0
    while True:
        page = pipe.request("pi/getTree", {"session": session, "offset": offset, "limit": 50_000})
        count += len(page["nodes"])
        if not page["hasMore"]:
            return time.perf_counter() - started, count
        offset = page["nextOffset"]


def sidecar_latencies(path: Path, runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"open": [], "getTree": [], "context": []}
    for _ in range(runs):
        pipe = Pipe()
        try:
            pipe.request("pi/sessions", {})  # the server is up (start-up is not part of the figures)
            elapsed, info = timed_request(pipe, "pi/open", {"path": str(path)})
            times["open"].append(elapsed)
            elapsed, nodes = timed_whole_tree(pipe, info["session"])
            assert nodes == info["entryCount"]
            times["getTree"].append(elapsed)
            elapsed, context = timed_request(pipe, "pi/buildSessionContext", {"session": info["session"]})
            assert context["messages"]
            times["context"].append(elapsed)
        finally:
            pipe.close()
    return {k: statistics.median(v) * 1000 for k, v in times.items()}


def reference_figures(oracle: Path, path: Path, appends: int, runs: int) -> dict[str, float] | None:
    if shutil.which("node") is None:
        print("reference comparison skipped: node is not installed")
        return None
    if not reference_locations.pi_086_package(oracle).is_dir():
        print(f"reference comparison skipped: no pi 0.86.1 under {oracle} (set PI_ORACLE_DIR or --oracle)")
        return None
    with tempfile.TemporaryDirectory(prefix="pi-bench-ref-") as scratch:
        script = Path(scratch) / "reference_bench.mjs"
        script.write_text(REFERENCE_SCRIPT)
        # the reference repairs/rewrites nothing in a current file; still, give it its own copy
        copy = Path(scratch) / "session.jsonl"
        shutil.copyfile(path, copy)
        appends_dir = Path(scratch) / "appends"
        appends_dir.mkdir()
        proc = subprocess.run(
            [
                "node",
                "--max-old-space-size=8192",
                str(script),
                str(oracle),
                str(copy),
                str(appends_dir),
                str(appends),
                str(runs),
            ],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if proc.returncode != 0:
            print(f"reference comparison failed: {proc.stderr.strip()[-2000:]}")
            return None
        return json.loads(proc.stdout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--appends", type=int, default=20000)
    parser.add_argument("--fsync-appends", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--oracle", type=Path, default=DEFAULT_ORACLE)
    args = parser.parse_args(argv)

    print(
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}"
    )
    default_rate = append_throughput(args.appends)
    fsync_rate = append_throughput(args.fsync_appends, "--fsync")
    print(
        f"pi/append over stdio, default durability: {default_rate:,.0f} appends/s ({args.appends} pipelined)"
    )
    print(
        f"pi/append over stdio, serve --fsync:      {fsync_rate:,.0f} appends/s ({args.fsync_appends} pipelined)"
    )

    with tempfile.TemporaryDirectory(prefix="pi-bench-") as scratch:
        path = Path(scratch) / "session.jsonl"
        started = time.perf_counter()
        entries = generate_session(path, args.size_mb)
        size = path.stat().st_size / 1024 / 1024
        print(
            f"generated {size:.0f} MB session with {entries:,} entries in {time.perf_counter() - started:.1f} s"
        )
        ours = sidecar_latencies(path, args.runs)
        reference = reference_figures(args.oracle, path, args.appends, args.runs)

    print()
    print(f"{'operation':<34}{'sidecar (ms)':>14}{'pi in-process (ms)':>20}{'ratio':>9}")
    rows = [
        ("open", "open", "open"),
        ("getTree (flat)", "getTree", "getTree"),
        ("getTree (flat) vs pi + stringify", "getTree", "getTreeJson"),
        ("buildSessionContext", "context", "context"),
        ("buildSessionContext vs pi + stringify", "context", "contextJson"),
    ]
    for label, mine, theirs in rows:
        ref = reference.get(theirs) if reference else None
        ratio = f"{ours[mine] / ref:8.1f}x" if ref else "       -"
        ref_text = f"{ref:20.1f}" if ref else f"{'-':>20}"
        print(f"{label:<34}{ours[mine]:14.1f}{ref_text}{ratio}")
    if reference:
        ref_rate = reference["appendsPerSec"]
        print(
            f"{'appends/s (default durability)':<34}{default_rate:14,.0f}{ref_rate:20,.0f}{ref_rate / default_rate:8.1f}x"
        )
        print(
            "(ratios: sidecar time / pi time; for appends: pi rate / sidecar rate. The sidecar figures include a "
            "process boundary: JSON encoding, the pipe and the client's parse.)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
