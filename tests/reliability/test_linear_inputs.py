"""Inputs of megabytes and listings of thousands cost linear work (issue 20, findings 7 and 12).

* A path of 2 MB, and a session whose header ``cwd`` is 2 MB, through path normalization, ``open``,
  ``list`` with a cwd filter and ``pi-session tree`` (Node's path normalization, ported literally,
  built its result by string concatenation: quadratic). Each runs in a forked child with a time
  bound far above its linear cost (well under a second) and far below the quadratic one (minutes).
* ``list``/``listAll`` of 10,000 sessions with a progress callback, which gets the sorted (and
  filtered) partial list every 10 (``listAll``: 100) files. The work is counted, not timed: the
  Python calls made with progress must stay within a small factor of those made without.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import TS, run_bounded

from pi_session_server.errors import InvalidArgValueError, PiSessionError
from pi_session_server.session import SessionManager
from pi_session_server.session.listing import list_all_sessions, list_sessions
from pi_session_server.session.paths import file_url_to_path, node_join, node_normalize, resolve_path

pytestmark = pytest.mark.timeout(300)

BOUND = 20  # seconds; the linear cost of each case is well under one


def _assert_bounded(what: str, target: Callable[..., None], *args: Any) -> None:
    result = run_bounded(BOUND, target, *args)
    assert result.finished, f"{what} did not finish within {BOUND} s"
    assert not result.error, f"{what} failed:\n{result.error[-3000:]}"


# -- finding 7: paths of megabytes -----------------------------------------------------------------

BIG_PATH = "/" + "ab/" * 700_000  # 2.1 MB
BIG_DOTS = "/" + "a/./b/../../" * 180_000  # 2.2 MB of segments that cancel out


def _normalize_big_paths() -> None:
    assert resolve_path(BIG_PATH) == BIG_PATH[:-1]
    assert node_normalize(BIG_PATH + "x") == BIG_PATH + "x"
    assert node_join(BIG_PATH, "..", "x") == BIG_PATH[:-4] + "/x"
    assert resolve_path(BIG_DOTS) == "/"
    assert file_url_to_path("file://" + BIG_PATH) == BIG_PATH
    try:
        resolve_path(BIG_PATH + "\x00")
    except InvalidArgValueError as err:
        assert len(str(err)) < 300
    else:
        raise AssertionError("a NUL byte was accepted")


def test_a_2mb_path_is_normalized_in_linear_time():
    _assert_bounded("normalizing a 2 MB path", _normalize_big_paths)


def _write_under_big_paths(sessions: str) -> None:
    """Where a file would be written under a 2 MB path (the kernel refuses such a path): a clear
    file-system error, not a RecursionError from creating its directories level by level."""
    source = str(Path(sessions) / "s.jsonl")
    SessionManager.create("/p", sessions).close()
    for what, call in [
        ("open", lambda: SessionManager.open(BIG_PATH + "s.jsonl")),
        ("create in a session dir", lambda: SessionManager.create("/p", BIG_PATH)),
        ("create for a cwd", lambda: SessionManager.create(BIG_PATH)),
        ("fork", lambda: SessionManager.fork_from(source, "/p", BIG_PATH)),
    ]:
        try:
            call()
        except (OSError, PiSessionError) as err:
            assert "too long" in str(err).lower() or "ENAMETOOLONG" in str(err), (what, err)
        else:
            raise AssertionError(f"{what} under a 2 MB path did not fail")


def test_a_2mb_path_where_files_are_written_fails_cleanly(tmp_path: Path):
    _session_with_big_cwd(tmp_path / "sessions")
    _assert_bounded("writing under a 2 MB path", _write_under_big_paths, str(tmp_path / "sessions"))


BIG_CWD = "/" + "dir/" * 500_000  # 2 MB


def _session_with_big_cwd(directory: Path) -> Path:
    header = {"type": "session", "version": 3, "id": "big-cwd", "timestamp": TS, "cwd": BIG_CWD}
    user = {
        "type": "message",
        "id": "aaaaaaaa",
        "parentId": None,
        "timestamp": TS,
        "message": {"role": "user", "content": "hi", "timestamp": 1},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "s.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(user) + "\n")
    return path


def _open_and_list(path: str, directory: str) -> None:
    manager = SessionManager.open(path)
    assert manager.get_cwd() == BIG_CWD[:-1]
    manager.append_message({"role": "user", "content": "more", "timestamp": 2})
    manager.close()
    assert [info.id for info in list_sessions(BIG_CWD, directory)] == ["big-cwd"]  # filtered by cwd
    assert list_sessions("/elsewhere", directory, lambda *a: None) == []


def test_a_2mb_header_cwd_through_open_and_list(tmp_path: Path):
    path = _session_with_big_cwd(tmp_path / "sessions")
    _assert_bounded("open and list with a 2 MB cwd", _open_and_list, str(path), str(path.parent))


def _tree_command(path: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "tree", path],
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_2mb_header_cwd_through_the_tree_command(tmp_path: Path):
    path = _session_with_big_cwd(tmp_path / "sessions")
    _assert_bounded("pi-session tree with a 2 MB cwd", _tree_command, str(path))


# -- finding 12: listing with progress ---------------------------------------------------------------

SESSIONS = 10_000


@pytest.fixture(scope="module")
def many_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("many-sessions")
    for i in range(SESSIONS):
        header = {
            "type": "session",
            "version": 3,
            "id": f"s{i}",
            "timestamp": f"2026-01-{1 + i % 28:02d}T00:00:00.000Z",
            "cwd": "/p" if i % 3 else "/q",
        }
        user = {
            "type": "message",
            "id": "aaaaaaaa",
            "parentId": None,
            "timestamp": TS,
            "message": {"role": "user", "content": f"hi {i}", "timestamp": 1_700_000_000_000 + i % 977},
        }
        (directory / f"2026-01-01T00-00-00-000Z_{i:05d}.jsonl").write_text(
            json.dumps(header) + "\n" + json.dumps(user) + "\n"
        )
    return directory


class _TooMuchWork(Exception):
    pass


def _calls(job: Callable[[], Any], budget: int | None = None) -> int:
    """Python function calls (and calls into C) made by ``job``; stops it past ``budget``."""
    count = 0

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1
            if budget is not None and count > budget:
                raise _TooMuchWork

    sys.setprofile(profile)
    try:
        job()
    except _TooMuchWork:
        pass
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.slow
@pytest.mark.parametrize("which", ["list with a cwd filter", "listAll of a directory"])
def test_listing_10k_sessions_with_progress_is_linear(many_sessions: Path, which: str):
    reports: list[tuple[int, int, Any]] = []

    def progress(loaded: int, total: int, partial: Any) -> None:
        reports.append((loaded, total, None if partial is None else len(partial)))

    def listing(on_progress: Any) -> Callable[[], Any]:
        if which == "list with a cwd filter":
            return lambda: list_sessions("/p", str(many_sessions), on_progress)
        return lambda: list_all_sessions(str(many_sessions), on_progress)

    without = _calls(listing(None))
    with_progress = _calls(listing(progress), budget=2 * without)
    assert with_progress <= 1.5 * without, (
        f"{with_progress:,} calls with progress against {without:,} without: not linear"
    )
    assert reports[-1][:2] == (SESSIONS, SESSIONS) and len(reports) == SESSIONS
    expected = SESSIONS * 2 // 3 if which == "list with a cwd filter" else SESSIONS
    assert reports[-1][2] in (expected, expected + 1)
