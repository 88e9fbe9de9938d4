"""``pi-session tree [FILE] [--pi VERSION]``: the session tree drawn as text (labels, branch points,
the leaf), the session read as pi release VERSION reads it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from itertools import islice

from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, js_string_of
from ..render.tree_text import tree_text_lines
from ..session import SessionManager, view_store
from ..session.describe import PreviewCache, home_directory
from ..session.tree import TreeNode
from ._common import add_index_argument, add_pi_argument, open_to_look, report_skipped_lines, session_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--width", type=int, default=100, help="cut entry previews to about this many characters"
    )
    add_pi_argument(parser)
    add_index_argument(parser)


def tree_lines(manager: SessionManager, width: int) -> Iterator[str]:
    """The drawn tree's lines, one at a time. The previews are read in one pass over the file (or from those kept
    with its index); rows are drawn straight from the library's tree nodes."""
    entries = manager.get_entries()
    cache = PreviewCache()
    cache.prefetch(entries)  # every line read once, for the previews and the tool calls
    tool_calls = cache.collect_tool_calls(entries)
    preview_of = cache.previews()
    cut = width - 1

    def row(node: TreeNode) -> tuple[str, str]:
        entry = node.entry
        # pi's selector shows nothing for a type it does not know (a newer pi's): name the type
        text = preview_of(entry, tool_calls) or f"[{js_string_of(entry.type)}]"
        if len(text) > width:
            text = text[:cut] + "…"
        label = node.label
        if label is not ABSENT:
            label = js_string_of(label)
            if label:
                text = f"{text}  [{label}]"
        return js_string_of(entry.id), text

    leaf = js_string_of(manager.get_leaf_id())
    on_path = [js_string_of(e.id) for e in manager.get_branch()]
    return tree_text_lines(manager.get_tree(), row, leaf, on_path)


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    out = sys.stdout
    encoding, errors = getattr(out, "encoding", None) or "utf-8", getattr(out, "errors", None) or "strict"
    # the same file drawn the same way before: what was printed is kept (see session/view_store.py)
    before = view_store.identity_before_open(path) if args.index else None
    key = (args.pi, args.width, home_directory(), encoding, errors)
    kept = view_store.load(path, before, key, args.index)
    if kept is not None:
        out.write(path + kept.head)
        out.flush()  # what was printed before goes first
        _write_encoded(kept.data, encoding)
        return 0
    manager = open_to_look(path, args.pi, index=args.index)
    if manager.get_entries() == [] and os.path.getsize(path) == 0:
        # the header shown would be one made up in memory (pi writes it when it opens the file)
        print(f"{path}\nempty file: no session in it yet")
        return 0
    skipped = report_skipped_lines("tree", path, manager)
    name = manager.get_session_name()
    header = manager.get_header() or {}
    entries = manager.get_entries()
    head = (
        f"\nsession {header.get('id')}"
        + (f'  "{name}"' if name is not ABSENT else "")
        + f"\n{len(entries)} entries, leaf {js_string_of(manager.get_leaf_id())}\n\n"
    )
    out.write(path + head)
    out.flush()  # what was printed before goes first
    # the kept view is the whole text, gathered while it stays small enough to keep
    kept_parts: list[bytes] | None = None if skipped else []
    kept_size = 0
    with gc_paused():  # a row's objects hold no cycles: the collector would walk them again and again
        lines = tree_lines(manager, args.width)
        # written a batch of lines at a time: a deep tree's text can be far larger than the session
        while batch := list(islice(lines, _BATCH_LINES)):
            batch.append("")  # the batch's last newline: the text joined once
            data = "\n".join(batch).encode(encoding, errors)
            _write_encoded(data, encoding)
            if kept_parts is not None:
                kept_size += len(data)
                if kept_size > view_store.MAX_VIEW_BYTES:
                    kept_parts = None  # too big to keep: drawn again next time
                else:
                    kept_parts.append(data)
    if kept_parts is not None:  # (what is kept is printed without reading the file: no lines to report)
        view_store.save(entries, before, key, head, b"".join(kept_parts))
    return 0


# Lines drawn, encoded and written at a time.
_BATCH_LINES = 16384


def _write_encoded(data: bytes, encoding: str) -> None:
    """Write ``data`` (text encoded as stdout encodes it) to stdout's bytes, after what was
    printed to its text layer (flushed first)."""
    out = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is None or os.linesep != "\n":  # the text layer translates line ends
        out.write(data.decode(encoding, "surrogateescape"))
    else:
        buffer.write(data)
    out.flush()
