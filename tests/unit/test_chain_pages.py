"""Pages of a long chain (``{chain, offset, limit}``, ``{chain, aroundId}``), as a tree view pages
through one container after another: each page makes rows for what it shows, the chain's
length counted once for the view, and answers as the walk of the whole chain does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import builders as S
import pytest
from test_subtree_windows import _old

from pi_session_server.server import methods_read, tree_flat_form, tree_rows, tree_shape
from pi_session_server.server import params as P
from pi_session_server.server.wire import encode_result
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.usefixtures("files_settle_at_once")

TURNS = 2500  # a turn: a user message, a silent tool call, its result, an answer: 10,000 entries
PAGE = 10


def _chat(path: Path) -> Path:
    path.write_text("\n".join(S.chat(TURNS)) + "\n", encoding="utf-8")
    return path


def _count_rows(monkeypatch: pytest.MonkeyPatch, made: list[int]) -> None:
    """Count each row made, in ``made``, wherever it is made (a chain's rows, a walk's)."""
    row = tree_rows.Row

    def counted(*fields: Any) -> Any:
        made.append(1)
        return row(*fields)

    for module in (tree_rows, tree_shape):
        monkeypatch.setattr(module, "Row", counted)


@pytest.mark.parametrize("mode", ["default", "no-tools", "user-only", "none"])
def test_pages_near_the_start_of_long_chains_make_rows_for_their_page_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    path = _chat(tmp_path / "chat.jsonl")
    view = {"session": "s", "filter": mode, "form": "flat", "activeBranchFirst": True}
    # two containers of a tree view, asked in turn: the top chain and the chain under an entry
    tops: list[dict[str, Any]] = [{}, {"rootId": "t1u"}]
    pages = [{**top, "chain": True, "offset": at, "limit": PAGE} for at in (0, 10, 20, 35) for top in tops]
    around = [
        {**top, "chain": True, "aroundId": entry, "limit": PAGE} for entry in ("t3r", "t9z") for top in tops
    ]
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = [_old(plain, {**view, **params}) for params in (*pages, *around)]
    made: list[int] = []
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        methods_read._tree(manager, P.parse({**view, **pages[0]}, P.GetTreeParams))  # the view's first
        _count_rows(monkeypatch, made)
        for params, wanted in zip((*pages, *around), expected, strict=True):
            made.clear()
            answer = encode_result(methods_read._tree(manager, P.parse({**view, **params}, P.GetTreeParams)))
            assert answer == wanted, params
            # the page and the rows above it (around an entry: the stretches walked to find it)
            bound = (
                params.get("offset", 0) + PAGE + 2
                if "offset" in params
                else tree_flat_form._CHAIN_STRETCH + PAGE + 2
            )
            assert len(made) <= bound < 4 * TURNS, params


def test_a_chain_s_count_follows_an_append(tmp_path: Path) -> None:
    """A page of a chain after pi appended to it counts the appended entries (the count kept with
    the view's shape goes with the state it was made for)."""
    path = _chat(tmp_path / "chat.jsonl")
    view = {"session": "s", "filter": "default", "form": "flat", "activeBranchFirst": True}
    params = P.parse({**view, "chain": True, "offset": 3, "limit": PAGE}, P.GetTreeParams)
    other = P.parse({**view, "rootId": "t0z", "chain": True, "offset": 3, "limit": PAGE}, P.GetTreeParams)
    with SessionManager.open(str(path)) as manager:
        before = encode_result(methods_read._tree(manager, params))
        methods_read._tree(manager, other)  # another container between: no walk of the first kept
        with path.open("a", encoding="utf-8") as file:
            file.write(S.user("more", f"t{TURNS - 1}z", "one more") + "\n")
        manager.refresh_from_disk()
        after = encode_result(methods_read._tree(manager, params))
        with SessionManager.open(str(path)) as fresh:
            assert after == encode_result(methods_read._tree(fresh, params))
    assert after != before


def test_the_levels_down_a_long_chain_make_rows_for_their_pages_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The levels down to the leaf keep a chain as its nodes: a row is made for each row a level
    sends (and the one on the path), not for every entry of the chain to be let go, then made
    again for the page."""
    path = _chat(tmp_path / "chat.jsonl")
    view = {"session": "s", "filter": "default", "form": "flat", "activeBranchFirst": True}
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        params = P.parse(
            {**view, "levels": True, "aroundId": plain.get_leaf_id(), "limit": PAGE}, P.GetTreeParams
        )
        expected = encode_result(methods_read._tree(plain, params))
    made: list[int] = []
    _count_rows(monkeypatch, made)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        assert encode_result(methods_read._tree(manager, params)) == expected
    assert b'"chain":true' in expected and len(made) <= PAGE + 2


def test_a_tree_view_s_windows_hold_the_previews_of_their_last_replies_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of a long chain asked one after another (a tree view's windows down a session of
    GBs) hold the previews, the assistant messages' facts and the calls found above the tool
    results of a few replies, not of every row they showed; a page asked again once its
    previews went is the same."""
    path = _chat(tmp_path / "chat.jsonl")
    view = {"session": "s", "filter": "none", "form": "flat", "activeBranchFirst": True}
    pages = [
        P.parse({**view, "chain": True, "offset": at, "limit": 50}, P.GetTreeParams)
        for at in range(0, 3000, 50)
    ]
    with SessionManager.open(str(path), read_only=True, index=False) as plain:
        expected = [encode_result(methods_read._tree(plain, params)) for params in pages]
        cache = methods_read.preview_cache(plain)
        assert cache is not None and len(cache.parts) >= 3000  # (fewer than it takes to let go)
    monkeypatch.setattr(tree_shape, "_PREVIEWS_HELD", 200)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        cache = methods_read.preview_cache(manager)
        assert cache is not None
        for params, wanted in zip([*pages, pages[0]], [*expected, expected[0]], strict=True):
            assert encode_result(methods_read._tree(manager, params)) == wanted
            assert len(cache.parts) + len(cache._previous) <= 2 * (200 + 50)
            assert len(cache.calls) <= 200 + 50
            options = ("none", None, True, True, manager.profile.context_edits, True)
            shape = methods_read._tree_shapes.kept_for(manager, options)
            assert shape is not None and len(shape._calls_above) <= 200 + 50
