"""A path a handler resolves as the request arrives (on the event loop) reads nothing there."""

from __future__ import annotations

import pwd
from unittest import mock

from pi_session_server.server.locations import resolved_on_the_loop
from pi_session_server.session.environment import Environment


def test_a_path_is_resolved_on_the_loop_unless_its_home_is_a_password_entry_to_read():
    with_home = Environment("/work", "/home/me")
    without_home = Environment("/work", None)
    with mock.patch.object(pwd, "getpwuid", side_effect=AssertionError("read on the loop")):
        assert resolved_on_the_loop("~/s.jsonl", with_home) == "/home/me/s.jsonl"
        assert resolved_on_the_loop("s.jsonl", without_home) == "/work/s.jsonl"
        assert resolved_on_the_loop("/abs/../s.jsonl", without_home) == "/s.jsonl"
        # $HOME not set: the home is the user's password entry, read by a worker instead
        assert resolved_on_the_loop("~/s.jsonl", without_home) is None
        assert resolved_on_the_loop("~", without_home) is None
