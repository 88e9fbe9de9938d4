"""The outline (documentSymbol) of random sessions, real, damaged and shuffled: the answer is a
straightforward computation's (the entries' facts read by the slow general paths, the tree walked
by recursion, the answer built as lsprotocol objects), and the server keeps it until the text, the
leaf or the analysis changes."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import builders as S
import msgspec
import pytest
from lsprotocol import converters, types

from pi_session_server.analysis import jsonpath, preview
from pi_session_server.analysis import symbols as symbols_module
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.format.jsjson import encode_value
from pi_session_server.format.jstext import js_trim
from pi_session_server.render.editor_text import shown_line
from pi_session_server.server import language_answers as answers_module
from pi_session_server.server.language_answers import DocumentAnswers
from pi_session_server.server.language_conversions import LspConversions
from pi_session_server.server.language_document_state import DocState

# ---------------------------------------------------------------------- random sessions

_TEXTS = [
    "hello",
    "two  spaces\tand a tab\nand a line",
    'a "quoted" word and a \\ backslash',
    "emoji 😀 and é and 中文",
    "\x01 control \x1f",
    "\ud800 lone surrogate",
    " " * 30 + "leading blanks " + "x" * 300,
    " " * 230 + "blanks up to where a preview's read of the text ends",
    "\ufeffbom inside",
    "\u3000wide\xa0no-break\u2028separator\x85next line\u2003",
    # where a preview's first read of 120 units ends: a wide space cut in two there, the string's end
    "é" * 59 + "a\u3000",
    "x" * 119 + "\U0001f600 emoji cut in two",
    "a\t\t\t" * 40 + "tabs collapsed",
]


def _text(rnd: random.Random) -> str:
    return "".join(rnd.choice(_TEXTS) for _ in range(rnd.randint(1, 3)))


def _user_value(rnd: random.Random, entry_id: str, parent: str | None) -> dict[str, Any]:
    return dict(json.loads(S.user(entry_id, parent, _text(rnd))))


def _id_again(rnd: random.Random, entry_id: str, parent: str | None) -> str:
    """The id written again after the others (JSON.parse keeps the last)."""
    return json.dumps(_user_value(rnd, "first", parent))[:-1] + ',"id":' + json.dumps(entry_id) + "}"


def _escaped_key(rnd: random.Random, entry_id: str, parent: str | None) -> str:
    """An escaped "id" key after the id."""
    return json.dumps(_user_value(rnd, "first", parent))[:-1] + ',"\\u0069d":' + json.dumps(entry_id) + "}"


def _calls_then_id_again(rnd: random.Random, entry_id: str, parent: str | None) -> str:
    """An assistant message with tool calls, its id written again after them."""
    calls = (("call_1", "read", {"path": "a"}),)
    first = S.assistant("first", parent, _text(rnd), calls=calls)
    return first[:-1] + ',"id":' + json.dumps(entry_id) + "}"


# an entry as pi writes it, or written otherwise: spaced, its id first, last, twice, escaped, a
# number before it, tool calls and values holding ids of their own
_WRITERS: list[Callable[[random.Random, str, str | None], str]] = [
    lambda rnd, i, p: S.assistant(i, p, _text(rnd), calls=(("call_1", "read", {"path": "a"}),)),
    lambda rnd, i, p: S.assistant(
        i, p, _text(rnd), calls=(("call_1", "read", {"id": "x"}), ("call_2", "bash", {"command": '"id"'}))
    ),
    _calls_then_id_again,
    lambda rnd, i, p: S.tool_result(i, p, "call_1", _text(rnd)),
    lambda rnd, i, p: S.model_change(i, p),
    lambda rnd, i, p: S.label(i, p, i, _text(rnd)),
    lambda rnd, i, p: S.compaction(i, p, i, _text(rnd)),
    lambda rnd, i, p: S.context_edit(i, p, i),
    lambda rnd, i, p: json.dumps(_user_value(rnd, i, p), separators=(" , ", " : ")),
    lambda rnd, i, p: json.dumps({"id": i, **_user_value(rnd, i, p)}),
    _id_again,
    _escaped_key,
    lambda rnd, i, p: json.dumps({**_user_value(rnd, i, p), "id": i + '"q'}),
    lambda rnd, i, p: '{"n":12.5e3,' + json.dumps({**_user_value(rnd, i, p), "note": '"id":"x"'})[1:],
    lambda rnd, i, p: json.dumps({**_user_value(rnd, i, p), "id": 7}),
    lambda rnd, i, p: json.dumps(_user_value(rnd, i, p), ensure_ascii=False),
]


def _parent(rnd: random.Random, ids: list[str], entry_id: str) -> str | None:
    roll = rnd.random()
    if not ids or roll < 0.05:
        return None
    if roll < 0.08:
        return "missing"
    if roll < 0.10:
        return entry_id  # its own parent
    return ids[-1] if roll < 0.7 else rnd.choice(ids)


def _damaged(rnd: random.Random, data: list[bytes]) -> None:
    for _ in range(rnd.randint(0, 3)):
        k = rnd.randrange(len(data))
        data.insert(k, rnd.choice([b"", b"{not json", b"[1,2]", data[k][: len(data[k]) // 2], b'"\xff"']))
    for k in rnd.sample(range(len(data)), min(3, len(data))):  # not UTF-8
        data[k] = data[k].replace("é".encode(), b"\xff").replace("😀".encode(), "😀".encode()[:3])


def random_session(seed: int) -> bytes:
    rnd = random.Random(seed)
    lines = [S.header()] if rnd.random() < 0.9 else []
    ids: list[str] = []
    for n in range(rnd.randint(1, 70)):
        entry_id = f"e{n:03x}"
        lines.append(rnd.choice(_WRITERS)(rnd, entry_id, _parent(rnd, ids, entry_id)))
        ids.append(entry_id)
    if len(ids) > 2 and rnd.random() < 0.3:  # a cycle
        lines += [S.user("c1", "c2"), S.user("c2", "c1")]
    data = [line.encode("utf-8", "surrogatepass") for line in lines]
    _damaged(rnd, data)
    if rnd.random() < 0.5:
        rnd.shuffle(data)
    return b"\n".join(data) + (b"\n" if rnd.random() < 0.8 else b"")


SEEDS = range(120)

# ---------------------------------------------------------------------- the reference


@contextmanager
def general_paths() -> Iterator[None]:
    """Every id's span found by the walk of the line, every text read by its pattern and json.loads
    and its whitespace collapsed by the pattern."""
    with (
        patch.object(jsonpath, "_early_member_span", lambda raw, key, written_inside=0: None),
        patch.object(preview, "_NOT_PLAIN", re.compile(b"")),
        patch.object(preview, "_QUOTE_OR_ESCAPE", re.compile(b"")),
        patch.object(preview, "_FIRST_UNITS_PER_CHARACTER", preview._STRING_UNITS),  # (all read at once)
        patch.object(preview, "_on_one_line", lambda text: js_trim(preview._WS.sub(" ", text))),
    ):
        yield


class _Reference:
    """The outline as its docstring describes it, by recursion."""

    def __init__(self, doc: SessionDocument):
        self.doc = doc
        self.visited: set[LineInfo] = set()

    def chain(self, start: LineInfo) -> tuple[list[Symbol], list[LineInfo]]:
        seg: list[Symbol] = []
        cur = start
        while cur not in self.visited:
            self.visited.add(cur)
            kids = [k for k in self.doc.tree.kids(cur) if k not in self.visited]
            seg.append(symbols_module._symbol(self.doc, cur, None, len(kids), self.doc.leaf()))
            if len(kids) != 1:
                return seg, kids
            cur = kids[0]
        return seg, []

    def walk(self, start: LineInfo, container: list[Symbol], level: int, as_branch: bool) -> None:
        if start in self.visited:
            return
        seg, kids = self.chain(start)
        if as_branch:
            seg[0].children = seg[1:] + seg[0].children
            container.append(seg[0])
        else:
            container.extend(seg)
        for kid in kids:
            if level >= symbols_module.MAX_NESTING:
                self.walk(kid, container, level, False)
            else:
                self.walk(kid, seg[-1].children, level + 1, True)


def _span(sym: Symbol) -> tuple[int, int]:
    inner = [_span(c) for c in sym.children]
    sym.lines = (min([sym.line, *(a for a, _ in inner)]), max([sym.line, *(b for _, b in inner)]))
    return sym.lines


def reference_symbols(doc: SessionDocument) -> list[Symbol]:
    out: list[Symbol] = []
    if doc.valid_header() or doc.headers:
        out.append(document_symbols_of_header(doc))
    reference = _Reference(doc)
    entries = list(doc.entries())
    for e in entries:
        if doc.tree.parent(e) in (None, e):
            reference.walk(e, out, 0, False)
    for e in entries:  # the cycles
        reference.walk(e, out, 0, False)
    for sym in out:
        _span(sym)
    return out


def document_symbols_of_header(doc: SessionDocument) -> Symbol:
    """The header's symbol, as the outline makes it (no entry before it)."""
    return document_symbols(_header_only(doc))[0]


def _header_only(doc: SessionDocument) -> SessionDocument:
    header = doc.valid_header() or doc.headers[0]
    return SessionDocument(b"\n" * header.line + header.raw)


def shape(symbols: list[Symbol]) -> list[Any]:
    return [
        (s.name, s.detail, s.kind, s.line, s.end, s.selection, s.lines, shape(s.children)) for s in symbols
    ]


def all_symbols(symbols: list[Symbol]) -> Iterator[Symbol]:
    for s in symbols:
        yield s
        yield from all_symbols(s.children)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_outline_is_the_reference_computation(seed: int) -> None:
    doc = SessionDocument(random_session(seed))
    found = document_symbols(doc)
    with general_paths():
        expected = reference_symbols(doc)
    assert shape(found) == shape(expected)
    entries = [s.line for s in all_symbols(found) if s.kind != "session" or s.detail != "header"]
    assert sorted(entries) == sorted(e.line for e in doc.entries())  # each entry once


@pytest.mark.parametrize("seed", SEEDS[:40])
def test_the_outline_beyond_the_nesting_limit_is_the_reference_computation(seed: int) -> None:
    doc = SessionDocument(random_session(seed))
    with patch.object(symbols_module, "MAX_NESTING", 1):
        found = document_symbols(doc)
        with general_paths():
            expected = reference_symbols(doc)
    assert shape(found) == shape(expected)


# ---------------------------------------------------------------------- the server's answer


def features() -> DocumentAnswers:
    server: Any = SimpleNamespace(workspace=SimpleNamespace(position_encoding="utf-16"))
    return DocumentAnswers(LspConversions(server))


def state_of(data: bytes) -> DocState:
    no_queue: Any = None  # the request runs here, not on a document's queue
    return DocState("untitled:s.jsonl", None, no_queue, doc=SessionDocument(data))


def answer(lf: DocumentAnswers, state: DocState) -> Any:
    """The documentSymbol answer as the client reads it."""
    return msgspec.json.decode(lf.convert.encoded(lf.document_symbols(state, None)))


def reference_answer(lf: DocumentAnswers, state: DocState) -> Any:
    """The answer made as lsprotocol objects, unstructured and encoded (by the slow general paths)."""
    with general_paths():
        symbols = reference_symbols(state.opened())

    def convert(sym: Symbol) -> types.DocumentSymbol:
        first, last = sym.lines
        end_of = {s.line: s.end for s in all_symbols(symbols)}
        return types.DocumentSymbol(
            name=shown_line(sym.name or "(entry)"),
            detail=shown_line(sym.detail) if sym.detail else sym.detail,
            kind=answers_module._SYMBOL_KINDS.get(sym.kind, types.SymbolKind.Object),
            range=types.Range(
                lf.convert.position(state, first, 0), lf.convert.position(state, last, end_of[last])
            ),
            selection_range=types.Range(
                lf.convert.position(state, sym.line, sym.selection[0]),
                lf.convert.position(state, sym.line, sym.selection[1]),
            ),
            children=[convert(c) for c in sym.children] or None,
        )

    made = converters.get_converter().unstructure([convert(s) for s in symbols])
    return msgspec.json.decode(encode_value(made, displayed=True))


@pytest.mark.parametrize("seed", SEEDS[:60])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_the_answer_is_the_lsprotocol_objects_encoded(seed: int, encoding: str) -> None:
    lf = features()
    lf.convert.server.workspace.position_encoding = encoding
    data = random_session(seed)
    if seed % 3 == 0:  # lone "\r" (more LSP lines than session lines) and CRLF line ends
        data = data.replace(b'"e00', b'"\re00', 1).replace(b"\n", b"\r\n", 2)
    state = state_of(data)
    state.lone_cr.scan(state.opened().lines)
    assert answer(lf, state) == reference_answer(lf, state)


def _counting(calls: list[int]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return document_symbols(*args, **kwargs)

    return counted


def test_an_outline_asked_again_unchanged_is_the_one_made() -> None:
    lf = features()
    state = state_of("\n".join([S.header(), *S.chat(3)]).encode() + b"\n")
    calls: list[int] = []
    with patch.object(answers_module, "document_symbols", _counting(calls)):
        first = lf.document_symbols(state, None)
        assert lf.document_symbols(state, None) is first
        assert len(calls) == 1


def test_a_change_of_the_text_the_leaf_or_the_analysis_makes_the_outline_again() -> None:
    lf = features()
    lines = [S.header(), S.user("a", None), S.user("b", "a"), S.user("c", "a", "other branch")]
    state = state_of("\n".join(lines).encode() + b"\n")
    doc = state.opened()
    calls: list[int] = []
    with patch.object(answers_module, "document_symbols", _counting(calls)):
        before = answer(lf, state)
        assert "leaf" in before[1]["children"][1]["detail"]  # c, the last entry

        doc.set_leaf("b")
        moved = answer(lf, state)
        assert "leaf" in moved[1]["children"][0]["detail"] and "leaf" not in moved[1]["children"][1]["detail"]

        doc.apply_edit(4, 0, 4, 0, S.user("d", "b", "appended") + "\n")
        grown = answer(lf, state)
        assert grown[1]["children"][0]["children"][0]["name"] == "user: appended"
    assert len(calls) == 3


def test_a_reload_makes_the_outline_again() -> None:
    """A new analysis of the document (a file read again) counts its versions from the start (and
    a session without entries has no leaf either)."""
    lf = features()
    state = state_of(f"{S.header('before')}\n".encode())
    assert [s["name"] for s in answer(lf, state)] == ["session before"]
    state.doc = SessionDocument(f"{S.header('after')}\n".encode())
    assert state.outline is not None and state.doc.version == state.outline.version
    assert [s["name"] for s in answer(lf, state)] == ["session after"]
