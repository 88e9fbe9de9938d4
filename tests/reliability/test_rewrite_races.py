"""Rewrites racing other writers (issue 20, findings 1, 2 and 3): nothing anyone acknowledged is lost.

* Another program rewrites a session we hold, in place (``cat backup > FILE``; a writer that pauses
  after truncating): following the file must never write it (finding 1).
* ``pi-session repair --in-place`` while our appender waits for its lock (finding 2a) or pi, which
  takes no lock, appends (finding 2b).
* Two processes open (and so migrate) the same v1 file at once: two library processes, or the
  sidecar and pi itself (finding 3); migration ids are the same for every migration of a file.

Where pi writes, the reference ``SessionManager`` from the oracle copy runs (skipped without node).
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
from reliability_children import foreign_entry_line
from reliability_helpers import CHILDREN, HEADER, TS, USER, ForkedChild, check_session_file
from reliability_rpc import RawServer

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(300)


# -- helpers ---------------------------------------------------------------------------------------


def chain_session(path: Path, n: int, pad: int = 0) -> Path:
    """A valid session of ``n`` user messages in a chain (``pad`` characters of text in each)."""
    parts = [HEADER]
    parent = "null"
    for i in range(n):
        eid = f"{i:08x}"
        text = f"m{i} " + "x" * pad
        parts.append(
            f'{{"type":"message","id":"{eid}","parentId":{parent},"timestamp":"{TS}",'
            f'"message":{{"role":"user","content":"{text}","timestamp":{i}}}}}\n'.encode()
        )
        parent = f'"{eid}"'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(parts))
    return path


def entry_ids(path: str | Path) -> list[Any]:
    manager = SessionManager.open(str(path), read_only=True)
    try:
        return [e.id for e in manager.get_entries()]
    finally:
        manager.close()


class PiOnCue:
    """pi itself (``children/pi_on_cue.mjs``), doing what it is told when it is told."""

    def __init__(self, oracle_module: Path, path: str):
        self.process = subprocess.Popen(
            ["node", str(CHILDREN / "pi_on_cue.mjs"), str(oracle_module), path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.line() == "ready", self.stderr()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self._lines.put(raw.decode().rstrip("\n"))

    def line(self, timeout: float = 60) -> str:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"pi said nothing within {timeout} s: {self.stderr()}") from None

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return "(pi is still running)"
        return self.process.stderr.read().decode(errors="replace")

    def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        self.process.stdin.flush()

    def open(self) -> None:
        self.tell("open")
        assert self.line() == "opened", self.stderr()

    def append(self, count: int) -> list[str]:
        self.tell(f"append {count}")
        return [self.line() for _ in range(count)]

    def close(self) -> None:
        if self.process.poll() is None:
            self.tell("quit")
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def pi_on_cue(oracle_module: Path) -> Iterator[Any]:
    started: list[PiOnCue] = []

    def start(path: str) -> PiOnCue:
        pi = PiOnCue(oracle_module, path)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def library_on_cue(out: TextIO, path: str, cue: int, unused_end: int, migrate_first: bool) -> None:
    """A library process that appends one entry per "x" it reads from ``cue`` (and prints its id),
    until a "q". With ``migrate_first`` it opens the file only at the first "x" (a v1 file is
    migrated then)."""
    os.close(unused_end)
    manager = None if migrate_first else SessionManager.open(path)
    if manager is not None:
        out.write(manager.append_message(USER) + "\n")  # the appender now holds the file open
    out.write("ready\n")
    with os.fdopen(cue, "rb", buffering=0) as cues:
        while cues.read(1) == b"x":
            if manager is None:
                manager = SessionManager.open(path)
            out.write(manager.append_message(USER) + "\n")


class LibraryOnCue:
    def __init__(self, path: str, *, migrate_first: bool = False):
        self._read_end, self._write_end = os.pipe()
        self.child = ForkedChild(library_on_cue, path, self._read_end, self._write_end, migrate_first)
        os.close(self._read_end)
        assert self.child.output.wait_ready(), "the library child did not start"

    def cue(self, count: int = 1) -> None:
        os.write(self._write_end, b"x" * count)

    def wait_for(self, count: int, timeout: float = 60) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.child.output.lines) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.child.output.lines)

    def stop(self) -> list[str]:
        os.write(self._write_end, b"q")  # (other children hold copies of the pipe: no end of file)
        os.close(self._write_end)
        lines = self.child.output.finish(timeout=60)
        self.child.kill()
        return lines


def _locked_while_running(path: str, process: subprocess.Popen[str], timeout: float = 60) -> bool:
    """Until ``process`` holds the file's flock (a repair about to replace it); False when it ended
    first (on a loaded machine it can take, use and let go of the lock between two looks)."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # (releases the lock when we got it)
        time.sleep(0.0005)
    return False


def repair_seen_holding_the_lock(path: str, glued: Iterator[int], attempts: int = 5) -> subprocess.Popen[str]:
    """Glue two lines, start ``repair --in-place`` and return once it holds the file's lock. A repair
    that came and went unseen (it succeeded) is followed by another, on two new glued lines."""
    for _ in range(attempts):
        glue_two_lines(path, next(glued))
        repair = start_repair(path)
        if _locked_while_running(path, repair):
            return repair
        out, err = repair.communicate(timeout=120)
        assert repair.returncode == 0, out + err
    raise AssertionError(f"the repair was never seen holding the file's lock ({attempts} repairs)")


def glue_two_lines(path: str, n: int) -> None:
    """Append two entries on one line (pi's crash leftovers look like this): a repair to make."""
    first, second = foreign_entry_line("g", 2 * n), foreign_entry_line("g", 2 * n + 1)
    with open(path, "ab") as f:
        f.write(first[:-1] + second)


def start_repair(path: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "repair", "--in-place", "--no-backup", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- finding 1: a held session rewritten in place --------------------------------------------------

# open with truncation, pause until a line comes on stdin (the test says when), then write
PAUSING_REWRITE = 'exec 3>"$0"; read go; cat "$1" >&3'


def pausing_rewrite(path: str, backup: Path) -> subprocess.Popen[bytes]:
    """``cat backup > path`` paused after the truncation, until :func:`end_pause`."""
    writer = subprocess.Popen(["sh", "-c", PAUSING_REWRITE, path, str(backup)], stdin=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while os.stat(path).st_size:  # until the shell opened it (truncated)
        assert writer.poll() is None and time.monotonic() < deadline, "the rewrite never truncated the file"
        time.sleep(0.01)
    return writer


def end_pause(writer: subprocess.Popen[bytes]) -> None:
    writer.communicate(b"go\n", timeout=60)
    assert writer.returncode == 0


def _held_session_and_backup(tmp_path: Path) -> tuple[str, Path, list[Any]]:
    path = chain_session(tmp_path / "sessions" / "s.jsonl", 220)
    backup = tmp_path / "backup.jsonl"
    chain_session(backup, 200)  # the user goes back to an earlier copy of the session
    return str(path), backup, entry_ids(backup)


def test_a_held_session_rewritten_in_place_with_a_pause_is_never_written(tmp_path: Path):
    path, backup, backup_ids = _held_session_and_backup(tmp_path)
    manager = SessionManager.open(path)
    inode = os.stat(path).st_ino
    writer = pausing_rewrite(path, backup)
    # follow the file as the server's watcher does: looks in the pause, then after it
    kinds = [manager.refresh_from_disk().kind for _ in range(3)]
    end_pause(writer)
    assert Path(path).read_bytes() == backup.read_bytes(), "the session was written while it was rewritten"
    assert os.stat(path).st_ino == inode, "the session file was replaced while it was rewritten"
    kinds.append(manager.refresh_from_disk().kind)
    assert "rewriting" in kinds and "reloaded" in kinds, kinds
    assert [e.id for e in manager.get_entries()] == backup_ids
    manager.close()


def test_shell_redirects_over_a_held_session_lose_nothing(tmp_path: Path):
    """``cat A > FILE`` again and again while the session is followed: every time the file holds
    exactly what was written, and the library's view ends equal to it."""
    path, backup, _ = _held_session_and_backup(tmp_path)
    other = chain_session(tmp_path / "other.jsonl", 150)
    manager = SessionManager.open(path)
    stop = threading.Event()
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            while not stop.is_set():
                manager.refresh_from_disk()
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    follower = threading.Thread(target=follow)
    follower.start()
    try:
        for n in range(40):
            source = backup if n % 2 else other
            subprocess.run(f'cat "{source}" > "{path}"', shell=True, check=True)
            assert Path(path).read_bytes() == source.read_bytes(), f"redirect {n} lost the file's content"
    finally:
        stop.set()
        follower.join()
    assert not errors, errors
    manager.refresh_from_disk()
    assert [e.id for e in manager.get_entries()] == entry_ids(path)
    manager.close()


def test_the_server_never_writes_a_session_rewritten_in_place(tmp_path: Path, server: RawServer):
    path, backup, backup_ids = _held_session_and_backup(tmp_path)
    handle = server.call("pi/open", {"path": path})["session"]
    inode = os.stat(path).st_ino
    writer = pausing_rewrite(path, backup)
    server.wait_notification("pi/didChange", lambda p: p["kind"] == "rewriting")  # the watcher looked
    end_pause(writer)
    deadline = time.monotonic() + 10
    while True:  # (a look may have caught the rewrite half written: the rest is appended then)
        ids = [e["id"] for e in server.call("pi/getEntries", {"session": handle})["entries"]]
        if ids == backup_ids or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert Path(path).read_bytes() == backup.read_bytes(), (
        "the server wrote the session while it was rewritten"
    )
    assert os.stat(path).st_ino == inode
    assert ids == backup_ids


@pytest.mark.xfail(strict=True, reason="a known limitation: see CHANGELOG.md, Known limitations")
def test_an_entry_appended_while_another_program_rewrites_the_file_in_place_survives(tmp_path: Path):
    """A program that rewrites the file through one descriptor (pi migrating it, an editor saving)
    writes at its own offset: an entry appended between two of its writes is written over."""
    path, backup, _ = _held_session_and_backup(tmp_path)
    manager = SessionManager.open(path)
    half = len(backup.read_bytes()) // 2
    # the writer says when its first half is written, and writes the rest when told
    script = 'exec 3>"$0"; head -c "$2" "$1" >&3; echo half; read go; tail -c +"$(($2 + 1))" "$1" >&3'
    writer = subprocess.Popen(
        ["sh", "-c", script, path, str(backup), str(half)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline() == b"half\n"
    manager.refresh_from_disk()
    mine = manager.append_message(USER)
    writer.stdin.write(b"go\n")
    writer.stdin.close()
    assert writer.wait(60) == 0
    manager.close()
    assert mine in entry_ids(path)


# -- finding 2: repair --in-place against appenders ------------------------------------------------


def test_repair_in_place_keeps_an_append_that_waited_for_its_lock(tmp_path: Path):
    """Our appender is cued while the repair holds the lock: it waits, and its entry must land in
    the repaired file, not in the file the repair replaced."""
    path = str(chain_session(tmp_path / "s.jsonl", 4000, pad=1000))
    appender = LibraryOnCue(path)
    try:
        glued = itertools.count()
        for n in range(3):
            repair = repair_seen_holding_the_lock(path, glued)
            appender.cue()
            out, err = repair.communicate(timeout=120)
            assert repair.returncode == 0, out + err
            acknowledged = appender.wait_for(2 + n)
            check_session_file(path, acknowledged)
    finally:
        acknowledged = appender.stop()
    check_session_file(path, acknowledged)


@pytest.mark.slow
def test_repair_in_place_keeps_what_pi_appends_meanwhile(tmp_path: Path, pi_on_cue: Any):
    """pi takes no lock: its appends land in the file at any moment of the repair (here: from the
    moment the repair holds the lock, at delays spread over its writing, fsync and rename). Each is
    kept, and the repair still succeeds."""
    path = str(chain_session(tmp_path / "s.jsonl", 4000, pad=1000))
    pi = pi_on_cue(path)
    outcomes = []
    glued = itertools.count()
    for delay in (0, 0.002, 0.005, 0.008, 0.012, 0.016, 0.02, 0.03):
        repair = repair_seen_holding_the_lock(path, glued)
        time.sleep(delay)
        acknowledged = pi.append(1)
        out, err = repair.communicate(timeout=120)
        outcomes.append((repair.returncode, out + err, acknowledged[0]))
    on_disk = set(entry_ids(path))
    lost = [(delay_round, ack) for delay_round, (_, _, ack) in enumerate(outcomes) if ack not in on_disk]
    assert not lost, f"pi's acknowledged appends lost by repairs (round, id): {lost}"
    check_session_file(path, [ack for _, _, ack in outcomes])
    assert [code for code, _, _ in outcomes] == [0] * len(outcomes), outcomes


class LineWriterOnCue:
    """Another program writing one big line through one descriptor, in two halves on cue: the file
    as a look catches it in the middle of its ``write()`` (a big line grows the file page by page)."""

    _SCRIPT = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        "line = sys.stdin.buffer.readline()\n"
        "half = len(line) // 2\n"
        "os.write(fd, line[:half]); print('half', flush=True)\n"
        "sys.stdin.readline()\n"
        "os.write(fd, line[half:]); print('done', flush=True)\n"
    )

    def __init__(self, path: str, line: bytes) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", self._SCRIPT, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._say(line)

    def _say(self, data: bytes) -> None:
        assert self.process.stdin is not None
        os.write(self.process.stdin.fileno(), data)  # (a blocking write to a pipe writes it whole)

    def _heard(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().decode().strip()

    def first_half(self) -> None:
        assert self._heard() == "half"

    def rest(self) -> None:
        self._say(b"go\n")
        assert self._heard() == "done"

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _glued_session(path: Path) -> str:
    """A session with two lines glued together (a repair to make), its entries after the header."""
    chain_session(path, 3)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], lines[2].rstrip(b"\n"), *lines[3:]]))
    return str(path)


@pytest.mark.parametrize("rest_lands", ["before_the_rename", "after_the_rename"])
def test_repair_in_place_keeps_a_line_caught_halfway_through_its_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rest_lands: str
) -> None:
    """The repair's look before its rename found another program's line half written: it copied
    that half and waited for the rest, then refused all the same ("had its unfinished last line
    continued"), or, when the rest reached the replaced file after the rename, put that file back
    and refused. The rest now follows the half in the repaired file, and the repair is made."""
    from pi_session_server.analysis import autofix
    from pi_session_server.session.rewrites import LockedFile

    path = _glued_session(tmp_path / "s.jsonl")
    line = foreign_entry_line("w", 1).replace(b'"n":1', b'"n":1,"pad":"' + b"p" * 20000 + b'"')
    writer = LineWriterOnCue(path, line)
    looks = [writer.first_half, writer.rest] if rest_lands == "before_the_rename" else [writer.first_half]
    look, after_rename = LockedFile._appended_since, LockedFile._after_rename

    def cued_look(self: LockedFile, *args: Any, **kwargs: Any) -> Any:
        if looks:
            looks.pop(0)()
        return look(self, *args, **kwargs)

    def cued_after_rename(self: LockedFile, *args: Any, **kwargs: Any) -> Any:
        if rest_lands == "after_the_rename":
            writer.rest()  # through its descriptor: into the file the rename replaced
        return after_rename(self, *args, **kwargs)

    monkeypatch.setattr(LockedFile, "_appended_since", cued_look)
    monkeypatch.setattr(LockedFile, "_after_rename", cued_after_rename)
    try:
        done = autofix.repair_file(path, autofix.SAFE_CODES)
    finally:
        writer.close()
    assert (done.repairs, done.kept) == (1, len(line))
    data = Path(path).read_bytes()
    assert data.endswith(b"\n" + line) and data.count(b"\n") == 5  # header, 3 entries, the line
    check_session_file(path, ["00000000", "00000001", "00000002", "w0000001"])


# A program that rewrites the file in place and sets its times back (``rsync --inplace -t``): the
# file keeps its size, its last bytes and its mtime, so only its change time tells.
_REWRITE_KEEPING_TIMES = (
    "import os, sys\n"
    "path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()\n"
    "st = os.stat(path)\n"
    "with open(path, 'r+b') as f:\n"
    "    data = f.read()\n"
    "    assert len(old) == len(new) and data.count(old) == 1\n"
    "    f.seek(data.index(old)); f.write(new)\n"
    "os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))\n"
)


def _rewrite_keeping_times_at_the_look_before_the_rename(
    monkeypatch: pytest.MonkeyPatch, path: str
) -> list[bool]:
    """Cue the program above at the rewrite's first look before its rename ("m0 " becomes "M0 ")."""
    from pi_session_server.session.rewrites import LockedFile

    look = LockedFile._appended_since
    cued: list[bool] = []

    def cued_look(self: LockedFile, *args: Any, **kwargs: Any) -> Any:
        if not cued:
            cued.append(True)
            subprocess.run([sys.executable, "-c", _REWRITE_KEEPING_TIMES, path, "m0 ", "M0 "], check=True)
        return look(self, *args, **kwargs)

    monkeypatch.setattr(LockedFile, "_appended_since", cued_look)
    return cued


def _kept_the_rewrite(path: str, before: os.stat_result) -> None:
    after = Path(path).stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert b'"content":"M0 "' in Path(path).read_bytes()  # the other program's change, kept


def test_repair_in_place_refuses_a_file_rewritten_in_place_with_its_times_set_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the repair's read and its rename another program rewrites the file in place, keeping
    its size, its last bytes and its mtime: the repair is refused and that program's change kept
    (the rename would have put the repair of the old bytes over it)."""
    from pi_session_server.analysis import autofix
    from pi_session_server.errors import StaleFileError

    path = _glued_session(tmp_path / "s.jsonl")
    before = Path(path).stat()
    cued = _rewrite_keeping_times_at_the_look_before_the_rename(monkeypatch, path)
    with pytest.raises(StaleFileError, match="rewritten in place"):
        autofix.repair_file(path, autofix.SAFE_CODES)
    assert cued
    _kept_the_rewrite(path, before)


def test_a_repair_keeping_a_backup_refuses_a_file_rewritten_in_place_with_its_times_set_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with a backup (``repair --in-place``'s default), whose link moves the file's change
    time itself: the rewrite after it is still seen, and the backup goes with the refused repair."""
    from pi_session_server.errors import StaleFileError
    from pi_session_server.session.rewrites import FileState, replace_in_place

    path = _glued_session(tmp_path / "s.jsonl")
    before = Path(path).stat()
    fd = os.open(path, os.O_RDONLY)
    try:
        read = FileState.of(fd)
        repaired = os.pread(fd, read.size, 0).replace(b"}{", b"}\n{")
    finally:
        os.close(fd)
    cued = _rewrite_keeping_times_at_the_look_before_the_rename(monkeypatch, path)
    with pytest.raises(StaleFileError, match="rewritten in place"):
        replace_in_place(path, read, [repaired], backup=True)
    assert cued and not os.path.exists(path + ".bak")
    _kept_the_rewrite(path, before)


# -- finding 3: concurrent migrations ---------------------------------------------------------------

V1_HEADER = {"type": "session", "id": "v1-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def v1_session(path: Path, n: int = 30) -> str:
    """A version 1 session (no ids nor parents): its migration is made a line at a time, holding
    the ids drawn, then the file written is read back."""
    lines = [V1_HEADER]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(
            {
                "type": "message",
                "timestamp": TS,
                "message": {"role": role, "content": f"v1 {i}", "timestamp": i},
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return str(path)


def v2_session(path: Path, n: int = 30) -> str:
    """A version 2 session (ids and parents; hooks' messages as ``hookMessage``): its migration is
    made a line at a time, then the file written is read back."""
    lines: list[dict[str, Any]] = [{**V1_HEADER, "id": "v2-session", "version": 2}]
    for i in range(n):
        role = "user" if i % 3 == 0 else "hookMessage" if i % 3 == 1 else "assistant"
        message = {"role": role, "content": f"v2 {i}", "timestamp": i}
        if role == "hookMessage":
            message.update(customType="hook", display=True)
        parent = f"m{i - 1}" if i else None
        lines.append(
            {"type": "message", "id": f"m{i}", "parentId": parent, "timestamp": TS, "message": message}
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return str(path)


def _parents_all_exist(path: str) -> None:
    manager = SessionManager.open(path, read_only=True)
    try:
        dangling = [
            e.id
            for e in manager.get_entries()
            if e.parent_id is not None and manager.get_entry(e.parent_id) is ABSENT
        ]
    finally:
        manager.close()
    assert not dangling, f"entries whose parent is not in the file: {dangling}"


@pytest.mark.parametrize("old_session", [v1_session, v2_session], ids=["v1", "v2"])
def test_two_library_processes_migrating_one_file_keep_every_entry(tmp_path: Path, old_session: Any):
    for round_number in range(8):
        path = old_session(tmp_path / f"round{round_number}" / "s.jsonl")
        children = [LibraryOnCue(path, migrate_first=True) for _ in range(2)]
        for child in children:
            child.cue(5)  # both open (and migrate) the file at once, then append 5 entries
        acknowledged = [ack for child in children for ack in child.wait_for(5)]
        for child in children:
            child.stop()
        assert len(acknowledged) == 10, acknowledged
        check_session_file(path, acknowledged)
        _parents_all_exist(path)


@pytest.mark.slow
@pytest.mark.parametrize("old_session", [v1_session, v2_session], ids=["v1", "v2"])
def test_the_sidecar_and_pi_migrating_one_file_keep_every_entry(
    tmp_path: Path, server: RawServer, pi_on_cue: Any, old_session: Any
):
    """pi/open against pi's own open (which migrates the file in place) and 5 appends, sent at the
    same moment; then 5 pi/append while pi appends. No entry of either side is lost.

    The sidecar appends once pi's open is done: pi rewrites the file in place, and lines written
    into it while pi is doing so are written over by pi (CHANGELOG.md, Known limitations)."""
    for round_number in range(6):
        path = old_session(tmp_path / f"round{round_number}" / "s.jsonl", 3000)
        pi = pi_on_cue(path)
        request = server.send_request("pi/open", {"path": path})
        pi.tell("open")
        pi.tell("append 5")
        reply = server.wait_reply(request)
        assert "result" in reply, reply
        handle = reply["result"]["session"]
        assert pi.line() == "opened", pi.stderr()
        ours = [
            server.call("pi/append", {"session": handle, "kind": "message", "message": USER})["id"]
            for _ in range(5)
        ]
        theirs = [pi.line() for _ in range(5)]
        pi.close()
        server.call("pi/close", {"session": handle})
        check_session_file(path, [*ours, *theirs])
        _parents_all_exist(path)


def test_every_migration_of_a_file_gives_the_same_ids(tmp_path: Path):
    """A read-only view of a v1 file shows the ids a migration gives it; two migrations agree."""
    path = v1_session(tmp_path / "a" / "s.jsonl")
    copy = tmp_path / "b" / "s.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    viewed = entry_ids(path)
    SessionManager.open(path).close()  # migrates and rewrites
    SessionManager.open(str(copy)).close()
    assert entry_ids(path) == viewed == entry_ids(copy)
    assert len(set(viewed)) == len(viewed) == 30
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in viewed)
