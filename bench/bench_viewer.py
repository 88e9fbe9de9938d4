#!/usr/bin/env python3
"""What the session viewer and the lazy tree views ask of the sidecar, timed on a big session.

    .venv/bin/python bench/bench_viewer.py SESSION.jsonl [--appends N]
    .venv/bin/python bench/bench_viewer.py --generate 2048 [--keep /var/tmp/viewer-2g.jsonl]

Spawns the sidecar (``python -m pi_session_server serve``) and asks what VS Code's session viewer
and tree view ask, in the order they ask it, addressing the file by ``uri`` as the editors do:

- the open (``pi/getInfo``), the viewer's first page of the path (``pi/getPath``), its totals
  (``pi/getStats``, then again: kept), a page from the middle and the last page (as scrolling and
  "End" ask for them);
- the tree view: the top level, then every level down to the leaf in one ``pi/getTree`` ``levels``
  request, as the views open on the leaf; then the same levels asked one window per level
  (``chain``/``aroundId``), as clients without ``levels`` do;
- a branch switch at the last branch point on the path (``pi/getPath`` with ``descend``);
- before the totals, VS Code's "Branch Here" on a row of the tree's top level (``pi/branch``), the
  tree's top level and the viewer's first page after it, and "Branch Here" back on the leaf;
- with ``--appends N`` (it writes to SESSION: give it a copy), last, pi appending N turns, each
  followed by the tree view's reload (the top level, the levels down to the new leaf), the last
  levels asked again, then pi's ``/label`` of an entry and a branch a few rows above the leaf
  (pi's ``/tree`` and a turn), each with the reload.

Prints seconds per step (wall, and the sidecar's CPU), the sidecar's peak RSS (``VmHWM``) after
each step and at the end.
``--generate N`` makes an N MB session with ``bench/gen_session.py`` first (2 GB takes some minutes
and the disk space).
Not part of CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pi_session_server.server.stdio_client import SidecarClient  # noqa: E402

PAGE = 100  # the viewer's page
TREE_PAGE = 200  # the tree view's page


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system): what a step cost it, whatever else runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run(path: Path, appends: int = 0) -> list[tuple[str, float, str]]:
    """Each step's name, seconds and note (with the sidecar's peak RSS after it)."""
    uri = path.resolve().as_uri()
    rows: list[tuple[str, float, str]] = []
    base = {"uri": uri, "filter": "default", "form": "flat", "activeBranchFirst": True}
    with SidecarClient([sys.executable, "-m", "pi_session_server", "serve"]) as client:

        def after(cpu: float) -> str:
            """The sidecar's CPU seconds since ``cpu``, and its peak RSS now."""
            pid = client.process.pid
            return f"cpu {cpu_seconds(pid) - cpu:6.2f} s  peak {peak_rss_mb(pid):,.0f} MB"

        def step(name: str, method: str, params: dict[str, Any], note: Any = None) -> Any:
            cpu = cpu_seconds(client.process.pid)
            started = time.perf_counter()
            result = client.request(method, params, timeout=3600)
            seconds = time.perf_counter() - started
            told = note(result) if note else ""
            rows.append((name, seconds, f"{told:<20} {after(cpu)}"))
            return result

        info = step("open (pi/getInfo)", "pi/getInfo", {"uri": uri}, lambda r: f"{r['entryCount']:,} entries")
        first = step(
            "viewer: first page",
            "pi/getPath",
            {"uri": uri, "limit": PAGE},
            lambda r: f"path of {r['total']:,}",
        )
        total = first["total"]
        # VS Code's "Branch Here" on a row of the tree's top level, then the views of the new leaf;
        # and back (so the steps below see the session's own leaf)
        top = client.request(
            "pi/getTree", {**base, "chain": True, "offset": 0, "limit": TREE_PAGE}, timeout=3600
        )
        leaf = top["leafId"]
        step(
            "tree: Branch Here (pi/branch)",
            "pi/branch",
            {"uri": uri, "entryId": top["nodes"][len(top["nodes"]) // 2]["id"]},
        )
        step(
            "  tree: top level after it",
            "pi/getTree",
            {**base, "chain": True, "offset": 0, "limit": TREE_PAGE},
        )
        step("  viewer: first page after it", "pi/getPath", {"uri": uri, "limit": PAGE})
        step("  tree: Branch Here back on the leaf", "pi/branch", {"uri": uri, "entryId": leaf})
        step(
            "viewer: totals",
            "pi/getStats",
            {"uri": uri},
            lambda r: f"{r['roles'].get('assistant', 0):,} turns",
        )
        step("viewer: totals again (kept)", "pi/getStats", {"uri": uri})
        step("viewer: a page in the middle", "pi/getPath", {"uri": uri, "offset": total // 2, "limit": PAGE})
        step(
            "viewer: the last page", "pi/getPath", {"uri": uri, "offset": max(0, total - PAGE), "limit": PAGE}
        )

        top = step("tree: top level", "pi/getTree", {**base, "chain": True, "offset": 0, "limit": TREE_PAGE})
        leaf = top["leafId"]
        step(
            "tree: down to the leaf, one levels request",
            "pi/getTree",
            {**base, "levels": True, "aroundId": leaf, "limit": TREE_PAGE},
            lambda r: f"{len(r['levels']):,} levels",
        )
        params = {**base, "chain": True, "offset": 0, "limit": TREE_PAGE}
        cpu = cpu_seconds(client.process.pid)
        started, levels, last_fork = time.perf_counter(), 0, None
        while True:
            result = client.request("pi/getTree", {**params, "aroundId": leaf}, timeout=3600)
            levels += 1
            index = result.get("aroundIndex")
            if index is None:
                break
            row = result["nodes"][index - result["offset"]]
            if row["id"] == leaf:
                break
            if row["isBranchPoint"]:
                last_fork = row
                params = {**base, "rootId": row["id"], "depth": 1, "offset": 1, "limit": TREE_PAGE + 1}
            elif len(row["childIds"]) == 1:
                params = {
                    **base,
                    "rootId": row["childIds"][0],
                    "chain": True,
                    "offset": 0,
                    "limit": TREE_PAGE,
                }
            else:
                break
        rows.append(
            (
                "tree: down to the leaf, a window per level",
                time.perf_counter() - started,
                f"{f'{levels} windows':<20} {after(cpu)}",
            )
        )

        if last_fork is not None:
            other = next(c for c in last_fork["childIds"] if c != last_fork["childIds"][0])
            step(
                "viewer: switch a branch",
                "pi/getPath",
                {
                    "uri": uri,
                    "entryId": other,
                    "descend": True,
                    "offset": max(0, total - PAGE),
                    "limit": PAGE,
                },
                lambda r: f"path of {r['total']:,}",
            )
        follow_appends(client, step, base, path, appends)
        rows.append(("sidecar peak RSS (MB)", peak_rss_mb(client.process.pid), ""))
        del info
    return rows


def follow_appends(client: SidecarClient, step: Any, base: dict[str, Any], path: Path, appends: int) -> None:
    """pi appends a turn, ``appends`` times; each time the server reports it (pi/didChange) and the
    tree view loads anew: the top level, then every level down to the new leaf. Then the same
    levels asked again (nothing changed); pi's ``/label`` of an entry of the top level (a label
    entry appended below the leaf), then pi's ``/tree`` to an entry a few rows above the leaf
    and a turn there (a branch), each followed by the view's reload."""
    if not appends:
        return
    uri = base["uri"]
    levels: dict[str, Any] = {}
    shown: Any = None
    for n in range(appends + 2):
        if n == appends:
            top = client.request("pi/getTree", {**base, "chain": True, "offset": 0, "limit": 1}, timeout=3600)
            new_id = pi_appends(path, n, label_of=top["nodes"][0]["id"])
            name = "pi labels an entry"
        elif n == appends + 1:
            rows = shown["levels"][-1]["nodes"]
            new_id = pi_appends(path, n, parent=rows[max(0, len(rows) - 4)]["id"])
            name = "pi branches a few rows up"
        else:
            new_id = pi_appends(path, n)
            name = f"pi appends turn {n + 1}"
        started = time.perf_counter()
        while time.perf_counter() - started < 60:  # until the server has taken the line in
            if client.request("pi/getInfo", {"uri": uri}, timeout=3600).get("leafId") == new_id:
                break
            time.sleep(0.05)
        params = {**base, "chain": True, "offset": 0, "limit": TREE_PAGE}
        step(f"{name}: tree top level", "pi/getTree", params)
        levels = {**base, "levels": True, "aroundId": new_id, "limit": TREE_PAGE}
        shown = step(f"{name}: levels down to it", "pi/getTree", levels)
        if n == appends - 1:
            step("  the same levels again (nothing changed)", "pi/getTree", levels)


def pi_appends(path: Path, n: int, label_of: str | None = None, parent: str | None = None) -> str:
    """Append a user message below the file's last entry (``parent``: below that entry), as pi
    writes one (``label_of``: a label of that entry instead, as pi's ``/label`` writes one); its
    id."""
    with path.open("rb") as file:
        file.seek(max(0, path.stat().st_size - (1 << 20)))
        last = file.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    new_id = f"bench{n:03d}{int(time.time() * 1000) % 100000:05d}"
    line: dict[str, Any] = {
        "type": "message" if label_of is None else "label",
        "id": new_id,
        "parentId": json.loads(last)["id"] if parent is None else parent,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
    }
    if label_of is None:
        line["message"] = {
            "role": "user",
            "content": f"appended by bench_viewer {n + 1}",
            "timestamp": int(time.time() * 1000),
        }
    else:
        line.update({"targetId": label_of, "label": f"bench_viewer {n + 1}"})
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
    return new_id


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("session", nargs="?", help="a session file")
    parser.add_argument("--generate", type=float, metavar="MB", help="generate a session of this size first")
    parser.add_argument("--keep", help="where the generated session goes (default: a temporary file)")
    parser.add_argument(
        "--appends",
        type=int,
        default=0,
        metavar="N",
        help="then append N turns to SESSION as pi does (it is written to: use a copy), each followed by "
        "the tree view's reload",
    )
    args = parser.parse_args()
    if args.session:
        path = Path(args.session)
    elif args.generate:
        from gen_session import generate

        path = Path(args.keep) if args.keep else Path(tempfile.mkdtemp()) / "viewer-bench.jsonl"
        if not path.exists():
            started = time.perf_counter()
            generate(path, args.generate)
            print(f"generated {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    else:
        parser.error("give a session file or --generate MB")
    size = path.stat().st_size / 1e6
    print(f"{path} ({size:,.0f} MB)")
    for name, value, note in run(path, args.appends):
        unit = "" if "RSS" in name else " s"
        print(f"  {name:<40} {value:>9.2f}{unit}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
