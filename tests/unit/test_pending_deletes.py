"""server/pending_deletes.py: which pending deletes a request waits for (by what its file is, however
spelled), and that those waiting start in the order they arrived, once, and not at all when
cancelled first."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.server import pending_deletes
from pi_session_server.server.locations import directory_entry, file_keys
from pi_session_server.server.pending_deletes import EVERY_FILE, LookLimit, PendingDelete, PendingDeletes
from pi_session_server.server.workers import WorkerPool


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def new_pending() -> PendingDeletes:
    return PendingDeletes(WorkerPool())


def known(pending: PendingDeletes, path: str) -> PendingDelete:
    """A delete of ``path`` whose file a worker has looked at."""
    delete = pending.begin()
    pending.known(delete, file_keys(path))
    return delete


async def settled(*futures: Any, rounds: int = 200) -> None:
    """Until ``futures`` are done (the looks run on a worker)."""
    for _ in range(rounds):
        if all(future.done() for future in futures):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("not done")


def test_with_nothing_pending_a_request_starts_at_once():
    async def scenario() -> Any:
        return new_pending().ordered(["/a"], lambda: "started")

    assert run(scenario()) == "started"


def test_requests_wait_for_the_deletes_of_their_files_and_start_in_arrival_order(tmp_path: Path):
    a, b, c = (str(tmp_path / name) for name in "abc")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        on_a_delete, on_b_delete = known(pending, a), known(pending, b)
        on_a = pending.ordered([a], lambda: started.append("on a") or "a")
        on_c = pending.ordered([c], lambda: started.append("on c") or "c")
        listing = pending.ordered(EVERY_FILE, lambda: started.append("listing") or "l")
        also_on_a = pending.ordered([a], lambda: started.append("on a again") or "a2")
        assert await on_c == "c" and started == ["on c"]  # no delete of its file: once looked at
        pending.end(on_a_delete)
        await settled(on_a, also_on_a)
        assert started == ["on c", "on a", "on a again"]  # the listing waits for b too
        pending.end(on_b_delete)
        assert [await on_a, await also_on_a, await listing] == ["a", "a2", "l"]
        assert not pending
        return started

    assert run(scenario()) == ["on c", "on a", "on a again", "listing"]


def test_a_request_spelling_the_file_otherwise_waits_for_its_delete(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    doomed = tmp_path / "dir" / "s.jsonl"
    doomed.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(doomed)
    (tmp_path / "linked-dir").symlink_to(tmp_path / "dir")
    spellings = [str(tmp_path / "link.jsonl"), str(tmp_path / "linked-dir" / "s.jsonl")]

    async def scenario() -> None:
        pending = new_pending()
        delete = known(pending, str(doomed))
        waiting = [pending.ordered([path], lambda path=path: path) for path in spellings]
        await asyncio.sleep(0.2)
        assert not any(future.done() for future in waiting)
        pending.end(delete)
        assert [await future for future in waiting] == spellings

    run(scenario())


def test_the_spellings_of_a_file_share_a_key_before_and_after_it_is_gone(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    doomed = tmp_path / "dir" / "s.jsonl"
    doomed.write_text("{}\n")
    (tmp_path / "linked-dir").symlink_to(tmp_path / "dir")
    link = tmp_path / "link.jsonl"
    link.symlink_to(doomed)
    through_dir = str(tmp_path / "linked-dir" / "s.jsonl")
    deleting = file_keys(str(doomed))
    assert file_keys(through_dir) & deleting and file_keys(str(link)) & deleting
    assert not file_keys(str(tmp_path / "other.jsonl")) & deleting
    os.unlink(doomed)  # a request looked at once the delete removed the file, before it answered
    assert file_keys(through_dir) & deleting
    # a delete of the symlink removes the link: the entry named, not the file it points to
    assert directory_entry(str(link)) == str(link) and directory_entry(through_dir) == str(doomed)


def test_a_request_looked_at_after_another_starts_after_it(tmp_path: Path):
    """The first request on a file waits for the look at it; the delete answers meanwhile, and a
    second request on the file arrives: it still starts after the first."""
    a = str(tmp_path / "a")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = known(pending, a)
        first = pending.ordered([a], lambda: started.append("first"))
        pending.end(delete)
        second = pending.ordered([a], lambda: started.append("second"))
        await settled(first, second)
        assert not pending
        return started

    assert run(scenario()) == ["first", "second"]


def test_a_request_cancelled_while_it_waits_never_starts(tmp_path: Path):
    a = str(tmp_path / "a")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = known(pending, a)
        waiting = pending.ordered([a], lambda: started.append("started"))
        looking = pending.ordered([a], lambda: started.append("started too"))
        looking.cancel()  # (while its file is looked at)
        await asyncio.sleep(0.1)
        waiting.cancel()
        pending.end(delete)
        await asyncio.sleep(0.05)
        return started

    assert run(scenario()) == []


def test_a_later_delete_of_the_file_ended_first_leaves_the_earlier_one_waited_for(tmp_path: Path):
    a = str(tmp_path / "a")

    async def scenario() -> None:
        pending = new_pending()
        first, second = known(pending, a), known(pending, a)
        pending.end(second)  # (cancelled while it waited for the first)
        waiting = pending.ordered([a], lambda: "started")
        await asyncio.sleep(0.1)
        assert not waiting.done()
        pending.end(first)
        assert await waiting == "started"

    run(scenario())


def test_a_second_delete_of_the_file_waits_for_the_first(tmp_path: Path):
    a = str(tmp_path / "a")

    async def scenario() -> None:
        pending = new_pending()
        first = known(pending, a)
        second = pending.begin()
        assert pending.known(second, file_keys(a)) == [first.done]
        assert pending.known(pending.begin(), file_keys(str(tmp_path / "b"))) == []

    run(scenario())


def test_a_delete_whose_file_is_not_known_yet_holds_every_request_on_a_file_or_session(tmp_path: Path):
    async def scenario() -> None:
        pending = new_pending()
        delete = pending.begin()
        on_a = pending.ordered([str(tmp_path / "a")], lambda: "a")
        on_session = pending.ordered([], lambda: "session")
        await asyncio.sleep(0.1)
        assert not on_a.done() and not on_session.done()
        pending.known(delete, file_keys(str(tmp_path / "b")))
        assert [await on_a, await on_session] == ["a", "session"]
        pending.end(delete)

    run(scenario())


def test_what_a_waiting_request_started_is_its_outcome(tmp_path: Path):
    a = str(tmp_path / "a")

    async def scenario() -> None:
        pending = new_pending()
        delete = known(pending, a)

        async def later() -> str:
            return "from a coroutine"

        def refused() -> Any:
            raise ValueError("refused")

        coroutine = pending.ordered([a], later)
        failure = pending.ordered([a], refused)
        await asyncio.sleep(0.1)
        pending.end(delete)
        assert await coroutine == "from a coroutine"
        try:
            await failure
        except ValueError as error:
            assert str(error) == "refused"
        else:
            raise AssertionError("the failure of start() is the request's")

    run(scenario())


def test_the_requests_on_a_session_sent_after_a_look_first_wait_for_it(tmp_path: Path):
    """A request by ``uri`` that looks at its file first (which session holds it?) is passed by
    none sent after it: a request on a session waits for the look, then starts after it."""
    path = str(tmp_path / "s.jsonl")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        by_uri = pending.looked_first(
            lambda: file_keys(path),
            lambda keys, _look: started.append("by uri") or (path in keys),
            pending.arrived(),
        )
        assert pending  # until the look answered
        on_session = pending.ordered([], lambda: started.append("on the session") or "s")
        assert not isinstance(on_session, str)  # it waits
        assert [await by_uri, await on_session] == [True, "s"]
        assert not pending
        return started

    assert run(scenario()) == ["by uri", "on the session"]


def test_a_look_first_cancelled_lets_those_behind_it_go_on(tmp_path: Path):
    async def scenario() -> str:
        pending = new_pending()
        stuck = asyncio.Event()
        by_uri = pending.looked_first(
            lambda: file_keys(str(tmp_path)), lambda _keys, _look: stuck.set(), pending.arrived()
        )
        by_uri.cancel()
        on_session = pending.ordered([], lambda: "s")
        assert not stuck.is_set()
        return on_session if isinstance(on_session, str) else await on_session

    assert run(scenario()) == "s"


def test_a_look_that_hangs_delays_no_request_on_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    doomed, stuck, other = (str(tmp_path / name) for name in ("doomed", "stuck", "other"))
    release = threading.Event()

    def hanging_keys(path: str) -> Any:
        if path == stuck:
            release.wait(10)  # a stat on a stuck network mount
        return file_keys(path)

    monkeypatch.setattr(pending_deletes, "file_keys", hanging_keys)

    async def scenario() -> None:
        pending = new_pending()
        delete = known(pending, doomed)
        on_stuck = pending.ordered([stuck], lambda: "stuck")
        on_other = pending.ordered([other], lambda: "other")
        try:
            assert await asyncio.wait_for(asyncio.shield(on_other), 1.0) == "other"
        finally:
            release.set()
            pending.end(delete)
            await on_stuck

    run(scenario())


def test_a_look_first_that_hangs_holds_those_behind_it_a_bounded_time(monkeypatch: pytest.MonkeyPatch):
    """A stat on a stuck mount: the request goes on without what its file is, and so do those
    behind it, once the limit passed."""
    monkeypatch.setattr(pending_deletes, "LOOK_LIMIT_SECONDS", 0.2)
    release = threading.Event()

    async def scenario() -> list[Any]:
        pending = new_pending()
        by_uri = pending.looked_first(lambda: release.wait(10), lambda keys, _look: keys, pending.arrived())
        on_session = pending.ordered([], lambda: "s")
        try:
            return [await asyncio.wait_for(by_uri, 5), await asyncio.wait_for(on_session, 5)]
        finally:
            release.set()

    assert run(scenario()) == [None, "s"]


def test_requests_on_one_file_start_in_arrival_order_whatever_look_answers_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each look runs on a worker of its own: the second request's look answers while the first's
    still runs, and it waits for the first."""
    a = str(tmp_path / "a")
    release = threading.Event()
    slow = {a}  # the first look at `a` waits for `release`

    def keys_of(path: str) -> Any:
        if path in slow:
            slow.discard(path)
            release.wait(10)
        return file_keys(path)

    monkeypatch.setattr(pending_deletes, "file_keys", keys_of)

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = known(pending, str(tmp_path / "doomed"))
        first = pending.ordered([a], lambda: started.append("first"))
        second = pending.ordered([a], lambda: started.append("second"))
        await asyncio.sleep(0.2)
        assert started == []  # the second's look answered: it waits for the first
        release.set()
        await settled(first, second)
        pending.end(delete)
        return started

    assert run(scenario()) == ["first", "second"]


def test_a_request_on_a_file_spelled_otherwise_starts_after_one_before_it_found_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Both wait for a delete of the file; the first's look answers after the second's: once it
    did, it is known to be on the second's file, which starts after it."""
    a = tmp_path / "a"
    a.write_text("{}\n")
    (tmp_path / "link").symlink_to(a)
    release = threading.Event()
    slow = {str(a)}

    def keys_of(path: str) -> Any:
        if path in slow:
            slow.discard(path)
            release.wait(10)
        return file_keys(path)

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = known(pending, str(a))
        monkeypatch.setattr(pending_deletes, "file_keys", keys_of)
        first = pending.ordered([str(a)], lambda: started.append("first"))
        second = pending.ordered([str(tmp_path / "link")], lambda: started.append("second"))
        await asyncio.sleep(0.2)  # the second's look answered
        release.set()
        await asyncio.sleep(0.2)  # and then the first's
        pending.end(delete)
        await settled(first, second)
        return started

    assert run(scenario()) == ["first", "second"]


def test_a_look_limit_passes_once_the_look_ran_for_it_not_while_it_waited_for_a_thread(
    monkeypatch: pytest.MonkeyPatch,
):
    # (no step depends on a sleep shorter than the limit: a loaded machine's sleeps run long)
    monkeypatch.setattr(pending_deletes, "LOOK_LIMIT_SECONDS", 0.5)

    async def armed_soon(limit: LookLimit) -> None:
        worker = threading.Thread(target=limit.arm_from_worker)  # the look starts on its worker
        worker.start()
        await asyncio.to_thread(worker.join)
        await asyncio.sleep(0)  # (the loop arms it)

    async def scenario() -> None:
        passed: list[str] = []
        limit = LookLimit(lambda: passed.append("passed"))
        await asyncio.sleep(0.7)  # the look waits for a worker thread: not armed
        assert passed == []
        await armed_soon(limit)
        assert passed == []
        deadline = time.monotonic() + 10
        while not passed and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert passed == ["passed"]
        known_in_time = LookLimit(lambda: passed.append("passed too"))
        await armed_soon(known_in_time)
        known_in_time.disarm()  # the look answered
        await asyncio.sleep(0.7)
        assert passed == ["passed"]

    run(scenario())


def busy_pool(threads: int) -> tuple[WorkerPool, threading.Event]:
    """A pool of ``threads`` threads, each busy until the event is set."""
    pool = WorkerPool(max_threads=threads)
    free = threading.Event()
    for n in range(threads):
        pool.queue(f"busy {n}").submit(lambda _token: free.wait(10), interruptible=False)
    return pool, free


def test_a_look_first_that_waits_for_a_thread_is_not_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Every worker thread busy: the look waits for one longer than the limit, then answers at
    once; the request starts with what the look found, not without it."""
    monkeypatch.setattr(pending_deletes, "LOOK_LIMIT_SECONDS", 0.2)
    path = str(tmp_path / "s.jsonl")

    async def scenario() -> Any:
        pool, free = busy_pool(2)
        pending = PendingDeletes(pool)
        by_uri = pending.looked_first(lambda: file_keys(path), lambda keys, _look: keys, pending.arrived())
        await asyncio.sleep(0.5)
        free.set()
        return await asyncio.wait_for(by_uri, 5)

    keys = run(scenario())
    assert keys is not None and path in keys


def test_a_request_whose_look_first_passed_its_limit_looks_no_more_at_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """After the limit passed, the request orders itself by its file from the look still running
    (once it answers): it does not look at the stuck file again on another thread."""
    monkeypatch.setattr(pending_deletes, "LOOK_LIMIT_SECONDS", 0.2)
    stuck = str(tmp_path / "stuck")
    release = threading.Event()
    looks: list[str] = []

    def keys_of(path: str) -> Any:
        looks.append(path)
        if path == stuck:
            release.wait(10)
        return file_keys(path)

    monkeypatch.setattr(pending_deletes, "file_keys", keys_of)

    async def scenario() -> list[str]:
        pending = new_pending()
        delete = known(pending, str(tmp_path / "doomed"))
        started: list[str] = []
        by_uri = pending.looked_first(
            lambda: keys_of(stuck),
            lambda keys, look: pending.ordered(
                [stuck],
                lambda: started.append(f"by uri, found {keys}"),
                waiting=waiting,
                looked=(stuck, look),
            ),
            waiting := pending.arrived(),
        )
        await asyncio.sleep(0.5)  # the limit passed: the request waits for its look
        assert started == []
        release.set()
        await asyncio.wait_for(by_uri, 5)
        pending.end(delete)
        return started

    assert run(scenario()) == ["by uri, found None"]
    assert looks == [stuck]


def test_a_plain_request_on_a_session_starts_after_one_on_it_that_waits_for_a_delete(tmp_path: Path):
    """A switch of session s1 onto the file a delete is deleting waits for the delete to answer;
    a request on s1 sent after it (on no file) waits for it, not only for the delete to know its
    file; one on another session does not."""
    doomed = str(tmp_path / "doomed")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = known(pending, doomed)
        switch = pending.ordered([doomed], lambda: started.append("switch s1"), session="s1")
        on_s1 = pending.ordered([], lambda: started.append("read s1"), session="s1")
        on_s2 = pending.ordered([], lambda: started.append("read s2"), session="s2")
        close_s1 = pending.ordered([], lambda: started.append("close s1"), session="s1")
        await settled(on_s2)
        await asyncio.sleep(0.1)
        assert started == ["read s2"]
        pending.end(delete)
        await settled(switch, on_s1, close_s1)
        assert not pending
        return started

    assert run(scenario()) == ["read s2", "switch s1", "read s1", "close s1"]


def test_a_request_on_the_session_a_look_first_found_starts_after_it(tmp_path: Path):
    """A request by ``uri`` whose look finds the file of session s1 (spelled otherwise), while a
    delete whose file is not known yet holds both: a request on s1 sent after it, which took its
    place first, still starts after it."""
    path = str(tmp_path / "s.jsonl")

    async def scenario() -> list[str]:
        pending = new_pending()
        started: list[str] = []
        delete = pending.begin()
        waiting = pending.arrived()

        def found(keys: Any, _look: Any) -> Any:
            waiting.session = "s1"  # (the server finds the session holding the file by its keys)
            return pending.ordered([], lambda: started.append("by uri"), waiting=waiting)

        by_uri = pending.looked_first(lambda: file_keys(path), found, waiting)
        on_s1 = pending.ordered([], lambda: started.append("on s1"), session="s1")
        await asyncio.sleep(0.2)
        assert started == []
        pending.known(delete, file_keys(str(tmp_path / "other")))
        await settled(by_uri, on_s1)
        pending.end(delete)
        return started

    assert run(scenario()) == ["by uri", "on s1"]
