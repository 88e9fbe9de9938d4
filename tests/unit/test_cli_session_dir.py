"""Where pi's command line keeps sessions (session/cli_session_dir.py): ``--session-dir``, then
``$PI_CODING_AGENT_SESSION_DIR``, then the ``sessionDir`` setting (the project's over the global
one), else SessionManager's default; and ``pi-session list`` and ``check`` looking there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.errors import FileUrlError, ValueTypeError
from pi_session_server.session.cli_session_dir import cli_session_dir, names_no_directory
from pi_session_server.session.environment import Environment


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("home", "agent", "project/.pi"):
        (tmp_path / name).mkdir(parents=True)
    return tmp_path


def _env(root: Path, session_dir: str | None = None) -> Environment:
    return Environment(str(root / "project"), str(root / "home"), str(root / "agent"), session_dir)


def _settings(path: Path, text: str | bytes) -> None:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def _global(root: Path) -> Path:
    return root / "agent" / "settings.json"


def _project(root: Path) -> Path:
    return root / "project" / ".pi" / "settings.json"


def test_flag_then_variable_then_project_then_global_settings_then_the_default(root: Path) -> None:
    assert cli_session_dir(None, _env(root)) is None  # SessionManager's default
    _settings(_global(root), '{"sessionDir": "/global"}')
    assert cli_session_dir(None, _env(root)) == "/global"
    _settings(_project(root), '{"theme": "dark", "sessionDir": "/project"}')
    assert cli_session_dir(None, _env(root)) == "/project"
    assert cli_session_dir(None, _env(root, "/variable")) == "/variable"
    assert cli_session_dir("/flag", _env(root, "/variable")) == "/flag"
    # an empty flag or variable is no choice, as in pi
    assert cli_session_dir("", _env(root, "")) == "/project"


def test_tilde_and_file_urls_are_expanded_and_a_relative_path_kept_relative(root: Path) -> None:
    home = str(root / "home")
    assert cli_session_dir("~", _env(root)) == home
    assert cli_session_dir(None, _env(root, "~/s")) == f"{home}/s"
    _settings(_project(root), '{"sessionDir": "~/from-settings"}')
    assert cli_session_dir(None, _env(root)) == f"{home}/from-settings"
    assert cli_session_dir("file:///tmp/a%20b", _env(root)) == "/tmp/a b"
    # relative to the working directory when used, as pi passes it on (not to .pi/)
    _settings(_project(root), '{"sessionDir": "./sessions"}')
    assert cli_session_dir(None, _env(root)) == "./sessions"


def test_the_project_setting_empty_or_null_hides_the_global_one(root: Path) -> None:
    _settings(_global(root), '{"sessionDir": "/global"}')
    for value in ("", None):
        _settings(_project(root), json.dumps({"sessionDir": value}))
        assert cli_session_dir(None, _env(root)) is None


@pytest.mark.parametrize(
    "text",
    [
        b"",  # empty: no settings
        b"{not json",  # pi records the parse error and goes on without the file's settings
        b"5",  # pi's migrateSettings throws on a primitive
        b"null",
        b'["/x"]',
    ],
)
def test_a_bad_project_settings_file_leaves_the_global_setting_or_the_default(
    root: Path, text: bytes
) -> None:
    _settings(_project(root), text)
    assert cli_session_dir(None, _env(root)) is None
    _settings(_global(root), '{"sessionDir": "/global"}')
    assert cli_session_dir(None, _env(root)) == "/global"


@pytest.mark.parametrize(
    ("value", "kind"),
    [("5", "a number"), ("true", "the boolean true"), ('["/x"]', "an array"), ('{"a": 1}', "an object")],
)
def test_a_session_dir_setting_that_is_no_path_is_an_error_naming_the_settings_file(
    root: Path, value: str, kind: str
) -> None:
    """pi's normalizePath throws on it (``normalized.startsWith is not a function``) and pi stops at
    its start, in Node's words alone: it was taken as not set, and the default directory used."""
    _settings(_global(root), '{"sessionDir": "/global"}')  # the project's value hides it
    _settings(_project(root), f'{{"sessionDir": {value}}}')
    with pytest.raises(ValueTypeError) as raised:
        cli_session_dir(None, _env(root))
    assert raised.value.message == f"{_project(root)}: sessionDir: must be a path (a string), not {kind}"
    assert raised.value.name == "TypeError"


@pytest.mark.parametrize(
    ("value", "nodes_words"),
    [
        ("file://host/s", 'File URL host must be "localhost" or empty on linux'),
        ("file:///a%2fb", "File URL path must not include encoded / characters"),
        ("file:///a%zz", "URI malformed"),
        ("file://[::1/s", "Invalid URL"),
    ],
)
def test_a_file_url_node_refuses_in_the_settings_is_an_error_naming_the_settings_file(
    root: Path, value: str, nodes_words: str
) -> None:
    """pi stops at its start, whatever it was asked (nothing read or written yet), with Node's
    words alone: which file holds the value? It was taken as not set, and the default used."""
    _settings(_global(root), json.dumps({"sessionDir": value}))
    with pytest.raises(FileUrlError) as raised:
        cli_session_dir(None, _env(root))
    assert raised.value.message == f"{_global(root)}: sessionDir: {nodes_words}"
    _settings(_project(root), json.dumps({"sessionDir": value}))  # the project's, over it
    with pytest.raises(FileUrlError) as raised:
        cli_session_dir(None, _env(root))
    assert raised.value.message == f"{_project(root)}: sessionDir: {nodes_words}"
    # a flag or the variable comes first, as in pi: the setting is not read
    assert cli_session_dir("/flag", _env(root)) == "/flag"
    assert cli_session_dir(None, _env(root, "/variable")) == "/variable"


@pytest.mark.parametrize("value", ["/s\\u0000x", "file:///s%00x", "~/s\\u0000x"])
def test_a_nul_byte_is_kept_and_names_no_directory(root: Path, value: str) -> None:
    _settings(_project(root), f'{{"sessionDir": "{value}"}}')
    chosen = cli_session_dir(None, _env(root))
    assert chosen is not None and chosen.endswith("/s\x00x")  # pi's value, refused by nothing yet
    assert names_no_directory(chosen)
    assert not names_no_directory("/s") and not names_no_directory(None)


def test_an_unreadable_settings_file_or_a_directory_is_no_error(root: Path) -> None:
    _project(root).mkdir()
    _settings(_global(root), b'{"sessionDir": "/global"}')
    _global(root).chmod(0)
    try:
        expected = None if os.access(_global(root), os.R_OK) is False else "/global"  # (root reads it)
        assert cli_session_dir(None, _env(root)) == expected
    finally:
        _global(root).chmod(0o600)


def test_a_fifo_as_settings_file_is_not_waited_on(root: Path) -> None:
    os.mkfifo(_project(root))
    _settings(_global(root), b'{"sessionDir": "/global"}')
    assert cli_session_dir(None, _env(root)) == "/global"


def test_a_byte_order_mark_and_invalid_utf8_are_read_as_pi_reads_them(root: Path) -> None:
    _settings(_global(root), b'\xef\xbb\xbf{"sessionDir": "/s\xff"}')
    assert cli_session_dir(None, _env(root)) == "/s\ufffd"


def test_the_agent_directory_of_the_environment_holds_the_global_settings(root: Path) -> None:
    (root / "home" / ".pi" / "agent").mkdir(parents=True)
    _settings(root / "home" / ".pi" / "agent" / "settings.json", '{"sessionDir": "/home-agent"}')
    env = Environment(str(root / "project"), str(root / "home"))
    assert cli_session_dir(None, env) == "/home-agent"


def test_the_process_variable_is_read_by_default(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "/from-process")
    assert Environment.from_process().session_dir == "/from-process"
    assert cli_session_dir() == "/from-process"


# ---- the commands -----------------------------------------------------------------------------


def _session(path: Path, session_id: str, cwd: str) -> Path:
    lines = [
        S.header(session_id=session_id, cwd=cwd),
        json.dumps(
            S.message_entry(
                "u1", None, S.user_message("hello", 1_800_000_000_000), "2026-11-30T09:13:48.180Z"
            )
        ),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def project(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root / "agent"))
    monkeypatch.chdir(root / "project")
    return root / "project"


def _listed(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["list", "--json", *args]) == 0
    return [info["path"] for info in json.loads(capsys.readouterr().out)]


def test_list_looks_where_the_variable_or_the_settings_say(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _session(root / "custom" / "a.jsonl", "s-a", str(project))
    other = _session(root / "custom" / "b.jsonl", "s-b", "/elsewhere")
    assert _listed(capsys) == []
    _settings(_global(root), json.dumps({"sessionDir": str(root / "custom")}))
    assert _listed(capsys) == [str(mine)]  # pi's list(cwd, sessionDir): this directory's sessions
    assert sorted(_listed(capsys, "--all")) == sorted([str(mine), str(other)])  # listAll(sessionDir)
    _settings(_global(root), "{}")
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(root / "custom"))
    assert _listed(capsys) == [str(mine)]
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    assert _listed(capsys, "--session-dir", str(root / "custom")) == [str(mine)]
    assert not (root / "agent" / "sessions").exists()  # nothing created


def test_list_names_the_chosen_directory_when_it_finds_nothing(
    project: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(root / "none"))
    assert main(["list"]) == 0
    assert f"(pi keeps them in {root / 'none'})" in capsys.readouterr().err
    assert main(["list", "--all"]) == 0
    assert f"no sessions in {root / 'none'}" in capsys.readouterr().err
    assert not (root / "none").exists()
    assert main(["list", "somewhere", "--session-dir", "x"]) == 2
    assert "give a directory or --session-dir, not both" in capsys.readouterr().err


def test_check_without_a_path_checks_where_the_settings_or_the_flag_say(
    project: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checked = _session(root / "custom" / "a.jsonl", "s-a", str(project))
    _session(root / "agent" / "sessions" / "--w--" / "b.jsonl", "s-b", "/w")
    _settings(_project(root), json.dumps({"sessionDir": str(root / "custom")}))
    main(["check", "--json", "--no-index"])
    assert [f["path"] for f in json.loads(capsys.readouterr().out)["files"]] == [str(checked)]
    main(["check", "--json", "--no-index", "--session-dir", str(root / "missing")])
    assert f"{root / 'missing'}: no such directory" in capsys.readouterr().err
    assert main(["check", str(checked), "--session-dir", "x"]) == 2
    assert "give paths or --session-dir, not both" in capsys.readouterr().err


def test_list_finds_nothing_where_a_nul_byte_setting_points(
    project: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(
        root / "agent" / "sessions" / f"--{str(project)[1:].replace('/', '-')}--" / "a.jsonl",
        "s-a",
        str(project),
    )
    _settings(_project(root), json.dumps({"sessionDir": str(root / "custom") + "\x00"}))
    assert _listed(capsys) == []  # as pi's list: not the default directory's session
    assert main(["list", "--all"]) == 0
    assert "no sessions in " + str(root / "custom") + "\\x00" in capsys.readouterr().err
    assert main(["check", "--no-index"]) == 0  # nothing there to check, as for a missing directory
    assert str(root / "custom") + "\\x00: no such directory" in capsys.readouterr().err


def test_list_and_check_stop_on_a_session_dir_setting_pi_stops_on_naming_its_file(
    project: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(root / "agent" / "sessions" / "--w--" / "a.jsonl", "s-a", "/w")  # the default's: not looked at
    _settings(_project(root), json.dumps({"sessionDir": "file://host/s"}))
    said = f'{_project(root)}: sessionDir: File URL host must be "localhost" or empty on linux\n'
    for command in (["list"], ["list", "--all", "--json"], ["check", "--no-index"]):
        assert main(command) == 2, command
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("", f"pi-session {command[0]}: {said}"), command
    assert main(["list", "--session-dir", str(root / "custom")]) == 0  # the flag first: not read


@pytest.mark.parametrize(
    ("value", "nodes_words"),
    [
        ("file://host/s", 'File URL host must be "localhost" or empty on linux'),
        ("file:///a%2fb", "File URL path must not include encoded / characters"),
        ("file:///a%zz", "URI malformed"),
    ],
)
def test_a_file_url_node_refuses_in_the_flag_or_the_variable_is_an_error_naming_it(
    project: Path,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    nodes_words: str,
) -> None:
    # pi stops at its start, in Node's words alone: which of the values was it?
    _settings(_global(root), '{"sessionDir": "/global"}')
    assert main(["list", "--session-dir", value]) == 2
    assert capsys.readouterr().err == f"pi-session list: --session-dir: {nodes_words}\n"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", value)
    assert main(["check", "--no-index"]) == 2
    assert capsys.readouterr().err == f"pi-session check: $PI_CODING_AGENT_SESSION_DIR: {nodes_words}\n"
    with pytest.raises(FileUrlError) as raised:
        cli_session_dir(None, _env(root, value))
    assert raised.value.name == ("URIError" if "URI" in nodes_words else "TypeError")  # still Node's error
