"""The pi releases the library can behave like, by version (each has its Profile in profiles.py),
and the one it follows unless told otherwise.

Apart from profiles.py so that a command line can offer the releases without importing how they
behave."""

from __future__ import annotations

from typing import Final

#: Every supported release, oldest first.
RELEASES: Final = ("0.86.1", "1.6.0")

#: The release the library follows unless told otherwise: the newest one.
DEFAULT_PI: Final = "1.6.0"
