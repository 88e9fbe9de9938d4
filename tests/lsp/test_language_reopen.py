"""A session open in the editor while pi appends to it: Neovim reloads the file changed on disk as
didClose + didOpen of the grown text. The analysis kept at the closing continues with the lines
appended (an edit at the end), and its diagnostics are a fresh analysis's; any other text is
analysed afresh. And a request about a position is answered ahead of whole-document answers.

The server runs in-process, so that a test can see which analysis a document holds and hold its
queue while messages arrive."""

from __future__ import annotations

import codecs
import json
from typing import Any

import builders as S
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from in_process_server import InProcess

from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lone_cr import LoneCarriageReturns
from pi_session_server.server import jsonrpc
from pi_session_server.server.framing import encode_frame
from pi_session_server.server.language_documents import LanguageDocuments
from pi_session_server.server.language_reopen import ClosedDocuments

URI = "file:///tmp/pi-reopen/2026-11-30T09-13-48-180Z_grown.jsonl"
FRESH = "file:///tmp/pi-reopen/2026-11-30T09-13-48-180Z_fresh{}.jsonl"  # a new one each time: never reopened
PUBLISHED = "textDocument/publishDiagnostics"


class Client(InProcess):
    def open(self, uri: str, version: int, text: str, ascii_only: bool) -> None:
        """didOpen of ``text``, its JSON as an editor writes it: with \\u escapes (``ascii_only``)
        or with the UTF-8 of every character (the server then unescapes the token's bytes)."""
        message = {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {"uri": uri, "languageId": "pi-session", "version": version, "text": text}
            },
        }
        self._client_out.write(encode_frame(json.dumps(message, ensure_ascii=ascii_only).encode()))
        self._client_out.flush()

    def analysed(self, uri: str) -> None:
        """Once the jobs queued for ``uri`` before now are done (a request queued behind them)."""
        assert "result" in self.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})

    @property
    def features(self) -> LanguageDocuments:
        features = self.server.language_documents
        assert features is not None
        return features

    def last_published(self, uri: str) -> dict[str, Any]:
        with self._cond:
            return [
                params for name, params in self.notifications if name == PUBLISHED and params["uri"] == uri
            ][-1]


@pytest.fixture(name="client", scope="module")
def client_fixture() -> Any:
    client = Client()
    assert "result" in client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    client.notify("initialized", {})
    client.features.closed_documents.memory_floor = 0  # (kept whatever memory this machine has left)
    yield client
    client.close()


# ---------------------------------------------------------------------- the lines pi may append


def _torn(entry: str, parent: str | None) -> str:
    whole = S.user(entry, parent, "torn")
    return whole[: len(whole) // 2]


#: each kind of line: (its entry id, the id of the line before) -> its text
LINES = {
    "user": lambda entry, parent: S.user(entry, parent, f"turn of {entry}"),
    # unanswered until a result comes (a problem only the complete analysis finds)
    "call": lambda entry, parent: S.assistant(entry, parent, calls=((f"t{entry}", "read", {}),)),
    "result": lambda entry, parent: S.tool_result(entry, parent, f"t{parent}"),
    "torn": _torn,  # a crash mid-write
    "duplicate": lambda _entry, parent: S.user("e0", parent),
    "dangling": lambda entry, _parent: S.user(entry, "nowhere"),
    "crlf": lambda entry, parent: S.user(entry, parent) + "\r",
    # a raw CR inside a string: not JSON, and a line break to the editor
    "lone-cr": lambda entry, parent: S.user(entry, parent, "a\\rb").replace("\\\\r", "\r"),
    "wide": lambda entry, parent: S.user(entry, parent, "😀 one\u2028two é"),
    # a lone surrogate in the editor's text (sent as a JSON escape)
    "surrogate": lambda entry, _parent: '{"type":"custom","id":"' + entry + '","x":"\ud800"}',
    "header": lambda _entry, _parent: S.header(),
    "blank": lambda _entry, _parent: "",
}
_fresh_numbers = iter(range(1, 10**9))


@st.composite
def lines(draw: Any, first: int, at_least: int = 0) -> str:
    """Lines of session text, their entries numbered from ``first``, each ended by a newline
    but, maybe, the last."""
    out = []
    kinds = draw(st.lists(st.sampled_from(sorted(LINES)), min_size=at_least, max_size=6))
    for n, kind in enumerate(kinds, first):
        out.append(LINES[kind](f"e{n}", f"e{n - 1}"))
    text = "".join(line + "\n" for line in out)
    if text and draw(st.booleans()):
        text = text[: -draw(st.integers(1, min(len(text), 30)))]  # ends in the middle of a line
    return text


@st.composite
def reopenings(draw: Any) -> tuple[str, list[tuple[str, str]]]:
    """A first text and the texts it is then reopened with, one after the other: (how each
    changed, the text)."""
    first = text = S.header() + "\n" + S.user("e0", None) + "\n" + draw(lines(1))
    steps = []
    for how in draw(
        st.lists(st.sampled_from(["append", "append", "same", "edited", "shorter"]), min_size=1, max_size=4)
    ):
        if how == "append":
            text += draw(lines(100 * (len(steps) + 1), at_least=1))
        elif how == "edited":
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + ("x" if text[at] != "x" else "y") + text[at + 1 :]
        elif how == "shorter":
            text = text[: -draw(st.integers(1, min(len(text), 40)))]
        steps.append((how, text))
    return first, steps


def _as_fresh(published: dict[str, Any], fresh: str) -> str:
    return json.dumps(published["diagnostics"]).replace(json.dumps(URI)[1:-1], json.dumps(fresh)[1:-1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reopenings(), st.data())
def test_a_document_reopened_grown_continues_its_analysis_and_has_a_fresh_ones_diagnostics(
    client: Client, case: tuple[str, list[tuple[str, str]]], data: Any
) -> None:
    first, steps = case
    features = client.features
    version = 1
    client.open(URI, version, first, ascii_only=True)
    client.analysed(URI)
    for how, text in steps:
        before = features.docs[URI].doc
        features.quick_open = data.draw(st.sampled_from([0, 10**9]), label="quick_open")
        ascii_only = data.draw(st.booleans(), label="ascii_only") or "\ud800" in text
        client.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
        version += 1
        client.open(URI, version, text, ascii_only)
        fresh_uri = FRESH.format(next(_fresh_numbers))
        client.open(fresh_uri, 1, text, ascii_only)
        client.analysed(URI)
        client.analysed(fresh_uri)
        reopened, fresh = client.last_published(URI), client.last_published(fresh_uri)
        assert reopened["version"] == version
        assert _as_fresh(reopened, fresh_uri) == json.dumps(fresh["diagnostics"])
        # appended to (or the same): continued; anything else, and a text holding a surrogate (whose
        # bytes a raw token would hold otherwise), analysed afresh
        continued = how in ("append", "same") and "\ud800" not in text
        assert (features.docs[URI].doc is before) == continued, how
        client.notify("textDocument/didClose", {"textDocument": {"uri": fresh_uri}})
    # (left open: the next example's opening replaces it, afresh)


# ---------------------------------------------------------------------- what is kept, and how long


def _kept(closed: ClosedDocuments, *uris: str) -> list[str]:
    return [uri for uri in uris if uri in closed]


def test_the_closed_documents_kept_are_few_the_last_closed_first() -> None:
    closed = ClosedDocuments(count=2, memory=lambda: None)
    for uri in ("a", "b", "c"):
        assert closed.keep(uri, SessionDocument(S.header()), LoneCarriageReturns())
    assert _kept(closed, "a", "b", "c") == ["b", "c"]
    assert closed.take("c") is not None
    assert closed.take("c") is None  # (taken: kept no longer)


def test_a_closed_document_is_kept_a_few_seconds_only() -> None:
    closed = ClosedDocuments(seconds=-1.0, memory=lambda: None)  # (every one kept is too old at once)
    closed.keep("a", SessionDocument(S.header()), LoneCarriageReturns())
    assert closed.take("a") is None
    closed.keep("b", SessionDocument(S.header()), LoneCarriageReturns())
    closed.expire()
    assert _kept(closed, "b") == []


def test_no_closed_document_is_kept_while_the_system_runs_short_of_memory() -> None:
    available = [1 << 40]
    closed = ClosedDocuments(memory_floor=1 << 30, memory=lambda: available[0])
    assert closed.keep("a", SessionDocument(S.header()), LoneCarriageReturns())
    available[0] = 1 << 20
    assert not closed.keep("b", SessionDocument(S.header()), LoneCarriageReturns())
    assert _kept(closed, "a", "b") == []  # (and those kept before are let go)


# ---------------------------------------------------------------------- a reopening's text made once


@pytest.mark.parametrize("how", ["edited", "appended"])
def test_a_reopened_text_is_unescaped_once(client: Client, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A reopened text's bytes, compared with the closed analysis, are the ones a fresh analysis
    is made of when the text is not the closed one with lines appended: a 100 MB text unescaped
    twice cost the reopening as much again."""
    monkeypatch.setattr(jsonrpc, "BIG_BODY", 0)  # (its token taken undecoded, as a big text's is)
    uri = FRESH.format(next(_fresh_numbers))
    text = S.header() + "\n" + S.user("e0", None, "é") + "\n"
    client.open(uri, 1, text, ascii_only=False)
    client.analysed(uri)
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.analysed(uri)  # (closed, its analysis kept)
    assert uri in client.features.closed_documents
    reopened = text.replace("é", "è") if how == "edited" else text + S.user("e1", "e0") + "\n"

    unescaped: list[int] = []
    escape_decode = codecs.escape_decode

    def counted(data: Any, *args: Any) -> Any:
        unescaped.append(len(data))
        return escape_decode(data, *args)

    monkeypatch.setattr(codecs, "escape_decode", counted)
    client.open(uri, 2, reopened, ascii_only=False)
    client.analysed(uri)
    monkeypatch.setattr(codecs, "escape_decode", escape_decode)
    assert len(unescaped) == 1, unescaped
    assert client.last_published(uri)["version"] == 2
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
