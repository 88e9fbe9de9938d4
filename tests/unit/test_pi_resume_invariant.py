"""Port of pi's ``packages/coding-agent/test/session-manager/resume-invariant.test.ts``.

Source: earendil-works/pi (as indexed) @ 29912587. That later pi makes ``open(path)`` without a
session directory prefer the cwd's default directory when it exists. In 0.86.1 the directory is
always the file's parent (docs/API.md §3.3 step 4; verified against the reference), so after resuming a
session from an aggregate directory ``list`` filters by cwd (docs/API.md §3.4 step 2). The first two cases keep
the upstream scenario and assert 0.86.1; the third (the fallback) agrees with upstream.
"""

from __future__ import annotations

import pytest
from builders import assistant_message, user_message

from pi_session_server.session import SessionManager, get_default_session_dir


def create_persisted_session_in_dir(directory, cwd):
    session = SessionManager.create(cwd, directory)
    session.append_message(user_message(f"from {cwd}"))
    session.append_message(assistant_message(f"reply from {cwd}"))
    session_file = session.get_session_file()
    assert isinstance(session_file, str)
    return session_file


def _info_path(info):
    return info.path if hasattr(info, "path") else info["path"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    agent_dir = tmp_path / "pi-resume-agent"
    aggregate_dir = tmp_path / "pi-resume-agg"
    aggregate_dir.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(tmp_path)
    project_a = str(tmp_path / "pi-resume-projA")
    project_b = str(tmp_path / "pi-resume-projB")
    project_a_default_dir = get_default_session_dir(project_a)  # creates it
    return {
        "tmp": tmp_path,
        "aggregate": str(aggregate_dir),
        "project_a": project_a,
        "project_b": project_b,
        "project_a_default": project_a_default_dir,
    }


def test_resume_invariant__open_keeps_the_files_parent_as_session_dir_even_if_cwd_default_exists_spec_differs(
    env,
):
    file_a = create_persisted_session_in_dir(env["aggregate"], env["project_a"])
    create_persisted_session_in_dir(env["aggregate"], env["project_b"])
    assert env["aggregate"] != env["project_a_default"]

    manager = SessionManager.open(file_a)
    # upstream (later pi): the cwd's default dir, usesDefaultSessionDir() true
    assert manager.get_session_dir() == env["aggregate"]
    assert manager.uses_default_session_dir() is False
    assert manager.get_cwd() == env["project_a"]


def test_resume_invariant__resume_picker_lists_same_cwd_sessions_of_the_aggregate_dir_spec_differs(env):
    in_default = create_persisted_session_in_dir(env["project_a_default"], env["project_a"])
    file_a = create_persisted_session_in_dir(env["aggregate"], env["project_a"])
    create_persisted_session_in_dir(env["aggregate"], env["project_b"])

    manager = SessionManager.open(file_a)
    listed = [_info_path(info) for info in SessionManager.list(manager.get_cwd(), manager.get_session_dir())]
    # upstream (later pi): contains in_default, not file_a. 0.86.1: the aggregate dir filtered by cwd.
    assert listed == [file_a]
    assert in_default not in listed


def test_resume_invariant__falls_back_to_the_files_parent_dir_when_the_cwds_default_dir_does_not_exist(env):
    project_c = str(env["tmp"] / "pi-resume-projC")
    file_c = create_persisted_session_in_dir(env["aggregate"], project_c)
    manager = SessionManager.open(file_c)
    assert manager.get_session_dir() == env["aggregate"]
    assert manager.uses_default_session_dir() is False
