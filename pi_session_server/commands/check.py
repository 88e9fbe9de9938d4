"""``pi-session check [PATH...] [--pi VERSION]``: the language server's diagnostics in the terminal,
the files read as pi release VERSION reads them (the library's default release unless told).

Each problem is printed as ``file:line:column: severity code message`` (1-based; columns count
characters), followed by a summary per file and a total. ``--json`` prints one JSON document
instead (written as it goes). The exit status is 1 when any file has an error, 2 when a path does
not exist (the others are checked all the same). Directories are searched for ``*.jsonl`` files
recursively; with no path, where pi keeps sessions is checked (the directory pi's command line
chooses, session/cli_session_dir.py, else every session under the agent directory). Files are
analysed one at a time (commands/check_analysis.py), each line read once and kept as its facts and
its place in the file (bytes are read again for the lines a problem is on), so memory stays small
whatever the size or number of files; the problems of a file unchanged since it was last checked
are printed from what was kept then (commands/check_report.py). A progress line is shown on stderr
when it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, TextIO

from ..render.glyphs import cut_start
from ..render.terminal_text import one_terminal_line
from ._common import (
    CommandError,
    Progress,
    add_index_argument,
    add_pi_argument,
    add_session_dir_argument,
    appended_meanwhile,
    broken_link_problem,
    counted,
)
from .check_report import SEVERITIES, FileReport, Finding, keep_the_cache_within_its_limits, report

#: how a problem's severity is printed in the text form
_SHORT_NAMES = {"information": "info"}
#: the columns of the progress line that show the file being checked
PROGRESS_PATH_WIDTH = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="session files or directories (default: where pi keeps sessions)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument(
        "--min-severity",
        type=_severity_named,
        choices=SEVERITIES,
        default="hint",
        metavar="{" + ",".join(_SHORT_NAMES.get(name, name) for name in SEVERITIES) + "}",
        help="report only problems at least this severe (default: hint, i.e. everything)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="do not print a summary for files without problems"
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="always show progress on stderr",
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    add_session_dir_argument(parser)
    add_pi_argument(parser)
    add_index_argument(
        parser,
        "neither read nor keep the problems of an unchanged file in the cache directory",
    )


def _severity_named(name: str) -> str:
    """The severity ``name`` names: the text form's short names (``info``) as well as the JSON's.
    An unknown name is refused in the names ``--help`` shows (argparse's own refusal would list
    the JSON's)."""
    severity = {short: full for full, short in _SHORT_NAMES.items()}.get(name, name)
    if severity not in SEVERITIES:
        import argparse

        printed = ", ".join(repr(_SHORT_NAMES.get(known, known)) for known in SEVERITIES)
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {printed})")
    return severity


# ---------------------------------------------------------------------- finding files


class FoundFiles(NamedTuple):
    files: list[str]  # to check, in a stable order
    missing: list[str]  # paths that do not exist
    empty: list[str]  # directories without a session file


def session_files(paths: list[str]) -> FoundFiles:
    """The session files at ``paths`` (files, and the ``*.jsonl`` files under directories)."""
    found = FoundFiles([], [], [])
    for path in paths:
        if os.path.isdir(path):
            before = len(found.files)
            found.files.extend(_walk(path))
            if len(found.files) == before:
                found.empty.append(path)
        elif os.path.exists(path):
            found.files.append(path)
        else:
            found.missing.append(path)
    return found


def say_what_was_not_found(command: str, found: FoundFiles, given: bool) -> None:
    """Name on stderr the paths given that do not exist, and the directories with no session file
    (a summary of "0 files" alone reads as if they had been checked)."""
    for path in found.missing:
        shown = one_terminal_line(path)  # a file's name may hold a line break or an escape sequence
        if given:
            problem = broken_link_problem(path) if os.path.lexists(path) else None
            print(f"pi-session {command}: {shown}: {problem or 'no such file or directory'}", file=sys.stderr)
        else:
            print(
                f"pi-session {command}: {shown}: no such directory (where pi keeps its sessions)",
                file=sys.stderr,
            )
    for path in found.empty:
        print(
            f"pi-session {command}: {one_terminal_line(path)}: no session file (*.jsonl) in it",
            file=sys.stderr,
        )


def _walk(root: str) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".jsonl"):
                yield os.path.join(folder, name)


def _paths_to_check(args: argparse.Namespace) -> list[str]:
    """The paths given, else where pi keeps sessions (``--session-dir`` says where, with no path)."""
    if args.paths and args.session_dir:
        raise CommandError("give paths or --session-dir, not both")
    return list(args.paths) or default_paths(args.session_dir)


def default_paths(session_dir: str | None = None) -> list[str]:
    """Where pi keeps sessions: the directory its command line chooses (``session_dir`` being
    ``--session-dir``), else the sessions of every directory under the agent directory."""
    from ..session.cli_session_dir import cli_session_dir
    from ..session.paths import get_sessions_root

    return [cli_session_dir(session_dir) or get_sessions_root()]


# ---------------------------------------------------------------------- one file


def count_by_severity(severities: Iterable[str]) -> dict[str, int]:
    """How many of ``severities`` (names: "error", "warning", ...) are of each."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for severity in severities:
        counts[severity] += 1
    return counts


def summary_text(counts: dict[str, int]) -> str:
    parts = [
        counted(counts[name], label)
        for name, label in (
            ("error", "error"),
            ("warning", "warning"),
            ("information", "info"),
            ("hint", "hint"),
        )
        if counts[name]
    ]
    return ", ".join(parts) if parts else "ok"


# ---------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    paths = _paths_to_check(args)
    found_files = session_files(paths)
    say_what_was_not_found("check", found_files, given=bool(args.paths))
    files = found_files.files
    reported = SEVERITIES[: SEVERITIES.index(args.min_severity) + 1]
    # (one file too: a session of hundreds of megabytes takes seconds to analyse)
    progress = Progress(sys.stderr.isatty() if args.progress is None else args.progress)
    out = sys.stdout
    totals = {"files": 0, "filesWithErrors": 0, **dict.fromkeys(SEVERITIES, 0)}
    if args.json:
        out.write('{"files":[')
    # what each file held when the command started is what is checked: one another program
    # appends to faster than it is read is checked to an end all the same
    sizes = [size_now(path) for path in files]
    for index, path in enumerate(files):
        # a long path shown by its end, which names the file
        name = (
            cut_start(path, PROGRESS_PATH_WIDTH, progress.ellipsis, progress.encoding)
            if progress.enabled
            else path
        )
        progress.show(f"[{index:,}/{len(files):,}] {name}")
        found = report(path, args.pi, args.index, sizes[index])
        grown = _appended_since(path, sizes[index])
        findings = found.findings
        being_written = False  # whether the size at the start cut a line its writer was writing
        if grown:
            findings, being_written = _without_the_line_being_written(findings)
        findings = [f for f in findings if f.severity in reported]
        counts = count_by_severity(f.severity for f in findings)
        if found.failure is not None:
            counts["error"] += 1
        totals["files"] += 1
        totals["filesWithErrors"] += 1 if counts["error"] else 0
        for name, n in counts.items():
            totals[name] += n
        progress.clear()
        if grown:
            print(
                f"pi-session check: {one_terminal_line(path)}: "
                + appended_meanwhile("checked", "check", last_line_left=being_written),
                file=sys.stderr,
            )
        if args.json:
            out.write(
                ("," if index else "")
                + json.dumps(
                    _file_json(path, FileReport(findings, found.failure), counts, grown),
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
            )
        else:
            _print_file(out, path, FileReport(findings, found.failure), counts, args.quiet)
    progress.clear()
    keep_the_cache_within_its_limits(args.index)
    if args.json:
        out.write('],"totals":' + json.dumps(totals, separators=(",", ":")) + "}\n")
    else:
        print(_total_text(totals, len(found_files.missing) if args.paths else 0), file=out)
    out.flush()
    if found_files.missing and args.paths:
        return 2  # (the files there were checked all the same)
    return 1 if totals["error"] else 0


def size_now(path: str) -> int | None:
    """The size of the file at ``path`` now (None where it cannot be told: its read says why)."""
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return None


def _appended_since(path: str, size: int | None) -> bool:
    """Whether the file at ``path`` is longer now than ``size`` (it was appended to)."""
    now = size_now(path)
    return size is not None and now is not None and now > size


def _without_the_line_being_written(findings: list[Finding]) -> tuple[list[Finding], bool]:
    """``findings``, those of a file that grew while it was checked, without what says its last
    line is incomplete (cut short, PI002, or without its newline, PI005): the size the file had at
    the start ended in the middle of a line its writer was writing, which the bytes appended since
    finish. (A writer that had stopped there for good has the next line glued to it: PI006, which
    the next check reports.) And whether any was left out."""
    from ..analysis.codes import NO_FINAL_NEWLINE, TRUNCATED_LAST_LINE  # (only for a grown file)

    kept = [f for f in findings if f.code not in (TRUNCATED_LAST_LINE, NO_FINAL_NEWLINE)]
    return kept, len(kept) < len(findings)


def _total_text(totals: dict[str, int], not_found: int) -> str:
    """The last line: the files checked and their problems, and the paths given that were not
    found (then not "ok": what was asked was not all checked). pi's own session directory not
    there yet is no such path: pi has saved no session, and there is nothing to check."""
    checked = totals["files"]
    text = f"{counted(checked, 'file')} checked"
    summary = summary_text({k: totals[k] for k in SEVERITIES})
    if not not_found:
        return f"{text}: {summary}"
    missing = f"{counted(not_found, 'path')} not found"
    return f"{text}: {summary}; {missing}" if summary != "ok" else f"{text}; {missing}"


def _print_file(out: TextIO, path: str, found: FileReport, counts: dict[str, int], quiet: bool) -> None:
    path = one_terminal_line(path)  # a file's name may hold a line break or an escape sequence
    if found.failure is not None:
        print(f"{path}: error: cannot read the file: {found.failure}", file=out)
        return
    for f in found.findings:
        severity = _SHORT_NAMES.get(f.severity, f.severity)
        print(f"{path}:{f.line}:{f.column}: {severity} {f.code} {one_terminal_line(f.message)}", file=out)
    if found.findings or not quiet:
        print(f"{path}: {summary_text(counts)}", file=out)


def _file_json(path: str, found: FileReport, counts: dict[str, int], grown: bool) -> dict[str, Any]:
    items = [
        {
            "line": f.line,
            "column": f.column,
            "endColumn": f.end_column,
            "severity": f.severity,
            "code": f.code,
            "message": f.message,
            # where an editor that follows the LSP places it: lines counted as it counts them
            "range": {
                "start": {"line": f.lsp_line, "character": f.lsp_character},
                "end": {"line": f.lsp_end_line, "character": f.lsp_end_character},
            },
        }
        for f in found.findings
    ]
    result: dict[str, Any] = {"path": path, "summary": counts, "diagnostics": items}
    if found.failure is not None:
        result["error"] = found.failure
    if grown:
        result["appendedMeanwhile"] = True
    return result
