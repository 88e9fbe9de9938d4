"""The reference's exported file helpers: ``loadEntriesFromFile`` and ``parseSessionEntries``."""

from __future__ import annotations

import os
from typing import Any

from ..format.jsjson import JsonSyntaxError, parse
from ..format.jstext import is_js_blank, js_trim
from . import storage
from .environment import Environment, current
from .loader import is_valid_header, load_exact, open_for_reading
from .paths import StrPath, normalize_path


def load_entries_from_file(path: StrPath, env: Environment | None = None) -> list[Any]:
    """Every kept value of the file, header first (D3: non-objects after it dropped); [] if invalid.

    Like the reference, appends the missing final newline to a valid file. ``~`` and a relative
    ``path`` are ``env``'s home and working directory.
    """
    env = current(env)
    resolved = normalize_path(path, env)
    if not os.path.exists(env.on_disk(resolved)):
        return []
    fd = open_for_reading(resolved, env)
    try:
        exact = load_exact(fd)
    finally:
        os.close(fd)
    if not exact.values or not is_valid_header(exact.values[0]):
        return []
    if exact.needs_newline:
        storage.repair_trailing_newline(resolved, env)
    header, rest = exact.values[0], exact.values[1:]
    return [header, *(v for v in rest if isinstance(v, dict))]


def parse_session_entries(content: str) -> list[Any]:
    """Trim the whole text, split on "\\n", and parse every non-blank line (falsy values kept)."""
    values: list[Any] = []
    for line in js_trim(content).split("\n"):
        if is_js_blank(line):
            continue
        try:
            values.append(parse(line))
        except JsonSyntaxError:
            continue
    return values
