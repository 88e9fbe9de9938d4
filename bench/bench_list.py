"""Listing a directory of sessions, as whole processes, against pi in the same run.

    python bench/bench_list.py [--sessions DIR] [--small 200] [--repeat 3] [--oracle DIR]

What a user waits for when a picker of sessions opens (``pi --resume``, the editors' Open Session)
or runs ``pi-session list DIR``: every session file in the directory read to count its messages and
find its name, dates and first message. The directory holds ``--small`` sessions of about 200 KB
(bench/gen_session.py) and links to the big sessions of ``--sessions`` (by default the ones the
other benchmarks made: 100 MB, 315 MB with images, 2 GB of text, if present). Timed, each in fresh
processes, medians of ``--repeat`` runs made in turn:

* pi's ``SessionManager.listAll(DIR)`` (node, the reference from an oracle checkout);
* ``pi-session list DIR`` with an empty index directory (a first listing) and again with the one
  the first listing wrote (the big files unchanged: what a picker opened a second time pays);
* the same again after pi appended to the 100 MB session (that file is read on from where it
  ended, the others not at all): a line, and many turns, each a while before the listing (its
  state read on to is kept), and a line just before it (a file changed in the last seconds: read
  on, nothing kept).
Each row gives wall seconds and CPU seconds (the process's and its children's, user and system).
Ratios are pi's time / ours. Figures are kept in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the session builders of the tests (tests/builders.py)

import builders as S  # noqa: E402
from bench_user import Side, add_run_arguments, median_runs, ours, timed_process, work_and_reference  # noqa: E402
from gen_session import generate  # noqa: E402

LIST_ALL = textwrap.dedent(
    """
    const mod = await import(process.argv[2]);
    const infos = await mod.SessionManager.listAll(process.argv[3]);
    process.stdout.write(JSON.stringify(infos.map((i) => [i.path, i.messageCount])) + "\\n");
    """
)
BIG = ("session-100mb.jsonl", "session-300mb-images.jsonl", "session-2gb-text.jsonl")
MANY_TURNS = 500
SETTLE_SECONDS = 2.1  # cache_dir.RACY_NS and a little: what is read of the file is then kept


def timed(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """``timed_process`` with the CPU seconds of the process and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = timed_process(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return run


def append(path: Path, lines: list[str], *, settle: bool) -> None:
    """Append ``lines`` to ``path`` as pi does; ``settle``: then wait until the file has not changed
    for a while, as a session appended to a while before the listing (its times cannot be set
    back: the ctime stays)."""
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))
    if settle:
        time.sleep(SETTLE_SECONDS)


def make_directory(work: Path, sessions: Path, small: int) -> tuple[Path, Path | None]:
    """A directory of ``small`` generated sessions, links to the big ones and a copy of the 100 MB
    one (the shared sessions are never written); the copy, to append to."""
    directory = Path(tempfile.mkdtemp(prefix="pi-bench-list-", dir=work))
    settled = time.time() - 3600  # not a session pi is writing now
    for n in range(small):
        path = generate(directory / f"small-{n:04d}.jsonl", 0.2, seed=n)
        os.utime(path, (settled, settled))
    copy = None
    for name in BIG:
        source = sessions / name
        if not source.exists():
            continue
        if copy is None:
            copy = directory / name
            shutil.copyfile(source, copy)
            os.utime(copy, (settled, settled))
        else:
            os.symlink(source, directory / name)
    return directory, copy


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", default="/var/tmp/pi-session-bench", help="where the big sessions are")
    parser.add_argument("--small", type=int, default=200, help="generated sessions of about 200 KB")
    add_run_arguments(parser)
    args = parser.parse_args()
    work, module = work_and_reference(args)
    directory, appended = make_directory(work, Path(args.sessions), args.small)
    script = Path(tempfile.gettempdir()) / "pi-bench-list-reference.mjs"
    script.write_text(LIST_ALL)
    first, again = Side(work, reopen=False), Side(work, reopen=True)
    try:
        size = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
        print(f"{len(list(directory.iterdir()))} sessions, {size:,.0f} MB in {directory}", flush=True)
        listing = ours("list", str(directory))
        timed(listing, again.env())  # the kept listing the runs "again" start from
        fns = [lambda: timed(listing, first.env()), lambda: timed(listing, again.env())]
        if module is not None:
            fns.append(lambda: timed(["node", str(script), module.as_uri(), str(directory)]))
        results = median_runs(fns, args.repeat)
        pi = results[2] if module is not None else None
        rows = [("first listing", results[0]), ("listed again", results[1])]
        if appended is not None:
            turns = S.chat(MANY_TURNS)[1:]
            line = json.dumps({"type": "custom", "customType": "bench", "id": "b0000000", "parentId": None})

            def after(lines: list[str], settle: bool) -> dict:
                append(appended, lines, settle=settle)
                return timed(listing, again.env())

            grown = median_runs(
                [
                    lambda: after([line], True),
                    lambda: after(turns, True),
                    lambda: after([line], False),
                ],
                args.repeat,
            )
            added = len("".join(t + "\n" for t in turns).encode()) / 1e6
            rows.append(("again after a line appended to the 100 MB session", grown[0]))
            rows.append((f"again after {MANY_TURNS} turns ({added:.1f} MB) appended to it", grown[1]))
            rows.append(("again just after a line appended to it (changed in the last 2 s)", grown[2]))
        for what, run in rows:
            versus = f", pi / ours {pi['seconds'] / run['seconds']:.1f}x" if pi else ""
            print(
                f"{what}: {run['seconds']:.3f} s, {run['cpu']:.3f} s CPU, {run['rss'] / 1e6:.0f} MB{versus}",
                flush=True,
            )
        if pi:
            print(
                f"pi listAll: {pi['seconds']:.3f} s, {pi['cpu']:.3f} s CPU, {pi['rss'] / 1e6:.0f} MB",
                flush=True,
            )
    finally:
        first.close()
        again.close()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
