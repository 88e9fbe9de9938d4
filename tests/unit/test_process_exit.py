"""``pi-session tree``, ``context`` and ``stats`` run as the program end with ``os._exit`` once their
output is flushed and the atexit handlers have run: the session they read is never freed, nor is
the interpreter torn down (process_exit.py). Run as a library call (``main(argv)``), or for any
other command, they return as before."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_session_server import process_exit
from pi_session_server.cli import main
from pi_session_server.session.manager import SessionManager

EXAMPLE = str(Path(process_exit.__file__).parent / "examples" / "example-session.jsonl")


class _Left(Exception):
    """What the stand-in for os._exit raises: the process would have ended here."""

    def __init__(self, status: int) -> None:
        self.status = status


@pytest.fixture
def leaving(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """os._exit and the atexit handlers' run stood in for (not this test process's); the events in
    order. The module's state is put back after the test, and so is the hook a command run as the
    program sets for its process (cli._interrupted_in_a_finalizer_ends_the_process)."""
    events: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)

    def exit_now(status: int) -> None:
        events.append(f"_exit {status}")
        raise _Left(status)

    monkeypatch.setattr(process_exit.os, "_exit", exit_now)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: events.append("atexit"))
    monkeypatch.setattr(process_exit, "_armed", False)
    monkeypatch.setattr(process_exit, "_held", [])
    yield events


@pytest.mark.parametrize("command", ["tree", "context", "stats"])
def test_a_command_run_as_the_program_leaves_at_once_holding_its_session(
    command: str, leaving: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--no-index", EXAMPLE]) == 0
    expected = capsys.readouterr().out
    with pytest.raises(_Left) as left:
        main([command, "--no-index", EXAMPLE], as_program=True)
    assert left.value.status == 0
    assert leaving == ["atexit", "_exit 0"]
    assert capsys.readouterr().out == expected
    assert [type(value) for value in process_exit._held] == [SessionManager]


def test_a_library_call_returns_and_holds_nothing(
    leaving: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tree", "--no-index", EXAMPLE]) == 0
    assert leaving == []
    assert process_exit._held == []


def test_other_commands_and_failures_exit_the_usual_way(
    leaving: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--no-index", EXAMPLE], as_program=True) == 0
    assert main(["tree", "--no-index", str(tmp_path / "missing.jsonl")], as_program=True) == 2
    assert leaving == []


def test_leaving_waits_for_nothing_while_another_thread_runs(leaving: list[str]) -> None:
    import threading

    process_exit.arm()
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        process_exit.leave(0)  # returns: the usual exit joins the thread
    finally:
        release.set()
        worker.join()
    assert leaving == []


def test_the_process_ends_by_os_exit_after_its_output_and_atexit_handlers(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import atexit, os, sys
        real_exit = os._exit
        def exit_now(status):
            sys.stderr.write(f"_exit {status}\\n")
            sys.stderr.flush()
            real_exit(status)
        os._exit = exit_now
        atexit.register(lambda: print("atexit ran", file=sys.stderr))
        from pi_session_server.cli import main
        sys.exit(main())
        """
    )
    # (a pipe's width: COLUMNS, which the test run may have, left out)
    environment = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    environment["PI_SESSION_INDEX_DIR"] = str(tmp_path)
    for _ in range(2):  # drawn, then printed from the view kept
        run = subprocess.run(
            [sys.executable, "-c", script, "tree", EXAMPLE],
            capture_output=True,
            text=True,
            check=False,
            env=environment,
        )
        assert run.returncode == 0
        assert run.stderr == "atexit ran\n_exit 0\n"
        whole = subprocess.run(
            [sys.executable, "-m", "pi_session_server", "tree", "--no-index", EXAMPLE],
            capture_output=True,
            text=True,
            check=True,
            env=environment,
        )
        assert run.stdout == whole.stdout
        assert run.stdout.count("\n") > 5


def test_an_interpreter_without_the_atexit_runner_exits_the_usual_way(
    leaving: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(atexit, "_run_exitfuncs")
    assert main(["tree", "--no-index", EXAMPLE], as_program=True) == 0
    assert leaving == []
    assert capsys.readouterr().out.count("\n") > 5
