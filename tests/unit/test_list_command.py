"""``pi-session list``: the sessions a user can open, found where pi keeps them, newest first, each
with its name or first message and its file; never creating or changing anything."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.session.listing import list_all_sessions
from pi_session_server.session.paths import default_session_dir_path


def _session(path: Path, session_id: str, first: str, *, name: str | None = None, when: int) -> Path:
    """A session whose messages were sent at ``when`` (epoch seconds): what pi dates it by."""
    lines = [
        S.header(session_id=session_id, cwd="/w"),
        json.dumps(
            S.message_entry("u1", None, S.user_message(first, when * 1000), "2026-11-30T09:13:48.180Z")
        ),
        S.assistant("a1", "u1", "ok"),
    ]
    if name is not None:
        lines.append(S.session_info("n1", "a1", name))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)
    return agent


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["list", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_current_directorys_sessions_newest_first_with_name_or_first_message(
    agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = Path(default_session_dir_path(os.getcwd()))
    old = _session(sessions / "a.jsonl", "s-old", "fix the\nparser   bug", when=1_700_000_000)
    new = _session(sessions / "b.jsonl", "s-new", "ignored", name="release notes", when=1_800_000_000)
    elsewhere = _session(agent_dir / "sessions" / "--other--" / "c.jsonl", "s-other", "x", when=1_900_000_000)
    code, out, _ = _run(capsys)
    assert code == 0
    rows = out.splitlines()
    assert len(rows) == 2  # not the other directory's session
    assert rows[0].startswith(time.strftime("%Y-%m-%d %H:%M", time.localtime(1_800_000_000)))
    assert rows[0].rstrip().endswith(str(new)) and '"release notes"' in rows[0] and "2 messages" in rows[0]
    assert rows[1].rstrip().endswith(str(old)) and "fix the parser bug" in rows[1]
    code, out, _ = _run(capsys, "--all")
    assert code == 0 and [row.split()[-1] for row in out.splitlines()] == [str(elsewhere), str(new), str(old)]


def test_no_session_directory_lists_nothing_and_creates_none(
    agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys)
    assert code == 0 and out == ""
    assert "no sessions of" in err
    assert not agent_dir.exists()  # pi's list would have made the directory
    code, out, _ = _run(capsys, "--json")
    assert code == 0 and json.loads(out) == []


def test_a_directory_as_json_is_pis_infos_without_the_whole_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    _session(folder / "a.jsonl", "s-a", "first question " * 40, when=1_700_000_000)
    _session(folder / "b.jsonl", "s-b", "second", name="named", when=1_700_000_100)
    (folder / "not-a-session.jsonl").write_text("hello\n")
    code, out, _ = _run(capsys, str(folder), "--json")
    assert code == 0
    expected = [info.to_json() for info in list_all_sessions(str(folder))]
    for info in expected:
        del info["allMessagesText"]
    assert json.loads(out) == expected
    assert [info["id"] for info in expected] == ["s-b", "s-a"]


def test_titles_are_one_terminal_line_cut_to_the_width(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    _session(folder / "a.jsonl", "s-a", "\x1b]0;owned\x07 " + "word " * 30, when=1_700_000_000)
    code, out, _ = _run(capsys, str(folder), "--width", "20")
    assert code == 0
    assert "\x1b" not in out and "\\x1b]0;owned\\x07" in out
    title = out.split("messages  ", 1)[1].split("  /", 1)[0]
    assert len(title) == 20 and title.endswith("…")


@pytest.mark.parametrize(
    ("args", "message"),
    [(["nowhere"], "no such directory"), (["DIR", "--all"], "not both")],
)
def test_refused_arguments_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    args = [
        str(tmp_path) if arg == "DIR" else str(tmp_path / arg) if arg == "nowhere" else arg for arg in args
    ]
    code, out, err = _run(capsys, *args)
    assert code == 2 and out == "" and message in err


def test_a_terminal_sees_how_far_the_listing_read_then_the_line_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    folder = tmp_path / "sessions"
    for n in range(3):
        _session(folder / f"{n}.jsonl", f"s{n}", "question", when=1_700_000_000 + n)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = _run(capsys, str(folder))
    assert code == 0 and len(out.splitlines()) == 3
    shown = "pi-session list: 3 of 3 files read"
    assert f"\r{shown}" in err and err.endswith("\r" + " " * len(shown) + "\r")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    code, out, err = _run(capsys, str(folder))
    assert code == 0 and err == ""


def _conversation(path: Path, messages: int) -> Path:
    """A session of ``messages`` user messages, each a long line of words."""
    lines, parent = [S.header(cwd="/w")], None
    for number in range(messages):
        lines.append(S.user(f"u{number}", parent, "a question of many words " * 8))
        parent = f"u{number}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_counts_titles_and_paths_line_up_in_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    folder = tmp_path / "sessions"
    _conversation(folder / "one.jsonl", 1)
    _conversation(folder / "twelve.jsonl", 12)
    code, out, _ = _run(capsys, str(folder))
    assert code == 0
    rows = out.splitlines()
    assert [row[18:31] for row in rows] == ["12 messages  ", " 1 message   "]
    assert len({row.index("message") for row in rows}) == 1
    assert len({row.index("a question") for row in rows}) == 1
    assert len({row.index(str(folder)) for row in rows}) == 1
    # the title at the default width, when neither COLUMNS nor a terminal gives one
    assert {row.index(str(folder)) - row.index("a question") for row in rows} == {60 + 2}


def test_the_titles_follow_columns_when_stdout_is_no_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    path = _conversation(folder / "one.jsonl", 1)
    others = len("2026-11-30 09:13") + len("1 message ") + len(str(path)) + 3 * 2  # and the gaps
    for columns in (others + 30, others + 50):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, out, _ = _run(capsys, str(folder))
        assert code == 0 and [len(row) for row in out.splitlines()] == [columns]
    code, out, _ = _run(capsys, str(folder), "--width", "20")  # --width says the title's own width
    title = out.split("message   ", 1)[1].split("  /", 1)[0]
    assert len(title) == 20 and title.endswith("…")


def test_an_empty_listing_says_where_it_looked(
    agent_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed nothing at all for ``--all`` or a directory without sessions, nor for the current
    directory's once pi had made it: as if the command had not run."""
    empty = tmp_path / "empty"
    empty.mkdir()
    from pi_session_server.session.paths import default_session_dir_path

    os.makedirs(default_session_dir_path(os.getcwd()))  # (what pi makes for the current directory)
    assert _run(capsys, "--all") == (0, "", f"pi-session list: no sessions in {agent_dir / 'sessions'}\n")
    assert _run(capsys, str(empty)) == (0, "", f"pi-session list: no sessions in {empty}\n")
    code, out, err = _run(capsys)
    assert (code, out) == (0, "") and err.startswith(f"pi-session list: no sessions of {os.getcwd()} (")
    assert _run(capsys, "--all", "--json") == (0, "[]\n", "")
    odd = tmp_path / "odd\n\x1b[2Jname"  # a directory's name reaches the terminal escaped
    odd.mkdir()
    assert _run(capsys, str(odd)) == (
        0,
        "",
        f"pi-session list: no sessions in {tmp_path}/odd\\x0a\\x1b[2Jname\n",
    )


@pytest.mark.parametrize("how", ["--width", "COLUMNS"])
def test_a_huge_width_pads_the_titles_only_to_the_widest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Each title was padded to the width, so a width of billions stopped the command with a
    MemoryError."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    _session(folder / "a.jsonl", "s-a", "short", when=1_700_000_000)
    _session(folder / "b.jsonl", "s-b", "a longer title", when=1_700_000_001)
    huge = str(10**11)
    if how == "COLUMNS":
        monkeypatch.setenv("COLUMNS", huge)
    code, out, _ = _run(capsys, str(folder), *(["--width", huge] if how == "--width" else []))
    assert code == 0
    rows = out.splitlines()
    assert rows[0].split("messages  ")[1] == f"a longer title  {folder / 'b.jsonl'}"
    assert rows[1].split("messages  ")[1] == f"short           {folder / 'a.jsonl'}"
