"""The library's environment (session/environment.py): the working directory, HOME and the agent
directory are passed in, and a session given one never reads the process's.

Every test runs with the process in a directory and HOME of its own that the sessions must not use,
so a library call that still read the process would put files there (and fail the test)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from builders import assistant_message, user_message

from pi_session_server.errors import FsError
from pi_session_server.session import SessionManager, load_entries_from_file, storage
from pi_session_server.session.environment import Environment
from pi_session_server.session.listing import list_all_sessions
from pi_session_server.session.paths import get_agent_dir, get_default_session_dir, resolve_path

USER = user_message("hello", 1)
ASSISTANT = assistant_message("hi", 2)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's own directory and HOME, which no session below may touch."""
    process = tmp_path / "process"
    (process / "home").mkdir(parents=True)
    monkeypatch.chdir(process)
    monkeypatch.setenv("HOME", str(process / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    return process


def environment(root: Path, agent_dir: str | None = None) -> Environment:
    (root / "home").mkdir(parents=True, exist_ok=True)
    return Environment(str(root), str(root / "home"), agent_dir)


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_from_process_reads_the_process_at_that_call(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Environment.from_process() == Environment(str(elsewhere), str(elsewhere / "home"), None)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "agent")
    monkeypatch.delenv("HOME")
    assert Environment.from_process() == Environment(str(elsewhere), None, "agent")


def test_a_working_directory_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="absolute"):
        Environment("relative/dir")
    assert Environment("/w").on_disk("a/b.jsonl") == "/w/a/b.jsonl"
    assert Environment("/w").on_disk("/abs") == "/abs" and Environment("/w").on_disk("") == ""


def test_paths_resolve_in_the_environment(elsewhere: Path, tmp_path: Path) -> None:
    env = environment(tmp_path / "w", agent_dir="~/agent")
    assert resolve_path("proj", env=env) == str(tmp_path / "w" / "proj")
    assert resolve_path("~/x", env=env) == str(tmp_path / "w" / "home" / "x")
    assert get_agent_dir(env) == str(tmp_path / "w" / "home" / "agent")
    assert get_default_session_dir("/p", env=env) == str(
        tmp_path / "w" / "home" / "agent" / "sessions" / "--p--"
    )
    assert get_agent_dir(Environment("/w", "/h")) == "/h/.pi/agent"
    assert files_under(elsewhere) == []


def test_a_session_in_a_relative_directory_is_written_in_the_environment(
    elsewhere: Path, tmp_path: Path
) -> None:
    work = tmp_path / "w"
    env = environment(work)
    sm = SessionManager.create("proj", "sessions", env=env)
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    # pi's values, as pi reports them: the directory as given, the file joined to it
    assert sm.get_cwd() == str(work / "proj")
    assert sm.get_session_dir() == "sessions"
    assert sm.get_session_file().startswith("sessions/")
    assert sm.environment is env
    written = work / sm.get_session_file()
    assert len(written.read_text().splitlines()) == 3
    assert files_under(elsewhere) == []
    # the session follows its file where it is
    with written.open("a") as f:
        f.write(
            '{"type":"label","id":"l1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","targetId":"x"}\n'
        )
    assert sm.refresh_from_disk().kind == "appended"
    # and the listings find it there, reported as pi spells it
    listed = SessionManager.list("proj", "sessions", env=env)
    assert [info.path for info in listed] == [sm.get_session_file()]
    assert (
        SessionManager.find_by_id("proj", sm.get_session_id(), "sessions", env=env) == sm.get_session_file()
    )
    again = SessionManager.continue_recent("proj", "sessions", env=env)
    assert again.get_session_file() == str(written) and len(again.get_entries()) == 3
    assert [e["type"] for e in load_entries_from_file(sm.get_session_file(), env=env)] == [
        "session",
        "message",
        "message",
        "label",
    ]


def test_default_directories_and_in_memory_cwd_come_from_the_environment(
    elsewhere: Path, tmp_path: Path
) -> None:
    work = tmp_path / "w"
    env = environment(work, agent_dir="agent")
    sm = SessionManager.create("/proj", env=env)
    assert sm.get_session_dir() == str(work / "agent" / "sessions" / "--proj--")
    assert sm.uses_default_session_dir()
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    # the sessions root is the agent directory as set (relative here), as pi lists it
    listed = [info.path for info in list_all_sessions(env=env)]
    assert listed == [os.path.relpath(sm.get_session_file(), work)]
    assert SessionManager.in_memory(env=env).get_cwd() == str(work)
    forked = SessionManager.fork_from(sm.get_session_file(), "other", env=env)
    assert forked.get_cwd() == str(work / "other")
    assert forked.get_session_dir() == str(
        work / "agent" / "sessions" / f"--{str(work)[1:].replace('/', '-')}-other--"
    )
    assert files_under(elsewhere) == []


def test_errors_name_a_relative_path_as_given(elsewhere: Path, tmp_path: Path) -> None:
    env = environment(tmp_path / "w")
    (tmp_path / "w" / "d").mkdir()
    storage.create_exclusive("d/x.jsonl", b"{}\n", env=env)
    with pytest.raises(FsError) as failure:
        storage.create_exclusive("d/x.jsonl", b"{}\n", env=env)
    assert str(failure.value) == "EEXIST: file already exists, open 'd/x.jsonl'"
    assert (tmp_path / "w" / "d" / "x.jsonl").read_bytes() == b"{}\n"
    assert files_under(elsewhere) == []


def test_sessions_of_two_environments_at_once(elsewhere: Path, tmp_path: Path) -> None:
    """What the process-wide working directory could not do: two threads, two projects."""
    roots = [tmp_path / "a", tmp_path / "b"]
    failures: list[BaseException] = []

    def work(root: Path) -> None:
        try:
            env = environment(root)
            for _ in range(20):
                sm = SessionManager.create(".", "s", env=env)
                sm.append_message(USER)
                sm.append_message(ASSISTANT)
                assert sm.get_cwd() == str(root)
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(root,)) for root in roots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for root in roots:
        assert len(os.listdir(root / "s")) == 20
    assert files_under(elsewhere) == []
