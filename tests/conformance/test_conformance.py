"""Conformance: every vector scenario must reproduce the oracle's expected document byte for byte.

The vectors (vectors/**/X.scenario.json + X.expected.json) were produced by the reference
implementation patched with our deviations (``node run.mjs --rules ours``; see
scripts/regen_vectors.py). Scenarios run in-process through runner.run_scenario_report.
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


def test_vectors_are_present() -> None:
    assert len(SCENARIOS) >= 700
    missing = [p.name for p in SCENARIOS if not runner.expected_path(p).exists()]
    assert not missing, f"scenarios without an expected file: {missing[:5]}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[str(p.relative_to(VECTORS)) for p in SCENARIOS])
def test_scenario_matches_oracle(scenario: Path) -> None:
    expected = runner.expected_path(scenario).read_text(encoding="utf-8")
    report = runner.run_scenario_report(scenario)
    if report.text != expected:
        lines = runner.compare_texts(expected, report.text, max_diffs=10)
        if report.tracebacks:
            lines.append("Python exceptions raised by the library:")
            lines += report.tracebacks[:3]
        pytest.fail("\n".join(lines), pytrace=False)
