"""What the session viewer and the lazy tree views ask over the wire: pi/getPath, pi/getStats and
pi/getTree's ``chain`` and ``aroundId`` (every reply is checked against protocol/ by the fixture)."""

from __future__ import annotations

import json

import builders as S
import pytest
from sidecar_support import RpcFailure, sidecar_fixture  # noqa: F401  (fixture)


async def test_the_path_in_pages_and_through_another_branch(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    first = await sidecar.request("pi/getPath", {"uri": path.as_uri(), "limit": 10})
    assert (
        first["total"] == 28
        and first["hasMore"]
        and first["nextOffset"] == 10
        and first["endId"] == "e2f3a4b5"
    )
    rest = await sidecar.request("pi/getPath", {"session": session, "offset": 10, "limit": 1000})
    branch = await sidecar.request("pi/getBranch", {"session": session})
    assert [i["entry"] for i in first["items"] + rest["items"]] == branch
    other = await sidecar.request("pi/getPath", {"session": session, "entryId": "b1c2d3e4", "descend": True})
    assert other["endId"] != "e2f3a4b5" and other["items"][14]["siblingIds"] == ["b1c2d3e4", "d9e0f1a2"]
    lines = path.read_text().splitlines()
    assert all(json.loads(lines[i["line"]]) == i["entry"] for i in other["items"])
    for params, code in [
        ({"entryId": "nope"}, -32002),
        ({"limit": 0}, -32602),
        ({"offset": -1}, -32602),
        ({"descend": "yes"}, -32602),
    ]:
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getPath", {"session": session, **params})
        assert failure.value.code == code, params


async def test_the_stats_follow_an_append(sidecar, tmp_path):
    session, _path = await sidecar.open_example(tmp_path)
    stats = await sidecar.request("pi/getStats", {"session": session})
    assert stats["entryCount"] == 36 and stats["roles"]["assistant"] == 12 and stats["branchPoints"] == 2
    # (as pi counts them: the turns', the tool results', the usage entry's and the summaries' usage)
    assert stats["tokens"]["total"] == 73184 and abs(stats["cost"] - 0.110901) < 1e-9
    message = {
        "role": "assistant",
        "content": [],
        "provider": "openai",
        "model": "gpt",
        "usage": S.usage(10, 5, 0.25),
        "timestamp": 1,
    }
    await sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    after = await sidecar.request("pi/getStats", {"session": session})
    assert after["entryCount"] == 37 and after["tokens"]["total"] == 73199
    assert after["models"]["openai/gpt"] == {"turns": 1, "totalTokens": 15, "cost": 0.25}


async def test_tree_chains_and_the_page_around_the_leaf(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    base = {"session": session, "filter": "default", "activeBranchFirst": True}
    top = await sidecar.request("pi/getTree", {**base, "chain": True, "limit": 50})
    assert top["total"] == len(top["nodes"]) and top["nodes"][-1]["id"] == "9d0e1f2a"
    assert top["nodes"][-1]["isBranchPoint"] and all(len(n["childIds"]) == 1 for n in top["nodes"][:-1])
    around = await sidecar.request("pi/getTree", {**base, "chain": True, "limit": 2, "aroundId": "e2f3a4b5"})
    assert around["aroundIndex"] == top["total"] - 1 and around["offset"] == top["total"] - 2
    assert [n["id"] for n in around["nodes"]] == [n["id"] for n in top["nodes"][-2:]]
    branch = await sidecar.request(
        "pi/getTree", {**base, "rootId": "d9e0f1a2", "chain": True, "aroundId": "e2f3a4b5", "limit": 4}
    )
    assert branch["nodes"][branch["aroundIndex"] - branch["offset"]]["id"] == "e2f3a4b5"
    assert branch["nodes"][-1]["isLeaf"] and not branch["hasMore"]
    for params, code in [
        ({"aroundId": "nope"}, -32002),
        ({"form": "nested", "chain": True}, -32602),
        ({"form": "reference", "aroundId": "e2f3a4b5"}, -32602),
        ({"chain": 1}, -32602),
    ]:
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getTree", {"session": session, **params})
        assert failure.value.code == code, params


async def test_tree_levels_down_to_the_leaf_in_one_reply(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    base = {"session": session, "filter": "default", "activeBranchFirst": True}
    got = await sidecar.request("pi/getTree", {**base, "levels": True, "aroundId": "e2f3a4b5", "limit": 2})
    assert got["complete"] and got["leafId"] == "e2f3a4b5"
    assert [level["kind"] for level in got["levels"]][:2] == ["top", "branches"]
    for level in got["levels"]:  # each level is the reply of its own window
        window = {k: level[k] for k in ("rootId", "chain", "depth") if k in level}
        limit = 3 if level["kind"] == "branches" else 2
        alone = await sidecar.request(
            "pi/getTree", {**base, **window, "aroundId": "e2f3a4b5", "limit": limit}
        )
        assert {k: v for k, v in level.items() if k not in ("kind", "rootId", "chain", "depth")} == {
            k: v
            for k, v in alone.items()
            if k not in ("leafId", "revision")  # (the reply's, not the level's)
        }
        assert alone["revision"] == got["revision"]
    last = got["levels"][-1]
    assert last["nodes"][last["aroundIndex"] - last["offset"]]["id"] == "e2f3a4b5"
    for params, code in [
        ({"levels": True}, -32602),
        ({"levels": True, "aroundId": "e2f3a4b5", "chain": True}, -32602),
        ({"levels": True, "aroundId": "e2f3a4b5", "form": "nested"}, -32602),
        ({"levels": True, "aroundId": "e2f3a4b5", "offset": 3}, -32602),
        ({"levels": True, "aroundId": "nope"}, -32002),
        ({"levels": "yes", "aroundId": "e2f3a4b5"}, -32602),
    ]:
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getTree", {"session": session, **params})
        assert failure.value.code == code, params
