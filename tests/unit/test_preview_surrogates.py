"""Tree previews never carry a lone UTF-16 surrogate: pi's selector cuts text at 200 UTF-16 units,
which can split an emoji, and Node prints the half left as U+FFFD. We send what pi shows, so every
JSON parser can read our pi/getTree replies (strict ones such as serde_json and msgspec reject an
escaped lone surrogate: one emoji at the cut failed the whole page)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from pi_session_server.format.jstext import as_displayed
from pi_session_server.server.tree_view import encode_flat_tree_view
from pi_session_server.session import SessionManager
from pi_session_server.session.describe import preview_of
from pi_session_server.session.entry_facts import collect_tool_calls
from pi_session_server.session.preview_cache import PreviewCache

EMOJI = "\U0001f600"  # two UTF-16 units


def _session(tmp_path: Path, *messages: dict) -> SessionManager:
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    ]
    parent = None
    for i, message in enumerate(messages):
        entry_id = f"e{i}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2025-01-01T00:00:{i + 1:02d}.000Z",
                "message": message,
            }
        )
        parent = entry_id
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return SessionManager.open(str(path))


def _strict_nodes(sm: SessionManager, cache: PreviewCache | None = None) -> list[dict]:
    by_id = {e["id"]: e for e in sm.get_entries()}
    body = encode_flat_tree_view(sm.get_tree(), sm.get_leaf_id(), by_id, cache=cache)
    return msgspec.json.decode(body)["nodes"]  # raises on an escaped lone surrogate


def test_an_emoji_cut_in_half_at_the_preview_limit_shows_as_pi_prints_it(tmp_path: Path) -> None:
    text = "a" + EMOJI * 150  # the 200th UTF-16 unit is the first half of the 100th emoji
    sm = _session(tmp_path, {"role": "user", "content": text, "timestamp": 1})
    expected = "user: a" + EMOJI * 99 + "\ufffd"
    assert preview_of(sm.get_entries()[0], {}) == expected
    for cache in (None, PreviewCache()):
        assert [node["preview"] for node in _strict_nodes(sm, cache)] == [expected]


def test_lone_surrogates_from_the_data_and_cut_tool_calls_are_shown_too(tmp_path: Path) -> None:
    path = tmp_path / "raw.jsonl"
    header = '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
    # a lone surrogate written escaped in the file (JSON.parse keeps it), and a bash command whose
    # 50-unit cut splits an emoji
    user = (
        '{"type":"message","id":"u","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"odd \\ud800 half","timestamp":1}}'
    )
    command = "x" + EMOJI * 40
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": command}}
    assistant = {
        "type": "message",
        "id": "a",
        "parentId": "u",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2},
    }
    result = {
        "type": "message",
        "id": "r",
        "parentId": "a",
        "timestamp": "2025-01-01T00:00:03.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [],
            "timestamp": 3,
        },
    }
    path.write_text(
        "\n".join(
            [header, user, json.dumps(assistant, ensure_ascii=False), json.dumps(result, ensure_ascii=False)]
        )
        + "\n",
        encoding="utf-8",
    )
    sm = SessionManager.open(str(path))
    entries = {e["id"]: e for e in sm.get_entries()}
    assert preview_of(entries["u"], {}) == "user: odd \ufffd half"
    shown = preview_of(entries["r"], collect_tool_calls(sm.get_entries()))
    assert shown.startswith("[bash: x") and "\ufffd" in shown, shown
    assert shown.encode("utf-8")  # no surrogate left
    nodes = _strict_nodes(sm)
    assert {node["id"]: node["preview"] for node in nodes}["r"] == shown


def test_as_displayed_keeps_whole_pairs_and_plain_text() -> None:
    assert as_displayed("plain") == "plain"
    assert as_displayed("é" + EMOJI) == "é" + EMOJI
    assert as_displayed("\ud83d\ude00") == EMOJI  # a pair held as two code points joins up
    assert as_displayed("a\ud83d") == "a\ufffd"
    assert as_displayed("\ude00b\ud800") == "\ufffdb\ufffd"
