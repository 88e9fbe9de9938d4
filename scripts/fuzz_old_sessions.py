#!/usr/bin/env python3
"""Random version 1 and version 2 sessions through each path that migrates them, streamed and held.

    python3 scripts/fuzz_old_sessions.py --seed N --count K [--keep DIR] [--path NAME ...]
    python3 scripts/fuzz_old_sessions.py --oracle --seed N --count K [--pi VERSION]

Each seed makes a session as an older pi wrote it (tests/old_session_fuzz.py: every entry type,
compactions naming positions before and after them, unicode, CRLF, some damage), and each path of
``PATHS_TO_COMPARE`` (the writable open's rewrite, the read-only open, fork, repair) is run on a
copy of it its streamed way and its held way: what they give must be equal. Prints each seed that
differs and what differs; with ``--keep``, writes the session of each such seed there. Exit status
1 when a seed differs. Deterministic for a given seed.

With ``--oracle``, the same sessions go to pi itself instead: each is opened and forked
(``oracle_scenarios``) by the oracle (``$PI_ORACLE_DIR``, node) and by the conformance runner, under
each release (or ``--pi``'s), and the normalized documents must be equal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

sys.path.insert(0, str(REPO / "tests" / "conformance"))

from old_session_fuzz import (  # noqa: E402
    PATHS_TO_COMPARE,
    differences,
    random_old_session,
    write_oracle_scenarios,
)


def against_pi(seeds: range, releases: list[str]) -> int:
    """The sessions of ``seeds`` opened and forked by pi (the oracle) and by us, under ``releases``:
    the number of scenarios whose documents differ."""
    import reference_locations
    import runner

    differing = 0
    with tempfile.TemporaryDirectory() as work:
        scenarios = write_oracle_scenarios(seeds, Path(work))
        for pi in releases:
            reference_locations.oracle_writes_expected(Path(work), pi)
            for failure in runner.differences_from_expected(scenarios, pi):
                differing += 1
                print(f"(pi {pi}) {failure}")
        print(
            f"{len(scenarios)} scenarios of {len(seeds)} seeds from {seeds.start}, pi {releases}: {differing} differ"
        )
    return differing


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="a directory for the sessions of the seeds that differ")
    parser.add_argument("--path", action="append", choices=[p.name for p in PATHS_TO_COMPARE])
    parser.add_argument(
        "--oracle", action="store_true", help="compare with pi itself, not streamed with held"
    )
    parser.add_argument("--pi", action="append", help="with --oracle: this release only (default: each)")
    args = parser.parse_args()
    if args.oracle:
        import runner

        seeds = range(args.seed, args.seed + args.count)
        return 1 if against_pi(seeds, args.pi or list(runner.PI_VERSIONS)) else 0
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
