"""pi/getTree over the wire: forms, filters, pages, subtrees, and a 200,000-entry linear session."""

from __future__ import annotations

import json

import pytest
from sidecar_support import EXAMPLE, RpcFailure, sidecar_fixture  # noqa: F401  (fixture)


async def test_flat_nested_and_reference_forms(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    flat = await sidecar.request("pi/getTree", {"session": session})
    nodes = flat["nodes"]
    assert flat["leafId"] == "e2f3a4b5"
    assert len(nodes) == 36 and nodes[0]["id"] == "a3f1c2d4" and nodes[0]["parentId"] is None
    by_id = {n["id"]: n for n in nodes}
    assert by_id["9d0e1f2a"]["childIds"] == ["b1c2d3e4", "d9e0f1a2"] and by_id["9d0e1f2a"]["isBranchPoint"]
    assert by_id["9d0e1f2a"]["label"] == "tests-green" and "labelTimestamp" in by_id["9d0e1f2a"]
    assert (
        by_id["e2f3a4b5"]["isLeaf"]
        and by_id["e0f1a2b3"]["onLeafPath"]
        and not by_id["e4f5a6b7"]["onLeafPath"]
    )
    assert by_id["1e2f3a4b"]["role"] == "user" and by_id["1e2f3a4b"]["line"] == 4
    file_lines = path.read_text().splitlines()
    for node in nodes:
        assert json.loads(file_lines[node["line"]])["id"] == node["id"]

    nested = await sidecar.request("pi/getTree", {"session": session, "form": "nested"})
    assert len(nested["nodes"]) == 1
    count, stack = 0, list(nested["nodes"])
    while stack:
        node = stack.pop()
        count += 1
        assert "childIds" not in node
        stack.extend(node["children"])
    assert count == 36

    reference = await sidecar.request("pi/getTree", {"session": session, "form": "reference"})
    assert reference[0]["entry"] == json.loads(file_lines[1]) and len(reference) == 1


async def test_filters_and_search(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)

    async def ids(**params):
        tree = await sidecar.request("pi/getTree", {"session": session, **params})
        return [n["id"] for n in tree["nodes"]]

    assert await ids(filter="user-only") == ["1e2f3a4b", "e4f5a6b7", "e0f1a2b3", "a8b9c0d1"]
    assert await ids(filter="user-only", activeBranchFirst=True) == [
        "1e2f3a4b",
        "e0f1a2b3",
        "a8b9c0d1",
        "e4f5a6b7",
    ]
    assert await ids(filter="labeled-only") == ["9d0e1f2a", "d5e6f7a8"]
    default = await ids(filter="default")
    assert "b1c2d3e4" not in default and "a3f1c2d4" not in default  # label, model change hidden
    assert "f4e3d2c1" not in default  # an assistant turn with only a tool call
    assert "d3e4f5a6" not in await ids(filter="all")  # usage entries are never shown by pi's /tree
    no_tools = await ids(filter="no-tools")
    assert "0a9b8c7d" in default and "0a9b8c7d" not in no_tools
    assert await ids(filter="default", search="lru") == ["e0f1a2b3", "d5e6f7a8", "b9c0d1e2"]
    plain = await sidecar.request("pi/getTree", {"session": session, "previews": False})
    assert all("preview" not in n for n in plain["nodes"])


@pytest.mark.slow
async def test_a_200000_entry_linear_session(sidecar, tmp_path):
    path = tmp_path / "long.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "long",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
    }
    parts = [json.dumps(header, separators=(",", ":"))]
    parent = None
    for i in range(200_000):
        entry_id = f"{i:08x}"
        parent_json = "null" if parent is None else f'"{parent}"'
        message = {"role": "user", "content": f"step {i}", "timestamp": 1}
        parts.append(
            f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
            f'"timestamp":"2026-01-01T00:00:01.000Z","message":{json.dumps(message, separators=(",", ":"))}}}'
        )
        parent = entry_id
    path.write_text("\n".join(parts) + "\n")
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    with pytest.raises(RpcFailure) as refused:  # more than one reply may hold (50,000 nodes)
        await sidecar.request("pi/getTree", {"session": session})
    assert refused.value.code == -32011 and refused.value.data == {"total": 200_000, "max": 50_000}
    nodes = []
    offset = 0
    while True:
        page = await sidecar.request("pi/getTree", {"session": session, "offset": offset, "limit": 80_000})
        assert len(page["nodes"]) <= 50_000 and page["total"] == 200_000  # the limit counts as 50,000
        nodes.extend(page["nodes"])
        if not page["hasMore"]:
            break
        offset = page["nextOffset"]
    assert len(nodes) == 200_000
    assert (
        nodes[-1]["depth"] == 199_999 and nodes[-1]["isLeaf"] and nodes[-1]["preview"] == "user: step 199999"
    )
    assert nodes[123]["childIds"] == [nodes[124]["id"]] and nodes[124]["parentId"] == nodes[123]["id"]
    context = await sidecar.request("pi/buildSessionContext", {"session": session})
    assert len(context["messages"]) == 200_000
    branch = await sidecar.request("pi/getBranch", {"session": session, "fromId": "00000010"})
    assert len(branch) == 17


async def test_pages_concatenate_to_the_whole_flat_tree(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    for params in ({}, {"filter": "default", "activeBranchFirst": True}, {"filter": "user-only"}):
        whole = await sidecar.request("pi/getTree", {"session": session, **params})
        assert "total" not in whole and "hasMore" not in whole  # the unpaged reply keeps its shape
        for limit in (1, 5, 36):
            nodes, offset = [], 0
            while True:
                page = await sidecar.request(
                    "pi/getTree", {"session": session, **params, "offset": offset, "limit": limit}
                )
                assert page["leafId"] == whole["leafId"] and page["total"] == len(whole["nodes"])
                assert len(page["nodes"]) <= limit
                nodes.extend(page["nodes"])
                if not page["hasMore"]:
                    assert "nextOffset" not in page
                    break
                offset = page["nextOffset"]
            assert nodes == whole["nodes"], (params, limit)
    beyond = await sidecar.request("pi/getTree", {"session": session, "offset": 1000})
    assert beyond["nodes"] == [] and beyond["total"] == 36 and not beyond["hasMore"]


async def test_a_page_after_a_write_is_a_page_of_the_written_session(sidecar, tmp_path):
    """Pages come from a walk the server keeps between requests; a write in between must not be
    answered from it (pi/append, pi/branch, a label)."""
    session, _ = await sidecar.open_example(tmp_path)
    first = await sidecar.request("pi/getTree", {"session": session, "offset": 0, "limit": 10})
    assert first["total"] == 36
    message = {"role": "user", "content": "one more", "timestamp": 1}
    appended = await sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    page = await sidecar.request("pi/getTree", {"session": session, "offset": 30, "limit": 10})
    assert page["total"] == 37 and page["leafId"] == appended["id"]
    assert page["nodes"][-1]["id"] == appended["id"] and page["nodes"][-1]["isLeaf"]
    await sidecar.request("pi/branch", {"session": session, "entryId": "1e2f3a4b"})
    page = await sidecar.request("pi/getTree", {"session": session, "offset": 0, "limit": 10})
    assert page["leafId"] == "1e2f3a4b"
    assert [n["id"] for n in page["nodes"] if n["isLeaf"]] == ["1e2f3a4b"]
    await sidecar.request(
        "pi/append", {"session": session, "kind": "label", "targetId": "1e2f3a4b", "label": "here"}
    )
    whole = await sidecar.request("pi/getTree", {"session": session})
    page = await sidecar.request("pi/getTree", {"session": session, "offset": 0, "limit": 38})
    assert page["nodes"] == whole["nodes"] and page["total"] == 38
    assert {n["id"]: n.get("label") for n in page["nodes"]}["1e2f3a4b"] == "here"


async def test_the_entry_on_a_line_without_the_tree(sidecar, tmp_path):
    session, path = await sidecar.open_example(tmp_path)
    lines = path.read_text().splitlines()
    whole = {n["line"]: n for n in (await sidecar.request("pi/getTree", {"session": session}))["nodes"]}
    for line in range(len(lines) + 2):
        found = await sidecar.request("pi/getEntryAtLine", {"session": session, "line": line})
        if line not in whole:
            assert found is None, line  # the header, or past the end
            continue
        node = whole[line]
        assert found == {k: node[k] for k in found}, line  # what the tree says of the same entry
        assert set(found) >= {"id", "type", "line", "isLeaf", "timestamp"}
        assert json.loads(lines[line])["id"] == found["id"]
    labelled = await sidecar.request("pi/getEntryAtLine", {"session": session, "line": 14})
    assert (
        labelled["id"] == "9d0e1f2a" and labelled["label"] == "tests-green" and "labelTimestamp" in labelled
    )
    leaf = await sidecar.request("pi/getEntryAtLine", {"session": session, "line": len(lines) - 1})
    assert leaf["isLeaf"] and leaf["id"] == "e2f3a4b5"
    by_uri = await sidecar.request("pi/getEntryAtLine", {"uri": path.as_uri(), "line": 4})
    assert by_uri["id"] == "1e2f3a4b" and by_uri["role"] == "user"
    for bad in ({"line": -1}, {"line": "4"}, {}):
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getEntryAtLine", {"session": session, **bad})
        assert failure.value.code == -32602


async def test_a_line_written_as_a_whole_float_is_a_line(sidecar, tmp_path):
    """JSON has one number type: ``1e21`` (as JavaScript writes every number from 1e21 on) or
    ``4.0`` is the whole number protocol/'s integer allows, and answers as that integer does (past
    the end: null); a fraction or a negative line is refused, naming the member."""
    session, _ = await sidecar.open_example(tmp_path)

    async def at(line):
        return await sidecar.request("pi/getEntryAtLine", {"session": session, "line": line})

    assert await at(4.0) == await at(4) and (await at(4))["id"] == "1e2f3a4b"
    for past_the_end in (1e21, 10**23, 1e300, 2.0**64):
        assert await at(past_the_end) is None, past_the_end
    for bad, message in ((4.5, "Expected `int`, got `float`"), (-1.0, "Expected `int` >= 0")):
        with pytest.raises(RpcFailure) as failure:
            await at(bad)
        assert (failure.value.code, failure.value.message) == (
            -32602,
            f"Invalid params: {message} - at `$.line`",
        )
    page = await sidecar.request("pi/getPath", {"session": session, "offset": 1.0, "limit": 2.0})
    assert page == await sidecar.request("pi/getPath", {"session": session, "offset": 1, "limit": 2})


async def test_subtrees_by_root_id_and_depth(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    whole = {n["id"]: n for n in (await sidecar.request("pi/getTree", {"session": session}))["nodes"]}
    sub = await sidecar.request("pi/getTree", {"session": session, "rootId": "9d0e1f2a"})
    top = sub["nodes"][0]
    assert top["id"] == "9d0e1f2a" and top["depth"] == 0 and top["visibleParentId"] is None
    for node in sub["nodes"][1:]:
        assert node["depth"] == whole[node["id"]]["depth"] - whole["9d0e1f2a"]["depth"]
        assert node["childIds"] == whole[node["id"]]["childIds"]
    shallow = await sidecar.request("pi/getTree", {"session": session, "rootId": "9d0e1f2a", "depth": 1})
    assert [n["id"] for n in shallow["nodes"]] == ["9d0e1f2a", "b1c2d3e4", "d9e0f1a2"]
    assert shallow["nodes"][1]["childIds"] == whole["b1c2d3e4"]["childIds"]  # named, not sent
    nested = await sidecar.request(
        "pi/getTree", {"session": session, "form": "nested", "rootId": "9d0e1f2a", "depth": 1}
    )
    (root,) = nested["nodes"]
    assert [c["id"] for c in root["children"]] == ["b1c2d3e4", "d9e0f1a2"] and root["isBranchPoint"]
    assert all(c["children"] == [] and c.get("childrenOmitted") == bool(whole[c["id"]]["childIds"])
               for c in root["children"])  # fmt: skip
    tops = await sidecar.request("pi/getTree", {"session": session, "depth": 0})
    assert [n["id"] for n in tops["nodes"]] == ["a3f1c2d4"]


async def test_pages_asked_with_a_revision_the_session_left_are_refused(sidecar, tmp_path):
    """A client paging through the tree while pi appends must not join pages of two trees: the
    pages carry the session's revision, and one asked with a revision that is no longer current is
    refused (TreeChanged) with the current one, from which the client starts again."""
    session, _ = await sidecar.open_example(tmp_path)
    first = await sidecar.request("pi/getTree", {"session": session, "offset": 0, "limit": 10})
    revision = first["revision"]
    assert isinstance(revision, str) and first["total"] == 36
    second = await sidecar.request(
        "pi/getTree", {"session": session, "offset": 10, "limit": 10, "revision": revision}
    )
    assert second["revision"] == revision and second["nodes"][0]["id"] != first["nodes"][-1]["id"]
    around = await sidecar.request("pi/getTree", {"session": session, "aroundId": "1e2f3a4b", "limit": 5})
    levels = await sidecar.request("pi/getTree", {"session": session, "levels": True, "aroundId": "1e2f3a4b"})
    assert around["revision"] == levels["revision"] == revision
    message = {"role": "user", "content": "pi appended", "timestamp": 1}
    await sidecar.request("pi/append", {"session": session, "kind": "message", "message": message})
    for window in (
        {"offset": 20, "limit": 10},
        {"aroundId": "1e2f3a4b"},
        {"levels": True, "aroundId": "1e2f3a4b"},
    ):
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getTree", {"session": session, **window, "revision": revision})
        assert failure.value.code == -32015, window
        assert failure.value.data["revision"] != revision and revision in failure.value.message
    current = failure.value.data["revision"]
    again = await sidecar.request(
        "pi/getTree", {"session": session, "offset": 0, "limit": 10, "revision": current}
    )
    assert again["revision"] == current and again["total"] == 37
    await sidecar.request("pi/branch", {"session": session, "entryId": "1e2f3a4b"})  # the leaf moves
    with pytest.raises(RpcFailure) as failure:
        await sidecar.request(
            "pi/getTree", {"session": session, "offset": 10, "limit": 10, "revision": current}
        )
    assert failure.value.code == -32015 and failure.value.data["revision"] not in (revision, current)
    # without a revision a page is of the tree as it is now, as before
    assert (await sidecar.request("pi/getTree", {"session": session, "offset": 10, "limit": 10}))[
        "total"
    ] == 37


async def test_tree_windows_that_cannot_be_given_are_refused(sidecar, tmp_path):
    session, _ = await sidecar.open_example(tmp_path)
    for params, code in [
        ({"rootId": "nope"}, -32002),
        ({"form": "nested", "limit": 5}, -32602),
        ({"form": "reference", "depth": 1}, -32602),
        # the reference form is pi's getTree(), whole: a filter or a search it would ignore
        ({"form": "reference", "filter": "user-only"}, -32602),
        ({"form": "reference", "search": "zzzz"}, -32602),
        ({"form": "reference", "activeBranchFirst": True}, -32602),
        ({"limit": 0}, -32602),
        ({"offset": -1}, -32602),
        ({"depth": -1}, -32602),
        # a revision is of the pages of one tree
        ({"revision": "1"}, -32602),
        ({"form": "nested", "revision": "1"}, -32602),
        ({"form": "reference", "revision": "1"}, -32602),
        ({"offset": 0, "revision": 1}, -32602),
    ]:
        with pytest.raises(RpcFailure) as failure:
            await sidecar.request("pi/getTree", {"session": session, **params})
        assert failure.value.code == code, params
    assert await sidecar.request("pi/getTree", {"session": session, "form": "reference", "filter": "none"})


async def test_nested_duplicate_ids_cost_what_the_file_holds_not_2_to_the_k(sidecar, tmp_path):
    """A block of lines copied twice: each level's two entries share one id, and pi's tree hangs
    that id's node twice under the level above, so a walk down every place doubles per level (a
    7 KB file made getStats count 4 million branch points). Each node's subtree is walked in one
    place (D23): the stats and the views grow with the file."""
    levels = 40
    time = "2026-01-01T00:00:00.000Z"
    lines = [{"type": "session", "version": 3, "id": "twins", "timestamp": time, "cwd": str(tmp_path)}]
    lines.append({"type": "message", "id": "r", "parentId": None, "timestamp": time,
                  "message": {"role": "user", "content": "root", "timestamp": 1}})  # fmt: skip
    for level in range(levels):
        for twin in "ab":
            lines.append({"type": "message", "id": f"d{level}", "parentId": f"d{level - 1}" if level else "r",
                          "timestamp": time, "message": {"role": "user", "content": f"{level}{twin}", "timestamp": 1}})  # fmt: skip
    path = tmp_path / "twins.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = (await sidecar.request("pi/open", {"path": str(path)}))["session"]
    stats = await sidecar.request("pi/getStats", {"session": session})
    assert (stats["branchPoints"], stats["leaves"]) == (levels, levels + 1)
    whole = await sidecar.request("pi/getTree", {"session": session, "limit": 1000})
    assert whole["total"] == 1 + 2 * levels
    nested = await sidecar.request("pi/getTree", {"session": session, "form": "nested"})
    assert len(nested["nodes"]) == 1
