"""A server whose stats of paths under a ``stuck-mount`` directory hang while a flag file exists
(a ``sitecustomize`` wraps ``os.stat`` and ``os.lstat`` in the server's process): a network mount
that stopped answering, for the tests that the sidecar goes on around it. Beside the flag, the
hook marks that a stat began to hang (``FLAG.hung``) and that one which hung answered
(``FLAG.answered``): a test waits for the one and knows by the other whether what it saw happened
while the stat still hung."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from reliability_rpc import REPO_ROOT, RawServer

STUCK_STAT = """
import os
import time

_flag = os.environ["PI_TEST_STUCK_FLAG"]
_stat, _lstat = os.stat, os.lstat


def _mark(suffix):
    open(_flag + suffix, "a").close()


def _wait_while_stuck(path):
    try:
        name = os.fsdecode(path)
    except TypeError:  # a descriptor
        return
    if "stuck-mount" not in name:
        return
    deadline = time.monotonic() + 60
    hung = False
    while time.monotonic() < deadline:
        try:
            _stat(_flag)
        except OSError:
            break
        if not hung:
            _mark(".hung")
            hung = True
        time.sleep(0.02)
    if hung:
        _mark(".answered")


def stat(path, *args, **kwargs):
    _wait_while_stuck(path)
    return _stat(path, *args, **kwargs)


def lstat(path, *args, **kwargs):
    _wait_while_stuck(path)
    return _lstat(path, *args, **kwargs)


os.stat, os.lstat = stat, lstat
"""


@contextlib.contextmanager
def stuck_stat_server(tmp_path: Path, flag: Path) -> Iterator[RawServer]:
    """A running server whose stats under ``stuck-mount`` hang while ``flag`` exists (it is
    removed at the end, so that the server can exit); it must still be alive at the end."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STUCK_STAT)
    env = {
        "PYTHONPATH": os.pathsep.join([str(hook), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        "PI_TEST_STUCK_FLAG": str(flag),
    }
    server = RawServer(tmp_path, env=env)
    try:
        server.initialize()
        yield server
        assert server.alive(), server.stderr_text()[-3000:]
    finally:
        if flag.exists():
            flag.unlink()
        server.close()


def hung_mark(flag: Path) -> Path:
    return flag.with_name(flag.name + ".hung")


def answered_mark(flag: Path) -> Path:
    return flag.with_name(flag.name + ".answered")


def until_a_stat_hangs(flag: Path, timeout: float = 60) -> None:
    """Until a stat of the server waits on ``flag`` (``flag`` exists)."""
    deadline = time.monotonic() + timeout
    while not hung_mark(flag).exists():
        assert time.monotonic() < deadline, "no stat of the server hung"
        time.sleep(0.01)
