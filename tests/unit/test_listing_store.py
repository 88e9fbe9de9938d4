"""A listing without the sessions' whole text keeps what it read of each big file
(session/listing_store.py): listing again reads only the files that changed, and gives what reading
them would, for every first-message cut, whatever the file became since."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import builders as S
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.session import listing, listing_store
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


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files_settle_at_once: None) -> Counter[str]:
    """Views kept for files of any size in a directory of the test's; how often each file is read."""
    monkeypatch.setenv("PI_SESSION_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
    reads: Counter[str] = Counter()
    read = listing._read_session_info

    def counted(path: str, *args: Any) -> Any:
        reads[os.path.basename(path)] += 1
        return read(path, *args)

    monkeypatch.setattr(listing, "_read_session_info", counted)
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


def test_real_sessions_listed_again_are_not_read_and_list_the_same(
    tmp_path: Path, kept: Counter[str]
) -> None:
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


def test_a_file_that_changed_is_read_again(tmp_path: Path, kept: Counter[str]) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    session = _long_session(folder / "a.jsonl", "first question")
    text = TextOptions(all_messages_text=False, max_chars=100)
    assert _as_listed(folder, text) == _without_kept(folder, text)
    kept.clear()
    with session.open("a") as f:  # pi appends
        f.write(S.session_info("n2", "a1", "named now") + "\n")
    listed = _as_listed(folder, text)
    assert listed == _without_kept(folder, text) and listed[0]["name"] == "named now"
    assert kept["a.jsonl"] == 2  # the listing's, and the one made without what is kept
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


def test_a_kept_value_that_is_not_ours_is_read_again(tmp_path: Path, kept: Counter[str]) -> None:
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
    tmp_path: Path, kept: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_session_server.session import cache_dir

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
    _long_session(folder / "a.jsonl", first, name=name)
    canonical = listing_store.KEPT_TEXT
    read = listing._read_session_info(str(folder / "a.jsonl"), None, None, canonical, None)
    decoded = listing_store._decoded(listing_store._encoded(read), str(folder / "a.jsonl"))
    assert decoded == read
    for text in (
        TextOptions(all_messages_text=False, max_chars=cut),
        TextOptions(first_message=False, all_messages_text=False),
    ):
        if not listing_store.covers(text):
            continue
        direct = listing._read_session_info(str(folder / "a.jsonl"), None, None, text, None)
        assert listing_store._as_asked(decoded, str(folder / "a.jsonl"), text) == direct
