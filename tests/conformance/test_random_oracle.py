"""Fresh random scenarios against the oracle, under each pi release.

The committed vectors are fixed seeds; this draws new ones on every run: ``gen.py --pi 1.6.0`` (the
shared kit's generator with pi 1.6.0's operations: context edits, nested and keep-nothing
compactions, ...) writes a few scenarios, the oracle (``node run.mjs --batch DIR --rules ours --pi
VERSION``) writes their expected documents for both releases, and the library must reproduce each
byte for byte. The seed is printed on failure; ``PI_RANDOM_SEED=N`` replays it.

Skipped without node, the oracle copy with pi 0.86.1 and 1.6.0 installed, or the conformance kit
(their locations: ``tests/reference_locations.py``).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import reference_locations

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import runner  # noqa: E402

ORACLE = reference_locations.oracle_dir()
KIT = reference_locations.conformance_kit()
COUNT = 6

pytestmark = [
    pytest.mark.slow,  # the reference runs in node on each fresh draw
    pytest.mark.skipif(
        shutil.which("node") is None
        or not (ORACLE / "run.mjs").is_file()
        or not reference_locations.has_pi_160(ORACLE)
        or not (KIT / "gen.py").is_file(),
        reason="needs node, the oracle with pi 0.86.1 and 1.6.0 installed, and the shared kit's gen.py",
    ),
]


@pytest.fixture(scope="module")
def random_vectors(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    seed = int(os.environ.get("PI_RANDOM_SEED") or random.randrange(10_000, 2**31))
    out = tmp_path_factory.mktemp("random-1.6.0")
    subprocess.run(
        [
            sys.executable,
            str(KIT / "gen.py"),
            "--pi",
            "1.6.0",
            "--seed",
            str(seed),
            "--count",
            str(COUNT),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    for pi in runner.PI_VERSIONS:
        reference_locations.oracle_writes_expected(out, pi, ORACLE)
    return seed, out


@pytest.mark.parametrize("pi", runner.PI_VERSIONS)
def test_random_scenarios_agree_with_the_oracle(random_vectors: tuple[int, Path], pi: str) -> None:
    seed, directory = random_vectors
    scenarios = runner.find_scenarios(directory)
    assert len(scenarios) == COUNT
    failures = runner.differences_from_expected(scenarios, pi)
    assert not failures, f"gen.py --pi 1.6.0 --seed {seed} (PI_RANDOM_SEED={seed} replays it):\n" + "\n".join(
        failures
    )
