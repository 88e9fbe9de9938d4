"""An argument a command does not take is reported by that command's parser: the error names the
command and shows its usage (argparse's parse_args reported it as the top parser's, with the usage
of ``pi-session`` alone)."""

from __future__ import annotations

import json
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import COMMANDS, main


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_unknown_option_is_reported_by_the_command_with_its_usage(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = ["session.jsonl"] if name == "repair" else []  # (repair's PATH is required)
    err = _usage_error([name, "--bogus", *paths], capsys)
    assert err.startswith(f"usage: pi-session {name} ")
    assert err.endswith(f"\npi-session {name}: error: unrecognized arguments: --bogus\n")


def test_unknown_arguments_after_the_command_are_named_together(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["list", "one", "two", "--bogus=3"], capsys)
    assert err.endswith("\npi-session list: error: unrecognized arguments: two --bogus=3\n")


def test_an_unknown_option_before_the_command_is_reported_by_pi_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _usage_error(["--bogus", "tree"], capsys)
    assert err.startswith("usage: pi-session [-h] [--version] COMMAND")
    assert err.endswith("\npi-session: error: unrecognized arguments: --bogus\n")


def test_options_may_come_between_the_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check a.jsonl --json b.jsonl`` checks both: argparse's parse_args took the first path alone
    and reported the second as an unrecognized argument. After ``--``, a path that looks like an
    option is still a path."""
    monkeypatch.chdir(tmp_path)
    for name in ("a.jsonl", "b.jsonl", "-odd.jsonl"):
        (tmp_path / name).write_text(S.header() + "\n")
    assert main(["check", "a.jsonl", "--json", "--no-index", "b.jsonl"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and [f["path"] for f in json.loads(out)["files"]] == ["a.jsonl", "b.jsonl"]
    assert main(["repair", "a.jsonl", "--pi", "0.86.1", "b.jsonl"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.splitlines()[0] == "2 files checked: nothing to repair"
    assert main(["check", "a.jsonl", "--no-index", "--", "-odd.jsonl"]) == 0
    assert capsys.readouterr().out == "a.jsonl: ok\n./-odd.jsonl: ok\n2 files checked: ok\n"


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_watch_interval_that_is_no_time_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # (it served: a negative one as 0, never following the files, nan as the shortest interval)
    err = _usage_error(["serve", "--watch-interval", value], capsys)
    assert err.endswith(
        f"\npi-session serve: error: argument --watch-interval: must be 0 (never) or a number of "
        f"seconds, not {value}\n"
    )
