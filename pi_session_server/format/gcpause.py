"""Pausing the cyclic garbage collector while building many small objects.

Loading a session creates hundreds of thousands of entry objects that hold no reference cycles;
CPython's generational collector would otherwise traverse the growing heap again and again
(quadratic in practice: seconds for a 200,000-entry file).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
