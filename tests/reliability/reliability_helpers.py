"""Checks shared by the reliability tests: what a session file must look like after any accident."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import builders
from builders import user_message

from pi_session_server.analysis import SessionDocument, document_diagnostics
from pi_session_server.format.jsjson import parse_bytes
from pi_session_server.session import SessionManager

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
CHILDREN = HERE / "children"

USER = user_message("hello", 1)

# The start of an entry as pi and we write it (type, id, parentId first). A bare b'{"type":' would
# also match content blocks ({"type":"text",...}): a line cut by a kill right after its first
# content block began then looked like two entries glued together.
ENTRY_START = re.compile(rb'\{"type":"[A-Za-z_]+","id":(?:"[^"]*"|null|[0-9.eE+-]+),"parentId":')


def sha256_tree(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or link target) of every file under ``root``."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = "-> " + os.readlink(full)
            else:
                out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
        for name in dirnames:
            full = Path(dirpath) / name
            if full.is_symlink():
                out[str(full.relative_to(root)) + "/"] = "-> " + os.readlink(full)
    return out


def assistant_message(text: str = "hi", timestamp: int = 2) -> dict[str, Any]:
    """A complete assistant message (no field diagnostics), so broken lines are the only problems."""
    return builders.assistant_message(text, timestamp, provider="p", model="m")


ASSISTANT = assistant_message()


# -- generated files -------------------------------------------------------------------------

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
TS = "2026-01-01T00:00:00.000Z"
ASSISTANT_BODY = (
    '{"role":"assistant","content":[{"type":"text","text":"a"}],"api":"anthropic-messages","provider":"p",'
    '"model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},'
    '"stopReason":"stop","timestamp":2}'
)


def chain_file(path: Path, n: int) -> Path:
    """A linear conversation of ``n`` entries (alternating user and assistant)."""
    parts = [HEADER]
    parent = "null"
    for i in range(n):
        eid = f"{i:08x}"
        body = f'{{"role":"user","content":"m{i}","timestamp":{i}}}' if i % 2 == 0 else ASSISTANT_BODY
        parts.append(
            f'{{"type":"message","id":"{eid}","parentId":{parent},"timestamp":"{TS}","message":{body}}}\n'.encode()
        )
        parent = f'"{eid}"'
    path.write_bytes(b"".join(parts))
    return path


def new_session_file(directory: Path | str, cwd: str = "/project") -> str:
    """A persisted session on disk (header, user, assistant): appends now go straight to the file."""
    manager = SessionManager.create(cwd, str(directory))
    manager.append_message(USER)
    manager.append_message(ASSISTANT)
    manager.close()
    return str(manager.get_session_file())


class LineCollector:
    """Reads a child's output line by line on a thread (so the pipe never fills up).

    "ready" and "big" lines are announcements; every other line is collected (an acknowledged id).
    """

    def __init__(self, stream: Any):
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.big = threading.Event()  # the child announced a big write
        self._stream = stream
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for raw in self._stream:
                text = raw.decode("utf-8", "replace").rstrip("\n")
                if text == "ready":
                    self._ready.set()
                elif text == "big":
                    self.big.set()
                else:
                    self.lines.append(text)
        finally:
            self._ready.set()
            self.big.set()

    def wait_ready(self, timeout: float = 60.0) -> bool:
        return self._ready.wait(timeout)

    def finish(self, timeout: float = 30.0) -> list[str]:
        self._thread.join(timeout)
        self._stream.close()
        return self.lines


class ForkedChild:
    """A child forked from the test process (the library is already imported: no start-up cost).

    ``target(out, *args)`` runs in the child and writes lines to ``out`` (flushed per line); the
    child never returns normally (it is killed, or exits with status 1 on an exception).
    """

    def __init__(self, target: Callable[..., None], *args: Any):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            status = 1
            try:
                os.close(read_end)
                with os.fdopen(write_end, "w", buffering=1, encoding="utf-8") as out:
                    target(out, *args)
                status = 0
            except BaseException:  # noqa: BLE001 - the forked child prints whatever ended it, then exits
                traceback.print_exc()
            finally:
                os._exit(status)
        os.close(write_end)
        self.pid = pid
        self.output = LineCollector(os.fdopen(read_end, "rb"))
        self.status: int | None = None

    def kill(self) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, self.status = os.waitpid(self.pid, 0)

    @property
    def was_killed(self) -> bool:
        return (
            self.status is not None
            and os.WIFSIGNALED(self.status)
            and os.WTERMSIG(self.status) == signal.SIGKILL
        )


@dataclass
class Integrity:
    """What a file looked like when checked."""

    entries: int = 0
    lines: int = 0
    bad_lines: list[int] = field(default_factory=list)  # 0-based physical lines that are not entries
    partial_tail: bool = False  # the file ends mid-line


def _json_object(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except RecursionError:  # deeper than the stdlib parser goes
        try:
            value = parse_bytes(line)
        except ValueError:
            return None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def check_session_file(path: str, acknowledged: set[str] | list[str] | tuple[str, ...] = ()) -> Integrity:
    """Assert the invariants that must hold after any crash or concurrent write.

    * the file opens (read-only: checking must not repair anything);
    * every acknowledged id is an entry, on the physical line that holds it (``Entry.line``);
    * every line that is not a JSON object is reported by the loader (``manager.problems``) and by the
      diagnostics, on that line; it holds at most one entry start (no line glued onto another);
    * a partial last line is reported as truncated (PI002) or as missing its newline (PI005); one
      of spaces only (a separator of ours blanked out after the line another writer finished at
      the end of the file, see storage.repair_trailing_newline) as a blank line (PI004).
    """
    data = Path(path).read_bytes()
    raw_lines = data.split(b"\n")
    report = Integrity(lines=len(raw_lines))
    manager = SessionManager.open(path, read_only=True)
    try:
        entries = manager.get_entries()
        report.entries = len(entries)
        by_id = {str(e.id): e for e in entries}
        missing = [i for i in acknowledged if i not in by_id]
        assert not missing, f"{len(missing)} acknowledged entries lost, e.g. {missing[:5]}"
        id_line: dict[str, int] = {}
        for number, line in enumerate(raw_lines):
            value = _json_object(line)
            if value is None:
                if line.strip():
                    report.bad_lines.append(number)
                continue
            if isinstance(value.get("id"), str) and value.get("type") != "session":
                id_line[value["id"]] = number
        for entry_id in acknowledged:
            assert by_id[entry_id].line == id_line[entry_id], (
                f"entry {entry_id} is on line {id_line[entry_id]} but the library says {by_id[entry_id].line}"
            )
        problem_lines = {p.line for p in manager.problems}
        for number in report.bad_lines:
            assert number in problem_lines, f"line {number} is not an entry and the loader did not report it"
            starts = len(ENTRY_START.findall(raw_lines[number]))
            assert starts <= 1, (
                f"line {number} holds {starts} entries glued together: {raw_lines[number][:200]!r}"
            )
        report.partial_tail = raw_lines[-1] != b""
    finally:
        manager.close()
    diagnostics = document_diagnostics(SessionDocument(data))
    diagnosed = {d.line for d in diagnostics if d.severity.name == "ERROR" or d.code in ("PI002", "PI005")}
    for number in report.bad_lines:
        assert number in diagnosed, f"line {number} is broken but has no error diagnostic"
    if report.partial_tail:
        last = len(raw_lines) - 1
        codes = {d.code for d in diagnostics if d.line == last}
        expected = {"PI004"} if not raw_lines[-1].strip(b" ") else {"PI002", "PI005"}
        assert codes & expected, f"the partial last line {last} is not diagnosed: {codes}"
    return report


class Bounded:
    """The outcome of :func:`run_bounded`."""

    def __init__(self, finished: bool, error: str, seconds: float):
        self.finished = finished
        self.error = error  # the child's traceback, "" if it succeeded
        self.seconds = seconds

    @property
    def ok(self) -> bool:
        return self.finished and not self.error


# how many times its CPU bound a bounded child may take on the clock (a hang that waits burns no CPU)
_WALL_PER_CPU_SECOND = 4


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) the process ``pid`` used so far; 0 once it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    # after the command's name: state is field 3, utime and stime fields 14 and 15 (man 5 proc)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_bounded(seconds: float, target: Callable[..., Any], *args: Any) -> Bounded:
    """Run ``target(*args)`` in a forked child; kill it once it used ``seconds`` of CPU, or took
    :data:`_WALL_PER_CPU_SECOND` times that on the clock (a hang is then reported as such instead
    of eating the whole test timeout). CPU time, not the clock: a loaded machine gives the child a
    share of a core, which stretches its work on the clock but not its CPU. The child's exception
    comes back as text."""
    import select
    import time

    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(read_end)
            sys.settrace(None)  # no coverage or hypothesis tracer in the child: only the work
            threading.settrace(None)  # type: ignore[arg-type]
            target(*args)
        except BaseException:  # noqa: BLE001 - the forked child reports whatever ended it to the parent
            status = 1
            text = traceback.format_exc()
            if len(text) > 12000:  # deep recursions: keep where it started and where it ended
                text = text[:5000] + "\n[...]\n" + text[-6000:]
            with contextlib.suppress(OSError):
                os.write(write_end, text.encode())
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    try:
        deadline = started + seconds * _WALL_PER_CPU_SECOND
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or _cpu_seconds(pid) > seconds:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Bounded(False, "", time.monotonic() - started)
            ready, _, _ = select.select([read_end], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(read_end, 65536)
                if chunk:
                    chunks.append(chunk)
                    continue
                _, status = os.waitpid(pid, 0)
                error = b"".join(chunks).decode(errors="replace")
                if not error and status != 0:
                    error = f"child exited with status {status}"
                return Bounded(True, error, time.monotonic() - started)
    finally:
        os.close(read_end)
