"""Shared fixtures of the reliability suite (crashes, concurrent writers, hostile input, paths, memory).

``--long`` (or ``PI_RELIABILITY_LONG=1``) turns on the long runs: more kills, more examples, the
100 MB line, the million-line file. Default runs stay within a few minutes on a small machine.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import reference_locations

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # reliability_rpc, reliability_helpers

from reliability_rpc import RawServer  # noqa: E402
from stuck_stat import stuck_stat_server  # noqa: E402

DATA = HERE / "data"
ORACLE_MODULE = reference_locations.session_manager_module()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long_only: runs only with --long / PI_RELIABILITY_LONG=1")


def long_enabled(config: pytest.Config) -> bool:
    try:
        flag = bool(config.getoption("--long"))
    except ValueError:  # option not registered (conftest not loaded early): the env var decides
        flag = False
    return flag or os.environ.get("PI_RELIABILITY_LONG", "") not in ("", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if long_enabled(config):
        return
    skip = pytest.mark.skip(reason="long run: pass --long or set PI_RELIABILITY_LONG=1")
    for item in items:
        if "long_only" in item.keywords:
            item.add_marker(skip)


_FIGURES: dict[str, object] = {}


@pytest.fixture(scope="session")
def figures() -> dict[str, object]:
    """Numbers a test wants in the run's summary (kills, appends, sizes): printed at the end."""
    return _FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _FIGURES:
        terminalreporter.section("reliability figures")
        for key, value in _FIGURES.items():
            terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session")
def long_run(pytestconfig: pytest.Config) -> bool:
    return long_enabled(pytestconfig)


@pytest.fixture(autouse=True, scope="session")
def _private_agent_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In-process library calls that fall back to the default session directory must not touch
    the real ~/.pi (servers get their own private HOME, see reliability_rpc)."""
    saved = os.environ.get("PI_CODING_AGENT_DIR")
    os.environ["PI_CODING_AGENT_DIR"] = str(tmp_path_factory.mktemp("agent-dir"))
    yield
    if saved is None:
        os.environ.pop("PI_CODING_AGENT_DIR", None)
    else:
        os.environ["PI_CODING_AGENT_DIR"] = saved


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    """The real sidecar process, initialized. The test fails if it died on its own."""
    srv = RawServer(tmp_path)
    try:
        srv.initialize()
        yield srv
        assert srv.alive(), f"the server exited (code {srv.process.poll()}):\n{srv.stderr_text()[-3000:]}"
        assert srv.garbage == [], f"the server wrote non-JSON bodies: {srv.garbage[:3]!r}"
    finally:
        srv.close()


@pytest.fixture(scope="session")
def oracle_module() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the reference (pi) writer cannot run")
    if not ORACLE_MODULE.is_file():
        pytest.skip(f"the pi oracle is missing ({ORACLE_MODULE}); set PI_ORACLE_DIR to its copy")
    return ORACLE_MODULE


@pytest.fixture
def stuck_flag(tmp_path: Path) -> Path:
    """While this file exists, a stat under ``stuck-mount`` waits (see stuck_stat.py)."""
    return tmp_path / "flag"


@pytest.fixture
def stuck_server(tmp_path: Path, stuck_flag: Path) -> Iterator[RawServer]:
    """A server whose stats under ``stuck-mount`` hang while ``stuck_flag`` exists."""
    with stuck_stat_server(tmp_path, stuck_flag) as server:
        yield server
