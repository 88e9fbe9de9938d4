"""Throughput of the JSON layer (jsjson) on realistic session lines.

    .venv/bin/python bench/bench_jsjson.py

Compares dumps (fast path), the exact pure-Python encoder, a naive recursive encoder implementing
the same JS rules, and the C-only lower bounds (json.dumps / msgspec), plus the parsers.
"""

from __future__ import annotations

import base64
import json
import os
import random
import timeit
from collections.abc import Callable
from typing import Any

import msgspec

from pi_session_server.format.jsjson import (
    _encode_exact,
    _encode_string,
    _json_number,
    _ordered_items,
    dumps,
    dumps_bytes,
    parse,
    parse_bytes,
)
from pi_session_server.format.jsvalue import ABSENT


def naive_dumps(v: Any) -> str:
    """The straightforward recursive encoder with the same JS rules (the baseline)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return _encode_string(v)
    if isinstance(v, (int, float)):
        return _json_number(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join("null" if x is ABSENT else naive_dumps(x) for x in v) + "]"
    return "{" + ",".join(_encode_string(k) + ":" + naive_dumps(x) for k, x in _ordered_items(v)) + "}"


def assistant_entry() -> dict[str, Any]:
    rng = random.Random(1)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "file",
        "function",
        "return",
        "value",
        "error",
        "test",
    ]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    return {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": "e5f6a7b8",
        "timestamp": "2026-11-30T09:13:48.184Z",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": text(300),
                    "thinkingSignature": base64.b64encode(os.urandom(300)).decode(),
                },
                {"type": "text", "text": text(250) + "\n\n```python\nprint('héllo')\n```"},
                {
                    "type": "toolCall",
                    "id": "toolu_01ABCDEF",
                    "name": "edit",
                    "arguments": {"path": "/proj/src/main.py", "oldText": text(40), "newText": text(45)},
                },
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 12345,
                "output": 678,
                "cacheRead": 45000,
                "cacheWrite": 1200,
                "totalTokens": 59223,
                "cost": {
                    "input": 0.037035,
                    "output": 0.01017,
                    "cacheRead": 0.0135,
                    "cacheWrite": 0.0045,
                    "total": 0.065205,
                },
            },
            "stopReason": "toolUse",
            "timestamp": 1796030028184,
        },
    }


def image_entry() -> dict[str, Any]:
    data = base64.b64encode(os.urandom(1_500_000)).decode()  # ~2 MB of base64
    return {
        "type": "message",
        "id": "0a1b2c3d",
        "parentId": "a1b2c3d4",
        "timestamp": "2026-11-30T09:13:49.000Z",
        "message": {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "data": data, "mimeType": "image/png"},
            ],
            "timestamp": 1796030029000,
        },
    }


def per_call(fn: Callable[[], Any], min_time: float = 0.3) -> float:
    timer = timeit.Timer(fn)
    n, _ = timer.autorange()
    n = max(1, int(n * min_time / 0.2))
    return min(timer.repeat(repeat=5, number=n)) / n


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:10.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:10.2f} ms"


def main() -> None:
    for name, value in [("assistant message", assistant_entry()), ("2 MB image", image_entry())]:
        text = dumps(value)
        data = text.encode()
        assert naive_dumps(value) == text == _encode_exact(value)
        print(f"\n{name}: {len(data):,} bytes")
        rows = [
            ("dumps (fast path)", lambda v=value: dumps(v)),
            ("dumps_bytes", lambda v=value: dumps_bytes(v)),
            ("exact encoder (iterative)", lambda v=value: _encode_exact(v)),
            ("naive recursive encoder", lambda v=value: naive_dumps(v)),
            (
                "json.dumps (C, not exact)",
                lambda v=value: json.dumps(v, ensure_ascii=False, separators=(",", ":")),
            ),
            ("msgspec.json.encode (C, not exact)", lambda v=value: msgspec.json.encode(v)),
            ("parse(str)", lambda t=text: parse(t)),
            ("parse_bytes(bytes)", lambda d=data: parse_bytes(d)),
            ("json.loads (C)", lambda t=text: json.loads(t)),
        ]
        for label, fn in rows:
            print(f"  {label:36s} {fmt(per_call(fn))}")


if __name__ == "__main__":
    main()
