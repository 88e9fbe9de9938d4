"""Builders of session values for tests and benchmarks (imported as ``builders``: ``tests/`` is on
the path of every test, and bench adds it).

Messages and entries as dicts, for the library's API: :func:`user_message`, :func:`assistant_message`
(pi's own tests' "faux" assistant message by default), :func:`tool_result_message`,
:func:`message_entry`. Lines as pi writes them, JSON text in pi's key order: :func:`header`,
:func:`user`, :func:`assistant`, :func:`tool_result` and the other entry types, and
:func:`generate_session`, a realistic session of a given size.
"""

from __future__ import annotations

import random
import time
from typing import Any

from pi_session_server.format.jsjson import dumps
from pi_session_server.format.jsvalue import ABSENT

# ---- messages and entries (dicts) ------------------------------------------------------------

#: the usage of pi's tests' assistant messages
TEST_USAGE: dict[str, Any] = {
    "input": 1,
    "output": 1,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 2,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def usage(input_tokens: int, output_tokens: int, cost: float) -> dict[str, Any]:
    """An assistant message's ``usage``: no cache, ``cost`` its total alone."""
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": input_tokens + output_tokens,
        "cost": {"total": cost},
    }


def now_ms() -> int:
    """``Date.now()``, the timestamp pi's tests give their messages."""
    return int(time.time() * 1000)


def user_message(text: Any = "hello", timestamp: Any = None) -> dict[str, Any]:
    """``{role: "user", content: text, timestamp}`` (``timestamp`` None: now)."""
    return {"role": "user", "content": text, "timestamp": now_ms() if timestamp is None else timestamp}


def assistant_message(
    text: str = "hi",
    timestamp: Any = None,
    *,
    calls: tuple[str, ...] = (),
    model: str = "test",
    provider: str = "anthropic",
    usage: Any = TEST_USAGE,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    """An assistant message with one text block (none for ``text=""``) and a ``bash`` tool call per
    id in ``calls``; ``stopReason`` "toolUse" when it calls, else "stop" (``timestamp`` None: now)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": c, "name": "bash", "arguments": {"command": "ls"}} for c in calls]
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": usage,
        "stopReason": stop_reason or ("toolUse" if calls else "stop"),
        "timestamp": now_ms() if timestamp is None else timestamp,
    }


def tool_result_message(
    call_id: str, text: str = "done", *, name: str = "bash", error: bool = False, timestamp: Any = None
) -> dict[str, Any]:
    """The result of tool call ``call_id`` (``timestamp`` None: now)."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": now_ms() if timestamp is None else timestamp,
    }


def message_entry(
    entry_id: Any, parent_id: Any, message: Any, timestamp: str = "2025-01-01T00:00:00Z"
) -> dict[str, Any]:
    """A ``message`` entry holding ``message``."""
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "message": message,
    }


# ---- lines (JSON text as pi writes it) ----------------------------------------------------------

USAGE: dict[str, Any] = {
    "input": 1200,
    "output": 300,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1500,
    "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0, "total": 0.0081},
}

_TS = "2026-11-30T09:13:48.180Z"


def header(
    session_id: str = "01a22bbb-5993-736f-8ed9-3b7e7d11bef3", version: Any = 3, cwd: str = "/proj"
) -> str:
    value: dict[str, Any] = {"type": "session"}
    if version is not None:
        value["version"] = version
    value.update({"id": session_id, "timestamp": _TS, "cwd": cwd})
    return dumps(value)


def _entry(etype: str, entry_id: str, parent: str | None, timestamp: str = _TS, **fields: Any) -> str:
    return dumps({"type": etype, "id": entry_id, "parentId": parent, "timestamp": timestamp, **fields})


def user(entry_id: str, parent: str | None, text: Any = "hello", timestamp: str = _TS) -> str:
    return _entry(
        "message", entry_id, parent, timestamp, message={"role": "user", "content": text, "timestamp": 1}
    )


def assistant(
    entry_id: str,
    parent: str | None,
    text: str = "ok",
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = (),
    thinking: str | None = None,
    model: str = "claude-sonnet-4-5",
    timestamp: str = _TS,
) -> str:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"})
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in calls:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
    message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "usage": USAGE,
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": 2,
    }
    return _entry("message", entry_id, parent, timestamp, message=message)


def tool_result(
    entry_id: str,
    parent: str | None,
    call_id: str,
    text: str = "done",
    name: str = "read",
    images: tuple[tuple[str, str], ...] = (),
    timestamp: str = _TS,
) -> str:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for data, mime in images:
        content.append({"type": "image", "data": data, "mimeType": mime})
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": False,
        "timestamp": 3,
    }
    return _entry("message", entry_id, parent, timestamp, message=message)


def label(entry_id: str, parent: str | None, target: str, text: str | None = "bookmark") -> str:
    fields: dict[str, Any] = {"targetId": target}
    if text is not None:
        fields["label"] = text
    return _entry("label", entry_id, parent, **fields)


def compaction(entry_id: str, parent: str | None, first_kept: str, summary: str = "summary") -> str:
    return _entry(
        "compaction", entry_id, parent, summary=summary, firstKeptEntryId=first_kept, tokensBefore=1000
    )


def branch_summary(entry_id: str, parent: str | None, from_id: str, summary: str = "left branch") -> str:
    return _entry("branch_summary", entry_id, parent, fromId=from_id, summary=summary)


def context_edit(entry_id: str, parent: str | None, target: str, replacement: Any = None) -> str:
    """pi 1.6.0's edit of ``target``: ``None`` leaves it out of the context, ``{"content": ...}``
    replaces its content (``ABSENT``: a line without ``replacement``, which pi never writes)."""
    fields: dict[str, Any] = {"targetId": target}
    if replacement is not ABSENT:
        fields["replacement"] = replacement
    return _entry("context_edit", entry_id, parent, **fields)


def model_change(entry_id: str, parent: str | None, provider: str = "anthropic", model_id: str = "m") -> str:
    return _entry("model_change", entry_id, parent, provider=provider, modelId=model_id)


def session_info(entry_id: str, parent: str | None, name: str) -> str:
    return _entry("session_info", entry_id, parent, name=name)


_WORDS = [
    "the",
    "session",
    "file",
    "tree",
    "branch",
    "leaf",
    "entry",
    "parent",
    "compaction",
    "summary",
    "context",
    "model",
    "tool",
    "call",
    "result",
    "read",
    "write",
    "edit",
    "bash",
    "python",
    "function",
    "class",
    "import",
    "return",
    "value",
    "error",
    "test",
    "数据",
    "検索",
    "😀",
    "🚀",
]


def chat(turns: int) -> list[str]:
    """A header and ``turns`` turns in one chain: a user message, an assistant message holding only
    a tool call (a silent turn), the call's result and an answer."""
    lines = [header()]
    parent = None
    for turn in range(turns):
        ids = [f"t{turn}u", f"t{turn}a", f"t{turn}r", f"t{turn}z"]
        lines.append(user(ids[0], parent, f"question {turn}"))
        lines.append(assistant(ids[1], ids[0], "", calls=((f"call{turn}", "read", {"path": "/p"}),)))
        lines.append(tool_result(ids[2], ids[1], f"call{turn}", "contents"))
        lines.append(assistant(ids[3], ids[2], f"answer {turn}"))
        parent = ids[3]
    return lines


def _text(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(words))


def generate_session(target_bytes: int, seed: int = 1) -> bytes:
    """A linear session of realistic turns, about ``target_bytes`` long (ends with a newline)."""
    rnd = random.Random(seed)
    out = [header().encode()]
    size = len(out[0]) + 1
    n = 0
    prev: str | None = None

    def next_id() -> str:
        nonlocal n
        n += 1
        return f"{n:08x}"

    while size < target_bytes:
        turn: list[str] = []
        uid = next_id()
        turn.append(user(uid, prev, _text(rnd, rnd.randint(5, 80))))
        prev = uid
        for _ in range(rnd.randint(1, 4)):
            aid = next_id()
            call = f"toolu_{aid}"
            turn.append(
                assistant(
                    aid,
                    prev,
                    _text(rnd, rnd.randint(5, 60)),
                    calls=((call, "read", {"path": f"/proj/src/{aid}.py"}),),
                    thinking=_text(rnd, rnd.randint(10, 120)),
                )
            )
            rid = next_id()
            turn.append(tool_result(rid, aid, call, _text(rnd, rnd.randint(20, 1500))))
            prev = rid
        aid = next_id()
        turn.append(assistant(aid, prev, _text(rnd, rnd.randint(10, 200))))
        prev = aid
        for line in turn:
            data = line.encode()
            out.append(data)
            size += len(data) + 1
    return b"\n".join(out) + b"\n"
