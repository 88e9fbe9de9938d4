"""How the C library's allocator holds the process's big blocks (glibc; elsewhere nothing is done)."""

from __future__ import annotations

import ctypes

# glibc's M_MMAP_THRESHOLD (mallopt), and the value it starts with
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 128 * 1024


def keep_big_blocks_out_of_the_heap() -> bool:
    """Have glibc give every block of 128 KiB or more its own mapping, returned to the system when
    freed. By default glibc raises that threshold each time such a block is freed, up to 32 MiB,
    after which big blocks come from the heap of the thread that asks: a worker thread's arena
    then keeps the memory of a 10 MB line it read, or of a 20 MB reply it wrote, long after; and
    a command's heap keeps the lists it made of a big session's entries once it freed them,
    unless they happened to lie at its top (Python's small objects come from mappings of their
    own: they never take that memory back). False where this is not glibc (nothing to do).

    ``mallopt`` is looked up among the symbols the process has loaded already (the C library's
    among them), not found with ``ctypes.util.find_library``, which runs ``ldconfig`` in a
    subprocess while the server starts."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no such symbol (not glibc), or no dlopen(NULL)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD))
