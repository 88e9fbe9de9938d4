"""``pi-session repair PATH...``: the language server's repairs, for a terminal.

Without ``--output`` or ``--in-place`` nothing is written: the repairs that would be made are
listed as ``--in-place`` would tell them, its rounds played on the file's analysis in memory
(exit status 1 when there are any, like a ``--check``). A file with nothing to repair but
problems no repair makes (a line that does not parse) has them named. The exit status is 1 too
when a file is left with an error (one no repair makes, or whose repair is of a code not chosen),
as ``pi-session check`` would exit for it: a script that repairs and then trusts the files is told
they are not clean. By default only repairs that lose
nothing are made (lines glued together split apart, a missing header inserted, the header moved
first, a byte order mark removed); ``--codes`` chooses others, ``--all`` takes every repair a
text edit can make. ``--in-place`` keeps the original as ``FILE.bak`` (a second name for the same
bytes) unless ``--no-backup``, and replaces the file atomically, under its lock: lines another
process (pi) appended meanwhile are kept after the repaired content; a file changed in any other
way is left alone. What is written is repaired again, in rounds, for as long as that finds repairs
(a migration waits for a round with nothing else to repair; a split line can bring out more), up
to ``MAX_ROUNDS``; output to stdout is one round. Directories are searched for ``*.jsonl`` files,
as by ``pi-session check``; a file that cannot be repaired is reported and the others still are
(exit status 2). Each file is read in chunks and its lines kept as facts and places, so a session
of any size is repaired in little memory. ``--pi VERSION``: the files are analysed as that pi
release reads them (what is a problem, and so what is repaired, follows it; default: the newest).
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import stat
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any, TextIO, cast

from ..analysis.autofix import FIXABLE_CODES, SAFE_CODES, Plan, plan_repairs, spliced
from ..analysis.codes import Severity
from ..analysis.diagnostics import Diagnostic, document_diagnostics
from ..analysis.document import SessionDocument
from ..errors import FsError, PiSessionError
from ..output import write_fully
from ..session.profiles import Profile, profile_for
from ..session.rewrites import FileState, Replaced, replace_in_place, rewrite_file, same_file
from ._common import add_pi_argument, counted, open_failure, special_file_problem
from .check import count_by_severity, say_what_was_not_found, session_files, summary_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="session files, or directories searched for *.jsonl files"
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "-o", "--output", metavar="OUT", help="write the repaired session to OUT ('-': stdout)"
    )
    target.add_argument("--in-place", action="store_true", help="replace each file with its repaired session")
    parser.add_argument(
        "--codes",
        metavar="LIST",
        # listed with spaces, so that a help wrapped to the terminal breaks between codes, not inside one
        help=f"comma-separated diagnostic codes to repair (default: {', '.join(sorted(SAFE_CODES))}; "
        f"possible: {', '.join(sorted(FIXABLE_CODES))})",
    )
    parser.add_argument("--all", action="store_true", help="make every repair a text edit can make")
    parser.add_argument("--no-backup", action="store_true", help="with --in-place: keep no FILE.bak")
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    add_pi_argument(parser)


def _say(*text: str, file: TextIO | None = None) -> None:
    """``print``, with the control characters of a path or a repair's title written as escapes (a
    file's name may hold a line break or a terminal's escape sequence)."""
    from ..render.terminal_text import one_terminal_line

    print(*map(one_terminal_line, text), file=file)


def _chosen_codes(args: argparse.Namespace) -> frozenset[str] | str:
    """The codes to repair, or why the options given cannot be followed (an option that changes
    nothing in the run asked for is refused: the user meant something else)."""
    if args.all and args.codes is not None:
        return "give --codes or --all, not both"
    if args.no_backup and not args.in_place:
        return "--no-backup goes with --in-place (without it, the file is never replaced)"
    if args.force and args.output in (None, "-"):
        return "--force goes with --output OUT (the file it may overwrite)"
    if args.all:
        return FIXABLE_CODES
    if args.codes is None:
        return SAFE_CODES
    chosen = frozenset(c.strip().upper() for c in args.codes.split(",") if c.strip())
    if not chosen:
        return f"--codes names no code (possible: {', '.join(sorted(FIXABLE_CODES))})"
    unknown = sorted(chosen - FIXABLE_CODES)
    if unknown:
        return f"no repair for {', '.join(unknown)} (possible: {', '.join(sorted(FIXABLE_CODES))})"
    return chosen


def run(args: argparse.Namespace) -> int:
    chosen = _chosen_codes(args)
    if isinstance(chosen, str):
        _say(f"pi-session repair: {chosen}", file=sys.stderr)
        return 2
    found_files = session_files(args.paths)
    say_what_was_not_found("repair", found_files, given=True)
    files, missing = found_files.files, found_files.missing
    if args.output and len(files) + len(missing) != 1:
        _say("pi-session repair: --output takes one session file", file=sys.stderr)
        return 2
    if args.output not in (None, "-"):
        problem = _output_problem(args.output, files, force=args.force)
        if problem is not None:
            _say(f"pi-session repair: {args.output}: {problem}", file=sys.stderr)
            return 2
    statuses = [2] * len(missing)
    total = with_repairs = 0
    # several files: those with nothing chosen to repair are not named, their other repairs counted
    others = OtherRepairs() if len(files) > 1 else None
    failed = 0
    for path in files:
        status, count = _repair_path(args, path, chosen, others)
        statuses.append(status)
        total += count
        with_repairs += count > 0
        failed += status == 2
    if others is not None:
        for line in _summary(len(files), total, with_repairs, failed, others, args):
            _say(line)
    return max(statuses, default=0)


def _output_problem(out: str, files: list[str], *, force: bool) -> str | None:
    """Why OUT cannot be written, when that is known before the session (``files``: it alone, or
    none) is read: said first and alone, not after its repairs listed as if they were about to be
    made. OUT is a new file, or with --force a regular file it replaces; a FIFO or a device is
    never opened (a FIFO waits for a reader). None: the write itself says what else is wrong (a
    directory it may not write in)."""
    from ..session.paths import special_file_kind

    try:
        st: os.stat_result | None = os.stat(out)
    except (OSError, ValueError):
        st = None  # nothing there yet (or a link to nothing): the write makes it, or says why not
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "is a directory: --output names the session file to write"
    kind = None if st is None else special_file_kind(st.st_mode)
    if kind is not None:
        return (
            f"is a {kind}: --output makes a new session file (or with --force replaces a regular one); "
            f"to send the session to the {kind}, give `-o -` and redirect stdout to it"
        )
    if st is not None and files and _same_file_as(files[0], st):
        return _IS_THE_FILE_REPAIRED
    if not force and os.path.lexists(out):
        return "it exists (--force overwrites it)"
    parent = os.path.dirname(out) or "."
    if st is None and not _is_directory(parent):
        return f"there is no directory {parent} to make it in"
    return None


_IS_THE_FILE_REPAIRED = "is the file being repaired: use --in-place"


def _same_file_as(path: str, out: os.stat_result) -> bool:
    try:
        return os.path.samestat(os.stat(path), out)
    except (OSError, ValueError):
        return False


def _is_directory(path: str) -> bool:
    """Is ``path`` a directory? Yes too when that cannot be told (a parent not searchable): the
    write says what is wrong then."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True


def _summary(
    files: int, total: int, with_repairs: int, failed: int, others: OtherRepairs, args: argparse.Namespace
) -> list[str]:
    """The last lines of a run over several files: the repairs made or to make and in how many
    files; the files that could not be read; the files whose only repairs are of codes not chosen;
    the files whose problems no repair makes."""
    if total:
        done = "made" if args.in_place else "to make"
        repairs = f"{counted(total, 'repair')} {done}, in {counted(with_repairs, 'file')}"
    else:
        repairs = "nothing repaired" if args.in_place else "nothing to repair"
    lines = [f"{counted(files, 'file')} checked: {repairs}"]
    if failed:
        lines.append(f"{counted(failed, 'file')} could not be read or repaired (said above)")
    if others.files:
        has = "file has" if others.files == 1 else "files have"
        lines.append(
            f"{others.files:,} {has} only repairs of codes not chosen: {_other_codes(others.counts)}"
        )
    if others.unrepairable:
        has = "file has" if others.unrepairable_files == 1 else "files have"
        problems = counted(others.unrepairable, "problem")
        given = f" {shlex.quote(args.paths[0])}" if len(args.paths) == 1 else ""
        lines.append(
            f"{others.unrepairable_files:,} {has} {problems} that no repair makes: "
            f"`pi-session check{given}` lists them"
        )
    return lines


class OtherRepairs:
    """The repairs of codes not chosen in the files of a run over several, with nothing chosen
    to repair (said once at the end, not per file)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.files = 0
        # the errors and warnings no repair makes, in the files with nothing to repair
        self.unrepairable = 0
        self.unrepairable_files = 0

    def add_unrepairable(self, count: int) -> None:
        if count:
            self.unrepairable += count
            self.unrepairable_files += 1

    def add(self, counts: Counter[str]) -> None:
        if counts:
            self.counts.update(counts)
            self.files += 1


def _repair_path(
    args: argparse.Namespace, path: str, chosen: frozenset[str], others: OtherRepairs | None
) -> tuple[int, int]:
    """(exit status, repairs) for one file: 0 done or nothing to do, 1 repairs listed or an error left, 2 failed."""
    problem = special_file_problem(path)
    if problem is not None:
        _say(f"pi-session repair: {path}: {problem}", file=sys.stderr)
        return 2, 0
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        _say(f"pi-session repair: {path}: {open_failure(path, err)}", file=sys.stderr)
        return 2, 0
    try:
        return _repair(args, path, fd, chosen, others)
    except _OutputFailed as failed:
        raise failed.error from None  # said by cli.main (a reader gone: quietly), not as the file's failure
    except _LaterRoundFailed as failed:
        # the earlier rounds' repairs are in the file: a user told "nothing was written" would trust it unchanged
        backup = f" (the original is {path}.bak)" if args.in_place and not args.no_backup else ""
        _say(
            f"pi-session repair: {_where(failed.error, path)}: {_error_text(failed.error)} ({failed.stage}); "
            f"{counted(failed.made, 'repair')} had been written to {failed.written} in {failed.before}{backup}",
            file=sys.stderr,
        )
        return 2, failed.made
    except (OSError, PiSessionError) as err:
        message = _error_text(err)
        target = _target(args, path)
        written = (
            f"; nothing was written to {target}" if target and "nothing was written" not in message else ""
        )
        _say(f"pi-session repair: {_where(err, path)}: {message}{written}", file=sys.stderr)
        return 2, 0
    finally:
        os.close(fd)


def _error_text(err: OSError | PiSessionError) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def _where(err: OSError | PiSessionError, path: str) -> str:
    """The file the system refused (the output, its directory), else the one being repaired."""
    return err.filename if isinstance(err, OSError) and err.filename else path


class _LaterRoundFailed(Exception):
    """A round after the first failed (the file renamed over meanwhile, a full disk): what the
    rounds before it wrote is in ``written``."""

    def __init__(self, error: OSError | PiSessionError, written: str, made: int, round_number: int):
        super().__init__(error)
        self.error = error
        self.written = written
        self.made = made
        last = min(round_number - 1, MAX_ROUNDS)
        self.before = "round 1" if last == 1 else f"rounds 1 to {last}"
        # past the last round: only the check of the result failed
        self.stage = f"round {round_number}" if round_number <= MAX_ROUNDS else f"after round {last}"


class _OutputFailed(Exception):
    """Writing the command's own output failed (a full disk, a reader gone): the file being
    repaired is not at fault."""

    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


class _Output:
    """stdout (its text or its bytes) for ``print`` and writes, its failures raised as
    :class:`_OutputFailed`."""

    def __init__(self, stream: Any):
        self.stream = stream

    def write(self, data: Any) -> None:
        try:
            if isinstance(data, str):
                self.stream.write(data)
            else:
                write_fully(self.stream, data)
        except OSError as error:
            raise _OutputFailed(error) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            raise _OutputFailed(error) from None


def _target(args: argparse.Namespace, path: str) -> str:
    return path if args.in_place else (args.output or "")


# A repair can bring out another (a split line's orphans, a migration that waits for a file with
# nothing else to repair): written repairs go round again on the result, this many times at most.
MAX_ROUNDS = 5


def _report_only(
    path: str,
    diagnostics: list[Diagnostic],
    plan: Plan,
    chosen: frozenset[str],
    others: OtherRepairs | None,
    report: TextIO,
) -> tuple[int, int]:
    """Neither --in-place nor --output, and nothing of the codes chosen to repair: said so, with
    the problems no repair makes and the repairs of other codes; nothing is written."""
    if others is None:
        _say(
            _nothing_to_repair(path, diagnostics, plan, f" (codes {', '.join(sorted(chosen))})"), file=report
        )
    else:
        others.add_unrepairable(len(_unrepairable(diagnostics, plan)))
    _say_other_repairs(plan, path, report, others)
    return (1 if _leaves_an_error(diagnostics, plan) else 0), 0


def _leaves_an_error(diagnostics: list[Diagnostic], plan: Plan, *, rounds: bool = True) -> bool:
    """Whether an error among a file's ``diagnostics`` is left once the repairs ``plan`` makes are
    made (one no repair makes, or whose repair is of a code not chosen): ``check``'s exit status
    for the file then is 1, and so is ``repair``'s. ``rounds``: the repairs that wait for a second
    round are made too."""
    mended = Counter(planned.repair.code for planned in plan.applied)
    if rounds:
        mended.update(repair.code for repair in plan.deferred)
    for diagnostic in diagnostics:
        if diagnostic.severity != Severity.ERROR:
            continue
        if mended[diagnostic.code] <= 0:
            return True
        mended[diagnostic.code] -= 1
    return False


# the problems without a repair named in the line that says so; the others are counted
_NAMED_UNREPAIRABLE = 3


def _analysed(doc: SessionDocument, chosen: frozenset[str], path: str) -> tuple[list[Diagnostic], Plan]:
    """The diagnostics of ``doc`` and the plan of its repairs of ``chosen`` codes. The problems are
    found once: every repair mends a diagnostic, so a document without a diagnostic of a code some
    repair makes is not searched for repairs again (a file with nothing to repair, the last round)."""
    diagnostics = document_diagnostics(doc)
    if not any(d.code in FIXABLE_CODES for d in diagnostics):
        return diagnostics, Plan()
    return diagnostics, plan_repairs(doc, chosen, path)


def _unrepairable(diagnostics: list[Diagnostic], plan: Plan) -> list[Diagnostic]:
    """The errors and warnings among a document's ``diagnostics`` that no repair of any code makes
    (those of ``plan.others``, repairs of codes not chosen, are not among them)."""
    left = Counter(plan.others)
    found = []
    for diagnostic in diagnostics:
        if diagnostic.severity > Severity.WARNING:
            continue
        if left[diagnostic.code] > 0:
            left[diagnostic.code] -= 1
            continue
        found.append(diagnostic)
    return found


def _nothing_to_repair(path: str, diagnostics: list[Diagnostic], plan: Plan, detail: str) -> str:
    """The line for a file with nothing to repair (``diagnostics``, its own): the problems it has that
    no repair makes, if any (a line that does not parse), and where to see them all; else "nothing to
    repair" and ``detail``."""
    problems = _unrepairable(diagnostics, plan)
    if not problems:
        return f"{path}: nothing to repair{detail}"
    named = "; ".join(f"line {d.line + 1}: {d.code} {d.message}" for d in problems[:_NAMED_UNREPAIRABLE])
    more = len(problems) - _NAMED_UNREPAIRABLE
    if more > 0:
        named += f"; {more:,} more"
    have = counted(len(problems), "problem has", "problems have")
    return f"{path}: nothing repaired: {have} no repair ({named}); see `pi-session check {shlex.quote(path)}`"


def _repair(
    args: argparse.Namespace, path: str, fd: int, chosen: frozenset[str], others: OtherRepairs | None
) -> tuple[int, int]:
    before = FileState.of(fd)  # what is analysed; compared with the file again right before the rename
    pi = profile_for(args.pi)
    # the lines up to where the file ended then: those appended later are copied as they come
    doc = SessionDocument.from_file(_readable_name(path, fd), pi=pi, end=before.size)
    diagnostics, plan = _analysed(doc, chosen, path)
    if args.output not in (None, "-") and same_file(args.output, before):  # (renamed so since run looked)
        _say(f"pi-session repair: {args.output}: {_IS_THE_FILE_REPAIRED}", file=sys.stderr)
        return 2, 0
    report = cast(TextIO, _Output(sys.stdout)) if args.output != "-" else sys.stderr
    # written to a file, or listed without writing (its rounds played in memory): it goes round again
    _list(path, plan, report, _RUN_AGAIN if args.output == "-" else _NEXT_ROUND)
    count = len(plan.applied)
    if not args.output and not args.in_place:
        if count:
            return _dry_run(path, doc, plan, chosen, report)
        return _report_only(path, diagnostics, plan, chosen, others, report)
    chunks = spliced(fd, before.size, plan.splices())
    kept = 0
    known = None
    if args.in_place:
        if not count:
            if others is None:
                _say(_nothing_to_repair(path, diagnostics, plan, "; the file is unchanged"), file=report)
            else:
                others.add_unrepairable(len(_unrepairable(diagnostics, plan)))
            _say_other_repairs(plan, path, report, others)
            return (1 if _leaves_an_error(diagnostics, plan) else 0), 0
        replaced = replace_in_place(path, before, chunks, backup=not args.no_backup)
        kept = replaced.kept
        known = _as_written(doc, plan, replaced)
        written = path
    elif args.output == "-":
        out = _Output(sys.stdout.buffer)
        for chunk in chunks:  # (read from the file: its errors are the file's)
            out.write(chunk)
        out.flush()
        _say(f"{counted(count, 'repair')} made", file=report)
        return (1 if _leaves_an_error(diagnostics, plan, rounds=False) else 0), count
    else:
        # (the next round analyses OUT from the document in memory, while OUT is as written)
        known = _as_written(doc, plan, _write_new(args.output, chunks, force=args.force))
        written = args.output
    left, total, last_plan, kept = _more_rounds(written, chosen, count, kept, report, pi, known)
    _say_what_was_made(written, left, total, last_plan, kept, report)
    return (1 if any(d.severity == Severity.ERROR for d in left) else 0), total


def _dry_run(
    path: str, doc: SessionDocument, plan: Plan, chosen: frozenset[str], report: TextIO
) -> tuple[int, int]:
    """Neither --in-place nor --output, with repairs to make: the rounds --in-place would make are
    played on the document, each round's repairs applied to it in memory (only the lines they touch
    read again: the file is not written, nor any copy of it), and told as --in-place tells them,
    each round's repairs, the problems left and the repairs of other codes that would then be found
    (a line split apart can give back an entry without its parent). Exit status 1: there are
    repairs to make."""
    total = len(plan.applied)
    for round_number in range(2, MAX_ROUNDS + 2):
        doc.apply_splices(plan.splices())
        diagnostics, plan = _analysed(doc, chosen, path)
        if not plan.applied or round_number > MAX_ROUNDS:
            break
        _say(f"round {round_number}, on the file as repaired so far:", file=report)
        _list(path, plan, report, _NEXT_ROUND)
        total += len(plan.applied)
    _say(
        f"{path}: {counted(total, 'repair')} to make{_stopped(plan)}; problems left then: "
        f"{_left(diagnostics)}; write them with --in-place or --output OUT",
        file=report,
    )
    _say_other_repairs(plan, path, report, None)
    return 1, total


def _left(diagnostics: list[Diagnostic]) -> str:
    return summary_text(count_by_severity(d.severity.name.lower() for d in diagnostics))


def _stopped(last_plan: Plan) -> str:
    """What a run says when its last round still found repairs (``last_plan``'s)."""
    rounds = counted(MAX_ROUNDS, "round")
    return "" if not last_plan.applied else f" (stopped after {rounds}: run again for more)"


def _say_what_was_made(
    written: str, diagnostics: list[Diagnostic], total: int, last_plan: Plan, kept: int, report: TextIO
) -> None:
    """The last lines of a repair written to ``written`` (whose ``diagnostics`` and ``last_plan``
    are those of its final analysis): the repairs made, the problems left, the repairs of other codes
    left, the bytes another process appended that were kept."""
    _say(
        f"{counted(total, 'repair')} made in {written}{_stopped(last_plan)}; problems left: {_left(diagnostics)}",
        file=report,
    )
    _say_other_repairs(last_plan, written, report, None)
    if kept:
        _say(f"{written}: kept {counted(kept, 'byte')} that another process appended meanwhile", file=report)


def _readable_name(path: str, fd: int) -> str:
    """A name for the file open as ``fd`` (the very file, even if ``path`` is replaced meanwhile)."""
    return f"/proc/self/fd/{fd}" if os.path.exists("/proc/self/fd") else path


#: a document and the state of the file it is the document of: what a round wrote, in memory
_Known = tuple[SessionDocument, FileState]


def _as_written(doc: SessionDocument, plan: Plan, replaced: Replaced) -> _Known | None:
    """``doc`` with ``plan``'s repairs applied (only the lines they touch read again), and the
    state of the file they were written to (the file repaired in place, or OUT) as ``replaced``
    left it: the document of that file while it is so; None when others appended to it
    meanwhile, or when the repairs touched most of it (it is then read again: a line applied
    costs more than a line read in the stream)."""
    if replaced.kept or replaced.state is None:
        return None
    splices = plan.splices()
    # most of its lines (a file glued everywhere), or most of its bytes (a migration rewrites
    # every line in one repair)
    if (
        len(plan.applied) > doc.line_count // 2
        or sum(s.end - s.start for s in splices) > doc.byte_size() // 2
    ):
        return None
    doc.apply_splices(splices)
    return doc, replaced.state


def _document_of(written: str, fd: int, now: FileState, known: _Known | None, pi: Profile) -> SessionDocument:
    """The document of ``written`` (open as ``fd``, as ``now`` describes it): the one the last round
    left in memory while the file is as that round left it, else the file read again."""
    if known is not None and known[1] == now:
        return known[0]
    return SessionDocument.from_file(_readable_name(written, fd), pi=pi, end=now.size)


def _more_rounds(
    written: str,
    chosen: frozenset[str],
    count: int,
    kept: int,
    report: TextIO,
    pi: Profile,
    known: _Known | None,
) -> tuple[list[Diagnostic], int, Plan, int]:
    """Repair ``written`` (our own output: the file repaired in place, or OUT) again for as long as
    that finds repairs to make (``known``: its document, if the round before kept it). Returns its
    final diagnostics, the repairs made in all, the plan of that analysis (nothing applied: the
    last round found nothing left to repair), and the bytes others appended that were kept. A round
    that fails raises :class:`_LaterRoundFailed`, which says what the rounds before it wrote."""
    round_number = 2
    try:
        for round_number in range(2, MAX_ROUNDS + 1):
            diagnostics, plan, kept_now, known = _round(written, chosen, round_number, report, pi, known)
            if not plan.applied:
                return diagnostics, count, plan, kept
            count += len(plan.applied)
            kept += kept_now
        round_number = MAX_ROUNDS + 1
        fd = os.open(written, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            doc = _document_of(written, fd, FileState.of(fd), known, pi)
        finally:
            os.close(fd)
        diagnostics, plan = _analysed(doc, chosen, written)
    except (OSError, PiSessionError) as error:
        raise _LaterRoundFailed(error, written, count, round_number) from error
    return diagnostics, count, plan, kept


def _round(
    written: str, chosen: frozenset[str], round_number: int, report: TextIO, pi: Profile, known: _Known | None
) -> tuple[list[Diagnostic], Plan, int, _Known | None]:
    """Round ``round_number`` on ``written`` (``known``: its document, if the round before kept it):
    the diagnostics and plan of the file it read (its repairs written unless there are none), the
    bytes others appended meanwhile that were kept, and the document of what it wrote, if kept."""
    fd = os.open(written, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        now = FileState.of(fd)
        after = _document_of(written, fd, now, known, pi)
        diagnostics, plan = _analysed(after, chosen, written)
        if not plan.applied:
            return diagnostics, plan, 0, None
        _say(f"round {round_number}, on the file as repaired so far:", file=report)
        _list(written, plan, report, _NEXT_ROUND)
        chunks = spliced(fd, now.size, plan.splices())
        replaced = replace_in_place(written, now, chunks)  # a backup keeps the original
        return diagnostics, plan, replaced.kept, _as_written(after, plan, replaced)
    finally:
        os.close(fd)


def _say_other_repairs(plan: Plan, path: str, report: TextIO, others: OtherRepairs | None) -> None:
    """The repairs of codes not chosen that ``plan`` found, named in a line of their own (a file
    whose only problems need --all has something to repair), or counted in ``others``: a line split
    apart can give back an entry whose parent was the cut-off line, which pi takes for the start of
    the conversation until it is re-parented (PI031)."""
    if others is not None:
        others.add(plan.others)
    elif plan.others:
        _say(f"{path}: {_other_text(plan.others)}", file=report)


def _other_text(counts: Counter[str]) -> str:
    """The repairs of other codes ``counts`` says are left, and the option that makes them."""
    count = sum(counts.values())
    of = "another code" if len(counts) == 1 else "other codes"
    return f"{counted(count, 'repair')} of {of} not made: {_other_codes(counts)}"


def _other_codes(counts: Counter[str]) -> str:
    """The codes of the repairs ``counts`` says are left, how many of each, and the option that
    makes them."""
    names = sorted(counts)
    listed = ", ".join(f"{code} ({counts[code]:,})" for code in names)
    them = "it" if sum(counts.values()) == 1 else "them"
    return f"{listed}; --codes {','.join(names)} or --all makes {them}"


def _list(path: str, plan: Plan, report: TextIO, later: str) -> None:
    """The repairs of ``plan``, one line each, in line order; ``later`` says when those left for
    later are made."""
    for planned in sorted(plan.applied, key=lambda p: p.repair.line):
        repair = planned.repair
        _say(f"{path}:{repair.line + 1}: {repair.code} {repair.title}", file=report)
    for repair in plan.deferred:
        _say(
            f"{path}:{repair.line + 1}: {repair.code} {repair.title} ({later}: it touches what a repair above changes)",
            file=report,
        )


_NEXT_ROUND = "in the next round"
_RUN_AGAIN = "not in this run: run again on the output"


def _write_new(out_path: str, chunks: Iterator[bytes], *, force: bool) -> Replaced:
    """Write ``out_path`` whole or not at all: a temporary file beside it, renamed over it (only
    onto a new name unless ``force``), so that a failed write leaves what OUT held. What was
    written, the state OUT was left in among it."""
    if not force and os.path.lexists(out_path):
        raise FileExistsError(errno.EEXIST, "it exists (--force overwrites it)", out_path)
    try:
        return rewrite_file(out_path, chunks)
    except (FsError, OSError) as error:  # the output's failure, named as such (not the session's)
        # (the library words it as Node would: said here as the system does)
        cause = error.__cause__ if isinstance(error, FsError) else error
        if not isinstance(cause, OSError):
            raise
        raise OSError(cause.errno, cause.strerror, out_path) from error
