"""A tree view following a session pi is writing: the levels anew after each turn, or what changed.

    python bench/bench_tree_follow.py [--session FILE] [--turns 20] [--filters default,no-tools]
        [--branch-back N] [--branch-only [--through-no-leaf]] [--work DIR]

Two sidecars (``pi-session serve``) each hold a copy of the session (by default the 105 MB one of
``/var/tmp/pi-session-bench``, read-only: the copies go to ``--work`` and are deleted after), each with
a tree view open on it per filter of ``--filters`` (two editors' views of one session: VS Code's with
``default``, Neovim's with ``no-tools``), as the editors open one (the active branch first, the
``levels`` down to the leaf, 50 rows each). Then a turn (a question, a tool call, its result, an
answer) is appended to both copies, as pi appends, ``--turns`` times (with ``--branch-back N``, each
below the entry ``N`` entries above the leaf: pi's ``/tree`` to an older entry, then a turn there,
which moves the leaf's path; with ``--branch-only`` nothing is appended: each turn is a ``pi/branch``
of both sidecars' session, to the entry ``N`` above the leaf the session opened with and back to that
leaf in turn, as the user picks an older entry in the editor's tree view and back; with
``--through-no-leaf`` each move is a ``pi/resetLeaf`` first, the views' top list asked then, as an
editor shows a session without a leaf, then the ``pi/branch`` from no leaf); once each
sidecar told the
append (``pi/didChange``), each of the baseline's views asks the ``levels`` down to the new leaf again
(what the editors did before ``since``) and each of the other's asks them with ``since`` (the
revision it holds), the views' requests interleaved; a ``{reload: true}`` answer is followed by the
levels anew, as the editors do, and both count for the turn. Per turn and view, the replies' size
and their time (request to decoded reply, what a client waits) are taken; the table gives their
medians and the ratios, all measured in this run, and each sidecar's CPU time (user and system)
over the turns.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_user import LEVEL_PAGE, Server, environment  # noqa: E402
from bench_viewer import cpu_seconds  # noqa: E402

SESSION = Path("/var/tmp/pi-session-bench/session-100mb.jsonl")


def turn_lines(leaf: str, n: int) -> list[str]:
    """A turn as pi appends it below ``leaf``: a question, a tool call, its result, an answer."""
    ids = [f"bench{n:05d}{k}" for k in range(4)]
    stamp = "2026-12-01T10:00:00.000Z"
    call = f"call-bench-{n}"
    entries: list[dict[str, Any]] = [
        {"role": "user", "content": f"question {n}", "timestamp": 1},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "ls"}}],
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": "bash",
            "content": [{"type": "text", "text": "a b"}],
            "isError": False,
            "timestamp": 3,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer {n}"}],
            "stopReason": "stop",
            "timestamp": 4,
        },
    ]
    lines, parent = [], leaf
    for entry_id, message in zip(ids, entries, strict=True):
        line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}
        lines.append(json.dumps(line, separators=(",", ":")))
        parent = entry_id
    return lines


def ancestor(server: Server, session: str, entry_id: str, back: int) -> str:
    """The entry ``back`` entries above ``entry_id`` (or the root)."""
    for _ in range(back):
        parent = server.request("pi/getEntry", {"session": session, "id": entry_id}).get("parentId")
        if parent is None:
            break
        entry_id = parent
    return str(entry_id)


def until_told(server: Server, last_id: str) -> None:
    """Until the sidecar sent ``pi/didChange`` for the append that ends with ``last_id``."""
    while True:
        message = server.receive()
        params = message.get("params") or {}
        if message.get("method") == "pi/didChange" and last_id in params.get("newEntryIds", []):
            return


def append_turn(servers: list[Server], copies: list[Path], session: str, leaf: str, n: int, back: int) -> str:
    """A turn appended to both copies below the entry ``back`` above ``leaf`` (of the first server's
    ``session``), as pi appends it, once both sidecars told it; the new leaf."""
    lines = turn_lines(ancestor(servers[0], session, leaf, back), n)
    for copy in copies:
        with copy.open("a", encoding="utf-8") as file:
            for line in lines:
                file.write(line + "\n")
                file.flush()
    new_leaf = str(json.loads(lines[-1])["id"])
    for server in servers:
        until_told(server, new_leaf)
    return new_leaf


def move_leaf(server: Server, views: list[dict[str, Any]], leaf: str, through_no_leaf: bool) -> None:
    """``pi/branch`` of the session of ``views`` to ``leaf``; ``through_no_leaf``: a ``pi/resetLeaf``
    first, and each view's top list asked then (an editor shows a session without a leaf so)."""
    session = views[0]["session"]
    if through_no_leaf:
        server.request("pi/resetLeaf", {"session": session})
        for view in views:
            server.request("pi/getTree", {**view, "chain": True, "offset": 0, "limit": LEVEL_PAGE})
    server.request("pi/branch", {"session": session, "entryId": leaf})


def timed(server: Server, params: dict[str, Any]) -> tuple[Any, float, int]:
    started = time.perf_counter()
    reply = server.request("pi/getTree", params)
    seconds = time.perf_counter() - started
    return reply, seconds, len(server.encode(reply))


def follow(
    server: Server, view: dict[str, Any], base: dict[str, Any], held: dict[str, Any]
) -> tuple[Any, float, int, bool]:
    """The levels with ``since`` the revision ``held`` gave, and anew when the answer is to reload
    (as an editor does): (the levels, the seconds and bytes of both, whether it reloaded)."""
    reply, seconds, size = timed(server, {**view, **base, "since": held["revision"]})
    if not reply.get("reload"):
        return reply, seconds, size, False
    anew, more_seconds, more_size = timed(server, {**view, **base})
    return anew, seconds + more_seconds, size + more_size, True


def report(
    name: str,
    turns: int,
    what: str,
    filters: list[str],
    levels: list[int],
    anew: list[list[tuple[float, int]]],
    since: list[list[tuple[float, int]]],
    reloads: list[int],
) -> None:
    print(f"{name}: {turns} {what}; views {', '.join(filters)} interleaved")
    print("| per turn | levels | reloads | reply bytes (median) | seconds (median) |")
    print("|---|---:|---:|---:|---:|")
    for at, mode in enumerate(filters):
        for kind, runs, reloaded in (("anew", anew[at], "-"), ("since", since[at], str(reloads[at]))):
            print(
                f"| {mode} {kind} | {levels[at]} | {reloaded} | {statistics.median(s for _t, s in runs):,.0f} "
                f"| {statistics.median(t for t, _s in runs):.4f} |"
            )
        bytes_ratio = statistics.median(s for _t, s in anew[at]) / statistics.median(s for _t, s in since[at])
        time_ratio = statistics.median(t for t, _s in anew[at]) / statistics.median(t for t, _s in since[at])
        print(f"{mode}: anew / since: {bytes_ratio:,.0f}x the bytes, {time_ratio:.1f}x the time")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--session", type=Path, default=SESSION)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument(
        "--filters", default="default,no-tools", help="a tree view per filter, comma-separated"
    )
    parser.add_argument(
        "--branch-back", type=int, default=0, help="each turn below the entry this many above the leaf"
    )
    parser.add_argument(
        "--branch-only",
        action="store_true",
        help="each turn a pi/branch (nothing appended): up --branch-back entries, then back, in turn",
    )
    parser.add_argument(
        "--through-no-leaf",
        action="store_true",
        help="with --branch-only: each move a pi/resetLeaf, the views' top list asked, then the pi/branch",
    )
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/livetree"))
    args = parser.parse_args()
    if args.branch_only and args.branch_back < 1:
        parser.error("--branch-only moves the leaf --branch-back entries up: give one of 1 or more")
    if args.through_no_leaf and not args.branch_only:
        parser.error("--through-no-leaf is of --branch-only")
    return args


def main() -> int:
    args = arguments()
    filters = [mode for mode in args.filters.split(",") if mode]
    args.work.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tree-follow-", dir=args.work))
    try:
        copies = [work / "anew.jsonl", work / "since.jsonl"]
        for copy in copies:
            shutil.copyfile(args.session, copy)
        servers = [Server(environment(work / f"index-{copy.stem}")) for copy in copies]
        views: list[list[dict[str, Any]]] = []  # per server, a view per filter
        for server, copy in zip(servers, copies, strict=True):
            session = server.request("pi/open", {"path": str(copy)})["session"]
            views.append(
                [
                    {"session": session, "filter": mode, "form": "flat", "activeBranchFirst": True}
                    for mode in filters
                ]
            )
        leaf = servers[0].request("pi/getLeaf", {"session": views[0][0]["session"]})["leafId"]
        base = {"levels": True, "aroundId": leaf, "limit": LEVEL_PAGE}
        held = [timed(servers[1], {**view, **base})[0] for view in views[1]]
        levels = [len(timed(servers[0], {**view, **base})[0]["levels"]) for view in views[0]]
        anew: list[list[tuple[float, int]]] = [[] for _ in filters]
        since: list[list[tuple[float, int]]] = [[] for _ in filters]
        reloads = [0 for _ in filters]
        moves = (leaf, ancestor(servers[0], views[0][0]["session"], leaf, args.branch_back))
        cpu_before = [cpu_seconds(server.proc.pid) for server in servers]
        for n in range(args.turns):
            if args.branch_only:
                leaf = moves[(n + 1) % 2]
                for server, mine in zip(servers, views, strict=True):
                    move_leaf(server, mine, leaf, args.through_no_leaf)
            else:
                leaf = append_turn(servers, copies, views[0][0]["session"], leaf, n, args.branch_back)
            base = {"levels": True, "aroundId": leaf, "limit": LEVEL_PAGE}
            for at, (mine, theirs) in enumerate(zip(views[0], views[1], strict=True)):
                _reply, seconds, size = timed(servers[0], {**mine, **base})
                anew[at].append((seconds, size))
                held[at], seconds, size, reloaded = follow(servers[1], theirs, base, held[at])
                reloads[at] += reloaded
                since[at].append((seconds, size))
        cpu = [
            cpu_seconds(server.proc.pid) - before for server, before in zip(servers, cpu_before, strict=True)
        ]
        for server in servers:
            server.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = f"moves of the leaf {args.branch_back} up and back" if args.branch_only else "turns of 4 entries"
    if args.through_no_leaf:
        what += ", each through no leaf"
    report(args.session.name, args.turns, what, filters, levels, anew, since, reloads)
    print(f"sidecars' CPU seconds over the turns: anew {cpu[0]:.2f}, since {cpu[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
