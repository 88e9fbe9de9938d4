"""What users wait for, as whole processes, against pi in the same run.

    python bench/bench_user.py [--sizes 100,300] [--huge-gb 2] [--repeat 3] [--oracle DIR] [--markdown FILE]

On sessions made by bench/gen_session.py (the first size text only, the others with base64 images,
as bench_core.py makes them; ``--huge-gb`` adds a session of that many GB of text, the case where
the costs per entry dominate), it times, each in fresh processes and with its peak RSS:

* ``pi-session context FILE --json > /dev/null`` and ``pi-session tree FILE > /dev/null``, against
  pi's open + ``buildSessionContext()`` (its JSON printed) and open + ``getTree()``, whole node
  processes (from an oracle checkout with node_modules, see bench_core.py);
* the floor of a first open in Python: a process that reads every line and checks it is a JSON
  object with msgspec and does nothing else, against pi's open + ``getTree()`` (what a command
  that must read the whole file can at best reach);
* ``pi-session check FILE`` (pi has no checker), first and again on the unchanged file (the problems kept);
* the sidecar as the editors' tree view uses it: spawn ``pi-session serve``,
  ``pi/open`` and the view's first window (``pi/getTree`` flat, filter ``default``, the active
  branch first, the top chain, 200 rows: what ``editors/vscode/src/lazyTree.ts`` asks for first),
  timed from the spawn; then the ``levels`` request that opens the view down to the leaf (50 rows
  of each level, as the editors ask), and the full flat tree in pages of 50,000, each timed on its
  own. Its reopen uses an index directory only the sidecar wrote to (what an editor user who never
  ran ``pi-session tree`` has);
* the language server: ``textDocument/didOpen`` with the file's text -> the first
  ``publishDiagnostics``, timed from the first byte of the notification (after ``initialize``);
* for the library's commands and the sidecar, a first open (an empty index directory) and a reopen
  (the index the first open wrote; see session/scan_index.py).

With ``--huge-gb`` the big session is also opened in process as bench_core.py does (open +
buildSessionContext), first and again. Ratios are pi's time / ours, medians of ``--repeat`` runs made
in turn (ours, pi, ours, ...: this machine's speed drifts). ``--markdown FILE`` also writes the
table there. Figures are kept in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_core import FLOOR, find_reference  # noqa: E402
from gen_session import generate  # noqa: E402

REFERENCE = textwrap.dedent(
    """
    const mod = await import(process.argv[2]);
    const sm = mod.SessionManager.open(process.argv[3]);
    if (process.argv[4] === "context") {
      process.stdout.write(JSON.stringify(sm.buildSessionContext(), null, 2) + "\\n");
    } else {
      sm.getTree();
    }
    """
)

IN_PROCESS = textwrap.dedent(
    """
    import json, sys, time
    from pi_session_server.session import SessionManager, scan_index
    t1 = time.perf_counter()
    sm = SessionManager.open(sys.argv[1], read_only=True)
    t2 = time.perf_counter()
    ctx = sm.build_session_context()
    t3 = time.perf_counter()
    print(json.dumps({"open": t2 - t1, "seconds": t3 - t1, "entries": len(sm.get_entries()),
                      "index": scan_index.last_outcome.read}))
    """
)


def environment(index_dir: Path) -> dict[str, str]:
    env = dict(os.environ, PI_SESSION_INDEX_DIR=str(index_dir))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' installs have their bytecode compiled
    env.pop("PI_SESSION_NO_INDEX", None)
    env.pop("PI_SESSION_INDEX_MIN_SIZE", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def timed_process(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``argv`` to its end: wall seconds and its peak RSS. (The RSS comes from ``/usr/bin/time``,
    whose small process starts it: a child of this process, which holds big texts for the language
    server's didOpen, would count this process's pages before its exec as its own.)"""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "peak-rss-kb %M", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        check=False,
    )
    seconds = time.perf_counter() - start
    stderr = done.stderr.decode(errors="replace")
    if done.returncode not in (0, 1):  # check exits 1 when it finds errors
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {stderr[-500:]}")
    kb = next(
        int(line.split()[1]) for line in reversed(stderr.splitlines()) if line.startswith("peak-rss-kb")
    )
    return {"seconds": seconds, "rss": kb * 1024}


class Side:
    """One way of opening: a fresh index directory for each run (first open), or one kept warm."""

    def __init__(self, work: Path, reopen: bool) -> None:
        self.reopen = reopen
        self.base = Path(tempfile.mkdtemp(prefix="pi-bench-index-", dir=work))
        self.runs = 0

    def env(self) -> dict[str, str]:
        if not self.reopen:
            directory = self.base / f"run{self.runs}"  # empty: nothing indexed yet
            self.runs += 1
        else:
            directory = self.base / "kept"
        return environment(directory)

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def ours(*args: str) -> list[str]:
    """Our command line as users run it: the ``pi-session`` script installed beside this
    interpreter (it imports the package from PYTHONPATH first), else ``python -m``."""
    script = Path(sys.executable).with_name("pi-session")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "pi_session_server.cli", *args]


def ours_cli(side: Side, *args: str) -> Callable[[], dict]:
    return lambda: timed_process(ours(*args), side.env())


def floor(path: Path) -> Callable[[], dict]:
    """A Python process that only reads every line of ``path`` and checks it is a JSON object
    (msgspec, as bench_core's floor): the least any first open in Python pays, before it keeps,
    draws or prints anything."""
    return lambda: timed_process([sys.executable, "-c", FLOOR, str(path)])


def reference(module: Path, path: Path, mode: str) -> Callable[[], dict]:
    script = Path(tempfile.gettempdir()) / "pi-bench-user-reference.mjs"
    script.write_text(REFERENCE)
    return lambda: timed_process(["node", str(script), module.as_uri(), str(path), mode])


# ---------------------------------------------------------------------- the sidecar and the LSP


class Server:
    """``python -m pi_session_server serve`` on pipes, with a minimal JSON-RPC client."""

    def __init__(self, env: dict[str, str]) -> None:
        import msgspec

        self.encode = msgspec.json.encode
        self.decode = msgspec.json.decode
        self.proc = subprocess.Popen(
            ours("serve"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
        )
        self.buffer = bytearray()
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = self.encode(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                length = _content_length(bytes(self.buffer[:end]))
                start = end + 4
                while len(self.buffer) < start + length:
                    chunk = self.proc.stdout.read1(max(1 << 20, start + length - len(self.buffer)))
                    if not chunk:
                        raise ConnectionError("the server closed the connection")
                    self.buffer += chunk
                body = bytes(self.buffer[start : start + length])
                del self.buffer[: start + length]
                message = self.decode(body)
                if "method" in message and "id" in message:  # a request of the server's: null
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                    continue
                return message
            chunk = self.proc.stdout.read1(1 << 20)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buffer += chunk

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def peak_rss(self) -> int:
        """The server's peak RSS so far (VmHWM: of its own address space, see timed_process)."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self) -> int:
        """Shut down; the server's peak RSS."""
        peak = self.peak_rss()
        try:
            self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (OSError, ConnectionError, RuntimeError):
            self.proc.kill()
        self.proc.wait(60)
        return peak


def _content_length(headers: bytes) -> int:
    """The Content-Length of a frame's headers (pygls adds a Content-Type)."""
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ConnectionError(f"a frame without Content-Length: {headers[:200]!r}")


TREE_VIEW_PAGE = 200  # lazyTree.ts TREE_PAGE
LEVEL_PAGE = 50  # lazyTree.ts LEVEL_PAGE: rows of each level on the way down to the leaf
PAGE = 50_000


def sidecar(side: Side, path: Path) -> Callable[[], dict]:
    def run() -> dict:
        start = time.perf_counter()
        server = Server(side.env())
        session = server.request("pi/open", {"path": str(path)})["session"]
        view = {"session": session, "filter": "default", "form": "flat", "activeBranchFirst": True}
        page = server.request("pi/getTree", {**view, "chain": True, "offset": 0, "limit": TREE_VIEW_PAGE})
        first_page = time.perf_counter() - start
        assert page["nodes"], "an empty first page"
        started = time.perf_counter()
        reply = server.request(
            "pi/getTree", {**view, "levels": True, "aroundId": page["leafId"], "limit": LEVEL_PAGE}
        )
        to_leaf = time.perf_counter() - started
        assert reply["levels"], "no levels down to the leaf"
        started = time.perf_counter()
        params = {"session": session, "filter": "default"}
        nodes, offset = 0, 0
        while True:
            page = server.request("pi/getTree", {**params, "limit": PAGE, "offset": offset})
            nodes += len(page["nodes"])
            if not page.get("hasMore"):
                break
            offset = page["nextOffset"]
        full = time.perf_counter() - started
        rss = server.close()
        return {
            "seconds": first_page,
            "to_leaf": to_leaf,
            "levels": len(reply["levels"]),
            "full_tree": full,
            "nodes": nodes,
            "rss": rss,
        }

    return run


def lsp_first_diagnostics(path: Path, work: Path) -> Callable[[], dict]:
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    uri = path.resolve().as_uri()

    def run() -> dict:
        server = Server(environment(work / "lsp-index"))
        # no textDocument.diagnostic: a client that pulls diagnostics is sent none (it asks)
        caps = {"general": {"positionEncodings": ["utf-16"]}}
        server.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": caps})
        server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        body = server.encode(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": text}
                },
            }
        )
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        assert server.proc.stdin is not None
        start = time.perf_counter()
        server.proc.stdin.write(frame)
        server.proc.stdin.flush()
        while True:
            message = server.receive()
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                break
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "rss": server.close()}

    return run


# ---------------------------------------------------------------------- running and reporting


def median_runs(fns: list[Callable[[], dict]], repeat: int) -> list[dict]:
    """The median run of each of ``fns``, run in turn: both sides see the same fast and slow moments."""
    runs: list[list[dict]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, into in zip(fns, runs, strict=True):
            into.append(fn())
    out = []
    for side in runs:
        middle = dict(sorted(side, key=lambda r: r["seconds"])[len(side) // 2])
        middle["all"] = [round(r["seconds"], 3) for r in side]
        middle["rss"] = max(r["rss"] for r in side)
        for key in ("full_tree",):
            if key in middle:
                middle[key] = statistics.median(r[key] for r in side)
        out.append(middle)
    return out


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(self, *cells: str) -> None:
        self.rows.append(cells)
        print("  ".join(cells), flush=True)

    def markdown(self) -> str:
        header = (
            "session",
            "what",
            "ours first open",
            "ours reopen",
            "pi",
            "pi / ours first",
            "pi / ours reopen",
            "goal",
        )
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"


def figure(run: dict | None, key: str = "seconds") -> str:
    if run is None:
        return "-"
    return f"{run[key]:.3f} s, {run['rss'] / 1e6:.0f} MB"


def ratio(pi: dict | None, ours: dict | None) -> str:
    if pi is None or ours is None:
        return "-"
    return f"{pi['seconds'] / ours['seconds']:.1f}x"


def goal(text: str, met: bool | None) -> str:
    return text if met is None else f"{text}: {'met' if met else 'NOT met'}"


def bench_size(
    path: Path, label: str, module: Path | None, repeat: int, work: Path, table: Table, goals: bool
) -> None:
    first, again = Side(work, reopen=False), Side(work, reopen=True)
    editor_only = Side(work, reopen=True)  # an index only the sidecar wrote to
    try:
        # warm up: bytecode compiled, the file in the page cache, and on the reopen side what a
        # first open keeps (the index, the tree's previews)
        for args in (("context", "--json"), ("tree",), ("check",)):
            timed_process(ours(*args, str(path)), again.env())
        sidecar(editor_only, path)()
        for what, args, mode in (
            ("context --json", ("context", "--json"), "context"),
            ("tree", ("tree",), "tree"),
        ):
            fns = [ours_cli(first, *args, str(path)), ours_cli(again, *args, str(path))]
            if module is not None:
                fns.append(reference(module, path, mode))
            results = median_runs(fns, repeat)
            ours_first, ours_again = results[0], results[1]
            pi = results[2] if module is not None else None
            met = None
            if goals and pi is not None:
                met = (
                    pi["seconds"] / ours_first["seconds"] >= 3 and pi["seconds"] / ours_again["seconds"] >= 8
                )
            table.add(
                label,
                f"`{what}`",
                figure(ours_first),
                figure(ours_again),
                figure(pi),
                ratio(pi, ours_first),
                ratio(pi, ours_again),
                goal("3x first, 8x reopen", met) if goals else "",
            )
        if module is not None:
            # how far a first open in Python can go at all: the floor against pi's open + getTree
            floor_run, pi_tree = median_runs([floor(path), reference(module, path, "tree")], repeat)
            table.add(
                label,
                "floor: a Python process reading and checking every line (msgspec), nothing else",
                figure(floor_run),
                "-",
                figure(pi_tree) + " (open + getTree)",
                ratio(pi_tree, floor_run),
                "-",
                "",
            )
        check, check_again = median_runs(
            [ours_cli(first, "check", str(path)), ours_cli(again, "check", str(path))], repeat
        )
        table.add(
            label,
            "`check` (again: the problems kept of the unchanged file)",
            figure(check),
            figure(check_again),
            "-",
            "-",
            "-",
            goal("< 1.5 s", check["seconds"] < 1.5 if goals else None) if goals else "",
        )
        side_first, side_again = median_runs([sidecar(first, path), sidecar(editor_only, path)], repeat)
        pi_tree = None
        if module is not None:
            (pi_tree,) = median_runs([reference(module, path, "tree")], 1)
        table.add(
            label,
            "sidecar spawn + `pi/open` + first tree view page",
            figure(side_first),
            figure(side_again),
            figure(pi_tree) + " (open + getTree)" if pi_tree else "-",
            ratio(pi_tree, side_first),
            ratio(pi_tree, side_again),
            goal("< 0.5 s first, < 0.2 s reopen", side_first["seconds"] < 0.5 and side_again["seconds"] < 0.2)
            if goals
            else "",
        )
        table.add(
            label,
            f"tree view down to the leaf (`levels`, {side_first['levels']} levels, after the first page)",
            f"{side_first['to_leaf']:.3f} s",
            f"{side_again['to_leaf']:.3f} s",
            "-",
            "-",
            "-",
            "",
        )
        table.add(
            label,
            f"full flat tree ({side_first['nodes']} nodes, after the open)",
            f"{side_first['full_tree']:.3f} s",
            f"{side_again['full_tree']:.3f} s",
            "-",
            "-",
            "-",
            goal("< 1 s", side_first["full_tree"] < 1 and side_again["full_tree"] < 1) if goals else "",
        )
        (lsp,) = median_runs([lsp_first_diagnostics(path, work)], repeat)
        table.add(
            label,
            "LSP didOpen -> first diagnostics",
            figure(lsp),
            "-",
            "-",
            "-",
            "-",
            goal("< 1 s", lsp["seconds"] < 1) if goals else "",
        )
    finally:
        first.close()
        again.close()
        editor_only.close()


def bench_huge(path: Path, repeat: int, work: Path, table: Table) -> None:
    first, again = Side(work, reopen=False), Side(work, reopen=True)
    try:
        run = lambda side: lambda: _in_process(path, side)  # noqa: E731
        _in_process(path, again)  # writes the index the reopens read
        ours_first, ours_again = median_runs([run(first), run(again)], repeat)
        label = f"{path.stat().st_size / 1e9:.2f} GB text ({ours_first['entries']} entries)"
        table.add(
            label,
            "open + buildSessionContext, in process",
            figure(ours_first) + f" (open {ours_first['open']:.2f} s)",
            figure(ours_again) + f" (open {ours_again['open']:.2f} s)",
            "-",
            "-",
            "-",
            goal(
                "first < 6 s and 400 MB, reopen < 0.5 s",
                ours_first["seconds"] < 6 and ours_first["rss"] < 400e6 and ours_again["seconds"] < 0.5,
            ),
        )
        context_first, context_again = median_runs(
            [
                ours_cli(first, "context", "--json", str(path)),
                ours_cli(again, "context", "--json", str(path)),
            ],
            repeat,
        )
        table.add(label, "`context --json`", figure(context_first), figure(context_again), "-", "-", "-", "")
    finally:
        first.close()
        again.close()


def _in_process(path: Path, side: Side) -> dict:
    done = subprocess.run(
        ["/usr/bin/time", "-f", "peak-rss-kb %M", sys.executable, "-c", IN_PROCESS, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=side.env(),
        cwd=ROOT,
    )
    result = json.loads(done.stdout)
    kb = next(
        int(line.split()[1]) for line in reversed(done.stderr.splitlines()) if line.startswith("peak-rss-kb")
    )
    result["rss"] = kb * 1024  # (see timed_process)
    return result


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a run of whole processes against pi: ``--repeat``, ``--work``, ``--oracle``."""
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default="/var/tmp/pi-session-bench")
    parser.add_argument("--oracle", help="oracle directory with node_modules (default: search)")


def work_and_reference(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The work directory (made if missing) and pi's session-manager module (None if not found)."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    return work, find_reference(args.oracle)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="100,300", help="session sizes in MB (the second and later get images)"
    )
    parser.add_argument("--huge-gb", type=float, default=0, help="also a session of this many GB of text")
    add_run_arguments(parser)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    work, module = work_and_reference(args)
    if module is None:
        print("reference not found (see bench_core.py): pi's columns skipped", file=sys.stderr)
    table = Table()
    for i, size in enumerate(int(s) for s in args.sizes.split(",")):
        images = i > 0
        path = work / f"session-{size}mb{'-images' if images else ''}.jsonl"
        if not path.exists():
            generate(path, size, images=images, seed=size)
        label = f"{path.stat().st_size / 1e6:.0f} MB" + (" with images" if images else "")
        bench_size(path, label, module, args.repeat, work, table, goals=i == 0)
    if args.huge_gb:
        path = work / f"session-{args.huge_gb:g}gb-text.jsonl"
        if not path.exists():
            generate(path, args.huge_gb * 1024, images=False, seed=11)
        bench_huge(path, args.repeat, work, table)
    if args.markdown:
        Path(args.markdown).write_text(table.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
