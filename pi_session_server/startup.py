"""Starting a process of ours: the modules it imports, out of the cyclic collector's way."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def imported_for_good() -> Iterator[None]:
    """Import, in the ``with`` block, modules that stay for the life of the process. What they make
    (functions, classes, tables) lives as long as they do, yet the cyclic collector would walk it
    again and again while it piles up, and at every full collection after: a good part of the time
    an editor waits for the sidecar to start. The collector is off meanwhile, and what exists at the
    end is left out of its walks from then on (``gc.freeze``: it is not freed, as a module is not)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
