"""``pi-session list [DIR] [--all] [--session-dir DIR] [--json]``: the sessions there are to open,
newest first, each with when it last changed, how many messages it holds, its name or first
message, and its file (what ``tree``, ``context`` and ``check`` take).

The sessions are those pi keeps for the current directory (what ``pi --resume`` offers), those of
every directory (``--all``), or the session files in DIR. Where pi keeps them is what pi's command
line chooses (``--session-dir``, ``$PI_CODING_AGENT_SESSION_DIR``, the ``sessionDir`` setting:
session/cli_session_dir.py), else SessionManager's default. They are read as pi's
``SessionManager.list``/``listAll`` read them (session/listing.py), without the sessions' whole
text, which a listing does not show. Nothing is created or changed: where pi's ``list`` would make
the current directory's session directory, an absent one lists no sessions."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import TYPE_CHECKING

from ._common import (
    CommandError,
    Progress,
    add_session_dir_argument,
    broken_link_problem,
    counted,
    output_encoding,
    output_glyphs,
    terminal_columns,
    width,
)

if TYPE_CHECKING:
    from ..session.listing import SessionInfo

# A title is cut to this many columns when neither --width nor the terminal's width (COLUMNS,
# or stdout's terminal) says otherwise.
DEFAULT_WIDTH = 60
# The fewest columns of a title the terminal's width leaves it (a long path does not cut it to
# nothing: the line wraps instead).
NARROWEST_TITLE = 20
# The fewest columns of a path on a terminal (cut at its start, its file name kept): a terminal
# too narrow for the other columns, a title and this much of the path wraps the row instead.
NARROWEST_PATH = 20
# what a row holds besides the title and the path: the date, the count, the spaces between
COLUMN_GAP = "  "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory",
        nargs="?",
        help="a directory of session files (default: the sessions pi keeps for the current directory)",
    )
    parser.add_argument(
        "--all", action="store_true", help="the sessions of every directory pi keeps sessions for"
    )
    add_session_dir_argument(parser)
    parser.add_argument(
        "--json", action="store_true", help="print pi's session infos as JSON (without allMessagesText)"
    )
    parser.add_argument(
        "--width",
        type=width,
        help="cut titles to this many columns (default: what the terminal's width leaves them, "
        f"as COLUMNS or the terminal says; {DEFAULT_WIDTH} when neither does)",
    )


def run(args: argparse.Namespace) -> int:
    if args.all and args.directory:
        raise CommandError("give a directory or --all, not both")
    if args.session_dir and args.directory:
        raise CommandError("give a directory or --session-dir, not both")
    from ..session.cli_session_dir import cli_session_dir

    # where pi's command line looks (None: SessionManager's default); a directory given is not it
    session_dir = None if args.directory else cli_session_dir(args.session_dir)
    columns = terminal_columns()
    # the first message is read as far as a title can show of it (at least the narrowest title the
    # terminal's width leaves)
    infos = _sessions(
        args, session_dir, args.width or (max(columns, NARROWEST_TITLE) if columns else DEFAULT_WIDTH)
    )
    from ..render.terminal_text import one_terminal_line

    if not infos and not args.json:  # (an empty output alone does not say where was looked)
        print(f"pi-session list: {one_terminal_line(_nothing_listed(args, session_dir))}", file=sys.stderr)
    if args.json:
        print(json.dumps([_json_of(info) for info in infos], indent=2, ensure_ascii=False))
        return 0
    from ..render.glyphs import cut, one_line_cut
    from ..render.written_text import padded, written_width

    # widths as written: what stdout's encoding cannot write comes out as escapes, a wide
    # character takes two columns
    encoding = output_encoding()[0]
    paths = [one_terminal_line(info.path) for info in infos]
    numbers = [f"{info.message_count:,}" for info in infos]
    widest = max(map(len, numbers), default=0)
    counts = [
        f"{number:>{widest}} {'message ' if info.message_count == 1 else 'messages'}"
        for number, info in zip(numbers, infos, strict=True)
    ]
    widest_path = max((written_width(path, encoding) for path in paths), default=0)
    title_width = args.width or _title_width(columns, counts, widest_path)
    ellipsis = output_glyphs().ellipsis
    # cut before their control characters become escapes, counting them at their length
    titles = [
        one_terminal_line(cut(title, title_width, ellipsis, encoding, more=more))
        for title, more in map(_title, infos)
    ]
    # the column is as wide as its widest title: a width of billions (--width, COLUMNS) pads nothing
    column = max((written_width(title, encoding) for title in titles), default=0)
    # on a terminal, a long path is cut to what the rest of its row leaves (its end kept: the
    # file's name); piped, whole, for scripts
    if columns and sys.stdout.isatty():
        room = _room_beside(columns, counts, column, NARROWEST_PATH)
        paths = [one_line_cut(info.path, room, ellipsis, encoding, keep_end=True) for info in infos]
    for info, count, title, path in zip(infos, counts, titles, paths, strict=True):
        print(COLUMN_GAP.join((_when(info.modified), count, padded(title, column, encoding), path)))
    return 0


def _room_beside(columns: int, counts: list[str], other: int, least: int) -> int:
    """What a terminal ``columns`` wide leaves the titles, or the paths, beside the date, the count
    and the other of the two (``other`` columns wide): ``least`` at least."""
    fixed = len(_when(0)) + max(map(len, counts), default=0) + other + 3 * len(COLUMN_GAP)
    return max(least, columns - fixed)


def _title_width(columns: int, counts: list[str], widest_path: int) -> int:
    """What a terminal ``columns`` wide leaves the titles beside the other columns (the longest
    path's, ``widest_path`` long), or :data:`DEFAULT_WIDTH` when the width is not known."""
    if not columns:
        return DEFAULT_WIDTH
    return _room_beside(columns, counts, widest_path, NARROWEST_TITLE)


def _sessions(args: argparse.Namespace, session_dir: str | None, title_width: int) -> list[SessionInfo]:
    from ..format.jsvalue import ABSENT
    from ..session.cli_session_dir import names_no_directory
    from ..session.listing import TextOptions, list_all_sessions, list_sessions
    from ..session.paths import default_session_dir_path

    # the first message cut where the title is (the whole of it in JSON): never the whole text
    text = TextOptions(all_messages_text=False, max_chars=None if args.json else title_width + 1)
    # how far the listing read, on a terminal (a first listing of big sessions reads them whole)
    progress = Progress(sys.stderr.isatty())

    def shown(loaded: int, total: int, _partial: object = None) -> None:
        progress.show(f"pi-session list: {loaded:,} of {counted(total, 'file')} read", last=loaded == total)

    read = shown if progress.enabled else None  # (a listing with a callback keeps partial lists)

    try:
        if names_no_directory(session_dir):  # pi's listings find no session there
            return []
        if args.all:  # pi's listAll(sessionDir)
            if session_dir is not None:
                return list_all_sessions(session_dir, read, text=text)
            return list_all_sessions(read, text=text)
        if args.directory:
            directory = os.path.abspath(args.directory)
            if not os.path.isdir(directory):
                raise CommandError(f"{args.directory}: {_not_a_directory(directory)}")
            return list_all_sessions(directory, read, text=text)
        cwd = os.getcwd()
        if session_dir is not None:  # pi's list(cwd, sessionDir): that directory's sessions of cwd
            return list_sessions(cwd, session_dir, read, text=text)
        directory = default_session_dir_path(cwd)
        if not os.path.isdir(directory):  # pi's list would create it
            return []
        return list_sessions(cwd, ABSENT, read, text=text)
    finally:
        progress.clear()


def _json_of(info: SessionInfo) -> object:
    out = info.to_json()
    out.pop("allMessagesText", None)
    return out


def _title(info: SessionInfo) -> tuple[str, bool]:
    """The session's name, or its first message, with its runs of whitespace as one space; and
    whether it is the start of a longer text (the first message read no further than a title
    shows)."""
    if isinstance(info.name, str) and info.name:
        return " ".join(f'"{info.name}"'.split()), False
    # pi's own "(no messages)" when there is none
    text = info.first_message if isinstance(info.first_message, str) else ""
    return " ".join(text.split()), info.text_truncated


def _when(modified: float) -> str:
    """Local time of an epoch-milliseconds date, to the minute ("?" for an invalid date)."""
    if not math.isfinite(modified):
        return "?".ljust(16)
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(modified / 1000))
    except (OverflowError, OSError, ValueError):  # a date beyond what the platform's time takes
        return "?".ljust(16)


def _not_a_directory(path: str) -> str:
    """Why ``path``, given as the directory to list, is none: missing, a link that leads nowhere, or
    a file of another kind."""
    if not os.path.lexists(path):
        return "no such directory"
    return broken_link_problem(path) or "not a directory"


def _nothing_listed(args: argparse.Namespace, session_dir: str | None) -> str:
    """Where the listing found no session (``session_dir``: the one pi's command line chose)."""
    from ..session.paths import default_session_dir_path, get_sessions_root

    if args.all:
        return f"no sessions in {session_dir or get_sessions_root()}"
    if args.directory:
        return f"no sessions in {args.directory}"
    cwd = os.getcwd()
    return f"no sessions of {cwd} (pi keeps them in {session_dir or default_session_dir_path(cwd)})"
