"""The commands that cut text to a width (``tree``'s previews, ``demo``'s lines, ``list``'s titles)
follow the output's width as one rule: --width, else COLUMNS, else stdout's terminal, else a fixed
width of the command's own (a pipe: the same text whatever terminal the command ran from)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import builders as S
import pytest
from terminal_output import columns_of, open_terminal, read_until_closed

from pi_session_server.commands import tree, tree_draw
from pi_session_server.session import cache_dir

LONG = "word " * 60


def _session(path: Path) -> Path:
    lines = [S.header(), S.user("u1", None, LONG), S.assistant("a1", "u1", LONG)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cli(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return {**env, "PI_SESSION_NO_INDEX": "1", **extra}


def _preview_rows(out: str) -> list[str]:
    """The rows of the two long messages, without the leaf's mark."""
    return [row.removesuffix("  ◀ leaf") for row in _rows(out)]


def _rows(out: str) -> list[str]:
    """The rows of the two long messages (the second the leaf, with its mark)."""
    return [line for line in out.splitlines() if "word word" in line]


def test_the_tree_follows_columns_and_is_the_same_in_any_pipe_without_it(tmp_path: Path) -> None:
    path = str(_session(tmp_path / "s.jsonl"))
    for columns in (40, 72):
        rows = _rows(_cli("tree", path, env=_env(COLUMNS=str(columns))))
        assert [len(row) for row in rows] == [columns, columns]  # each row, its marks too, cut to fit
    rows = _preview_rows(_cli("tree", path, env=_env()))
    assert [len(row) for row in rows] == [2 + tree.DEFAULT_WIDTH] * 2
    rows = _preview_rows(_cli("tree", "--width", "30", path, env=_env(COLUMNS="72")))
    assert [len(row) for row in rows] == [2 + 30] * 2  # --width says the previews' own width


def _on_a_terminal(args: list[str], columns: int) -> str:
    """What the command prints to a terminal ``columns`` wide (COLUMNS unset)."""
    leader, follower = open_terminal(columns)
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_session_server", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    os.close(follower)
    try:
        out = read_until_closed(leader)
    finally:
        assert process.wait(timeout=120) == 0
    return out.decode().replace("\r\n", "\n")


def test_the_tree_and_the_demo_follow_the_terminal(tmp_path: Path) -> None:
    path = str(_session(tmp_path / "s.jsonl"))
    rows = _rows(_on_a_terminal(["tree", path], 64))
    assert [len(row) for row in rows] == [64, 64]
    demo = _on_a_terminal(["demo", path], 70)
    rows = _preview_rows(demo)
    assert rows and all(len(row) <= 70 for row in rows)
    assert max(len(row) for row in rows) >= 60  # the lines use the width, not a fixed one


def test_the_demo_follows_columns(tmp_path: Path) -> None:
    path = str(_session(tmp_path / "s.jsonl"))
    for columns in (50, 90):
        rows = _preview_rows(_cli("demo", path, env=_env(COLUMNS=str(columns))))
        assert rows and max(len(row) for row in rows) == columns


def test_a_width_of_0_or_less_is_refused_by_the_demo(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "demo", "--width", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "must be at least 1, not 0" in done.stderr


@pytest.fixture(name="drawn")
def drawn_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Views kept (of any size, in the test's directory); the list the trees drawn are counted in
    (a tree printed from what was kept is not drawn)."""
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.delenv("PI_SESSION_NO_INDEX", raising=False)
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    drawn: list[int] = []
    real_lines = tree_draw.tree_lines
    monkeypatch.setattr(tree_draw, "tree_lines", lambda *args: drawn.append(1) or real_lines(*args))
    return drawn


def test_a_tree_kept_for_the_terminal_width_is_printed_again_for_that_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], drawn: list[int]
) -> None:
    from pi_session_server.cli import main

    path = str(_session(tmp_path / "s.jsonl"))
    time.sleep(0.1)  # views are kept of a file settled (RACY_NS)

    def draws(columns: int) -> int:
        monkeypatch.setenv("COLUMNS", str(columns))
        before = len(drawn)
        assert main(["tree", path]) == 0
        assert [len(row) for row in _rows(capsys.readouterr().out)] == [columns] * 2
        return len(drawn) - before

    assert [draws(50), draws(50), draws(80), draws(80), draws(50)] == [1, 0, 1, 0, 1]


def _branchy(path: Path, depth: int) -> Path:
    """A session whose every level is a branch point ``depth`` deep, with wide text and a long label."""
    wide = "\u4e2d\u6587 " * 30
    lines = [S.header(), S.user("u0", None, wide)]
    for level in range(depth):
        lines.append(S.assistant(f"a{level}", f"u{level}", "short"))
        lines.append(S.user(f"u{level + 1}", f"u{level}", wide))
    lines.append(S.label("l1", f"u{depth}", "u0", "a label longer than a narrow terminal"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("columns", [12, 30, 80])
def test_every_row_of_the_tree_fits_the_terminal(tmp_path: Path, columns: int) -> None:
    """A row's indentation, label, branch count and leaf mark went past the terminal's width (the
    preview was cut to it alone): each row wrapped, and the tree with it."""
    path = str(_branchy(tmp_path / "s.jsonl", 12))
    rows = _cli("tree", path, env=_env(COLUMNS=str(columns))).split("\n\n", 1)[1].splitlines()
    assert len(rows) == 26 and all(columns_of(row) <= columns for row in rows)
    assert max(columns_of(row) for row in rows) >= columns - 1  # (a wide character may not fit the last)
    # --width still says the previews' width alone
    rows = _cli("tree", "--width", str(columns), path, env=_env(COLUMNS="10")).split("\n\n", 1)[1]
    assert max(map(columns_of, rows.splitlines())) > columns


#: a session's name with what a terminal draws wider than its characters: an escape, wide ones
LONG_NAME = "a name longer than a narrow terminal \x1b[31m \u4e2d\u6587\u4e2d\u6587 " + "and more " * 20
LONG_LABEL = "a label longer than a narrow terminal \x1b[1m \u4e2d\u6587 " + "and more " * 20


def _named(path: Path) -> Path:
    """A session with a long name and a long label, its leaf id long too, at a long path."""
    leaf = "leaf-" + "x" * 80
    lines = [
        S.header(),
        S.user("u1", None, "hello"),
        S.label("l1", "u1", "u1", LONG_LABEL),
        S.session_info("i1", "l1", LONG_NAME),
        S.assistant(leaf, "i1", "hi"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _long_path(tmp_path: Path) -> Path:
    return tmp_path / ("a-directory-with-a-long-name-" * 3) / "the-session.jsonl"


def test_the_head_of_the_tree_fits_the_terminal_the_path_shown_by_its_end(tmp_path: Path) -> None:
    """The path, the session's name and its leaf were printed whole: on a narrow terminal the
    lines above the tree wrapped, while its rows were cut to fit."""
    path = _named(_long_path(tmp_path))
    columns = 40
    out = _on_a_terminal(["tree", str(path)], columns)
    head, rows = out.split("\n\n", 1)
    assert all(columns_of(line) <= columns for line in out.splitlines())
    shown_path, session, entries = head.splitlines()
    assert shown_path.startswith("…") and shown_path.endswith("/the-session.jsonl")
    assert columns_of(shown_path) == columns
    assert session.startswith("session 01a22bbb") and session.endswith("…")
    assert entries.startswith("4 entries, leaf leaf-xxx") and columns_of(entries) == columns
    assert "[a label longer" in rows


def test_the_head_and_the_labels_of_the_tree_are_cut_to_the_width(tmp_path: Path) -> None:
    path = _named(_long_path(tmp_path))
    out = _cli("tree", "--width", "30", str(path), env=_env(COLUMNS="200"))
    head, rows = out.split("\n\n", 1)
    assert [columns_of(line) for line in head.splitlines()] == [30, 30, 30]
    assert head.startswith("…") and "\x1b" not in out  # (the escape written as one, counted so)
    label = next(row for row in rows.splitlines() if row.startswith("* user: hello"))
    assert columns_of(label.split("[", 1)[1].removesuffix("]")) == 30


def test_a_tree_kept_is_printed_again_with_its_head_cut_to_the_same_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], drawn: list[int]
) -> None:
    from pi_session_server.cli import main

    monkeypatch.delenv("COLUMNS", raising=False)
    path = str(_named(_long_path(tmp_path)))
    time.sleep(0.1)  # views are kept of a file settled (RACY_NS)

    def shown(*args: str) -> str:
        assert main(["tree", *args, path]) == 0
        return capsys.readouterr().out

    piped = shown()
    assert shown() == piped  # (printed from what was kept)
    head = piped.split("\n\n")[0].splitlines()
    assert head[0] == path and head[1].endswith('and more"')  # piped, the head whole: a script reads it
    # the same previews' width, asked for: the head cut to it (not the view kept for the pipe)
    assert shown("--width", str(tree.DEFAULT_WIDTH)).split("\n\n")[0] != piped.split("\n\n")[0]
    cut = shown("--width", "30")
    assert shown("--width", "30") == cut
    assert [columns_of(line) for line in cut.split("\n\n")[0].splitlines()] == [30, 30, 30]
    assert len(drawn) == 3


def _listed(folder: Path) -> list[Path]:
    """Two sessions of ``folder`` with long first messages (their titles), newest last."""
    paths = []
    for number in range(2):
        path = folder / f"2026-11-30T09-13-4{number}-180Z_0{number}a22bbb-5993-736f-8ed9-3b7e7d11bef3.jsonl"
        lines = [S.header(), S.user("u1", None, LONG), S.assistant("a1", "u1", "ok")]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
        paths.append(path)
    return paths


@pytest.mark.parametrize("columns", [100, 140])
def test_every_row_of_the_listing_fits_the_terminal_its_path_by_its_end(tmp_path: Path, columns: int) -> None:
    """A long path (pi's session files are named by their time and id, in a directory named by the
    project's path) went past the terminal's width: every row wrapped."""
    folder = _long_path(tmp_path).parent
    paths = _listed(folder)
    rows = _on_a_terminal(["list", str(folder)], columns).splitlines()
    assert len(rows) == 2 and [columns_of(row) for row in rows] == [columns, columns]
    for row, path in zip(rows, reversed(paths), strict=True):
        shown = row.rsplit("  ", 1)[1]
        assert shown.startswith("…") and str(path).endswith(shown[1:])
        assert columns_of(row.split("  ")[2]) == 20  # (the titles keep their narrowest)


def test_a_path_keeps_some_columns_on_a_very_narrow_terminal_and_is_whole_when_piped(tmp_path: Path) -> None:
    folder = _long_path(tmp_path).parent
    paths = _listed(folder)
    rows = _on_a_terminal(["list", str(folder)], 50).splitlines()
    assert [columns_of(row.rsplit("  ", 1)[1]) for row in rows] == [20, 20]  # (the row wraps)
    rows = _cli("list", str(folder), env=_env(COLUMNS="100")).splitlines()
    assert [row.rsplit("  ", 1)[1] for row in rows] == [str(p) for p in reversed(paths)]  # what scripts read
