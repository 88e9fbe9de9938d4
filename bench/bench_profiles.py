#!/usr/bin/env python3
"""What following a pi release costs: the library under each profile, and against an older revision.

    .venv/bin/python bench/bench_profiles.py SESSION.jsonl [--repeat 11] [--against REV]

Runs ``SessionManager.open(read_only=True, pi=...)`` + ``build_session_context()`` + ``get_tree()``
in a fresh process per measurement, with the persistent index off (a first open), under pi 1.6.0
and pi 0.86.1 in turn. ``--against REV`` also runs the same work with the package as it was at a
git revision (checked out in a temporary worktree; a revision from before the profiles is run
without ``pi=``). Prints the CPU seconds of each whole process (user + system: the machines here
are shared, and CPU time is less disturbed by other work than wall time) and the ratios, measured
in the same run, the sides taken in turn.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORK = """
import inspect, sys
from pi_session_server.session import SessionManager
accepted = inspect.signature(SessionManager.open).parameters
options = {"read_only": True} if "read_only" in accepted else {}
if "pi" in accepted:
    options["pi"] = sys.argv[2]
manager = SessionManager.open(sys.argv[1], **options)
manager.build_session_context()
manager.get_tree()
"""


def cpu_seconds(package_root: Path, session: str, pi: str) -> float:
    """The CPU time of one whole process doing the work (its imports included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(package_root), "PI_SESSION_NO_INDEX": "1"}
    subprocess.run([sys.executable, "-c", WORK, session, pi], env=env, check=True, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("session")
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument(
        "--against", metavar="REV", help="also run the package as it was at this git revision"
    )
    args = parser.parse_args()
    sides: dict[str, tuple[Path, str]] = {"pi 1.6.0": (ROOT, "1.6.0"), "pi 0.86.1": (ROOT, "0.86.1")}
    with tempfile.TemporaryDirectory() as scratch:
        if args.against:
            older = Path(scratch) / "older"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(older), args.against],
                check=True,
            )
            sides[f"{args.against}, pi 0.86.1"] = (older, "0.86.1")
        try:
            times: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(args.repeat):
                for name, (package_root, pi) in sides.items():
                    times[name].append(cpu_seconds(package_root, args.session, pi))
        finally:
            if args.against:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(older)], check=False
                )
    base = statistics.median(times["pi 0.86.1"])
    print(
        f"{args.session}: CPU seconds of a whole process (import, first open, context, tree); medians of {args.repeat}"
    )
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:<28} median {median:.3f} s, min {min(values):.3f} s, {median / base:.3f}x of pi 0.86.1 on this code"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
