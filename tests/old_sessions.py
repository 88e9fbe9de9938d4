"""Sessions as older pis wrote them, made from the conformance kit's sessions written by pi."""

from __future__ import annotations

from pathlib import Path

# the conformance kit's sessions written by pi, committed with its vectors
KIT_FIXTURES = Path(__file__).resolve().parent / "conformance" / "vectors" / "fixtures"


def as_version_2(data: bytes) -> bytes:
    """A version 3 session as pi's version 2 held it: the header's version 2, and every other user
    message a hook's (``hookMessage``, the role version 3 calls ``custom``). Its lines are changed
    as text: the other bytes stay as pi wrote them (a line too deep for ``json``, too)."""
    out = []
    users = 0
    for line in data.splitlines(keepends=True):
        if line.startswith(b'{"type":"session"'):
            line = line.replace(b'"version":3', b'"version":2', 1)
        elif b'"message":{"role":"user"' in line:
            users += 1
            if users % 2 == 0:
                hook = b'"message":{"role":"hookMessage","customType":"hook","display":true'
                line = line.replace(b'"message":{"role":"user"', hook, 1)
        out.append(line)
    return b"".join(out)
