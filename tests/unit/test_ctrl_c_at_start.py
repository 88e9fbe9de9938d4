"""A Ctrl-C at any moment of a command's start (Python importing the package, then the command's
modules) ends the process by SIGINT without a traceback (docs/CLI.md: status 130 in a shell), as a
Ctrl-C later does. Each moment is a real SIGINT sent to a real process, as the k-th module of the
package starts to import; the process runs what pip's console script for ``pi-session`` runs
(the entry point pyproject names), or ``python -m pi_session_server``. A Ctrl-C as msgspec starts
(after Ctrl-C is handed back to Python) stops the command as quietly, and does not crash it, and
so does one that Python reports as a RuntimeError raised from it (in a ``__set_name__``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MOMENTS = 8  # a spread over the package's imports, the first and the last among them

# The console script as pip writes it ("import re", "import sys", the entry point's import and
# call), with an import hook first: a SIGINT as the MOMENT-th module of the package (after the
# script's own entry modules, which import nothing before they hand Ctrl-C to the system) starts to import; MOMENT -1 counts them instead.
_SCRIPT = """
import atexit, os, signal, sys
from importlib.abc import MetaPathFinder

MOMENT = int(sys.argv.pop(1))
ENTRY = sys.argv.pop(1).split(",")
imports = 0

class InterruptAtImport(MetaPathFinder):
    def find_spec(self, name, path, target=None):
        global imports
        if name.startswith("pi_session_server.") and name not in ENTRY:
            if imports == MOMENT:
                os.kill(os.getpid(), signal.SIGINT)
            imports += 1
        return None

if MOMENT < 0:
    atexit.register(lambda: print(f"imports {imports}", file=sys.stderr))
sys.meta_path.insert(0, InterruptAtImport())
"""


def _console_script() -> tuple[str, str]:
    """The entry point's module and the script's lines after ``import re`` and ``import sys``."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts["pi-session"].split(":")
    return module, f"import re\nfrom {module} import {function}\nsys.exit({function}())\n"


def _python_m() -> tuple[str, str]:
    return (
        "pi_session_server.__main__,pi_session_server.console",
        "import runpy\nrunpy.run_module('pi_session_server', run_name='__main__')\n",
    )


def _ctrl_c_as_from_a_terminal() -> None:
    """(Run in the child before it starts Python.) A command started from a terminal has Ctrl-C at
    its default; a CI job or a shell's background job may have it ignored, which the child would
    inherit and the console script keeps (a SIGINT then does nothing): these tests are of the first."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(start: tuple[str, str], moment: int, *args: str) -> subprocess.CompletedProcess[str]:
    entry, lines = start
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT + lines, str(moment), entry, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
        preexec_fn=_ctrl_c_as_from_a_terminal,
    )


@pytest.mark.parametrize(
    ("start", "command"),
    [
        pytest.param(_console_script, ["stats", "--no-index"], id="pi-session stats"),
        pytest.param(_console_script, ["check", "--no-index"], id="pi-session check", marks=pytest.mark.slow),
        pytest.param(_python_m, ["stats", "--no-index"], id="python -m stats", marks=pytest.mark.slow),
        pytest.param(_python_m, ["check", "--no-index"], id="python -m check", marks=pytest.mark.slow),
    ],
)
def test_a_ctrl_c_as_the_command_starts_ends_it_by_the_signal_without_a_traceback(
    start: object, command: list[str]
) -> None:
    example = str(ROOT / "pi_session_server" / "examples" / "example-session.jsonl")
    counted = _run(start(), -1, *command, example)  # type: ignore[operator]
    assert counted.returncode == 0, counted.stderr
    imports = int(counted.stderr.rsplit("imports ", 1)[1])
    assert imports > MOMENTS  # (the package, its command and the library the command runs)
    moments = sorted({round(k * (imports - 1) / (MOMENTS - 1)) for k in range(MOMENTS)})
    for moment in moments:
        done = _run(start(), moment, *command, example)  # type: ignore[operator]
        assert (moment, done.returncode, done.stderr) == (moment, -signal.SIGINT, "")


# The console script with a SIGINT as datetime starts to import, which msgspec's C module imports
# as it starts, and nothing of the package before the command runs: the Ctrl-C comes as Python's
# KeyboardInterrupt (the hook says whether it does), inside msgspec's import.
_INTERRUPT_AS_DATETIME_IMPORTS = """
import os, signal, sys
from importlib.abc import MetaPathFinder

class InterruptAtImport(MetaPathFinder):
    sent = False

    def find_spec(self, name, path, target=None):
        if name == "datetime" and not self.sent:
            self.sent = True
            raises = signal.getsignal(signal.SIGINT) is signal.default_int_handler
            print("interrupted", "raising" if raises else "not raising", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptAtImport())
"""


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["stats", "--no-index", "EXAMPLE"], id="pi-session stats"),
        pytest.param(["serve"], id="pi-session serve", marks=pytest.mark.slow),
    ],
)
def test_a_ctrl_c_as_msgspec_starts_ends_the_command_by_the_signal_not_by_a_crash(command: list[str]) -> None:
    """msgspec's C module loses a KeyboardInterrupt raised as it imports datetime, and the first
    decoder built after crashed the process (SIGSEGV, no message). Here the command stops by the
    Ctrl-C, which came as a KeyboardInterrupt, the hook's line the only thing on stderr."""
    example = str(ROOT / "pi_session_server" / "examples" / "example-session.jsonl")
    args = [example if arg == "EXAMPLE" else arg for arg in command]
    done = _console_script_after(_INTERRUPT_AS_DATETIME_IMPORTS, *args)
    assert (done.returncode, done.stderr) == (-signal.SIGINT, "interrupted raising\n")


def _console_script_after(prelude: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script run with ``args``, ``prelude`` (Python's lines) run first in its process."""
    _, lines = _console_script()
    return subprocess.run(
        [sys.executable, "-c", prelude + lines, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
        preexec_fn=_ctrl_c_as_from_a_terminal,
    )


# The console script with a SIGINT as the first ``cached_property.__set_name__`` starts after Ctrl-C
# is handed back to Python (console.py gives it to the system first), as a class body's runs while a
# module imports (msgspec imports uuid, which imports platform): Python 3.11 wraps the
# KeyboardInterrupt raised there in a RuntimeError.
_INTERRUPT_IN_SET_NAME = """
import os, signal, sys

given_to_the_system = False

def interrupt_in_set_name(frame, event, arg):
    global given_to_the_system
    handler = signal.getsignal(signal.SIGINT)
    given_to_the_system = given_to_the_system or handler is signal.SIG_DFL
    if (
        given_to_the_system
        and handler is signal.default_int_handler
        and event == "call"
        and frame.f_code.co_name == "__set_name__"
        and type(frame.f_locals.get("self")).__name__ == "cached_property"
    ):
        sys.settrace(None)
        print("interrupted in cached_property.__set_name__", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGINT)

sys.settrace(interrupt_in_set_name)
"""


def test_a_ctrl_c_in_a_set_name_as_a_module_imports_ends_the_command_by_the_signal() -> None:
    """The Ctrl-C came out of the import as ``RuntimeError: Error calling __set_name__ on
    'cached_property' instance``, which ended the command with status 1 and its traceback."""
    example = str(ROOT / "pi_session_server" / "examples" / "example-session.jsonl")
    done = _console_script_after(_INTERRUPT_IN_SET_NAME, "stats", "--no-index", example)
    assert (done.returncode, done.stderr) == (-signal.SIGINT, "interrupted in cached_property.__set_name__\n")
