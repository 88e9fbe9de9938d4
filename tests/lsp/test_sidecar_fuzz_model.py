"""The sidecar's writes against the library in this process (see sidecar_model.py): a server that
does not watch its file, and one that watches it while other programs append, cut lines short and
rewrite it. At the end pi (0.86.1 and 1.6.0, the oracle) loads files the server wrote and gives
the same tree and context as the library does (skipped without node and the oracle).

``PI_SIDECAR_FUZZ_SEED=N`` runs seed N instead of the default ones, ``PI_SIDECAR_FUZZ_STEPS=N`` N steps
a run; more seeds run under ``slow``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sidecar_fuzz import seeds
from sidecar_model import PI_VERSIONS, STEPS, Model, oracle_agrees, oracle_here

pytestmark = pytest.mark.timeout(900)

#: the seeds run under the slow marker, besides the default ones
SLOW_SEEDS = range(100, 130)


def run(tmp_path: Path, seed: int, watching: bool, oracle_files: int = 1) -> None:
    """``oracle_files``: how many files the oracle loads at the end, the last one first."""
    pi = PI_VERSIONS[seed % len(PI_VERSIONS)]  # (the server and the model follow one release)
    model = Model(tmp_path, seed, pi, watching=watching)
    try:
        for _ in range(STEPS):
            model.step()
            model.compare()
            model.kept_what_others_left()
        final = model.wire_file
    finally:
        model.close()
    print(f"seed {seed}, pi {pi}, watching {watching}: {model.counts}")
    if not oracle_here():
        return
    others = [wire for wire, _ in model.files if wire != final and wire.exists()]
    loaded = [final] if final is not None and final.exists() else []
    loaded += random.Random(seed).sample(others, min(len(others), oracle_files - len(loaded)))
    for number, path in enumerate(loaded):
        oracle_agrees(tmp_path / f"oracle-{number}", path)


@pytest.mark.parametrize("seed", seeds())
def test_writes_over_the_wire_match_the_library(tmp_path: Path, seed: int) -> None:
    run(tmp_path, seed, watching=False)


@pytest.mark.parametrize("seed", seeds()[:1])  # (each seed waits on the watcher: more under slow)
def test_a_watching_server_follows_other_programs_as_the_library_does(tmp_path: Path, seed: int) -> None:
    run(tmp_path, seed, watching=True)


@pytest.mark.slow
@pytest.mark.parametrize("watching", [False, True])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_more_seeds(tmp_path: Path, seed: int, watching: bool) -> None:
    run(tmp_path, seed, watching, oracle_files=3)
