#!/usr/bin/env python3
"""The whole tree of a big session in pi/getTree pages: pages cut from one kept walk (what the
sidecar does) against every page walked anew (what it did before), in the same run.

    .venv/bin/python bench/bench_tree_pages.py [--entries 200000] [--page 50000] [--repeat 3]

Both editor clients read a tree this way (pages of 50,000 nodes, one after another). The session is
a generated linear conversation (user, assistant with a tool call, tool result, assistant text);
the views are the ones the clients ask for: the tree view (filter ``default``, previews, active
branch first) and "the entry on this line" (filter ``none``, no previews). Both strategies share
the session's preview cache, and each view is fetched once before measuring, so bodies read for
previews are read once for both. Prints seconds for the first page, the later pages and the whole
tree, and the ratio anew / kept.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pi_session_server.server import methods_read  # noqa: E402
from pi_session_server.server import params as P  # noqa: E402
from pi_session_server.server.errors import MAX_TREE_NODES  # noqa: E402
from pi_session_server.server.tree_view import encode_flat_tree_view  # noqa: E402
from pi_session_server.server.tree_window import TreeWindow  # noqa: E402
from pi_session_server.session import SessionManager  # noqa: E402

HEADER = '{"type":"session","version":3,"id":"bench","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
TS = "2026-01-01T00:00:01.000Z"
BODIES = [
    '{"role":"user","content":"please look at file %d","timestamp":1}',
    '{"role":"assistant","content":[{"type":"text","text":"reading it"},{"type":"toolCall","id":"c%d",'
    '"name":"read","arguments":{"path":"src/f.py"}}],"api":"x","provider":"p","model":"m","usage":{},'
    '"stopReason":"toolUse","timestamp":1}',
    '{"role":"toolResult","toolCallId":"c%d","toolName":"read","content":[{"type":"text","text":"ok"}],'
    '"isError":false,"timestamp":1}',
    '{"role":"assistant","content":[{"type":"text","text":"done with %d"}],"api":"x","provider":"p",'
    '"model":"m","usage":{},"stopReason":"stop","timestamp":1}',
]
VIEWS = {
    "tree view (default, previews)": {"filter": "default", "previews": True, "activeBranchFirst": True},
    "entry on a line (none, no previews)": {"filter": "none", "previews": False},
}


def generate(path: Path, entries: int) -> None:
    with open(path, "w") as out:
        out.write(HEADER)
        parent = "null"
        for i in range(entries):
            body = BODIES[i % 4] % (i // 4)
            out.write(
                f'{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"{TS}","message":{body}}}\n'
            )
            parent = f'"{i:08x}"'


def kept_pages(m: SessionManager, view: dict[str, Any], size: int) -> list[float]:
    """Every page through the sidecar's pi/getTree handler (its walk kept between pages)."""
    times, offset = [], 0
    while offset is not None:
        start = time.perf_counter()
        p = P.parse(
            {"session": "s", **view, "form": "flat", "offset": offset, "limit": size}, P.GetTreeParams
        )
        page = json.loads(bytes(methods_read._tree(m, p)))
        times.append(time.perf_counter() - start)
        offset = page.get("nextOffset")
    return times


def anew_pages(m: SessionManager, view: dict[str, Any], size: int) -> list[float]:
    """Every page walked anew: the library's tree, the filter, the leaf's path, the tool calls."""
    options = {
        "mode": view["filter"],
        "previews": view["previews"],
        "active_branch_first": view.get("activeBranchFirst", False),
        "cache": methods_read.preview_cache(m) if view["previews"] else None,
        "max_nodes": MAX_TREE_NODES,
    }
    times, offset = [], 0
    while offset is not None:
        start = time.perf_counter()
        window = TreeWindow(offset=offset, limit=size, paged=True)
        page = json.loads(
            encode_flat_tree_view(m.get_tree(), m.get_leaf_id(), m.by_id, window=window, **options)
        )
        times.append(time.perf_counter() - start)
        offset = page.get("nextOffset")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--page", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "session.jsonl"
        generate(path, args.entries)
        m = SessionManager.open(str(path), read_only=True)
        print(f"{args.entries} entries ({path.stat().st_size / 1e6:.0f} MB), pages of {args.page} nodes")
        print(f"{'view':>36} {'':>6} {'first':>7} {'later':>7} {'whole':>7}")
        for name, view in VIEWS.items():
            kept_pages(m, view, args.page)  # bodies for previews read once, for both
            runs: dict[str, list[list[float]]] = {"anew": [], "kept": []}
            for _ in range(args.repeat):  # in turn: this machine's speed drifts
                runs["anew"].append(anew_pages(m, view, args.page))
                runs["kept"].append(kept_pages(m, view, args.page))
            whole = {}
            for strategy, series in runs.items():
                first = statistics.median(r[0] for r in series)
                later = (
                    statistics.median(statistics.mean(r[1:]) for r in series) if len(series[0]) > 1 else 0.0
                )
                whole[strategy] = statistics.median(sum(r) for r in series)
                print(f"{name:>36} {strategy:>6} {first:7.3f} {later:7.3f} {whole[strategy]:7.3f}")
            print(f"{'':>36} whole tree: anew / kept = {whole['anew'] / whole['kept']:.1f}x")
        m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
