"""The help formatter of ``pi-session``'s parsers."""

from __future__ import annotations

import argparse
from typing import Any


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, which asks the terminal for its width only when it lays text out.
    argparse makes a formatter for every ``add_argument`` (to check the metavar), and the width is
    ``shutil.get_terminal_size()``: importing shutil imports zlib, bz2 and lzma, which the sidecar's
    start would pay for without printing a line. The width and the help position are those
    argparse's own ``__init__`` computes, computed at their first use."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **more: Any,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, 0 if width is None else width, **more)
        if width is None:
            del self._width, self._max_help_position  # found by __getattr__ when first read
            self._asked_help_position = max_help_position

    def __getattr__(self, name: str) -> Any:
        if name not in ("_width", "_max_help_position"):
            raise AttributeError(name)
        import shutil

        width = shutil.get_terminal_size().columns - 2
        self._width = width
        self._max_help_position = min(self._asked_help_position, max(width - 20, self._indent_increment * 2))
        return getattr(self, name)
