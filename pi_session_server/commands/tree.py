"""``pi-session tree [FILE] [--ids] [--filter MODE] [--search WORDS] [--pi VERSION]``: the session
tree drawn as text (labels, branch points, the leaf; with ``--ids``, each entry's id; with
``--filter`` and ``--search``, the entries pi's ``/tree`` shows in that mode, for that search), the
session read as pi release VERSION reads it.

A file unchanged since it was last drawn the same way is printed from what was kept then
(session/view_store.py), before the library that draws it is imported (commands/tree_draw.py)."""

from __future__ import annotations

import argparse
import os
import sys

from ..session import view_store
from ..session.tree_modes import FILTERS
from ._common import (
    add_index_argument,
    add_pi_argument,
    kept_files_dropped_when_stale,
    output_encoding,
    output_glyphs,
    session_path,
    terminal_columns,
    width,
    write_encoded,
)

# Previews are cut to this many columns when neither --width nor the terminal's width (COLUMNS,
# or stdout's terminal) says otherwise: piped output is the same whatever terminal it ran from.
DEFAULT_WIDTH = 100
# What a row holds before its preview: the mark of the path to the leaf ("* ", else two spaces).
MARK_WIDTH = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--width",
        type=width,
        help="cut entry previews, labels and the lines above the tree to this many columns (at "
        "least 1; default: each line cut to the terminal's width, as COLUMNS or the terminal says, "
        f"a preview to what the rest of its row leaves; previews of {DEFAULT_WIDTH} when neither "
        "says)",
    )
    parser.add_argument(
        "--ids",
        action="store_true",
        help="show each entry's id before its preview (what --leaf of context and demo takes)",
    )
    parser.add_argument(
        "--filter",
        choices=FILTERS,
        metavar="MODE",
        help="show the entries one of pi's /tree filter modes shows (default, no-tools, user-only, "
        "labeled-only, all), the descendants of a hidden entry under its nearest shown ancestor; "
        "none: every entry (as without this option)",
    )
    parser.add_argument(
        "--search",
        metavar="WORDS",
        help="show only the entries whose text holds every one of these words, case aside (pi's "
        "/tree search), within --filter's entries",
    )
    parser.add_argument(
        "--ascii",
        action="store_true",
        help="draw with ASCII characters only (the default where the output's encoding cannot "
        "write the others)",
    )
    add_pi_argument(parser)
    add_index_argument(parser)


def preview_width(columns: int) -> int:
    """The previews' width when --width does not say: what a terminal ``columns`` wide leaves beside
    the mark (a row's indentation, label and marks leave less: its preview is cut shorter), else
    (0: no terminal) :data:`DEFAULT_WIDTH`."""
    return max(1, columns - MARK_WIDTH) if columns else DEFAULT_WIDTH


def head_line(text: str, args: argparse.Namespace, *, keep_end: bool = False) -> str:
    """A line of the tree's head (``text``, the path with ``keep_end``: its end names the file),
    one line of a terminal cut to the head's width as written to stdout."""
    from ..render.glyphs import one_line_cut

    return one_line_cut(
        text, args.head_width, output_glyphs(args.ascii).ellipsis, output_encoding()[0], keep_end=keep_end
    )


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    # each row fits the terminal it is shown on; --width says the previews' own width
    args.row_width = None
    # the head's lines (the path, the session's name, its leaf) cut to --width, else to the
    # terminal's; piped without --width, whole (a script reads the path)
    args.head_width = args.width
    if args.width is None:  # (before the key: a view kept for this width is printed as it was)
        columns = terminal_columns()
        args.width = preview_width(columns)
        args.row_width = args.head_width = columns or None
    encoding, errors = output_encoding()
    # the home directory (what tool calls' paths are shortened against: tool_call_text.home_directory), read
    # here without importing the library, which a kept view does not need
    key = (
        args.pi,
        args.width,
        args.row_width,
        args.head_width,
        os.environ.get("HOME") or "",
        encoding,
        errors,
        args.ascii,
        args.ids,
        args.filter,
        args.search,
    )
    before = view_store.identity_before_open(path) if args.index else None
    kept = view_store.load(path, before, view_store.TREE, key, args.index)
    if kept is not None:
        sys.stdout.write(head_line(path, args, keep_end=True) + kept.head)
        write_encoded(kept.data, encoding)
        return 0
    from . import tree_draw  # the library: imported only when the tree is drawn

    with kept_files_dropped_when_stale(path, args.index):
        return tree_draw.draw(path, args, before, key)
