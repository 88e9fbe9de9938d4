"""gc_paused on several threads at once (the server's workers load sessions in parallel): the
collector stays off until the last pause ends, and is on again afterwards."""

from __future__ import annotations

import gc
import threading

from pi_session_server.format.gcpause import enabled_outside_pauses, gc_paused, set_enabled_outside_pauses


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


def test_the_process_setting_is_read_and_set_through_a_pause_under_way() -> None:
    """(What the tests' guard of process-wide state reads and puts back, while a job of an
    earlier test's server may still be loading on a thread.)"""
    with gc_paused():
        assert not gc.isenabled()
        assert enabled_outside_pauses()
        set_enabled_outside_pauses(False)
        assert not enabled_outside_pauses()
    assert not gc.isenabled()  # the setting made during the pause holds after it
    set_enabled_outside_pauses(True)
    assert gc.isenabled() and enabled_outside_pauses()
