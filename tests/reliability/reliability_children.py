"""What the forked child processes of the crash and concurrency tests do (see ``ForkedChild``).

Each function writes "ready" once it is set up, then one line per acknowledged write, and loops
until it is killed (or, for the bounded ones, until it has done ``count`` writes).
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import TextIO

from reliability_helpers import assistant_message

from pi_session_server.session import SessionManager


def library_appender(out: TextIO, path: str, seed: int, mode: str, count: int = -1) -> None:
    """Append through the library in a tight loop, printing each id the library returned.

    Mixes entry kinds. In "big" mode, after a few hundred small appends it prints "big" and appends
    lines of several MB from then on: a big write() is where a SIGKILL can leave half a line behind
    (the kernel stops a write between pages when a fatal signal is pending).
    """
    rng = random.Random(seed)
    manager = SessionManager.open(path)
    known = [e.id for e in manager.get_entries()][-50:]
    out.write("ready\n")
    big_from = rng.randint(20, 400) if mode == "big" else -1
    n = 0
    while n != count:
        n += 1
        if n == big_from:
            out.write("big\n")
        roll = rng.random() * 100
        if 0 < big_from <= n:
            text = "x" * rng.randint(1_000_000, 6_000_000)
            entry_id = manager.append_message({"role": "user", "content": text, "timestamp": n})
        elif roll < 40:
            entry_id = manager.append_message({"role": "user", "content": f"u{n} ünï\u2028", "timestamp": n})
        elif roll < 70:
            entry_id = manager.append_message(assistant_message(f"a{n}", n))
        elif roll < 80:
            entry_id = manager.append_custom_entry("probe", {"n": n, "nested": [[{"k": None}]]})
        elif roll < 88 and known:
            entry_id = manager.append_label_change(rng.choice(known), f"label {n}")
        elif roll < 94:
            entry_id = manager.append_model_change("prov", f"model-{n}")
        else:
            entry_id = manager.append_thinking_level_change(rng.choice(["off", "low", "high"]))
        known.append(entry_id)
        if len(known) > 200:
            del known[:100]
        out.write(entry_id + "\n")
    manager.close()


def foreign_entry_line(tag: str, n: int) -> bytes:
    value = {
        "type": "custom",
        "customType": "foreign",
        "id": f"{tag}{n:07d}"[-8:],
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "data": {"n": n},
    }
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def split_line_writer(out: TextIO, path: str, tag: str) -> None:
    """A careless foreign writer: each line in two write() calls with a pause between them."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    out.write("ready\n")
    n = 0
    while True:
        n += 1
        line = foreign_entry_line(tag, n)
        half = len(line) // 2
        os.write(fd, line[:half])
        time.sleep(0.01)
        os.write(fd, line[half:])
        out.write(line.decode())
        time.sleep(0.001)


def split_line_hammer(out: TextIO, path: str) -> None:
    """The careless writer without pauses: half lines land at the end of the file all the time."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    out.write("ready\n")
    n = 0
    while True:
        n += 1
        line = foreign_entry_line("h", n)
        os.write(fd, line[:40])
        os.write(fd, line[40:])


def plain_line_appender(out: TextIO, path: str, tag: str, count: int, pause: float) -> None:
    """A foreign writer appending whole lines with one O_APPEND write() each (no lock, like pi)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    out.write("ready\n")
    for n in range(count):
        line = foreign_entry_line(tag, n)
        os.write(fd, line)
        out.write(json.loads(line)["id"] + "\n")
        if pause:
            time.sleep(pause)
    os.close(fd)


def opener(out: TextIO, path: str) -> None:
    """Open a session file (a v1 file: the open migrates and rewrites it), then idle until killed."""
    out.write("ready\n")
    SessionManager.open(path).close()
    out.write("opened\n")
    while True:
        time.sleep(1)
