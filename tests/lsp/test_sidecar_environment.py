"""The sidecar's environment: a request may give the working directory, HOME, agent directory and
PI_CODING_AGENT_SESSION_DIR pi would read from its process (``environment``), the client may set them for the whole server
(``initializationOptions.environment``), and the server's own are its process's at start. The server
never changes its own working directory or variables for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import assistant_message, user_message
from sidecar_support import EXAMPLE, expect_error, server_env, sidecar_fixture  # noqa: F401  (fixture)

from pi_session_server.server.errors import SESSION_ERROR
from pi_session_server.server.stdio_client import RpcError, SidecarClient, default_command

USER = user_message("hello", 1)
ASSISTANT = assistant_message("hi", 2)


def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "project"
    (work / "home").mkdir(parents=True)
    return work, {"cwd": str(work), "home": str(work / "home")}


async def test_a_request_finds_its_files_in_its_environment(sidecar, tmp_path):
    work, environment = project(tmp_path)
    created = await sidecar.request(
        "pi/create", {"cwd": "app", "sessionDir": "sessions", "environment": environment}
    )
    session = created["session"]
    assert created["cwd"] == str(work / "app") and created["sessionDir"] == "sessions"
    for message in (USER, ASSISTANT):
        await sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    info = await sidecar.request("pi/getInfo", {"session": session})
    relative = info["sessionFile"]
    assert relative.startswith("sessions/")  # as pi reports it
    assert info["uri"] == (work / relative).as_uri()  # the file itself
    assert (work / relative).exists()
    assert not (tmp_path / "sessions").exists()  # the server's own directory is untouched
    listed = await sidecar.request(
        "pi/list", {"cwd": "app", "sessionDir": "sessions", "environment": environment}
    )
    assert [s["path"] for s in listed] == [relative]
    found = await sidecar.request(
        "pi/findById",
        {"cwd": "app", "id": info["sessionId"], "sessionDir": "sessions", "environment": environment},
    )
    assert found == relative
    opened = await sidecar.request("pi/open", {"path": relative, "environment": environment})
    assert opened["sessionFile"] == str(work / relative) and opened["entryCount"] == 2
    # a session keeps its environment: a relative path of a later request is found there too
    switched = await sidecar.request("pi/setSessionFile", {"session": opened["session"], "path": relative})
    assert switched["sessionFile"] == str(work / relative)


async def test_home_and_agent_directory_of_a_request(sidecar, tmp_path):
    work, environment = project(tmp_path)
    at_home = await sidecar.request(
        "pi/create", {"cwd": "/p", "sessionDir": "~/s", "environment": environment}
    )
    assert at_home["sessionDir"] == str(work / "home" / "s")
    default = await sidecar.request(
        "pi/create", {"cwd": "/p", "environment": {**environment, "agentDir": "agent"}}
    )
    assert default["sessionDir"] == str(work / "agent" / "sessions" / "--p--")
    assert default["usesDefaultSessionDir"] is True
    memory = await sidecar.request("pi/inMemory", {"environment": environment})
    assert memory["cwd"] == str(work)
    # left out: the server's own (its process's: started in tmp_path, HOME tmp_path/home)
    own = await sidecar.request("pi/create", {"cwd": "/p"})
    assert own["sessionDir"] == str(tmp_path / "agent" / "sessions" / "--p--")
    assert (await sidecar.request("pi/inMemory", {}))["cwd"] == str(tmp_path)


async def test_an_environment_must_have_an_absolute_working_directory(sidecar):
    with expect_error(-32602) as failure:
        await sidecar.request("pi/inMemory", {"environment": {"cwd": "relative"}})
    assert "environment.cwd" in failure.value.message
    with expect_error(-32602):
        await sidecar.request("pi/list", {"cwd": "/p", "environment": {"home": 5}})


async def test_paths_of_an_environment_with_lone_surrogates_are_the_file_systems(sidecar, tmp_path):
    """As every path of a request: a lone surrogate is U+FFFD, as Node gives it to the file system."""
    work, environment = project(tmp_path)
    odd = {**environment, "cwd": str(work) + "/\ud800", "home": str(work) + "/\udfff"}
    created = await sidecar.request("pi/create", {"cwd": "app", "sessionDir": "~/s", "environment": odd})
    assert created["cwd"] == str(work / "\ufffd" / "app")
    assert created["sessionDir"] == str(work / "\ufffd" / "s")
    listed = await sidecar.request(
        "pi/list", {"cwd": "/p", "environment": {"agentDir": str(work) + "/\ud800"}}
    )
    assert listed == []
    with expect_error(-32602) as failure:  # a member of another type: its type error, named
        await sidecar.request("pi/getTree", {"uri": (tmp_path / "x.jsonl").as_uri(), "filter": "\ud800"})
    assert "$.filter" in failure.value.message


def pi_sessions(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project whose pi settings keep sessions in ``elsewhere``, and one session of it in each of
    ``custom`` and ``other``; the environment of requests about it."""
    work = tmp_path / "project"
    (work / ".pi").mkdir(parents=True)
    (work / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": str(tmp_path / "elsewhere")}))
    header = json.loads(EXAMPLE.read_text().splitlines()[0])
    for name in ("custom", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "s.jsonl").write_text(EXAMPLE.read_text().replace(header["cwd"], str(work)))
    return work, {"cwd": str(work), "agentDir": str(tmp_path / "agent")}


def listed(sessions: list[dict[str, object]]) -> list[object]:
    return [s["path"] for s in sessions]


async def test_the_session_dir_of_a_request_is_its_pi_coding_agent_session_dir(sidecar, tmp_path):
    work, environment = pi_sessions(tmp_path)
    asked = {"cwd": str(work), "cliSessionDir": True, "text": "none"}
    assert await sidecar.request("pi/list", {**asked, "environment": environment}) == []  # the setting's
    over = {**environment, "sessionDir": str(tmp_path / "custom")}  # the variable comes before it
    assert listed(await sidecar.request("pi/list", {**asked, "environment": over})) == [
        str(tmp_path / "custom" / "s.jsonl")
    ]
    session_id = json.loads(EXAMPLE.read_text().splitlines()[0])["id"]
    found = {"cwd": str(work), "id": session_id, "cliSessionDir": True, "environment": over}
    assert await sidecar.request("pi/findById", found) == str(tmp_path / "custom" / "s.jsonl")


async def test_a_session_dir_node_refuses_is_nodes_error_naming_the_variable(sidecar, tmp_path):
    # pi stops at its start with Node's error alone; the request's environment stands for the variable
    work, environment = pi_sessions(tmp_path)
    asked = {"cwd": str(work), "cliSessionDir": True, "text": "none"}
    refusing = {**environment, "sessionDir": "file://other-host/s"}
    with expect_error(SESSION_ERROR) as refused:
        await sidecar.request("pi/list", {**asked, "environment": refusing})
    assert refused.value.message == (
        '$PI_CODING_AGENT_SESSION_DIR: File URL host must be "localhost" or empty on linux'
    )
    assert (refused.value.data["name"], refused.value.data["code"]) == (
        "TypeError",
        "ERR_INVALID_FILE_URL_HOST",
    )


@pytest.mark.slow
def test_the_servers_pi_coding_agent_session_dir_and_its_override(tmp_path: Path) -> None:
    work, environment = pi_sessions(tmp_path)
    env = {**server_env(tmp_path), "PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "custom")}
    asked = {"cwd": str(work), "cliSessionDir": True, "text": "none", "environment": environment}
    with SidecarClient(default_command(), env=env, cwd=str(tmp_path)) as client:
        client.initialize()
        assert listed(client.request("pi/list", asked)) == [str(tmp_path / "custom" / "s.jsonl")]
        # null: not set, the server's own left aside (the setting's directory is listed)
        unset = {**asked, "environment": {**environment, "sessionDir": None}}
        assert client.request("pi/list", unset) == []
    with SidecarClient(default_command(), env=env, cwd=str(tmp_path)) as client:
        client.initialize(options={"environment": {"sessionDir": str(tmp_path / "other")}})
        assert listed(client.request("pi/list", asked)) == [str(tmp_path / "other" / "s.jsonl")]


@pytest.mark.slow
def test_initialization_options_set_the_servers_environment(tmp_path: Path) -> None:
    work, _ = project(tmp_path)
    with SidecarClient(default_command(), env=server_env(tmp_path), cwd=str(tmp_path)) as client:
        client.initialize(options={"environment": {"cwd": str(work), "agentDir": "agent"}})
        created = client.request("pi/create", {"cwd": "app"})
        assert created["cwd"] == str(work / "app")
        assert created["sessionDir"] == str(
            work / "agent" / "sessions" / f"--{str(work)[1:].replace('/', '-')}-app--"
        )
        # a request's own environment still comes first
        memory = client.request("pi/inMemory", {"environment": {"cwd": str(tmp_path)}})
        assert memory["cwd"] == str(tmp_path)
    with SidecarClient(default_command(), env=server_env(tmp_path), cwd=str(tmp_path)) as client:
        client.initialize(options={"environment": {"cwd": "not absolute"}})  # logged, defaults stay
        assert client.request("pi/inMemory", {})["cwd"] == str(tmp_path)
    with SidecarClient(default_command(), env=server_env(tmp_path), cwd=str(tmp_path)) as client:
        client.initialize(options={"watchInterval": "\ud800"})  # logged, defaults stay
        assert client.request("pi/inMemory", {})["cwd"] == str(tmp_path)
        with pytest.raises(RpcError) as failure:
            client.request("pi/inMemory", {"environment": {"cwd": "x"}})
        assert failure.value.rpc_code == -32602
