"""The commands that draw a tree or cut a text short (tree, list, demo) draw with ASCII where the
output's encoding cannot write box drawing or an ellipsis (a C locale, PYTHONIOENCODING=latin-1):
written through such an encoding, each of those characters came out as "?". Text of a session (or a
file's name) that the encoding cannot write is written as escapes (``\\xe9``, ``\\u2500``,
``\\U0001f600``), as control characters are: it came out as "?", and what it was was lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest
from terminal_output import columns_of as _columns

# Python's encoding of stdout under each: the locale's (C: ASCII), or the one it is told
C_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
LATIN_1 = {"PYTHONIOENCODING": "latin-1"}
UTF_8 = {"PYTHONIOENCODING": "utf-8"}
ASCII = {"PYTHONIOENCODING": "ascii"}
BOX_DRAWING = ("├", "└", "│", "…", "◀", "•")


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The command run with stdout a pipe (as redirected to a file), its encoding set by ``env``
    alone (the locale and Python's own variables of the test's environment left out)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONCOERCECLOCALE"))
    }
    base.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args],
        capture_output=True,
        env={**base, "PI_SESSION_INDEX_DIR": str(cwd / "cache"), **env},
        cwd=str(cwd),
        timeout=120,
    )


def _branched(path: Path) -> Path:
    """A session whose root has two branches, one with a message longer than a narrow width."""
    lines = [
        S.header(),
        S.user("u1", None, "root"),
        S.assistant("a1", "u1", "first branch"),
        S.assistant("a2", "u1", "second branch, with a message far longer than the width"),
    ]
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("env", "encoding"), [(C_LOCALE, "ascii"), (LATIN_1, "latin-1")], ids=["C", "latin-1"]
)
def test_the_tree_is_drawn_with_ascii_where_the_output_cannot_write_box_drawing(
    tmp_path: Path, env: dict[str, str], encoding: str
) -> None:
    path = _branched(tmp_path / "s.jsonl")
    done = _cli("tree", str(path), "--width", "20", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.decode(encoding).splitlines()[4:]
    # each preview cut to the width, its last 3 characters the dots
    assert rows == [
        "* user: root  (2 branches)",
        "|-   assistant: first ...",
        "`- * assistant: second...  <- leaf",
    ]


def test_a_view_kept_from_a_utf_8_output_is_not_printed_to_an_ascii_one(tmp_path: Path) -> None:
    path = _branched(tmp_path / "s.jsonl")
    unicode = _cli("tree", str(path), "--width", "20", env=UTF_8, cwd=tmp_path)
    assert "├─ " in unicode.stdout.decode("utf-8")
    again = _cli("tree", str(path), "--width", "20", env=C_LOCALE, cwd=tmp_path)
    ascii_text = again.stdout.decode("ascii")
    assert "|- " in ascii_text and "?" not in ascii_text
    # and the other way round: the ASCII view kept is not printed where box drawing can be
    assert _cli("tree", str(path), "--width", "20", env=UTF_8, cwd=tmp_path).stdout == unicode.stdout


def test_tree_ascii_draws_with_ascii_in_any_encoding(tmp_path: Path) -> None:
    path = _branched(tmp_path / "s.jsonl")
    text = _cli("tree", str(path), "--ascii", "--width", "20", env=UTF_8, cwd=tmp_path).stdout.decode("utf-8")
    assert "`- " in text and "..." in text and not any(glyph in text for glyph in BOX_DRAWING)
    assert _cli("tree", str(path), "--ascii", "--width", "20", env=C_LOCALE, cwd=tmp_path).stdout == (
        text.encode("ascii")
    )


def test_list_cuts_its_titles_with_dots_where_the_output_cannot_write_an_ellipsis(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    _branched(folder / "s.jsonl")
    done = _cli("list", str(folder), "--width", "10", env=C_LOCALE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("ascii")
    assert " root " in text  # (a title within the width is left whole)
    (folder / "s.jsonl").write_text(
        S.header() + "\n" + S.user("u1", None, "a first message longer than ten") + "\n"
    )
    text = _cli("list", str(folder), "--width", "10", env=C_LOCALE, cwd=tmp_path).stdout.decode("ascii")
    assert " a first... " in text and "?" not in text


def test_demo_draws_with_ascii_where_the_output_cannot_write_box_drawing(tmp_path: Path) -> None:
    path = _branched(tmp_path / "s.jsonl")
    done = _cli("demo", str(path), "--width", "60", env=LATIN_1, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("latin-1")
    assert "`- " in text and "<- leaf" in text and "?" not in text


def test_a_long_skipped_line_s_report_is_cut_with_dots_where_stderr_cannot_write_an_ellipsis(
    tmp_path: Path,
) -> None:
    """The lines pi skips are named on stderr, their messages cut: with the ellipsis stderr can write."""
    path = _glued(tmp_path / "glued.jsonl", "c" * 300)
    done = _cli("tree", "--no-index", str(path), env=C_LOCALE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reported = done.stderr.decode("ascii").splitlines()[1]
    assert reported.startswith("  line 3: 2 lines glued together") and reported.endswith("ccc...")
    done = _cli("tree", "--no-index", str(path), env=UTF_8, cwd=tmp_path)
    assert done.stderr.decode("utf-8").splitlines()[1].endswith("ccc…")


def _glued(path: Path, long_id: str) -> Path:
    """A session whose line 3 is two lines glued together, the second with ``long_id``: pi skips
    it, and its message names the id."""
    first = S.user("aaaa0001", None, "first")
    cut_off = S.assistant("bbbb0002", "aaaa0001", "x" * 400)[:300]
    path.write_text(f"{S.header()}\n{first}\n{cut_off}{S.user(long_id, 'bbbb0002', 'y')}\n", encoding="utf-8")
    return path


def test_check_s_progress_shortens_a_long_path_with_dots_where_stderr_cannot_write_an_ellipsis(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ("d" * 80)
    folder.mkdir()
    _branched(folder / "s.jsonl")
    done = _cli("check", "--progress", str(folder), env=C_LOCALE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = done.stderr.decode("ascii").split("\r")[1]
    assert shown == "[0/1] ..." + f"{folder}/s.jsonl"[-57:]


# -- text the encoding cannot write ----------------------------------------------------------------

TEXT = "caf\u00e9 \u2500 \U0001f600"
SHOWN = "caf\\xe9 \\u2500 \\U0001f600"


def _session(folder: Path) -> Path:
    path = folder / "s.jsonl"
    lines = [S.header(cwd=str(folder)), S.user("u1", None, TEXT), S.assistant("a1", "u1", "done")]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
@pytest.mark.parametrize("command", ["tree", "context", "list"])
def test_session_text_the_encoding_cannot_write_is_written_as_escapes(
    tmp_path: Path, env: dict[str, str], command: str
) -> None:
    path = _session(tmp_path)
    done = _cli(command, str(path if command != "list" else tmp_path), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")
    assert SHOWN in out and "caf?" not in out
    if command != "list":  # (twice: drawn, then printed from what was kept of it)
        assert _cli(command, str(path), env=env, cwd=tmp_path).stdout == done.stdout


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_check_writes_the_text_of_a_problem_as_escapes(tmp_path: Path, env: dict[str, str]) -> None:
    path = _session(tmp_path)
    with path.open("a", encoding="utf-8") as file:
        file.write("\u00e9 is not JSON\n")  # the message quotes its first character
    done = _cli("check", str(path), env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode("ascii")
    assert "\\xe9" in out and "?" not in out


def test_a_file_name_the_encoding_cannot_write_is_written_as_escapes(tmp_path: Path) -> None:
    path = _session(tmp_path).rename(tmp_path / "s\u00e9ance.jsonl")
    done = _cli("check", str(path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("ascii").startswith(f"{tmp_path}/s\\xe9ance.jsonl: ok\n")


def test_a_lone_surrogate_is_its_escape_where_the_replacement_character_cannot_be_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    lone = '{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
    lone += '"message":{"role":"user","content":"lone \\ud800 half","timestamp":1}}'
    path.write_text(S.header(cwd=str(tmp_path)) + "\n" + lone + "\n", encoding="utf-8")
    done = _cli("list", str(tmp_path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "lone \\ud800 half" in done.stdout.decode("ascii")


# -- widths counted as written -----------------------------------------------------------------------

LONG_TEXT = " ".join([TEXT] * 5)


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_the_tree_cuts_its_previews_to_the_width_they_are_written_in(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Each escape counts at its length and is never cut in two: the preview is no wider than
    --width as written (cut by characters, it was several times wider)."""
    path = tmp_path / "s.jsonl"
    path.write_text(S.header() + "\n" + S.user("u1", None, LONG_TEXT) + "\n", encoding="utf-8")
    done = _cli("tree", "--width", "20", str(path), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [row for row in done.stdout.decode("ascii").splitlines() if "<- leaf" in row] == [
        "* user: caf\\xe9 ...  <- leaf"
    ]
    again = _cli("tree", "--width", "20", str(path), env=env, cwd=tmp_path)  # printed from what was kept
    assert again.stdout == done.stdout


def test_list_cuts_and_pads_its_titles_to_the_width_they_are_written_in(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_text(
        S.header() + "\n" + S.user("u1", None, "\u00e9" * 9) + "\n", encoding="utf-8"
    )
    (folder / "b.jsonl").write_text(S.header() + "\n" + S.user("u1", None, "root") + "\n", encoding="utf-8")
    done = _cli("list", str(folder), "--width", "10", env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.decode("ascii").splitlines()
    # the titles, padded to one width, then the paths in one column
    assert sorted(row.split(str(folder))[0][-10:] for row in rows) == [" \\xe9...  ", " root     "]
    assert len({row.index(str(folder)) for row in rows}) == 1


# -- every cut output: as written, in columns ------------------------------------------------------

CJK = "\u4e2d\u6587\u5b57\u7b26" * 10  # four wide characters, two columns each, ten times
CONTROL = "\x1b[31mred\x1b[0m " * 6


def _one_message(path: Path, text: str) -> Path:
    path.write_text(S.header() + "\n" + S.user("u1", None, text) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("env", [ASCII, C_LOCALE], ids=["PYTHONIOENCODING=ascii", "LC_ALL=C"])
def test_the_demo_cuts_its_lines_to_the_width_they_are_written_in(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Cut by characters, a line of text the encoding cannot write came out several times wider
    than --width (its escapes), and a preview was never cut to fewer than 10 characters."""
    path = _one_message(tmp_path / "s.jsonl", LONG_TEXT)
    for width in (1, 5, 40):
        done = _cli("demo", "--width", str(width), str(path), env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.decode("ascii").splitlines()
        assert max(map(len, lines)) == width
    assert "* u1 user: caf\\xe9 \\u2500 ... <- leaf" in lines


def test_the_demo_s_skipped_lines_are_cut_with_their_line(tmp_path: Path) -> None:
    path = _glued(tmp_path / "s.jsonl", "\u00e9" * 300)
    done = _cli("demo", "--width", "400", str(path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (skipped,) = (line for line in done.stdout.decode("ascii").splitlines() if line.startswith("    line 3"))
    assert len(skipped) == 400 and skipped.endswith("\\xe9...")


def test_a_skipped_line_s_report_is_cut_to_the_width_stderr_writes_it_in(tmp_path: Path) -> None:
    """Cut by characters, the message of a line of text stderr cannot write came out four times
    as wide as the 240 columns a message is cut to."""
    path = _glued(tmp_path / "s.jsonl", "\u00e9" * 300)
    done = _cli("tree", "--no-index", str(path), env=ASCII, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (reported,) = (line for line in done.stderr.decode("ascii").splitlines() if line.startswith("  line 3: "))
    assert len(reported.removeprefix("  line 3: ")) == 240 and reported.endswith("\\xe9...")


@pytest.mark.parametrize("env", [UTF_8, ASCII], ids=["utf-8", "ascii"])
def test_the_tree_escapes_a_preview_s_control_characters_before_it_cuts_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Escaped after the cut, each control character made the preview 3 columns wider than
    --width; an escape is never cut in two."""
    path = _one_message(tmp_path / "s.jsonl", CONTROL)
    done = _cli("tree", "--width", "24", str(path), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = (row for row in done.stdout.decode("utf-8").splitlines() if row.startswith("* user"))
    preview = "user: \\x1b[31mred\\x1b[0\u2026" if env is UTF_8 else "user: \\x1b[31mred\\x1b..."
    mark = "\u25c0 leaf" if env is UTF_8 else "<- leaf"  # (the demo's mark: render/glyphs.py)
    assert row == f"* {preview}  {mark}" and len(preview) == 24


def test_list_escapes_a_title_s_control_characters_without_cutting_one_in_two(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    _one_message(folder / "s.jsonl", "ab" + CONTROL)
    done = _cli("list", str(folder), "--width", "6", env=UTF_8, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  ab\u2026  " in done.stdout.decode("utf-8")  # not "ab\\x1b[\u2026"


@pytest.mark.parametrize(("command", "width"), [("tree", 20), ("demo", 30)])
def test_wide_characters_count_as_two_columns(tmp_path: Path, command: str, width: int) -> None:
    """A CJK preview cut to --width characters took twice the columns asked for."""
    path = _one_message(tmp_path / "s.jsonl", CJK)
    done = _cli(command, "--width", str(width), str(path), env=UTF_8, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [row for row in done.stdout.decode("utf-8").splitlines() if "\u4e2d" in row]
    assert rows
    if command == "tree":
        assert rows == ["* user: \u4e2d\u6587\u5b57\u7b26\u4e2d\u6587\u2026  \u25c0 leaf"]  # 19 columns
    else:
        assert all(_columns(row) <= 30 for row in rows) and max(map(_columns, rows)) >= 29


def test_list_cuts_and_pads_wide_titles_by_their_columns(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    _one_message(folder / "a.jsonl", CJK)
    _one_message(folder / "b.jsonl", "root")
    done = _cli("list", str(folder), "--width", "10", env=UTF_8, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root, wide = sorted(
        (row.split(str(folder))[0] for row in done.stdout.decode("utf-8").splitlines()),
        key=lambda text: "\u4e2d" in text,
    )
    # a title of 9 columns (a wide character more would pass 10), and one of 4 padded to 9
    assert wide.endswith(" \u4e2d\u6587\u5b57\u7b26\u2026  ") and root.endswith(" root       ")
    assert _columns(root) == _columns(wide)  # the paths in one column


@pytest.mark.parametrize("env", [ASCII, UTF_8], ids=["ascii", "utf-8"])
def test_a_width_narrower_than_the_dots_cuts_them_too(tmp_path: Path, env: dict[str, str]) -> None:
    path = _one_message(tmp_path / "s.jsonl", "a message")
    done = _cli("tree", "--ascii", "--width", "1", str(path), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "* .  <- leaf" in done.stdout.decode("ascii")


def test_check_s_progress_escapes_a_path_s_control_characters_and_counts_its_columns(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ("\x1b]0;title\x07" + "\u4e2d" * 40)
    folder.mkdir()
    _branched(folder / "s.jsonl")
    done = _cli("check", "--progress", str(folder), env=UTF_8, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = done.stderr.decode("utf-8").split("\r")[1]
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == "[0/1] \u2026" + "\u4e2d" * 25 + "/s.jsonl"  # 59 columns of 60: a 26th is 61


@pytest.mark.parametrize(
    ("env", "mark"), [(UTF_8, "\u25c0 leaf"), (ASCII, "<- leaf")], ids=["utf-8", "ascii"]
)
def test_tree_and_demo_mark_the_leaf_with_one_glyph(tmp_path: Path, env: dict[str, str], mark: str) -> None:
    """``tree`` marked the leaf ``<- leaf`` whatever the output could write, ``demo`` with the
    glyph of its encoding: both now end the leaf's row with the same one."""
    for command in ("tree", "demo"):
        done = _cli(command, "--width", "200", env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        leaf_rows = [row for row in done.stdout.decode("utf-8").splitlines() if row.endswith(mark)]
        assert len(leaf_rows) == 1, (command, done.stdout)
