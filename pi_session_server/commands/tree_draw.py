"""``pi-session tree``'s drawing: the session opened, its tree drawn row by row and written out a
batch of lines at a time, and what was printed kept for the next run (session/view_store.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, index_key, js_string_of
from ..heap import give_back_free_heap
from ..render.glyphs import UNICODE, Glyphs, cut
from ..render.terminal_text import one_terminal_line
from ..render.tree_text import NO_ENTRIES, tree_leaf_mark, tree_text_lines
from ..render.written_text import written_width
from ..session import SessionManager, cache_dir, view_store
from ..session.cache_dir import Identity, SpooledParts
from ..session.preview_cache import PreviewCache
from ..session.profiles import profile_for
from ..session.tree import TreeNode, expanded_once
from ..session.tree_filter import filtered_roots, node_filter
from ._common import (
    counted,
    open_to_look,
    output_encoding,
    output_glyphs,
    report_skipped_lines,
    write_encoded,
)
from .tree import head_line

# Lines drawn, encoded and written at a time: at most so many, and no more once they hold
# BATCH_CHARS characters (a deep tree's lines are long: a batch of them counted alone can be
# hundreds of megabytes).
BATCH_LINES = 16384
BATCH_CHARS = 1 << 20


_ID = attrgetter("id")
# What pi's /tree says when its filter (or search) leaves no entry to show.
NOTHING_SHOWN = "No entries found"
# A drawing of this many entries or more gives the heap's free memory back before its rows
# (heap.give_back_free_heap): a big session's freed lists and tables; a smaller one's are not
# worth the call's time.
TRIM_FROM_ENTRIES = 100_000


def tree_lines(
    manager: SessionManager,
    width: int,
    cache: PreviewCache | None = None,
    glyphs: Glyphs = UNICODE,
    encoding: str | None = None,
    row_width: int | None = None,
    ids: bool = False,
    mode: str | None = None,
    search: str | None = None,
) -> Iterator[str]:
    """The drawn tree's lines, one at a time, from the first asked for on, drawn with ``glyphs``;
    the previews cut to ``width`` columns as written in ``encoding`` (the output's: the escapes of
    control characters and of what it cannot write count at their length, a wide character as two;
    None: an encoding that writes every character), and each row to ``row_width`` columns when
    given (a terminal's width: a preview cut to what its row's indentation, marks and label leave,
    render/tree_text.py); with ``ids``, each row's text starts with its entry's id. ``mode`` and
    ``search``: only the entries pi's ``/tree`` shows in that filter mode for that search
    (session/tree_filter.py; None and None: every entry). The previews are those
    ``cache`` made while the session was opened, else read in one pass over the file (or from those
    kept with its index); rows are drawn straight from the library's tree nodes."""
    entries = manager.get_entries()
    if cache is None:
        cache = PreviewCache(profile=manager.profile)
    cache.prefetch(entries)  # every line not scanned read once, for the previews and the tool calls
    big = len(entries) >= TRIM_FROM_ENTRIES
    if big:
        give_back_free_heap()  # what the open and the previews' save or load freed
    tool_calls = cache.tool_calls_once(entries)
    del entries
    # (no node hangs in two places otherwise: each entry is drawn once, its preview let go then)
    unique = manager.has_unique_ids()
    # one walk: every preview is known, cut to what a row shows (more than ``width``: cut by the row)
    preview_of = cache.previews_once(tool_calls, asked_once=unique, longest=width + 1)
    del tool_calls
    if big:
        give_back_free_heap()  # and what the previews' walk freed, before the rows
    leaf = index_key(manager.get_leaf_id())
    row = row_drawer(preview_of, width, glyphs, encoding, leaf, ids, row_width)
    branch = manager.get_branch()
    roots = manager.get_tree()
    if not unique:
        roots = expanded_once(roots)
    filtered = (mode is not None and mode != "none") or bool(search)
    if filtered:
        # the rows pi's selector shows: a hidden entry's shown descendants under its nearest shown
        # ancestor (the leaf's path then has rows the walk skips: told by a set, not in order)
        visible = node_filter(
            mode or "none", manager.get_leaf_id(), search, cache, manager.profile.context_edits
        )
        roots = filtered_roots(roots, visible)
        if not roots:
            yield NOTHING_SHOWN
            return
    # ids all distinct and the path down from a root (not cut short by a cycle of parents): the
    # walk meets its entries in its order, each once, told without a set of them all
    in_order = not filtered and unique and bool(branch) and any(root.entry is branch[0] for root in roots)
    keys = [i if type(i) is str else index_key(i) for i in map(_ID, branch)]  # (a string: its own key)
    on_path = keys if in_order else set(keys)
    del branch, keys
    yield from tree_text_lines(
        roots, row, leaf, on_path, path_in_walk_order=in_order, glyphs=glyphs, row_width=row_width
    )


def row_drawer(
    preview_of: Callable[[Any], str],
    width: int,
    glyphs: Glyphs,
    encoding: str | None,
    leaf: Any,
    ids: bool,
    row_width: int | None,
) -> Callable[..., tuple[Any, str]]:
    """The ``row`` of render/tree_text.py's ``tree_text_lines`` for :func:`tree_lines` (which says
    what each argument is; ``leaf``: the leaf's id as its key), each entry's preview asked of
    ``preview_of`` once."""
    ellipsis = glyphs.ellipsis
    leaf_mark_width = written_width(tree_leaf_mark(glyphs), encoding)

    def drawn(node: TreeNode, text: str, room: int | None = None) -> tuple[Any, str]:
        """``node``'s row, ``text`` its entry's preview: the id it is told apart by and its text."""
        entry = node.entry
        # the id as pi's selector tells entries apart (never printed): its path is a Set of ids, the
        # leaf compared with ===, which keys of JSON values say alike (1 and "1" are two ids; a
        # string, nearly every id, is its own key: no call for it)
        entry_id = entry.id
        key = entry_id if type(entry_id) is str else index_key(entry_id)
        # pi's selector shows nothing for a type it does not know (a newer pi's): name the type
        text = text or f"[{js_string_of(entry.type)}]"
        # (tree --ids: what --leaf takes, before the preview, as demo shows it)
        shown_id = f"{js_string_of(entry_id)} " if ids else ""
        label = node.label
        label = js_string_of(label) if label is not ABSENT else ""
        # a label as wide as a preview at most (--width's: the row's room cuts it below)
        tail = f"  [{cut(label, width, ellipsis, encoding)}]" if label else ""
        shown = width
        if room is not None:  # (the row fits ``row_width``: what its other parts leave the text)
            room = max(0, room - (leaf_mark_width if key == leaf else 0) - written_width(shown_id, encoding))
            # the label its room, but for half of it at least, the preview's, where it is long
            shown = (
                min(width, max(room - written_width(tail, encoding), (room + 1) // 2))
                if tail
                else min(width, room)
            )
        # cut before its control characters become escapes, counting them at their length (a
        # preview longer than the width may be the start of a longer one: it ends with the ellipsis)
        text = cut(text, shown, ellipsis, encoding, more=len(text) > width) + tail
        if room is not None and tail:  # (a label wider than what the preview leaves it: cut)
            text = cut(text, room, ellipsis, encoding)
        return key, one_terminal_line(shown_id + text)

    def row(node: TreeNode, room: int | None = None) -> tuple[Any, str]:
        return drawn(node, preview_of(node.entry), room)

    if row_width is None and not ids:  # (most runs: piped, or --width given)
        return plain_rows(drawn, preview_of, width, ellipsis)
    return row


def plain_rows(
    drawn: Callable[[TreeNode, str], tuple[Any, str]],
    preview_of: Callable[[Any], str],
    width: int,
    ellipsis: str,
) -> Callable[[TreeNode], tuple[Any, str]]:
    """The rows of a tree drawn without ids or a row width, as ``drawn(node, preview)`` draws them,
    with fewer calls for most (no label, a preview of printable ASCII: a column a character, written
    as itself in any encoding, so that it is the row's whole text, cut at a column when longer
    than ``width``); any other row drawn by ``drawn``. ``preview_of``: an entry's preview, asked
    once per row."""
    kept_ellipsis = ellipsis[:width]  # (as glyphs.cut cuts: an ellipsis no wider than the width)
    kept = max(0, width - len(kept_ellipsis))

    def row(node: TreeNode) -> tuple[Any, str]:
        entry = node.entry
        text = preview_of(entry)
        if node.label is not ABSENT or not text or not text.isascii() or not text.isprintable():
            return drawn(node, text)
        entry_id = entry.id
        key = entry_id if type(entry_id) is str else index_key(entry_id)
        return key, text if len(text) <= width else text[:kept] + kept_ellipsis

    return row


def draw(path: str, args: argparse.Namespace, before: Identity | None, key: tuple[Any, ...]) -> int:
    """Draw the tree of the session at ``path`` to stdout and keep it as the view ``key`` of the
    file identified ``before`` it was opened."""
    # the open's entries, previews and rows hold no cycles: the collector would walk them again and again
    with gc_paused():
        cache = PreviewCache(profile=profile_for(args.pi))
        # the file read once: the previews made as the open reads it, no longer than a row shows
        with cache.made_while_scanning(longest=args.width + 1):
            manager = open_to_look(path, args.pi, index=args.index)
        glyphs, encoding = output_glyphs(args.ascii), output_encoding()[0]
        lines = tree_lines(
            manager, args.width, cache, glyphs, encoding, args.row_width, args.ids, args.filter, args.search
        )
        # held by the rows alone: each preview goes once its row is drawn
        del cache
        return _print(path, args, before, key, manager, lines)


def _print(
    path: str,
    args: argparse.Namespace,
    before: Identity | None,
    key: tuple[Any, ...],
    manager: SessionManager,
    lines: Iterator[str],
) -> int:
    """:func:`draw` once the session is open: its head, then its tree's ``lines``."""
    encoding, errors = output_encoding()
    path_line = head_line(path, args, keep_end=True)
    count = len(manager.get_entries())  # (a list made anew at each call: once)
    if not count and os.path.getsize(path) == 0:
        # the header shown would be one made up in memory (pi writes it when it opens the file)
        print(f"{path_line}\n{head_line('empty file: no session in it yet', args)}")
        return 0
    skipped = report_skipped_lines("tree", path, manager)
    name = manager.get_session_name()
    header = manager.get_header() or {}
    session = f"session {header.get('id')}" + (f'  "{js_string_of(name)}"' if name is not ABSENT else "")
    head = f"\n{head_line(session, args)}\n{head_line(_entries_and_leaf(manager, count), args)}\n"
    if count:
        head += "\n"  # (before the rows)
    sys.stdout.write(path_line + head)
    # the kept view is the whole text, gathered while it stays small enough to keep (when views
    # are kept), in a file: a big session's drawn text, gathered up to the view's limit before it
    # is dropped, is not held beside the tree while it is drawn
    keeps = not skipped and view_store.may_keep(before, args.index)
    kept_parts = _kept_parts(args.index) if keeps else None
    kept_size = 0
    # written a batch of lines at a time: a deep tree's text can be far larger than the session
    for text in _batches(lines):
        data = text.encode(encoding, errors)
        del text  # (not held while the next batch is drawn)
        write_encoded(data, encoding)
        if kept_parts is not None:
            kept_size += len(data)
            if kept_size > view_store.MAX_VIEW_BYTES:
                _let_go(kept_parts)  # too big to keep: drawn again next time
                kept_parts = None
            else:
                kept_parts.append(data)
    if kept_parts is not None:  # (what is kept is printed without reading the file: no lines to report)
        view_store.save(path, before, view_store.TREE, key, head, kept_parts, args.index)
        _let_go(kept_parts)
    return 0


def _entries_and_leaf(manager: SessionManager, count: int) -> str:
    """How many entries the session has (``count``) and its leaf; for a session with none (a
    header alone), pi's words for it (its /tree says so instead of a tree)."""
    if not count:
        return NO_ENTRIES
    return f"{counted(count, 'entry', 'entries')}, leaf {js_string_of(manager.get_leaf_id())}"


def _kept_parts(index: bool | str) -> SpooledParts | list[bytes]:
    """Where the parts of the view to keep are gathered: a file in the cache directory, else (no
    such file can be made there) a list."""
    settings = cache_dir.index_settings(index)
    if settings is not None:
        with contextlib.suppress(OSError):
            return SpooledParts(settings.directory)
    return []


def _let_go(parts: SpooledParts | list[bytes]) -> None:
    if isinstance(parts, SpooledParts):
        parts.close()


def _batches(lines: Iterator[str]) -> Iterator[str]:
    """``lines`` joined a batch at a time, each line ended by a newline (see BATCH_LINES)."""
    batch: list[str] = []
    size = 0
    add = batch.append
    for line in lines:
        add(line)
        size += len(line)
        if size >= BATCH_CHARS or len(batch) >= BATCH_LINES:
            add("")  # the batch's last newline: the text joined once
            yield "\n".join(batch)
            batch.clear()
            size = 0
    if batch:
        add("")
        yield "\n".join(batch)
