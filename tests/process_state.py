"""The process-wide settings a test can change for every test after it in its process (an xdist
worker runs hundreds): read before a test and after it, and put back where the test left them
changed (imported as ``process_state``: ``tests/`` is on the path of every test; tests/conftest.py
fails such a test).

A test that changes one of them and does not put it back makes the tests after it pass or fail by
the order they run in, which xdist changes from run to run: a raised recursion limit lets msgspec
decode deeper, a disabled collector or another switch interval changes how threads interleave, a
variable of the environment changes where the library and the servers the tests start look, a
signal handler or a replaced stream outlives its test. Reading them all costs microseconds.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from pi_session_server.format import gcpause

# pytest's own, which it sets for each phase of each test
_PYTEST_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})


class Setting(NamedTuple):
    name: str
    read: Callable[[], object]
    restore: Callable[[Any], None]


def _environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in _PYTEST_VARIABLES}


def _restore_environment(before: dict[str, str]) -> None:
    for name in set(_environment()) - set(before):
        del os.environ[name]
    os.environ.update(before)


def _working_directory() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # a test's directory, removed while the process was in it
        return "(a removed directory)"


def _restore_working_directory(before: str) -> None:
    if os.path.isdir(before):
        os.chdir(before)


def _signal_named(number: int) -> int:
    """The signal as its ``signal.Signals`` member where it has one (not the real-time ones)."""
    try:
        return signal.Signals(number)
    except ValueError:
        return number


# (not SIGALRM: pytest-timeout's, which it sets for each test and takes back as a test fails)
_SIGNALS = tuple(_signal_named(number) for number in signal.valid_signals() if number != signal.SIGALRM)


def _signal_handlers() -> dict[int, object]:
    return {number: signal.getsignal(number) for number in _SIGNALS}


def _restore_signal_handlers(before: dict[int, object]) -> None:
    for number, handler in before.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)  # type: ignore[arg-type]  # a handler getsignal gave


def _time_zone() -> tuple[object, ...]:
    return (time.tzname, time.timezone, time.altzone, time.daylight)


def _set_std_stream(name: str) -> Callable[[object], None]:
    return lambda stream: setattr(sys, name, stream)


def _set_threshold(threshold: tuple[int, ...]) -> None:
    gc.set_threshold(*threshold)


def _set_meta_path(finders: list[object]) -> None:
    sys.meta_path[:] = finders  # type: ignore[assignment]  # the finders it held before


def _set_path(entries: list[str]) -> None:
    sys.path[:] = entries


def _set_excepthook(hook: Any) -> None:
    sys.excepthook = hook


def _set_unraisablehook(hook: Any) -> None:
    sys.unraisablehook = hook


def _set_thread_excepthook(hook: Any) -> None:
    threading.excepthook = hook


# The environment before the time zone: the zone is put back from TZ.
SETTINGS = (
    Setting("sys.getrecursionlimit()", sys.getrecursionlimit, sys.setrecursionlimit),
    Setting("sys.getswitchinterval()", sys.getswitchinterval, sys.setswitchinterval),
    # (the process's setting, not a pause a server's job still running on a thread has under way)
    Setting("gc.isenabled()", gcpause.enabled_outside_pauses, gcpause.set_enabled_outside_pauses),
    Setting("gc.get_threshold()", gc.get_threshold, _set_threshold),
    Setting("the working directory", _working_directory, _restore_working_directory),
    Setting("os.environ", _environment, _restore_environment),
    Setting("the time zone (time.tzset)", _time_zone, lambda _zone: time.tzset()),
    Setting("the signal handlers", _signal_handlers, _restore_signal_handlers),
    Setting("sys.stdin", lambda: sys.stdin, _set_std_stream("stdin")),
    Setting("sys.stdout", lambda: sys.stdout, _set_std_stream("stdout")),
    Setting("sys.stderr", lambda: sys.stderr, _set_std_stream("stderr")),
    Setting("sys.excepthook", lambda: sys.excepthook, _set_excepthook),
    Setting("sys.unraisablehook", lambda: sys.unraisablehook, _set_unraisablehook),
    Setting("threading.excepthook", lambda: threading.excepthook, _set_thread_excepthook),
    Setting("sys.meta_path", lambda: list(sys.meta_path), _set_meta_path),
    Setting("sys.path", lambda: list(sys.path), _set_path),
)

Snapshot = tuple[object, ...]


def snapshot() -> Snapshot:
    return tuple(setting.read() for setting in SETTINGS)


def _described(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _difference(before: object, after: object) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        changed = sorted(
            (key for key in before.keys() | after.keys() if before.get(key) != after.get(key)), key=repr
        )
        return ", ".join(
            f"{key!r}: {_described(before.get(key))} -> {_described(after.get(key))}" for key in changed
        )
    if isinstance(before, list) and isinstance(after, list):
        added = [item for item in after if item not in before]
        removed = [item for item in before if item not in after]
        if added or removed:
            return f"added {_described(added)}, removed {_described(removed)}"
    return f"{_described(before)} -> {_described(after)}"


def changes_since(before: Snapshot) -> list[str]:
    """What differs from ``before``, put back as it was: one line a setting."""
    changed: list[str] = []
    after = snapshot()
    for setting, was, now in zip(SETTINGS, before, after, strict=True):
        if was != now:
            changed.append(f"{setting.name}: {_difference(was, now)}")
            setting.restore(was)
    return changed
