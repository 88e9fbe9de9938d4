"""The commands that show a session (tree, context, demo) never change it, and stop quietly when
the reader of their output goes away.

``SessionManager.open`` writes at load time as pi does (a v1/v2 file is migrated and rewritten, a
missing final newline is added); a command that only looks must not (the user did not ask for it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import EXIT_BROKEN_PIPE

V1_LINES = [
    {"type": "session", "id": "old-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
    {
        "type": "message",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hello"},
    },
    {
        "type": "message",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hi there"}]},
    },
]


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd),
    )


@pytest.fixture(params=["v1", "no-final-newline"])
def file_pi_would_rewrite(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    text = "\n".join(json.dumps(line) for line in V1_LINES)
    if request.param == "v1":
        text += "\n"
    else:  # a current file whose last line lacks its newline: pi's open adds it
        lines = [dict(line, version=3) if line["type"] == "session" else line for line in V1_LINES]
        lines[1] = dict(lines[1], id="a1b2c3d4", parentId=None)
        lines[2] = dict(lines[2], id="e5f6a7b8", parentId="a1b2c3d4")
        text = "\n".join(json.dumps(line) for line in lines)
    path.write_text(text)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("tree", "assistant: hi there"),
        ("context", "hi there"),
        ("demo", "assistant          hi there"),
        ("stats", "messages: 2 (assistant 1, user 1)"),
    ],
)
def test_showing_a_session_leaves_its_file_as_it_was(
    file_pi_would_rewrite: Path, command: str, shown: str
) -> None:
    before = file_pi_would_rewrite.read_bytes()
    done = _cli(command, str(file_pi_would_rewrite), cwd=file_pi_would_rewrite.parent)
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout
    assert file_pi_would_rewrite.read_bytes() == before
    assert sorted(p.name for p in file_pi_would_rewrite.parent.iterdir()) == ["session.jsonl"]


def test_a_context_without_a_named_model_says_so(file_pi_would_rewrite: Path) -> None:
    done = _cli("context", str(file_pi_would_rewrite), cwd=file_pi_would_rewrite.parent)
    # the messages name no provider or model
    assert done.stdout.startswith("# Context of session.jsonl at the leaf\n\n- model: unknown\n")


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    ]
    parent = None
    for n in range(3000):  # a tree drawing far longer than a pipe's buffer
        entry_id = f"{n:08x}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": f"message number {n} " + "words " * 10},
            }
        )
        parent = entry_id
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    reader = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", "tree", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(tmp_path),
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().decode().strip() == str(path)
    reader.stdout.close()  # like `| head -1`
    errors = reader.stderr.read().decode()
    reader.stderr.close()
    assert reader.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert errors == ""


@pytest.mark.parametrize("command", ["tree", "context"])
def test_a_file_that_cannot_be_shown_is_one_line_on_stderr(tmp_path: Path, command: str) -> None:
    not_a_session = tmp_path / "notes.txt"
    not_a_session.write_text("shopping list\n")
    cases = {
        str(tmp_path / "missing.jsonl"): f"{tmp_path / 'missing.jsonl'}: no such file",
        str(tmp_path): f"{tmp_path}: is a directory (give a session file)",
        str(not_a_session): f"Session file is not a valid pi session: {not_a_session}"
        f" (`pi-session check {not_a_session}` says why)",
    }
    for path, message in cases.items():
        done = _cli(command, path, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"pi-session {command}: {message}\n")
    assert not (tmp_path / "missing.jsonl").exists()  # pi's open would start a session there
    assert not_a_session.read_text() == "shopping list\n"


def test_a_fifo_is_refused_without_being_opened_by_every_command(tmp_path: Path) -> None:
    """Reading a FIFO waits for a writer: every command refuses one at once (a directory that
    check walks reports it among the others), and nothing ever opens it."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "good.jsonl").write_text(S.header() + "\n" + S.user("a", None) + "\n")
    refused = f"{fifo}: is a FIFO, not a session file"
    for args in (["tree"], ["context"], ["repair"], ["repair", "--in-place"], ["demo"]):
        done = _cli(*args, str(fifo), cwd=tmp_path, timeout=30)
        assert done.returncode == 2 and refused in done.stderr, (args, done.stderr)
    done = _cli("check", str(tmp_path), cwd=tmp_path, timeout=30)
    assert done.returncode == 1
    assert f"{fifo}: error: cannot read the file: is a FIFO, not a session file" in done.stdout
    assert f"{tmp_path / 'good.jsonl'}: ok" in done.stdout
    with pytest.raises(OSError):  # no reader ever opened it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_control_characters_of_a_session_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    """An ESC sequence in a message, a label, an id, the cwd or the session's name would set the title or
    the colours of the terminal that shows the tree or the problems: they are printed escaped."""
    attack = "\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\u2028"
    path = tmp_path / "s.jsonl"
    lines = [
        S.header(cwd="/w" + attack),
        S.user("a1", None, "hi " + attack),
        S.label("l1", "a1", "a1", "lab" + attack),
        S.session_info("n1", "l1", "name" + attack),
        S.user("a2", "nope" + attack, "x"),
    ]
    path.write_text("\n".join(lines) + "\n")
    for args in (["tree", "--no-index"], ["check", "--no-index"], ["demo"]):
        done = _cli(*args, str(path), cwd=tmp_path)
        assert done.stdout and not any(c in done.stdout for c in "\x1b\x07\u2028"), args
        assert "\\x1b]0;PWNED\\x07" in done.stdout
    tree = _cli("tree", "--no-index", str(path), cwd=tmp_path).stdout
    assert "name\\x1b]0;PWNED" in tree and "[lab\\x1b" in tree  # the name and the label too


def test_ids_with_control_characters_keep_their_path_and_leaf_marks(tmp_path: Path) -> None:
    """The marks of the leaf's path are told by the ids as the session holds them: an id with a
    control character (escaped in the drawing) is on the path and is the leaf all the same."""
    root, leaf = "r\x01oot", "le\x1baf"
    path = tmp_path / "s.jsonl"
    lines = [S.header(), S.user(root, None, "first"), S.assistant(leaf, root, "second")]
    path.write_text("\n".join(lines) + "\n")
    drawn = _cli("tree", "--no-index", str(path), cwd=tmp_path).stdout.splitlines()
    rows = [line for line in drawn if "first" in line or "second" in line]
    assert rows[0].startswith("* ") and rows[1].startswith("* ") and rows[1].endswith("◀ leaf"), drawn


def test_the_leaf_and_its_path_are_told_by_pi_s_equality_of_ids(tmp_path: Path) -> None:
    """pi marks the leaf with ``===`` and the path's entries by a Set of ids: an entry whose id is
    the number 1 is neither the leaf "1" (a string) nor on its path, though both print as 1."""
    path = tmp_path / "s.jsonl"
    # (builders' user() with a number for an id: the entry as pi would read one)
    lines = [S.header(), S.user(1, None, "the number"), S.user("1", None, "the string")]  # type: ignore[arg-type]
    path.write_text("\n".join(lines) + "\n")
    for args in (["tree", "--no-index"], ["tree"]):
        drawn = _cli(*args, str(path), cwd=tmp_path).stdout.splitlines()
        number = next(line for line in drawn if "the number" in line)
        string = next(line for line in drawn if "the string" in line)
        assert not number.lstrip("├└─ ").startswith("*") and not number.endswith("◀ leaf"), drawn
        assert string.lstrip("├└─ ").startswith("*") and string.endswith("◀ leaf"), drawn


def test_a_width_below_one_is_refused(tmp_path: Path) -> None:
    """A width of 0 or less cut nothing (a negative slice keeps almost the whole preview)."""
    for width in ("0", "-5"):
        done = _cli("tree", "--width", width, cwd=tmp_path)
        assert done.returncode == 2 and f"must be at least 1, not {width}" in done.stderr
    shown = _cli("tree", "--width", "1", "--no-index", cwd=tmp_path)
    assert shown.returncode == 0 and all(len(line) < 40 for line in shown.stdout.splitlines()[4:])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["tree", "context", "check"])
def test_output_to_a_full_disk_is_one_line_on_stderr(tmp_path: Path, command: str) -> None:
    sessions = tmp_path / "agent" / "sessions" / "--work--"
    sessions.mkdir(parents=True)
    (sessions / "s.jsonl").write_text(S.header() + "\n" + S.user("a1", None, "hi") + "\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pi_session_server", command, "--no-index"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=str(tmp_path),
            env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},  # check's default
        )
    assert (done.returncode, done.stderr) == (2, f"pi-session {command}: No space left on device\n")


def test_an_empty_file_is_shown_as_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    done = _cli("tree", str(empty), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"{empty}\nempty file: no session in it yet\n")
    assert empty.read_bytes() == b""  # pi's open would write a header into it


def test_a_session_with_only_a_header_says_it_has_no_entries(tmp_path: Path) -> None:
    """pi's /tree says "No entries in session" of it: the commands say the same, not "leaf null"."""
    path = tmp_path / "new.jsonl"
    path.write_text(S.header(session_id="s-new") + "\n")
    for index in ("--no-index", None, None):  # drawn, then drawn and kept, then printed from what was kept
        done = _cli("tree", *filter(None, [index]), str(path), cwd=tmp_path)
        assert (done.returncode, done.stdout) == (0, f"{path}\nsession s-new\nNo entries in session\n")
    done = _cli("demo", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "No entries in session" in done.stdout and "null" not in done.stdout
    assert "Context (no entries):\n  0 messages," in done.stdout


def test_an_entry_of_a_type_pi_does_not_know_is_named_in_the_tree(tmp_path: Path) -> None:
    path = tmp_path / "newer.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "hologram", "id": "h1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = _cli("tree", str(path), cwd=tmp_path)
    assert done.stdout.endswith("* [hologram]  ◀ leaf\n")  # pi's own selector shows an empty line


@pytest.mark.parametrize("command", ["tree", "context"])
def test_lines_pi_skips_are_named_on_stderr(tmp_path: Path, command: str):
    a, b = S.user("aaaa0001", None, "first"), S.assistant("bbbb0002", "aaaa0001", "second")
    c, d = S.user("cccc0003", "bbbb0002", "third"), S.user("dddd0004", "cccc0003", "fourth")
    crashed = tmp_path / "crashed.jsonl"
    lines = [S.header(), a, b[:57] + c, "null", "[1]", "{", d]
    crashed.write_text("\n".join(lines) + "\n")
    done = _cli(command, str(crashed), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = done.stderr.splitlines()
    assert report[0] == f"pi-session {command}: {crashed}: 4 lines skipped, as pi skips them:"
    assert report[1].startswith("  line 3: 2 lines glued together (a cut-off line, then entry `cccc0003`")
    assert report[1].endswith("pi skips the whole line, and with it entry cccc0003")
    assert report[2:4] == [
        "  line 4: line is a falsy JSON value and is ignored",
        "  line 5: line is not a JSON object and is ignored",
    ]
    assert report[4:] == [
        "  and 1 more",
        f"  (`pi-session check {crashed}` lists every problem; `pi-session repair {crashed}` mends what it can)",
    ]
    assert "skipped" not in done.stdout  # the output itself stays the session's, for pipes
    assert crashed.read_text() == "\n".join(lines) + "\n"


def test_a_whole_file_says_nothing_on_stderr(tmp_path: Path):
    done = _cli("tree", cwd=tmp_path)  # the bundled example
    assert done.returncode == 0 and done.stderr == ""


def test_tree_ids_show_what_context_leaf_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``context --leaf ID`` needs an entry's id, which the tree did not show: ``--ids`` puts each
    entry's id before its preview, as demo does, and the rows still fit a narrow terminal."""
    from pi_session_server.commands._common import example_session_path

    ids = [json.loads(line)["id"] for line in Path(example_session_path()).read_text().splitlines()[1:]]
    done = _cli("tree", "--ids", "--no-index", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.split("\n\n", 1)[1].splitlines()
    assert [row.lstrip("│├└─ *").split(" ")[0] for row in rows] == ids
    assert "* 1e2f3a4b user: The test suite fails" in done.stdout
    context = _cli("context", "--leaf", "1e2f3a4b", "--no-index", cwd=tmp_path)
    assert context.returncode == 0 and "at entry 1e2f3a4b" in context.stdout
    monkeypatch.setenv("COLUMNS", "40")
    narrow = _cli("tree", "--ids", "--no-index", cwd=tmp_path)
    rows = narrow.stdout.split("\n\n", 1)[1].splitlines()
    assert rows and max(map(len, rows)) <= 40
    assert rows[3].startswith("* 1e2f3a4b user: ")
    copy = tmp_path / "my session.jsonl"
    copy.write_text(Path(example_session_path()).read_text())
    unknown = _cli("context", "--leaf", "nope", str(copy), cwd=tmp_path)
    assert unknown.returncode == 1
    assert unknown.stderr.endswith(f"(`pi-session tree --ids '{copy}'` shows the ids)\n")


@pytest.mark.parametrize("command", ["context", "demo"])
@pytest.mark.parametrize(
    ("leaf", "said"),
    [
        ("nope", "Entry nope not found (`pi-session tree --ids` shows the ids)"),
        ("\x1b[2J", "Entry \\x1b[2J not found (`pi-session tree --ids` shows the ids)"),
        ("", "--leaf '' names no entry (pi takes an empty id for none)"),
    ],
    ids=["unknown", "escape", "empty"],
)
def test_context_at_an_unknown_entry_says_so(tmp_path: Path, command: str, leaf: str, said: str):
    # pi builds the last entry's context for an id it does not know, and for an empty one (none to
    # it): both commands name the mistake alike
    done = _cli(command, "--leaf", leaf, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"pi-session {command}: {said}\n")


def test_nested_duplicate_ids_draw_each_subtree_once(tmp_path: Path) -> None:
    """Each level's two entries share one id: pi's tree hangs the node twice under the level above
    and a drawing of every place doubles per level (40 levels: a trillion rows). Each node's
    subtree is drawn in one place (docs/DEVIATIONS.md D23)."""
    lines = [S.header(), S.user("r", None, "root")]
    for level in range(40):
        lines += [S.user(f"d{level}", f"d{level - 1}" if level else "r", f"level {level}")] * 2
    path = tmp_path / "twins.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = _cli("tree", "--no-index", str(path), cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4 + 1 + 2 * 40  # the head, then a row per place


def test_the_tree_counts_one_entry_as_one_and_many_with_separators(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(S.header() + "\n" + S.user("a1", None, "hi") + "\n")
    assert "\n1 entry, leaf a1\n" in _cli("tree", "--no-index", str(path), cwd=tmp_path).stdout
    lines, parent = [S.header()], None
    for n in range(1000):
        lines.append(S.user(f"e{n}", parent, "hi"))
        parent = f"e{n}"
    path.write_text("\n".join(lines) + "\n")
    assert "\n1,000 entries, leaf e999\n" in _cli("tree", "--no-index", str(path), cwd=tmp_path).stdout


def test_ctrl_c_stops_a_command_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_session_server import cli
    from pi_session_server.commands import check

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(check, "run", interrupted)
    assert cli.main(["check", "--no-index"]) == 128 + 2  # what a shell reports for Ctrl-C
    assert capsys.readouterr().err == ""


# A command during which a finalizer raises FINALIZER's error, in a process of its own.
_ERROR_IN_A_FINALIZER = """
import gc, os, signal, sys
from pi_session_server.commands import check

class SendsCtrlC:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGINT)  # (raised in here, which Python 3.11 wraps in a RuntimeError)

class Finalized:
    def __del__(self):
        FINALIZER

def interrupted(args):
    print("checked so far")
    Finalized()
    gc.collect()
    print("went on after the finalizer")
    return 0

check.run = interrupted
from pi_session_server.cli import main; sys.exit(main())
"""


def _check_in_a_process(script: str) -> tuple[int, str, str]:
    """``check`` run in a process of its own by ``script`` (Python, given the command's arguments):
    its status, stdout and stderr. It starts with Ctrl-C at its default, as from a terminal (a CI
    job may have it ignored, which the child would inherit: a SIGINT would then do nothing)."""
    import signal

    done = subprocess.run(
        [sys.executable, "-c", script, "check", "--no-index"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "finalizer",
    [
        pytest.param("raise KeyboardInterrupt", id="a Ctrl-C"),
        pytest.param("class Owner: attribute = SendsCtrlC()", id="a real SIGINT Python wrapped"),
        pytest.param(
            "raise RuntimeError('closing') from KeyboardInterrupt()", id="an error raised from a Ctrl-C"
        ),
    ],
)
def test_ctrl_c_in_a_finalizer_ends_the_process_by_the_signal(finalizer: str) -> None:
    import signal

    # Python printed "Exception ignored in ... __del__" and the command went on, to status 0 (a
    # wrapped Ctrl-C did so after the first one was fixed)
    script = _ERROR_IN_A_FINALIZER.replace("FINALIZER", finalizer)
    assert _check_in_a_process(script) == (-signal.SIGINT, "checked so far\n", "")


def test_another_error_in_a_finalizer_is_printed_and_the_command_goes_on() -> None:
    script = _ERROR_IN_A_FINALIZER.replace("FINALIZER", "raise RuntimeError('closing')")
    status, out, err = _check_in_a_process(script)
    assert (status, out) == (0, "checked so far\nwent on after the finalizer\n")
    assert err.startswith("Exception ignored in") and err.endswith("RuntimeError: closing\n")


def _cli_without(fd: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``pi-session ARGS`` started with descriptor ``fd`` closed (``>&-``, ``2>&-`` in a shell)."""
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(cwd),
        preexec_fn=lambda: os.close(fd),
    )


def test_a_closed_stdout_is_one_line_on_stderr_and_status_2(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(S.header() + "\n" + S.user("u1", None, "hi") + "\n")
    done = _cli_without(1, "tree", "--no-index", str(path), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "pi-session tree: stdout is closed\n")


def test_with_stderr_closed_messages_never_reach_stdout(tmp_path: Path) -> None:
    missing = _cli_without(2, "tree", "--no-index", str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (2, "")
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(S.header() + "\n" + S.user("u1", None, "hi") + "\n{cut")
    checked = _cli_without(2, "check", "--no-index", "--json", "--progress", str(damaged), cwd=tmp_path)
    assert checked.returncode == 1  # the file's error, not a crash
    assert json.loads(checked.stdout)["totals"]["filesWithErrors"] == 1


def test_ctrl_c_while_the_command_is_loaded_stops_it_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # parsing the command line imports the command's module (check's and repair's take a while):
    # a Ctrl-C then is as quiet as one while the command runs
    from pi_session_server import cli

    def interrupted_while_importing(argv: list[str]) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_parsers", interrupted_while_importing)
    assert cli.main(["check", "--no-index"]) == 128 + 2
    assert capsys.readouterr().err == ""


# A command that prints a line, then is stopped by Ctrl-C, in a process of its own.
_INTERRUPTED_COMMAND = """
import sys
from pi_session_server.commands import check

def interrupted(args):
    print("checked so far")
    raise KeyboardInterrupt

check.run = interrupted
"""


@pytest.mark.parametrize(
    "start",
    [
        "from pi_session_server.cli import main; sys.exit(main())",  # the pi-session script
        "import runpy; runpy.run_module('pi_session_server', run_name='__main__')",  # python -m
    ],
)
def test_ctrl_c_ends_the_process_by_the_signal_so_a_shell_loop_stops(start: str) -> None:
    import signal

    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_COMMAND + start, "check", "--no-index"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # a shell goes on with a loop after a command that exited, even with 130, and stops after one
    # the signal killed
    assert done.returncode == -signal.SIGINT
    assert done.stdout == "checked so far\n"  # what was printed before is not lost
    assert done.stderr == ""


def _wrapped_ctrl_c(wraps: int) -> BaseException:
    """A Ctrl-C as Python 3.11 reports one that lands in a ``__set_name__`` while a module imports
    (msgspec imports uuid, which imports platform): a RuntimeError raised from the KeyboardInterrupt
    (``wraps`` times over: a wrapper may be wrapped again)."""
    error: BaseException = KeyboardInterrupt()
    for _ in range(wraps):
        wrapper = RuntimeError("Error calling __set_name__ on 'cached_property' instance")
        wrapper.__cause__ = error
        error = wrapper
    return error


@pytest.mark.parametrize(
    ("moment", "wraps"),
    [("as the command runs", 1), ("as the command runs", 2), ("as the command is loaded", 1)],
)
def test_an_error_raised_from_a_ctrl_c_stops_the_command_as_the_ctrl_c_does(
    moment: str, wraps: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_session_server import cli
    from pi_session_server.commands import check

    def interrupted(*args: object) -> object:
        raise _wrapped_ctrl_c(wraps)

    where = (check, "run") if moment == "as the command runs" else (cli, "_parsers")
    monkeypatch.setattr(*where, interrupted)
    # was the RuntimeError's traceback, and status 1 from the program
    assert cli.main(["check", "--no-index"]) == 128 + 2
    assert capsys.readouterr().err == ""


def _raised_while_a_ctrl_c_was_handled() -> RuntimeError:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("failed as it stopped") from None
    except RuntimeError as error:
        assert isinstance(error.__context__, KeyboardInterrupt)
        return error


def _its_own_cause() -> RuntimeError:
    error = RuntimeError("failed")
    error.__cause__ = error  # (any code may set it so: the look for a Ctrl-C ends all the same)
    return error


@pytest.mark.parametrize(
    "error",
    [lambda: RuntimeError("failed"), _raised_while_a_ctrl_c_was_handled, _its_own_cause],
    ids=["a RuntimeError", "one raised while a Ctrl-C was handled", "one that is its own cause"],
)
def test_an_error_not_raised_from_a_ctrl_c_is_still_a_failure(
    error: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_session_server import cli
    from pi_session_server.commands import check

    raised = error()  # type: ignore[operator]

    def failed(args: object) -> int:
        raise raised

    monkeypatch.setattr(check, "run", failed)
    with pytest.raises(RuntimeError) as caught:
        cli.main(["check", "--no-index"])
    assert caught.value is raised  # (Python prints its traceback, status 1)
    assert capsys.readouterr().err == ""


# A command stopped by a Ctrl-C that Python wrapped in a RuntimeError, in a process of its own.
_INTERRUPTED_WRAPPED = """
import sys
from pi_session_server.commands import check

def interrupted(args):
    print("checked so far")
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise RuntimeError("Error calling __set_name__ on 'cached_property' instance") from interrupt

check.run = interrupted
from pi_session_server.console import main; sys.exit(main())
"""


def test_an_error_raised_from_a_ctrl_c_ends_the_process_by_the_signal() -> None:
    import signal

    # was status 1 and the RuntimeError's traceback
    assert _check_in_a_process(_INTERRUPTED_WRAPPED) == (-signal.SIGINT, "checked so far\n", "")


def test_version_names_the_package_and_the_pi_releases(capsys: pytest.CaptureFixture[str]) -> None:
    from pi_session_server import __version__, cli

    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    assert (
        capsys.readouterr().out
        == f"pi-session {__version__} (behaves like pi 1.6.0; --pi 0.86.1 on request)\n"
    )
