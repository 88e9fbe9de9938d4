"""``pi-session context [FILE] [--leaf ID] [--json] [--pi VERSION]``: what the LLM would be sent at the
leaf (or at ID), as pi release VERSION builds it (1.6.0 by default: context edits applied, older
compactions in the kept range silent): as Markdown (``render/context_markdown.py``, the document the
editors show) or, with ``--json``, as pi's value."""

from __future__ import annotations

import argparse
import os
import sys

from ..format.jsjson import dumps_pretty
from ..format.jsvalue import ABSENT
from ..render.context_markdown import context_markdown, context_title
from ._common import add_index_argument, add_pi_argument, open_to_look, report_skipped_lines, session_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument("--leaf", help="build the context at this entry id instead of the session's leaf")
    parser.add_argument("--json", action="store_true", help="print the context as JSON (pi's value)")
    add_pi_argument(parser)
    add_index_argument(parser)


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    manager = open_to_look(path, args.pi, index=args.index)
    report_skipped_lines("context", path, manager)
    if args.leaf is not None:
        if manager.get_entry(args.leaf) is ABSENT:
            print(f"pi-session context: Entry {args.leaf} not found", file=sys.stderr)
            return 1
        context = manager.build_session_context_at(args.leaf)
    else:
        context = manager.build_session_context()
    if args.json:
        print(dumps_pretty(context))
        return 0
    leaf = ABSENT if args.leaf is None else args.leaf
    print(context_markdown(context, context_title(os.path.basename(path), leaf)))
    return 0
