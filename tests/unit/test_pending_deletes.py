"""server/pending_deletes.py: which pending deletes a request waits for, and that those waiting
start in the order they arrived, once, and not at all when cancelled first."""

from __future__ import annotations

import asyncio
from typing import Any

from pi_session_server.server.pending_deletes import EVERY_FILE, PendingDeletes


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_with_nothing_pending_a_request_starts_at_once():
    async def scenario() -> Any:
        return PendingDeletes().ordered(["/a"], lambda: "started")

    assert run(scenario()) == "started"


def test_requests_wait_for_the_deletes_of_their_files_and_start_in_arrival_order():
    async def scenario() -> list[str]:
        pending = PendingDeletes()
        started: list[str] = []
        a, b = pending.begin("/a"), pending.begin("/b")
        on_a = pending.ordered(["/a"], lambda: started.append("on a") or "a")
        on_c = pending.ordered(["/c"], lambda: started.append("on c") or "c")
        listing = pending.ordered(EVERY_FILE, lambda: started.append("listing") or "l")
        also_on_a = pending.ordered(["/a"], lambda: started.append("on a again") or "a2")
        assert on_c == "c" and started == ["on c"]  # no delete of its file: at once
        pending.end("/a", a)
        await asyncio.sleep(0)
        assert started == ["on c", "on a", "on a again"]  # the listing waits for /b too
        pending.end("/b", b)
        await asyncio.sleep(0)
        assert [await on_a, await also_on_a, await listing] == ["a", "a2", "l"]
        assert not pending
        return started

    assert run(scenario()) == ["on c", "on a", "on a again", "listing"]


def test_a_request_cancelled_while_it_waits_never_starts():
    async def scenario() -> list[str]:
        pending = PendingDeletes()
        started: list[str] = []
        done = pending.begin("/a")
        waiting = pending.ordered(["/a"], lambda: started.append("started"))
        waiting.cancel()
        pending.end("/a", done)
        await asyncio.sleep(0)
        return started

    assert run(scenario()) == []


def test_a_later_delete_of_the_file_ended_first_leaves_the_earlier_one_waited_for():
    async def scenario() -> None:
        pending = PendingDeletes()
        first, second = pending.begin("/a"), pending.begin("/a")
        pending.end("/a", second)  # (cancelled while it waited for the first)
        waiting = pending.ordered(["/a"], lambda: "started")
        await asyncio.sleep(0)
        assert not waiting.done()
        pending.end("/a", first)
        assert await waiting == "started"

    run(scenario())


def test_a_delete_of_a_path_not_resolved_yet_holds_every_request_on_a_file_or_session():
    async def scenario() -> None:
        pending = PendingDeletes()
        anywhere = pending.begin_anywhere()
        on_a = pending.ordered(["/a"], lambda: "a")
        on_session = pending.ordered([], lambda: "session")
        await asyncio.sleep(0)
        assert not on_a.done() and not on_session.done()
        pending.end_anywhere(anywhere)
        assert [await on_a, await on_session] == ["a", "session"]

    run(scenario())


def test_what_a_waiting_request_started_is_its_outcome():
    async def scenario() -> None:
        pending = PendingDeletes()
        done = pending.begin("/a")

        async def later() -> str:
            return "from a coroutine"

        def refused() -> Any:
            raise ValueError("refused")

        coroutine = pending.ordered(["/a"], later)
        failure = pending.ordered(["/a"], refused)
        pending.end("/a", done)
        assert await coroutine == "from a coroutine"
        try:
            await failure
        except ValueError as error:
            assert str(error) == "refused"
        else:
            raise AssertionError("the failure of start() is the request's")

    run(scenario())
