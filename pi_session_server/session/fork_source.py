"""The file ``SessionManager.fork_from`` makes: a new header, then its source's entries as pi loads
them (migrated in memory), appended a few MB at a time."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from ..errors import ForkError
from ..format.dates import file_timestamp, now_iso
from ..format.entry import Entry
from ..format.ids import assert_valid_session_id, uuid7
from ..format.jsvalue import ABSENT, coalesce, get, js_string_of
from . import storage
from .cache_dir import index_settings
from .entry_values import line_bytes
from .environment import Environment
from .loader import (
    ends_without_newline,
    is_valid_header,
    iter_kept_values,
    load_lazy,
    open_for_reading,
    peek_header,
)
from .migrate import (
    CURRENT_SESSION_VERSION,
    DrawnVersionOneLinks,
    LaterValueNeeded,
    StreamedMigration,
    kept_value_position,
    needs_migration,
)
from .paths import StrPath, make_dirs, node_join, session_dir_or_default

# How many bytes of a fork's lines are appended at a time.
_FORK_BATCH = 4 * 1024 * 1024


def write_fork(
    source: str, target: str, session_dir: StrPath | None, options: Any, fsync: bool, env: Environment
) -> tuple[str, str]:
    """The file of a fork of ``source`` (resolved) for ``target`` (resolved), made in ``session_dir``
    (or the default one of ``target``) with ``options``'s id: its header written, then the source's
    entries. Returns the session directory and the new file's path."""
    fd = _open_fork_source(source)
    try:
        peek = peek_header(fd) if fd is not None else None
        if fd is None or peek is None or not is_valid_header(peek.value):
            raise ForkError(f"Cannot fork: source session file is empty or invalid: {source}")
        if ends_without_newline(fd, peek.size):
            storage.repair_trailing_newline(source)  # pi's load of the source, before all else
        directory = session_dir_or_default(session_dir, target, env)
        if not os.path.exists(env.on_disk(directory)):
            make_dirs(env.on_disk(directory))
        new_id = get(options, "id")
        if new_id is not ABSENT:
            assert_valid_session_id(new_id)
        session_id = coalesce(new_id, uuid7())
        timestamp = now_iso()
        new_file = node_join(directory, f"{file_timestamp(timestamp)}_{js_string_of(session_id)}.jsonl")
        header = line_bytes(
            {
                "type": "session",
                "version": CURRENT_SESSION_VERSION,
                "id": session_id,
                "timestamp": timestamp,
                "cwd": target,
                "parentSession": source,
            }
        )
        storage.create_exclusive(new_file, header, fsync=fsync, env=env)
        made = os.stat(env.on_disk(new_file))
        try:
            try:
                _append_values(new_file, _fork_source_values(fd, source, peek), fsync, env)
            except LaterValueNeeded:
                # (a version 1 source pi did not write: the lines written so far are taken back)
                os.truncate(env.on_disk(new_file), len(header))
                _append_values(new_file, _fork_source_values(fd, source, peek, held=True), fsync, env)
        except BaseException:
            # the source is read as the fork is written: a fork that fails (the source cannot
            # be read on, the disk is full, Ctrl-C) leaves no part of itself to be taken for a session
            _remove_if_still(env.on_disk(new_file), made)
            raise
    finally:
        if fd is not None:
            os.close(fd)
    return directory, new_file


def _open_fork_source(source: str) -> int | None:
    """A descriptor on the fork source; None when there is no file."""
    return open_for_reading(source) if os.path.exists(source) else None


def _fork_source_values(fd: int, source: str, peek: Any, held: bool = False) -> Iterator[Any]:
    """The entries of the fork source at ``fd`` (whose valid header is ``peek``) as
    ``loadEntriesFromFile`` gives them, migrated in memory (D4): an old source's values are read
    and migrated one at a time (see migrate.StreamedMigration), or, with ``held`` (a version 1
    source whose migration raised LaterValueNeeded), by links drawn first
    (:func:`_migrated_by_drawn_links`)."""
    if not needs_migration([peek.value]):
        loaded, _source = load_lazy(fd, source, peek, index=index_settings())
        yield from loaded.entries
    elif held:
        yield from _migrated_by_drawn_links(fd, peek.value)
    else:
        migration = StreamedMigration(peek.value)
        for value in iter_kept_values(fd):
            migration.migrate(value)
            if isinstance(value, dict):
                yield value


def _migrated_by_drawn_links(fd: int, header: dict[str, Any]) -> Iterator[Any]:
    """The objects among the kept values of the version 1 file at ``fd`` (whose header is
    ``header``) as migrating them together gives them, one value held at a time: a first read
    notes each value's kind and the id it carries, from which every position's link is drawn
    (:class:`DrawnVersionOneLinks`); a second read migrates each value by its position. (Values
    appended between the two reads are not the source's as it was read: left out.)"""
    positions: list[tuple[str, Any]] = []
    for value in iter_kept_values(fd):
        is_object = isinstance(value, dict)
        kind = kept_value_position(is_object, value.get("type", ABSENT) if is_object else ABSENT)
        positions.append((kind, value.get("id", ABSENT) if is_object else ABSENT))
    links = DrawnVersionOneLinks.of_positions(header.get("id", ABSENT), positions)
    for position, value in enumerate(islice(iter_kept_values(fd), len(positions))):
        links.migrate(value, position)
        if isinstance(value, dict):
            yield value


def _remove_if_still(path: str, made: os.stat_result) -> None:
    """Remove the file at ``path`` if it is still the one ``made`` describes (not one another
    program put there since); never an error."""
    with contextlib.suppress(OSError):
        if os.path.samestat(os.stat(path), made):
            os.unlink(path)


def _append_values(path: str, values: Iterable[Any], fsync: bool, env: Environment) -> None:
    """Append to ``path`` the lines of ``values`` (file entries or their values) but headers', a few
    MB at a time."""
    batch: list[bytes] = []
    size = 0
    for value in values:
        if get(value, "type") == "session":
            continue
        line = line_bytes(value.value if isinstance(value, Entry) else value)
        batch.append(line)
        size += len(line)
        if size >= _FORK_BATCH:
            storage.append_lines(path, b"".join(batch), fsync=fsync, env=env)
            batch, size = [], 0
    if batch:
        storage.append_lines(path, b"".join(batch), fsync=fsync, env=env)
