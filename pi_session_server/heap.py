"""The C library's heap (glibc; elsewhere nothing is done)."""

from __future__ import annotations

import ctypes


def give_back_free_heap() -> bool:
    """Give the system back the heap's free memory now (glibc's ``malloc_trim``). The big lists,
    tables and buffers a command made of a big session and freed stay in the heap unless they lay
    at its top, which the hash seed decides, and Python's small objects, which come from mappings
    of their own, never take that memory back: a command gives it back before the long stretch of
    small objects that follows (a tree's rows). False where this is not glibc.

    ``malloc_trim`` is looked up among the symbols the process has loaded already (the C
    library's among them), as server/workers.py looks ``mallopt`` up."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # no such symbol (not glibc), or no dlopen(NULL)
        return False
    return bool(trim(0))
