"""The conformance scenarios, driven through JSON-RPC instead of the Python API.

Every scenario of ``tests/conformance/vectors`` runs through one sidecar process (``wire_adapter``
maps each SessionManager op to its ``pi/*`` request) and must produce the expected document byte for
byte, as the library does in-process.

One documented difference: by default a write that fails (EEXIST/ENOENT) leaves the session as it
was, where pi keeps the failed entry in memory. Scenarios that exercise such a failure must agree up
to and including the failing op, and agree completely with a sidecar started with
``--keep-failed-appends`` (pi's behaviour).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_adapter import ROOT, Wire, WireApi, runner

VECTORS = ROOT / "tests" / "conformance" / "vectors"
SCENARIOS = runner.find_scenarios(VECTORS)
WRITE_OPS = {
    "appendMessage",
    "appendThinkingLevelChange",
    "appendModelChange",
    "appendUsage",
    "appendCompaction",
    "appendCustomEntry",
    "appendSessionInfo",
    "appendCustomMessageEntry",
    "appendLabelChange",
    "branchWithSummary",
}


def first_failed_write(expected: dict[str, Any]) -> int | None:
    for record in expected.get("ops", []):
        if record.get("op") in WRITE_OPS and record.get("errorCode") in ("EEXIST", "ENOENT"):
            return int(record["i"])
    return None


def _id(path: Path) -> str:
    return str(path.relative_to(VECTORS)).removesuffix(".scenario.json")


@pytest.fixture(scope="module")
def wire() -> Iterator[WireApi]:
    connection = Wire()
    yield WireApi(connection)
    connection.close()


@pytest.fixture(scope="module")
def reference_wire() -> Iterator[WireApi]:
    connection = Wire("--keep-failed-appends")
    yield WireApi(connection)
    connection.close()


def test_scenarios_were_found() -> None:
    assert len(SCENARIOS) > 700


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_scenario_through_the_wire(scenario: Path, wire: WireApi, reference_wire: WireApi) -> None:
    expected_text = runner.expected_path(scenario).read_text(encoding="utf-8")
    report = runner.run_scenario_report(scenario, wire)
    if report.text == expected_text:
        return
    expected = json.loads(expected_text)
    failed = first_failed_write(expected)
    if failed is None:
        diffs = runner.compare_texts(expected_text, report.text)
        pytest.fail(f"{_id(scenario)} differs over the wire: {diffs}\n{''.join(report.tracebacks[:1])}")
    # the documented difference: the same up to the failed write ...
    actual = json.loads(report.text)
    assert actual.get("start") == expected.get("start")
    assert actual["ops"][: failed + 1] == expected["ops"][: failed + 1]
    # ... and pi's behaviour exactly when asked for
    again = runner.run_scenario_report(scenario, reference_wire)
    assert again.text == expected_text, runner.compare_texts(expected_text, again.text)
