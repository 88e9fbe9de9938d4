"""``--session-index`` (or ``PI_SESSION_TEST_INDEX=1``): every vector runs with the persistent index
of its session files (session/scan_index.py) on, for files of any size. The vectors' files are small
and most are opened once, so each load of a file is made twice: the first writes its index, the
second, whose result the scenario gets, reads it. A test fails if a load that wrote an index did not
then read it, and a module of vectors fails if no load of it at all was read from an index (checked
per module that loads files, so that it holds in each pytest-xdist worker too). Without the option the vectors' files
are below the index's threshold: read by scanning alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pi_session_server.session import cache_dir, file_load, fork_source, scan_index

_read_from_index = [0]  # loads read from their index, in this process
_module_loads = [0, 0]  # loads in the current module, and those of them read from their index


@pytest.fixture(scope="module", autouse=True)
def some_load_read_from_its_index(request: pytest.FixtureRequest) -> Iterator[None]:
    _module_loads[:] = [0, 0]
    yield
    if _module_loads[0] and not _module_loads[1]:
        pytest.fail(f"--session-index: no session file of {request.module.__name__} was read from its index")


@pytest.fixture(autouse=True)
def through_the_index(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if not request.config.getoption("--session-index"):
        yield
        return
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv(cache_dir.NO_INDEX_ENV, raising=False)
    # written just before they are read: their indexes would be racy (cache_dir.RACY_NS), and a
    # racy index serves only a file that grew since
    monkeypatch.setattr(cache_dir, "RACY_NS", 0)
    real_load = file_load.load_lazy
    unread: list[str] = []

    def load_twice(fd: int, path: str, *args: Any, **kwargs: Any) -> Any:
        _loaded, source = real_load(fd, path, *args, **kwargs)
        source.close()
        wrote = scan_index.last_outcome.written
        result = real_load(fd, path, *args, **kwargs)
        _module_loads[0] += 1
        if scan_index.last_outcome.read in ("used", "grown"):
            _read_from_index[0] += 1
            _module_loads[1] += 1
        elif wrote:
            unread.append(f"{path}: {scan_index.last_outcome}")
        return result

    # (a manager's load, and the read of a fork's source)
    monkeypatch.setattr(file_load, "load_lazy", load_twice)
    monkeypatch.setattr(fork_source, "load_lazy", load_twice)
    yield
    assert not unread, f"indexes written but not read back: {unread}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.getoption("--session-index") and _read_from_index[0]:  # not the xdist controller's
        terminalreporter.write_line(f"session index: {_read_from_index[0]} loads read from their index")
