"""``pi-session repair``: the editor's repairs from a terminal, as a real process. Nothing is written
unless asked; what is written is the original with exactly the repairs' splices; a file that
changes meanwhile is left alone."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import builders as S
import pytest

from pi_session_server.analysis import autofix
from pi_session_server.analysis.autofix import plan_repairs, spliced
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.repairs import Found, repairs
from pi_session_server.commands import repair as repair_command
from pi_session_server.errors import StaleFileError
from pi_session_server.session.rewrites import FileState, replace_in_place

HEADER = S.header()
A = S.user("aaaa0001", None, "first")
B = S.assistant("bbbb0002", "aaaa0001", "second")
C = S.user("cccc0003", "bbbb0002", "third")
D = S.user("dddd0004", "cccc0003", "fourth")


def lines(*parts: str) -> bytes:
    return ("\n".join(parts) + "\n").encode()


GLUED = lines(HEADER, A, B[:57] + C, D)
SPLIT = lines(HEADER, A, B[:57], C, D)
# repair's status for a file left with an error, as check's for it: SPLIT's cut-off line (which no
# repair makes whole) and the orphan it leaves (a repair not made by default)
ERRORS_LEFT = 1


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", "repair", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def in_process_args(*paths: Path, in_place: bool = False) -> argparse.Namespace:
    """The arguments of ``pi-session repair PATH... [--in-place --no-backup]``, for a run in this process."""
    return argparse.Namespace(
        paths=[str(p) for p in paths],
        output=None,
        in_place=in_place,
        codes=None,
        all=False,
        no_backup=in_place,
        force=False,
        pi="1.6.0",
    )


@pytest.fixture
def glued(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(GLUED)
    return path


def test_a_key_written_twice_is_repaired_once_where_pi_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    child = S.user("b", "a").replace('"parentId":"a"', '"parentId":"a","parentId":"gone"')
    path.write_bytes(lines(S.header(), S.user("a", None), child))
    out = tmp_path / "out.jsonl"
    done = cli("--all", "-o", out, path)
    assert done.returncode == 0, done.stderr
    assert "1 repair made" in done.stdout and "rounds" not in done.stdout
    assert out.read_bytes() == lines(S.header(), S.user("a", None), child.replace('"gone"', '"a"'))


def test_without_a_target_it_only_lists_the_repairs(glued: Path) -> None:
    before = glued.stat()
    done = cli(glued)
    assert done.returncode == 1
    assert f"{glued}:3: PI006 Split the glued line into its 2 lines" in done.stdout
    assert "write them with --in-place or --output OUT" in done.stdout
    after = glued.stat()
    assert glued.read_bytes() == GLUED and after.st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl"]


def test_output_gets_the_repaired_session_and_the_original_is_untouched(glued: Path) -> None:
    out = glued.parent / "fixed.jsonl"
    done = cli(glued, "-o", out)
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert out.read_bytes() == SPLIT and glued.read_bytes() == GLUED
    assert f"1 repair made in {out}; problems left: 1 error, 1 warning" in done.stdout  # B was cut off


def test_an_existing_output_is_not_overwritten_unless_forced(glued: Path) -> None:
    """Refused before anything is said: the repairs were listed first, as if about to be made."""
    out = glued.parent / "fixed.jsonl"
    out.write_bytes(b"keep me")
    done = cli(glued, "-o", out)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"pi-session repair: {out}: it exists (--force overwrites it)\n"
    assert out.read_bytes() == b"keep me"
    assert cli(glued, "-o", out, "--force").returncode == ERRORS_LEFT and out.read_bytes() == SPLIT


@pytest.mark.parametrize("force", [False, True])
def test_the_file_itself_is_never_an_output(glued: Path, force: bool) -> None:
    """Said first and alone, with or without --force (without, it was told to give --force)."""
    done = cli(glued, "-o", glued, *(["--force"] if force else []))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"pi-session repair: {glued}: is the file being repaired: use --in-place\n"
    assert glued.read_bytes() == GLUED


def test_an_output_that_cannot_be_made_is_refused_before_the_repairs_are_listed(glued: Path) -> None:
    """A directory as OUT (which --force does not replace either), a directory of OUT that is not
    there: said first and alone."""
    directory = glued.parent / "kept"
    directory.mkdir()
    for args, said in [
        (["-o", directory], f"{directory}: is a directory: --output names the session file to write"),
        (
            ["-o", directory, "--force"],
            f"{directory}: is a directory: --output names the session file to write",
        ),
        (
            ["-o", directory / "no" / "s.jsonl"],
            f"{directory / 'no' / 's.jsonl'}: there is no directory {directory / 'no'} to make it in",
        ),
    ]:
        done = cli(glued, *args)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"pi-session repair: {said}\n"), args
    assert sorted(p.name for p in glued.parent.iterdir()) == ["kept", "s.jsonl"]
    assert list(directory.iterdir()) == []


def test_output_to_stdout_reports_on_stderr(glued: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "repair", str(glued), "-o", "-"],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == SPLIT
    assert b"1 repair made" in done.stderr


def test_in_place_keeps_the_original_as_a_backup(glued: Path) -> None:
    done = cli(glued, "--in-place")
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert glued.read_bytes() == SPLIT
    assert (glued.parent / "s.jsonl.bak").read_bytes() == GLUED
    again = cli(glued, "--in-place")
    # the split leaves the cut-off line, which no repair makes whole: named, the file left as it is
    assert (
        again.returncode == ERRORS_LEFT
        and "nothing repaired: 1 problem has no repair (line 3: PI001" in again.stdout
    )
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl", "s.jsonl.bak"]


def test_in_place_through_a_symlink_keeps_the_original_bytes_as_the_backup(glued: Path) -> None:
    """The file a symlink names is repaired, and FILE.bak (beside the link) holds its original
    bytes: not a second name of the link, which would show the repaired file."""
    link = glued.parent / "link.jsonl"
    link.symlink_to(glued.name)
    done = cli(link, "--in-place")
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert link.is_symlink() and glued.read_bytes() == SPLIT
    backup = glued.parent / "link.jsonl.bak"
    assert not backup.is_symlink() and backup.read_bytes() == GLUED


def test_in_place_refuses_to_replace_an_existing_backup(glued: Path) -> None:
    backup = glued.parent / "s.jsonl.bak"
    backup.write_bytes(b"older backup")
    done = cli(glued, "--in-place")
    assert done.returncode == 2 and "s.jsonl.bak exists" in done.stderr
    assert glued.read_bytes() == GLUED and backup.read_bytes() == b"older backup"
    assert cli(glued, "--in-place", "--no-backup").returncode == ERRORS_LEFT
    assert glued.read_bytes() == SPLIT and backup.read_bytes() == b"older backup"


def test_a_backup_copy_that_fails_part_way_is_removed_and_the_file_left_alone(
    glued: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hard links refused (another file system's rules), then the copy that stands in for one fills
    the disk part way: no partial FILE.bak is left for a user to take for a whole backup, and the
    repair refuses as for any backup it cannot keep, the file untouched."""
    import shutil

    from pi_session_server.cli import main
    from pi_session_server.session import rewrites

    def no_links(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    def disk_full_part_way(source: Any, out: Any, *_: object) -> None:
        out.write(source.read(10))
        out.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rewrites.os, "link", no_links)
    monkeypatch.setattr(shutil, "copyfileobj", disk_full_part_way)
    assert main(["repair", "--in-place", str(glued)]) == 2
    assert glued.read_bytes() == GLUED
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl"]
    backup = glued.parent / "s.jsonl.bak"
    assert capsys.readouterr().err == (
        f"pi-session repair: {backup}: No space left on device; nothing was written to {glued}\n"
    )


def test_a_failed_backup_copy_removes_only_the_file_it_made(
    glued: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process put its own file at FILE.bak while the copy ran: that file is not removed."""
    import shutil

    from pi_session_server.cli import main
    from pi_session_server.session import rewrites

    backup = glued.parent / "s.jsonl.bak"
    theirs = glued.parent / "theirs"
    theirs.write_bytes(b"theirs")

    def no_links(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    def replaced_then_disk_full(source: Any, out: Any, *_: object) -> None:
        out.write(source.read(10))
        os.replace(theirs, backup)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rewrites.os, "link", no_links)
    monkeypatch.setattr(shutil, "copyfileobj", replaced_then_disk_full)
    assert main(["repair", "--in-place", str(glued)]) == 2
    assert glued.read_bytes() == GLUED and backup.read_bytes() == b"theirs"


def _repair_racing(glued: Path, meanwhile: Callable[[], None]) -> int:
    """Repair ``glued`` in place while ``meanwhile`` runs once the repaired copy is written."""
    fd = os.open(glued, os.O_RDONLY)
    try:
        before = FileState.of(fd)
        plan = plan_repairs(SessionDocument.from_file(str(glued)), autofix.SAFE_CODES)

        def racing_writer():
            yield from spliced(fd, before.size, plan.splices())
            meanwhile()

        return replace_in_place(str(glued), before, racing_writer()).kept
    finally:
        os.close(fd)


def test_in_place_keeps_the_lines_appended_meanwhile(glued: Path) -> None:
    appended = lines(S.user("eeee0005", "dddd0004"))

    def pi_appends() -> None:
        with open(glued, "ab") as f:  # pi appends an entry while we write the repaired copy
            f.write(appended)

    assert _repair_racing(glued, pi_appends) == len(appended)
    assert glued.read_bytes() == SPLIT + appended
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl"]  # no temporary file left


def test_lines_appended_before_the_analysis_are_copied_not_repaired_twice(
    glued: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pi appends (two entries glued together) after the repair took the file's size and before
    its analysis read the lines: the repair plans for the lines up to that size, and the appended
    bytes are copied once, as they are (the next round splits them)."""
    from pi_session_server.cli import main

    fifth, sixth = S.user("eeee0005", "dddd0004", "fifth"), S.user("ffff0006", "eeee0005", "sixth")
    appended = lines(fifth + sixth)
    real_from_file = SessionDocument.from_file

    def pi_appends_first(path: str, **options: object) -> SessionDocument:
        if not pi_appends_first.done:  # type: ignore[attr-defined]
            pi_appends_first.done = True  # type: ignore[attr-defined]
            with open(glued, "ab") as f:
                f.write(appended)
        return real_from_file(path, **options)  # type: ignore[arg-type]

    pi_appends_first.done = False  # type: ignore[attr-defined]
    monkeypatch.setattr(repair_command.SessionDocument, "from_file", pi_appends_first)
    assert main(["repair", "--in-place", "--no-backup", str(glued)]) == ERRORS_LEFT
    assert glued.read_bytes() == SPLIT + lines(fifth, sixth)  # copied once, split in the next round
    assert f"kept {len(appended)} bytes that another process appended meanwhile" in capsys.readouterr().out


def test_in_place_leaves_a_file_alone_that_was_rewritten_meanwhile(glued: Path) -> None:
    rewritten = lines(HEADER, A)

    def editor_saves_in_place() -> None:
        glued.write_bytes(rewritten)

    with pytest.raises(StaleFileError):
        _repair_racing(glued, editor_saves_in_place)
    assert glued.read_bytes() == rewritten
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl"]  # no temporary file left


def test_the_safe_default_does_not_make_repairs_that_lose_or_guess(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    cut_last = B[:40]
    path.write_bytes(lines(HEADER, A, S.user("ffff0006", "gone0000")) + cut_last.encode())
    listed = cli(path).stdout  # PI002 and PI031 need --codes or --all, and it says so
    assert "nothing to repair" in listed
    assert "2 repairs of other codes not made: PI002 (1), PI031 (1); --codes PI002,PI031 or --all" in listed
    in_place = cli(path, "--in-place")
    assert "nothing to repair; the file is unchanged" in in_place.stdout
    assert "2 repairs of other codes not made" in in_place.stdout
    done = cli(path, "--codes", "pi002,PI031", "-o", tmp_path / "out.jsonl")
    assert done.returncode == 0, done.stderr
    fixed = (tmp_path / "out.jsonl").read_bytes().decode()
    assert fixed == "\n".join([HEADER, A, S.user("ffff0006", "aaaa0001")]) + "\n"


def test_all_keeps_a_tool_result_without_its_call_as_a_custom_message(tmp_path: Path) -> None:
    """pi #4570: a tool result whose call is gone makes providers refuse the context. ``--all``
    keeps its text in the context as a custom message (its call id and the rest in details), not
    delete it."""
    path = tmp_path / "s.jsonl"
    orphan = S.tool_result("r9", "aaaa0001", "gone", "what the tool printed")
    path.write_bytes(lines(HEADER, A, orphan, S.user("ffff0006", "r9")))
    out = tmp_path / "out.jsonl"
    done = cli(path, "--all", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "1 repair made" in done.stdout and "problems left: ok" in done.stdout
    note = json.loads(out.read_bytes().decode().splitlines()[2])
    assert (note["type"], note["id"], note["parentId"]) == ("custom_message", "r9", "aaaa0001")
    assert note["content"] == [{"type": "text", "text": "what the tool printed"}]
    assert note["details"]["toolResult"]["toolCallId"] == "gone"


def test_unknown_codes_are_refused(glued: Path) -> None:
    done = cli(glued, "--codes", "PI040")
    assert done.returncode == 2 and "no repair for PI040" in done.stderr
    for nothing in ("", ",", " , "):  # a list of no code chooses nothing: said, not "nothing to repair"
        done = cli(glued, "--codes", nothing, "--in-place")
        assert done.returncode == 2 and "--codes names no code" in done.stderr
    assert glued.read_bytes() == GLUED


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--all", "--codes", "PI001"], "give --codes or --all, not both"),
        (["--no-backup"], "--no-backup goes with --in-place"),
        (["--no-backup", "-o", "-"], "--no-backup goes with --in-place"),
        (["--force"], "--force goes with --output OUT"),
        (["--force", "--in-place"], "--force goes with --output OUT"),
    ],
)
def test_an_option_that_would_change_nothing_is_refused(glued: Path, options: list[str], said: str) -> None:
    """It was ignored: ``--no-backup`` without ``--in-place`` listed the repairs as if it were not
    there, ``--all`` took every code whatever ``--codes`` said."""
    done = cli(glued, *options)
    assert (done.returncode, done.stdout) == (2, "") and said in done.stderr
    assert sorted(p.name for p in glued.parent.iterdir()) == ["s.jsonl"] and glued.read_bytes() == GLUED


@pytest.mark.slow
def test_a_migration_waits_for_a_round_without_other_repairs(tmp_path: Path) -> None:
    header = json.loads(HEADER)
    header["version"] = 2
    v2 = json.dumps(header, separators=(",", ":"))
    path = tmp_path / "v2.jsonl"
    path.write_bytes(lines(v2, A + B, C))
    listed = cli(path, "--all")
    assert listed.stdout.splitlines() == [
        f"{path}:2: PI006 Split the glued line into its 2 lines",
        f"{path}:1: PI015 Migrate to version 3 (rewrite the file as pi would) (in the next round: it "
        "touches what a repair above changes)",
        "round 2, on the file as repaired so far:",
        f"{path}:1: PI015 Migrate to version 3 (rewrite the file as pi would)",
        f"{path}: 2 repairs to make; problems left then: ok; write them with --in-place or --output OUT",
    ]
    out = tmp_path / "out.jsonl"
    to_stdout = cli(path, "--all", "-o", "-")
    assert "(not in this run: run again on the output: it touches" in to_stdout.stderr
    assert to_stdout.stdout.encode() == lines(v2, A, B, C)  # one round only: it is streamed

    done = cli(path, "--all", "-o", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        f"{path}:1: PI015 Migrate to version 3 (rewrite the file as pi would) (in the next round: it "
        "touches what a repair above changes)",
        "round 2, on the file as repaired so far:",
        f"{out}:1: PI015 Migrate to version 3 (rewrite the file as pi would)",
        f"2 repairs made in {out}; problems left: ok",
    ]
    assert json.loads(out.read_text().split("\n")[0])["version"] == 3
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()[1:]] == [
        "aaaa0001",
        "bbbb0002",
        "cccc0003",
    ]
    assert path.read_bytes() == lines(v2, A + B, C)

    in_place = cli(path, "--all", "--in-place")
    assert in_place.returncode == 0 and in_place.stdout.endswith("problems left: ok\n")
    assert path.read_bytes() == out.read_bytes()
    assert (tmp_path / "v2.jsonl.bak").read_bytes() == lines(v2, A + B, C)  # the original, not round 1's


def test_rounds_stop_after_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a repair that always brings out another must not run for ever
    path = tmp_path / "s.jsonl"
    path.write_bytes(GLUED)
    monkeypatch.setattr(repair_command, "MAX_ROUNDS", 1)
    args = in_process_args(path, in_place=True)
    real_plan = repair_command.plan_repairs
    calls: list[int] = []

    def planning_again(doc: SessionDocument, chosen: frozenset[str], where: str | None = None):
        calls.append(1)
        plan = real_plan(doc, chosen, where)
        if not plan.applied and len(calls) < 10:  # pretend each round finds one more
            plan = real_plan(SessionDocument(GLUED), chosen, where)
        return plan

    monkeypatch.setattr(repair_command, "plan_repairs", planning_again)
    assert repair_command.run(args) == ERRORS_LEFT
    assert len(calls) == 2  # the first round, then the check that finds more: no second round
    assert (
        f"1 repair made in {path} (stopped after 1 round: run again for more); problems left: 1 error, 1 warning\n"
        in capsys.readouterr().out
    )
    assert path.read_bytes() == SPLIT


def test_identical_repairs_are_made_once() -> None:
    # the glued line's own split and its orphan's "split line N" are the same splices
    doc = SessionDocument(lines(HEADER, A + B, C))
    plan = plan_repairs(doc, autofix.FIXABLE_CODES)
    assert [(p.repair.code, p.repair.line) for p in plan.applied] == [("PI006", 1)]
    assert plan.deferred == []


@pytest.mark.parametrize(
    ("before", "status"),
    [("\n\ufeff", 0), ('{"type":"mess', ERRORS_LEFT)],  # (the cut-off line is left)
)
def test_a_header_glued_behind_a_cut_off_line_is_split_out_not_made_up(
    tmp_path: Path, before: str, status: int
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(before.encode() + lines(HEADER, A, B))
    done = cli(path, "--in-place", "--no-backup")
    assert done.returncode == status, done.stderr
    assert done.stdout.count(" PI0") == 1 and " PI006 Split the glued line" in done.stdout
    assert path.read_bytes() == before.encode() + b"\n" + lines(HEADER, A, B)  # the split alone
    assert SessionDocument(path.read_bytes()).valid_header() is not None


def test_no_header_is_made_up_beside_a_repair_that_gives_the_file_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = SessionDocument(lines(A, B))  # PI010: a header to insert
    (insert,) = repairs(doc, 0, doc.line_count - 1)
    assert insert.code == "PI010"
    newline = autofix.TextEdit(1, 0, 1, 0, "\n")
    split = autofix.Repair("Split", "PI006", 1, lambda: [newline], preferred=True, restores_header=True)
    monkeypatch.setattr(autofix, "repairs_counting", lambda *_: Found([insert, split]))
    assert [p.repair.code for p in plan_repairs(doc, autofix.SAFE_CODES).applied] == ["PI006"]
    monkeypatch.setattr(autofix, "repairs_counting", lambda *_: Found([insert]))
    assert [p.repair.code for p in plan_repairs(doc, autofix.SAFE_CODES).applied] == ["PI010"]


def test_streaming_copies_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autofix, "_COPY_CHUNK", 7)
    body = [S.user(f"{i:08x}", None if i == 0 else f"{i - 1:08x}", "x" * (i % 50)) for i in range(300)]
    data = lines(HEADER, *body[:150], body[150][:33] + body[151], *body[152:], body[10] + body[11])
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    doc = SessionDocument.from_file(str(path))
    plan = plan_repairs(doc, autofix.SAFE_CODES)
    assert [p.repair.line for p in plan.applied] == [151, 300]
    with open(path, "rb") as f:
        out = b"".join(spliced(f.fileno(), len(data), plan.splices()))
    assert out == lines(HEADER, *body[:150], body[150][:33], body[151], *body[152:], body[10], body[11])


def test_a_file_truncated_while_it_is_copied_is_said_so_and_left_alone(glued: Path) -> None:
    """Another process truncates the file while the repaired copy is made: the command says the
    file was truncated or rewritten meanwhile (not an I/O error) and writes nothing."""
    doc = SessionDocument.from_file(str(glued))
    plan = plan_repairs(doc, autofix.SAFE_CODES)
    with open(glued, "rb") as f:
        copied = spliced(f.fileno(), len(GLUED), plan.splices())
        first = next(copied)
        os.truncate(glued, 10)
        with pytest.raises(StaleFileError, match="truncated or rewrote it"):
            list(copied)
        assert first
        with pytest.raises(ValueError, match="past the"):  # a plan for more than the bytes copied
            next(spliced(f.fileno(), 10, plan.splices()))


def test_tree_repairs_wait_for_the_round_after_a_split_gives_entries_back(tmp_path: Path) -> None:
    """An assistant turn glued to the line before it: its tool result has no call on its path, and
    no parent (PI036, PI031). Splitting the line gives both back; the tree's repairs planned on the
    file before the split wait for the next round, where nothing is left to repair: every entry
    stays (--all used to remove the tool result and make its child a root)."""
    call = (("call1", "read", {"path": "/x"}),)
    entries = [
        S.user("aaaa0001", None, "first"),
        S.assistant("bbbb0002", "aaaa0001", "reading", calls=call),
        S.tool_result("cccc0003", "bbbb0002", "call1"),
        S.user("dddd0004", "cccc0003", "thanks"),
    ]
    path, out = tmp_path / "s.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(lines(HEADER, entries[0] + entries[1], *entries[2:]))
    plan = plan_repairs(SessionDocument.from_file(str(path)), autofix.FIXABLE_CODES)
    assert [p.repair.code for p in plan.applied] == ["PI006"]
    assert {r.code for r in plan.deferred} >= {"PI036"}
    done = cli(path, "--all", "-o", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == lines(HEADER, *entries)
    assert "problems left: ok" in done.stdout


def test_a_directory_of_sessions_is_repaired_file_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    (folder / "--work-a--").mkdir(parents=True)
    (folder / "--work-b--").mkdir()
    first, second = folder / "--work-a--" / "one.jsonl", folder / "--work-b--" / "two.jsonl"
    clean = folder / "--work-b--" / "clean.jsonl"
    first.write_bytes(GLUED)
    second.write_bytes(GLUED)
    clean.write_bytes(SPLIT)
    listed = cli(folder)
    assert listed.returncode == 1
    assert f"{first}:3: PI006" in listed.stdout and f"{second}:3: PI006" in listed.stdout
    assert str(clean) not in listed.stdout  # quiet about clean files when there are several
    # what the file with nothing chosen to repair still has (its split left an orphan, and the
    # cut-off line no repair makes whole) is counted
    assert listed.stdout.endswith(
        "3 files checked: 2 repairs to make, in 2 files\n"
        "1 file has only repairs of codes not chosen: PI031 (1); --codes PI031 or --all makes it\n"
        f"1 file has 1 problem that no repair makes: `pi-session check {folder}` lists them\n"
    )
    done = cli(folder, "--in-place")
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert first.read_bytes() == SPLIT and second.read_bytes() == SPLIT and clean.read_bytes() == SPLIT
    assert not (folder / "--work-b--" / "clean.jsonl.bak").exists()
    assert "3 files checked: 2 repairs made, in 2 files\n" in done.stdout
    assert cli(folder, "-o", tmp_path / "out.jsonl").returncode == 2  # one output, many files


def test_the_summary_of_several_files_counts_those_that_could_not_be_read(glued: Path) -> None:
    """It said "2 files checked: 1 repair to make in 1 of them" of a FIFO and a session, as if
    both had been read (the FIFO's refusal scrolled away above)."""
    os.mkfifo(glued.parent / "fifo.jsonl")
    done = cli(glued.parent)
    assert done.returncode == 2
    assert done.stdout.splitlines()[-2:] == [
        "2 files checked: 1 repair to make, in 1 file",
        "1 file could not be read or repaired (said above)",
    ]


def test_a_missing_path_is_reported_and_the_others_are_still_repaired(glued: Path) -> None:
    done = cli(glued.parent / "nope.jsonl", glued, "--in-place")
    assert done.returncode == 2 and "nope.jsonl: no such file or directory" in done.stderr
    assert glued.read_bytes() == SPLIT


def test_a_directory_without_a_session_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = cli(tmp_path / "empty", "--in-place")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"pi-session repair: {tmp_path / 'empty'}: no session file (*.jsonl) in it\n"


@pytest.mark.parametrize(
    ("pi", "left"), [("1.6.0", "problems left: ok"), ("0.86.1", "problems left: 1 info")]
)
def test_the_analysis_follows_pi(tmp_path: Path, pi: str, left: str) -> None:
    # a context edit is pi 1.6.0's; pi 0.86.1 reads it as an entry type it does not know (PI020)
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf" + lines(HEADER, A, B, S.context_edit("eeee0005", "bbbb0002", "aaaa0001"))
    )
    done = cli(path, "--in-place", "--no-backup", "--pi", pi)
    assert done.returncode == 0, done.stderr
    assert f"1 repair made in {path}; {left}" in done.stdout
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_a_utf16_or_utf32_file_is_re_encoded_as_utf8_by_default_and_then_repaired(
    tmp_path: Path, encoding: str
) -> None:
    """Windows PowerShell's `>` writes a session as UTF-16: pi refuses it; decoded whole, the file
    loses nothing in UTF-8 (a glued line in it is split in the next round)."""
    first = S.user("aaaa0001", None, "first 😀")
    text = lines(HEADER, first, B[:57] + C, D).decode()
    path = tmp_path / "s.jsonl"
    path.write_bytes("\ufeff".encode(encoding) + text.encode(encoding))
    done = cli("--in-place", path)
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert f"{path}:1: PI017 Re-encode the file as UTF-8" in done.stdout
    assert path.read_bytes() == lines(HEADER, first, B[:57], C, D)
    assert (tmp_path / "s.jsonl.bak").read_bytes().startswith("\ufeff".encode(encoding))


def test_a_utf16_file_that_does_not_decode_whole_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = "\ufeff".encode("utf-16-le") + lines(HEADER, A).decode().encode("utf-16-le") + b"\x00\xd8x\x00"
    path.write_bytes(data)  # a lone surrogate: no UTF-8 holds it, nothing is guessed
    done = cli("--in-place", path)
    assert f"{path}:1: PI017" not in done.stdout and path.read_bytes() == data  # no repair listed
    assert "1 problem has no repair (line 1: PI017 the file is UTF-16LE" in done.stdout  # named as such


def test_a_repair_for_an_editor_is_refused_with_the_advice_that_fits_what_changed(tmp_path: Path) -> None:
    """The file is repaired for an editor only if it holds the editor's text: lines pi appended
    since call for a reload, other differences for a save; nothing is written either way."""
    path = tmp_path / "s.jsonl"
    shown = b"\xef\xbb\xbf" + GLUED  # a mark the editor hides: the repair is made to the file
    path.write_bytes(shown + lines(S.user("eeee0005", "dddd0004")))
    with pytest.raises(StaleFileError, match="appended to it\\): let the editor read it again"):
        autofix.repair_file(str(path), autofix.SAFE_CODES, text=GLUED)
    path.write_bytes(shown.replace(b"first", b"FIRST"))
    with pytest.raises(StaleFileError, match="differs from the text the editor shows: save it first"):
        autofix.repair_file(str(path), autofix.SAFE_CODES, text=GLUED)
    assert path.read_bytes() == shown.replace(b"first", b"FIRST")
    path.write_bytes(shown)
    assert autofix.repair_file(str(path), autofix.SAFE_CODES, text=GLUED).repairs == 2
    assert path.read_bytes() == SPLIT


# -- what it tells beside the repairs it made ------------------------------------------------------
# the repairs of other codes the repaired file still has (a line split after a crash gives back an
# entry whose parent was the cut-off line: pi starts the conversation at it until it is
# re-parented), and its list in line order


def test_the_repairs_of_other_codes_left_are_named_with_how_to_make_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER, A, B[:57] + C, D))  # B cut by a crash, C written onto it
    done = cli("--in-place", path)
    assert done.returncode == ERRORS_LEFT, done.stderr
    assert f"{path}: 1 repair of another code not made: PI031 (1); --codes PI031 or --all makes it" in (
        done.stdout
    )
    again = cli("--in-place", "--no-backup", "--codes", "PI031", path)
    assert again.returncode == ERRORS_LEFT, again.stderr  # (the cut-off line)
    assert "not made" not in again.stdout


@pytest.mark.parametrize(
    ("content", "options"),
    [
        # a split gives back an entry whose parent was the cut-off line: a repair of PI031 is found
        # only on the file the split made (a round later), and not made by default
        (GLUED, []),
        (GLUED, ["--codes", "PI006,PI031"]),
        # a migration waits for a round without other repairs
        (lines(json.dumps({**json.loads(HEADER), "version": 2}), A + B, C), ["--all"]),
    ],
    ids=["split-then-orphan", "split-and-orphan-chosen", "split-then-migration"],
)
def test_the_dry_run_tells_what_in_place_then_does(
    tmp_path: Path, content: bytes, options: list[str]
) -> None:
    """Without --in-place, the rounds and the repairs of other codes --in-place then tells of were
    left out (the dry run listed the first round only): it plays them on a copy and tells the same
    story, and the file is not written."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    listed = cli(path, *options)
    assert listed.returncode == 1, listed.stderr
    assert path.read_bytes() == content and sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
    done = cli(path, "--in-place", "--no-backup", *options)
    assert done.returncode in (0, ERRORS_LEFT), done.stderr
    # the same lines, but for the one that says what was made: what is to make, and how
    told = [
        re.sub(
            r"^(\d+ repairs?) made in (.*); problems left: (.*)$",
            r"\2: \1 to make; problems left then: \3; write them with --in-place or --output OUT",
            line,
        )
        for line in done.stdout.splitlines()
    ]
    assert listed.stdout.splitlines() == told and len(told) >= 2, (listed.stdout, done.stdout)


def test_a_dry_run_tells_every_round_without_writing_anything(
    glued: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The later rounds are played on the file's analysis in memory, not on a copy as big as the
    file in $TMPDIR: with no room to write anything anywhere, the dry run still tells every round
    (it told the first round only, and that the rest was unknown, when the copy could not be made)."""

    def no_room(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(repair_command, "rewrite_file", no_room)
    monkeypatch.setattr(os, "open", Mock(side_effect=os.open))
    assert repair_command.run(in_process_args(glued)) == 1
    assert capsys.readouterr().out == (
        f"{glued}:3: PI006 Split the glued line into its 2 lines\n"
        f"{glued}: 1 repair to make; problems left then: 1 error, 1 warning; write them with --in-place "
        "or --output OUT\n"
        f"{glued}: 1 repair of another code not made: PI031 (1); --codes PI031 or --all makes it\n"
    )
    opened = [call.args for call in os.open.call_args_list]  # type: ignore[attr-defined]
    assert all(not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) for _, flags, *_ in opened), opened
    assert glued.read_bytes() == GLUED


def test_nothing_is_said_of_other_codes_when_none_is_left(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER, A, B + C, D))  # two whole lines glued
    done = cli("--in-place", path)
    assert done.returncode == 0, done.stderr
    assert "not made" not in done.stdout


def test_the_repairs_are_listed_in_line_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER[:30] + A, B, C))  # the header cut, the first entry written onto it
    done = cli(path)
    listed = [line.split(": ", 1)[0] for line in done.stdout.splitlines() if ": PI" in line]
    assert listed == [f"{path}:1", f"{path}:2"], done.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("output", [[], ["-o", "-"]])
def test_output_to_a_full_disk_is_one_line_on_stderr(glued: Path, output: list[str]) -> None:
    """As for the other commands: it is the output that failed, not the file being repaired."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pi_session_server", "repair", *output, str(glued)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "pi-session repair: No space left on device"
    assert "Exception" not in done.stderr and str(glued) not in done.stderr.splitlines()[-1]
    assert glued.read_bytes() == GLUED


def test_output_to_stdout_cut_short_by_its_reader_ends_quietly(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    body = "".join(
        S.user(f"e{n:07d}", f"e{n - 1:07d}" if n else None, "words " * 50) + "\n" for n in range(3000)
    )
    big.write_text(HEADER + "\n" + body)
    reader = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "repair", "-o", "-", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().startswith(b'{"type":"session"')
    reader.stdout.close()  # like `| head -1`
    errors = reader.stderr.read().decode()
    reader.stderr.close()
    assert (reader.wait(timeout=120), errors) == (128 + 13, "")


def test_a_problem_without_a_repair_is_named_not_called_nothing_to_repair(tmp_path: Path) -> None:
    """A line that does not parse (PI001 with no split to make) has no repair: ``repair`` says it
    found it and where to see it, not "nothing to repair"; its exit status is check's for the error
    left, 1 (it was 0, as if the file were clean)."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(HEADER, A, B[:60] + '"', C))
    listed = cli(path)
    assert listed.returncode == ERRORS_LEFT, listed.stderr
    assert "nothing to repair" not in listed.stdout
    assert f"{path}: nothing repaired: 1 problem has no repair (line 3: PI001 " in listed.stdout
    assert f"see `pi-session check {path}`" in listed.stdout
    in_place = cli(path, "--in-place")
    assert in_place.returncode == ERRORS_LEFT and "1 problem has no repair (line 3: PI001 " in in_place.stdout
    other = tmp_path / "t.jsonl"
    other.write_bytes(lines(HEADER, A))
    both = cli(path, other)
    assert both.returncode == ERRORS_LEFT
    assert both.stdout.endswith(
        "2 files checked: nothing to repair\n"
        "1 file has only repairs of codes not chosen: PI031 (1); --codes PI031 or --all makes it\n"
        "1 file has 1 problem that no repair makes: `pi-session check` lists them\n"
    )


def test_a_file_without_a_problem_a_repair_makes_is_analysed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its diagnostics are computed once and say all the report needs: its repairs are not searched
    for in a second pass over its problems."""
    dangling_label = tmp_path / "label.jsonl"
    dangling_label.write_bytes(lines(HEADER, A, S.label("eeee0005", "aaaa0001", "gone0000")))
    healthy = tmp_path / "ok.jsonl"
    healthy.write_bytes(lines(HEADER, A, B))
    planned: list[int] = []
    diagnosed: list[int] = []
    real_plan, real_diagnostics = repair_command.plan_repairs, repair_command.document_diagnostics

    def planning(*args: Any) -> autofix.Plan:
        planned.append(1)
        return real_plan(*args)

    def diagnosing(doc: SessionDocument) -> list[Any]:
        diagnosed.append(1)
        return real_diagnostics(doc)

    monkeypatch.setattr(repair_command, "plan_repairs", planning)
    monkeypatch.setattr(repair_command, "document_diagnostics", diagnosing)

    for paths, in_place in (
        ((dangling_label,), False),
        ((dangling_label,), True),
        ((dangling_label, healthy), False),
    ):
        planned.clear()
        diagnosed.clear()
        assert repair_command.run(in_process_args(*paths, in_place=in_place)) == 0
        assert (planned, len(diagnosed)) == ([], len(paths))
    assert "1 problem has no repair (line 3: PI" in capsys.readouterr().out


def test_the_help_names_each_code_whole_however_it_is_wrapped() -> None:
    for columns in ("60", "80", "100"):
        shown = subprocess.run(
            [sys.executable, "-m", "pi_session_server", "repair", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": columns},
        ).stdout
        # each code of the default once, then each possible one: none cut in two by a line's end
        named = re.findall(r"PI\d{3}", shown)
        assert named == sorted(autofix.SAFE_CODES) + sorted(autofix.FIXABLE_CODES), columns


# ``repair -o OUT``: OUT is written whole or not at all, and only a regular file (or a new name) is
# ever written. A FIFO made the command wait for a reader forever; a failed write truncated OUT and
# then unlinked it, so ``--force`` onto a device that refuses the bytes removed the device's node,
# and a failure writing over an existing file lost what it held.


def test_a_fifo_as_output_is_refused_not_waited_on(glued: Path) -> None:
    fifo = glued.parent / "out.fifo"
    os.mkfifo(fifo)
    for force in ([], ["--force"]):
        done = cli(glued, "-o", fifo, *force)
        assert (done.returncode, done.stdout) == (2, "")
        # what --output writes, and how to send the session to the FIFO
        assert done.stderr == (
            f"pi-session repair: {fifo}: is a FIFO: --output makes a new session file (or with --force "
            "replaces a regular one); to send the session to the FIFO, give `-o -` and redirect stdout to it\n"
        )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_as_output_is_refused_and_left_where_it_is(glued: Path) -> None:
    full = glued.parent / "full"  # /dev/full's own node: a machine's device is never risked
    try:
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError:
        pytest.skip("making a device node needs a privilege")
    done = cli(glued, "-o", full, "--force")
    assert done.returncode == 2
    assert f"{full}: is a character device" in done.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_an_output_that_cannot_be_written_whole_keeps_what_it_held(
    glued: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_session_server.cli import main

    out = glued.parent / "fixed.jsonl"
    out.write_bytes(b"keep me\n")
    real_spliced = repair_command.spliced

    def failing_after_a_chunk(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for chunk in real_spliced(*args, **kwargs):  # type: ignore[arg-type]
            yield chunk
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(repair_command, "spliced", failing_after_a_chunk)
    assert main(["repair", str(glued), "-o", str(out), "--force"]) == 2
    assert out.read_bytes() == b"keep me\n"
    assert sorted(p.name for p in glued.parent.iterdir()) == ["fixed.jsonl", "s.jsonl"]
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"nothing was written to {out}" in err


def test_a_later_round_that_fails_says_the_earlier_rounds_were_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Round 1 splits the glued line and writes it; another program renames its own file over the
    session before round 2 (the migration) is written: round 2 is refused, and the user is told
    that round 1's repair was written (the original kept as FILE.bak), not that nothing was."""
    from pi_session_server.cli import main

    header = json.loads(HEADER)
    header["version"] = 2
    v2 = json.dumps(header, separators=(",", ":"))
    path = tmp_path / "v2.jsonl"
    path.write_bytes(lines(v2, A + B, C))
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_bytes(lines(HEADER, A))
    real_analysed = repair_command._analysed
    analyses = []

    def renamed_over_before_round_2(doc: SessionDocument, *args: Any) -> Any:
        analyses.append(doc)
        found = real_analysed(doc, *args)
        if len(analyses) == 2:  # round 2 has analysed the file: another program replaces it now
            os.replace(theirs, path)
        return found

    monkeypatch.setattr(repair_command, "_analysed", renamed_over_before_round_2)
    assert main(["repair", "--all", "--in-place", str(path)]) == 2
    assert path.read_bytes() == lines(HEADER, A)  # theirs, left alone
    assert (tmp_path / "v2.jsonl.bak").read_bytes() == lines(v2, A + B, C)
    err = capsys.readouterr().err
    assert "nothing was written to" not in err
    assert err.splitlines()[-1] == (
        f"pi-session repair: {path}: the file was replaced or deleted while it was being repaired "
        f"(round 2); 1 repair had been written to {path} in round 1 (the original is {path}.bak)"
    )
