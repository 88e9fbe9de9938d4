"""``SessionManager``: pi's session API over a JSONL file (or in memory), like the reference.

State and every operation follow ``docs/API.md`` for the pi release of the manager's
:attr:`SessionManager.profile` (``pi=`` on every constructor, pi 1.6.0 by default; see
:mod:`.profiles`); the deliberate differences are listed in ``docs/DEVIATIONS.md``. Beyond the reference, a persisted manager can follow a file that
another process appends to (:meth:`SessionManager.refresh_from_disk`) and reports writes by others
(:meth:`SessionManager.drain_events`).

The API is here; what it stands on is in the modules of its bases, one job each: the index of the
file entries (:mod:`.entry_index`) and what it answers beyond pi's API (:mod:`.entry_queries`),
the file as the manager last left it (:mod:`.file_tracking`), loading and migrating it
(:mod:`.file_load`), following it as other programs write it (:mod:`.file_follow`) and writing
the appends (:mod:`.appends`); a fork's file is made by :mod:`.fork_source`.
"""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ContextEditError, EntryNotFoundError, ValueTypeError, cannot_read_property
from ..format.dates import file_timestamp, ms, now_iso
from ..format.entry import Entry
from ..format.gcpause import gc_paused
from ..format.ids import assert_valid_session_id, new_entry_id, uuid7
from ..format.jstext import js_trim
from ..format.jsvalue import ABSENT, coalesce, get, index_key, js_string_of, strict_equal, truthy
from ..format.scan import FileLineSource, LineProblem
from . import storage
from .appends import Appending, ReadOnlySessionError
from .cache_dir import index_settings
from .context import (
    ContextSelection,
    current_system_message,
    select_context,
    select_context_entries,
    walk_to_root,
)
from .entry_queries import EntryQueries
from .entry_values import branch_copies, drop_absent, line_bytes
from .environment import Environment, current
from .fields import field as entry_field
from .file_follow import FileChange, ForeignWrite
from .file_tracking import Headerless
from .fork_source import write_fork
from .index_rows import IndexedRows
from .loader import is_valid_header, open_for_reading, peek_header
from .migrate import CURRENT_SESSION_VERSION
from .paths import (
    StrPath,
    default_session_dir_path,
    make_dirs,
    node_join,
    normalize_path,
    path_given,
    resolve_path,
    session_dir_or_default,
)
from .profiles import DEFAULT_PI, PiVersion, Profile, profile_for, require_api
from .projection import (
    edit_target_role,
    is_edit_replacement,
    session_context_of,
    session_projection_of,
    text_blocks,
)
from .tree import TreeNode, build_tree

# (FileChange, ForeignWrite and ReadOnlySessionError are defined where they are made, and imported
# from here as before)
__all__ = ["FileChange", "ForeignWrite", "ReadOnlySessionError", "SessionManager"]


def _now() -> str:
    return now_iso()


def _object(**members: Any) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not ABSENT}


_CR_LF_RUNS = re.compile(r"[\r\n]+")


class SessionManager(Appending, EntryQueries):
    """pi's ``SessionManager``. Construct with the classmethods (``create``, ``open``, ...)."""

    def __init__(
        self,
        cwd: StrPath,
        session_dir: StrPath,
        session_file: StrPath | None = ABSENT,
        persist: bool = False,
        new_session_options: Any = ABSENT,
        preloaded_entries: Any = ABSENT,
        *,
        fsync: bool = False,
        read_only: bool = False,
        on_progress: Callable[[int, int], Any] | None = None,
        pi: PiVersion = DEFAULT_PI,
        index: bool | StrPath = True,
        env: Environment | None = None,
    ) -> None:
        #: the pi release this manager behaves like (see profiles.py)
        self.profile: Profile = profile_for(pi)
        # the working directory and variables pi would read from its process (see environment.py)
        self._env = current(env)
        self._cwd = resolve_path(cwd, env=self._env)
        self._session_dir = normalize_path(session_dir, self._env)
        self._persist = persist
        self.fsync = fsync
        # read_only: load without the reference's load-time writes (newline repair, migration
        # rewrite, header for an empty file); every write method then raises ReadOnlySessionError.
        self.read_only = read_only
        # rollback_failed_appends: an append whose write fails is taken back out of memory even under
        # a pi release that keeps it (0.86.1; the sidecar wants "after a failed request the session
        # is as it was"). pi 1.6.0 always takes it back (profile.rolls_back_failed_appends).
        self.rollback_failed_appends = False
        self._on_progress = on_progress
        # the persistent index of the session file (scan_index): True the default cache directory,
        # False none, or the directory to keep it in
        self._index = index_settings(index)
        self._session_id: Any = ""
        self._session_file: Any = ABSENT
        # The file entries and the id index. After a load from the persistent index they are made
        # when first asked for (_every_entry): until then _rows holds the entries after the header
        # (_rows_header) as the index's rows, and the context is read from the leaf's path of rows.
        self._rows: IndexedRows | None = None
        self._rows_header: Entry | None = None
        self._entry_list: builtins.list[Entry] | None = []
        self._id_map: dict[Any, Entry] | None = {}
        self._labels: dict[Any, tuple[Any, Any]] = {}  # key(targetId) -> (targetId, label)
        self._label_timestamps: dict[Any, Any] = {}
        self._leaf_id: Any = None
        self._flushed = False
        # Is there a message of a conversation role (profile.conversation_roles: the first one makes
        # a new session's file appear) among the file entries? None: not counted yet. Only the first
        # write of a new session asks, so a loaded file is not scanned for it up front.
        self._has_conversation: bool | None = False
        # The header is the first file entry and no other entry has type "session" (then
        # get_entries is a slice, not a filter over every entry).
        self._header_only_first = False
        self._plain_index = True  # context.is_plain_index(self._by_id), kept up to date
        # where chains start in get_entries() (see chains.py); None: not known
        self._chain_starts: builtins.list[int] | None = None
        self._source: FileLineSource | None = None
        self._known_end = 0
        self._line_count = 0
        self._identity: storage.FileIdentity | None = None
        self._marker = b""
        # (mtime, ctime) of the file when it last was as we know it (_known_end bytes, as we left
        # them): a rewrite in place that keeps the size and the last bytes changes them
        self._stamp: tuple[int, int] | None = None
        self._events: builtins.list[ForeignWrite] = []
        self.problems: builtins.list[LineProblem] = []
        self._appender: storage.Appender | None = None
        self._out_of_sync = False  # a foreign write was seen while appending: reload on next refresh
        # ids of the entries another program appended right before one of our appends, taken in
        # then: the next refresh reports them as appended (a new list each time: see transaction())
        self._appended_by_others: builtins.list[Any] = []
        self._headerless: Headerless | None = None  # the file as last found without a header
        # the file ended inside a line we took in as an entry (read-only, no newline repair): what is
        # appended next finishes or changes that line, so a growing file is reloaded
        self._open_tail = False
        # a read-only load left undone a write an open for writing makes (a migration's rewrite,
        # the header of an empty file): see make_writable
        self._load_writes_skipped = False
        # (read-only: nothing is made on disk, not even the directory of a file that is not there)
        if (
            persist
            and not read_only
            and self._session_dir
            and not os.path.exists(self._disk(self._session_dir))
        ):
            make_dirs(self._disk(self._session_dir))
        if path_given(session_file):
            self._set_session_file(session_file)
        elif isinstance(preloaded_entries, (list, tuple)) and preloaded_entries:
            # (a tuple is the list it holds: the same entries, migrated in place as pi's array's)
            self._load_values(list(preloaded_entries), new_session_options)
        else:
            self.new_session(new_session_options)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def create(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        options: Any = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        env = current(env)
        directory = session_dir_or_default(session_dir, cwd, env)
        return cls(cwd, directory, ABSENT, True, options, fsync=fsync, pi=pi, env=env)

    @classmethod
    def open(
        cls,
        path: StrPath,
        session_dir: StrPath | None = ABSENT,
        cwd_override: StrPath | None = ABSENT,
        *,
        fsync: bool = False,
        read_only: bool = False,
        on_progress: Callable[[int, int], Any] | None = None,
        pi: PiVersion = DEFAULT_PI,
        index: bool | StrPath = True,
        env: Environment | None = None,
    ) -> SessionManager:
        """Open a session file. ``read_only`` loads it without writing anything (see __init__);
        ``on_progress(bytes_read, total_bytes)`` is called while a large file is scanned; ``index``:
        where the file's persistent index is kept (True: the cache directory, see
        ``cache_dir.default_index_directory``; False: no index; else the directory to use)."""
        env = current(env)
        resolved = resolve_path(path, env=env)
        header: Any = None
        if cwd_override is ABSENT and os.path.exists(resolved):
            fd = open_for_reading(resolved)
            try:
                peek = peek_header(fd)
            finally:
                os.close(fd)
            header = peek.value if is_valid_header(peek.value) else None
        header_cwd = (
            header.get("cwd") if header is not None and isinstance(header.get("cwd"), str) else ABSENT
        )
        cwd = coalesce(cwd_override, header_cwd)
        if cwd is ABSENT:
            cwd = env.working_directory()
        directory = (
            normalize_path(session_dir, env) if path_given(session_dir) else os.path.dirname(resolved) or "/"
        )
        profile = profile_for(pi)  # an unknown version fails before anything is read
        return cls(
            cwd,
            directory,
            resolved,
            True,
            fsync=fsync,
            read_only=read_only,
            on_progress=on_progress,
            pi=profile,
            index=index,
            env=env,
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        profile = profile_for(pi)
        env = current(env)
        directory = session_dir_or_default(session_dir, cwd, env)
        filter_cwd = session_dir is not ABSENT and not profile.same_directory(
            directory, default_session_dir_path(cwd, env=env), env
        )
        from . import listing  # imported when used: opening a session (the sidecar's start) lists none

        most_recent = listing.find_most_recent_session(directory, cwd if filter_cwd else ABSENT, env)
        if most_recent:
            return cls(cwd, directory, most_recent, True, fsync=fsync, pi=profile, env=env)
        return cls(cwd, directory, ABSENT, True, fsync=fsync, pi=profile, env=env)

    @classmethod
    def in_memory(
        cls,
        cwd: StrPath = ABSENT,
        options: Any = ABSENT,
        entries: Any = ABSENT,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        env = current(env)
        if cwd is ABSENT:
            cwd = env.working_directory()
        return cls(cwd, "", ABSENT, False, options, entries, pi=pi, env=env)

    @classmethod
    def fork_from(
        cls,
        source_path: StrPath,
        target_cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        options: Any = ABSENT,
        *,
        fsync: bool = False,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> SessionManager:
        profile = profile_for(pi)  # an unknown version fails before anything is written
        env = current(env)
        source = resolve_path(source_path, env=env)
        target = resolve_path(target_cwd, env=env)
        directory, new_file = write_fork(source, target, session_dir, options, fsync, env)
        return cls(target, directory, new_file, True, fsync=fsync, pi=profile, env=env)

    # ------------------------------------------------------------------ listing statics

    @classmethod
    def list(
        cls,
        cwd: StrPath,
        session_dir: StrPath | None = ABSENT,
        on_progress: Callable[..., Any] | None = None,
        signal: Any = None,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> builtins.list[Any]:
        from . import listing

        return listing.list_sessions(cwd, session_dir, on_progress, signal, pi=pi, env=env)

    @classmethod
    def list_all(
        cls,
        session_dir: StrPath | Callable[..., Any] | None = ABSENT,
        on_progress: Any = None,
        signal: Any = None,
        *,
        env: Environment | None = None,
    ) -> builtins.list[Any]:
        from . import listing

        return listing.list_all_sessions(session_dir, on_progress, signal, env=env)

    @classmethod
    def find_by_id(
        cls,
        cwd: StrPath,
        session_id: Any,
        session_dir: StrPath | None = ABSENT,
        *,
        pi: PiVersion = DEFAULT_PI,
        env: Environment | None = None,
    ) -> Any:
        from . import listing

        return listing.find_by_id(cwd, session_id, session_dir, pi=pi, env=env)

    # ------------------------------------------------------------------ switching sessions

    def new_session(self, options: Any = ABSENT) -> Any:
        requested = get(options, "id")
        if requested is not ABSENT:
            assert_valid_session_id(requested)
        self._session_id = coalesce(requested, uuid7())
        timestamp = _now()
        header = _object(
            type="session",
            version=CURRENT_SESSION_VERSION,
            id=self._session_id,
            timestamp=timestamp,
            cwd=self._cwd,
            parentSession=get(options, "parentSession"),
        )
        self._release_source()
        self._file_entries = [Entry.of(header)]
        self._by_id = {}
        self._labels = {}
        self._label_timestamps = {}
        self._leaf_id = None
        self._flushed = False
        self._load_writes_skipped = False
        self._has_conversation = False
        self._header_only_first = True
        self._plain_index = True
        self._chain_starts = []
        self.problems = []
        self._known_end = 0
        self._line_count = 0
        self._identity = None
        if self._persist:
            name = f"{file_timestamp(timestamp)}_{js_string_of(self._session_id)}.jsonl"
            self._session_file = node_join(self._session_dir, name)
        return self._session_file

    def set_session_file(self, path: StrPath) -> None:
        """Switch to another file; on failure the manager is exactly as before (D5)."""
        with self._all_or_nothing():
            self._set_session_file(path)

    # ------------------------------------------------------------------ writing

    def make_writable(self) -> bool:
        """Let a manager opened ``read_only`` write from now on, keeping all it holds (its leaf,
        its entries, what callers keep beside it: a second open of a big file costs as much memory
        again, and its entries made anew), when it holds the file as an open for writing would:
        its load left undone none of the writes such an open makes (a migration's rewrite, the
        header of an empty file, the newline that ends a last line a crash cut), and the file is
        as it was read (the same file, size and times). False, nothing changed, otherwise: the
        file is to be opened again for writing."""
        if not self.read_only:
            return True
        if not self._file_as_loaded():
            return False
        self.read_only = False
        return True

    # ------------------------------------------------------------------ appenders

    def _base(self, entry_type: str) -> dict[str, Any]:
        return {"type": entry_type, "id": self._new_id(), "parentId": self._leaf_id, "timestamp": _now()}

    def _new_id(self) -> str:
        return new_entry_id(self._has_entry)

    def append_message(self, message: Any) -> Any:
        value = self._base("message")
        value["message"] = message
        return self._finish(value)

    def append_thinking_level_change(self, thinking_level: Any) -> Any:
        value = self._base("thinking_level_change")
        value["thinkingLevel"] = thinking_level
        return self._finish(value)

    def append_model_change(self, provider: Any, model_id: Any) -> Any:
        value = self._base("model_change")
        value["provider"] = provider
        value["modelId"] = model_id
        return self._finish(value)

    def append_usage(self, kind: Any, provider: Any, model: Any, usage: Any, note: Any = ABSENT) -> Entry:
        value = self._base("usage")
        value.update(_object(kind=kind, provider=provider, model=model, usage=usage))
        if truthy(note):
            value["note"] = note
        return self._append_entry(drop_absent(value))

    def append_compaction(
        self,
        summary: Any,
        first_kept_entry_id: Any,
        tokens_before: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        timestamp = _now()
        checkpoint = current_system_message(self.build_session_context()["messages"])
        own_id = self._new_id()
        value = {
            "type": "compaction",
            "id": own_id,
            "parentId": self._leaf_id,
            "timestamp": timestamp,
        }
        value.update(
            _object(
                summary=summary,
                firstKeptEntryId=self.profile.first_kept_entry_id(first_kept_entry_id, own_id),
                tokensBefore=tokens_before,
                details=details,
                usage=usage,
                fromHook=from_hook,
            )
        )
        if checkpoint is not None:
            checkpoint["timestamp"] = ms(timestamp)
            value["systemMessage"] = checkpoint
        return self._finish(value)

    def append_custom_entry(self, custom_type: Any, data: Any = ABSENT) -> Any:
        value = _object(
            type="custom",
            customType=custom_type,
            data=data,
            id=self._new_id(),
            parentId=self._leaf_id,
            timestamp=_now(),
        )
        return self._finish(value)

    def append_session_info(self, name: Any) -> Any:
        if not isinstance(name, str):  # (pi calls name.replace)
            if name is None or name is ABSENT:
                raise cannot_read_property(name, "replace")
            raise ValueTypeError("name.replace is not a function")
        value = self._base("session_info")
        value["name"] = js_trim(_CR_LF_RUNS.sub(" ", name))
        return self._finish(value)

    def append_custom_message_entry(
        self, custom_type: Any, content: Any, display: Any, details: Any = ABSENT
    ) -> Any:
        value = _object(
            type="custom_message",
            customType=custom_type,
            content=content,
            display=display,
            details=details,
            id=self._new_id(),
            parentId=self._leaf_id,
            timestamp=_now(),
        )
        return self._finish(value)

    def append_context_edit(self, target_id: Any, replacement: Any) -> Any:
        """pi 1.6.0's ``appendContextEdit``: a ``context_edit`` entry that omits (``None``) or
        replaces the content of the messages of ``target_id``, an earlier entry on the active branch
        that contributes user, assistant, toolResult or custom-message content. Refused, before
        anything changes and in this order: a ``replacement`` that is not ``None`` or a dict with
        string/list ``content``, an unknown target, a target off the active branch, a target with no
        editable content (D6: also a message entry whose message is null). A string replacement of
        an assistant or toolResult target is stored as one text block. Returns the new entry's id."""
        require_api(self.profile, "appendContextEdit")
        if not is_edit_replacement(replacement):
            raise ContextEditError("Context edit replacement must be null or contain string/array content")
        target = self._entry_or_none(target_id)
        if target is None:
            raise EntryNotFoundError(f"Entry {js_string_of(target_id)} not found")
        if not any(strict_equal(e.id, target_id) for e in self.get_branch()):
            raise ContextEditError(f"Entry {js_string_of(target_id)} is not on the active branch")
        role = edit_target_role(target.type, target.role)
        if role is None:
            raise ContextEditError(
                f"Entry {js_string_of(target_id)} does not contribute editable model content"
            )
        if replacement is not None and isinstance(replacement["content"], str):
            blocks = text_blocks(replacement["content"], role)
            if blocks is not replacement["content"]:
                replacement = {"content": blocks}
        value = self._base("context_edit")
        value["targetId"] = target_id
        value["replacement"] = replacement
        return self._finish(value)

    def append_label_change(self, target_id: Any, label: Any = ABSENT) -> Any:
        if not self._has_entry(target_id):
            raise EntryNotFoundError(f"Entry {js_string_of(target_id)} not found")
        value = self._base("label")
        value["targetId"] = target_id
        if label is not ABSENT:
            value["label"] = label
        entry = self._append_entry(drop_absent(value))
        self._apply_label(target_id, label, entry.timestamp)
        return entry.id

    def _finish(self, value: dict[str, Any]) -> Any:
        return self._append_entry(drop_absent(value)).id

    # ------------------------------------------------------------------ tree

    def get_leaf_id(self) -> Any:
        return self._leaf_id

    def get_leaf_entry(self) -> Any:
        if not truthy(self._leaf_id):
            return ABSENT
        return self.get_entry(self._leaf_id)

    def get_entry(self, entry_id: Any) -> Any:
        entry = self._entry_or_none(entry_id)
        return ABSENT if entry is None else entry

    def get_children(self, parent_id: Any) -> builtins.list[Entry]:
        from ..format.jsvalue import strict_equal

        rows = self._rows
        if rows is not None:
            return [rows.entry(row) for row in rows.rows_under(parent_id)]
        return [e for e in self._by_id.values() if strict_equal(e.parent_id, parent_id)]

    def get_label(self, entry_id: Any) -> Any:
        found = self._labels.get(index_key(entry_id))
        return found[1] if found else ABSENT

    def get_label_timestamp(self, entry_id: Any) -> Any:
        return self._label_timestamps.get(index_key(entry_id), ABSENT)

    def get_branch(self, from_id: Any = ABSENT) -> builtins.list[Entry]:
        start = coalesce(from_id, self._leaf_id)
        if not truthy(start):
            return []
        rows = self._rows
        if rows is not None:
            row = rows.row_of_id(start)
            if row < 0:
                return []
            path = rows.path_to_root(row)
            if path is not None:
                return list(path)
        entry = self._by_id.get(index_key(start))
        if entry is None:
            return []
        return walk_to_root(entry, self._by_id, plain_index=self._plain_index, chains=self._chains())

    def get_tree(self) -> builtins.list[TreeNode]:
        labels = {key: label for key, (_target, label) in self._labels.items()}
        with gc_paused():
            return build_tree(
                self.get_entries(),
                labels,
                self._label_timestamps,
                plain_index=self._plain_index,
                by_id=self._by_id,
                chain_starts=self._chain_starts,
            )

    def branch(self, branch_from_id: Any) -> None:
        if not self._has_entry(branch_from_id):
            raise EntryNotFoundError(f"Entry {js_string_of(branch_from_id)} not found")
        self._leaf_id = branch_from_id

    def reset_leaf(self) -> None:
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: Any,
        summary: Any,
        details: Any = ABSENT,
        from_hook: Any = ABSENT,
        usage: Any = ABSENT,
    ) -> Any:
        if branch_from_id is not None and not self._has_entry(branch_from_id):
            raise EntryNotFoundError(f"Entry {js_string_of(branch_from_id)} not found")
        from_id = coalesce(self._leaf_id, "root")
        self._leaf_id = branch_from_id
        value = {
            "type": "branch_summary",
            "id": self._new_id(),
            "parentId": branch_from_id,
            "timestamp": _now(),
        }
        value.update(
            _object(fromId=from_id, summary=summary, details=details, usage=usage, fromHook=from_hook)
        )
        return self._finish(value)

    def create_branched_session(self, leaf_id: Any) -> Any:
        previous_file = self._session_file
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFoundError(f"Entry {js_string_of(leaf_id)} not found")
        if self.read_only:  # it makes and may write a new session file
            raise ReadOnlySessionError(f"session opened read-only: {js_string_of(self._session_file)}")
        kept = branch_copies(path)
        new_id = uuid7()
        timestamp = _now()
        new_file = node_join(self._session_dir, f"{file_timestamp(timestamp)}_{new_id}.jsonl")
        header = _object(
            type="session",
            version=CURRENT_SESSION_VERSION,
            id=new_id,
            timestamp=timestamp,
            cwd=self._cwd,
            parentSession=previous_file if self._persist else ABSENT,
        )
        kept_ids = {index_key(c.get("id", ABSENT)) for c in kept}
        taken = set(kept_ids)
        label_entries: builtins.list[dict[str, Any]] = []
        label_parent = kept[-1].get("id", ABSENT) if kept else None
        if not truthy(label_parent):
            label_parent = None
        for key, (target, label) in self._labels.items():
            if key not in kept_ids:
                continue
            label_id = new_entry_id(lambda candidate: candidate in taken)
            taken.add(label_id)
            label_entries.append(
                _object(
                    type="label",
                    id=label_id,
                    parentId=label_parent,
                    timestamp=self._label_timestamps.get(key, ABSENT),
                    targetId=target,
                    label=label,
                )
            )
            label_parent = label_id
        self._release_source()
        entries = [Entry.of(header), *(Entry.of(c) for c in kept), *(Entry.of(v) for v in label_entries)]
        self._session_id = new_id
        self._set_file_entries(entries)
        self.problems = []
        if not self._persist:
            return ABSENT
        self._session_file = new_file
        self._identity = None
        if self._any_conversation():
            self._write_new_file(line_bytes(e.value) for e in entries)
            for i, e in enumerate(entries):
                e.line = i
            self._flushed = True
            self._track_file(new_file, len(entries))
        else:
            self._flushed = False
        return new_file

    # ------------------------------------------------------------------ context

    def build_context_entries(self) -> builtins.list[Any]:
        return select_context_entries(self._session_path(self._leaf_id))

    def build_context_entries_at(self, leaf_id: Any) -> builtins.list[Any]:
        """The context entries as if the leaf were ``leaf_id`` (those :meth:`build_session_context_at`
        takes its messages from)."""
        return select_context_entries(self._session_path(leaf_id))

    def context_selection(self, leaf_id: Any = ABSENT) -> ContextSelection:
        """The path to the leaf (``leaf_id``: as if the leaf were that one) and its context entries,
        for a caller that looks at the entries before it builds the context or the projection of
        them (:meth:`build_session_context_of`, :meth:`build_session_projection_of`): one walk for both."""
        return select_context(self._session_path(self._leaf_id if leaf_id is ABSENT else leaf_id))

    def build_session_context(self) -> dict[str, Any]:
        return self.build_session_context_of(self.context_selection())

    def build_session_context_at(self, leaf_id: Any) -> dict[str, Any]:
        """The context as if the leaf were ``leaf_id`` (the leaf itself does not move)."""
        return self.build_session_context_of(select_context(self._session_path(leaf_id)))

    def build_session_context_of(self, selection: ContextSelection) -> dict[str, Any]:
        """The context built from a :meth:`context_selection` of this session."""
        return session_context_of(selection, pi=self.profile)

    def build_session_projection(self) -> dict[str, Any]:
        """pi 1.6.0's ``buildSessionProjection()``: ``{entries: [{sourceEntry, messages}], messages,
        thinkingLevel, model}``, what each context entry contributes (under 0.86.1's profile, as
        0.86.1 builds its context)."""
        return self.build_session_projection_of(self.context_selection())

    def build_session_projection_at(self, leaf_id: Any) -> dict[str, Any]:
        """The projection as if the leaf were ``leaf_id`` (the leaf itself does not move)."""
        return self.build_session_projection_of(select_context(self._session_path(leaf_id)))

    def build_session_projection_of(self, selection: ContextSelection) -> dict[str, Any]:
        """The projection built from a :meth:`context_selection` of this session."""
        return session_projection_of(selection, pi=self.profile)

    # ------------------------------------------------------------------ accessors

    def get_header(self) -> Any:
        if self._rows_header is not None:
            return self._rows_header.value
        for e in self._file_entries:
            if e.type == "session":
                return e.value
        return None

    def get_entries(self) -> builtins.list[Entry]:
        if self._header_only_first:
            return self._file_entries[1:]
        return [e for e in self._file_entries if e.type != "session"]

    def get_entry_count(self) -> int:
        """pi 1.6.0's ``getEntryCount()``: the size of the id index, i.e. the number of distinct ids
        among the entries (smaller than :meth:`entry_count` when ids repeat or are missing)."""
        if self._rows is not None:
            return self._rows.count  # (every id a distinct string: see _adopt_rows)
        return len(self._by_id)

    def iter_entries(self) -> Iterator[Entry]:
        return (e for e in self._file_entries if e.type != "session")

    def get_session_name(self) -> Any:
        rows = self._rows
        if rows is not None:  # found in the type column, without making every entry
            row = rows.last_of_type("session_info")
            last = rows.entry(row) if row >= 0 else None
        else:
            last = next((e for e in reversed(self._file_entries) if e.type == "session_info"), None)
        name = ABSENT if last is None else entry_field(last, "name")
        if not isinstance(name, str):
            return ABSENT
        trimmed = js_trim(name)
        return trimmed if trimmed else ABSENT

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def uses_default_session_dir(self) -> bool:
        env = self._env
        return self.profile.same_directory(
            self._session_dir, default_session_dir_path(self._cwd, env=env), env
        )

    def get_session_id(self) -> Any:
        return self._session_id

    def get_session_file(self) -> Any:
        return self._session_file

    @property
    def environment(self) -> Environment:
        """The working directory and variables the manager reads where pi reads its process's
        (``env=`` of the constructor)."""
        return self._env

    def close(self) -> None:
        """Release the descriptors held for lazy reads and appends (entries read after this fail)."""
        if self._source is not None:
            self._source.close()
            self._source = None
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
