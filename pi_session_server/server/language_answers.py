"""The read-only answers about a document: hover, definition, references, implementation,
highlights, completion, outline, folding, inlay hints, code lenses and selection ranges. Each is a
request's job on the document's queue (see :meth:`.language_documents.LanguageDocuments.ask`),
given the document's state; the analysis (:mod:`pi_session_server.analysis`) finds, this converts."""

from __future__ import annotations

import weakref
from typing import Any

import msgspec
from lsprotocol import types

from pi_session_server.analysis import completion as completion_mod
from pi_session_server.analysis import hints as hints_mod
from pi_session_server.analysis import navigation
from pi_session_server.analysis.folding import folding_ranges
from pi_session_server.analysis.highlights import DECLARATION, highlights
from pi_session_server.analysis.hover import hover as hover_markdown
from pi_session_server.analysis.hover import reads_its_line_only
from pi_session_server.analysis.pauses import CHECK_EVERY
from pi_session_server.analysis.selection import selection_spans
from pi_session_server.analysis.symbols import Symbol, document_symbols
from pi_session_server.format.jsjson import encode_value
from pi_session_server.format.jstext import as_displayed
from pi_session_server.render.editor_text import shown_line

from .language_conversions import LspConversions, start_first
from .language_document_state import DocState, KeptOutline, still_current

_SYMBOL_KINDS = {
    "session": types.SymbolKind.File,
    "user": types.SymbolKind.Event,
    "assistant": types.SymbolKind.Function,
    "toolResult": types.SymbolKind.Field,
    "bashExecution": types.SymbolKind.Operator,
    "system": types.SymbolKind.Interface,
    "compaction": types.SymbolKind.Package,
    "branch_summary": types.SymbolKind.Namespace,
    "label": types.SymbolKind.Key,
    "model_change": types.SymbolKind.Property,
    "thinking_level_change": types.SymbolKind.Property,
    "session_info": types.SymbolKind.Constant,
    "custom": types.SymbolKind.Struct,
    "custom_message": types.SymbolKind.Struct,
    "usage": types.SymbolKind.Number,
}

# an LSP Position and Range as the JSON values they are sent as
JsonPosition = dict[str, int]
JsonRange = dict[str, JsonPosition]


class DocumentAnswers:
    """The answers to the requests that read a document (on its worker, see
    :meth:`.language_documents.LanguageDocuments.ask`)."""

    def __init__(self, convert: LspConversions) -> None:
        self.convert = convert

    def hover(self, state: DocState, params: types.HoverParams) -> types.Hover | None:
        line, offset = self.convert.offset(state, params.position)
        found = hover_markdown(state.opened(), line, offset)
        if found is None:
            return None
        text, span = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=as_displayed(text)),
            range=self.convert.range(state, line, *span) if span is not None else None,
        )

    def hover_exact_now(self, state: DocState, params: types.HoverParams) -> bool:
        """At a pause of the first full read of a big document's lines (see
        ``LanguageDocuments.opened``): the hover's answer is already the one it gets once every
        line is read (its line is read in full, and it reads no other line's facts but the tree's).
        Not in a document with lone CRs, whose columns are placed again once the lines are read
        (invalid UTF-8 replaced)."""
        doc = state.doc
        if doc is None or state.closed or state.failure is not None or state.lone_cr:
            return False
        line, offset = self.convert.offset(state, params.position)
        return doc.read_in_full(line) and reads_its_line_only(doc, line, offset)

    def location(self, state: DocState, target: navigation.Target) -> types.Location:
        return types.Location(state.uri, self.convert.range(state, target.line, target.start, target.end))

    def definition(self, state: DocState, params: types.DefinitionParams) -> list[types.Location]:
        line, offset = self.convert.offset(state, params.position)
        return [self.location(state, t) for t in navigation.definition(state.opened(), line, offset)]

    def references(self, state: DocState, params: types.ReferenceParams) -> list[types.Location]:
        line, offset = self.convert.offset(state, params.position)
        found = navigation.references(state.opened(), line, offset, params.context.include_declaration)
        return [self.location(state, t) for t in found]

    def document_highlights(
        self, state: DocState, params: types.DocumentHighlightParams
    ) -> list[types.DocumentHighlight]:
        """On an id: the entry's (or tool call's) own id as written, the ids naming it as read."""
        line, offset = self.convert.offset(state, params.position)
        return [
            types.DocumentHighlight(
                self.convert.range(state, h.target.line, h.target.start, h.target.end),
                kind=types.DocumentHighlightKind.Write
                if h.kind == DECLARATION
                else types.DocumentHighlightKind.Read,
            )
            for h in highlights(state.opened(), line, offset)
        ]

    def implementation(self, state: DocState, params: types.ImplementationParams) -> list[types.Location]:
        """Go to implementations, shown as go to children: the entries that continue from the entry on
        the cursor's line."""
        line, _offset = self.convert.offset(state, params.position)
        return [self.location(state, t) for t in navigation.children_targets(state.opened(), line)]

    def completion(self, state: DocState, params: types.CompletionParams) -> types.CompletionList | None:
        """Ids inside a string naming an entry or a tool call, entry types inside ``type``: each
        item replaces the string's content."""
        line, offset = self.convert.offset(state, params.position)
        found = completion_mod.completions(state.opened(), line, offset)
        if found is None:
            return None
        replaced = self.convert.range(state, line, found.start, found.end)
        kind = (
            types.CompletionItemKind.Reference
            if found.names in (completion_mod.ENTRY_ID, completion_mod.TOOL_CALL_ID)
            else types.CompletionItemKind.EnumMember
        )
        width = len(str(len(found.candidates)))
        items = [
            types.CompletionItem(
                label=shown_line(c.label),
                kind=kind,
                detail=shown_line(c.detail),
                sort_text=str(rank).zfill(width),  # the analysis's order: nearest entries first
                filter_text=c.written,  # what the user types: the id as the document writes it
                text_edit=types.TextEdit(replaced, c.new_text),
            )
            for rank, c in enumerate(found.candidates)
        ]
        return types.CompletionList(is_incomplete=found.incomplete, items=items)

    def document_symbols(self, state: DocState, _params: Any) -> msgspec.Raw:
        """The outline as the JSON it is sent as, kept until the text or the leaf changes: editors
        ask again without a change (an outline view shown again, a symbol picker), and for a big
        session the answer is megabytes. Made as JSON values, not lsprotocol objects unstructured
        after: that would hold the outline three times over."""
        doc = state.opened()
        leaf = doc.leaf()
        kept = state.outline
        if kept is not None and kept.doc() is doc and kept.version == doc.version and kept.leaf is leaf:
            return kept.answer
        # each symbol's line as (its start, its end, its id's span), placed while the analysis
        # holds the line's bytes, which a line of a file would read again
        places: dict[int, tuple[JsonPosition, JsonPosition, JsonRange]] = {}

        def position(line: int, offset: int, raw: bytes) -> JsonPosition:
            lsp_line, character = self.convert.place(state, line, offset, raw)
            return {"line": lsp_line, "character": character}

        def place(sym: Symbol, raw: bytes) -> None:
            if len(places) % CHECK_EVERY == 0:
                still_current(state)
            line = sym.line
            start, end = sym.selection
            if not state.lone_cr and raw.isascii() and not raw.endswith(b"\r"):
                # a byte is a column in every encoding, the line is one LSP line and no offset
                # stands on a CR: what self.convert.place finds, without four conversions a symbol
                places[line] = (
                    {"line": line, "character": 0},
                    {"line": line, "character": sym.end},
                    {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
                )
                return
            places[line] = (
                position(line, 0, raw),
                position(line, sym.end, raw),
                {"start": position(line, start, raw), "end": position(line, end, raw)},
            )

        def convert(sym: Symbol) -> dict[str, Any]:
            first, last = sym.lines  # (each a symbol's line: placed too)
            made: dict[str, Any] = {
                "name": shown_line(sym.name or "(entry)"),
                "kind": int(_SYMBOL_KINDS.get(sym.kind, types.SymbolKind.Object)),
                "range": {"start": places[first][0], "end": places[last][1]},
                "selectionRange": places[sym.line][2],
                "detail": shown_line(sym.detail) if sym.detail else sym.detail,
            }
            if sym.children:
                made["children"] = [convert(c) for c in sym.children]
            return made

        outline = [convert(s) for s in document_symbols(doc, place)]
        places.clear()
        answer = msgspec.Raw(encode_value(outline, displayed=True))
        state.outline = KeptOutline(weakref.ref(doc), doc.version, leaf, answer)
        return answer

    def folding(self, state: DocState, _params: Any) -> list[types.FoldingRange]:
        out = []
        for n, (a, b) in enumerate(folding_ranges(state.opened())):
            if n % CHECK_EVERY == 0:
                still_current(state)
            start = self.convert.position(state, a, 0).line
            end = self.convert.position(state, b, len(state.opened().lines[b].raw)).line
            out.append(types.FoldingRange(start, end, kind=types.FoldingRangeKind.Region))
        return out

    def inlay_hints(self, state: DocState, params: types.InlayHintParams) -> list[types.InlayHint]:
        asked = start_first(params.range)
        first = self.convert.line_of(state, asked.start.line)
        last = self.convert.line_of(state, asked.end.line)
        out = []
        for n, h in enumerate(
            hints_mod.inlay_hints(state.opened(), first, last, lambda: still_current(state))
        ):
            if n % CHECK_EVERY == 0:
                still_current(state)
            out.append(
                types.InlayHint(
                    self.convert.position(state, h.line, h.offset),
                    shown_line(h.label),
                    padding_left=True,
                    tooltip=shown_line(h.tooltip),
                )
            )
        return out

    def code_lenses(self, state: DocState, _params: Any) -> list[types.CodeLens]:
        return [
            types.CodeLens(
                self.convert.range(state, lens.line, 0, 0), command=types.Command(shown_line(lens.title), "")
            )
            for lens in hints_mod.code_lenses(state.opened(), lambda: still_current(state))
        ]

    def selection_ranges(
        self, state: DocState, params: types.SelectionRangeParams
    ) -> list[types.SelectionRange]:
        out = []
        for pos in params.positions:
            line, offset = self.convert.offset(state, pos)
            spans = selection_spans(state.opened(), line, offset) or [(offset, offset)]
            node: types.SelectionRange | None = None
            for start, end in reversed(spans):
                node = types.SelectionRange(self.convert.range(state, line, start, end), parent=node)
            assert node is not None
            out.append(node)
        return out
