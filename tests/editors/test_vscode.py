"""The VS Code extension (editors/vscode): its unit layer (node:test against a stub of the `vscode`
module) when its node_modules are installed, and the end-to-end test in a real VS Code
(scripts/e2e.sh: code-server + chromium + playwright-core) when PI_E2E_VSCODE=1.

CI runs both directly (see editors/README.md); these wrappers let `pytest tests/editors` do it too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VSCODE = Path(__file__).resolve().parents[2] / "editors" / "vscode"


def summary(output: str, pattern: str) -> tuple[int, int] | None:
    match = re.search(pattern, output, re.MULTILINE)
    return (int(match.group(1)), int(match.group(2))) if match else None


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
@pytest.mark.skipif(
    not (VSCODE / "node_modules" / "typescript").exists(),
    reason="editors/vscode/node_modules missing: run `npm ci` in editors/vscode",
)
def test_vscode_unit_layer() -> None:
    result = subprocess.run(["npm", "test"], cwd=VSCODE, capture_output=True, text=True, timeout=300)
    report = f"{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    pass_fail = re.findall(r"^# (pass|fail) (\d+)$", result.stdout, re.MULTILINE)
    counts = {name: int(n) for name, n in pass_fail}
    assert result.returncode == 0, report
    assert counts.get("fail") == 0 and counts.get("pass", 0) >= 30, report


@pytest.mark.skipif(
    os.environ.get("PI_E2E_VSCODE") != "1", reason="set PI_E2E_VSCODE=1 to run VS Code end to end"
)
def test_vscode_end_to_end() -> None:
    # not pytest's temporary folder, whose old runs pytest deletes: a failed run's screenshots and
    # logs stay where its report names them ($ARTIFACTS, else editors/vscode/test-artifacts)
    artifacts = Path(os.environ.get("ARTIFACTS") or VSCODE / "test-artifacts")
    env = {**os.environ, "PY": os.environ.get("PY", sys.executable), "ARTIFACTS": str(artifacts)}
    result = subprocess.run(
        ["bash", str(VSCODE / "scripts" / "e2e.sh")],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    shown = re.search(r"^\[e2e\] this run's screenshots: (.+)$", result.stdout, re.MULTILINE)
    report = (
        f"{result.stdout[-6000:]}\n{result.stderr[-3000:]}\n"
        f"the run's screenshots and logs: {shown.group(1) if shown else '(not said)'}"
    )
    counts = summary(result.stdout, r"^(\d+) passed, (\d+) failed$")
    assert counts is not None, report
    assert counts[1] == 0 and result.returncode == 0, report
    assert shown is not None, report
    run = Path(shown.group(1))  # the run's own folder, run.XXXXXX
    assert run.resolve().parent == artifacts.resolve() and (run / "e2e.png").exists(), report
