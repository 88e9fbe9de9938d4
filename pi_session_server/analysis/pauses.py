"""The pauses of a long loop over a document's lines.

Such a loop calls the ``check`` its caller gives every :data:`CHECK_EVERY` lines (or answers made
of them). The caller decides what a pause is for: a check may raise to stop work no longer wanted,
or answer meanwhile what the user waits for (the language server answers its hovers there). The
analysis knows nothing of either.
"""

from __future__ import annotations

from collections.abc import Callable

#: lines (or answers made of them) between two calls of a ``check``
CHECK_EVERY = 256

#: called at each pause; it may raise to stop the work
Check = Callable[[], None]
