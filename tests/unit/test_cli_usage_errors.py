"""An argument a command does not take is reported by that command's parser: the error names the
command and shows its usage (argparse's parse_args reported it as the top parser's, with the usage
of ``pi-session`` alone)."""

from __future__ import annotations

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
