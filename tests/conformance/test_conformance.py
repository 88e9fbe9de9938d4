"""Conformance: every vector scenario must reproduce the oracle's expected document byte for byte,
under each pi release the library follows.

The vectors (vectors/**/X.scenario.json) come with one expected document per pi release, produced by
the reference implementation of that release patched with our deviations (``node run.mjs --pi
VERSION --rules ours``; see scripts/regen_vectors.py): ``X.expected.json`` for pi 0.86.1,
``X.expected.pi-1.6.0.json`` for pi 1.6.0. Scenarios run in-process through
runner.run_scenario_report with the library following that release (``pi=``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import runner  # noqa: E402

VECTORS = HERE / "vectors"
SCENARIOS = runner.find_scenarios(VECTORS)
CASES = [(scenario, pi) for pi in runner.PI_VERSIONS for scenario in SCENARIOS]


def test_both_releases_are_covered() -> None:
    assert runner.PI_VERSIONS == ("0.86.1", "1.6.0")
    assert runner.DEFAULT_PI == "1.6.0"


@pytest.mark.parametrize("pi", runner.PI_VERSIONS)
def test_vectors_are_present(pi: str) -> None:
    assert len(SCENARIOS) >= 1200
    assert sum("/v16-" in str(p) for p in SCENARIOS) == 18
    assert sum(p.parent.name == "generated-1.6.0" for p in SCENARIOS) >= 230
    missing = [p.name for p in SCENARIOS if not runner.expected_path(p, pi).exists()]
    assert not missing, f"scenarios without an expected file for pi {pi}: {missing[:5]}"


def test_expected_file_names() -> None:
    scenario = VECTORS / "bc-01-empty.scenario.json"
    assert runner.expected_path(scenario, "0.86.1").name == "bc-01-empty.expected.json"
    assert runner.expected_path(scenario, "1.6.0").name == "bc-01-empty.expected.pi-1.6.0.json"


@pytest.mark.parametrize(
    ("scenario", "pi"), CASES, ids=[f"{p.relative_to(VECTORS)}@pi-{pi}" for p, pi in CASES]
)
def test_scenario_matches_oracle(scenario: Path, pi: str) -> None:
    expected = runner.expected_path(scenario, pi).read_text(encoding="utf-8")
    report = runner.run_scenario_report(scenario, pi=pi)
    if report.text != expected:
        lines = runner.compare_texts(expected, report.text, max_diffs=10)
        if report.tracebacks:
            lines.append("Python exceptions raised by the library:")
            lines += report.tracebacks[:3]
        pytest.fail("\n".join(lines), pytrace=False)
