"""Lone UTF-16 surrogates never stop a command or a message meant for display.

A session can hold them (``JSON.parse`` keeps an escaped ``"\\ud800"``) and V8's error messages name
half an emoji ("Unexpected token '\\ud83d'"). Python cannot write them to a UTF-8 stream, and
Neovim's JSON decoder rejects an escaped one with the whole message (the editor test in
editors/neovim/tests/run.lua shows both arriving). pi/* data keeps them: it is the session's content.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from pi_session_server.server.wire import encode_json

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
LONE = (
    '{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"lone \\ud800 half","timestamp":1}}'
)
EMOJI_LINE = "\U0001f600 this line is not JSON"


def _cli(*args: str, encoding: str | None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}
    if encoding is not None:
        env["PYTHONIOENCODING"] = encoding
    return subprocess.run(
        [sys.executable, "-m", "pi_session_server", *args], capture_output=True, env=env, timeout=120
    )


@pytest.mark.parametrize("encoding", [None, "utf-8"], ids=["locale", "strict-utf-8"])
@pytest.mark.parametrize(("command", "status"), [("tree", 0), ("context", 0), ("check", 1)])
def test_commands_print_lone_surrogates_as_the_replacement_character(
    tmp_path: Path, command: str, status: int, encoding: str | None
) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(f"{HEADER}\n{LONE}\n{EMOJI_LINE}\n", encoding="utf-8")
    done = _cli(command, str(path), encoding=encoding)
    assert done.returncode == status, done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr
    out = done.stdout.decode("utf-8")  # valid UTF-8 throughout
    if command == "check":
        assert "Unexpected token '\ufffd'" in out
    else:
        assert "lone \ufffd half" in out


def test_a_file_name_that_is_not_utf8_is_printed_back_as_its_bytes(tmp_path: Path) -> None:
    name = os.fsencode(tmp_path) + b"/caf\xe9.jsonl"
    with open(name, "wb") as f:
        f.write(f"{HEADER}\n{EMOJI_LINE}\n".encode())
    done = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"pi_session_server", b"check", name],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert name + b":2:1: error PI001" in done.stdout


def test_display_encoding_replaces_what_data_encoding_keeps() -> None:
    value = {"message": "half \ud83d", "pair": "\U0001f600", "key \udc80": ["x\ud800y"]}
    shown = encode_json(value, displayed=True)
    assert msgspec.json.decode(shown) == {
        "message": "half \ufffd",
        "pair": "\U0001f600",
        "key \ufffd": ["x\ufffdy"],
    }
    kept = encode_json(value)
    assert b"half \\ud83d" in kept  # the session's own text, escaped as pi writes it
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(kept)
    assert encode_json({"plain": "text \u00e9"}, displayed=True) == encode_json({"plain": "text \u00e9"})
