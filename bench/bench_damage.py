#!/usr/bin/env python3
"""Damaged sessions against an undamaged one of the same size, command by command.

    .venv/bin/python bench/bench_damage.py [--size-mb 10] [--cases dup,orphans,...] [--paths cli,sidecar,lsp]

Users bring damaged files (a crash loop writing one line again and again, glued lines, orphan tool
results, hand-edited trees); a command must stay about linear in the file's size whatever the
damage. Each case is a file of ``--size-mb`` MB with one kind of damage everywhere; each command is
timed on it and on an undamaged session of the same size made in the same run, and the ratio
damaged / undamaged is printed (a ratio far above a few is work that grows with the damage).

Paths: ``cli`` (``check --no-index``, ``tree``, ``context``, ``stats``, ``repair`` without an
output: its plan, each its own process), ``sidecar`` (``pi/open`` and every page of ``pi/getTree``)
and ``lsp`` (what the language server does for a file it reads from disk, in process: the document,
its diagnostics as the server converts them, the outline, a hover and the code actions of the
first lines with problems).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # the session builders of the tests (tests/builders.py)

import builders as S  # noqa: E402

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/x"}
TIME = "2026-01-01T00:00:00.000Z"
TEXT = "hello world " * 8


def _line(value: dict) -> str:
    return json.dumps(value)


def _message(i: object, parent: object, role: str = "user", content: object = TEXT) -> dict:
    if role == "assistant":
        message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "m",
            "usage": S.TEST_USAGE,
            "stopReason": "stop",
            "timestamp": 1,
        }
    else:
        message = {"role": role, "content": content, "timestamp": 1}
    return {"type": "message", "id": i, "parentId": parent, "timestamp": TIME, "message": message}


def _chain(size: int) -> Iterator[str]:
    """An undamaged linear session of user and assistant turns."""
    parent = None
    for n in range(size):
        i = f"e{n:07d}"
        yield _line(
            _message(
                i,
                parent,
                "user" if n % 2 == 0 else "assistant",
                TEXT if n % 2 == 0 else [{"type": "text", "text": TEXT}],
            )
        )
        parent = i


def clean(size: int) -> Iterator[str]:
    yield from _chain(size)


def dup(size: int) -> Iterator[str]:
    """One line written again and again (a crash loop, ``yes LINE >> FILE``)."""
    line = _line(_message("aaaaaaaa", None))
    for _ in range(size):
        yield line


def orphans(size: int) -> Iterator[str]:
    """Every fifth entry's parentId names nothing."""
    for n, line in enumerate(_chain(size)):
        yield line.replace('"parentId": "', '"parentId": "gone-', 1) if n % 5 == 4 else line


def deep(size: int) -> Iterator[str]:
    """A chain of short entries (500,000 of them in 50 MB)."""
    parent = None
    for n in range(size * 2):
        i = f"d{n:07d}"
        yield _line(
            {
                "type": "message",
                "id": i,
                "parentId": parent,
                "timestamp": TIME,
                "message": {"role": "user", "content": "x", "timestamp": 1},
            }
        )
        parent = i


def cycle(size: int) -> Iterator[str]:
    """Every entry in one parent cycle."""
    for n in range(size):
        yield _line(_message(f"c{n:07d}", f"c{(n - 1) % size:07d}"))


def far_results(size: int) -> Iterator[str]:
    """Tool results whose call is on another branch: each call on one branch of a fork, its
    result on the other, the results in the calls' reverse order (a result is then far deeper or
    far shallower than its call)."""
    yield _line(_message("root", None))
    pairs = size // 10  # (its lines are longer: the results too within the size, about)
    parent = "root"
    for n in range(pairs):
        call = {"type": "toolCall", "id": f"t{n}", "name": "bash", "arguments": {"command": "ls"}}
        yield _line(_message(f"a{n}", parent, "assistant", [{"type": "text", "text": TEXT}, call]))
        parent = f"a{n}"
    parent = "root"
    for n in reversed(range(pairs)):  # the deepest call's result nearest the fork
        result = _message(f"r{n}", parent, "toolResult", [{"type": "text", "text": TEXT}])
        result["message"].update(toolCallId=f"t{n}", toolName="bash", isError=False)
        yield _line(result)
        parent = f"r{n}"


def shared_call_ids(size: int) -> Iterator[str]:
    """Tool calls that all have one id, their results on another branch: no result is below a call
    of its id (a hand-made file), so each is compared with the calls of that id."""
    yield _line(_message("root", None))
    pairs = size // 10
    parent = "root"
    for n in range(pairs):
        call = {"type": "toolCall", "id": "t", "name": "bash", "arguments": {"command": "ls"}}
        yield _line(_message(f"a{n}", parent, "assistant", [{"type": "text", "text": TEXT}, call]))
        parent = f"a{n}"
    parent = "root"
    for n in range(pairs):
        result = _message(f"r{n}", parent, "toolResult", [{"type": "text", "text": TEXT}])
        result["message"].update(toolCallId="t", toolName="bash", isError=False)
        yield _line(result)
        parent = f"r{n}"


def labels(size: int) -> Iterator[str]:
    """A session whose every other line labels its first entry."""
    lines = list(_chain(size // 2))
    yield from lines
    for n in range(size - len(lines)):
        yield _line(
            {
                "type": "label",
                "id": f"l{n}",
                "parentId": "e0000000",
                "timestamp": TIME,
                "targetId": "e0000000",
                "label": f"label {n} {TEXT}",
            }
        )


def branches(size: int) -> Iterator[str]:
    """Thousands of branches at one entry: every other entry starts one."""
    yield _line(_message("fork", None))
    for n in range(size - 1):
        yield _line(_message(f"b{n}", "fork" if n % 2 == 0 else f"b{n - 1}"))


def headers(size: int) -> Iterator[str]:
    """A header before every entry."""
    for line in _chain(size // 2):
        yield _line(HEADER)
        yield line


def glued(size: int) -> Iterator[str]:
    """Two entries on every line."""
    lines = iter(_chain(size))
    for first in lines:
        yield first + next(lines, "")


def glued_cut(size: int) -> Iterator[str]:
    """A cut-off line before every entry: a writer that died mid-line, then the next line written on."""
    lines = iter(_chain(size))
    for first in lines:
        yield first[: len(first) // 2] + next(lines, "")


def deep_cut(size: int) -> Iterator[str]:
    """Messages nested 3,000 deep in content blocks, each cut off among its closing brackets (a
    writer that died near the end of the line), the next line written on: each object nested in
    the cut-off part closes, and the search for the line's pieces tries each."""
    parent = None
    for n in range(size // 500):
        i = f"n{n:07d}"
        deep = '[{"type":"text","text":"x","c":' * 3000 + '"x"' + "}]" * 3000
        line = _line(_message(i, parent)).replace(json.dumps(TEXT), deep)
        yield line[:-20] + _line(_message(f"{i}-after", i))
        parent = f"{i}-after"


def long_line(size: int) -> Iterator[str]:
    """One message holding all of the file's size."""
    yield _line(HEADER)
    yield _line(_message("big", None, "user", "x" * (size * 220)))
    yield _line(_message("after", "big"))


CASES: dict[str, Callable[[int], Iterator[str]]] = {
    "dup": dup,
    "orphans": orphans,
    "deep": deep,
    "cycle": cycle,
    "far_results": far_results,
    "shared_call_ids": shared_call_ids,
    "labels": labels,
    "branches": branches,
    "headers": headers,
    "glued": glued,
    "glued_cut": glued_cut,
    "deep_cut": deep_cut,
    "long_line": long_line,
}


def write(path: Path, lines: Iterator[str], size_bytes: int) -> None:
    """``lines`` after a header, cut at ``size_bytes`` (the makers yield more than needed)."""
    written = 0
    with path.open("w") as f:
        first = next(lines)
        if '"type": "session"' not in first:
            f.write(_line(HEADER) + "\n")
        f.write(first + "\n")
        for line in lines:
            if written >= size_bytes:
                break
            f.write(line + "\n")
            written += len(line) + 1


# --- the paths ---------------------------------------------------------------------------------


def cli(path: Path) -> dict[str, float]:
    found = {}
    for command in (
        ["check", "--no-index", "--json"],
        ["tree", "--no-index"],
        ["context", "--no-index"],
        ["stats", "--no-index"],
        ["repair"],
    ):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pi_session_server", *command, str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            timeout=900,
        )
        found[command[0]] = time.perf_counter() - started
    return found


def sidecar(path: Path) -> dict[str, float]:
    from bench_sidecar import Pipe, timed_request, timed_whole_tree

    pipe = Pipe()
    try:
        pipe.request("pi/sessions", {})
        opened, info = timed_request(pipe, "pi/open", {"path": str(path)})
        tree, _ = timed_whole_tree(pipe, info["session"])
    finally:
        pipe.close()
    return {"pi/open": opened, "pi/getTree": tree}


def lsp(path: Path) -> dict[str, float]:
    from pi_session_server.analysis.diagnostics import diagnostics_of_lines, document_diagnostics
    from pi_session_server.analysis.document import SessionDocument
    from pi_session_server.analysis.hover import hover
    from pi_session_server.analysis.symbols import document_symbols

    found = {}
    gc.collect()
    started = time.perf_counter()
    doc = SessionDocument.from_file(str(path))
    problems = document_diagnostics(doc)
    found["diagnostics"] = time.perf_counter() - started
    started = time.perf_counter()
    document_symbols(doc)
    found["outline"] = time.perf_counter() - started
    started = time.perf_counter()
    for line in range(min(doc.line_count, 50)):
        hover(doc, line, 10)
    found["hover"] = time.perf_counter() - started
    started = time.perf_counter()
    first = problems[0].line if problems else 0
    diagnostics_of_lines(doc, first, first + 20)
    found["code actions"] = time.perf_counter() - started
    return found


PATHS = {"cli": cli, "sidecar": sidecar, "lsp": lsp}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=10)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args()
    size = int(args.size_mb * 1_000_000)
    entries = size // 200 + 1  # the makers' lines are about 200 bytes; write() cuts at the size
    with tempfile.TemporaryDirectory() as work:
        base = Path(work) / "clean.jsonl"
        write(base, clean(entries * 2), size)
        paths = [PATHS[p] for p in args.paths.split(",")]
        baseline = {k: v for run in paths for k, v in run(base).items()}
        print(f"undamaged {args.size_mb:g} MB: " + ", ".join(f"{k} {v:.2f}s" for k, v in baseline.items()))
        print(f"{'case':12} " + " ".join(f"{k:>13}" for k in baseline))
        for name in args.cases.split(","):
            path = Path(work) / f"{name}.jsonl"
            write(path, CASES[name](entries * 2), size)
            times = {k: v for run in paths for k, v in run(path).items()}
            print(f"{name:12} " + " ".join(f"{times[k] / baseline[k]:12.1f}x" for k in baseline), flush=True)
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
