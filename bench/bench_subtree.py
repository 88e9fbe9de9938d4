#!/usr/bin/env python3
"""pi/getTree windows of a subtree (``rootId``), old code against new, in the same run.

    .venv/bin/python bench/bench_subtree.py SESSION.jsonl --old DIR [--repeat 3] [--wire | --wire-only]
    .venv/bin/python bench/bench_subtree.py --generate 1000000 --old DIR      (a chain of N entries)
    .venv/bin/python bench/bench_subtree.py SESSION.jsonl --old DIR --chain-pages

``DIR`` holds the package of the code to compare against (``git archive REV pi_session_server | tar
-x -C DIR``). The windows are those a tree view asks for when it opens a node (filter ``default``,
active branch first, previews): ``{rootId: a user message, depth: 1, limit: 200}``, ``{rootId: a tool
result, chain: true, limit: 200}`` and ``{rootId: a user message, depth: 3}`` without pages, near the
start and near the end of the session. ``--chain-pages``: pages of the top chain instead (filters
``default``, ``no-tools``, ``user-only``; at offset 0, near the start, in the middle, at the end, and
around the leaf), as a tree view pages through a long chain: "warm" is the page asked again after a
page of another container of the view (a chain under the second entry) came between.

In process: for each window, each side in turn runs in a process of its own (``PYTHONPATH``: its
code) that opens the session, asks for the window twice (the first window, then the same again:
warm) and prints the CPU seconds of each and a digest of the reply; the replies of both sides must
be the same. ``--wire``: the same through a sidecar of each side (``serve``), wall seconds at the
client, the session opened (``pi/getInfo``) before the clock starts. Prints medians and old / new.
Not part of CI.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VIEW = {"filter": "default", "form": "flat", "activeBranchFirst": True}


def pick_windows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The windows, their tops found in the file (the first and last user message and tool result)."""
    found: dict[str, str] = {}
    with open(path, "rb") as lines:
        for line in lines:
            value = json.loads(line)
            role = (value.get("message") or {}).get("role") if value.get("type") == "message" else None
            if role in ("user", "toolResult"):
                found.setdefault(f"{role}@start", value["id"])
                found[f"{role}@end"] = value["id"]
    windows = []
    for where in ("start", "end"):
        user, tool = found[f"user@{where}"], found[f"toolResult@{where}"]
        windows += [
            (f"depth 1 under a user message, {where}", {"rootId": user, "depth": 1, "limit": 200}),
            (f"chain under a tool result, {where}", {"rootId": tool, "chain": True, "limit": 200}),
            (f"depth 3 under a user message, {where}", {"rootId": user, "depth": 3}),
        ]
    return windows


def pick_chain_pages(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Pages of the top chain (its length taken as the file's entries: a chain of a chat), around
    the file's last entry."""
    entries = 0
    second = last = None
    with open(path, "rb") as lines:
        for at, line in enumerate(lines):
            if at == 2:
                second = json.loads(line)["id"]
            entries += 1
            last = line
    assert last is not None
    entries -= 1  # the header
    leaf = json.loads(last)["id"]
    windows = []
    for mode in ("default", "no-tools", "user-only"):
        between = {"filter": mode, "rootId": second, "chain": True, "offset": 0, "limit": 200}
        for name, at in (("0", 0), ("200", 200), ("middle", entries // 4), ("end", entries // 2 - 200)):
            window = {"filter": mode, "chain": True, "offset": at, "limit": 200, BETWEEN: between}
            windows.append((f"chain {mode}, offset {name}", window))
        window = {"filter": mode, "chain": True, "aroundId": leaf, "limit": 200, BETWEEN: between}
        windows.append((f"chain {mode}, around the last entry", window))
    return windows


BETWEEN = "between"  # (a window's key in the bench, not a param): the window asked before the warm one


def worker(path: str, params: dict[str, Any]) -> None:
    """(in the side's process) The window twice on a session just opened: CPU seconds and digests."""
    from pi_session_server.server import methods_read
    from pi_session_server.server import params as P
    from pi_session_server.session import SessionManager

    assert Path(methods_read.__file__).is_relative_to(os.environ["PYTHONPATH"]), methods_read.__file__
    manager = SessionManager.open(path, read_only=True)
    gc.collect()  # what the open left to collect is not the window's
    between = params.pop(BETWEEN, None)
    parsed = P.parse({**VIEW, **params}, P.GetTreeParams)
    out = []
    for run in range(2):
        if run and between is not None:
            methods_read._tree(manager, P.parse({**VIEW, **between}, P.GetTreeParams))
        started = time.process_time()
        reply = methods_read._tree(manager, parsed)
        seconds = time.process_time() - started
        out.append((seconds, hashlib.sha256(bytes(reply)).hexdigest()))
    print(json.dumps(out))


def in_process(code: Path, path: Path, params: dict[str, Any]) -> list[tuple[float, str]]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, __file__, "--worker", str(path), json.dumps(params)]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()
    )
    return [tuple(pair) for pair in json.loads(done.stdout)]  # type: ignore[misc]


def over_the_wire(code: Path, path: Path, params: dict[str, Any]) -> list[tuple[float, str]]:
    sys.path.insert(0, str(ROOT))
    from pi_session_server.server.stdio_client import SidecarClient

    env = {**os.environ, "PYTHONPATH": str(code)}
    uri = path.resolve().as_uri()
    out = []
    command = [sys.executable, "-m", "pi_session_server", "serve"]
    with SidecarClient(command, env=env, cwd=tempfile.gettempdir()) as client:  # (not this checkout's code)
        client.request("pi/getInfo", {"uri": uri}, timeout=3600)
        between = params.pop(BETWEEN, None)
        for run in range(2):
            if run and between is not None:
                client.request("pi/getTree", {"uri": uri, **VIEW, **between}, timeout=3600)
            started = time.perf_counter()
            reply = client.request("pi/getTree", {"uri": uri, **VIEW, **params}, timeout=3600)
            seconds = time.perf_counter() - started
            reply.pop("revision", None)  # (a paged window's token: older code gives none)
            out.append((seconds, hashlib.sha256(json.dumps(reply).encode()).hexdigest()))
    return out


def generate_chain(path: Path, entries: int) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_tree_pages import generate

    generate(path, entries)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], json.loads(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("session", nargs="?", type=Path)
    parser.add_argument(
        "--old", type=Path, required=True, help="a directory holding the old pi_session_server"
    )
    parser.add_argument("--generate", type=int, help="measure a generated chain of this many entries")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wire", action="store_true", help="also through a sidecar of each side")
    parser.add_argument("--wire-only", action="store_true", help="only through a sidecar of each side")
    parser.add_argument("--chain-pages", action="store_true", help="pages of the top chain (see above)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = args.session
        if args.generate:
            path = Path(work) / "chain.jsonl"
            generate_chain(path, args.generate)
        sides = {"old": args.old.resolve(), "new": ROOT}
        ways = [] if args.wire_only else [("in process, CPU s", in_process)]
        if args.wire or args.wire_only:
            ways.append(("over the wire, wall s", over_the_wire))
        print(f"{path} ({path.stat().st_size / 1e6:.0f} MB)")
        for way, measure in ways:
            print(
                f"\n{way:<40} {'old first':>10} {'new first':>10} {'ratio':>7} {'old warm':>10} {'new warm':>10} {'ratio':>7}"
            )
            for name, params in (pick_chain_pages if args.chain_pages else pick_windows)(path):
                runs: dict[str, list[list[tuple[float, str]]]] = {"old": [], "new": []}
                for _ in range(args.repeat):  # in turn: this machine's speed drifts
                    for side, code in sides.items():
                        runs[side].append(measure(code, path, params))
                digests = {pair[1] for series in runs.values() for run in series for pair in run}
                if len(digests) != 1:
                    print(f"{name}: the replies differ", file=sys.stderr)
                    return 1
                first = {
                    side: statistics.median(run[0][0] for run in series) for side, series in runs.items()
                }
                warm = {side: statistics.median(run[1][0] for run in series) for side, series in runs.items()}
                print(
                    f"{name:<40} {first['old']:10.3f} {first['new']:10.3f} {first['old'] / first['new']:6.1f}x"
                    f" {warm['old']:10.3f} {warm['new']:10.3f} {warm['old'] / max(warm['new'], 1e-6):6.1f}x"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
