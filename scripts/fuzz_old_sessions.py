#!/usr/bin/env python3
"""Random version 1 and version 2 sessions through each path that migrates them, streamed and held.

    python3 scripts/fuzz_old_sessions.py --seed N --count K [--keep DIR] [--path NAME ...]

Each seed makes a session as an older pi wrote it (tests/old_session_fuzz.py: every entry type,
compactions naming positions before and after them, unicode, CRLF, some damage), and each path of
``PATHS_TO_COMPARE`` (the writable open's rewrite, the read-only open, fork, repair) is run on a
copy of it its streamed way and its held way: what they give must be equal. Prints each seed that
differs and what differs; with ``--keep``, writes the session of each such seed there. Exit status
1 when a seed differs. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from old_session_fuzz import PATHS_TO_COMPARE, differences, random_old_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="a directory for the sessions of the seeds that differ")
    parser.add_argument("--path", action="append", choices=[p.name for p in PATHS_TO_COMPARE])
    args = parser.parse_args()
    paths = [p for p in PATHS_TO_COMPARE if not args.path or p.name in args.path]
    differing = 0
    with tempfile.TemporaryDirectory() as work:
        for seed in range(args.seed, args.seed + args.count):
            data = random_old_session(seed)
            found = differences(data, Path(work), paths)
            if found:
                differing += 1
                print(f"seed {seed}:", *found, sep="\n  ")
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"old-{seed}.jsonl").write_bytes(data)
    print(f"{args.count} seeds from {args.seed}, {len(paths)} paths: {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
