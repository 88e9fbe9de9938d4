"""Random version 1 and version 2 sessions (tests/old_session_fuzz.py) opened and forked by pi
itself and by the library, under each pi release: the normalized documents are equal (the ids a
version 1 migration draws are random in pi and derived from the file in ours: the normalization
names each by its first appearance). ``scripts/fuzz_old_sessions.py --oracle`` runs many more.

Skipped without node and the oracle copy with pi 0.86.1 and 1.6.0 installed
(``tests/reference_locations.py``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import reference_locations
from old_session_fuzz import write_oracle_scenarios

sys.path.insert(0, str(Path(__file__).resolve().parent))

import runner

ORACLE = reference_locations.oracle_dir()
SEEDS = range(12)

pytestmark = [
    pytest.mark.slow,  # the reference runs in node on each session
    pytest.mark.skipif(
        shutil.which("node") is None
        or not (ORACLE / "run.mjs").is_file()
        or not reference_locations.has_pi_160(ORACLE),
        reason="needs node and the oracle with pi 0.86.1 and 1.6.0 installed",
    ),
]


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("old-sessions")
    written = write_oracle_scenarios(SEEDS, directory)
    for pi in runner.PI_VERSIONS:
        reference_locations.oracle_writes_expected(directory, pi, ORACLE)
    return written


@pytest.mark.parametrize("pi", runner.PI_VERSIONS)
def test_random_old_sessions_are_opened_and_forked_as_pi_does(scenarios: list[Path], pi: str) -> None:
    assert len(scenarios) == 2 * len(SEEDS)
    failures = runner.differences_from_expected(scenarios, pi)
    assert not failures, "\n".join(failures)
