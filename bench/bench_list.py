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
* the same again after a line was appended to one big session (pi writing it: that file is read
  again, the others are not).
Ratios are pi's time / ours. Figures are kept in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

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
        timed_process(listing, again.env())  # the kept listing the runs "again" start from
        fns = [lambda: timed_process(listing, first.env()), lambda: timed_process(listing, again.env())]
        if module is not None:
            fns.append(lambda: timed_process(["node", str(script), module.as_uri(), str(directory)]))
        results = median_runs(fns, args.repeat)
        pi = results[2] if module is not None else None
        rows = [("first listing", results[0]), ("listed again", results[1])]
        if appended is not None:
            with open(appended, "a") as f:  # as pi appends, a while ago
                f.write(
                    json.dumps({"type": "custom", "customType": "bench", "id": "b0000000", "parentId": None})
                    + "\n"
                )
            settled = time.time() - 3600
            os.utime(appended, (settled, settled))
            rows.append(("after an append to the 100 MB session", timed_process(listing, again.env())))
        for what, run in rows:
            versus = f", pi / ours {pi['seconds'] / run['seconds']:.1f}x" if pi else ""
            print(f"{what}: {run['seconds']:.3f} s, {run['rss'] / 1e6:.0f} MB{versus}", flush=True)
        if pi:
            print(f"pi listAll: {pi['seconds']:.3f} s, {pi['rss'] / 1e6:.0f} MB", flush=True)
    finally:
        first.close()
        again.close()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
