"""Session ids (UUIDv7) and entry ids (8 hex digits), docs/FORMAT.md §5.2 and §5.3."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Final

from ..errors import InvalidSessionIdError
from .jsvalue import js_string_of

__all__ = [
    "SESSION_ID_ERROR_MESSAGE",
    "assert_valid_session_id",
    "is_valid_session_id",
    "new_entry_id",
    "uuid7",
]

SESSION_ID_ERROR_MESSAGE: Final[str] = (
    "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
    "and start and end with an alphanumeric character"
)

_SESSION_ID_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)

_MAX_SEQUENCE = (1 << 41) - 1
_lock = threading.Lock()
_last_ms = -1
_sequence: int | None = None


def uuid7() -> str:
    """A lowercase RFC 9562 UUIDv7, strictly increasing within the process.

    Same layout as pi-ai's generator: 48-bit Unix ms (never going backwards), then a 41-bit
    counter (random start, +1 per id) spread over the version/variant gaps, then random bits.
    """
    global _last_ms, _sequence
    rand = os.urandom(10)
    with _lock:
        now = max(time.time_ns() // 1_000_000, _last_ms)
        if _sequence is None:
            _sequence = int.from_bytes(rand[:5], "big")
        elif _sequence == _MAX_SEQUENCE:  # unreachable in practice (2**40 ids); keep order anyway
            now += 1
            _sequence = 0
        else:
            _sequence += 1
        _last_ms = now
        seq = _sequence
    value = (
        (now << 80)
        | (0x7 << 76)
        | ((seq >> 29) << 64)  # 12 bits after the version nibble
        | (0b10 << 62)
        | (((seq >> 7) & 0x3FFFFF) << 40)  # 22 bits after the variant
        | ((seq & 0x7F) << 33)
        | (int.from_bytes(rand[5:], "big") & ((1 << 33) - 1))
    )
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_entry_id(is_taken: Callable[[str], bool]) -> str:
    """8 lowercase hex digits of a random UUIDv4, redrawn while ``is_taken``; after 100 taken
    draws in a row, a full UUIDv4 string."""
    for _ in range(100):
        # the first 8 hex digits of a v4 UUID are 32 random bits: draw them directly (uuid4() is slow)
        candidate = os.urandom(4).hex()
        if not is_taken(candidate):
            return candidate
    return str(uuid.uuid4())


def is_valid_session_id(value: Any) -> bool:
    """The reference's id rule, applied to JS ``String(value)`` (so ``123`` passes)."""
    return _SESSION_ID_RE.fullmatch(js_string_of(value)) is not None


def assert_valid_session_id(value: Any) -> None:
    """Raise :class:`InvalidSessionIdError` with the reference's message unless the id is valid."""
    if not is_valid_session_id(value):
        raise InvalidSessionIdError(SESSION_ID_ERROR_MESSAGE)
