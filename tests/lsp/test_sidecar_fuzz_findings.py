"""What the sidecar fuzz (test_sidecar_fuzz_params.py) found, each as its smallest request, over the
wire: replies checked against protocol/ by ``Sidecar.request`` (a -32602 only for params the schema
refuses, a result only for params it accepts, an error code only where the method documents it)."""

from __future__ import annotations

import json

from sidecar_support import EXAMPLE, expect_error, sidecar_fixture  # noqa: F401  (fixture)

from pi_session_server.format.jsjson import dumps_bytes
from pi_session_server.server.errors import FS_ERROR, SESSION_ERROR


async def test_whole_numbers_written_as_floats_are_progress_tokens(sidecar):
    # JSON has one number type: 1e+30 (how JavaScript writes 10**30) and 4.0 are integers
    assert await sidecar.request("pi/sessions", {"workDoneToken": 1e30}) == []
    assert await sidecar.request("pi/sessions", {"workDoneToken": 4.0}) == []


async def test_an_unknown_member_whose_name_holds_a_lone_surrogate_is_ignored(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    leaf = await sidecar.request("pi/getLeaf", {"session": session, "\ud800": 1})
    assert leaf["leafId"] == (await sidecar.request("pi/getLeaf", {"session": session}))["leafId"]
    listing = await sidecar.request(
        "pi/list", {"cwd": str(tmp_path), "environment": {"\udc00x": True}, "text": "none"}
    )
    assert listing == []


async def test_a_file_url_node_refuses_is_nodes_error(sidecar, tmp_path):
    session_file = tmp_path / "s.jsonl"
    cases = [
        ("file://other-host" + str(session_file), "TypeError", "ERR_INVALID_FILE_URL_HOST"),
        ("file://" + str(tmp_path) + "/a%2Fb.jsonl", "TypeError", "ERR_INVALID_FILE_URL_PATH"),
        ("file://" + str(tmp_path) + "/%E9.jsonl", "URIError", None),
    ]
    for url, name, code in cases:
        for method, params in (("pi/getLeaf", {"uri": url}), ("pi/list", {"cwd": url})):
            with expect_error(SESSION_ERROR) as refused:
                await sidecar.request(method, params)
            data = refused.value.data
            assert data["name"] == name, (method, url)
            assert data.get("code") == code, (method, url)
    with expect_error(SESSION_ERROR) as refused:
        await sidecar.request("pi/getLeaf", {"uri": cases[0][0]})
    assert refused.value.message == 'File URL host must be "localhost" or empty on linux'


async def test_tree_switches_that_are_off_go_with_every_form(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    for form in ("nested", "reference"):
        tree = await sidecar.request(
            "pi/getTree", {"session": session, "form": form, "chain": False, "levels": False}
        )
        assert tree
    page = await sidecar.request(
        "pi/getTree", {"session": session, "levels": True, "aroundId": "b9c0d1e2", "chain": False}
    )
    assert page["levels"]


async def test_params_that_cannot_go_together_are_refused_whatever_session_they_name(sidecar, tmp_path):
    refused = [
        ("pi/getTree", {"session": "s-none", "form": "nested", "offset": 1}),
        ("pi/getTree", {"session": "s-none", "levels": True}),
        ("pi/getTree", {"uri": (tmp_path / "missing.jsonl").as_uri(), "form": "reference", "rootId": "x"}),
        ("pi/getEntries", {"session": "s-none", "since": "a1b2c3d4", "offset": 0}),
    ]
    for method, params in refused:
        with expect_error(-32602):
            await sidecar.request(method, params)


async def test_stats_of_a_session_holding_a_value_nested_deeper_than_msgspec_decodes(sidecar, tmp_path):
    details: object = "bottom"
    for _ in range(3000):
        details = {"k": [details]}
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    summary = {
        "type": "branch_summary",
        "id": "deep0001",
        "parentId": json.loads(lines[-1])["id"],
        "timestamp": "2026-01-01T00:00:00.000Z",
        "fromId": json.loads(lines[-1])["id"],
        "summary": "deep",
        "details": details,
        "usage": {"input": 1, "output": 2, "totalTokens": 3},
    }
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n" + _deep_json(summary) + "\n", encoding="utf-8")
    stats = await sidecar.request("pi/getStats", {"uri": path.as_uri()})
    assert stats["types"]["branch_summary"] >= 1


def _deep_json(value: object) -> str:
    return dumps_bytes(value).decode("utf-8")  # (the standard library's encoder stops 1,000 deep)


async def test_listing_errors_of_the_file_system_are_documented(sidecar, tmp_path):
    not_a_directory = tmp_path / "notes.txt"
    not_a_directory.write_text("x", encoding="utf-8")
    environment = {"agentDir": str(not_a_directory)}
    for method, params in (
        ("pi/findById", {"cwd": str(tmp_path), "id": "x", "environment": environment}),
        ("pi/list", {"cwd": str(tmp_path), "environment": environment}),
    ):
        with expect_error(FS_ERROR) as refused:
            await sidecar.request(method, params)
        assert refused.value.data["code"] == "ENOTDIR"


async def test_the_tree_of_a_new_session_whose_one_entry_is_not_written_yet(sidecar, tmp_path):
    # pi 1.6.0 writes a new session's file with its first user or assistant message: until then
    # its entries are on no line of the file
    info = await sidecar.request("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")})
    session = info["session"]
    appended = await sidecar.request(
        "pi/append", {"session": session, "kind": "model_change", "provider": "p", "modelId": "m"}
    )
    for tree_filter in ("none", "all"):
        tree = await sidecar.request("pi/getTree", {"session": session, "filter": tree_filter})
        assert [node["id"] for node in tree["nodes"]] == [appended["id"]]
    assert (await sidecar.request("pi/getTree", {"session": session, "filter": "default"}))["nodes"] == []
