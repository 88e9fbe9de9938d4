"""Options shared by every test directory.

``--long`` is registered here, not in tests/reliability/conftest.py, so that it works whatever paths
pytest is given (``pytest --long``, ``bash scripts/test.sh --long``, ``pytest tests/reliability --long``):
pytest only takes options from conftest files it loads before parsing the command line.

The persistent indexes of the session files tests open (session/scan_index.py) go to a directory of
this test run, never to the user's cache; servers and commands the tests start inherit it.
COLUMNS is removed: the commands then print at the fixed width of a pipe, which the tests pin;
PI_CODING_AGENT_SESSION_DIR too, so that the commands look where a test's agent directory is.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator

import process_state
import pytest

if "PI_SESSION_INDEX_DIR" not in os.environ:
    _INDEX_DIR = tempfile.mkdtemp(prefix="pi-session-test-index-")
    os.environ["PI_SESSION_INDEX_DIR"] = _INDEX_DIR
    atexit.register(shutil.rmtree, _INDEX_DIR, True)

# The commands' output width follows COLUMNS (commands/_common.terminal_columns): a developer's
# exported COLUMNS would change the text tests pin, which they write for a pipe's fixed width.
os.environ.pop("COLUMNS", None)
# A developer's PI_CODING_AGENT_SESSION_DIR would send `list` and `check` there instead of the agent
# directory a test sets up (session/cli_session_dir.py).
os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)


@pytest.fixture(autouse=True)
def _process_state_kept() -> Iterator[None]:
    """A test that leaves a process-wide setting changed (process_state.py) errors at its teardown,
    with the setting put back: the tests after it in its worker run as they would alone. Set up
    before a test's other fixtures of its scope, so torn down after them (monkeypatch's undo)."""
    before = process_state.snapshot()
    yield
    changed = process_state.changes_since(before)
    if changed:
        pytest.fail("the test left process-wide state changed:\n" + "\n".join(changed), pytrace=False)


@pytest.fixture
def files_settle_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files a test writes and opens at once are taken as settled. An index written less than
    cache_dir.RACY_NS after its file changed is "racy" (the file may change again keeping its
    times) and serves only once the file grew: a test that reopens the file it just wrote would
    scan it again instead of reading its index."""
    from pi_session_server.session import cache_dir

    monkeypatch.setattr(cache_dir, "RACY_NS", 0)


@pytest.fixture
def tz() -> Iterator[Callable[[str], None]]:
    """Set this process's time zone (``TZ``, POSIX tzset); the one before is back after the test."""
    before = os.environ.get("TZ")

    def set_zone(zone: str) -> None:
        os.environ["TZ"] = zone
        time.tzset()

    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="reliability suite: longer runs (300 kills, 100 MB line, a million lines, more examples)",
    )
    parser.addoption(
        "--session-index",
        action="store_true",
        default=bool(os.environ.get("PI_SESSION_TEST_INDEX")),
        help="conformance: open every session file through its persistent index, whatever its size "
        "(each load writes the index, then loads again from it); also PI_SESSION_TEST_INDEX=1",
    )
