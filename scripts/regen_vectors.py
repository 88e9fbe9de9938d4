#!/usr/bin/env python3
"""Regenerate the conformance vectors in tests/conformance/vectors/ with the oracle.

    python3 scripts/regen_vectors.py [--copy-shared] [--check] [--pi VERSION|all] [--oracle DIR] [--shared DIR]

Steps (each idempotent):

1. ``--copy-shared``: copy the hand-written scenarios, their expected/reference outputs for every
   pi version, the kit's generated scenarios (``generated/gen-1-*``, ``generated-1.6.0/``) and
   ``fixtures/`` from the shared conformance kit.
2. Generate the random scenarios (the fixed seed lists ``GEN_BATCHES`` and, with ``gen.py --pi
   1.6.0``, ``GEN16_BATCHES`` below) into ``vectors/generated/`` and ``vectors/generated-1.6.0/``
   with the kit's ``gen.py``, and the extra hand-written scenarios into ``vectors/extra/`` with
   ``tests/conformance/make_extra.py``, then damaged copies of real and generated session files
   into ``vectors/damaged/`` with ``scripts/fuzz_files.py`` (``FUZZ_BATCHES``).
3. Run the oracle (``node run.mjs --batch DIR --rules ours --pi VERSION``, plus ``--check`` with
   ``--check``) on every vector directory, for each pi version asked for (``--pi``; default: all):
   it writes the version's expected file (``X.expected.json`` for 0.86.1,
   ``X.expected.pi-1.6.0.json`` for 1.6.0: our rules) and, where the plain reference differs, its
   reference file (``X.reference.json``, ``X.reference.pi-1.6.0.json``).

Needs node and a copy of the oracle with ``node_modules`` (``npm ci`` in it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # reference_locations: where the oracle copy and the kit are
import reference_locations  # noqa: E402

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

# (seed, count) of gen.py --pi 1.6.0 (context edits, nested and keep-nothing compactions, first
# write at a user message). Seed 1 comes from the shared kit.
GEN16_BATCHES: list[tuple[int, int]] = [(2, 100), (3, 100)]

# pi versions the oracle runs, oldest first (its --pi values)
PI_VERSIONS = ("0.86.1", "1.6.0")

# (seed, count) of scripts/fuzz_files.py: damaged copies of real and generated session files.
FUZZ_BATCHES: list[tuple[int, int]] = [(1, 100), (2, 100)]
FUZZ_FILES = REPO / "scripts" / "fuzz_files.py"

VECTOR_SUFFIXES = (
    ".scenario.json",
    ".expected.json",
    ".reference.json",
    *(f".{kind}.pi-{pi}.json" for pi in PI_VERSIONS[1:] for kind in ("expected", "reference")),
)
VECTOR_DIRS = ("", "generated", "generated-1.6.0", "extra", "damaged")


def copy_shared(shared: Path) -> None:
    for sub in ("", "generated", "generated-1.6.0"):
        src_dir, dst_dir = shared / sub, VECTORS / sub
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
    out16 = VECTORS / "generated-1.6.0"
    out16.mkdir(parents=True, exist_ok=True)
    for seed, count in GEN16_BATCHES:
        cmd = [sys.executable, str(shared / "gen.py"), "--pi", "1.6.0", "--seed", str(seed)]
        subprocess.run([*cmd, "--count", str(count), "--out", str(out16)], check=True)
    subprocess.run([sys.executable, str(MAKE_EXTRA), "--out", str(VECTORS / "extra")], check=True)
    for seed, count in FUZZ_BATCHES:  # after gen.py: its files are among the sources
        cmd = [sys.executable, str(FUZZ_FILES), "--seed", str(seed), "--count", str(count)]
        cmd += ["--out", str(VECTORS / "damaged"), "--sources", str(out)]
        subprocess.run(cmd, check=True)


def run_oracle(oracle: Path, check: bool, versions: tuple[str, ...]) -> int:
    failures = 0
    for pi in versions:
        for sub in VECTOR_DIRS:
            d = VECTORS / sub
            if not d.is_dir():
                continue
            cmd = ["node", "run.mjs", "--batch", str(d), "--rules", "ours", "--pi", pi]
            cmd += ["--check"] if check else []
            print("+", " ".join(cmd), file=sys.stderr)
            failures += subprocess.run(cmd, cwd=oracle).returncode != 0
    return failures


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--shared",
        default=str(reference_locations.conformance_kit()),
        help=f"the shared conformance kit (default: ${reference_locations.CONFORMANCE_KIT_ENV} or %(default)s)",
    )
    ap.add_argument(
        "--oracle",
        default=str(reference_locations.oracle_dir()),
        help=f"oracle copy with node_modules (default: ${reference_locations.ORACLE_DIR_ENV} or %(default)s)",
    )
    ap.add_argument("--copy-shared", action="store_true", help="(re)copy the shared kit's vectors first")
    ap.add_argument("--check", action="store_true", help="only check the expected files against the oracle")
    ap.add_argument("--no-generate", action="store_true", help="skip gen.py and make_extra.py")
    ap.add_argument(
        "--pi",
        choices=(*PI_VERSIONS, "all"),
        default="all",
        help="the pi version(s) whose expected files the oracle writes or checks (default: all)",
    )
    args = ap.parse_args(argv)
    shared, oracle = Path(args.shared), Path(args.oracle)
    if args.copy_shared and not args.check:
        copy_shared(shared)
    if not args.no_generate and not args.check:
        generate(shared)
    versions = PI_VERSIONS if args.pi == "all" else (args.pi,)
    failures = run_oracle(oracle, args.check, versions)
    size = sum(p.stat().st_size for p in VECTORS.rglob("*") if p.is_file())
    scenarios = sum(1 for _ in VECTORS.rglob("*.scenario.json"))
    print(f"{scenarios} scenarios, {size / 1e6:.1f} MB in {VECTORS.relative_to(REPO)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
