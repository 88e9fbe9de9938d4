"""gc_paused on several threads at once (the server's workers load sessions in parallel): the
collector stays off until the last pause ends, and is on again afterwards."""

from __future__ import annotations

import gc
import threading

from pi_session_server.format.gcpause import gc_paused


def test_overlapping_pauses_on_two_threads_share_one_pause() -> None:
    assert gc.isenabled()
    a_in, a_out, b_in = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gc_paused():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with gc_paused():
            b_in.set()
            a_out.wait(10)  # the first pause has ended: this one still holds
            seen.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_a_pause_inside_a_disabled_collector_leaves_it_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
