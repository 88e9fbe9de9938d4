"""A command-line process ending without tearing its heap down.

A command that read a big session holds a few hundred thousand objects (its entries, their ids,
the previews). Freeing them one by one as the command returns, then the interpreter's own teardown
(its modules, a last collection), is time the user waits for once the output is out; the kernel
takes the whole memory back at once. So a process that runs one command (``pi-session ...``, not
the library called by a program of its own) holds what the command :func:`hold` s, and ends with
:func:`leave`: what it printed flushed and its atexit handlers run, as at a normal exit."""

from __future__ import annotations

import atexit
import os
import sys

# What the command asked to be held to the end, once leaving at once is armed.
_held: list[object] = []
_armed = False


def arm() -> None:
    """This process is the command line itself: :func:`hold` holds, :func:`leave` leaves."""
    global _armed
    _armed = True


def hold(value: object) -> None:
    """Keep ``value`` (a session opened, its big tables) until the process ends, when it ends with
    :func:`leave`: it is then never freed. Else (a library call, a test) nothing is kept."""
    if _armed:
        _held.append(value)


def leave(status: int) -> None:
    """End the process now with ``status``, once its standard streams are flushed and its atexit
    handlers have run. Returns (the caller exits the usual way) unless armed, when a stream
    cannot be flushed (the usual exit reports it as it does), while another thread that the
    usual exit would wait for runs, or on an interpreter whose atexit handlers cannot be run."""
    # The atexit module has no public way to run its handlers but the interpreter's exit: its
    # CPython function is used where it exists, and the usual exit where it does not.
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if not _armed or run_exit_handlers is None or _threads_to_wait_for():
        return
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # (a closed or failing stream: the usual exit says so)
        return
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):  # what an atexit handler printed
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120  # what Python's own exit gives when the last flush fails
    os._exit(status)


def _threads_to_wait_for() -> bool:
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main = threading.main_thread()
    return any(thread is not main and not thread.daemon for thread in threading.enumerate())
