"""Paths (docs/FORMAT.md §3): Node path semantics and pi's directories, checked against Node."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.errors import InvalidArgTypeError
from pi_session_server.session.paths import (
    default_session_dir_path,
    encode_cwd,
    file_url_to_path,
    get_agent_dir,
    get_default_session_dir,
    get_sessions_root,
    home_dir,
    node_join,
    node_normalize,
    node_resolve,
    normalize_path,
    resolve_path,
)

CORPUS = json.loads((Path(__file__).parent / "data" / "js_paths_corpus.json").read_text())


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A process cwd and HOME; PI_CODING_AGENT_DIR unset."""
    cwd, home = tmp_path / "w", tmp_path / "h"
    cwd.mkdir()
    home.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    return os.getcwd(), str(home)


@pytest.fixture
def corpus_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Pretend to be in the cwd and HOME the corpus was generated with (pure path computations)."""
    monkeypatch.setattr(os, "getcwd", lambda: CORPUS["cwd"])
    monkeypatch.setenv("HOME", CORPUS["home"])
    return CORPUS


def _wrap(fn: Any, *args: Any) -> dict[str, str]:
    try:
        return {"ok": fn(*args)}
    except ValueError as err:
        return {"err": str(err)}


def test_normalize_and_resolve_match_pi(corpus_env: dict[str, Any]) -> None:
    corpus = corpus_env
    assert [[p, _wrap(normalize_path, p)] for p, _ in corpus["normalize"]] == corpus["normalize"]
    assert [[p, _wrap(resolve_path, p)] for p, _ in corpus["resolve"]] == corpus["resolve"]


def test_node_path_functions_match_node(corpus_env: dict[str, Any]) -> None:
    corpus = corpus_env
    assert [[p, node_normalize(p)] for p, _ in corpus["node_normalize"]] == corpus["node_normalize"]
    assert [[a, node_join(*a)] for a, _ in corpus["join"]] == corpus["join"]
    assert [[a, node_resolve(*a)] for a, _ in corpus["node_resolve"]] == corpus["node_resolve"]


@pytest.mark.parametrize(
    ("cwd", "name"),
    [
        ("/Users/me/proj", "--Users-me-proj--"),
        ("/a/b/", "--a-b--"),
        ("/x/./y/../z", "--x-z--"),
        ("//double", "--double--"),
        ("/a:b\\c", "--a-b-c--"),
        ("/", "----"),
        ("relative/path", "--{cwd}-relative-path--"),
        ("C:\\Users\\me", "--{cwd}-C--Users-me--"),
        ("~", "--{home}--"),
    ],
)
def test_session_dir_encoding_table(env: tuple[str, str], cwd: str, name: str) -> None:
    process_cwd, home = env
    expected = name.format(cwd=encode_cwd(process_cwd), home=encode_cwd(home))
    path = default_session_dir_path(cwd, "/agent")
    assert path == f"/agent/sessions/{expected}"
    assert not os.path.exists(path)


def test_session_dir_encoding_table_with_spec_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The table of docs/FORMAT.md §3.1 assumes process cwd /w and HOME /h; only the computation is checked here.
    monkeypatch.setattr(os, "getcwd", lambda: "/w")
    monkeypatch.setenv("HOME", "/h")
    assert default_session_dir_path("relative/path", "/a") == "/a/sessions/--w-relative-path--"
    assert default_session_dir_path("C:\\Users\\me", "/a") == "/a/sessions/--w-C--Users-me--"
    assert default_session_dir_path("~", "/a") == "/a/sessions/--h--"


@pytest.mark.parametrize(
    ("resolved", "encoded"),
    [("/a/b", "a-b"), ("\\a\\b", "a-b"), ("//a", "-a"), ("a:b", "a-b"), ("", ""), ("/", "")],
)
def test_encode_cwd_removes_one_leading_separator(resolved: str, encoded: str) -> None:
    assert encode_cwd(resolved) == encoded


def test_agent_dir_default_and_env(env: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, home = env
    assert get_agent_dir() == f"{home}/.pi/agent"
    assert get_sessions_root() == f"{home}/.pi/agent/sessions"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "")
    assert get_agent_dir() == f"{home}/.pi/agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "rel/agent/")
    assert get_agent_dir() == "rel/agent/"  # normalized only, not made absolute
    assert get_sessions_root() == "rel/agent/sessions"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/x/../agent")
    assert get_agent_dir() == f"{home}/agent"


def test_default_dir_uses_resolved_agent_dir(env: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    cwd, home = env
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "rel")
    assert default_session_dir_path("/p") == f"{cwd}/rel/sessions/--p--"
    assert default_session_dir_path("/p", "") == f"{cwd}/sessions/--p--"
    assert default_session_dir_path("/p", "~/a/") == f"{home}/a/sessions/--p--"
    with pytest.raises(InvalidArgTypeError, match="Received null"):
        default_session_dir_path("/p", None)


def test_get_default_session_dir_creates_it(env: tuple[str, str]) -> None:
    _cwd, home = env
    path = get_default_session_dir("/some/proj")
    assert path == f"{home}/.pi/agent/sessions/--some-proj--"
    assert os.path.isdir(path)
    assert get_default_session_dir("/some/proj") == path  # existing: fine


def test_home_dir_follows_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/custom/home")
    assert home_dir() == "/custom/home"
    monkeypatch.setenv("HOME", "")
    assert home_dir() == ""  # Node/libuv: a set-but-empty HOME is used as is
    monkeypatch.delenv("HOME")
    assert home_dir().startswith("/")  # the passwd entry


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file://host/x", 'File URL host must be "localhost" or empty on linux'),
        ("file:///a%2Fb", "File URL path must not include encoded / characters"),
        ("file:///%E9", "URI malformed"),
        ("file://exa mple/x", "Invalid URL"),
    ],
)
def test_file_url_errors(url: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        file_url_to_path(url)


def test_resolve_with_base(env: tuple[str, str]) -> None:
    assert resolve_path("x/../y", "/base/dir/") == "/base/dir/y"
    assert resolve_path("/abs", "/base") == "/abs"
    assert resolve_path("~", "/base") == env[1]


# ---- NUL bytes: Node's TypeError, raised up front ----------------------------------------------------

NODE_NUL_MESSAGES = {  # what Node 20 says for fs.mkdirSync(path)
    "/tmp/\x00": "Received '/tmp/\\x00'",
    "/tmp/a\x00b\x07'x": 'Received "/tmp/a\\x00b\\x07\'x"',
    "a'b\"c`\x00": "Received 'a\\'b\"c`\\x00'",
    "a'b\"c\x00": "Received `a'b\"c\\x00`",
    "\\x\n\t\x7f\x85\x00": "Received '\\\\x\\n\\t\\x7F\\x85\\x00'",
    "/tmp/" + "x" * 200 + "\x00": "Received '/tmp/" + "x" * 122 + "...",
}


@pytest.mark.parametrize("path", list(NODE_NUL_MESSAGES))
def test_nul_bytes_raise_nodes_type_error(path: str) -> None:
    from pi_session_server.errors import InvalidArgValueError, PiSessionError
    from pi_session_server.session.paths import normalize_path, reject_null_bytes, resolve_path

    for call in (reject_null_bytes, normalize_path, resolve_path, lambda p: resolve_path("x", p)):
        with pytest.raises(InvalidArgValueError) as raised:
            call(path)
        error = raised.value
        assert isinstance(error, PiSessionError) and error.name == "TypeError"
        assert error.code == "ERR_INVALID_ARG_VALUE"
        assert error.message == (
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. "
            + NODE_NUL_MESSAGES[path]
        )


def test_nul_bytes_decoded_from_a_file_url_are_refused_too() -> None:
    from pi_session_server.errors import InvalidArgValueError
    from pi_session_server.session.paths import normalize_path

    with pytest.raises(InvalidArgValueError, match=r"Received '/a\\x00b'"):
        normalize_path("file:///a%00b")


def test_a_directory_that_cannot_be_made_is_nodes_mkdir_error(tmp_path) -> None:
    """``mkdirSync(path, {recursive: true})``'s error: the code, libuv's text, ``mkdir`` and the
    path asked for (not Python's strerror, nor the ``open`` a library failure used to be named)."""
    from pi_session_server.errors import FsError
    from pi_session_server.session.paths import make_dirs

    blocker = tmp_path / "file"
    blocker.write_text("")
    wanted = str(blocker / "sub" / "deeper")
    with pytest.raises(FsError) as failure:
        make_dirs(wanted)
    assert str(failure.value) == f"ENOTDIR: not a directory, mkdir '{wanted}'"
    assert (failure.value.code, failure.value.syscall, failure.value.path) == ("ENOTDIR", "mkdir", wanted)
    too_long = str(tmp_path / ("a" * 300))
    with pytest.raises(FsError) as failure:
        make_dirs(too_long)
    assert str(failure.value) == f"ENAMETOOLONG: name too long, mkdir '{too_long}'"
