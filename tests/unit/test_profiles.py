"""Semantics profiles: choosing the pi release, and what each release changes in the library.

The conformance vectors check every behaviour against the oracle under both releases; these tests
pin the library's own API around it: ``pi=`` on every entry point, the Profile a manager keeps, the
errors for unknown versions and for calls a release does not have, and how the sidecar's rollback
switch combines with pi 1.6.0's own rollback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from builders import assistant_message, user_message

from pi_session_server.errors import ContextEditError, FsError, PiSessionError, PiVersionError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import (
    DEFAULT_PI,
    PROFILES,
    SessionManager,
    build_session_context,
    build_session_projection,
    profile_for,
    project_context_entry,
)
from pi_session_server.session.describe import preview_of
from pi_session_server.session.paths import default_session_dir_path, paths_equal

RELEASES = ["0.86.1", "1.6.0"]


def user(text: str, ts: int = 1700000000000) -> dict[str, Any]:
    return user_message(text, ts)


def assistant(text: str, ts: int = 1700000000001) -> dict[str, Any]:
    return assistant_message(text, ts, provider="p", model="m")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- choosing a release ----------------------------------------------------------------------------


def test_the_default_is_the_newest_release() -> None:
    assert DEFAULT_PI == "1.6.0" == list(PROFILES)[-1]
    assert profile_for().version == "1.6.0"
    assert SessionManager.in_memory("/p").profile is PROFILES["1.6.0"]


def test_profiles_are_frozen_and_passed_through() -> None:
    profile = profile_for("0.86.1")
    assert profile_for(profile) is profile
    with pytest.raises(AttributeError):
        profile.version = "9"  # type: ignore[misc]


@pytest.mark.parametrize("bad", ["0.9", "1.6", "", None, 1.6])
def test_unknown_versions_are_refused_clearly(bad: Any) -> None:
    with pytest.raises(PiVersionError, match=r"supported versions are 0\.86\.1, 1\.6\.0") as err:
        profile_for(bad)
    assert isinstance(err.value, PiSessionError)


def test_an_unknown_version_fails_before_anything_is_written(home: Path) -> None:
    target = home / "s" / "new.jsonl"
    with pytest.raises(PiVersionError):
        SessionManager.open(str(target), pi="2.0")
    with pytest.raises(PiVersionError):
        SessionManager.create("/p", str(home / "c"), pi="2.0")
    assert not target.exists() and not (home / "s").exists() and not (home / "c").exists()


@pytest.mark.parametrize("pi", RELEASES)
def test_every_constructor_keeps_the_release(home: Path, pi: str) -> None:
    created = SessionManager.create("/p", str(home / "s"), pi=pi)
    created.append_message(user("hi"))
    created.append_message(assistant("yo"))
    path = created.get_session_file()
    managers = [
        created,
        SessionManager.open(path, pi=pi),
        SessionManager.open(path, read_only=True, pi=pi),
        SessionManager.continue_recent("/p", str(home / "s"), pi=pi),
        SessionManager.in_memory("/p", pi=pi),
        SessionManager.fork_from(path, "/q", str(home / "f"), pi=pi),
    ]
    assert [m.profile.version for m in managers] == [pi] * len(managers)
    managers[1].set_session_file(path)
    managers[1].new_session()
    assert managers[1].profile.version == pi  # switching files keeps the release


# -- what differs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("pi", RELEASES)
def test_the_first_write_of_a_new_session(home: Path, pi: str) -> None:
    manager = SessionManager.create("/p", str(home / "s"), pi=pi)
    manager.append_message({"role": "system", "content": "sys", "timestamp": 1})
    manager.append_message(user("hi"))
    assert os.path.exists(manager.get_session_file()) == (pi == "1.6.0")
    manager.append_message(assistant("yo"))
    lines = Path(manager.get_session_file()).read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["session", "message", "message", "message"]


def _blocked_session(home: Path, pi: str) -> SessionManager:
    """A written session whose next append fails (the file was replaced by a directory)."""
    manager = SessionManager.create("/p", str(home / "s"), pi=pi)
    manager.append_message(user("hi"))
    manager.append_message(assistant("yo"))
    path = manager.get_session_file()
    os.remove(path)
    os.mkdir(path)
    return manager


@pytest.mark.parametrize("pi", RELEASES)
@pytest.mark.parametrize("rollback", [False, True])
def test_a_failed_append(home: Path, pi: str, rollback: bool) -> None:
    manager = _blocked_session(home, pi)
    manager.rollback_failed_appends = rollback  # the sidecar's switch (pi 0.86.1 keeps the entry)
    leaf = manager.get_leaf_id()
    with pytest.raises(FsError):
        manager.append_message(user("lost"))
    taken_back = rollback or pi == "1.6.0"  # pi 1.6.0 always takes it back
    assert len(manager.get_entries()) == (2 if taken_back else 3)
    assert (manager.get_leaf_id() == leaf) == taken_back
    assert manager.get_entry_count() == len(manager.get_entries())


def test_keep_nothing_compactions(home: Path) -> None:
    for pi, given, written in [
        ("0.86.1", None, None),
        ("0.86.1", "", ""),
        ("1.6.0", None, "own"),
        ("1.6.0", "", ""),
    ]:
        manager = SessionManager.in_memory("/p", pi=pi)
        manager.append_message(user("hi"))
        own = manager.append_compaction("s", given, 5)
        value = manager.get_entry(own)["firstKeptEntryId"]
        assert value == (own if written == "own" else written), (pi, given)
    old = SessionManager.in_memory("/p", pi="0.86.1")
    old.append_message(user("hi"))
    assert "firstKeptEntryId" not in old.get_entry(old.append_compaction("s", ABSENT, 5))
    new = SessionManager.in_memory("/p", pi="1.6.0")
    new.append_message(user("hi"))
    own = new.append_compaction("s", ABSENT, 5)
    assert new.get_entry(own)["firstKeptEntryId"] == own


@pytest.mark.parametrize("pi", RELEASES)
def test_default_directory_spellings(home: Path, pi: str) -> None:
    default = default_session_dir_path("/p")
    spellings = [default, default + "/", default + "/./x/..", os.path.relpath(default)]
    same = [SessionManager.create("/p", d, pi=pi).uses_default_session_dir() for d in spellings]
    assert same == ([True, False, False, False] if pi == "0.86.1" else [True, True, True, True])


def test_paths_equal_resolves_both_sides(home: Path) -> None:
    assert paths_equal("/a/b/", "/a/b")
    assert paths_equal("b", str(home / "b"))
    assert paths_equal("/a/./c/../b", "/a/b")
    assert not paths_equal("/a/B", "/a/b")  # case-folding is Windows-only


@pytest.mark.parametrize("pi", RELEASES)
def test_find_by_id_and_continue_recent_follow_the_release(home: Path, pi: str) -> None:
    default = default_session_dir_path("/p")
    other = SessionManager.create("/elsewhere", default, {"id": "other"}, pi=pi)
    other.append_message(user("hi"))
    other.append_message(assistant("yo"))
    spelled = default + "/"
    found = SessionManager.find_by_id("/p", "other", spelled, pi=pi)
    recent = SessionManager.continue_recent("/p", spelled, pi=pi)
    if pi == "0.86.1":  # a custom directory: filtered by the header cwd
        assert found is not None and not isinstance(found, str)
        assert recent.get_session_id() != "other"
    else:
        assert found == other.get_session_file()
        assert recent.get_session_id() == "other"


# -- context edits ---------------------------------------------------------------------------------


def _chat(pi: str) -> tuple[SessionManager, str, str]:
    manager = SessionManager.in_memory("/p", pi=pi)
    u = manager.append_message(user("question"))
    a = manager.append_message(assistant("answer"))
    return manager, u, a


def test_context_edits_are_a_1_6_0_call() -> None:
    manager, u, _a = _chat("0.86.1")
    with pytest.raises(PiVersionError, match=r"appendContextEdit is not part of pi 0\.86\.1"):
        manager.append_context_edit(u, None)
    assert len(manager.get_entries()) == 2


def test_append_context_edit_and_the_projection() -> None:
    manager, u, a = _chat("1.6.0")
    edit = manager.append_context_edit(a, {"content": "short", "note": 1})
    stored = manager.get_entry(edit)
    assert list(stored) == ["type", "id", "parentId", "timestamp", "targetId", "replacement"]
    assert stored["replacement"] == {"content": [{"type": "text", "text": "short"}]}  # normalized
    manager.append_context_edit(u, None)
    context = manager.build_session_context()
    assert [m["role"] for m in context["messages"]] == ["assistant"]
    assert context["messages"][0]["content"] == [{"type": "text", "text": "short"}]
    projection = manager.build_session_projection()
    assert [(p["sourceEntry"]["type"], len(p["messages"])) for p in projection["entries"]] == [
        ("message", 0),
        ("message", 1),
        ("context_edit", 0),
        ("context_edit", 0),
    ]
    assert projection["messages"] == context["messages"]
    # the same entries read by pi 0.86.1: edits are an unknown entry type
    entries = manager.get_entries()
    assert [m["role"] for m in build_session_context(entries, pi="0.86.1")["messages"]] == [
        "user",
        "assistant",
    ]
    assert build_session_projection(entries, pi="1.6.0")["messages"] == context["messages"]


@pytest.mark.parametrize(
    ("target", "replacement", "message"),
    [
        ("u", {"content": 5}, "Context edit replacement must be null or contain string/array content"),
        ("u", "text", "Context edit replacement must be null or contain string/array content"),
        ("nope", None, "Entry nope not found"),
        ("s", None, "Entry s does not contribute editable model content"),
    ],
)
def test_refused_edits_change_nothing(target: str, replacement: Any, message: str) -> None:
    manager = SessionManager.in_memory(
        "/p",
        pi="1.6.0",
        entries=[
            {
                "type": "session",
                "version": 3,
                "id": "x",
                "timestamp": "2025-01-01T00:00:00.000Z",
                "cwd": "/p",
            },
            {
                "type": "message",
                "id": "s",
                "parentId": None,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "system", "content": "sys", "timestamp": 1},
            },
            {
                "type": "message",
                "id": "u",
                "parentId": "s",
                "timestamp": "2025-01-01T00:00:02.000Z",
                "message": user("q"),
            },
        ],
    )
    with pytest.raises(PiSessionError, match=message) as err:
        manager.append_context_edit(target, replacement)
    assert type(err.value).__name__ in ("ContextEditError", "EntryNotFoundError")
    assert len(manager.get_entries()) == 2 and manager.get_leaf_id() == "u"


def test_an_edit_off_the_active_branch_is_refused() -> None:
    manager, u, _a = _chat("1.6.0")
    manager.branch(u)
    other = manager.append_message(user("other branch"))
    manager.branch(other)
    with pytest.raises(ContextEditError, match="is not on the active branch"):
        manager.append_context_edit(_a, None)


def test_d10_malformed_edits_are_not_edits() -> None:
    target = {"type": "message", "id": "u", "parentId": None, "timestamp": "t", "message": user("q")}
    good = {
        "type": "context_edit",
        "id": "e1",
        "parentId": "u",
        "timestamp": "t",
        "targetId": "u",
        "replacement": {"content": "a"},
    }
    broken = {"type": "context_edit", "id": "e2", "parentId": "e1", "timestamp": "t", "targetId": "u"}
    messages = build_session_context([target, good, broken], pi="1.6.0")["messages"]
    assert [m["content"] for m in messages] == ["a"]  # the later malformed edit does not override
    assert project_context_entry(target, broken) == [user("q")]
    assert project_context_entry(target, 7) == [user("q")]
    assert project_context_entry(target, good) == [{**user("q"), "content": "a"}]


@pytest.mark.parametrize("pi", RELEASES)
def test_older_compactions_in_the_kept_range(pi: str) -> None:
    manager = SessionManager.in_memory("/p", pi=pi)
    u1 = manager.append_message(user("one"))
    manager.append_compaction("first", u1, 10)
    manager.append_message(user("two"))
    manager.append_compaction("second", u1, 20)
    roles = [m["role"] for m in manager.build_session_context()["messages"]]
    inner = ["compactionSummary"] if pi == "0.86.1" else []
    assert roles == ["compactionSummary", "user", *inner, "user"]


def test_entry_count_is_the_number_of_distinct_ids() -> None:
    header = {
        "type": "session",
        "version": 3,
        "id": "x",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/p",
    }
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": user("q")}
    manager = SessionManager.in_memory("/p", entries=[header, entry, dict(entry)])
    assert manager.get_entry_count() == 1 and manager.entry_count() == 2


def test_context_edits_show_in_the_tree_as_pi_1_6_0_shows_them() -> None:
    def edit(replacement: Any) -> dict[str, Any]:
        return {
            "type": "context_edit",
            "id": "e",
            "parentId": "u",
            "timestamp": "t",
            "targetId": "u1",
            "replacement": replacement,
        }

    assert preview_of(edit(None), {}) == "[context omit: u1]"
    assert preview_of(edit({"content": "x"}), {}) == "[context replace: u1]"
