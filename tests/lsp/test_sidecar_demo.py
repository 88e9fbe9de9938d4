"""``pi-session demo``: a front end in a subprocess, talking to the sidecar in another subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sidecar_support import EXAMPLE, server_env


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", "demo", "--width", "100", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(tmp_path),
        cwd=str(tmp_path),
    )


def test_demo_draws_the_bundled_example(tmp_path):
    run = demo(tmp_path, "--ascii")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Session 'Fix forecast parsing, add caching'" in out
    assert "Tree (filter default: 25 of 36 entries" in out
    assert "* 9d0e1f2a assistant: Fixed." in out and "[tests-green]" in out
    assert "|-   e4f5a6b7 user: Now add caching" in out  # a branch point fans out
    assert "`- * d9e0f1a2 [branch summary]" in out
    assert "e2f3a4b5 [reminder]: Tag the release after the changelog is merged. <- leaf" in out
    assert "12 messages, model anthropic/claude-sonnet-4-5, thinking medium" in out
    assert "2 compactionSummary" in out


def test_demo_counts_one_entry_and_one_message_in_the_singular(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    run = demo(tmp_path, str(one), "--ascii")
    assert run.returncode == 0, run.stderr
    assert "   1 entry   leaf a1" in run.stdout
    assert "Tree (filter default: 1 of 1 entry;" in run.stdout
    assert "  1 message, model " in run.stdout


def test_demo_of_a_session_without_entries_says_so(tmp_path):
    empty = tmp_path / "header-only.jsonl"
    empty.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    )
    run = demo(tmp_path, str(empty))
    assert run.returncode == 0, run.stderr
    assert "  cwd /p   No entries in session\n" in run.stdout  # as `pi-session tree` and pi's /tree say it


def test_demo_names_ids_that_are_not_strings_as_tree_does(tmp_path):
    """pi interpolates an id with JS String(): the boolean id `true`, the number 2.5 (not
    Python's "True")."""
    odd = tmp_path / "odd-ids.jsonl"
    odd.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":2.5,"parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}\n'
        '{"type":"message","id":true,"parentId":2.5,"timestamp":"2026-01-01T00:00:02.000Z",'
        '"message":{"role":"user","content":"again","timestamp":2}}\n'
    )
    run = demo(tmp_path, str(odd), "--ascii")
    assert run.returncode == 0, run.stderr
    tree = subprocess.run(
        [sys.executable, "-m", "pi_session_server", "tree", "--no-index", str(odd)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "2 entries, leaf true\n" in tree.stdout
    assert "   2 entries   leaf true\n" in run.stdout
    assert "* 2.5 user: hi" in run.stdout and "* true user: again" in run.stdout
    assert "Context at the leaf true:" in run.stdout


@pytest.mark.slow
def test_demo_of_a_file_with_options(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(EXAMPLE.read_bytes())
    run = demo(tmp_path, str(path), "--filter", "user-only", "--leaf", "1e2f3a4b")
    assert run.returncode == 0, run.stderr
    assert f"file {path}" in run.stdout
    assert "Tree (filter user-only: 4 of 36 entries" in run.stdout
    assert "Context at entry 1e2f3a4b:" in run.stdout and "2 messages" in run.stdout
    assert path.read_bytes() == EXAMPLE.read_bytes()


@pytest.mark.slow
def test_demo_of_a_damaged_file_names_the_lines_pi_skips(tmp_path):
    lines = EXAMPLE.read_text().splitlines()
    crashed = tmp_path / "crashed.jsonl"
    # a crash cut line 6 short and the next line was written right after it; two more lines broken
    damaged = [*lines[:5], lines[5][:40] + lines[6], *lines[7:10], "{", "[]", *lines[10:]]
    crashed.write_text("\n".join(damaged) + "\n")
    run = demo(tmp_path, str(crashed))
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    at = out.index("  3 lines of the file pi skips:")
    assert out[at + 1].startswith("    line 6: 2 lines glued together (a cut-off line, then entry `")
    assert out[at + 2].startswith("    line 10: invalid JSON: ")
    assert out[at + 3] == "    line 11: line is not a JSON object and is ignored"
    assert f"{len(lines) - 3} entries" in run.stdout  # the glued line's two entries are lost to pi
    assert crashed.read_text() == "\n".join(damaged) + "\n"


@pytest.mark.slow
def test_demo_reports_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a session\n")
    run = demo(tmp_path, str(bad))
    assert run.returncode == 2  # as for the other commands, a file that cannot be shown
    assert (
        f"Session file is not a valid pi session: {bad} (JSON-RPC error -32003)"
        f" (`pi-session check {bad}` says why)\n"
    ) in run.stderr
    assert demo(tmp_path, str(tmp_path / "missing.jsonl")).returncode == 2
    directory = demo(tmp_path, str(tmp_path))
    assert (directory.returncode, directory.stderr) == (
        2,
        f"pi-session demo: {tmp_path}: is a directory (give a session file)\n",
    )
    unknown = demo(tmp_path, "--leaf", "nope")  # pi would build the leaf's context instead
    assert (unknown.returncode, unknown.stdout, unknown.stderr) == (
        1,
        "",
        "pi-session demo: Entry nope not found (`pi-session tree --ids` shows the ids)\n",
    )


@pytest.mark.slow
def test_demo_of_a_session_bigger_than_one_tree_reply(tmp_path):
    # 50,001 entries with the "all" filter: more nodes than one pi/getTree reply may hold (the server
    # refuses that with TooLarge); the demo reads the tree in pages, as the editors do
    count = 50_001
    header = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
    lines = [header]
    for n in range(count):
        parent = "null" if n == 0 else f'"e{n - 1:07d}"'
        lines.append(
            f'{{"type":"custom","id":"e{n:07d}","parentId":{parent},'
            f'"timestamp":"2026-01-01T00:00:01.000Z","customType":"x"}}'
        )
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(lines) + "\n")
    run = demo(tmp_path, str(big), "--filter", "all", "--ascii")
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert f"Tree (filter all: {count:,} of {count:,} entries; * = on the path to the leaf)" in out
    drawn = [line for line in out if line.startswith("* e")]
    assert len(drawn) == count and drawn[0].startswith("* e0000000 ") and drawn[-1].startswith("* e0050000 ")
