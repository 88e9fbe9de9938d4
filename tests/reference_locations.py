"""Where the test tooling finds pi's reference implementation and the conformance kit: the one place
that says so, each with an environment override.

* ``PI_ORACLE_DIR``: a copy of the reference runner (``run.mjs``) with its ``node_modules`` installed
  (``npm ci``): pi 0.86.1 as ``@earendil-works/pi-coding-agent``, pi 1.6.0 as ``pi-1.6.0``. Default
  ``/var/tmp/oracle``; ``.ci/run`` installs one of its own and sets the variable. Tests that run pi
  itself are skipped without it.
* ``PI_CONFORMANCE_KIT``: the conformance kit (the scenario generator ``gen.py``, its fixtures).
  Default: ``../shared/conformance`` beside the repository, where CI has it.

The tests import this module by name (``tests/`` is on their path); the scripts under ``bench/`` and
``scripts/`` put ``tests/`` on their path to do the same. ``python tests/reference_locations.py
oracle`` (or ``kit``) prints the directory, for shell scripts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

ORACLE_DIR_ENV = "PI_ORACLE_DIR"
DEFAULT_ORACLE_DIR = Path("/var/tmp/oracle")

CONFORMANCE_KIT_ENV = "PI_CONFORMANCE_KIT"
DEFAULT_CONFORMANCE_KIT = Path(os.path.normpath(REPOSITORY / "../shared/conformance"))

# inside the oracle directory
PI_086_PACKAGE = Path("node_modules/@earendil-works/pi-coding-agent")
PI_160_PACKAGE = Path("node_modules/pi-1.6.0")
SESSION_MANAGER_MODULE = Path("dist/core/session-manager.js")


def oracle_dir() -> Path:
    """The reference runner's copy with its ``node_modules`` (``PI_ORACLE_DIR``)."""
    return Path(os.environ.get(ORACLE_DIR_ENV) or DEFAULT_ORACLE_DIR)


def conformance_kit() -> Path:
    """The conformance kit's directory (``PI_CONFORMANCE_KIT``)."""
    return Path(os.environ.get(CONFORMANCE_KIT_ENV) or DEFAULT_CONFORMANCE_KIT)


def pi_086_package(oracle: Path | None = None) -> Path:
    """pi 0.86.1's installed package in ``oracle`` (default: :func:`oracle_dir`)."""
    return (oracle or oracle_dir()) / PI_086_PACKAGE


def session_manager_module(oracle: Path | None = None) -> Path:
    """pi 0.86.1's ``SessionManager`` module in ``oracle`` (default: :func:`oracle_dir`)."""
    return pi_086_package(oracle) / SESSION_MANAGER_MODULE


def has_pi_160(oracle: Path | None = None) -> bool:
    """Whether ``oracle`` (default: :func:`oracle_dir`) has pi 1.6.0 installed beside pi 0.86.1."""
    return ((oracle or oracle_dir()) / PI_160_PACKAGE).is_dir()


class OracleFailed(Exception):
    """The reference runner did not write what it was asked to."""


def oracle_writes_expected(scenarios: Path, pi: str, oracle: Path | None = None) -> None:
    """The reference runner in ``oracle`` (default: :func:`oracle_dir`) writes, beside each scenario
    in the directory ``scenarios``, the document pi ``pi`` gives for it under our rules.

    A failure says what the runner printed: its exit status alone hides why (a worker of the runner
    that ends as it starts, as when its ``node_modules`` are being installed again, ends the runner
    with status 1 as it stops its other workers)."""
    ran = subprocess.run(
        ["node", "run.mjs", "--batch", str(scenarios), "--rules", "ours", "--pi", pi],
        cwd=oracle or oracle_dir(),
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode != 0:
        raise OracleFailed(f"the reference runner (pi {pi}) exited {ran.returncode}:\n{ran.stderr[-4000:]}")


if __name__ == "__main__":
    which = sys.argv[1:] or ["oracle"]
    if which not in (["oracle"], ["kit"]):
        sys.exit("usage: python tests/reference_locations.py [oracle|kit]")
    print(oracle_dir() if which == ["oracle"] else conformance_kit())
