"""The conformance scenarios, driven through JSON-RPC instead of the Python API.

Every scenario of ``tests/conformance/vectors`` runs through one sidecar process (``wire_adapter``
maps each SessionManager op to its ``pi/*`` request) and must produce the expected document byte for
byte, as the library does in-process.

The sidecar follows the library's default pi release (1.6.0), so the expected documents are that
release's (``X.expected.pi-1.6.0.json``). Scenarios that use an operation the sidecar has no request
for yet are skipped, naming it.

One documented difference (pi 0.86.1 only): by default a write that fails (EEXIST/ENOENT) leaves the
session as it was, where pi 0.86.1 keeps the failed entry in memory. Scenarios that exercise such a failure must agree up
to and including the failing op, and agree completely with a sidecar started with
``--keep-failed-appends`` (pi's behaviour).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_adapter import ROOT, Wire, WireApi, WireManager, runner

VECTORS = ROOT / "tests" / "conformance" / "vectors"
SCENARIOS = runner.find_scenarios(VECTORS)
PI = runner.DEFAULT_PI  # the release the sidecar follows
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
    "appendContextEdit",
}


def ops_without_request(scenario: Path) -> list[str]:
    """Reference names the scenario calls that the wire adapter cannot send (no ``pi/*`` request)."""
    document = json.loads(scenario.read_text(encoding="utf-8"))
    calls = [document.get("start", {}), *document.get("ops", [])]
    names = {op.get("op") for op in calls if isinstance(op, dict)}
    return sorted(
        name
        for name in names
        if isinstance(name, str)
        and name in runner.INSTANCE_METHODS
        and not hasattr(WireManager, runner.API_NAMES[name])
    )


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
    missing = ops_without_request(scenario)
    if missing:
        pytest.skip(f"the sidecar has no request for {', '.join(missing)} yet")
    expected_text = runner.expected_path(scenario, PI).read_text(encoding="utf-8")
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
