"""A crafted index (session/scan_index.py) whose CRC is valid: every answer of the session opened
with it is the answer of the session read from its file, or the index is ignored and rebuilt, or
a body read finds its line is not the entry the index gave (StaleFileError, documented: as for a
file changed underneath). No other exception escapes.

The index of a real small session is taken apart, one field changed at a time (a header field or
an item of its tables, a column's count, offset, end or code: off by one, huge, negative, swapped,
out of order, past the end of the file), put back together with a correct CRC, and the session
opened with it: its entries, tree, context, leaf, labels, each entry by id and an append are
compared with the same session opened without an index.

What the index alone knows and no lookup reads from the file is taken at its word once it is
consistent (the CRC guards against damage, the checks on load against an index of another file
or one that does not add up; a forged one is another matter): how many physical lines the rows
span (blank lines are counted, not listed), so the number of the next line appended, and the
lines pi skips, with their texts (TAKEN_AT_ITS_WORD)."""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_session_server.errors import StaleFileError
from pi_session_server.session import SessionManager, cache_dir, loader, scan_index
from pi_session_server.session.scan_index import _PREFIX, _SECTIONS, IndexHeader

pytestmark = pytest.mark.usefixtures("files_settle_at_once", "small_files_indexed")


@pytest.fixture
def small_files_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_dir.INDEX_MIN_SIZE_ENV, "0")


HUGE = 1 << 62
# what no lookup reads from the file (see the module's notes): a lie that adds up is believed
TAKEN_AT_ITS_WORD = ("lines=", "line_runs[", "problems")


# ------------------------------------------------------------------ an index taken apart


class Index(msgspec.Struct):
    code: int
    header: IndexHeader
    sections: dict[str, bytes]

    @staticmethod
    def read(path: Path) -> Index:
        data = path.read_bytes()
        _magic, _version, code, header_length, payload_length, _crc = _PREFIX.unpack_from(data)
        header = scan_index._decode_header(data[_PREFIX.size + payload_length :])
        assert len(data) == _PREFIX.size + payload_length + header_length
        sections, at = {}, _PREFIX.size
        for name, length in zip(_SECTIONS, header.sections, strict=True):
            sections[name] = data[at : at + length]
            at += length
        return Index(code, header, sections)

    def write(self, path: Path, *, keep_lengths: bool = False) -> None:
        """The index with a correct CRC (``keep_lengths``: the header's section lengths as they
        are, which may then not be the sections')."""
        payload = b"".join(self.sections[name] for name in _SECTIONS)
        header = self.header
        if not keep_lengths:
            header = msgspec.structs.replace(header, sections=[len(self.sections[n]) for n in _SECTIONS])
        encoded = scan_index._encode_header(header)
        crc = zlib.crc32(encoded, zlib.crc32(payload))
        prefix = _PREFIX.pack(
            scan_index.MAGIC, scan_index.FORMAT_VERSION, self.code, len(encoded), len(payload), crc
        )
        path.write_bytes(prefix + payload + encoded)


Mutation = Callable[[Index], None]


def _numbers(data: bytes, code: str) -> array[int]:
    numbers = array(code)
    numbers.frombytes(data)
    return numbers


def _changed_number(value: int) -> Iterator[int]:
    yield from (value + 1, value - 1, HUGE, -HUGE, -1, 0)


def _header_field(name: str, value: Any) -> Mutation:
    def mutate(index: Index) -> None:
        index.header = msgspec.structs.replace(index.header, **{name: value})

    return mutate


def _table_item(name: str, row: int, member: int | None, value: Any) -> Mutation:
    def mutate(index: Index) -> None:
        table = list(getattr(index.header, name))
        if member is None:
            table[row] = value
        else:
            item = list(table[row])
            item[member] = value
            table[row] = tuple(item)
        index.header = msgspec.structs.replace(index.header, **{name: table})

    return mutate


def _table(name: str, change: Callable[[list[Any]], list[Any]]) -> Mutation:
    def mutate(index: Index) -> None:
        index.header = msgspec.structs.replace(
            index.header, **{name: change(list(getattr(index.header, name)))}
        )

    return mutate


def _column_number(section: str, code: str, row: int, value: int) -> Mutation:
    def mutate(index: Index) -> None:
        numbers = _numbers(index.sections[section], code)
        try:
            numbers[row] = value
        except OverflowError:
            numbers[row] = value & ((1 << (8 * numbers.itemsize - 1)) - 1)
        index.sections[section] = numbers.tobytes()

    return mutate


def _column(section: str, change: Callable[[bytes], bytes]) -> Mutation:
    def mutate(index: Index) -> None:
        index.sections[section] = change(index.sections[section])

    return mutate


def _swapped_texts(text: str, ends: str, i: int, j: int) -> Mutation:
    """Two values of a text column swapped, their ends made again: out of order, each whole."""

    def mutate(index: Index) -> None:
        values = index.sections[text].split(b"\x00")
        values[i], values[j] = values[j], values[i]
        index.sections[text] = b"\x00".join(values)
        at, new_ends = -1, array("I")
        for value in values:
            at += len(value) + 1
            new_ends.append(at)
        index.sections[ends] = new_ends.tobytes()

    return mutate


def _swap(items: list[Any], i: int, j: int) -> list[Any]:
    items[i], items[j] = items[j], items[i]
    return items


def mutations(index: Index, file_size: int) -> Iterator[tuple[str, Mutation]]:
    """Each field of ``index`` changed in turn (``file_size``: the session's, for offsets past it)."""
    yield from _header_mutations(index.header)
    for name in ("line_runs", "parents", "targets", "lengths", "problems", "parent_rows", "rescanned"):
        yield from _table_mutations(name, getattr(index.header, name))
    yield from _column_mutations(index, file_size)


def _header_mutations(header: IndexHeader) -> Iterator[tuple[str, Mutation]]:
    for name in ("size", "mtime_ns", "ctime_ns", "generation", "start", "first_line", "end", "lines", "count",
                 "head_crc", "tail_crc"):  # fmt: skip
        for value in _changed_number(getattr(header, name)):
            yield f"{name}={value}", _header_field(name, value)
    for name in ("racy", "complete", "unique"):
        yield f"{name} flipped", _header_field(name, not getattr(header, name))
    yield "types swapped", _table("types", lambda t: t[::-1])
    yield "roles swapped", _table("roles", lambda t: t[::-1])
    yield "sections off by one", _table("sections", lambda s: [s[0] + 1, s[1] - 1, *s[2:]])


def _table_mutations(name: str, table: list[Any]) -> Iterator[tuple[str, Mutation]]:
    for row, item in enumerate(table):
        members = range(len(item)) if isinstance(item, (tuple, list)) else [None]
        for member in members:
            value = item if member is None else item[member]
            if type(value) is int:
                for changed in _changed_number(value):
                    yield f"{name}[{row}][{member}]={changed}", _table_item(name, row, member, changed)
            elif type(value) is str:
                yield f"{name}[{row}][{member}] other id", _table_item(name, row, member, value[::-1])
    if len(table) > 1:
        yield f"{name} swapped", _table(name, lambda t: _swap(t, 0, len(t) - 1))
        yield f"{name} reversed", _table(name, lambda t: t[::-1])
    if table:
        yield f"{name} one less", _table(name, lambda t: t[:-1])
        yield f"{name} doubled", _table(name, lambda t: t + t[-1:])


def _column_mutations(index: Index, file_size: int) -> Iterator[tuple[str, Mutation]]:
    n = index.header.count
    for section, code in (("offsets", "q"), ("id_ends", "I"), ("timestamp_ends", "I"), ("chain_starts", "q")):
        numbers = _numbers(index.sections[section], code)
        for row in sorted({0, 1, len(numbers) // 2, len(numbers) - 1} & set(range(len(numbers)))):
            for changed in (*_changed_number(numbers[row]), file_size + 10):
                yield f"{section}[{row}]={changed}", _column_number(section, code, row, changed)
        yield f"{section} reversed", _column(section, lambda d, c=code: _numbers(d, c)[::-1].tobytes())
        yield f"{section} one less", _column(section, lambda d, c=code: _numbers(d, c)[:-1].tobytes())
    for section in ("type_codes", "role_codes"):
        for row in (0, n // 2, n - 1):
            for code_value in (0, 1, 2, 255):
                yield (
                    f"{section}[{row}]={code_value}",
                    _column(section, lambda d, r=row, v=code_value: d[:r] + bytes([v]) + d[r + 1 :]),
                )
        yield f"{section} reversed", _column(section, lambda d: d[::-1])
    for i, j in ((0, 1), (1, n - 1), (n // 2, n // 2 + 1)):
        yield f"ids {i} and {j} swapped", _swapped_texts("ids", "id_ends", i, j)
        yield f"timestamps {i} and {j} swapped", _swapped_texts("timestamps", "timestamp_ends", i, j)
    yield "an id changed", _column("ids", lambda d: d.replace(b"0", b"1", 1))
    yield "a timestamp changed", _column("timestamps", lambda d: d.replace(b"2026", b"2027", 1))


# ------------------------------------------------------------------ the sessions


def _build(path: Path, *, repeated_id: bool) -> None:
    """A small session of most kinds of entries: messages, a branch, labels, a name, a compaction,
    a summary of an abandoned branch, a custom entry, a model change, a line pi skips."""
    manager = SessionManager.create(str(path.parent), session_dir=str(path.parent))
    first = manager.append_message({"role": "user", "content": "one", "timestamp": 1})
    answer = manager.append_message(
        {"role": "assistant", "content": [{"type": "text", "text": "two"}], "api": "a", "provider": "p",
         "model": "m", "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
         "stopReason": "stop", "timestamp": 2}
    )  # fmt: skip
    manager.append_label_change(first, "start")
    manager.append_model_change("p", "m2")
    for i in range(6):
        manager.append_message({"role": "user", "content": f"more {i}", "timestamp": 3 + i})
    manager.append_session_info("a name")
    manager.append_compaction("summary", answer, 100)
    manager.branch(answer)
    manager.append_message({"role": "user", "content": "another way", "timestamp": 20})
    manager.branch_with_summary(first, "tried another way")
    manager.append_custom_entry("mine", {"n": 1})
    manager.append_message({"role": "user", "content": "last", "timestamp": 30})
    written = Path(manager.get_session_file())
    manager.close()
    data = written.read_bytes() + b"not json\n"
    if repeated_id:  # an id twice: the index serves every entry, not rows
        lines = data.split(b"\n")
        lines.append(lines[3])
        data = b"\n".join(lines) + b"\n"
    written.unlink()
    path.write_bytes(data)


def _generation(path: Path) -> int:
    with path.open("rb") as file:
        return cache_dir.generation(file.fileno())


def _tree(nodes: list[Any]) -> list[Any]:
    return [(node.entry.id, node.label, _tree(node.children)) for node in nodes]


def _answers(manager: SessionManager) -> dict[str, Any]:
    entries = manager.get_entries()
    return {
        "entries": [(e.id, e.type, e.parent_id, e.line, e.value) for e in entries],
        "count": manager.get_entry_count(),
        "leaf": manager.get_leaf_id(),
        "tree": _tree(manager.get_tree()),
        "context": manager.build_session_context(),
        "branch": [e.id for e in manager.get_branch()],
        "by_id": {str(e.id): (manager.get_entry(e.id).value, manager.get_label(e.id)) for e in entries},
        "children": {str(e.id): [c.id for c in manager.get_children(e.id)] for e in entries},
        "name": manager.get_session_name(),
        "problems": [p.to_json() for p in manager.problems],
    }


def _open(path: Path, index: Path | bool) -> SessionManager:
    return SessionManager.open(str(path), index=str(index) if isinstance(index, Path) else index)


@pytest.mark.parametrize("repeated_id", [False, True], ids=["rows", "every_entry"])
def test_a_crafted_index_answers_as_the_file_or_is_rebuilt(tmp_path: Path, repeated_id: bool) -> None:
    index_dir = tmp_path / "index"
    model = tmp_path / "model.jsonl"
    _build(model, repeated_id=repeated_id)
    expected = _answers(_open(model, False))
    probe = tmp_path / "probe.jsonl"
    probe.write_bytes(model.read_bytes())
    _open(probe, index_dir).close()
    (index_file,) = index_dir.glob(f"*{cache_dir.INDEX_SUFFIX}")
    good = Index.read(index_file)
    index_file.unlink()
    failures: list[str] = []
    stale_reads: list[str] = []  # (each a lie about what a line holds, found where it is read)
    for number, (name, mutate) in enumerate(mutations(good, model.stat().st_size)):
        # a file of its own for each (an append changes it), its index the good one but for one field
        path = tmp_path / f"s{number}.jsonl"
        path.write_bytes(model.read_bytes())
        st = os.stat(path)
        crafted = msgspec.structs.replace(
            good, header=msgspec.structs.replace(good.header, dev=st.st_dev, ino=st.st_ino,
            size=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns,
            generation=_generation(path)), sections=dict(good.sections),
        )  # fmt: skip
        mutate(crafted)
        index_path = Path(cache_dir.index_path(str(index_dir), st))
        crafted.write(index_path, keep_lengths=name.startswith("sections"))
        taken_at_its_word = name.startswith(TAKEN_AT_ITS_WORD)
        try:
            manager = _open(path, index_dir)
            used = scan_index.last_outcome.read
            found = _answers(manager)
            if found != expected and not taken_at_its_word:
                failures.append(f"{name}: other answers ({used}): {_difference(expected, found)}")
                manager.close()
                continue
            mine = manager.append_message({"role": "user", "content": "after", "timestamp": 99})
            fresh = _open(path, False)
            if fresh.get_entry(mine).parent_id != expected["leaf"]:
                failures.append(f"{name}: the append went elsewhere ({used})")
            elif _answers(fresh) != _answers(manager) and not taken_at_its_word:
                failures.append(f"{name}: the session after the append is not the file's ({used})")
            manager.close()
        except StaleFileError:
            stale_reads.append(name)
            # the file is as it was indexed: the index lied, and goes, so the next open rebuilds it
            if index_path.exists():
                failures.append(f"{name}: the index that lied is kept")
            elif _answers(_open(path, index_dir)) != expected or scan_index.last_outcome.read != "missing":
                failures.append(f"{name}: the open after the lie did not rebuild the index")
        except Exception as error:  # noqa: BLE001 - every escape is a finding, listed with the others
            failures.append(f"{name}: {type(error).__name__}: {str(error)[:200]}")
        finally:
            path.unlink()
            for kept in index_dir.glob("*"):
                kept.unlink()
    assert not failures, f"{len(failures)} crafted indexes lied or broke:\n" + "\n".join(failures)
    assert stale_reads, "no lie found where a body was read: the fuzz proves nothing of dropping it"
    assert all(
        not name.startswith(("offsets reversed", "chain_starts", "line_runs")) for name in stale_reads
    ), "lies a check on load finds were found only where a body was read"


def _difference(expected: dict[str, Any], found: dict[str, Any]) -> str:
    return ", ".join(key for key in expected if expected[key] != found.get(key))


def test_the_fuzz_crafts_indexes_the_library_reads(tmp_path: Path) -> None:
    """The index put back together unchanged is used (else the fuzz would prove nothing)."""
    model = tmp_path / "s.jsonl"
    _build(model, repeated_id=False)
    index_dir = tmp_path / "index"
    _open(model, index_dir).close()
    (index_file,) = index_dir.glob(f"*{cache_dir.INDEX_SUFFIX}")
    Index.read(index_file).write(index_file)
    expected = _answers(_open(model, False))
    assert _answers(_open(model, index_dir)) == expected
    assert scan_index.last_outcome.read == "used"
    assert struct.unpack_from("<8s", index_file.read_bytes())[0] == scan_index.MAGIC


def test_a_line_changed_after_the_open_is_no_lie_of_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file rewritten in place by another process once it was opened: a body read finds another
    line than the one loaded, but the index described the file as it was (the next open checks it
    against the file as it is then): it stays."""
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)  # every body read from the file when asked
    path = tmp_path / "s.jsonl"
    _build(path, repeated_id=False)
    index_dir = tmp_path / "index"
    _open(path, index_dir).close()
    (index_file,) = index_dir.glob(f"*{cache_dir.INDEX_SUFFIX}")
    manager = _open(path, index_dir)
    assert scan_index.last_outcome.read == "used"
    entry = manager.get_entries()[1]
    data = path.read_bytes()
    other = entry.id[:-1] + ("0" if entry.id[-1] != "0" else "1")
    before = path.stat()
    with path.open("r+b") as file:  # the same inode, the same size, another id
        file.write(data.replace(f'"id":"{entry.id}"'.encode(), f'"id":"{other}"'.encode(), 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # (a clock's tick may keep it)
    with pytest.raises(StaleFileError):
        manager.get_entry(entry.id).value  # noqa: B018 - the read is the test
    manager.close()
    assert index_file.exists()


def _with_index_that_lies(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A session, its index directory and its index, forged to pass the load checks and give two
    entries each other's type (what only a body read finds)."""
    model = tmp_path / "model.jsonl"
    _build(model, repeated_id=False)
    index_dir = tmp_path / "index"
    _open(model, index_dir).close()
    (index_file,) = index_dir.glob(f"*{cache_dir.INDEX_SUFFIX}")
    forged = Index.read(index_file)
    dict(mutations(forged, model.stat().st_size))["types swapped"](forged)
    forged.write(index_file)
    return model, index_dir, index_file


def test_an_index_that_lied_goes_after_the_session_appended(tmp_path: Path) -> None:
    """The lie found once the session wrote to its file: the index still matches the file (which
    grew), so the next open would believe it again: it goes all the same."""
    model, index_dir, index_file = _with_index_that_lies(tmp_path)
    manager = _open(model, index_dir)
    assert scan_index.last_outcome.read == "used"
    manager.append_message({"role": "user", "content": "after", "timestamp": 99})
    with pytest.raises(StaleFileError):
        for entry in manager.get_entries():
            entry.value  # noqa: B018 - the read is the test
    manager.close()
    assert not index_file.exists()
    _open(model, index_dir).close()
    assert scan_index.last_outcome.read == "missing"


def test_an_index_made_from_rows_that_lied_is_not_written_after_the_lie_was_found(tmp_path: Path) -> None:
    """The file grew (pi appended) since the forged index was written, so the open makes a new index
    from the rows it read (with the lie) and the lines appended. The sidecar writes it once it is
    quiet (index_writes_deferred): a body read finding the lie before then leaves it unwritten, and
    the next open scans the file."""
    model, index_dir, index_file = _with_index_that_lies(tmp_path)
    last_id = _open(model, False).get_leaf_id()
    with model.open("ab") as file:  # pi's lines, written without our lock
        for n in range(20):
            parent, last_id = last_id, f"pi{n:06d}"
            file.write(
                f'{{"type":"message","id":"{last_id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:00.000Z",'
                f'"message":{{"role":"user","content":"from pi {n}","timestamp":{40 + n}}}}}\n'.encode()
            )
    with scan_index.index_writes_deferred() as writes:
        manager = _open(model, index_dir)
    assert scan_index.last_outcome.read == "grown" and writes
    with pytest.raises(StaleFileError):
        for entry in manager.get_entries():
            entry.value  # noqa: B018 - the read is the test
    manager.close()
    assert [write() for write in writes] == [False]
    assert not index_file.exists()
    _open(model, index_dir).close()
    assert scan_index.last_outcome.read == "missing"
