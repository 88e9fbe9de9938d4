"""``SessionManager.open`` of one file in process, timed from several checkouts in turn.

    python bench/bench_open_checkouts.py --file F [--rounds 8] [--repeat 7] CHECKOUT...
    python bench/bench_open_checkouts.py --first-writes N [--image-kb 200] [--rounds 8] [--repeat 7] CHECKOUT...
    python bench/bench_open_checkouts.py --appends COPY [--count 200] [--rounds 8] [--repeat 7] CHECKOUT...

The open the server and the library do (``read_only=True``, no index read or written:
``PI_SESSION_NO_INDEX=1``), which ``bench_checkouts.py`` cannot isolate: a whole command's time
buries a few milliseconds of the open's. Each round runs every checkout in turn (A, B, A, B, ...:
this machine's speed drifts) as a fresh process that imports the checkout's package (PYTHONPATH)
and keeps its best of ``--repeat`` opens, in wall and CPU time. Prints, per checkout, the median
and the best of the rounds' bests.

``--first-writes N`` times, instead of an open, the first turn of N new sessions (created in a
temporary directory, persisted): a model change, a thinking level change, a user message holding a
screenshot of ``--image-kb`` KB of base64, an assistant message. That is where a new session's file
is made, every entry that waited for it written at once (pi 1.6.0 makes it at the user message).

``--appends COPY`` times, instead, ``--count`` ``append_message`` calls (a user's turn and the
assistant's reply, in turn) to COPY reopened from its index: what a front end appending turn after
turn to a big session pays. COPY is appended to: pass a copy of a session. Each round gives every
checkout an empty index directory of its own: a first process opens COPY, writing its index (the
time of that open and the index's size are printed too), then a second one reopens it from that
index and keeps its best of ``--repeat`` runs of the appends (after a first append, which takes in
the lines the other checkouts appended).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_CHILD = """
import gc, os, sys, time
from pi_session_server.session import SessionManager
wall = cpu = float("inf")
for _ in range(int(sys.argv[2])):
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    manager = SessionManager.open(sys.argv[1], read_only=True)
    wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    del manager
print(wall, cpu)
"""

_FIRST_WRITES_CHILD = """
import gc, sys, tempfile, time
from pi_session_server.session import SessionManager
sessions, repeat, image_bytes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
image = {"type": "image", "data": "iVBORw0K" * (image_bytes // 8), "mimeType": "image/png"}
user = {"role": "user", "content": [{"type": "text", "text": "What does this show?"}, image], "timestamp": 1}
assistant = {"role": "assistant", "content": [{"type": "text", "text": "A chart. " * 40}], "api": "a",
             "provider": "p", "model": "m", "usage": {"input": 900, "output": 40}, "stopReason": "stop",
             "timestamp": 2}
wall = cpu = float("inf")
with tempfile.TemporaryDirectory() as work:
    for attempt in range(repeat):
        directory = f"{work}/{attempt}"
        gc.collect()
        w, c = time.perf_counter(), time.process_time()
        for _ in range(sessions):
            manager = SessionManager.create(work, directory)
            manager.append_model_change("p", "m")
            manager.append_thinking_level_change("high")
            manager.append_message(user)
            manager.append_message(assistant)
            manager.close()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
print(wall, cpu)
"""

_INDEX_BUILD_CHILD = """
import os, sys, time
from pi_session_server.session import SessionManager, scan_index
w = time.perf_counter()
manager = SessionManager.open(sys.argv[1], index=sys.argv[2])
wall = time.perf_counter() - w
assert scan_index.last_outcome.written
print(wall, sum(entry.stat().st_size for entry in os.scandir(sys.argv[2])))
"""

_APPENDS_CHILD = """
import gc, sys, time
from pi_session_server.session import SessionManager, scan_index
path, index, count, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
user = {"role": "user", "content": [{"type": "text", "text": "And then?"}], "timestamp": 1}
assistant = {"role": "assistant", "content": [{"type": "text", "text": "Then this. " * 40}], "api": "a",
             "provider": "p", "model": "m", "usage": {"input": 900, "output": 40}, "stopReason": "stop",
             "timestamp": 2}
manager = SessionManager.open(path, index=index)
assert scan_index.last_outcome.read in ("used", "grown")
manager.append_message(user)
wall = cpu = float("inf")
for _ in range(repeat):
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    for turn in range(count):
        manager.append_message(assistant if turn % 2 == 0 else user)
    wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
assert manager._rows is not None  # (appends joined the index's rows: no entry list was made)
print(wall, cpu)
"""


def _child(checkout: str, argv: list[str], no_index: bool = True) -> list[float]:
    """What a fresh process importing ``checkout``'s package printed, running ``argv``."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(checkout)}
    if no_index:
        env["PI_SESSION_NO_INDEX"] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (a checkout's bytecode is compiled once)
    out = subprocess.run(
        [sys.executable, "-c", *argv],
        env=env,
        cwd=os.path.abspath(checkout),  # ("-c" puts the working directory first on the path)
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return list(map(float, out.split()))


def _settle(path: str) -> None:
    """Wait until ``path`` last changed long enough ago that the index written next serves the
    reopen after it unchanged (one written just after the appends before would be rebuilt: see
    cache_dir.RACY_NS)."""
    from pi_session_server.session.cache_dir import changed_lately

    while changed_lately(os.stat(path)):
        time.sleep(0.1)


def _appends(args: argparse.Namespace) -> None:
    """``--appends``: per checkout, the first open that writes the index and its size, and the
    appends to the session reopened from it (see the module's description)."""
    path = os.path.abspath(args.appends)
    builds: dict[str, list[tuple[float, float]]] = {checkout: [] for checkout in args.checkouts}
    times: dict[str, list[tuple[float, float]]] = {checkout: [] for checkout in args.checkouts}
    with tempfile.TemporaryDirectory() as work:
        for round_number in range(args.rounds):
            for number, checkout in enumerate(args.checkouts):
                index = os.path.join(work, f"{round_number}-{number}")
                _settle(path)
                build, size = _child(checkout, [_INDEX_BUILD_CHILD, path, index], no_index=False)
                builds[checkout].append((build, size))
                argv = [_APPENDS_CHILD, path, index, str(args.count), str(args.repeat)]
                wall, cpu = _child(checkout, argv, no_index=False)
                times[checkout].append((wall, cpu))
                shutil.rmtree(index)
    for checkout in args.checkouts:
        walls, cpus = [w for w, _ in times[checkout]], [c for _, c in times[checkout]]
        build_walls = [b for b, _ in builds[checkout]]
        print(
            f"{checkout}: {args.count} appends, wall median {statistics.median(walls):.4f} s"
            f" ({args.count / statistics.median(walls):.0f} appends/s) best {min(walls):.4f} s,"
            f" CPU median {statistics.median(cpus):.4f} s best {min(cpus):.4f} s;"
            f" first open writing the index: median {statistics.median(build_walls):.2f} s"
            f" best {min(build_walls):.2f} s, index {builds[checkout][-1][1] / 1e6:.1f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    work = parser.add_mutually_exclusive_group(required=True)
    work.add_argument("--file")
    work.add_argument("--first-writes", type=int, metavar="N")
    work.add_argument("--appends", metavar="COPY")
    parser.add_argument("--image-kb", type=int, default=200)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    if args.appends:
        _appends(args)
        return
    if args.file:
        child = [_CHILD, os.path.abspath(args.file), str(args.repeat)]
    else:
        child = [_FIRST_WRITES_CHILD, str(args.first_writes), str(args.repeat), str(args.image_kb * 1024)]
    times: dict[str, list[tuple[float, float]]] = {checkout: [] for checkout in args.checkouts}
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            wall, cpu = _child(checkout, child)
            times[checkout].append((wall, cpu))
    for checkout, runs in times.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"{checkout}: wall median {statistics.median(walls):.4f} s best {min(walls):.4f} s,"
            f" CPU median {statistics.median(cpus):.4f} s best {min(cpus):.4f} s"
        )


if __name__ == "__main__":
    main()
