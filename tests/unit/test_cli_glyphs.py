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
    first = S.user("aaaa0001", None, "first")
    cut_off = S.assistant("bbbb0002", "aaaa0001", "x" * 400)[:300]  # a long id makes a long message
    path = tmp_path / "glued.jsonl"
    path.write_text(f"{S.header()}\n{first}\n{cut_off}{S.user('c' * 300, 'bbbb0002', 'y')}\n")
    done = _cli("tree", "--no-index", str(path), env=C_LOCALE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reported = done.stderr.decode("ascii").splitlines()[1]
    assert reported.startswith("  line 3: 2 lines glued together") and reported.endswith("ccc...")
    done = _cli("tree", "--no-index", str(path), env=UTF_8, cwd=tmp_path)
    assert done.stderr.decode("utf-8").splitlines()[1].endswith("ccc…")


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
