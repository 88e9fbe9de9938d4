"""Writing a session's appends: the entry kept in memory, its line written to the file (the file made
at the first conversation message), what other programs appended just before it taken in; and
``transaction()``, a block of calls that changes the session all or nothing."""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterator
from typing import Any, Self

from ..errors import PiSessionError, SessionFileReplacedError, ValueTypeError
from ..format.entry import Entry
from ..format.jsjson import surely_encodable
from ..format.jsvalue import index_key, js_string_of, truthy
from . import storage
from .entry_values import line_bytes
from .file_follow import FileFollowing, ForeignWrite
from .replaced_file import named_ids, require_receives
from .rewrites import LockedFile


def _entry_line(value: dict[str, Any]) -> bytes:
    """The line of a new entry; ValueTypeError when a value in it is not one JSON can hold."""
    try:
        return line_bytes(value)
    except (TypeError, ValueError) as err:
        raise ValueTypeError(f"{value.get('type')} entry cannot be written as JSON: {err}") from None


def _refused_or_line(value: dict[str, Any]) -> bytes | None:
    """ValueTypeError when a value in a new entry is not one JSON can hold, told without encoding
    it where a look at its values can tell (None), else by making its line (returned)."""
    return None if surely_encodable(value) else _entry_line(value)


class Appending(FileFollowing):
    """An entry appended to the session and its file. A base of :class:`.manager.SessionManager`,
    whose ``__init__`` sets this state (declared here for the type checker)."""

    fsync: bool
    rollback_failed_appends: bool

    def _append_entry(self, value: dict[str, Any]) -> Entry:
        """Append an entry made of ``value``. After a load from the index whose entries are not
        made, it joins the rows once its line is written (where it is in the file is known then),
        after lines another program appended just before it; what the session answers meanwhile
        and after a failed write is what the list of entries answers."""
        if self.read_only:
            raise ReadOnlySessionError(f"session opened read-only: {js_string_of(self._session_file)}")
        entry, line = self._new_entry(value)
        key = index_key(entry.id)
        on_rows = self._rows is not None and self._flushed
        held = None if on_rows else self._by_id.get(key)
        previous = (self._leaf_id, self._has_conversation, self._flushed)
        if not on_rows:
            self._list_entry(entry)
        self._leaf_id = entry.id
        if entry.type == "message" and self.profile.is_conversation(entry.role):
            self._has_conversation = True
        try:
            self._persist_entry(entry, line)
        except SessionFileReplacedError:
            # Not written, and never to be: the file it belonged in is gone. Taken back whatever
            # the profile, and the session read again by the next refresh (the file it names now
            # is another's, which the next append asks the same of until then).
            self._take_back_unwritten(entry, on_rows, held, previous)
            self._out_of_sync = True
            raise
        except BaseException:
            if self.rollback_failed_appends or self.profile.rolls_back_failed_appends:
                self._take_back_unwritten(entry, on_rows, held, previous)
            elif on_rows:  # kept in memory though not written (pi 0.86.1): no line to be a row of
                self._list_entry(entry)
                self._leaf_id = entry.id
            raise
        if on_rows:
            self._add_entries([entry])
        return entry

    def _take_back_unwritten(
        self, entry: Entry, on_rows: bool, held: Entry | None, previous: tuple[Any, bool | None, bool]
    ) -> None:
        """Undo what :meth:`_append_entry` did for ``entry``, whose write failed."""
        if not on_rows:
            self._file_entries.pop()
            key = index_key(entry.id)
            if held is None:
                del self._by_id[key]
            else:
                self._by_id[key] = held
        self._leaf_id, self._has_conversation, self._flushed = previous

    def _new_entry(self, value: dict[str, Any]) -> tuple[Entry, bytes | None]:
        """The entry of ``value``, and its line where its append writes it (see _writes_now).

        A value JSON cannot hold (a set, bytes, a key that is not a string) is refused here
        (ValueTypeError), before anything changes, rather than where it is written, which for a
        session not written yet is the first conversation append, and every one after it. An
        entry that waits is encoded when the file is made, as pi serializes it then: it is only
        looked at now (encoded where a look cannot tell)."""
        line = _entry_line(value) if self._flushed else _refused_or_line(value)
        entry = Entry.of(value)
        if not self._writes_now(entry):
            return entry, None
        return entry, line_bytes(value) if line is None else line

    def _writes_now(self, entry: Entry) -> bool:
        """Whether the append of ``entry`` (not listed yet) writes to the session file: it is
        written, or ``entry`` or one before it is a conversation message, which makes it appear.
        Otherwise the entry waits in memory for that message (or the session is not persisted)."""
        if not self._persist or not truthy(self._session_file):
            return False
        if self._flushed or self._any_conversation():
            return True
        return entry.type == "message" and self.profile.is_conversation(entry.role)

    def _persist_entry(self, entry: Entry, line: bytes | None) -> None:
        """Write ``entry``, whose line is ``line`` where its append writes (None: it does not,
        see _writes_now)."""
        if line is None:
            return
        if self._flushed:
            self._append_line(entry, line)
            return
        # pi serializes the entries that waited now, as they are now (a value a caller changed
        # since its append is written changed), so they are encoded again; ``entry`` just had its
        # line made, which nothing can have changed since.
        lines = [line if e is entry else line_bytes(e.value) for e in self._file_entries]
        storage.create_exclusive(self._session_file, b"".join(lines), fsync=self.fsync, env=self._env)
        for i, e in enumerate(self._file_entries):
            e.line = i
        self._flushed = True
        self._track_file(self._session_file, len(self._file_entries))

    def _append_line(self, entry: Entry, data: bytes) -> None:
        appender = self._appender
        if appender is None or appender.path != self._session_file:
            if appender is not None:
                appender.close()
            appender = self._appender = storage.Appender(self._session_file, self._env)
        identity = self._identity
        tracked = identity is not None
        outcome = appender.append(
            data,
            fsync=self.fsync,
            lines_since=self._known_end if tracked else -1,
            loaded=None if identity is None else (identity.dev, identity.ino),
            receives=lambda fd: require_receives(
                fd, self._session_file, self.get_header(), named_ids(entry.value, self._has_entry)
            ),
        )
        if tracked and self._recreated_by(appender, outcome):
            # The file was deleted (or moved away) and our append made it again, as pi's
            # appendFileSync does: it holds our line alone, written by nobody else. It is followed
            # from now on, not reported as another process's nor reloaded (it has no header).
            assert appender.identity is not None
            self._identity = storage.FileIdentity(*appender.identity)
            self._marker = b""
            self._release_source()  # lines others append next are read from the new file
        elif tracked and (outcome.size_before != self._known_end or outcome.interleaved):
            # Another process wrote since we last looked (or while we wrote): report it. Whole lines
            # it appended are entries before ours; anything else has the next refresh_from_disk()
            # reload the file (either way our view then equals a fresh open).
            self._events.append(ForeignWrite(self._session_file, self._known_end, outcome.written_at))
            if not self._took_in_lines_before(entry, appender, outcome):
                self._out_of_sync = True
        elif tracked and self._stamp is not None and outcome.times_before != self._stamp:
            # Rewritten in place keeping the size since we last looked (an editor's save): what
            # refresh_from_disk() would have reloaded. Our line is in the file now; the next refresh
            # reloads it with the rewrite (our stamp below would hide the rewrite from it).
            self._out_of_sync = True
        # Number our line at once (#1): lines written by others and a separator "\n" we added come
        # before it. outcome.start is that of the valid copy when ours had to be written again (#3).
        before = outcome.newlines_before if tracked else int(outcome.repaired_newline)
        entry.line = self._line_count + before
        entry.offset = outcome.start
        entry.length = len(data) - 1
        self._line_count = entry.line + 1
        self._known_end = outcome.end
        # what refresh_from_disk expects to find just before _known_end: the end of our own line
        # (after a foreign write it is not looked at: _out_of_sync reloads, which takes a new one)
        self._marker = (self._marker + (b"\n" if outcome.repaired_newline else b"") + data)[-64:]
        # our write changed the file's times: they are ours, not another program's rewrite
        self._stamp = outcome.times_after

    def _took_in_lines_before(
        self, entry: Entry, appender: storage.Appender, outcome: storage.WriteOutcome
    ) -> bool:
        """Another program appended whole lines to our file since we last looked, and ``entry``'s
        line just went after them (pi writing the session too): take them in as the entries they
        are, before ``entry``, as a refresh_from_disk() just before our append would have, and keep
        their ids for the next refresh to report as appended. False, nothing changed, when the file
        must be read again whole instead: it was written while we wrote, rewritten, or replaced; it
        ended inside a line; a line is not a valid entry, is a header, or has the id of an entry
        of the session (the index, a leaf's path, would change under entries we hold)."""
        start, end = self._known_end, outcome.size_before
        identity = self._identity
        if (
            outcome.interleaved
            or end <= start
            or self._out_of_sync
            or self._open_tail
            or self._headerless is not None
            or identity is None
            or appender.identity != (identity.dev, identity.ino)
        ):
            return False
        path = self._session_file
        try:
            if self._marker and self._read_marker(path, start) != self._marker:
                return False  # our last bytes are not where we left them: rewritten
            found = self._scan_appended(path, start, end)
        except (OSError, PiSessionError):
            return False
        # (a line cut short ends before ``end``; our line's number counts the lines before it)
        if found.problems or found.end != end or found.lines != outcome.newlines_before:
            return False
        taken = found.entries
        keys = {index_key(entry.id)}
        for other in taken:
            key = index_key(other.id)
            if other.type == "session" or key in keys or self._has_entry(other.id):
                return False
            keys.add(key)
        if self._rows is not None:
            self._add_entries(taken)  # (ours joins them once written: _append_entry)
        else:
            entries = self._file_entries
            entries.pop()  # ours, indexed again after theirs: the file's order (the id index's too)
            del self._by_id[index_key(entry.id)]
            for other in (*taken, entry):
                entries.append(other)
                self._index_entry(other)
        self._appended_by_others = [*self._appended_by_others, *(other.id for other in taken)]
        self._marker = self._read_marker(path, end)  # what ours follows (our line is added below)
        return True

    def _recreated_by(self, appender: storage.Appender, outcome: storage.WriteOutcome) -> bool:
        """Did this append land alone in a new file at our path (not the one we know)?"""
        identity = self._identity
        return (
            identity is not None
            and outcome.size_before == 0
            and not outcome.interleaved
            and appender.identity is not None
            and appender.identity != (identity.dev, identity.ino)
        )

    def _write_new_file(self, chunks: Any) -> None:
        """Write the session file, which does not exist yet, whole (a temporary file linked to its
        name): a file another program made there meanwhile is never replaced (StaleFileError,
        nothing written)."""
        if not self._persist or not truthy(self._session_file) or self.read_only:
            return
        with LockedFile(self._session_file, self._env) as locked:
            locked.replace(chunks, None)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Self]:
        """A block of calls that changes the session in memory all or nothing::

            with manager.transaction():
                manager.branch(entry_id)
                manager.append_label_change(entry_id, "here")

        If the block raises, the manager is as it was before it: entries it appended are taken back
        out, a switch to another file or session is undone, the leaf and labels are restored (the
        reference keeps an entry whose write failed in memory; this is the opt-out). Lines that did
        reach the file stay there; the next ``refresh_from_disk()`` reads them as any other writer's.
        What the block learnt of the file goes with it: the problems of lines a refresh in it read,
        another program's write an append in it met (:meth:`drain_events`), a file found
        unreadable; the next look at the file finds and tells each again, once.

        A session whose entries are still its index's rows stays so: the block makes no entry for
        this (a sidecar's every write but an append runs in one). Only when it raises after it
        appended rows (or made every entry) is every entry made, as they were before the block.
        """
        rows = self._rows
        entries = self._file_entries if rows is None else None
        count = rows.count + 1 if rows is not None else len(self._file_entries)  # (the header first)
        saved = dict(self.__dict__)
        labels, stamps = dict(self._labels), dict(self._label_timestamps)
        # (lists the block may only extend in place: cut back to these lengths)
        problems, events = len(self.problems), len(self._events)
        try:
            yield self
        except BaseException:
            # rows the block appended (or whose entries it made) are as they were only as entries
            rows_changed = rows is not None and (rows.all_made or rows.count != count - 1)
            if entries is not None:
                self._take_back_appended(entries, count, saved["_id_map"])
            if self._source is not None and self._source is not saved["_source"]:
                self._source.close()
            drained = self._events is not saved["_events"]  # handed out (told) in the block
            self.__dict__.clear()
            self.__dict__.update(saved)
            del self.problems[problems:]
            if drained:
                self._events = []
            else:
                del self._events[events:]
            if rows is not None and rows_changed:
                self._list_rows(saved["_rows_header"], *rows.first_entries(count - 1))
            self._labels.clear()
            self._labels.update(labels)
            self._label_timestamps.clear()
            self._label_timestamps.update(stamps)
            starts = self._chain_starts
            while starts and starts[-1] >= count - 1:  # chains begun by the entries taken back
                starts.pop()
            raise

    @staticmethod
    def _take_back_appended(entries: builtins.list[Entry], count: int, by_id: dict[Any, Entry]) -> None:
        """Take the entries after the first ``count`` out of ``entries`` and the id index ``by_id``."""
        appended = entries[count:]
        del entries[count:]
        for entry in reversed(appended):
            key = index_key(entry.id)
            if by_id.get(key) is entry:
                # the id's earlier holder, if any, is indexed again (the index keeps the last)
                earlier = next((e for e in reversed(entries) if index_key(e.id) == key), None)
                if earlier is None or earlier.type == "session":
                    del by_id[key]
                else:
                    by_id[key] = earlier


class ReadOnlySessionError(PiSessionError):
    """A write method was called on a manager opened with ``read_only=True``."""
