"""Document symbols: the conversation tree by ``parentId`` (not by line order); in a version 1 file,
the chain pi's migration makes of it (:mod:`.links`).

A pi session is mostly one long chain, so a literal parent/child nesting would be thousands of
levels deep. The outline therefore flattens linear runs: an entry's only child follows it at the
same level, and only a **branch point** nests: each of its branches becomes a child symbol (the
branch's first entry) holding the rest of that branch. Every entry appears exactly once; entries
not reachable from a root (parent cycles) are listed at the top level after the roots.

A symbol's range runs from the first to the last line of it and its children, as an editor reads
the outline: the symbol under the cursor (a breadcrumb, the outline following the cursor) is the
innermost one whose range holds it. A branch's lines are not contiguous when an earlier branch was
continued after a later one was started; its range then holds the later branch's lines too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..format.jsvalue import js_string_of
from ..session.describe import preview_part
from ..session.profiles import ignored_by
from . import lines as L
from . import links
from .document import SessionDocument
from .jsonpath import value_span
from .lines import LineInfo
from .positions import text_end
from .preview import full_value, quick_preview

#: branch nesting beyond this depth continues flat (editors and JSON encoders have limits)
MAX_NESTING = 48


@dataclass(slots=True)
class Symbol:
    name: str
    detail: str
    kind: str  # the entry type, or the message role for messages, or "session"
    line: int
    end: int  # byte length of the line (up to its "\r", if any)
    selection: tuple[int, int]  # byte span of the id
    children: list[Symbol] = field(default_factory=list)
    #: the first and last line of the symbol's range: its own line's and its children's
    lines: tuple[int, int] = (0, 0)


def symbol_kind(info: LineInfo) -> str:
    if info.kind == L.HEADER:
        return "session"
    if info.etype == "message":
        return info.role if isinstance(info.role, str) else "message"
    return js_string_of(info.etype)


def symbol_name(doc: SessionDocument, info: LineInfo, raw: bytes | None = None) -> str:
    """The entry as the outline names it: the preview of :func:`.preview.quick_preview`, and a
    context edit as pi 1.6.0's tree selector shows it (``[context omit: <targetId>]``), or under a
    release without context edits as the unknown entry type it is there, with what that release
    does with it (``[context_edit]: pi 0.86.1 ignores context edits``). ``raw``: the line's bytes
    when the caller has them (a line of a file is read again each time they are asked for)."""
    if info.etype == "context_edit":
        ignored = ignored_by(doc.profile)
        if ignored is not None:
            return f"{quick_preview(info, 60, raw)}: {ignored}"
        part = preview_part(full_value(info, doc.errors))
        if isinstance(part, str):
            return part
    return quick_preview(info, 60, raw)


#: told each symbol and its line's bytes as the symbol is made (see :func:`document_symbols`)
WithBytes = Callable[[Symbol, bytes], None]


def _symbol(
    doc: SessionDocument,
    info: LineInfo,
    with_bytes: WithBytes | None,
    branch_children: int,
    leaf: LineInfo | None,
) -> Symbol:
    """``leaf``: the document's leaf (:meth:`SessionDocument.leaf`)."""
    raw = info.raw  # read once: a line of a file is read again each time it is asked for
    sel = value_span(raw, ("id",), len(info.call_ids)) or (0, min(len(raw), 1))
    detail = links.shown_id(doc, info)
    if branch_children > 1:
        detail += f" · {branch_children} branches"
    if info is leaf:
        detail += " · leaf"
    made = Symbol(symbol_name(doc, info, raw), detail, symbol_kind(info), info.line, text_end(raw), sel)
    if with_bytes is not None:
        with_bytes(made, raw)
    return made


def document_symbols(doc: SessionDocument, with_bytes: WithBytes | None = None) -> list[Symbol]:
    """The outline. ``with_bytes``: told each symbol and its line's bytes as the symbol is made,
    for what a caller derives from them (a line of a file is read again each time its bytes are
    asked for; holding every line's until the outline is whole would hold the file)."""
    out: list[Symbol] = []
    header = doc.valid_header() or (doc.headers[0] if doc.headers else None)
    if header is not None:
        raw = header.raw
        made = Symbol(
            f"session {js_string_of(header.id)}",
            "header",
            "session",
            header.line,
            text_end(raw),
            value_span(raw, ("id",)) or (0, 1),
        )
        if with_bytes is not None:
            with_bytes(made, raw)
        out.append(made)
    visited: set[LineInfo] = set()
    entries = list(doc.entries())
    roots = [e for e in entries if links.parent(doc, e) is None]
    leaf = doc.leaf()
    _walk(doc, roots, out, visited, with_bytes, leaf)
    # cycles: reachable from no root
    _walk(doc, [e for e in entries if e not in visited], out, visited, with_bytes, leaf)
    _span_children(out)
    return out


def _span_children(symbols: list[Symbol]) -> None:
    """Set each symbol's ``lines`` to enclose its own line and its children's, innermost first
    (an explicit stack: the nesting is bounded, a chain within it is not)."""
    work: list[tuple[Symbol, bool]] = [(s, False) for s in symbols]
    while work:
        sym, children_done = work.pop()
        children = sym.children
        if not children:  # (most symbols: a chain's entries are siblings)
            sym.lines = (sym.line, sym.line)
            continue
        if not children_done:
            work.append((sym, True))
            work.extend([(c, False) for c in children])
            continue
        first = last = sym.line
        for child in children:
            first = min(first, child.lines[0])
            last = max(last, child.lines[1])
        sym.lines = (first, last)


def _chain(
    doc: SessionDocument,
    start: LineInfo,
    visited: set[LineInfo],
    with_bytes: WithBytes | None,
    leaf: LineInfo | None,
) -> tuple[list[Symbol], list[LineInfo]]:
    """``start`` and its linear continuation, and the children where the chain branches."""
    seg: list[Symbol] = []
    cur = start
    while cur not in visited:
        visited.add(cur)
        kids = [k for k in links.children(doc, cur) if k not in visited]
        seg.append(_symbol(doc, cur, with_bytes, len(kids), leaf))
        if len(kids) != 1:
            return seg, kids
        cur = kids[0]
    return seg, []


def _walk(
    doc: SessionDocument,
    starts: list[LineInfo],
    into: list[Symbol],
    visited: set[LineInfo],
    with_bytes: WithBytes | None,
    leaf: LineInfo | None,
) -> None:
    """Depth-first over branches with an explicit stack (no recursion limit applies)."""
    work: list[tuple[LineInfo, list[Symbol], int, bool]] = [(s, into, 0, False) for s in reversed(starts)]
    while work:
        start, container, level, as_branch = work.pop()
        if start in visited:
            continue
        seg, kids = _chain(doc, start, visited, with_bytes, leaf)
        if as_branch:
            head = seg[0]
            head.children = seg[1:] + head.children
            container.append(head)
        else:
            container.extend(seg)
        if kids:
            branch_point = seg[-1]
            for kid in reversed(kids):
                if level >= MAX_NESTING:
                    work.append((kid, container, level, False))
                else:
                    work.append((kid, branch_point.children, level + 1, True))
