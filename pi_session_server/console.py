"""What the ``pi-session`` console script runs (pyproject's ``[project.scripts]``), and
``python -m pi_session_server``: :func:`pi_session_server.cli.main`, as the process itself, a
Ctrl-C ending it quietly from its first moment.

Python turns Ctrl-C into KeyboardInterrupt from its start. The script imports the command line
(its modules, the command's) before main can catch one: a Ctrl-C then printed a traceback. Until
the command runs, Ctrl-C here ends the process as the signal does when nothing handles it, which is
how main ends it later too (with what was printed written out first: nothing is, before the
command runs); main hands Ctrl-C back to Python as it runs the command (cli._ctrl_c_raises_again),
so that what a Ctrl-C does then (repair's handling, the end it gives) is as before. This module
imports nothing of the package before that: what comes before it (Python's own start, the lines
pip's script runs first) is not the package's to handle."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names (default: the process's arguments) as the process itself."""
    import signal

    # (a shell that starts a command in the background of a script has it ignore Ctrl-C: it still does)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    from .cli import main as run_command

    return run_command(argv, as_program=True)
