"""``pi-session context [FILE] [--leaf ID] [--json] [--pi VERSION]``: what the LLM would be sent at the
leaf (or at ID), as pi release VERSION builds it (1.6.0 by default: context edits applied, older
compactions in the kept range silent): as Markdown (``render/context_markdown.py``, the document the
editors show) or, with ``--json``, as pi's value (laid out as ``JSON.stringify(value, null, 2)``
down to ``READABLE_DEPTH`` levels, deeper containers on one line).

A file unchanged since its context was last printed the same way is printed from what was kept
then (session/view_store.py), before the library is imported."""

from __future__ import annotations

import argparse
import os

from ..render.terminal_text import one_terminal_line
from ..session import view_store
from ._common import (
    add_index_argument,
    add_pi_argument,
    kept_files_dropped_when_stale,
    open_to_look,
    output_encoding,
    report_skipped_lines,
    say_leaf_not_found,
    session_path,
    write_encoded,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--leaf",
        metavar="ID",
        help="build the context at this entry instead of the session's leaf (tree --ids shows the ids)",
    )
    parser.add_argument("--json", action="store_true", help="print the context as JSON (pi's value)")
    add_pi_argument(parser)
    add_index_argument(parser)


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    encoding, errors = output_encoding()
    # the Markdown's title names the file as given
    title_name = None if args.json else one_terminal_line(os.path.basename(path))
    key = (args.pi, args.leaf, args.json, title_name, encoding, errors)
    before = view_store.identity_before_open(path) if args.index else None
    kept = view_store.load(path, before, view_store.CONTEXT, key, args.index)
    if kept is not None:
        write_encoded(kept.data, encoding)
        return 0
    with kept_files_dropped_when_stale(path, args.index):
        made = _context_text(path, args)
    if made is None:
        return 1
    text, skipped = made
    data = (text + "\n").encode(encoding, errors)
    write_encoded(data, encoding)
    if not skipped:  # (what is kept is printed without reading the file: no lines to report)
        view_store.save(path, before, view_store.CONTEXT, key, "", data, args.index)
    return 0


def _context_text(path: str, args: argparse.Namespace) -> tuple[str, int] | None:
    """The context to print and how many lines pi skips (said on stderr), or None when ``--leaf``
    names no entry (said on stderr). The library is imported here, once no kept view was found."""
    from ..format.jsjson import READABLE_DEPTH, dumps_pretty
    from ..format.jsvalue import ABSENT
    from ..render.context_markdown import context_markdown, context_title

    manager = open_to_look(path, args.pi, index=args.index)
    skipped = report_skipped_lines("context", path, manager)
    if args.leaf is not None:
        if not args.leaf or manager.get_entry(args.leaf) is ABSENT:
            say_leaf_not_found("context", args.leaf, args.file)
            return None
        context = manager.build_session_context_at(args.leaf)
    else:
        context = manager.build_session_context()
    if args.json:
        text = dumps_pretty(context, indented_depth=READABLE_DEPTH)
    else:
        leaf = ABSENT if args.leaf is None else args.leaf
        text = context_markdown(context, context_title(one_terminal_line(os.path.basename(path)), leaf))
    return text, skipped
