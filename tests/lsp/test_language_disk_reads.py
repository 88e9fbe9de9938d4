"""Files the editor did not send, read from disk by the language server: their problems stay true
in the editor's list after their analysis is let go (nobody asked about them for a while), and a
read from disk that the editor made useless (it opened the file meanwhile) stops.

The server runs in-process so that the test can shorten the time a file's analysis is kept
(``DiskDocuments.disk_forget``) and hold a read at its pauses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builders as S
import pytest
from in_process_server import InProcess, until

from pi_session_server.analysis import document
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.server.language_document_state import DocState
from pi_session_server.server.language_documents import LanguageDocuments

PUBLISHED = "textDocument/publishDiagnostics"


def _text(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


class _Editor:
    """A client that pushes nothing about the file: it names it in requests only (as VS Code
    does for a file it does not send)."""

    def __init__(self, server: InProcess, uri: str) -> None:
        self.server = server
        self.uri = uri
        assert "result" in server.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        server.notify("initialized", {})
        features = server.server.language_documents
        assert features is not None
        self.features: LanguageDocuments = features

    def publications(self) -> list[Any]:
        with self.server._cond:
            return [p for name, p in self.server.notifications if name == PUBLISHED and p["uri"] == self.uri]

    def told(self) -> int:
        with self.server._cond:
            return sum(
                1 for name, p in self.server.notifications if name == "pi/largeFile" and p["uri"] == self.uri
            )

    def problems_after(self, seen: int) -> list[tuple[int, str]]:
        """The problems of the first publication after the ``seen`` first ones, once it came."""
        publication = until(lambda: self.publications()[seen:], f"no publication after {seen}")[0]
        return sorted((d["range"]["start"]["line"], d["code"]) for d in publication["diagnostics"])

    def hover(self) -> Any:
        params = {"textDocument": {"uri": self.uri}, "position": {"line": 1, "character": 5}}
        return self.server.request("textDocument/hover", params)["result"]

    def state(self) -> DocState | None:
        return self.features.docs.get(self.uri)

    def rested(self) -> None:
        """Once the document let go of its analysis (or was forgotten whole)."""
        until(
            lambda: (s := self.state()) is None or (s.doc is None and s.queue.idle),
            "the analysis was not let go",
        )


@pytest.fixture(name="editor")
def editor_fixture(tmp_path: Path) -> Iterator[tuple[_Editor, Path]]:
    path = tmp_path / "2026-11-30T09-13-48-180Z_on-disk.jsonl"
    path.write_text(_text(S.header(), S.user("a", None), S.user("b", "gone")), encoding="utf-8")
    server = InProcess()
    try:
        yield _Editor(server, path.as_uri()), path
    finally:
        server.close()


def test_the_problems_of_a_file_whose_analysis_was_let_go_follow_the_file(
    editor: tuple[_Editor, Path],
) -> None:
    client, path = editor
    client.features.disk.disk_forget = 0.0  # (let go as soon as the request is answered)
    assert client.hover() is not None
    assert client.problems_after(0) == [(2, "PI031")]
    client.rested()
    seen = len(client.publications())

    # pi appends a damaged line: the list shows it
    with path.open("a", encoding="utf-8") as f:
        f.write('{"type":"message","id":"c"\n')
    assert client.problems_after(seen) == [(2, "PI031"), (3, "PI001")]
    client.rested()  # (read again, and let go again: nobody asked)
    seen = len(client.publications())

    # the user repairs the file (pi-session repair writes a new file over it): the list is empty
    repaired = path.with_name("repaired.tmp")
    repaired.write_text(_text(S.header(), S.user("a", None), S.user("b", "a")), encoding="utf-8")
    repaired.replace(path)
    assert client.problems_after(seen) == []
    assert client.told() == 1, "the client was told again that the file is read from disk"


def test_a_file_whose_analysis_was_let_go_is_read_again_when_asked_about(
    editor: tuple[_Editor, Path],
) -> None:
    client, _path = editor
    client.features.disk.disk_forget = 0.0
    assert client.hover() is not None
    client.rested()
    hover = client.hover()
    assert hover is not None and "**user**" in hover["contents"]["value"]
    assert client.told() == 1


def test_the_problems_of_a_file_whose_analysis_was_let_go_are_taken_back_when_it_is_deleted(
    editor: tuple[_Editor, Path],
) -> None:
    client, path = editor
    client.features.disk.disk_forget = 0.0
    assert client.hover() is not None
    assert client.problems_after(0) == [(2, "PI031")]
    client.rested()
    seen = len(client.publications())
    path.unlink()
    assert client.problems_after(seen) == []
    until(lambda: client.state() is None, "the document of a deleted file was kept")


def test_a_read_from_disk_stops_when_the_editor_opens_the_file_meanwhile(
    editor: tuple[_Editor, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neovim closes a file pi appended to and opens it again: the closing has the file read from
    disk again (its problems shown as the file has them), and the opening makes that read useless.
    Begun before the opening, it stops at its next pause."""
    client, path = editor
    lines = [
        S.header(),
        S.user("e0", None),
        *(S.user(f"e{i}", f"e{i - 1}") for i in range(1, 3 * CHECK_EVERY)),
    ]
    text = _text(*lines)
    path.write_text(text, encoding="utf-8")
    assert client.hover() is not None  # read from disk

    def opened() -> None:
        client.server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": client.uri, "languageId": "pi-session", "version": 1, "text": text}},
        )
        until(lambda: (s := client.state()) is not None and not s.from_disk, "the opening was not taken")

    opened()
    # the read that the closing starts is held at its first line until the editor opened the
    # file again; the lines it reads are counted
    read, reading, go = [0], threading.Event(), threading.Event()
    lines_of = document.iter_physical_lines

    def held(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for n, line in enumerate(lines_of(*args, **kwargs)):
            if n == 0:
                reading.set()
                go.wait(30)
            read[0] += 1
            yield line

    monkeypatch.setattr(document, "iter_physical_lines", held)
    client.server.notify("textDocument/didClose", {"textDocument": {"uri": client.uri}})
    assert reading.wait(30)
    opened()
    go.set()
    state = until(client.state, "no document")
    until(lambda: state.queue.idle, "the read did not end")
    assert read[0] <= CHECK_EVERY + 1, f"the read went on to line {read[0]} of {len(lines)}"
    assert not state.from_disk
    assert "result" in client.server.request(
        "textDocument/documentSymbol", {"textDocument": {"uri": client.uri}}
    )


def test_a_file_without_problems_is_no_longer_followed_once_its_analysis_is_let_go(
    editor: tuple[_Editor, Path],
) -> None:
    """Nothing of it is listed to go stale; following every file a "Check All" read would cost a
    stat each a tick for good."""
    client, path = editor
    path.write_text(_text(S.header(), S.user("a", None), S.user("b", "a")), encoding="utf-8")
    client.features.disk.disk_forget = 0.0
    assert client.hover() is not None
    assert client.problems_after(0) == []
    poller = client.server.server.poller
    until(lambda: client.state() is None, "the document of a file without problems was kept")
    assert not poller.is_following(client.uri), "the file is still followed"
    hover = client.hover()  # read again when asked about
    assert hover is not None and "**user**" in hover["contents"]["value"]


def test_a_change_right_after_the_first_publication_of_a_read_is_followed(
    editor: tuple[_Editor, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that acts on the problems published (a test, a script that repairs) may change
    the file the moment they come: the file is followed from what was read, not from what the
    path holds a moment after the read."""
    client, path = editor
    opened = LanguageDocuments.opened

    def then_appended(self: LanguageDocuments, state: DocState, doc: Any) -> None:
        opened(self, state, doc)
        if state.from_disk:
            with path.open("a", encoding="utf-8") as f:
                f.write('{"type":"message","id":"c"\n')

    monkeypatch.setattr(LanguageDocuments, "opened", then_appended)
    assert client.hover() is not None
    assert client.problems_after(0) == [(2, "PI031")]
    monkeypatch.setattr(LanguageDocuments, "opened", opened)
    assert client.problems_after(1) == [(2, "PI031"), (3, "PI001")]


def test_a_hover_asked_while_a_rewritten_file_is_read_again_is_answered_at_the_reads_pauses(
    editor: tuple[_Editor, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program writes a new file over the one followed (as ``pi-session repair
    --in-place`` does): it is read again from its start, and a hover asked meanwhile is answered
    from the analysis of the read before, at the read's pauses, not once a big file is read."""
    client, path = editor
    chain = [S.user(f"e{i}", f"e{i - 1}") for i in range(1, 3 * CHECK_EVERY)]
    path.write_text(_text(S.header(), S.user("e0", None, "before"), *chain), encoding="utf-8")
    assert "before" in client.hover()["contents"]["value"]  # (read from disk)
    state = until(client.state, "no document")

    # the read again waits at its first line for the hover to be queued, and after its first
    # pause for it to be answered: answered in between, or never (until the guard's timeout)
    reading, answered = threading.Event(), threading.Event()
    lines_of = document.iter_physical_lines

    def held(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for n, line in enumerate(lines_of(*args, **kwargs)):
            if n == 0:
                reading.set()
                until(lambda: state.queue._jobs, "the hover was not queued")
            elif n == CHECK_EVERY + 2:
                answered.wait(30)
            yield line

    monkeypatch.setattr(document, "iter_physical_lines", held)
    written = path.with_name("written.tmp")
    written.write_text(_text(S.header(), S.user("e0", None, "after"), *chain), encoding="utf-8")
    written.replace(path)
    assert reading.wait(30)
    hover = client.server.request(
        "textDocument/hover",
        {"textDocument": {"uri": client.uri}, "position": {"line": 1, "character": 5}},
        timeout=10,
    )
    answered.set()
    assert "before" in hover["result"]["contents"]["value"]
    until(lambda: state.queue.idle, "the read did not end")
    assert "after" in client.hover()["contents"]["value"]
