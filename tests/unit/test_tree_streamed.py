"""``pi-session tree`` draws and writes its rows as the walk reaches them, a batch of text at a time,
and lets each row's preview go once it is drawn: the text is the same as the tree drawn whole
with every preview held, on sessions with duplicate ids, orphans, labels, branch points, tool calls
and their results, with and without the index, and printed again from the kept view."""

from __future__ import annotations

import random
import time
from pathlib import Path

import builders as S
import pytest

from pi_session_server.cli import main
from pi_session_server.commands import tree_draw
from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of
from pi_session_server.render.glyphs import cut
from pi_session_server.render.terminal_text import one_terminal_line
from pi_session_server.render.tree_text import tree_text_lines
from pi_session_server.session import SessionManager, cache_dir, preview_store, view_store
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.tree import expanded_once

WIDTH = 40


def _random_session(path: Path, seed: int) -> Path:
    """Entries hanging off random earlier ones (branch points), some ids used twice, some parents
    missing (orphans), labels, tool calls answered by results (some results of calls never made,
    some call ids used again by a later call), some lines with a lone surrogate."""
    rnd = random.Random(seed)
    lines = [S.header()]
    ids: list[str] = []
    calls: list[tuple[str, str]] = []
    for n in range(rnd.randint(20, 120)):
        kind = rnd.random()
        entry_id = rnd.choice(ids) if ids and kind < 0.05 else f"e{n}"  # a duplicate id
        if not ids or kind < 0.1:
            parent = None if kind < 0.07 else f"missing{n}"  # a root, or an orphan
        else:
            parent = ids[-1] if rnd.random() < 0.7 else rnd.choice(ids)  # a chain, or a branch
        words = " ".join(
            rnd.choice(["alpha", "β", "tool", "\x1b[31m", "x" * 30]) for _ in range(rnd.randint(0, 12))
        )
        if kind < 0.35:
            lines.append(S.user(entry_id, parent, words))
        elif kind < 0.55:
            made = tuple(
                (
                    # now and then the id of an earlier call: the later one is shown
                    rnd.choice(calls)[0] if calls and rnd.random() < 0.15 else f"call{n}_{k}",
                    rnd.choice(["read", "bash", "edit", "other_tool"]),
                    {"path": f"/home/u/f{k}", "command": words},
                )
                for k in range(rnd.randint(0, 2))
            )
            calls.extend((call_id, name) for call_id, name, _ in made)
            # now and then a lone surrogate: a line the previews' pass leaves out (read the usual way)
            lines.append(S.assistant(entry_id, parent, words + "\ud800" * (rnd.random() < 0.1), calls=made))
        elif kind < 0.75:
            call_id, name = rnd.choice(calls) if calls and rnd.random() < 0.9 else ("nowhere", "read")
            lines.append(S.tool_result(entry_id, parent, call_id, words, name=name))
        elif kind < 0.85 and ids:
            lines.append(S.label(entry_id, parent, rnd.choice(ids), rnd.choice([words, None, "mark"])))
        else:
            lines.append(S.model_change(entry_id, parent))
        ids.append(entry_id)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _drawn_whole(path: Path) -> str:
    """The tree's rows drawn with every preview held until the last row (as before they were let
    go row by row), joined whole."""
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        entries = manager.get_entries()
        cache = PreviewCache()
        cache.prefetch(entries)
        tool_calls = cache.collect_tool_calls(entries)
        preview_of = cache.previews()

        def row(node: object) -> tuple[object, str]:
            entry = node.entry  # type: ignore[attr-defined]
            text = preview_of(entry, tool_calls) or f"[{js_string_of(entry.type)}]"
            text = cut(text, WIDTH, "…")
            label = node.label  # type: ignore[attr-defined]
            if label is not ABSENT and (label := js_string_of(label)):
                text = f"{text}  [{cut(label, WIDTH, '…')}]"  # (a label as wide as a preview at most)
            return index_key(entry.id), one_terminal_line(text)

        on_path = [index_key(e.id) for e in manager.get_branch()]
        leaf = index_key(manager.get_leaf_id())
        lines = tree_text_lines(expanded_once(manager.get_tree()), row, leaf, on_path)
        return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("seed", range(12))
def test_the_tree_written_a_batch_at_a_time_is_the_tree_drawn_whole(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _random_session(tmp_path / "s.jsonl", seed)
    whole = _drawn_whole(path)
    # batches cut by their size, mid-way through the tree (a line longer than a batch: alone)
    monkeypatch.setattr(tree_draw, "BATCH_CHARS", 50)
    writes: list[int] = []
    real_write = tree_draw.write_encoded
    monkeypatch.setattr(
        tree_draw, "write_encoded", lambda data, enc: writes.append(len(data)) or real_write(data, enc)
    )

    monkeypatch.setenv(cache_dir.NO_INDEX_ENV, "1")
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0
    without_index = capsys.readouterr().out
    assert without_index.endswith("\n\n" + whole)
    assert len(writes) >= whole.count("\n") // 10  # written as drawn, not gathered

    monkeypatch.delenv(cache_dir.NO_INDEX_ENV)
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    time.sleep(0.1)  # settled: its view is kept
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0
    assert capsys.readouterr().out == without_index
    assert len(list((tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE)))) == 1
    writes.clear()
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0  # printed from the kept view
    assert capsys.readouterr().out == without_index and writes == []


def test_no_view_is_gathered_where_none_can_be_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the index, or for a file under its least size, the text written is not kept in
    memory as the view to keep: nothing would keep it."""
    path = _random_session(tmp_path / "s.jsonl", 1)
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    time.sleep(0.1)
    before = view_store.identity_before_open(str(path))
    assert before is not None
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    assert view_store.may_keep(before)
    assert not view_store.may_keep(before, index=False)
    assert not view_store.may_keep(None)
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, str(path.stat().st_size + 1))
    assert not view_store.may_keep(before)
    assert view_store.may_keep(before, min_size=path.stat().st_size)
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setenv(cache_dir.NO_INDEX_ENV, "1")
    assert not view_store.may_keep(before)


@pytest.mark.parametrize("seed", range(12))
def test_the_previews_and_view_a_first_run_keeps_draw_the_same_tree(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first run with the index writes the previews it keeps as its scan makes them, a few at a
    time, and gathers its view in a file as it writes it out (neither is held whole beside the
    tree): a run without the view draws the same tree from those previews, and the view prints it."""
    path = _random_session(tmp_path / "s.jsonl", seed)
    whole = _drawn_whole(path)
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    monkeypatch.setattr(preview_store, "MIN_STORED", 1)
    monkeypatch.setattr(preview_store, "_CHUNK", 5)
    monkeypatch.setattr(preview_store, "SPOOL_FROM_SIZE", 0)
    gathered: list[object] = []
    real_save = view_store.save

    def save(*args: object) -> bool:
        gathered.append(args[5])
        return real_save(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(view_store, "save", save)
    time.sleep(0.1)  # settled: what is drawn of it is kept
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0
    first = capsys.readouterr().out
    assert first.endswith("\n\n" + whole)
    assert [type(parts) for parts in gathered] == [cache_dir.SpooledParts]
    (view,) = (tmp_path / "index").glob("*" + view_store.suffix(view_store.TREE))
    assert len(list((tmp_path / "index").glob("*.pi-previews"))) == 1
    view.unlink()
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0  # drawn from the kept previews
    assert capsys.readouterr().out == first
    assert main(["tree", str(path), "--width", str(WIDTH)]) == 0  # printed from the kept view
    assert capsys.readouterr().out == first


def test_a_drawing_gives_the_free_heap_back_before_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a big session's open and previews freed in the heap goes back to the system before
    the rows are drawn (heap.give_back_free_heap): when the tree is drawn, not when a kept view
    is printed."""
    path = _random_session(tmp_path / "s.jsonl", 0)
    asked: list[bool] = []
    monkeypatch.setattr(tree_draw, "give_back_free_heap", lambda: asked.append(True) or True)
    monkeypatch.setattr(tree_draw, "TRIM_FROM_ENTRIES", 1)
    monkeypatch.setenv(cache_dir.INDEX_DIR_ENV, str(tmp_path / "index"))
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    time.sleep(0.1)
    assert main(["tree", str(path)]) == 0  # (once the previews are made and kept, once before the rows)
    assert asked == [True, True]
    assert main(["tree", str(path)]) == 0  # printed from the kept view
    assert asked == [True, True]
    capsys.readouterr()
