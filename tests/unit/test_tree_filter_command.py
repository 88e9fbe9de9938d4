"""``pi-session tree --filter MODE [--search WORDS]`` draws the rows ``pi/getTree`` gives for that
filter (server/tree_view.py, itself checked against pi's own selector in
test_protocol_tree_filters.py): the same entries in the same order under the same parents, the
same leaf and path marks, on the conformance kit's sessions and the example session. Both use one
predicate (session/tree_filter.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import builders as S
import msgspec
import pytest
from old_sessions import KIT_FIXTURES
from test_protocol_tree_filters import EXAMPLE

from pi_session_server.cli import main
from pi_session_server.render.glyphs import ASCII
from pi_session_server.render.terminal_text import one_terminal_line
from pi_session_server.render.tree_text import tree_text_lines
from pi_session_server.server.methods_read import _tree
from pi_session_server.server.params import GetTreeParams
from pi_session_server.server.tree_view import tree_view
from pi_session_server.session import SessionManager
from pi_session_server.session.tree_modes import PI_FILTERS

# the conformance kit's session files, as the repository holds them
# the kit's sessions that are small enough to draw many times (the big ones: their first lines are
# drawn by the CLI's own tests)
KIT_SESSIONS = sorted(
    path
    for folder in ("real", "real-1.6.0", "dev")
    for path in (KIT_FIXTURES / folder).glob("*.jsonl")
    if path.stat().st_size < 300_000
)
SESSIONS = [EXAMPLE, *KIT_SESSIONS]
WIDE = 100_000  # no preview cut: the rows compared whole
SEARCHES = [None, "cache", "fix the", "user"]


class _Drawn:
    """A node of pi/getTree's flat result, with its shown children, as the CLI's drawing takes it."""

    def __init__(self, node: dict[str, Any]) -> None:
        self.node = node
        self.children: list[_Drawn] = []


def _sidecar_rows(manager: SessionManager, mode: str, search: str | None) -> list[str]:
    """pi/getTree's filtered flat tree of ``manager``'s session (opened read-only: a tree is built
    afresh at each call), drawn as ``tree --ids --ascii`` draws a tree."""
    leaf = manager.get_leaf_id()
    view = tree_view(manager.get_tree(), leaf, manager.by_id, mode=mode, search=search)
    drawn = {node["id"]: _Drawn(node) for node in view["nodes"]}
    roots = [drawn[node["id"]] for node in view["nodes"] if node["visibleParentId"] is None]
    for node in view["nodes"]:
        drawn[node["id"]].children = [drawn[child] for child in node["childIds"]]
    if not roots:  # (a session without entries says so above the tree: no row)
        return ["No entries found"] if manager.get_entries() else []

    def row(item: _Drawn) -> tuple[Any, str]:
        node = item.node
        label = f"  [{node['label']}]" if "label" in node else ""
        text = f"{node['id']} {node.get('preview') or '[' + node['type'] + ']'}{label}"
        return node["id"], one_terminal_line(text)

    on_path = {node["id"] for node in view["nodes"] if node["onLeafPath"]}
    return list(tree_text_lines(roots, row, leaf, on_path, glyphs=ASCII))


def _open(path: Path) -> SessionManager:
    return SessionManager.open(str(path), read_only=True)


def _cli_rows(path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["tree", str(path), "--no-index", "--ids", "--ascii", "--width", str(WIDE), *args]) == 0
    out = capsys.readouterr().out.splitlines()
    return out[out.index("") + 1 :] if "" in out else []  # (the rows follow the head's blank line)


@pytest.mark.parametrize("path", SESSIONS, ids=[p.name for p in SESSIONS])
def test_each_mode_draws_the_rows_pi_get_tree_gives(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = _open(path)  # (once: each command below opens the file itself)
    for mode in PI_FILTERS:
        for search in SEARCHES:
            args = ["--filter", mode, *(["--search", search] if search else [])]
            assert _cli_rows(path, args, capsys) == _sidecar_rows(manager, mode, search), (mode, search)


def test_a_search_alone_searches_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``--filter``, ``--search`` keeps the entries of any type whose text holds its words
    (``none`` and a search, as pi/getTree takes them)."""
    assert _cli_rows(EXAMPLE, ["--search", "LRU cache"], capsys) == _sidecar_rows(
        _open(EXAMPLE), "none", "LRU cache"
    )
    rows = _cli_rows(EXAMPLE, ["--search", "LRU cache"], capsys)
    assert [row.split()[1] for row in rows] == ["e0f1a2b3", "d5e6f7a8", "b9c0d1e2"]


def test_hidden_entries_children_hang_under_their_nearest_shown_ancestor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _cli_rows(EXAMPLE, ["--filter", "user-only"], capsys) == [
        "* 1e2f3a4b user: The test suite fails on test_parse_forecast since I bumped the API client. "
        "Can you find out why and fix it?  (2 branches)",
        "|-   e4f5a6b7 user: Now add caching for the API responses, they are slow.",
        "`- * e0f1a2b3 user: Let's not write files. Use functools.lru_cache on the client's fetch "
        "method instead.",
        "   * a8b9c0d1 user: Write a changelog entry for these two changes.",
    ]


def test_a_filter_that_leaves_nothing_says_so_as_pi_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli_rows(EXAMPLE, ["--filter", "labeled-only", "--search", "nowhere"], capsys) == [
        "No entries found"
    ]


def test_none_and_no_filter_draw_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    whole = _cli_rows(EXAMPLE, [], capsys)
    assert _cli_rows(EXAMPLE, ["--filter", "none"], capsys) == whole
    assert len(whole) == len(SessionManager.open(str(EXAMPLE), read_only=True).get_entries())


def test_a_search_finds_a_context_edit_by_pi_1_6_0_s_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pi 1.6.0's selector searches a context edit as "context edit", omit or replace, its target:
    it had no text to search."""
    path = tmp_path / "s.jsonl"
    lines = [
        S.header(),
        S.user("u1", None, "hi"),
        S.context_edit("e1", "u1", "u1"),
        S.context_edit("e2", "e1", "u1", {"content": "hello"}),
    ]
    path.write_text("".join(line + "\n" for line in lines))
    for search, shown in (("context omit", "e1"), ("edit REPLACE u1", "e2")):
        rows = _cli_rows(path, ["--filter", "all", "--search", search], capsys)
        assert [row.split()[1] for row in rows] == [shown], rows
        assert rows == _sidecar_rows(_open(path), "all", search)


@pytest.mark.parametrize(("pi", "hidden"), [("1.6.0", True), ("0.86.1", False)])
def test_a_context_edit_is_hidden_and_searched_as_the_release_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pi: str, hidden: bool
) -> None:
    """pi 1.6.0's selector counts a context edit among the settings entries its default mode hides,
    and searches it by its own words; pi 0.86.1's knows no context edit: it shows one (an entry of
    a type it does not know) and finds no words in it. The CLI and pi/getTree follow the session's
    release."""
    path = tmp_path / "s.jsonl"
    lines = [S.header(), S.user("u1", None, "hi"), S.context_edit("e1", "u1", "u1"), S.user("u2", "e1", "yo")]
    path.write_text("".join(line + "\n" for line in lines))
    rows = _cli_rows(path, ["--pi", pi, "--filter", "default"], capsys)
    assert ("e1" in [row.split()[1] for row in rows]) is not hidden, rows
    searched = _cli_rows(path, ["--pi", pi, "--filter", "all", "--search", "omit"], capsys)
    assert searched == (["* e1 [context omit: u1]"] if hidden else ["No entries found"]), searched

    manager = SessionManager.open(str(path), read_only=True, pi=pi)
    for mode, search, expected in (("default", None, rows), ("all", "omit", searched)):
        params = GetTreeParams(filter=mode, **({"search": search} if search else {}))
        nodes = msgspec.json.decode(_tree(manager, params))["nodes"]
        ids = [node["id"] for node in nodes]
        assert ids == [row.split()[1] for row in expected if row != "No entries found"], (mode, ids)
