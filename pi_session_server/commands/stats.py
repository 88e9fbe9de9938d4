"""``pi-session stats [FILE] [--json] [--pi VERSION]``: the totals of a whole session (every branch):
its entries by type and message role, branch points and leaves, the tokens and cost as pi counts
them (its assistant turns', tool results', usage entries', branch summaries' and compactions'
usage), the assistant turns' by model, its first and last timestamps. ``--json`` prints what the
sidecar's ``pi/getStats`` answers (server/session_stats.py, the same sums)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from ._common import (
    add_index_argument,
    add_pi_argument,
    counted,
    open_to_look,
    output_encoding,
    report_skipped_lines,
    session_path,
)

# The usage fields shown, as pi's assistant messages name them, with their names here.
_TOKEN_NAMES = (
    ("input", "input"),
    ("output", "output"),
    ("cacheRead", "cache read"),
    ("cacheWrite", "cache write"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument(
        "--json", action="store_true", help="print the totals as JSON (what pi/getStats answers)"
    )
    add_pi_argument(parser)
    add_index_argument(parser)


def run(args: argparse.Namespace) -> int:
    from ..render.terminal_text import one_terminal_line
    from ..server.session_stats import session_stats

    path = session_path(args.file)
    manager = open_to_look(path, args.pi, index=args.index)
    report_skipped_lines("stats", path, manager)
    if not args.json and manager.entry_count() == 0 and os.path.getsize(path) == 0:
        print(f"{one_terminal_line(path)}\nempty file: no session in it yet")
        return 0
    stats = session_stats(manager, cache=None)  # asked once: nothing kept for appends
    if args.json:
        from ..format.jsjson import dumps_pretty  # JSON.stringify: a sum that overflowed is null

        print(dumps_pretty(stats))
        return 0
    header = manager.get_header() or {}
    name = manager.get_session_name()
    sys.stdout.write(
        "\n".join(
            [
                one_terminal_line(path),
                *_lines(
                    stats, header.get("id"), name if isinstance(name, str) else None, output_encoding()[0]
                ),
            ]
        )
        + "\n"
    )
    return 0


def _lines(stats: Mapping[str, Any], session_id: Any, name: str | None, encoding: str) -> list[str]:
    """The totals' lines; the models' names padded to one column as written in ``encoding``."""
    from ..render.terminal_text import one_terminal_line
    from ..render.written_text import padded, written_width

    out = [
        f"session {one_terminal_line(str(session_id))}" + (f'  "{one_terminal_line(name)}"' if name else "")
    ]
    span = ""
    if "firstTimestamp" in stats:
        first, last = (one_terminal_line(str(stats[key])) for key in ("firstTimestamp", "lastTimestamp"))
        span = f", from {first} to {last}"
    out.append(f"{counted(stats['entryCount'], 'entry', 'entries')}{span}")
    types: dict[str, int] = dict(stats["types"])
    messages = types.pop("message", 0)
    roles = _counts(stats["roles"])
    out.append(f"messages: {messages:,}" + (f" ({roles})" if roles else ""))
    if types:
        out.append(f"other entries: {_counts(types)}")
    out.append(
        f"tree: {counted(stats['branchPoints'], 'branch point')}, {counted(stats['leaves'], 'leaf', 'leaves')}"
    )
    tokens = stats["tokens"]
    parts = ", ".join(f"{label} {_number(tokens[key])}" for key, label in _TOKEN_NAMES)
    # pi's total (the sum of the four, as its /session counts it): the messages' own totalTokens,
    # which the JSON sums too, is missing from those of older pi releases
    out.append(f"tokens: {_number(tokens['total'])} ({parts})")
    out.append(f"cost: {_dollars(stats['cost'])}")
    models = stats["models"]
    if models:
        out.append("by model:")
        names = {model: one_terminal_line(model) for model in models}
        width = max(written_width(shown, encoding) for shown in names.values())
        for model, values in sorted(models.items(), key=lambda item: -item[1]["cost"]):
            # (a model's messages that recorded no totalTokens: no count rather than 0)
            recorded = f"  {_number(values['totalTokens'])} tokens" if values["totalTokens"] else ""
            out.append(
                f"  {padded(names[model], width, encoding)}  {counted(values['turns'], 'turn')}"
                f"{recorded}  {_dollars(values['cost'])}"
            )
    return out


def _counts(counts: Mapping[str, int]) -> str:
    """``name count`` pairs, the most first."""
    from ..render.terminal_text import one_terminal_line

    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{one_terminal_line(name)} {count:,}" for name, count in ordered)


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}"


def _dollars(value: float) -> str:
    """Cents, or the first digits of a cost below one cent (a short session of a cheap model)."""
    return f"${value:,.2f}" if abs(value) >= 0.01 or value == 0 else f"${value:,.4f}"
