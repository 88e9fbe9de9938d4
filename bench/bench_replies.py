"""The sidecar's replies as a front end gets them, from several checkouts in turn.

    python bench/bench_replies.py --session F [--repeat 5] CHECKOUT...

Each checkout's server (``python -m pi_session_server serve`` with ``PYTHONPATH`` set to the
checkout, this interpreter) opens ``F``, then, timed from the client and in the server's CPU:

1. the full flat tree, every page of 50,000 nodes (what a client that draws the whole tree asks);
2. 200 ``pi/getLeaf``, each sent once the one before was answered (an editor's small requests);
3. 200 ``pi/getEntries`` pages sent together before any reply is read (a script that pipelines).

The checkouts run in turn (A, B, A, B, ...: this machine's speed drifts). Prints each run, then per
checkout the best of each figure and its ratio against the first checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pi_session_server.server.framing import encode_frame, read_frames  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SMALL_REQUESTS = 200


def server_cpu(pid: int) -> float:
    """User + system seconds of ``pid`` so far (/proc, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Server:
    def __init__(self, checkout: Path, work: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout), "PI_SESSION_NO_INDEX": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pi_session_server", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=work,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: BinaryIO = self.process.stdin
        self.frames: Iterator[bytes] = read_frames(self.process.stdout)
        self.next_id = 0

    def frame(self, method: str, params: dict[str, Any]) -> bytes:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return encode_frame(json.dumps(message).encode())

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.stdin.write(self.frame(method, params))
        self.stdin.flush()
        reply = json.loads(next(self.frames))
        if "error" in reply:
            sys.exit(f"{method}: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(60)


def timed(server: Server, work: Callable[[], None]) -> tuple[float, float]:
    cpu, start = server_cpu(server.process.pid), time.perf_counter()
    work()
    return time.perf_counter() - start, server_cpu(server.process.pid) - cpu


def run(checkout: Path, session: Path) -> dict[str, float]:
    server = Server(checkout, session.parent)
    handle = server.call("pi/open", {"path": str(session)})["session"]
    figures: dict[str, float] = {}

    def whole_tree() -> None:
        offset: int | None = 0
        while offset is not None:
            page = server.call("pi/getTree", {"session": handle, "offset": offset, "limit": 50_000})
            offset = page.get("nextOffset") if page.get("hasMore") else None

    def one_at_a_time() -> None:
        for _ in range(SMALL_REQUESTS):
            server.call("pi/getLeaf", {"session": handle})

    def pipelined() -> None:
        pages = {"session": handle, "limit": 20}
        server.stdin.write(
            b"".join(
                server.frame("pi/getEntries", {**pages, "offset": n * 20}) for n in range(SMALL_REQUESTS)
            )
        )
        server.stdin.flush()
        for _ in range(SMALL_REQUESTS):
            next(server.frames)

    for name, work in (("flat tree", whole_tree), ("one at a time", one_at_a_time), ("pipelined", pipelined)):
        figures[f"{name} wall"], figures[f"{name} cpu"] = timed(server, work)
    server.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--session", type=Path, required=True, help="a session file (read only)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("checkouts", type=Path, nargs="+", help="checkouts of this repository")
    args = parser.parse_args()
    best: dict[Path, dict[str, float]] = {checkout: {} for checkout in args.checkouts}
    for round_number in range(args.repeat):
        for checkout in args.checkouts:
            figures = run(checkout.resolve(), args.session.resolve())
            for name, value in figures.items():
                best[checkout][name] = min(best[checkout].get(name, value), value)
            shown = ", ".join(f"{name} {value:.3f}" for name, value in figures.items())
            print(f"{round_number} {checkout}: {shown}", flush=True)
    first = best[args.checkouts[0]]
    print(f"\nbest of {args.repeat} (seconds; ratio against {args.checkouts[0]}):")
    for checkout, figures in best.items():
        shown = ", ".join(
            f"{name} {value:.3f} ({value / first[name]:.2f}x)" if first[name] else f"{name} {value:.3f}"
            for name, value in figures.items()
        )
        print(f"{checkout}: {shown}")


if __name__ == "__main__":
    main()
