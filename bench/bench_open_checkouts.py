"""``SessionManager.open`` of one file in process, timed from several checkouts in turn.

    python bench/bench_open_checkouts.py --file F [--rounds 8] [--repeat 7] CHECKOUT...
    python bench/bench_open_checkouts.py --first-writes N [--image-kb 200] [--rounds 8] [--repeat 7] CHECKOUT...

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
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    work = parser.add_mutually_exclusive_group(required=True)
    work.add_argument("--file")
    work.add_argument("--first-writes", type=int, metavar="N")
    parser.add_argument("--image-kb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    if args.file:
        child = [_CHILD, os.path.abspath(args.file), str(args.repeat)]
    else:
        child = [_FIRST_WRITES_CHILD, str(args.first_writes), str(args.repeat), str(args.image_kb * 1024)]
    times: dict[str, list[tuple[float, float]]] = {checkout: [] for checkout in args.checkouts}
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            env = {**os.environ, "PYTHONPATH": os.path.abspath(checkout), "PI_SESSION_NO_INDEX": "1"}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # (a checkout's bytecode is compiled once)
            out = subprocess.run(
                [sys.executable, "-c", *child],
                env=env,
                cwd=os.path.abspath(checkout),  # ("-c" puts the working directory first on the path)
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            wall, cpu = map(float, out.split())
            times[checkout].append((wall, cpu))
    for checkout, runs in times.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"{checkout}: wall median {statistics.median(walls):.4f} s best {min(walls):.4f} s,"
            f" CPU median {statistics.median(cpus):.4f} s best {min(cpus):.4f} s"
        )


if __name__ == "__main__":
    main()
