"""``SessionManager.open`` of one file in process, timed from several checkouts in turn.

    python bench/bench_open_checkouts.py --file F [--rounds 8] [--repeat 7] CHECKOUT...

The open the server and the library do (``read_only=True``, no index read or written:
``PI_SESSION_NO_INDEX=1``), which ``bench_checkouts.py`` cannot isolate: a whole command's time
buries a few milliseconds of the open's. Each round runs every checkout in turn (A, B, A, B, ...:
this machine's speed drifts) as a fresh process that imports the checkout's package (PYTHONPATH)
and keeps its best of ``--repeat`` opens, in wall and CPU time. Prints, per checkout, the median
and the best of the rounds' bests.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {checkout: [] for checkout in args.checkouts}
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            env = {**os.environ, "PYTHONPATH": os.path.abspath(checkout), "PI_SESSION_NO_INDEX": "1"}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # (a checkout's bytecode is compiled once)
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, args.file, str(args.repeat)],
                env=env,
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
