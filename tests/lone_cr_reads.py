"""The bytes each search of a file for its lone "\\r" reads (analysis/lone_cr.search_lone_crs),
counted where the search reads them (imported as ``lone_cr_reads``: ``tests/`` is on the path of
every test)."""

from __future__ import annotations

from typing import Any, BinaryIO, cast

import pytest

from pi_session_server.analysis import lone_cr


class _CountingReader:
    def __init__(self, file: BinaryIO, reads: list[int]) -> None:
        self._file = file
        self._reads = reads

    def read(self, size: int) -> bytes:
        data = self._file.read(size)
        self._reads[-1] += len(data)
        return data


def counted_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each search made from now on reads, a search a number."""
    reads: list[int] = []
    search = lone_cr.search_lone_crs

    def counted(file: BinaryIO, *args: Any, **kwargs: Any) -> lone_cr.LoneCrSearch:
        reads.append(0)
        return search(cast(BinaryIO, _CountingReader(file, reads)), *args, **kwargs)

    monkeypatch.setattr(lone_cr, "search_lone_crs", counted)
    return reads
