"""Helpers shared by subcommands."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from .. import process_exit
from ..output import flush_fully, write_fully
from ..session.releases import DEFAULT_PI, RELEASES

if TYPE_CHECKING:
    import argparse

    from ..format.scan import LineProblem
    from ..render.glyphs import Glyphs
    from ..session.manager import SessionManager


class CommandError(Exception):
    """A failure a command reports in one line on stderr, with exit status 2 (no traceback)."""


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be shown as a session before reading it: missing, a symbolic link that
    leads nowhere (:func:`broken_link_problem`), a directory, or a FIFO or a device
    (:func:`special_file_problem`)."""
    if not os.path.lexists(path):
        return "no such file"
    broken = broken_link_problem(path)
    if broken is not None:
        return broken
    if os.path.isdir(path):
        return "is a directory (give a session file)"
    return special_file_problem(path)


def broken_link_problem(path: str) -> str | None:
    """Why ``path``, which exists as a name, names no file: a symbolic link to a missing file, or a
    loop of links. None when it leads to a file. (pi takes such a path for a new session, so a
    command that shows one would show an empty session instead of saying what is wrong.)"""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ENOENT and os.path.islink(path):
            with contextlib.suppress(OSError):
                return f"is a symbolic link to {os.readlink(path)}, which does not exist"
        text = error.strerror or str(error)
        return text[:1].lower() + text[1:]
    return None


def open_failure(path: str, error: OSError) -> str:
    """What ``error``, raised opening ``path``, tells a user: a link whose target is missing named
    as such (the link itself is there to see: "No such file or directory" would say it is not),
    else the system's words."""
    if error.errno == errno.ENOENT and os.path.islink(path):
        dangling = broken_link_problem(path)
        if dangling is not None:
            return dangling
    return error.strerror or str(error)


def special_file_problem(path: str) -> str | None:
    """Why ``path`` is not read at all when it is a FIFO or a device (never opened: reading one
    waits for a writer, or never ends); None for anything else (reading it says what is wrong)."""
    from ..session.paths import special_file_kind

    try:
        kind = special_file_kind(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None
    return None if kind is None else f"is a {kind}, not a session file"


@contextlib.contextmanager
def kept_files_dropped_when_stale(path: str, index: bool) -> Iterator[None]:
    """What the block reads of the session at ``path``; when a line read is not the entry its
    index gave (StaleFileError: the file changed in a way its index could not tell, like an edit in
    the middle of a file also appended to), what is kept of the file goes, so that the next run
    reads it anew, and the error says so."""
    from ..errors import StaleFileError
    from ..session import cache_dir

    try:
        yield
    except StaleFileError as error:
        settings = cache_dir.index_settings(index)
        if settings is None:
            raise
        with contextlib.suppress(OSError, ValueError):
            cache_dir.forget(settings.directory, os.stat(path))
        raise StaleFileError(f"{error} (what was kept of it is dropped: run the command again)") from error


def add_pi_argument(parser: argparse.ArgumentParser) -> None:
    """``--pi VERSION``: the pi release whose behaviour the command follows (a session file does not
    say which pi wrote it; the one the user runs now decides what it means)."""
    parser.add_argument(
        "--pi",
        choices=RELEASES,
        default=DEFAULT_PI,
        metavar="VERSION",
        help=f"behave like this pi release: {', '.join(RELEASES)} (default {DEFAULT_PI})",
    )


def add_session_dir_argument(parser: argparse.ArgumentParser) -> None:
    """``--session-dir DIR``: pi's flag of that name, over ``$PI_CODING_AGENT_SESSION_DIR`` and the
    ``sessionDir`` setting (session/cli_session_dir.py)."""
    parser.add_argument(
        "--session-dir",
        metavar="DIR",
        help="where pi keeps sessions, as pi's --session-dir (default: $PI_CODING_AGENT_SESSION_DIR, "
        "else the sessionDir setting, else the agent directory's sessions)",
    )


def add_index_argument(
    parser: argparse.ArgumentParser,
    what: str = "neither read nor write the session's index in the cache directory",
) -> None:
    """``--no-index`` (``args.index``): ``what`` the command then does not do."""
    parser.add_argument(
        "--no-index",
        dest="index",
        action="store_false",
        help=f"{what} ($PI_SESSION_INDEX_DIR, else $XDG_CACHE_HOME/pi-session, else ~/.cache/pi-session; PI_SESSION_NO_INDEX=1 does the same)",
    )


def width(text: str) -> int:
    """A --width: a whole number, at least 1 (argparse names it "width" when it is no number)."""
    value = int(text)
    if value < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def terminal_columns() -> int:
    """How wide the output is, in columns: COLUMNS, else stdout's terminal's width; 0 when neither
    says (stdout is a pipe or a file: each command then has a fixed width of its own, so that what
    a script reads does not depend on the terminal it was started from)."""
    import shutil  # (argparse has imported it by the time a command runs)

    return shutil.get_terminal_size((0, 0)).columns


def open_to_look(path: str, pi: str = DEFAULT_PI, *, index: bool = True) -> SessionManager:
    """The session in ``path``, loaded without writing anything to it (see SessionManager's
    read_only), read as pi release ``pi`` reads it; its index in the cache directory is read and
    written unless ``index`` is False.

    pi's ``open`` of a missing file starts a new session there; a command that shows a file
    reports it missing instead. An empty file reads as a session without entries."""
    from ..errors import InvalidSessionFileError
    from ..session.manager import SessionManager  # the library: not for a command that prints a kept view

    problem = path_problem(path)
    if problem is not None:
        raise CommandError(f"{path}: {problem}")
    try:
        manager = SessionManager.open(path, read_only=True, pi=pi, index=index)
    except InvalidSessionFileError as error:  # pi's words alone do not say what is wrong with it
        raise CommandError(f"{error}{why_not_a_session(path)}") from error
    process_exit.hold(manager)  # (the command line's process ends without freeing it)
    return manager


def why_not_a_session(path: str) -> str:
    """What to add to pi's "not a valid pi session": the command that says why."""
    return f" (`pi-session check {shlex.quote(path)}` says why)"


_SKIPPED_SHOWN = 3
_MESSAGE_WIDTH = 240


def report_skipped_lines(command: str, path: str, manager: SessionManager) -> int:
    """Say on stderr which lines of ``path`` pi skips, so that nobody takes what a command shows
    for the whole file (stdout stays the command's own output, for pipes); how many there are.
    A last line cut short is said to be one, as ``check`` says it (:func:`open_last_line_note`):
    pi may be writing it as the command reads, and it is no damage then."""
    skipped = [p for p in manager.problems if p.skipped]
    if not skipped:
        return 0
    count = len(skipped)
    from ..render.glyphs import cut
    from ..render.terminal_text import one_terminal_line

    out = []
    open_last = manager.open_last_line()
    note = None if open_last is None else open_last_line_note(path, open_last)
    if note is not None:
        skipped.pop()
        out.append(f"pi-session {command}: {path}: {note}")
    if skipped:
        out.append(
            f"pi-session {command}: {path}: {counted(len(skipped), 'line')} skipped, as pi skips them:"
        )
    ellipsis = output_glyphs(stream=sys.stderr).ellipsis
    encoding = stream_encoding(sys.stderr)
    for problem in skipped[:_SKIPPED_SHOWN]:
        # cut as stderr writes it, before its control characters become escapes
        out.append(f"  line {problem.line + 1}: {cut(problem.message, _MESSAGE_WIDTH, ellipsis, encoding)}")
    if len(skipped) > _SKIPPED_SHOWN:
        out.append(f"  and {len(skipped) - _SKIPPED_SHOWN:,} more")
    if skipped:
        out.append(
            f"  (`pi-session check {shlex.quote(path)}` lists every problem;"
            f" `pi-session repair {shlex.quote(path)}` mends what it can)"
        )
    # (a path, and so the commands quoted, may hold a line break or an escape sequence)
    print("\n".join(map(one_terminal_line, out)), file=sys.stderr, flush=True)
    return count


def appended_meanwhile(done: str, next_time: str, last_line_left: bool) -> str:
    """What a command says of a file that grew while it was read (``done``: "checked", "read"):
    what it held at the start is what the command went through; ``last_line_left``: that size
    ended in the middle of the last line, which its writer was still writing then, and which is
    left for the command's next run (``next_time``: "check", "look"). ``check`` and the commands
    that show a session say it in these same words."""
    left = (
        f" (its last line, still being written then, is left for the next {next_time})"
        if last_line_left
        else ""
    )
    return f"lines were appended while it was {done}; what it held at the start was {done}{left}"


def open_last_line_note(path: str, problem: LineProblem) -> str | None:
    """What to say on stderr of ``problem``, a skipped last line of ``path`` without its newline
    (:meth:`SessionManager.open_last_line`), when its JSON is cut short (the parser ran out of it,
    as ``check`` tells PI002 from PI001): :func:`appended_meanwhile` when the file went on past
    it since (its writer was writing it), else PI002's words. None for any other line
    (JSON that fails before its end, lines glued together): a skipped line like the others."""
    if problem.kind != "malformed" or not problem.message.startswith(_INVALID_JSON):
        return None
    try:
        with open(path, "rb") as file:
            file.seek(problem.offset)
            data = file.read(problem.length + 1)  # (and the byte after it, if any)
    except (OSError, ValueError):
        return None
    # the parser's column counts the characters of the line decoded as pi decodes it
    if len(data) < problem.length or problem.column < len(data[: problem.length].decode("utf-8", "replace")):
        return None
    if len(data) > problem.length:
        return appended_meanwhile("read", "look", last_line_left=True)
    from ..analysis.diagnostics import truncated_last_line

    where = "at end of line: " + problem.message.removeprefix(_INVALID_JSON)
    return (
        f"line {problem.line + 1}: {truncated_last_line(where)};"
        " pi skips it: a line its writer is writing, or one it stopped in"
    )


_INVALID_JSON = "invalid JSON: "


def say_leaf_not_found(command: str, leaf: str, file: str | None) -> None:
    """Say on stderr that ``--leaf`` names no entry of the session ``file`` (as given; None: the
    bundled example), and where its ids are. pi builds the context at its last entry for an id it
    does not know, and for an empty one, which it takes for none: a command names the mistake
    instead of showing a context that was not asked for."""
    from ..render.terminal_text import one_terminal_line

    if leaf:
        where = "" if file is None else f" {shlex.quote(file)}"
        print(
            f"pi-session {command}: Entry {one_terminal_line(leaf)} not found"
            f" (`pi-session tree --ids{one_terminal_line(where)}` shows the ids)",
            file=sys.stderr,
        )
    else:
        print(
            f"pi-session {command}: --leaf '' names no entry (pi takes an empty id for none)", file=sys.stderr
        )


def counted(count: int, one: str, many: str | None = None) -> str:
    """``count`` things, named in the singular or the plural (``many``, else ``one`` + s)."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def example_session_path() -> str:
    """The bundled example session (used when a command is given no file)."""
    from importlib import resources  # here: every command pays for its import otherwise

    return str(resources.files("pi_session_server").joinpath("examples", "example-session.jsonl"))


def session_path(arg: str | None) -> str:
    return os.path.abspath(arg) if arg else example_session_path()


def output_encoding() -> tuple[str, str]:
    """How stdout encodes text: its encoding and error handler."""
    return stream_encoding(sys.stdout), getattr(sys.stdout, "errors", None) or "strict"


def stream_encoding(stream: TextIO) -> str:
    """The encoding ``stream`` writes text in (UTF-8 for one that does not say: a test's buffer)."""
    return getattr(stream, "encoding", None) or "utf-8"


def output_glyphs(ascii_only: bool = False, stream: TextIO | None = None) -> Glyphs:
    """The glyphs that draw trees and cut texts on ``stream`` (stdout unless told): ASCII when asked
    for (``--ascii``) or when the stream's encoding cannot write the others."""
    from ..render.glyphs import glyphs_for

    return glyphs_for(stream_encoding(sys.stdout if stream is None else stream), ascii_only)


def write_encoded(data: bytes | memoryview, encoding: str) -> None:
    """Write ``data`` (text encoded as stdout encodes it) to stdout's bytes, after what was
    printed to its text layer (flushed first)."""
    out = sys.stdout
    out.flush()  # what was printed before goes first
    buffer = getattr(out, "buffer", None)
    if buffer is None or os.linesep != "\n":  # the text layer translates line ends
        out.write(str(data, encoding, "surrogateescape"))
        out.flush()
    else:
        write_fully(buffer, data)  # (under PYTHONUNBUFFERED, the raw file: one write() may take less)
        flush_fully(buffer)


class Progress:
    """One self-overwriting line on stderr while a command works through many files (only when
    ``enabled``: stderr is a terminal, unless the user forced it), at most every tenth of a second
    but for the last. The line is cut to the terminal's width as written (its control characters,
    and what stderr's encoding cannot write, as escapes): a line that wrapped would not be
    overwritten whole."""

    def __init__(self, enabled: bool, stream: TextIO | None = None):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.last = 0.0
        self.width = 0
        # a line wider than the terminal wraps, and "\r" goes back to the start of its last row only
        self.room = _terminal_width_of(self.stream) - 1 if enabled else 0
        self.encoding = stream_encoding(self.stream)
        self.ellipsis = output_glyphs(stream=self.stream).ellipsis if enabled else ""

    def show(self, text: str, last: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and not last:
            return
        self.last = now
        from ..render.glyphs import cut
        from ..render.terminal_text import one_terminal_line
        from ..render.written_text import written_width

        if self.room > 0:
            text = cut(text, self.room, self.ellipsis, self.encoding)
        width = written_width(text, self.encoding)
        self.stream.write("\r" + one_terminal_line(text) + " " * (self.width - width))
        self.stream.flush()
        self.width = width

    def clear(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _terminal_width_of(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to, 0 when it is none or does not say."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # no file (a test's buffer), or no terminal
        return 0
