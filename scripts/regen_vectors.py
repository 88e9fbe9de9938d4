#!/usr/bin/env python3
"""Regenerate the conformance vectors in tests/conformance/vectors/ with the oracle.

    python3 scripts/regen_vectors.py [--copy-shared] [--check] [--oracle DIR] [--shared DIR]

Steps (each idempotent):

1. ``--copy-shared``: copy the hand-written scenarios, their expected/reference outputs, the
   seed-1 generated scenarios and ``fixtures/`` from the shared conformance kit.
2. Generate the random scenarios (the fixed seed list ``GEN_BATCHES`` below) into
   ``vectors/generated/`` with the kit's ``gen.py``, and the extra hand-written scenarios into
   ``vectors/extra/`` with ``tests/conformance/make_extra.py``, then damaged copies of real and
   generated session files into ``vectors/damaged/`` with ``scripts/fuzz_files.py``
   (``FUZZ_BATCHES``).
3. Run the oracle (``node run.mjs --batch DIR --rules ours``, plus ``--check`` with ``--check``)
   on every vector directory: it writes ``X.expected.json`` (our rules) and, where the plain
   reference differs, ``X.reference.json``.

Needs node and a copy of the oracle with ``node_modules`` (``npm ci`` in it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "conformance" / "vectors"
MAKE_EXTRA = REPO / "tests" / "conformance" / "make_extra.py"

# (seed, count, min_ops, max_ops); None = gen.py's default. Seed 1 comes from the shared kit.
GEN_BATCHES: list[tuple[int, int, int | None, int | None]] = [
    (2, 100, None, None),
    (3, 100, None, None),
    (4, 100, None, None),
    (5, 100, None, None),
    (6, 100, None, None),
    (7, 100, None, None),
    (8, 30, 60, 150),
]

# (seed, count) of scripts/fuzz_files.py: damaged copies of real and generated session files.
FUZZ_BATCHES: list[tuple[int, int]] = [(1, 100), (2, 100)]
FUZZ_FILES = REPO / "scripts" / "fuzz_files.py"

VECTOR_SUFFIXES = (".scenario.json", ".expected.json", ".reference.json")


def copy_shared(shared: Path) -> None:
    for src_dir, dst_dir in ((shared, VECTORS), (shared / "generated", VECTORS / "generated")):
        dst_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(src_dir.iterdir()):
            if f.is_file() and f.name.endswith(VECTOR_SUFFIXES):
                shutil.copyfile(f, dst_dir / f.name)
    fixtures = VECTORS / "fixtures"
    if fixtures.exists():
        shutil.rmtree(fixtures)
    shutil.copytree(shared / "fixtures", fixtures)
    for p in fixtures.rglob("*"):  # the shared kit is read-only; our copies must stay editable
        p.chmod(0o755 if p.is_dir() else 0o644)


def generate(shared: Path) -> None:
    out = VECTORS / "generated"
    out.mkdir(parents=True, exist_ok=True)
    for seed, count, min_ops, max_ops in GEN_BATCHES:
        cmd = [sys.executable, str(shared / "gen.py"), "--seed", str(seed), "--count", str(count)]
        cmd += ["--out", str(out)]
        if min_ops is not None:
            cmd += ["--min-ops", str(min_ops)]
        if max_ops is not None:
            cmd += ["--max-ops", str(max_ops)]
        subprocess.run(cmd, check=True)
    subprocess.run([sys.executable, str(MAKE_EXTRA), "--out", str(VECTORS / "extra")], check=True)
    for seed, count in FUZZ_BATCHES:  # after gen.py: its files are among the sources
        cmd = [sys.executable, str(FUZZ_FILES), "--seed", str(seed), "--count", str(count)]
        cmd += ["--out", str(VECTORS / "damaged"), "--sources", str(out)]
        subprocess.run(cmd, check=True)


def run_oracle(oracle: Path, check: bool) -> int:
    failures = 0
    for d in (VECTORS, VECTORS / "generated", VECTORS / "extra", VECTORS / "damaged"):
        if not d.is_dir():
            continue
        cmd = ["node", "run.mjs", "--batch", str(d), "--rules", "ours"] + (["--check"] if check else [])
        print("+", " ".join(cmd), file=sys.stderr)
        failures += subprocess.run(cmd, cwd=oracle).returncode != 0
    return failures


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default="/work/shared/conformance", help="the shared conformance kit")
    ap.add_argument("--oracle", default="/var/tmp/oracle", help="oracle copy with node_modules")
    ap.add_argument("--copy-shared", action="store_true", help="(re)copy the shared kit's vectors first")
    ap.add_argument("--check", action="store_true", help="only check the expected files against the oracle")
    ap.add_argument("--no-generate", action="store_true", help="skip gen.py and make_extra.py")
    args = ap.parse_args(argv)
    shared, oracle = Path(args.shared), Path(args.oracle)
    if args.copy_shared and not args.check:
        copy_shared(shared)
    if not args.no_generate and not args.check:
        generate(shared)
    failures = run_oracle(oracle, args.check)
    size = sum(p.stat().st_size for p in VECTORS.rglob("*") if p.is_file())
    scenarios = sum(1 for _ in VECTORS.rglob("*.scenario.json"))
    print(f"{scenarios} scenarios, {size / 1e6:.1f} MB in {VECTORS.relative_to(REPO)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
