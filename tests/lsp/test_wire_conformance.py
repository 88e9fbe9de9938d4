"""The conformance scenarios, driven through JSON-RPC instead of the Python API.

Every scenario of ``tests/conformance/vectors`` runs through one sidecar process (``wire_adapter``
maps each SessionManager op to its ``pi/*`` request) and must produce the expected document byte for
byte, as the library does in-process.

Every scenario runs under both pi releases, each through a sidecar started with ``--pi`` that release
(the server's one choice of release), against that release's expected document
(``X.expected.pi-1.6.0.json``, ``X.expected.json`` for 0.86.1). A scenario that used an operation the
sidecar had no request for would be skipped, naming it; there is none.

The wire adds the adapter's mapping and the transport to what the in-process run checks (every
scenario, both releases, in ``tests/conformance``), so the fast run (``-m "not slow"``) sends a
representative subset: the hand-written scenarios (the kit's, at the top level, and ``extra/``),
which together use every operation any scenario uses (checked below), and every
``SAMPLE_EVERY``-th generated or damaged one, in name order. The others are marked ``slow``; CI runs
them too.

One documented difference (pi 0.86.1 only; pi 1.6.0 takes a failed entry back itself): by default a write that fails (EEXIST/ENOENT) leaves the
session as it was, where pi 0.86.1 keeps the failed entry in memory. Scenarios that exercise such a failure must agree up
to and including the failing op, and agree completely with a sidecar started with
``--keep-failed-appends`` (pi's behaviour).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_adapter import ROOT, Wire, WireApi, WireManager, runner

VECTORS = ROOT / "tests" / "conformance" / "vectors"
SCENARIOS = runner.find_scenarios(VECTORS)
HAND_WRITTEN = {VECTORS, VECTORS / "extra"}
SAMPLE_EVERY = 20
DRAWN = sorted(s for s in SCENARIOS if s.parent not in HAND_WRITTEN)
REPRESENTATIVE = {s for s in SCENARIOS if s.parent in HAND_WRITTEN} | set(DRAWN[::SAMPLE_EVERY])
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


def operations(scenario: Path) -> set[str]:
    """The reference names the scenario calls."""
    document = json.loads(scenario.read_text(encoding="utf-8"))
    calls = [document.get("start", {}), *document.get("ops", [])]
    return {op["op"] for op in calls if isinstance(op, dict) and isinstance(op.get("op"), str)}


def ops_without_request(scenario: Path) -> list[str]:
    """Reference names the scenario calls that the wire adapter cannot send (no ``pi/*`` request)."""
    return sorted(
        name
        for name in operations(scenario)
        if name in runner.INSTANCE_METHODS and not hasattr(WireManager, runner.API_NAMES[name])
    )


def first_failed_write(expected: dict[str, Any]) -> int | None:
    for record in expected.get("ops", []):
        if record.get("op") in WRITE_OPS and record.get("errorCode") in ("EEXIST", "ENOENT"):
            return int(record["i"])
    return None


def _case(scenario: Path, pi: str) -> Any:
    marks = () if scenario in REPRESENTATIVE else (pytest.mark.slow,)
    return pytest.param(scenario, pi, marks=marks)


CASES = [_case(scenario, pi) for pi in runner.PI_VERSIONS for scenario in SCENARIOS]


def _id(case: Any) -> str:
    if isinstance(case, Path):
        return str(case.relative_to(VECTORS)).removesuffix(".scenario.json")
    return f"pi-{case}"


WireFor = Callable[..., WireApi]


@pytest.fixture(scope="module")
def wire_for() -> Iterator[WireFor]:
    """``wire_for(pi, *extra_args)``: the module's sidecar started with ``--pi pi`` and those
    arguments (started on first use, kept for the module)."""
    started: dict[tuple[str, ...], tuple[Wire, WireApi]] = {}

    def wire(pi: str, *extra_args: str) -> WireApi:
        key = (pi, *extra_args)
        if key not in started:
            connection = Wire("--pi", pi, *extra_args)
            started[key] = (connection, WireApi(connection, pi))
        return started[key][1]

    yield wire
    for connection, _ in started.values():
        connection.close()


def test_scenarios_were_found() -> None:
    assert len(SCENARIOS) > 700


def test_the_adapter_sends_every_operation() -> None:
    """No scenario is left out: the sidecar has a request for every operation of both releases."""
    assert {str(s): ops_without_request(s) for s in SCENARIOS if ops_without_request(s)} == {}


def test_the_fast_subset_sends_every_operation() -> None:
    every = set().union(*map(operations, SCENARIOS))
    assert every == set().union(*map(operations, REPRESENTATIVE))
    assert len(every) > 60
    assert len(SCENARIOS) // 10 < len(REPRESENTATIVE) < len(SCENARIOS) // 4


@pytest.mark.parametrize(("scenario", "pi"), CASES, ids=_id)
def test_scenario_through_the_wire(scenario: Path, pi: str, wire_for: WireFor) -> None:
    missing = ops_without_request(scenario)
    if missing:
        pytest.skip(f"the sidecar has no request for {', '.join(missing)} yet")
    expected_text = runner.expected_path(scenario, pi).read_text(encoding="utf-8")
    report = runner.run_scenario_report(scenario, wire_for(pi))
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
    again = runner.run_scenario_report(scenario, wire_for(pi, "--keep-failed-appends"))
    assert again.text == expected_text, runner.compare_texts(expected_text, again.text)
