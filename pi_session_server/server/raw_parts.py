"""A result encoded already, as parts: its JSON is their concatenation.

A big reply assembled from pieces (the levels of a pi/getTree ``levels`` reply, each encoded on its
own and kept for the next request) goes out as those pieces: the connection writes them one after
another into the frame (``FrameWriter.write_frame(*parts)``), so the reply is never joined into a
copy of its own, nor copied again to add a member at its end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import msgspec

Part: TypeAlias = bytes | bytearray | memoryview | msgspec.Raw


class RawParts:
    """JSON encoded already, as the parts it is the concatenation of (``msgspec.Raw`` in pieces)."""

    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = parts

    def __bytes__(self) -> bytes:
        """The JSON in one piece (for callers that want it whole; the connection does not)."""
        return b"".join(self.parts)

    def __repr__(self) -> str:
        return f"RawParts({len(self.parts)} parts)"

    def with_member_last(self, member: bytes) -> RawParts:
        """This JSON object with ``member`` (``,"name":value``) after its others: the parts but the
        last one's closing brace, then the member and a brace (nothing copied but that part's
        view)."""
        *before, last = self.parts
        return RawParts([*before, memoryview(last)[:-1], member, b"}"])
