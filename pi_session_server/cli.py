"""The ``pi-session`` command line: one subcommand per module in ``pi_session_server.commands``."""

from __future__ import annotations

import codecs
import errno
import importlib
import os
import sys
import types
from typing import TYPE_CHECKING, Any, TextIO

from . import process_exit
from .commands._common import CommandError
from .errors import PiSessionError
from .output import buffer_raw_std_streams

if TYPE_CHECKING:
    import argparse

# subcommand name -> module under pi_session_server.commands exposing add_arguments(parser) and run(args)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "start the sidecar and show the example session (or FILE) as a front end sees it"),
    "serve": ("serve", "run the JSON-RPC sidecar / language server on stdio"),
    "list": ("listing", "list the sessions of this directory (or DIR, or --all), newest first"),
    "tree": ("tree", "draw a session's tree"),
    "context": ("context", "print the LLM context of a session at its leaf or at an entry"),
    "stats": ("stats", "the totals of a session: entries, branches, tokens and cost by model"),
    "check": ("check", "report problems in session files (diagnostics in the terminal)"),
    "repair": ("repair", "make the language server's repairs to a session file (glued lines, header, ...)"),
}
# The commands that read one session and print what they make of it: run as the program itself,
# they end without freeing the session (process_exit.py).
LEAVE_AT_ONCE = frozenset({"tree", "context", "stats"})


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``pi-session``. Only the module of the command named in ``argv`` is imported
    (to add its options): ``tree`` must not pay for the language server's imports, which ``demo``
    and ``serve`` bring in. Without a command (``--help``), every command is listed by its help
    text alone; with a command, only that command's parser is made. ``argv`` None: no command's
    module is imported."""
    return _parsers(argv)[0]


def _parsers(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser | None]:
    """:func:`build_parser`'s parser, and the parser of the command ``argv`` names (None if none)."""
    import argparse  # not for `pi-session serve` as editors run it (see main)

    parser = argparse.ArgumentParser(
        prog="pi-session", description="Tools for pi coding-agent session files."
    )
    parser.add_argument("--version", action="version", version=_version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _command_in(argv or [])
    chosen_parser = None
    for name, (module_name, help_text) in COMMANDS.items():
        if chosen is not None and name != chosen:
            continue  # a parser per command costs more than a kept view takes to print
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name != chosen:
            continue
        module = importlib.import_module(f"pi_session_server.commands.{module_name}")
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
        chosen_parser = command_parser
    return parser, chosen_parser


def _version_text() -> str:
    """This package's version and the pi releases it follows (what a bug report needs)."""
    from . import __version__
    from .session.releases import DEFAULT_PI, RELEASES

    others = ", ".join(release for release in RELEASES if release != DEFAULT_PI)
    return f"pi-session {__version__} (behaves like pi {DEFAULT_PI}; --pi {others} on request)"


def _command_in(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first argument that is not an option (the top-level parser
    takes no option with a value)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _as_printable(error: UnicodeError) -> tuple[bytes, int]:
    """What the output's encoding cannot write, so that nothing of it is lost: each character as
    render/written_text.py writes it (its escape; a lone surrogate as U+FFFD where that can be
    written; a byte that did not decode as that byte, as ``surrogateescape`` would)."""
    assert isinstance(error, UnicodeEncodeError)
    from .render.written_text import written_instead

    unwritable = error.object[error.start : error.end]
    return b"".join(written_instead(char, error.encoding) for char in unwritable), error.end


# A session may hold lone UTF-16 surrogates (JSON.parse keeps an escaped "\ud800"), and V8's error
# messages name half an emoji: Python cannot write those to a UTF-8 stream and would stop the
# command with a traceback. The terminal shows U+FFFD instead, as it does for pi. Text an output's
# encoding cannot write (a C locale, PYTHONIOENCODING=ascii) is written as escapes, not as "?".
PRINTABLE = "pi_session.printable"
codecs.register_error(PRINTABLE, _as_printable)


def _open_closed_std_streams() -> bool:
    """Give a stdout or stderr the process was started without (``>&-``, ``2>&-``: Python makes
    its stream None, and a message printed to a None stderr goes to stdout) /dev/null in its
    place, so that no file the command opens takes its descriptor and gets what is written there
    (a sidecar ``demo`` starts inherits both). Return whether stdout was closed."""
    stdout_closed = sys.stdout is None
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is None:
            setattr(sys, name, _devnull_in_place_of(fd))
    return stdout_closed


def _devnull_in_place_of(fd: int) -> TextIO:
    """A text stream to /dev/null, at descriptor ``fd`` when that descriptor is closed."""
    try:
        os.fstat(fd)
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != fd:  # (the lowest free descriptor: 0, when stdin is closed too)
            os.dup2(devnull, fd)
            os.close(devnull)
        return open(fd, "w", closefd=False)
    return open(os.devnull, "w")


def _printable_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) in ("strict", "surrogateescape"):
            reconfigure(errors=PRINTABLE)


# The command lines editors start the sidecar with: Neovim's, and VS Code's (its language client
# adds ``--stdio`` to a server started on stdio). Every other option of ``serve`` takes its default.
EDITORS_SERVE = (["serve"], ["serve", "--stdio"])


def _serve_with_defaults(argv: list[str]) -> types.SimpleNamespace:
    """What the parser makes of one of :data:`EDITORS_SERVE`, made without it: argparse (its
    import, a gettext lookup for each text of a parser, and the terminal's width asked through
    shutil, which imports zlib, bz2 and lzma) is a part of the time an editor waits for the sidecar
    to start."""
    from .commands import serve

    options = {**serve.DEFAULTS, "stdio": "--stdio" in argv}
    return types.SimpleNamespace(command="serve", **options, _run=serve.run)


def main(argv: list[str] | None = None, *, as_program: bool | None = None) -> int:
    """Run the command ``argv`` names (default: the process's arguments) and return its exit
    status. ``as_program`` (default: when ``argv`` is None) says that this call is the process
    itself, which Ctrl-C then ends as the signal would (:func:`_end_as_interrupted`)."""
    if as_program is None:
        as_program = argv is None
    stdout_closed = _open_closed_std_streams()
    buffer_raw_std_streams()
    _printable_output()
    if argv is None:
        argv = sys.argv[1:]
    if stdout_closed:  # (``pi-session tree FILE >&-``): the output has nowhere to go
        return _output_failed(OSError(errno.EBADF, "stdout is closed"), _command_in(argv))
    try:
        if argv in EDITORS_SERVE:
            args: Any = _serve_with_defaults(argv)
        else:
            # (parsing imports the command's module: a Ctrl-C that early stops it as quietly)
            args = _parsed(argv)
    except BaseException as error:
        if not _is_ctrl_c(error):
            raise
        return _interrupted(as_program)
    if isinstance(args, int):
        return args
    if as_program and args.command != "serve":  # (the server shuts down on a Ctrl-C of its own)
        _interrupted_in_a_finalizer_ends_the_process()
    if as_program and args.command in LEAVE_AT_ONCE:
        process_exit.arm()
    return _status_of(args, as_program)


def _status_of(args: Any, as_program: bool) -> int:
    """Run the command of ``args`` (see :func:`main`): its exit status, what failed reported."""
    try:
        if as_program:
            _ctrl_c_raises_again()
        status = int(args._run(args) or 0)
    except BrokenPipeError:
        return _reader_gone()
    except (CommandError, PiSessionError, OSError) as error:
        # what the file or the system refused: one line, like the commands' own messages
        text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        where = f"{error.filename}: " if isinstance(error, OSError) and error.filename else ""
        from .render.terminal_text import one_terminal_line  # (a path may hold any character)

        print(f"pi-session {args.command}: {one_terminal_line(where + text)}", file=sys.stderr)
        try:
            sys.stdout.flush()
        except OSError:  # the output itself failed (a full disk): said once above, not again at exit
            _stdout_to_devnull()
        return 2
    except BaseException as error:
        if not _is_ctrl_c(error):
            raise
        return _interrupted(as_program)
    process_exit.leave(status)  # (armed: the process ends here, its output flushed)
    return status


def _parsed(argv: list[str]) -> Any:
    """The command line's arguments, or the exit status when there is no command to run (a help,
    the version, a usage error: what argparse printed is out by then)."""
    parser, command_parser = _parsers(argv)
    try:
        args = _arguments_of(argv, parser, command_parser)
    except SystemExit:  # --help, --version, a usage error: argparse said it, and exits as it does
        failed = _output_failure(_command_in(argv))
        if failed is None:
            raise
        return failed
    except BrokenPipeError:
        return _reader_gone()
    except OSError as error:  # a long help the output refused part of
        return _output_failed(error, _command_in(argv))
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    return args


def _arguments_of(
    argv: list[str], parser: argparse.ArgumentParser, command_parser: argparse.ArgumentParser | None
) -> argparse.Namespace:
    """``argv`` parsed: what precedes the command's name by ``parser``, the rest by the command's
    own parser, which names the command in its errors and shows its usage, and takes options
    between paths (``check a.jsonl --json b.jsonl``: argparse's parse_args takes a list of
    paths in one piece only, and reports the rest as unrecognized)."""
    if command_parser is None:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        return args
    at = argv.index(str(_command_in(argv)))
    args = parser.parse_args(argv[:at])
    args.command = argv[at]
    rest = argv[at + 1 :]
    if "--" in rest:
        # what follows "--" are paths, and parse_intermixed_args takes them for options again: one
        # that starts with "-" is given as the same path from "./"
        cut = rest.index("--")
        rest = rest[:cut] + [f"./{arg}" if arg.startswith("-") else arg for arg in rest[cut + 1 :]]
    return command_parser.parse_intermixed_args(rest, namespace=args)


# What a shell reports for a command killed by SIGPIPE, which is how Unix tools end when the
# reader of their output goes away (``pi-session tree | head``).
EXIT_BROKEN_PIPE = 128 + 13
# What a shell reports for a command Ctrl-C stopped.
EXIT_INTERRUPTED = 128 + 2


def _output_failure(command: str | None) -> int | None:
    """The exit status when what argparse printed (a help, the version) cannot be got out of
    stdout's buffer, else None: its failure at exit would be Python's "Exception ignored" and
    status 120."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except OSError as error:
        return _output_failed(error, command)
    return None


def _output_failed(error: OSError, command: str | None) -> int:
    """Writing stdout failed (a full disk): one line on stderr, what is left of it not tried again."""
    name = f"pi-session {command}" if command else "pi-session"
    print(f"{name}: {error.strerror or error}", file=sys.stderr)
    _stdout_to_devnull()
    return 2


def _interrupted(as_program: bool) -> int:
    """Ctrl-C: the user knows why the command stopped, no traceback. The process ends by the
    signal (:func:`_end_as_interrupted`); a call from a program gets the status a shell reports."""
    if as_program:
        _end_as_interrupted()
    return EXIT_INTERRUPTED


def _is_ctrl_c(error: BaseException) -> bool:
    """Whether ``error`` is a Ctrl-C: a KeyboardInterrupt, or an error raised from one (its cause,
    or its cause's cause...). Python wraps what some of its own machinery raises: a Ctrl-C that
    lands in a ``__set_name__`` as a module imports (a class body's ``cached_property``) comes out
    as a RuntimeError whose cause is the KeyboardInterrupt. (Only the causes: an error raised while
    a KeyboardInterrupt was handled, its context, is an error of its own.)"""
    seen: set[int] = set()  # (a cause may be set by hand, to an error already in the chain)
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


def _ctrl_c_raises_again() -> None:
    """Hand Ctrl-C back to Python (KeyboardInterrupt, which :func:`main` catches) as the command
    starts, where the console script (console.py) had it end the process by the signal until then.
    (Python starts with its own handler, or with Ctrl-C ignored, which stays so: a handler left to
    the system's default is the console script's.) msgspec, not imported yet, will be imported
    after datetime (:class:`_DatetimeBeforeMsgspec`)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:
        if "msgspec" not in sys.modules:
            sys.meta_path.insert(0, _DatetimeBeforeMsgspec())
        signal.signal(signal.SIGINT, signal.default_int_handler)


class _DatetimeBeforeMsgspec:
    """An import finder that imports datetime as msgspec starts to import, and finds nothing.

    msgspec's C module, as it starts, imports datetime for its C API and does not check that it
    got it: a KeyboardInterrupt raised in that import is lost, msgspec imports without that API,
    and the first decoder a command builds crashes the process (SIGSEGV, no message). Imported
    first, datetime is already there for msgspec, whose lookup of it then runs no Python code for
    a Ctrl-C to interrupt; a Ctrl-C that comes as datetime imports here is a KeyboardInterrupt as
    anywhere else. (Not imported as every command starts: one that prints a kept view imports
    neither msgspec nor datetime.)"""

    def find_spec(self, name: str, path: object, target: object = None) -> None:  # noqa: ARG002 - a finder's signature
        # (it stays in sys.meta_path: the import system goes through that list as it asks this)
        if name == "msgspec":
            import datetime  # noqa: F401
        return None


def _interrupted_in_a_finalizer_ends_the_process() -> None:
    """A Ctrl-C that comes while a finalizer runs (an object closing its file as it is collected)
    is raised in the finalizer, where Python prints it as an "Exception ignored" traceback and goes
    on: the command would not stop. It ends the process there, as the signal would have, and so
    does one Python wrapped on its way out (:func:`_is_ctrl_c`); any other error is printed as
    Python prints it."""
    print_unraisable = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if unraisable.exc_value is not None and _is_ctrl_c(unraisable.exc_value):
            _end_as_interrupted()
        print_unraisable(unraisable)

    sys.unraisablehook = hook


def _end_as_interrupted() -> None:
    """End the process by SIGINT, what it would have died of without Python's handler: a shell
    tells a command Ctrl-C killed from one that caught it and exited, and goes on with the rest of
    a loop or a script (``for f in *.jsonl; do pi-session check "$f"; done``) after the latter,
    and leaves its prompt on the line of the ``^C`` (after a progress line). What was printed is
    written out first."""
    import signal

    try:
        sys.stdout.flush()
    except OSError:
        _stdout_to_devnull()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def _reader_gone() -> int:
    """Stop quietly: the output is not wanted any more."""
    _stdout_to_devnull()
    return EXIT_BROKEN_PIPE


def _stdout_to_devnull() -> None:
    """Python tries to flush stdout at exit, and prints a second error when it cannot: what is
    left of the output goes to /dev/null instead."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
