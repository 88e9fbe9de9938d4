"""``pi-session context FILE --json [--leaf ID] [--pi VERSION]`` on files written by pi 1.6.0 prints
exactly what pi's own ``JSON.stringify(buildSessionContext(), null, 2)`` gives, at the leaf and at
every entry, for each pi release.

The expectations (``data/pi160_contexts/contexts.pi-VERSION.json``) were written by pi itself with
``tests/node_client/context_probe.mjs``; the first test needs no node. The second one (skipped
without node and the oracle copy) runs the probe again and checks that the committed expectations
are still what pi prints.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import reference_locations

from pi_session_server import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "conformance" / "vectors" / "fixtures" / "real-1.6.0"
DATA = Path(__file__).parent / "data" / "pi160_contexts"
PROBE = ROOT / "tests" / "node_client" / "context_probe.mjs"
ORACLE = reference_locations.oracle_dir()
RELEASES = ["1.6.0", "0.86.1"]
FILES = sorted(p.name for p in FIXTURES.glob("*.jsonl"))


def expectations(pi: str) -> dict[str, dict[str, object]]:
    return json.loads((DATA / f"contexts.pi-{pi}.json").read_text(encoding="utf-8"))


def context_output(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["context", *args]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out


def test_every_fixture_has_expectations() -> None:
    assert len(FILES) == 7
    for pi in RELEASES:
        assert sorted(expectations(pi)) == FILES


@pytest.mark.parametrize("pi", RELEASES)
@pytest.mark.parametrize("name", FILES)
def test_context_json_is_pis_own(capsys: pytest.CaptureFixture[str], name: str, pi: str) -> None:
    expected = expectations(pi)[name]
    path = str(FIXTURES / name)
    assert context_output(capsys, path, "--json", "--pi", pi) == expected["leaf"] + "\n"
    at = expected["at"]
    assert isinstance(at, dict) and at
    for entry_id, text in at.items():
        assert context_output(capsys, path, "--json", "--pi", pi, "--leaf", entry_id) == text + "\n", entry_id


def test_the_default_release_is_1_6_0(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "pi160-ctxedit-basic.jsonl")
    text = context_output(capsys, path, "--json")
    assert text == expectations("1.6.0")["pi160-ctxedit-basic.jsonl"]["leaf"] + "\n"
    assert text != expectations("0.86.1")["pi160-ctxedit-basic.jsonl"]["leaf"] + "\n"  # the edits count


@pytest.mark.skipif(
    shutil.which("node") is None or not reference_locations.has_pi_160(ORACLE),
    reason="needs node and the oracle copy with pi 0.86.1 and 1.6.0 installed",
)
@pytest.mark.parametrize("pi", RELEASES)
def test_expectations_are_what_pi_prints_now(pi: str) -> None:
    files = [str(FIXTURES / name) for name in FILES]
    probe = subprocess.run(
        ["node", str(PROBE), str(ORACLE), pi, *files], capture_output=True, text=True, check=True
    )
    assert json.loads(probe.stdout) == expectations(pi)
