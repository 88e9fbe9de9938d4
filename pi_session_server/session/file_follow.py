"""Following the session file as other programs write it: lines they append taken in, a file they
rewrote, replaced or deleted told (and reloaded, never written), one without a header waited for."""

from __future__ import annotations

import builtins
import os
import stat
import time
from typing import Any

import msgspec

from ..errors import PiSessionError, StaleFileError
from ..format.gcpause import gc_paused
from ..format.jsvalue import ABSENT, index_key, truthy
from ..format.scan import FileLineSource, LineProblem, ScanResult, scan_entries
from . import loader, storage
from .file_load import FileLoading
from .file_tracking import Headerless, signature_of, times_of
from .loader import open_for_reading


class FileChange(msgspec.Struct):
    """What :meth:`SessionManager.refresh_from_disk` found."""

    # "unchanged" | "appended" | "reloaded" | "deleted" | "rewriting": the file is empty or has no
    # header yet, another program is writing it again in place (told once, when a look first finds
    # it so) | "unreadable": it has held still without a header for storage.UNREADABLE_AFTER seconds (a
    # shell's `>` left other text, an editor saved it with a byte order mark): it is not a session
    # now. The session stays as it was in memory through both; "reloaded" follows a header's return.
    # (The server tells a request's move of the leaf in this shape too, as "leafMoved": never a
    # refresh's.)
    kind: str
    new_entry_ids: list[Any] = msgspec.field(default_factory=list)
    leaf_id: Any = ABSENT

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "newEntryIds": self.new_entry_ids}
        if self.leaf_id is not ABSENT:
            out["leafId"] = self.leaf_id
        return out


class ForeignWrite(msgspec.Struct):
    """Another process changed the file between two of our writes."""

    path: str
    expected_size: int
    found_size: int

    @property
    def message(self) -> str:
        if self.found_size < self.expected_size:
            return f"{self.path} was truncated or rewritten by another process"
        return f"another process appended {self.found_size - self.expected_size} bytes to {self.path}"


class FileFollowing(FileLoading):
    """What other programs did to the session file since the manager last looked. A base of
    :class:`.manager.SessionManager`, whose ``__init__`` sets this state (declared here for the
    type checker)."""

    _appender: storage.Appender | None
    _events: builtins.list[ForeignWrite]
    _appended_by_others: builtins.list[Any]

    @property
    def reload_due(self) -> bool:
        """An append of ours found the file written otherwise than by whole lines appended before
        it (rewritten, replaced, written while we wrote): the next :meth:`refresh_from_disk`
        reloads it."""
        return self._out_of_sync

    def only_appended_to(self) -> bool:
        """The file changed since it was read only by bytes appended after ours (the same file, our
        last bytes still where we left them), and the load left no write undone: refresh_from_disk()
        takes the lines in without a reload, and make_writable() then keeps all we hold."""
        return self._file_as_loaded(grown=True)

    def open_last_line(self) -> LineProblem | None:
        """The problem of the file's last line as read when that line had no newline yet and pi
        skips it (what its writer had written of it so far, or all a writer that stopped wrote of
        it), else None."""
        if not self._open_tail or not self.problems:
            return None
        last = self.problems[-1]
        return last if last.skipped and last.offset + last.length == self._known_end else None

    def _file_as_loaded(self, grown: bool = False) -> bool:
        """The session file is the one we read, as we left it (nothing written to it since), and
        its load left none of an open for writing's writes undone; with ``grown``, longer than we
        left it, our last bytes where they were."""
        if self._load_writes_skipped or self._open_tail:
            return False
        path = self._session_file
        if not self._persist or not truthy(path) or self._identity is None:
            return False
        if self._out_of_sync or self._headerless is not None:
            return False
        try:
            st = os.stat(self._disk(path))
        except OSError:
            return False
        if storage.FileIdentity.of(st) != self._identity:
            return False
        if grown:
            return st.st_size > self._known_end and self._read_marker(path, self._known_end) == self._marker
        return st.st_size == self._known_end and times_of(st) == self._stamp

    def refresh_from_disk(self) -> FileChange:
        """Take in what other processes did to our file since we last looked.

        Appended complete lines become entries (the leaf moves to the last one, as reopening
        would), also those an append of ours found and took in before its line ("appended" then
        names them, with the leaf ours); a file that was truncated, replaced or rewritten is reloaded (read as it is, never
        written: see :meth:`_reload`); a deleted file is reported and the session stays as it is in
        memory, and so does one that is being written again ("rewriting"). A rewrite in place that
        keeps the file's size and last bytes (an editor's quick fix that swaps one id for another of
        the same length) is told by the file's modification or change time, which our own writes
        do not leave behind; a rewrite within the file system's timestamp granularity of our last
        look at the file goes unnoticed.
        """
        taken, self._appended_by_others = self._appended_by_others, []
        change = self._look_at_file()
        if not taken:
            return change
        if change.kind in ("unchanged", "appended"):
            return FileChange("appended", [*taken, *change.new_entry_ids], self._leaf_id)
        if change.kind == "reloaded":
            kept = [entry_id for entry_id in taken if self._has_entry(entry_id)]
            return FileChange("reloaded", [*kept, *change.new_entry_ids], self._leaf_id)
        self._appended_by_others = taken  # the session is as it was: told with the next change
        return change

    def take_appended_by_others(self) -> FileChange | None:
        """The whole lines another program had just appended that an append of ours took in before
        its own, as the change to tell now (``appended``, their ids, the leaf ours) instead of with
        the next :meth:`refresh_from_disk`, which then leaves them out; None when there are none.
        The file is not looked at: what came after ours is the next refresh's."""
        taken, self._appended_by_others = self._appended_by_others, []
        return FileChange("appended", taken, self._leaf_id) if taken else None

    def _look_at_file(self) -> FileChange:
        """:meth:`refresh_from_disk` but for the entries an append of ours took in."""
        path = self._session_file
        if not self._persist or not truthy(path) or not self._flushed or self._identity is None:
            return FileChange("unchanged", [], self._leaf_id)
        try:
            st = os.stat(self._disk(path))
        except FileNotFoundError:
            return self._gone()
        if not stat.S_ISREG(st.st_mode):
            # replaced by a FIFO, a device or a directory: no session file there any more (and a
            # FIFO's open would wait for a writer)
            return self._gone()
        headerless = self._headerless
        if headerless is not None and headerless.signature == signature_of(st):
            return self._still_headerless(headerless)
        if (
            self._out_of_sync
            or (self._open_tail and st.st_size > self._known_end)
            # a file found empty (read-only, no header written): what it holds now is read whole
            or (self._known_end == 0 and st.st_size > 0)
            or storage.FileIdentity.of(st) != self._identity
            or st.st_size < self._known_end
            or (self._marker and self._read_marker(path, self._known_end) != self._marker)
        ):
            return self._reload(path)
        if st.st_size == self._known_end:
            if self._stamp is not None and times_of(st) != self._stamp:
                return self._reload(path)  # rewritten in place, keeping the size and the last bytes
            return FileChange("unchanged", [], self._leaf_id)
        return self._ingest_appended(path, st)

    def _scan_appended(self, path: str, start: int, end: int) -> ScanResult:
        """The whole lines of our file in [``start``, ``end``), the first of them our next line,
        keeping their bytes as a load of a file of ``end`` bytes would (D15: a rewrite afterwards
        leaves them as read). StaleFileError when the path names another file by now (renamed over
        ours since we looked at it): its bytes there are not lines appended to ours."""
        fd = open_for_reading(path, self._env)
        try:
            if self._identity is not None and storage.FileIdentity.of(os.fstat(fd)) != self._identity:
                raise StaleFileError(f"{path} was replaced by another process")
            source = self._source or FileLineSource(path, os.dup(fd))
            if self._source is None:
                self._source = source
            with gc_paused(), source.scanning():
                return scan_entries(
                    fd,
                    source,
                    start=start,
                    first_line=self._line_count,
                    have_header=True,
                    include_tail=False,
                    end=end,
                    keep_bytes=loader.keeps_line_bytes(end),
                )
        finally:
            os.close(fd)

    def _ingest_appended(self, path: str, st: os.stat_result) -> FileChange:
        if self._source is not None and not self._source.reads_appended:
            return self._reload(path)
        try:
            result = self._scan_appended(path, self._known_end, st.st_size)
        except StaleFileError:
            return self._reload(path)  # replaced since it was looked at: read whole
        if self._source is not None:
            self._source.conform_scanned(result.entries)  # (as its values are read)
        self._add_entries(result.entries)
        new_ids = [entry.id for entry in result.entries]
        self.problems.extend(result.problems)
        self._line_count += result.lines
        self._known_end = result.end
        self._marker = self._read_marker(path, self._known_end)
        self._stamp = times_of(st)  # as it was when read (a line still being written reads later)
        if not new_ids and not result.problems:
            return FileChange("unchanged", [], self._leaf_id)
        return FileChange("appended", new_ids, self._leaf_id)

    def _reload(self, path: str) -> FileChange:
        """Load the file again as another process left it. Never writes it (no newline repair, no
        migration rewrite, no header for an empty file: those are for an open).

        A file that is empty or shrank in place is being written again by another program
        (``cat backup > FILE``, an editor saving in place: truncate, then write): it is given a
        moment, then read again. While it is still empty or has no header, the session stays as it
        was and "rewriting" is reported once (a file that goes on changing without a header is
        still being written: nothing more to tell); the next refresh looks again, and one that finds
        it unchanged :data:`.storage.UNREADABLE_AFTER` seconds on reports it "unreadable"."""
        found = storage.settle_after_shrink(self._disk(path), self._identity, self._known_end)
        if found is None:
            return self._gone()
        before = {index_key(e.id) for e in self._file_entries}
        read_only = self.read_only
        try:
            with self._all_or_nothing():
                self.read_only = True  # a reload takes the file as it is
                try:
                    loaded = self._load_if_session(path)
                finally:
                    self.read_only = read_only
        except PiSessionError:
            self._headerless = None  # (a file that cannot be read at all is not waited for)
            return FileChange("reloaded", [], self._leaf_id)
        if not loaded:
            # what the file holds next is another file's: read it whole then, never as lines
            # appended to the one held (a rewrite that ends longer keeps the old bytes' place)
            self._out_of_sync = True
            return self._found_headerless(found)
        if self._appender is not None:
            self._appender.forget_end()  # rewritten by another program: its end is not ours
        new_ids = [e.id for e in self.get_entries() if index_key(e.id) not in before]
        return FileChange("reloaded", new_ids, self._leaf_id)

    def _gone(self) -> FileChange:
        """No file at our path (or no regular one): a headerless one it replaced is not waited for."""
        self._headerless = None
        return FileChange("deleted", [], self._leaf_id)

    def _found_headerless(self, st: os.stat_result) -> FileChange:
        """A look found the file without a session header (``st``: its status before the look, so
        that a header written since changes it). "rewriting" when the file was whole before or had
        been reported unreadable; a rewrite already reported is waited for anew."""
        previous = self._headerless
        self._headerless = Headerless(signature_of(st), time.monotonic())
        kind = "rewriting" if previous is None or previous.told else "unchanged"
        return FileChange(kind, [], self._leaf_id)

    def _still_headerless(self, headerless: Headerless) -> FileChange:
        """The file is as a look left it, without a header: "unreadable" once it has held still for
        :data:`.storage.UNREADABLE_AFTER` seconds (nothing is read)."""
        if headerless.told or time.monotonic() - headerless.since < storage.UNREADABLE_AFTER:
            return FileChange("unchanged", [], self._leaf_id)
        # a new record, not this one changed: a transaction that raises gives this one back
        self._headerless = msgspec.structs.replace(headerless, told=True)
        return FileChange("unreadable", [], self._leaf_id)

    @property
    def awaiting_header(self) -> bool:
        """The file was last found without a session header and not reported "unreadable" yet: a
        follower refreshes again even when the file does not change, to learn that it held still."""
        return self._headerless is not None and not self._headerless.told

    def drain_events(self) -> builtins.list[ForeignWrite]:
        """Foreign writes noticed while appending since the last call."""
        events, self._events = self._events, []
        return events
