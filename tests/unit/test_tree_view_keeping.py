"""A tree view of a big session: what its windows need is read once, and kept for the next process.

* The levels down to an entry (``pi/getTree`` ``levels``) read an entry's body once at most: an
  assistant message read by the filter gives its preview too, and a tool result's call is found
  through what the cache knows of the messages above it. The result is the same as without a cache.
* The server keeps the previews a window made with the file's index, by a job after the reply
  (PreviewCache.keeper, server/preview_keeping.py), merged with what was kept before; a walk of
  the next process that misses many loads them, and reads no body at all; one that misses few
  (a window of a huge session) reads their bodies instead of loading every preview kept.
* Nothing is written for a file that changed after the previews were taken.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import builders as S
import pytest
from requests_in_flight import RequestsInFlight

from pi_session_server.format.entry import Entry, LineBytes
from pi_session_server.server import quiet_jobs
from pi_session_server.server.preview_keeping import PreviewKeeper
from pi_session_server.server.tree_flat_form import encode_flat_page, window_tree
from pi_session_server.server.tree_following import tree_shape
from pi_session_server.server.tree_levels import encode_tree_levels, tree_levels
from pi_session_server.server.tree_tool_calls import CallReading
from pi_session_server.server.tree_view import encode_flat_tree_view
from pi_session_server.server.tree_window import WHOLE_TREE
from pi_session_server.server.workers import CancelToken, WorkerPool, after_this_job, current_queue
from pi_session_server.session import (
    SessionManager,
    cache_dir,
    describe,
    entry_facts,
    preview_cache,
    preview_store,
)
from pi_session_server.session.preview_cache import PreviewCache
from pi_session_server.session.tree_modes import FILTERS


def _branchy_session(path: Path, turns: int = 120) -> Path:
    """Turns of a user message, assistant calls (some without text: silent turns) and their
    results; every seventh turn branches off an earlier user message; call ids repeat across
    branches; a label here and there."""
    lines = [S.header()]
    users: list[str] = []
    parent: str | None = None
    n = 0

    def next_id() -> str:
        nonlocal n
        n += 1
        return f"e{n:05d}"

    for turn in range(turns):
        if turn % 7 == 6 and users:
            parent = users[turn // 3 % len(users)]
        uid = next_id()
        lines.append(S.user(uid, parent, f"question {turn}"))
        users.append(uid)
        parent = uid
        for step in range(turn % 3 + 1):
            aid = next_id()
            call = f"call{turn % 11}_{step}"  # the same id in other branches
            text = "" if step % 2 else f"looking {turn}.{step}"
            lines.append(S.assistant(aid, parent, text, calls=((call, "read", {"path": f"/p/{aid}.py"}),)))
            rid = next_id()
            lines.append(S.tool_result(rid, aid, call, f"contents {rid}"))
            parent = rid
        aid = next_id()
        lines.append(S.assistant(aid, parent, f"answer {turn}"))
        parent = aid
        if turn % 9 == 4:
            lines.append(S.label(next_id(), parent, uid, f"mark {turn}"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _levels(manager: SessionManager, cache: PreviewCache | None, limit: int = 5) -> bytes:
    shape = tree_shape(
        manager.get_tree(),
        manager.get_leaf_id(),
        manager.by_id,
        mode="default",
        active_branch_first=True,
        cache=cache,
        calls=CallReading.NEAR_EACH_RESULT,
    )
    levels, complete = tree_levels(shape, manager.get_leaf_id())
    return encode_tree_levels(shape, levels, complete, limit, 50_000)


def _whole_flat(manager: SessionManager, cache: PreviewCache | None) -> bytes:
    return encode_flat_tree_view(
        manager.get_tree(), manager.get_leaf_id(), manager.by_id, mode="none", cache=cache
    )


def _server_cache(manager: SessionManager) -> PreviewCache:
    return PreviewCache(
        "/home/u", entries=manager.get_entries, entry_count=manager.entry_count, keep_in_walk=False
    )


class _BodyReads:
    """Counts the bodies of entries read (``Entry.value``: from the file, or from the line bytes
    held since the load)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = Entry.value

        def counted(entry: Entry) -> Any:
            self.count += 1
            return real.fget(entry)  # type: ignore[attr-defined]

        monkeypatch.setattr(Entry, "value", property(counted))


@pytest.fixture
def kept_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setattr(preview_store, "MIN_STORED", 10)
    monkeypatch.setattr(preview_cache, "PREFETCH_AFTER_MISSES", 1)
    monkeypatch.setattr(preview_cache, "STORED_LOAD_SHARE", 1 << 40)  # loaded at the first miss
    monkeypatch.setattr(cache_dir, "RACY_NS", 50_000_000)
    path = _branchy_session(tmp_path / "s.jsonl")
    time.sleep(0.1)  # past the racy window: previews of it may be kept
    return path, str(tmp_path / "index")


def _open(path: Path, index_dir: str) -> SessionManager:
    return SessionManager.open(str(path), read_only=True, index=index_dir)


def test_levels_read_each_body_once_at_most_and_serve_the_next_process_without_reading_one(
    kept_setup: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:
        expected = _levels(manager, None)
    assert b'"kind":"branches"' in expected and b'"preview":"[read: /p/e' in expected
    reads = _BodyReads(monkeypatch)
    with _open(path, index_dir) as manager:
        reads.count = 0
        cache = _server_cache(manager)
        assert _levels(manager, cache) == expected
        assert 0 < reads.count <= manager.entry_count()
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and cache.keeper(manager.get_entries()) is None  # nothing new since
    assert not list(Path(index_dir).glob("*.pi-previews"))  # not in the walk: by the job
    assert keep()
    assert len(list(Path(index_dir).glob("*.pi-previews"))) == 1
    with _open(path, index_dir) as manager:
        reads.count = 0
        assert _levels(manager, _server_cache(manager)) == expected
        assert reads.count == 0


@pytest.mark.parametrize("mode", ["default", "none", "no-tools", "all"])
def test_a_whole_tree_of_a_filter_that_shows_most_rows_reads_their_previews_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Not a batch at a time as its rows miss them, after reading the first misses one by one."""
    monkeypatch.setenv("HOME", "/home/u")
    path = _branchy_session(tmp_path / "s.jsonl", turns=200)  # rows beyond a batch's misses
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        expected = encode_flat_tree_view(manager.get_tree(), manager.get_leaf_id(), manager.by_id, mode=mode)
    passes: list[int] = []
    real = entry_facts.preview_values

    def counted(entries: Any) -> Any:
        passes.append(1)
        return real(entries)

    monkeypatch.setattr(entry_facts, "preview_values", counted)
    reads = _BodyReads(monkeypatch)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        assert manager.entry_count() > 2 * preview_cache.PREFETCH_AFTER_MISSES
        reads.count = 0  # (the header's, at the open)
        cache = _server_cache(manager)
        whole = encode_flat_tree_view(
            manager.get_tree(), manager.get_leaf_id(), manager.by_id, mode=mode, cache=cache
        )
    assert whole == expected
    assert (len(passes), reads.count) == (1, 0)


def test_the_previews_kept_are_loaded_once_the_walks_missed_a_share_of_the_session(
    kept_setup: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading what was kept costs something for every entry of the session: walks that miss few
    previews (a huge session's first window) read those bodies, and the walks load everything kept
    once they missed, together, a share of the session's entries."""
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:
        cache = _server_cache(manager)
        expected = _whole_flat(manager, cache)
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and keep()
    monkeypatch.setattr(preview_cache, "STORED_LOAD_SHARE", 4)
    loads: list[int] = []
    real_load = preview_store.load

    def counted_load(entries: list[Entry], fd: int | None = None) -> preview_store.Loaded:
        loaded = real_load(entries, fd)
        loads.append(len(loaded.entries))
        return loaded

    monkeypatch.setattr(preview_store, "load", counted_load)
    reads = _BodyReads(monkeypatch)
    with _open(path, index_dir) as manager:
        share = manager.entry_count() // 4
        entries = manager.get_entries()
        reads.count = 0
        cache = _server_cache(manager)
        for first, last in ((0, share // 2), (share // 2, share - 1)):  # two walks of few rows each
            preview = cache.previews()
            for entry in entries[first:last]:
                preview(entry, {})
            assert loads == []
        assert reads.count == share - 1
        preview = cache.previews()
        preview(entries[share - 1], {})  # the share's last miss: everything kept is loaded
        assert loads == [len(entries)]
        assert not cache.has_new_previews()  # those read before the load were kept already
        reads.count = 0
        assert _whole_flat(manager, cache) == expected
        assert reads.count == 0 and loads == [len(entries)]


def test_keeping_merges_with_what_was_kept_before(kept_setup: tuple[Path, str]) -> None:
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:  # every entry's preview
        cache = _server_cache(manager)
        whole = _whole_flat(manager, cache)
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and keep()
        count = manager.entry_count()
    with _open(path, index_dir) as manager:  # a window's: loaded, and kept again with the rest
        cache = _server_cache(manager)
        _levels(manager, cache)
        cache._made = preview_store.MIN_STORED  # as if it had made many
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and keep()
        assert len(preview_store.load(manager.get_entries()).entries) == count
        assert _whole_flat(manager, _server_cache(manager)) == whole


def test_nothing_is_kept_for_a_file_that_changed_after_the_previews_were_taken(
    kept_setup: tuple[Path, str],
) -> None:
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:
        cache = _server_cache(manager)
        _levels(manager, cache)
        keep = cache.keeper(manager.get_entries())
        assert keep is not None
        with open(path, "a", encoding="utf-8") as f:
            f.write(S.user("late", None, "appended") + "\n")
        assert keep() is False
    assert not list(Path(index_dir).glob("*.pi-previews"))


def test_a_session_closed_before_its_previews_are_kept_still_gets_them(kept_setup: tuple[Path, str]) -> None:
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:
        cache = _server_cache(manager)
        expected = _levels(manager, cache)
        keep = cache.keeper(manager.get_entries())
    assert keep is not None and keep()  # its own descriptor of the file
    with _open(path, index_dir) as manager:
        assert _levels(manager, _server_cache(manager)) == expected
        assert preview_store.load(manager.get_entries()).entries


# -- the job that keeps them --------------------------------------------------------------------


class _FakeCache:
    def __init__(self) -> None:
        self.keeping = False
        self.kept = threading.Event()
        self.taken_on: Any = None

    def has_new_previews(self) -> bool:
        return True

    def keeper(self, _entries: list[Any]) -> Any:
        self.taken_on = current_queue()
        return self.kept.set


def _keep_from_a_job(keeper: PreviewKeeper, pool: WorkerPool, cache: _FakeCache) -> Any:
    session = pool.queue("session")
    job = session.submit(lambda _token: keeper.later(cache, list))  # type: ignore[arg-type]
    return session, job


def test_previews_are_kept_once_no_request_is_in_flight() -> None:
    pool = WorkerPool()
    requests = RequestsInFlight()
    requests.begin()
    keeper = PreviewKeeper(pool, requests.quiet_seconds)
    cache = _FakeCache()
    session, _job = _keep_from_a_job(keeper, pool, cache)
    assert not cache.kept.wait(1.5)  # a request is in flight all along
    assert cache.keeping
    requests.answer()
    assert cache.kept.wait(10)
    assert cache.taken_on is session  # taken between the session's own jobs
    deadline = time.monotonic() + 10
    while cache.keeping:
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.fixture
def long_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quiet period far longer than the gaps the tests leave: a loaded machine that holds the
    test's thread back a while does not make a gap of its own."""
    monkeypatch.setattr(quiet_jobs, "QUIET_SECONDS", 1.5)


@pytest.mark.usefixtures("long_quiet")
def test_previews_wait_for_quiet_on_end_not_a_moment_between_requests() -> None:
    """Requests one after another (a client paging through a tree) with short gaps between them:
    the keeping waits for a whole quiet period, not the first moment no request is in flight (a
    reply is written after its request left the in-flight set)."""
    pool = WorkerPool()
    requests = RequestsInFlight()
    requests.begin()
    keeper = PreviewKeeper(pool, requests.quiet_seconds)
    cache = _FakeCache()
    _keep_from_a_job(keeper, pool, cache)
    for _ in range(12):  # in flight 0.2 s, then a gap of 0.1 s: never QUIET_SECONDS on end
        time.sleep(0.2)
        requests.answer()
        time.sleep(0.1)
        requests.begin()
        assert not cache.kept.is_set()
    requests.answer()
    assert cache.kept.wait(10)


@pytest.mark.usefixtures("long_quiet")
def test_requests_shorter_than_a_look_still_hold_the_keeping_back() -> None:
    """Requests answered in far less than the keeper's poll, one every 0.1 s: each restarts the
    quiet period, though no look may ever find one in flight."""
    pool = WorkerPool()
    requests = RequestsInFlight()
    keeper = PreviewKeeper(pool, requests.quiet_seconds)
    cache = _FakeCache()
    _keep_from_a_job(keeper, pool, cache)
    deadline = time.monotonic() + 2 * quiet_jobs.QUIET_SECONDS + 0.5
    while time.monotonic() < deadline:
        requests.begin()
        requests.answer()
        assert not cache.kept.wait(0.1)
    assert cache.kept.wait(10)


def test_shutdown_keeps_them_at_once_and_waits() -> None:
    pool = WorkerPool()
    keeper = PreviewKeeper(pool, lambda: 0.0)  # never quiet
    cache = _FakeCache()
    _keep_from_a_job(keeper, pool, cache)
    time.sleep(0.2)
    assert keeper.finish(10)
    assert cache.kept.is_set()


def test_one_keeping_at_a_time_per_session() -> None:
    pool = WorkerPool()
    keeper = PreviewKeeper(pool, lambda: 0.0)
    cache = _FakeCache()
    cache.keeping = True
    _session, job = _keep_from_a_job(keeper, pool, cache)
    assert keeper.finish(10)
    assert job.done() and not cache.kept.is_set()


def test_after_this_job_runs_after_the_callbacks_given_before() -> None:
    pool = WorkerPool()
    queue = pool.queue("q")
    order: list[str] = []
    done = threading.Event()
    gate = threading.Event()

    def work(_token: CancelToken) -> None:
        gate.wait(10)
        assert current_queue() is queue
        assert after_this_job(lambda: (order.append("after"), done.set()))

    job = queue.submit(work)
    job.add_done_callback(lambda _job: order.append("reply"))
    gate.set()
    assert done.wait(10)
    assert order == ["reply", "after"]
    assert current_queue() is None and not after_this_job(lambda: None)


def _whole_and_levels(manager: SessionManager, mode: str, **options: Any) -> tuple[bytes, bytes]:
    """The whole flat tree and the levels down to the leaf, in one shape made with ``options``."""
    shape = tree_shape(manager.get_tree(), manager.get_leaf_id(), manager.by_id, mode=mode, **options)
    whole = encode_flat_page(window_tree(shape, WHOLE_TREE), WHOLE_TREE)[0]
    levels, complete = tree_levels(shape, manager.get_leaf_id())
    return whole, encode_tree_levels(shape, levels, complete, 5, 50_000)


@pytest.mark.parametrize("mode", FILTERS)
def test_the_leafs_path_given_orders_the_tree_as_a_walk_of_it_does(tmp_path: Path, mode: str) -> None:
    path = _branchy_session(tmp_path / "s.jsonl", turns=60)
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        walked = _whole_and_levels(manager, mode, active_branch_first=True)
        branch = manager.get_branch()
        assert _whole_and_levels(manager, mode, active_branch_first=True, leaf_path=branch) == walked
        # not a whole path (a window's entries): the walk decides
        assert _whole_and_levels(manager, mode, active_branch_first=True, leaf_path=branch[1:]) == walked
        if mode in ("none", "default"):  # the leaf is on a later branch: the order matters
            assert _whole_and_levels(manager, mode)[0] != walked[0]


def _keep_everything(path: Path, index_dir: str) -> None:
    with _open(path, index_dir) as manager:
        cache = _server_cache(manager)
        _whole_flat(manager, cache)
        keep = cache.keeper(manager.get_entries())
        assert keep is not None and keep()


def test_the_kept_head_says_which_lines_are_described_and_which_turns_are_silent(
    kept_setup: tuple[Path, str],
) -> None:
    path, index_dir = kept_setup
    with _open(path, index_dir) as manager:
        assert preview_store.kept_head(manager.get_entries()) is None  # nothing kept yet
    _keep_everything(path, index_dir)
    with _open(path, index_dir) as manager:
        entries = manager.get_entries()
        assistants = [e for e in entries if e.role == "assistant"]
        head = preview_store.kept_head(entries)
        assert head is not None
        assert head.silent == {e.offset: describe.is_silent_turn(e.get("message")) for e in assistants}
        assert any(head.silent.values()) and not all(head.silent.values())
        assert all(head.describes(e.offset) for e in entries)
        assert not head.describes(entries[3].offset + 1) and not head.describes(-1)
    kept = next(Path(index_dir).glob("*.pi-previews"))
    data = bytearray(kept.read_bytes())
    data[-1] ^= 0xFF  # a stored file that is not what was written: nothing said, and it goes
    kept.write_bytes(bytes(data))
    with _open(path, index_dir) as manager:
        assert preview_store.kept_head(manager.get_entries()) is None
    assert not kept.exists()


def test_levels_take_the_silent_turns_kept_and_read_only_the_rows_they_show(
    kept_setup: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filters ask every assistant message on the path whether it is a silent turn: once the
    walks missed a share of the session, that is read from what was kept (not every preview
    kept), and the bodies read are those of the rows shown (and of the calls they name)."""
    path, index_dir = kept_setup
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        expected = _levels(manager, None, limit=2)
        shown = expected.count(b'"id":')
    _keep_everything(path, index_dir)
    monkeypatch.setattr(preview_cache, "STORED_LOAD_SHARE", 1)  # every preview missed, first
    monkeypatch.setattr(preview_cache, "SILENT_LOAD_SHARE", 1 << 40)  # at the first miss
    loads: list[str] = []
    for name in ("load", "kept_head"):
        real = getattr(preview_store, name)
        monkeypatch.setattr(
            preview_store, name, lambda *a, _real=real, _name=name: loads.append(_name) or _real(*a)
        )
    reads = _BodyReads(monkeypatch)
    with _open(path, index_dir) as manager:
        reads.count = 0
        assistants = sum(e.role == "assistant" for e in manager.get_entries())
        cache = _server_cache(manager)
        assert _levels(manager, cache, limit=2) == expected
        assert loads == ["kept_head"]
        assert not cache.has_new_previews()  # made again of lines kept: nothing new to keep
        assert 0 < reads.count <= 2 * shown < assistants  # not every assistant message's body


def test_the_rows_a_reply_shows_are_read_together_before_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A levels reply (and a window) knows its rows before it encodes them: those not known are
    read in one pass, not missed and read one by one; the reply is the same."""
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setattr(entry_facts, "MIN_BATCH", 1)
    monkeypatch.setattr(preview_cache, "MIN_BATCH", 1)
    path = _branchy_session(tmp_path / "s.jsonl")
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        expected = _levels(manager, None)
    missed: list[Any] = []
    real = PreviewCache._missed
    monkeypatch.setattr(
        PreviewCache, "_missed", lambda self, entry: missed.append(entry) or real(self, entry)
    )
    with SessionManager.open(str(path), read_only=True, index=False) as manager:
        for entry in manager.get_entries():
            if type(entry._body) is LineBytes:
                entry._body = describe.ABSENT  # read from the file, as a big session's are
        assert _levels(manager, _server_cache(manager)) == expected
    assert missed == []
