"""A listing without the sessions' whole text keeps what it read of each big file
(session/listing_store.py): listing again reads only the files that changed, and gives what reading
them would, for every first-message cut, whatever the file became since."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.session import cache_dir, listing, listing_store
from pi_session_server.session.listing import TextOptions, list_all_sessions

REPO = Path(__file__).resolve().parents[2]
REAL = sorted((REPO / "tests" / "conformance" / "vectors" / "fixtures").glob("real*/*.jsonl"))
ASKED = [
    TextOptions(all_messages_text=False),  # the whole first message: not from what is kept
    TextOptions(all_messages_text=False, max_chars=0),
    TextOptions(all_messages_text=False, max_chars=5),
    TextOptions(all_messages_text=False, max_chars=200),
    TextOptions(all_messages_text=False, max_chars=listing_store.KEPT_FIRST_CHARS),
    TextOptions(first_message=False, all_messages_text=False),
    TextOptions(),  # the reference's shape
]


class Reads(Counter[str]):
    """The whole reads of each file (its name), and every read: (name, where it began, bytes read)."""

    def __init__(self) -> None:
        super().__init__()
        self.all: list[tuple[str, int, int]] = []

    def clear(self) -> None:
        super().clear()
        self.all.clear()

    def tails(self, name: str) -> list[tuple[int, int]]:
        return [(start, count) for read, start, count in self.all if read == name and start > 0]


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files_settle_at_once: None) -> Reads:
    """Views kept for files of any size in a directory of the test's; how each file is read."""
    monkeypatch.setenv("PI_SESSION_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
    return _spied(monkeypatch)


def _spied(monkeypatch: pytest.MonkeyPatch) -> Reads:
    reads = Reads()
    read_on = listing.read_on

    def counted(path: str, fd: int, st: Any, stat_result: Any, state: Any, *args: Any) -> Any:
        name, start, whole = os.path.basename(path), state.end, state.header is None and state.end == 0
        try:
            return read_on(path, fd, st, stat_result, state, *args)
        finally:
            if whole:
                reads[name] += 1
            reads.all.append((name, start, os.lseek(fd, 0, os.SEEK_CUR) - start))

    monkeypatch.setattr(listing, "read_on", counted)
    return reads


def _without_kept(directory: Path, text: TextOptions) -> list[dict[str, Any]]:
    return [info.to_json() | {"cut": info.text_truncated} for info in _listed(directory, text, keep=False)]


def _listed(directory: Path, text: TextOptions, *, keep: bool = True) -> list[Any]:
    if keep:
        return list_all_sessions(str(directory), text=text)
    before = os.environ.get("PI_SESSION_NO_INDEX")
    os.environ["PI_SESSION_NO_INDEX"] = "1"
    try:
        return list_all_sessions(str(directory), text=text)
    finally:
        if before is None:
            del os.environ["PI_SESSION_NO_INDEX"]
        else:
            os.environ["PI_SESSION_NO_INDEX"] = before


def _as_listed(directory: Path, text: TextOptions) -> list[dict[str, Any]]:
    return [info.to_json() | {"cut": info.text_truncated} for info in _listed(directory, text)]


def _long_session(path: Path, first: str, *, name: str | None = None) -> Path:
    lines = [S.header(), S.user("u1", None, first), S.assistant("a1", "u1", "ok")]
    if name is not None:
        lines.append(S.session_info("n1", "a1", name))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_real_sessions_listed_again_are_not_read_and_list_the_same(tmp_path: Path, kept: Reads) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for source in REAL:
        shutil.copy(source, folder / f"{source.parent.name}-{source.name}")
    (folder / "not-a-session.jsonl").write_text('{"hello": 1}\n')
    for text in ASKED:
        expected = _without_kept(folder, text)
        kept.clear()
        first = _as_listed(folder, text)
        again = _as_listed(folder, text)
        assert first == expected and again == expected, text
        if listing_store.covers(text):
            # each file read once in all, the first time any covered listing ran
            assert sum(kept.values()) <= len(REAL) + 1
    kept.clear()
    _as_listed(folder, TextOptions(all_messages_text=False, max_chars=80))
    assert sum(kept.values()) == 0


def test_a_file_that_changed_is_read_again(tmp_path: Path, kept: Reads) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = _long_session(folder / "a.jsonl", "first question")
    text = TextOptions(all_messages_text=False, max_chars=100)
    assert _as_listed(folder, text) == _without_kept(folder, text)
    kept.clear()
    size = session.stat().st_size
    appended = S.session_info("n2", "a1", "named now") + "\n"
    with session.open("a") as f:  # pi appends
        f.write(appended)
    listed = _as_listed(folder, text)
    assert kept.tails("a.jsonl") == [(size, len(appended.encode()))]  # what was appended, no more
    assert listed == _without_kept(folder, text) and listed[0]["name"] == "named now"
    assert kept["a.jsonl"] == 1  # the one made without what is kept
    # rewritten in place, the same size, its times set back: its last bytes differ
    data = session.read_bytes()
    st = session.stat()
    session.write_bytes(data.replace(b"named now", b"named new"))
    os.utime(session, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _as_listed(folder, text)[0]["name"] == "named new"
    # replaced by another file (a shell's `>`), and by what is no session
    _long_session(folder / "b.tmp", "another", name="other")
    os.replace(folder / "b.tmp", session)
    assert _as_listed(folder, text) == _without_kept(folder, text)
    session.write_text("not a session\n")
    assert _as_listed(folder, text) == []


def test_a_kept_value_that_is_not_ours_is_read_again(tmp_path: Path, kept: Reads) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    _long_session(folder / "a.jsonl", "question")
    text = TextOptions(all_messages_text=False, max_chars=100)
    expected = _as_listed(folder, text)
    for kept_file in (tmp_path / "index").iterdir():
        data = kept_file.read_bytes()
        kept_file.write_bytes(data[:-3] + b"xx]")  # the CRC no longer holds
    kept.clear()
    assert _as_listed(folder, text) == expected
    assert kept["a.jsonl"] == 1


def test_a_file_that_changed_just_now_is_not_kept(
    tmp_path: Path, kept: Reads, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_dir, "RACY_NS", 60 * 1_000_000_000)
    folder = tmp_path / "sessions"
    folder.mkdir()
    _long_session(folder / "a.jsonl", "question")
    text = TextOptions(all_messages_text=False, max_chars=100)
    _as_listed(folder, text)
    _as_listed(folder, text)
    assert kept["a.jsonl"] == 2  # pi may still be writing it
    assert not (tmp_path / "index").exists()


@settings(max_examples=40, deadline=None)
@given(
    first=st.text(min_size=0, max_size=5000),
    cut=st.one_of(st.none(), st.integers(min_value=0, max_value=listing_store.KEPT_FIRST_CHARS)),
    name=st.one_of(st.none(), st.text(max_size=20)),
)
def test_every_cut_of_what_is_kept_is_the_cut_of_the_whole(
    tmp_path_factory: pytest.TempPathFactory, first: str, cut: int | None, name: str | None
) -> None:
    folder = tmp_path_factory.mktemp("sessions")
    session = _long_session(folder / "a.jsonl", first, name=name)
    with _kept_in(tmp_path_factory.mktemp("index")):
        for text in (
            TextOptions(all_messages_text=False, max_chars=cut),
            TextOptions(first_message=False, all_messages_text=False),
        ):
            if not listing_store.covers(text):
                continue
            expected = _without_kept(folder, text)
            assert _as_listed(folder, text) == expected  # read, kept
            assert _as_listed(folder, text) == expected  # from what was kept
            with session.open("a") as f:
                f.write(S.user("u2", "a1", "later") + "\n")
            assert _as_listed(folder, text) == _without_kept(folder, text)  # read on from it


@contextlib.contextmanager
def _kept_in(directory: Path) -> Iterator[pytest.MonkeyPatch]:
    """Views kept for files of any size in ``directory``, files taken as settled at once (for a
    test that hypothesis runs many times: its fixtures are made once)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PI_SESSION_INDEX_DIR", str(directory))
        patch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
        patch.setattr(cache_dir, "RACY_NS", 0)
        yield patch


# ---- a kept listing read on from where the file ended ------------------------------------------

_TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from(["\u2028", "\u2029", "\r", "\n", " "]), max_size=12
)
_DATE = st.sampled_from(["2025-03-01T10:00:00.000Z", "2025-03-02T11:00:00Z", "not a date", 7, None])


def _dumped(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


@st.composite
def _message(draw: st.DrawFn) -> bytes:
    message: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant", "toolResult", 3]))}
    content = draw(
        st.one_of(
            _TEXT,
            st.lists(
                st.fixed_dictionaries({"type": st.sampled_from(["text", "image"]), "text": _TEXT}), max_size=3
            ),
            st.none(),
        )
    )
    if draw(st.booleans()):
        message["content"] = content
    timestamp = draw(st.one_of(st.none(), st.integers(-5, 2**41), st.sampled_from([1.5, "9"])))
    if timestamp is not None:
        message["timestamp"] = timestamp
    entry: dict[str, Any] = {"type": "message", "id": "m", "parentId": None, "timestamp": draw(_DATE)}
    entry["message"] = draw(st.sampled_from([message, message, message, None]))
    return _dumped(entry)


_LINE = st.one_of(
    _message(),
    st.builds(
        lambda name: _dumped({"type": "session_info", "id": "i", "name": name}),
        st.one_of(_TEXT, st.sampled_from(["", "  ", None, 5])),
    ),
    st.builds(lambda text: _dumped({"type": "label", "id": "l", "targetId": "m", "label": text}), _TEXT),
    st.builds(
        lambda text: _dumped(
            {"type": "compaction", "id": "c", "summary": text, "firstKeptEntryId": "m", "tokensBefore": 9}
        ),
        _TEXT,
    ),
    st.builds(
        lambda date: _dumped({"type": "session", "id": "second", "timestamp": date, "cwd": "/else"}), _DATE
    ),
    st.sampled_from(
        [b"", b"   ", b"{not json", b'{"type": "message"', b"null", b"0", b'""', b'{"type": "x"}']
    ),
)
_HEADER = st.builds(
    lambda date, identifier, parent: _dumped(
        {"type": "session", "id": identifier, "timestamp": date, "cwd": "/p", "parentSession": parent}
    ),
    _DATE,
    st.sampled_from(["s-1", None, 4]),
    st.sampled_from(["/parent.jsonl", None]),
)


@st.composite
def _part(draw: st.DrawFn, *, first: bool = False) -> bytes:
    """Lines as pi appends them (any line break), maybe the first bytes of one more at the end."""
    lines = draw(st.lists(_LINE, max_size=6))
    if first:
        lines.insert(draw(st.integers(0, min(2, len(lines)))), draw(_HEADER))
    breaks = st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"])
    data = b"".join(line + draw(breaks) for line in lines)
    partial = draw(st.one_of(st.none(), _LINE))
    if partial is not None:
        data += partial[: draw(st.one_of(st.just(len(partial)), st.integers(0, len(partial))))]
    return data


COVERED = [text for text in ASKED if listing_store.covers(text)]


@settings(max_examples=150, deadline=None)
@given(
    base=_part(first=True),
    appends=st.lists(st.tuples(_part(), st.sampled_from(COVERED)), min_size=1, max_size=3),
)
def test_a_kept_listing_read_on_after_appends_is_a_whole_read(
    tmp_path_factory: pytest.TempPathFactory, base: bytes, appends: list[tuple[bytes, TextOptions]]
) -> None:
    folder = tmp_path_factory.mktemp("sessions")
    session = folder / "a.jsonl"
    session.write_bytes(base)
    with _kept_in(tmp_path_factory.mktemp("index")) as patch:
        reads = _spied(patch)
        assert _as_listed(folder, COVERED[0]) == _without_kept(folder, COVERED[0])
        for appended, asked in appends:
            with session.open("ab") as f:
                f.write(appended)
            reads.clear()
            listed = _as_listed(folder, asked)  # read on from what was kept
            assert reads["a.jsonl"] == 0, "read whole"
            assert listed == _without_kept(folder, asked)
            for text in COVERED:  # from what that listing kept
                assert _as_listed(folder, text) == _without_kept(folder, text), text


def test_a_racy_file_is_read_on_from_what_was_kept_and_that_stays(
    tmp_path: Path, kept: Reads, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = _long_session(folder / "a.jsonl", "question")
    text = TextOptions(all_messages_text=False, max_chars=100)
    _as_listed(folder, text)
    size = session.stat().st_size
    (kept_file,) = (tmp_path / "index").iterdir()
    kept_before = kept_file.read_bytes()
    appended = (S.user("u2", "a1", "more") + "\n").encode()
    with session.open("ab") as f:
        f.write(appended)
    monkeypatch.setattr(cache_dir, "RACY_NS", 60 * 1_000_000_000)  # the file changed just now
    kept.clear()
    for _ in range(2):
        assert _as_listed(folder, text) == _without_kept(folder, text)
    assert kept.tails("a.jsonl") == [(size, len(appended))] * 2 and kept["a.jsonl"] == 2  # (2: without)
    assert kept_file.read_bytes() == kept_before  # what was read of a racy file is not kept


@pytest.mark.parametrize(
    "change", ["renamed over", "same size rewrite", "truncated", "shorter", "generation"]
)
def test_a_file_that_did_not_only_grow_is_read_whole(
    tmp_path: Path, kept: Reads, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = _long_session(folder / "a.jsonl", "question", name="first name")
    text = TextOptions(all_messages_text=False, max_chars=100)
    _as_listed(folder, text)
    data = session.read_bytes()
    if change == "renamed over":  # another file renamed over it (a program that saves by renaming)
        (folder / "b.tmp").write_bytes(data.replace(b"first name", b"other name"))
        os.replace(folder / "b.tmp", session)
    elif change == "same size rewrite":
        st_before = session.stat()
        with session.open("r+b") as f:
            f.write(data.replace(b"first name", b"other name"))
        os.utime(session, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    elif change == "truncated":
        with session.open("r+b") as f:
            f.truncate(len(data) - 20)
    elif change == "shorter":
        session.write_bytes(data[: len(data) // 2])
    else:  # another file under the same number: the file system tells them apart by the generation
        real = cache_dir.generation
        monkeypatch.setattr(cache_dir, "generation", lambda fd: real(fd) + 1)
    with session.open("ab") as f:  # then appended to
        f.write((S.session_info("n2", "a1", "x" * 30) + "\n").encode())
    kept.clear()
    assert _as_listed(folder, text) == _without_kept(folder, text)
    assert kept.tails("a.jsonl") == [] and kept["a.jsonl"] == 2
    assert _as_listed(folder, text) == _without_kept(folder, text)


def test_a_file_that_is_no_session_stays_none_unread(tmp_path: Path, kept: Reads) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = folder / "a.jsonl"
    session.write_text('{"type": "x"}\n' + S.header() + "\n")
    text = TextOptions(all_messages_text=False, max_chars=100)
    assert _as_listed(folder, text) == []
    with session.open("a") as f:
        f.write(S.user("u1", None, "hi") + "\n")
    kept.clear()
    assert _as_listed(folder, text) == []
    assert kept.all == [("a.jsonl", 0, 0)]


def test_a_header_first_found_in_what_was_appended(tmp_path: Path, kept: Reads) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = folder / "a.jsonl"
    session.write_text("\n{not json\n" + '{"type": "session", "id"')  # pi writing its header
    text = TextOptions(all_messages_text=False, max_chars=100)
    assert _as_listed(folder, text) == []
    with session.open("a") as f:
        f.write(
            ': "s", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/p"}\n' + S.user("u1", None, "hi") + "\n"
        )
    kept.clear()
    listed = _as_listed(folder, text)
    assert listed == _without_kept(folder, text) and listed[0]["firstMessage"] == "hi"
    assert kept.tails("a.jsonl")[0][0] == len("\n{not json\n")
