"""An image moved out of a session never overwrites a file another program made under the chosen
name between the look for a free name and the file's creation (a second editor window moving
the same image): the next free name is taken instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_session_server.server import language_code_actions


def test_a_name_taken_after_the_look_is_left_alone_and_the_next_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    wanted = tmp_path / "s.abc.0.png"
    looked = language_code_actions._free_name
    calls = []

    def look_then_lose_the_race(path: str) -> str:
        name = looked(path)
        if not calls:  # the other program creates the file right after our first look
            Path(name).write_bytes(b"theirs")
        calls.append(name)
        return name

    monkeypatch.setattr(language_code_actions, "_free_name", look_then_lose_the_race)
    written = language_code_actions._write_new_file(str(wanted), b"ours")
    assert wanted.read_bytes() == b"theirs"
    assert written == str(tmp_path / "s.abc.0-2.png")
    assert Path(written).read_bytes() == b"ours"
