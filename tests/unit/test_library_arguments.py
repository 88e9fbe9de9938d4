"""The library as a Python program meets it (docs/API.md §1.2, §1.4, §11): paths may be
``pathlib.Path``; an argument that is no path, or a value JSON cannot hold, is refused up front with
the library's error, the session as it was; a manager opened ``read_only`` makes nothing on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import builders as S
import pytest

from pi_session_server.errors import InvalidArgTypeError, ValueTypeError
from pi_session_server.session import Environment, ReadOnlySessionError, SessionManager


def _session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(S.chat(2)) + "\n", encoding="utf-8")
    return path


def test_every_path_parameter_takes_a_pathlib_path(tmp_path):
    path = _session(tmp_path)
    opened = SessionManager.open(path)
    assert opened.get_session_file() == str(path) and opened.get_leaf_id() == "t1z"
    assert SessionManager.open(path, read_only=True).get_leaf_id() == "t1z"
    other = tmp_path / "other.jsonl"
    opened.set_session_file(other)
    assert opened.get_session_file() == str(other)
    created = SessionManager.create(tmp_path / "project", tmp_path / "sessions")
    assert created.get_cwd() == str(tmp_path / "project")
    assert created.get_session_dir() == str(tmp_path / "sessions")
    assert SessionManager.in_memory(tmp_path).get_cwd() == str(tmp_path)
    fork = SessionManager.fork_from(path, tmp_path / "project", tmp_path / "forks")
    assert os.path.dirname(fork.get_session_file()) == str(tmp_path / "forks")
    assert [info.path for info in SessionManager.list_all(tmp_path)] == [str(path)]
    found = SessionManager.find_by_id("/proj", "01a22bbb-5993-736f-8ed9-3b7e7d11bef3", tmp_path)
    assert found == str(path)
    env = Environment(tmp_path, home=tmp_path / "home")  # type: ignore[arg-type]
    assert env.cwd == str(tmp_path) and env.home == str(tmp_path / "home")
    assert SessionManager.open("s.jsonl", env=env, read_only=True).get_leaf_id() == "t1z"


@pytest.mark.parametrize(
    ("value", "received"),
    [(None, "null"), (5, "type number (5)"), (b"s.jsonl", "an instance of bytes")],
)
def test_an_argument_that_is_no_path_is_refused_with_nodes_error(tmp_path, value, received):
    message = f'The "path" argument must be of type string. Received {received}'
    with pytest.raises(
        InvalidArgTypeError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"
    ):
        SessionManager.open(value)
    with pytest.raises(InvalidArgTypeError):
        SessionManager.create(value)
    with pytest.raises(InvalidArgTypeError):
        SessionManager.list(value)
    manager = SessionManager.open(_session(tmp_path))
    with pytest.raises(InvalidArgTypeError) as raised:
        manager.set_session_file(value)
    assert raised.value.code == "ERR_INVALID_ARG_TYPE" and raised.value.name == "TypeError"
    assert manager.get_leaf_id() == "t1z" and manager.get_session_file() == str(tmp_path / "s.jsonl")


_TYPED_USER_CODE = """\
from pathlib import Path

from pi_session_server.session import SessionManager, StrPath


def given(where: StrPath) -> None:
    SessionManager.open(Path("s.jsonl"), session_dir=None, cwd_override=where)
    SessionManager.create(where, Path("sessions"))
    SessionManager.fork_from("s.jsonl", Path("p"))
    SessionManager.list_all(lambda loaded, total, partial: None)


def wrong(manager: SessionManager) -> None:
    SessionManager.open(42)  # no path
    SessionManager.list(b"/project")  # no path
    manager.set_session_file(None)  # no path
    SessionManager.find_by_id(["/project"], "id")  # no path
"""


def test_mypy_tells_a_user_who_passes_what_is_no_path(tmp_path):
    """The path parameters are typed (``StrPath``): mypy finds a wrong one in a user's program,
    as the library refuses it when it runs. (mypy runs in a process of its own: it raises the
    recursion limit and the collector's thresholds of the process it runs in for good.)"""
    program = tmp_path / "user_program.py"
    program.write_text(_TYPED_USER_CODE, encoding="utf-8")
    flags = ["--strict", "--follow-imports=silent", "--cache-dir", os.devnull, "--no-error-summary"]
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", *flags, str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    report, errors = ran.stdout, ran.stderr
    flagged = [int(line.split(":")[1]) for line in report.splitlines() if ": error:" in line]
    wrong = [n for n, line in enumerate(_TYPED_USER_CODE.splitlines(), 1) if line.endswith("# no path")]
    assert flagged == wrong and len(wrong) == 4, report + errors
    assert all('expected "str | PathLike[str]' in line for line in report.splitlines()), report


def test_a_read_only_open_of_a_missing_file_makes_no_directory(tmp_path):
    missing = tmp_path / "not" / "there" / "s.jsonl"
    manager = SessionManager.open(missing, read_only=True)
    assert manager.build_session_context() == {"messages": [], "thinkingLevel": "off", "model": None}
    assert not (tmp_path / "not").exists()
    with pytest.raises(ReadOnlySessionError):
        manager.append_message(S.user_message())
    assert not (tmp_path / "not").exists()


def test_create_branched_session_of_a_read_only_manager_is_refused_changing_nothing(tmp_path):
    path = _session(tmp_path)
    manager = SessionManager.open(path, read_only=True)
    with pytest.raises(ReadOnlySessionError):
        manager.create_branched_session("t0z")
    assert manager.get_session_file() == str(path) and manager.get_leaf_id() == "t1z"
    assert sorted(os.listdir(tmp_path)) == ["s.jsonl"]


@pytest.mark.parametrize("pi", ["0.86.1", "1.6.0"])
def test_a_value_json_cannot_hold_is_refused_before_anything_changes(tmp_path, pi):
    manager = SessionManager.create(tmp_path, tmp_path / "sessions", pi=pi)
    with pytest.raises(ValueTypeError, match="custom entry cannot be written as JSON"):
        manager.append_custom_entry("x", {"tags": {"a", "b"}})
    with pytest.raises(ValueTypeError, match="message entry cannot be written as JSON"):
        manager.append_message({"role": "user", "content": "hi", 1: 2})
    assert manager.get_entries() == [] and manager.get_leaf_id() is None
    # the session is not spoilt: its file appears with the first answer, as always
    entry_id = manager.append_message(S.assistant_message("answer"))
    assert SessionManager.open(manager.get_session_file(), read_only=True).get_leaf_id() == entry_id
    loaded = SessionManager.open(manager.get_session_file(), pi=pi)
    with pytest.raises(ValueTypeError):
        loaded.append_message({"role": "user", "content": b"bytes"})
    assert loaded.get_leaf_id() == entry_id
    assert loaded.get_session_file() and len(Path(loaded.get_session_file()).read_text().splitlines()) == 2


def test_in_memory_takes_its_entries_as_a_tuple_as_it_does_a_list():
    entries = (
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    )
    from_tuple = SessionManager.in_memory("/p", entries=entries)
    from_list = SessionManager.in_memory("/p", entries=list(entries))
    assert from_tuple.get_session_id() == from_list.get_session_id() == "s1"
    assert from_tuple.build_session_context() == from_list.build_session_context()
    assert from_tuple.build_session_context()["messages"] == [
        {"role": "user", "content": "hi", "timestamp": 1}
    ]


def test_an_entry_that_holds_itself_is_refused_as_pi_refuses_it(tmp_path):
    """pi's JSON.stringify throws on it; the append looped for ever, its memory growing."""
    manager = SessionManager.open(_session(tmp_path))
    leaf = manager.get_leaf_id()
    data: dict[str, object] = {}
    data["self"] = data
    with pytest.raises(ValueTypeError, match="Converting circular structure to JSON"):
        manager.append_custom_entry("x", data)
    assert manager.get_leaf_id() == leaf
    assert manager.append_custom_entry("x", {"fine": True})
