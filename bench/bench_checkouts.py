"""One command of ``pi-session``, timed in turn from several checkouts, as whole processes.

    python bench/bench_checkouts.py --file F [--repeat 5] [--index] CHECKOUT... [-- tree ...]

Each checkout's own ``.venv/bin/pi-session`` runs the command (``tree FILE`` by default) with its
output to /dev/null, the checkouts in turn (A, B, A, B, ...: this machine's speed drifts), each
run a fresh process; without ``--index`` no index is read or written (``PI_SESSION_NO_INDEX=1``:
every run is a first open). Prints, per checkout, the median and the best wall time, the median
CPU time (user and system) and the median peak RSS; and checks that every checkout printed the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(executable: str, command: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in KB, digest of stdout) of one run."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen([executable, *command], stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        digest = hashlib.sha256(out.read()).hexdigest()
    if process.returncode != 0:
        sys.exit(f"{executable} {' '.join(command)} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, digest


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--file", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--index", action="store_true", help="let the runs read and write an index")
    parser.add_argument("checkouts", nargs="+")
    args, rest = parser.parse_known_args()
    command = [a for a in rest if a != "--"] or ["tree"]
    command = [*command, args.file]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not args.index:
        env["PI_SESSION_NO_INDEX"] = "1"
    executables = {c: os.path.join(c, ".venv", "bin", "pi-session") for c in args.checkouts}
    for executable in executables.values():  # warm the page cache and the bytecode
        run_once(executable, command, env)
    walls: dict[str, list[float]] = {c: [] for c in args.checkouts}
    cpus: dict[str, list[float]] = {c: [] for c in args.checkouts}
    peaks: dict[str, list[int]] = {c: [] for c in args.checkouts}
    digests: set[str] = set()
    for _ in range(args.repeat):
        for checkout, executable in executables.items():
            wall, cpu, peak, digest = run_once(executable, command, env)
            walls[checkout].append(wall)
            cpus[checkout].append(cpu)
            peaks[checkout].append(peak)
            digests.add(digest)
    print(f"{' '.join(command)} ({'index' if args.index else 'no index'}), {args.repeat} runs each")
    for checkout in args.checkouts:
        times = walls[checkout]
        print(
            f"  {checkout}: median {statistics.median(times):.3f} s, best {min(times):.3f} s,"
            f" CPU median {statistics.median(cpus[checkout]):.3f} s,"
            f" peak {statistics.median(peaks[checkout]) / 1024:.0f} MB"
        )
    print("  output: " + ("identical" if len(digests) == 1 else f"DIFFERS ({len(digests)} versions)"))


if __name__ == "__main__":
    main()
