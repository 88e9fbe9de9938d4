"""A differential fuzz of document synchronisation through the real server process.

Seeded random bursts of edits go over the wire (positions in the negotiated encoding, lines
counted as the LSP counts them, ranges that cut a line or a character pair or run past a line's
end, many changes in one ``didChange``, whole-document changes, version jumps, ``didClose`` then
``didOpen`` of the text grown or edited); after each burst, what the server answers about the
document (its diagnostics once published for the last version, the outline, the folds, the inlay
hints, the code lenses, hovers, definitions and highlights at random places, the quick fixes of
each problem) must be what it answers about a new document opened on the text the editor holds.
Edits are also sent while a big text just opened is read. A file the editor never sent, which pi
appends to on disk, is compared so with a copy of it read from disk afresh.

``PI_LSP_FUZZ_SEED=N`` runs seed N (``PI_LSP_FUZZ_COUNT=K``: the K seeds from N; ``PI_LSP_FUZZ_BURSTS``:
bursts a document) instead of the few of the default run."""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import builders as S
import pytest
import pytest_lsp
from language_support import CLIENTS, SERVER, Editor, editor_fixture, start_editor  # noqa: F401  (fixture)
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import LanguageClient
from sync_fuzz_model import Change, Editing, lsp_lines, session_text, width

from pi_session_server.server.language_documents import QUICK_OPEN_CHARS
from pi_session_server.server.locations import uri_to_path

pytestmark = pytest.mark.asyncio(loop_scope="module")

_first = int(os.environ.get("PI_LSP_FUZZ_SEED", "1"))
SEEDS = list(range(_first, _first + int(os.environ.get("PI_LSP_FUZZ_COUNT", "2"))))
BURSTS = int(os.environ.get("PI_LSP_FUZZ_BURSTS", "4"))
HOVERS = 6
TIMEOUT = 60
_converter = get_converter()


@pytest_lsp.fixture(name="client", config=SERVER, params=[*CLIENTS, "emacs"], scope="module")
async def client_fixture(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """One server per client: VS Code (UTF-16), Neovim (UTF-8) and Emacs (eglot offers UTF-32 first)."""
    lsp_client.editor = await start_editor(lsp_client, request.param)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


_fresh = iter(range(1, 10**9))


def _json(value: Any, same: dict[str, str]) -> str:
    """An answer as JSON, each text of ``same`` (the fresh document's URI, its path) written as the
    one it stands for (the fuzzed document's)."""
    text = json.dumps(_converter.unstructure(value), sort_keys=True, ensure_ascii=False)
    for fresh, fuzzed in same.items():
        text = text.replace(json.dumps(fresh)[1:-1], json.dumps(fuzzed)[1:-1])
    return text


def _named_id(uri: str) -> str:
    """The session id a file's name gives (``<time>_<id>.jsonl``, as pi names them)."""
    return uri.rsplit("/", 1)[-1].split("_", 1)[-1].removesuffix(".jsonl")


def _folder(uri: str) -> str:
    return uri_to_path(uri).rsplit("/", 1)[0]


def _shown(text: str, sent: list[Any]) -> str:
    """What a failure shows: the text and what was sent (cut short when long)."""
    return f"text {text[:4000]!r} ({len(text)} characters); sent {sent!r}"[:12000]


def _sent(change: Change, editor: Editor) -> types.TextDocumentContentChangeEvent:
    if change.start is None or change.end is None:
        return types.TextDocumentContentChangeWholeDocument(text=change.text)
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(*change.start), types.Position(*change.end)), text=change.text
    )


async def _settled(editor: Editor, uri: str, version: int, pull: bool = False, since: int = 0) -> Any:
    """The diagnostics of ``uri`` as of ``version``: published for it (after its first ``since``
    publications: those of an opening before, whose versions the editor counts again), or asked
    for (``pull``, or a client that pulls): the answer, made once the document is read, is
    complete (a big document's first publication holds the problems of its lines' envelopes only)."""
    if editor.pulls or pull:
        return await asyncio.wait_for(
            editor.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            ),
            TIMEOUT,
        )
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        published = [p for p in editor.published.get(uri, [])[since:] if p.version == version]
        if published:
            return published[-1].diagnostics
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no publishDiagnostics of version {version} for {uri}")
        await asyncio.sleep(0.01)


async def _answers(editor: Editor, uri: str, text: str, places: list[tuple[int, int]]) -> dict[str, Any]:
    """What the server answers about ``uri`` (whose text is ``text``), but its diagnostics."""
    client, doc = editor.client, types.TextDocumentIdentifier(uri)
    spans = lsp_lines(text)
    end = types.Position(len(spans) - 1, width(text, spans[-1], editor.encoding))
    answers: dict[str, Any] = {
        "symbols": await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc)),
        "folds": await client.text_document_folding_range_async(types.FoldingRangeParams(doc)),
        "hints": await client.text_document_inlay_hint_async(
            types.InlayHintParams(doc, types.Range(types.Position(0, 0), end))
        ),
        "lenses": await client.text_document_code_lens_async(types.CodeLensParams(doc)),
    }
    for line, character in places:
        at = types.Position(line, character)
        answers[f"hover {line}:{character}"] = await client.text_document_hover_async(
            types.HoverParams(doc, at)
        )
        answers[f"definition {line}:{character}"] = await client.text_document_definition_async(
            types.DefinitionParams(doc, at)
        )
        answers[f"highlights {line}:{character}"] = await client.text_document_document_highlight_async(
            types.DocumentHighlightParams(doc, at)
        )
    return answers


async def _quick_fixes(editor: Editor, uri: str, diagnostics: Any) -> list[Any]:
    """The quick fixes of each problem, the version of the analysis they were planned on (which
    the server checks when one is resolved) left out."""
    fixes = []
    for diagnostic in diagnostics[:12]:
        actions = await editor.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri),
                diagnostic.range,
                types.CodeActionContext([diagnostic], only=[types.CodeActionKind.QuickFix]),
            )
        )
        for action in actions or []:
            if isinstance(action, types.CodeAction) and isinstance(action.data, dict):
                action.data.pop("version", None)
        fixes.append(actions)
    return fixes


def _items(diagnostics: Any) -> Any:
    return (
        diagnostics.items
        if isinstance(diagnostics, types.RelatedFullDocumentDiagnosticReport)
        else diagnostics
    )


async def _compare(
    editor: Editor,
    rnd: random.Random,
    uri: str,
    text: str,
    diagnostics: Any,
    fresh: str,
    fresh_diagnostics: Any,
    context: str,
    same: dict[str, str] | None = None,
) -> None:
    """``uri`` (its ``diagnostics`` as settled) answers as ``fresh`` (a new document of ``text``)."""
    # (a header a quick fix writes takes the session id from the file's name, its cwd from the folder)
    same = {
        fresh: uri,
        **(same or {}),
        _named_id(fresh): _named_id(uri),
        _folder(fresh): _folder(uri),
    }
    spans = lsp_lines(text)
    places = []
    for _ in range(HOVERS):
        line = rnd.randrange(len(spans))
        places.append((line, rnd.randint(0, width(text, spans[line], editor.encoding) + 1)))
    assert _json(_items(diagnostics), same) == _json(_items(fresh_diagnostics), same), context
    fuzzed, expected = await _answers(editor, uri, text, places), await _answers(editor, fresh, text, places)
    for name in expected:
        assert _json(fuzzed[name], same) == _json(expected[name], same), f"{name}; {context}"
    fixes = await _quick_fixes(editor, uri, _items(diagnostics))
    fresh_fixes = await _quick_fixes(editor, fresh, _items(fresh_diagnostics))
    assert _json(fixes, same) == _json(fresh_fixes, same), f"quick fixes; {context}"


async def _open(editor: Editor, uri: str, text: str, version: int) -> None:
    editor.client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "pi-session", version, text))
    )


async def _against_fresh(
    editor: Editor, rnd: random.Random, uri: str, text: str, version: int, sent: list[Any], since: int = 0
) -> None:
    fresh = f"file:///tmp/pi-sync-fuzz/2026-11-30T09-13-48-180Z_fresh{next(_fresh)}.jsonl"
    diagnostics = await _settled(editor, uri, version, since=since)
    await _open(editor, fresh, text, 1)
    try:
        fresh_diagnostics = await _settled(editor, fresh, 1, pull=True)
        context = _shown(text, sent)
        await _compare(editor, rnd, uri, text, diagnostics, fresh, fresh_diagnostics, context)
    finally:
        editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(fresh))
        )


class Fuzzed:
    """One document the editor sends, edited at random over the wire."""

    def __init__(
        self, editor: Editor, rnd: random.Random, name: str, text: str, next_entry: int, uri: str = ""
    ) -> None:
        self.editor, self.rnd = editor, rnd
        self.uri = uri or f"file:///tmp/pi-sync-fuzz/2026-11-30T09-13-48-180Z_{name}-{next(_fresh)}.jsonl"
        self.text = text
        self.editing = Editing(rnd, editor.encoding, next_entry)
        self.version = 1
        self.sent: list[Any] = [("open", 1)]
        self.since = 0  # (the publications of the openings before this one)

    async def open(self) -> None:
        self.since = self.editor.mark(self.uri)
        await _open(self.editor, self.uri, self.text, self.version)

    def close(self) -> None:
        self.editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(self.uri))
        )

    async def reload(self) -> None:
        """Neovim's reload of a file changed on disk: close, open the new text (pi appended lines
        to it, or something else changed it)."""
        grown = self.rnd.random() < 0.7
        self.text = self.editing.grown(self.text) if grown else self.editing.mutated(self.text)
        self.close()
        self.version += self.rnd.randint(1, 3)
        self.sent.append(("reopen", "grown" if grown else "changed", self.version))
        await self.open()

    def changes(self) -> None:
        """A burst of ``didChange``: each of many changes, each change applied to the text the one
        before it left, versions skipping ahead."""
        for _message in range(self.rnd.randint(1, 4)):
            changes = []
            for _change in range(self.rnd.randint(1, 3)):
                change = self.editing.change(self.text)
                self.text = change.applied(self.text, self.editor.encoding)
                changes.append(_sent(change, self.editor))
                self.sent.append(change if len(change.text) < 400 else ("whole", len(change.text)))
            self.version += self.rnd.randint(1, 3)
            self.editor.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=self.version, uri=self.uri), changes
                )
            )

    async def burst(self) -> None:
        if self.rnd.random() < 0.15:
            await self.reload()
        else:
            self.changes()

    async def check(self) -> None:
        await _against_fresh(self.editor, self.rnd, self.uri, self.text, self.version, self.sent, self.since)
        self.sent = self.sent[-30:]


@pytest.mark.parametrize("seed", SEEDS)
async def test_edits_through_the_wire_answer_as_a_fresh_document_of_the_same_text(
    editor: Editor, seed: int
) -> None:
    rnd = random.Random(f"{seed} {editor.encoding}")
    fuzzed = Fuzzed(editor, rnd, f"seed{seed}", *session_text(rnd, rnd.randint(2, 12)))
    await fuzzed.open()
    for _burst in range(BURSTS):
        await fuzzed.burst()
        await fuzzed.check()
    fuzzed.close()


def _big_text(rnd: random.Random) -> tuple[str, int]:
    """A session the server reads in two steps (its envelopes first, with pauses): the fuzz's
    lines, then a generated session's."""
    text, next_entry = session_text(rnd, rnd.randint(2, 12))
    generated = S.generate_session(QUICK_OPEN_CHARS + 300_000, seed=rnd.randint(1, 10**6)).decode()
    return text + generated.split("\n", 1)[1], next_entry


@pytest.mark.parametrize("seed", SEEDS)
async def test_edits_while_a_big_text_is_read_answer_as_a_fresh_document_of_the_same_text(
    editor: Editor, seed: int
) -> None:
    """Hovers asked and changes sent while the server reads the text just opened (hovers are
    answered at its pauses, for the text of the changes sent before them)."""
    rnd = random.Random(f"{seed} {editor.encoding}")
    fuzzed = Fuzzed(editor, rnd, f"big{seed}", *_big_text(rnd))
    first = fuzzed.text
    spans = lsp_lines(first)
    places = [(line, rnd.randint(0, 40)) for line in rnd.sample(range(min(len(spans), 40)), 4)]
    await fuzzed.open()
    early = [  # (sent now, before the changes: a coroutine would send when it first runs)
        asyncio.wrap_future(
            editor.client.protocol.send_request(
                types.TEXT_DOCUMENT_HOVER,
                types.HoverParams(types.TextDocumentIdentifier(fuzzed.uri), types.Position(*place)),
            )
        )
        for place in places
    ]
    fuzzed.changes()
    answered = await asyncio.wait_for(asyncio.gather(*early), TIMEOUT)
    fresh = f"file:///tmp/pi-sync-fuzz/2026-11-30T09-13-48-180Z_fresh{next(_fresh)}.jsonl"
    await _open(editor, fresh, first, 1)
    await _settled(editor, fresh, 1, pull=True)  # (read: its answers are the document's as a whole)
    for place, answer in zip(places, answered, strict=True):
        expected = await editor.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(fresh), types.Position(*place))
        )
        assert _json(answer, {fresh: fuzzed.uri}) == _json(expected, {fresh: fuzzed.uri}), f"hover {place}"
    editor.client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(fresh))
    )
    await fuzzed.check()
    fuzzed.close()


async def _published_after(editor: Editor, uri: str, seen: int, needle: str) -> Any:
    """The diagnostics of the first publication for ``uri`` after the first ``seen`` that holds
    ``needle`` in a message (the problem of the last line written: the whole file was read)."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        for params in editor.published.get(uri, [])[seen:]:
            if any(needle in d.message for d in params.diagnostics):
                return params.diagnostics
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no publication for {uri} naming {needle}")
        await asyncio.sleep(0.01)


async def _read_from_disk(editor: Editor, uri: str) -> None:
    """Ask about ``uri``, which the editor never opened: the server reads it from disk."""
    await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))
    )


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_file_pi_appends_to_answers_as_a_fresh_read_of_it(
    editor: Editor, seed: int, tmp_path: Path
) -> None:
    """A file the editor never sent, followed on disk while pi appends lines to it (a line written
    in pieces, one torn by a crash): after each burst, it answers as a copy of it read afresh.
    Now and then the editor opens it, edits it and closes it unsaved, which the file outlives."""
    rnd = random.Random(f"{seed} {editor.encoding}")
    text, next_entry = session_text(rnd, rnd.randint(2, 12))
    editing = Editing(rnd, editor.encoding, next_entry)
    path = tmp_path / "2026-11-30T09-13-48-180Z_followed.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    uri = path.as_uri()
    await _read_from_disk(editor, uri)
    for burst in range(BURSTS):
        seen = editor.mark(uri)
        appended = "".join(editing.new_line() + "\n" for _ in range(rnd.randint(0, 3)))
        if rnd.random() < 0.3:  # a crash in the middle of a line
            appended = appended[: rnd.randint(0, len(appended))]
        if not (text + appended).endswith("\n"):
            appended += "\n"
        appended += S.user(f"m{burst}", f"gone{burst}") + "\n"  # (its problem: the file read to its end)
        with path.open("ab") as f:
            cuts = sorted(rnd.randint(0, len(appended)) for _ in range(rnd.randint(0, 2)))
            for start, end in zip([0, *cuts], [*cuts, len(appended)], strict=True):
                f.write(appended[start:end].encode("utf-8", "surrogatepass"))
                f.flush()
        text += appended
        diagnostics = await _published_after(editor, uri, seen, f"gone{burst}")
        copy = tmp_path / f"2026-11-30T09-13-48-180Z_copy{burst}.jsonl"
        copy.write_bytes(path.read_bytes())
        seen_copy = editor.mark(copy.as_uri())
        await _read_from_disk(editor, copy.as_uri())
        copied = await _published_after(editor, copy.as_uri(), seen_copy, f"gone{burst}")
        same = {str(copy): str(path)}
        context = _shown(text, [("appended", appended)])
        await _compare(editor, rnd, uri, text, diagnostics, copy.as_uri(), copied, context, same)
        copy.unlink()
        if rnd.random() < 0.3:  # the editor opens the file, edits it, and closes it unsaved
            opened = Fuzzed(editor, rnd, "", text, editing.next_entry, uri=uri)
            await opened.open()
            await opened.burst()
            await opened.check()
            opened.close()  # (read from disk again: the next burst's problems are the file's)
    path.unlink()


# ---------------------------------------------------------------------- what the fuzz found


async def _edited(editor: Editor, text: str, changes: list[Change]) -> None:
    """``text`` opened, then ``changes`` sent in one ``didChange``: it answers as the text the
    editor holds then, opened afresh."""
    uri = f"file:///tmp/pi-sync-fuzz/2026-11-30T09-13-48-180Z_found{next(_fresh)}.jsonl"
    await _open(editor, uri, text, 1)
    for change in changes:
        text = change.applied(text, editor.encoding)
    editor.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri), [_sent(c, editor) for c in changes]
        )
    )
    await _against_fresh(editor, random.Random(0), uri, text, 2, changes)
    editor.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


async def test_a_column_past_the_end_of_a_crlf_line_is_before_its_cr(editor: Editor) -> None:
    # (the LSP: a column past a line's end is its end; the CR of a CRLF is the line break, and an
    # edit there must not leave it lone, a line break of its own to the editor)
    text = S.header() + "\r\n" + S.user("a", None) + "\r\n"
    await _edited(editor, text, [Change((0, 10_000), (1, 0), "")])


async def test_a_column_inside_a_character_is_its_start(editor: Editor) -> None:
    # UTF-16 (VS Code): the column between an emoji's two halves; UTF-8: inside its bytes
    text = S.header() + "\n" + S.user("a", None, "ab😀cd") + "\n"
    line = text.split("\n")[1]
    before = line.index("😀")
    inside = width(line, (0, before), editor.encoding) + 1
    after = width(line, (0, before + 2), editor.encoding)  # (after "c")
    await _edited(editor, text, [Change((1, inside), (1, after), "")])
