"""Hover text (Markdown) for a position in a session document.

On an id value that refers to another entry (``parentId``, ``targetId``, ``firstKeptEntryId``,
``fromId``, ``toolCallId``) the hover summarises the entry it refers to; anywhere else on a line it
describes the line's own entry: type and role, model, tokens and cost, time, depth, parent,
children, label, branch point / current path / leaf, what a context edit does to the context (and,
on an edited entry, which lines edit it), and a preview of the content. Tree facts come from
:mod:`.links` (a version 1 file is the chain pi's migration makes of it; on a key naming an entry
that a version 1 line carries anyway, the hover says what the migration makes of it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..format.dates import ms
from ..format.jsjson import READABLE_DEPTH, dumps_pretty
from ..format.jsvalue import ABSENT, get, js_string_of, truthy
from ..render.editor_text import markdown_plain, shown_line, shown_lines
from . import lines as L
from . import links
from .diagnostics import is_forked
from .document import SessionDocument
from .edits import edit_effect, edits_of
from .jsonpath import Located, is_kept, scalar_at, value_span
from .lines import LineInfo, human_size
from .navigation import Reference, Target, reference_of
from .preview import cut, full_value, label_text, one_line, quick_preview

TEXT_LIMIT = 600
ARGS_LIMIT = 300


def _hovered(
    doc: SessionDocument, info: LineInfo, offset: int
) -> tuple[Located | None, bool, Reference | None]:
    """What is under the cursor at byte ``offset`` of ``info``'s line: the scalar (found once for
    every question of the hover: on a line of megabytes each look reads them; a key or value of
    the object has a path, a byte order mark before it has none), whether pi ignores it (written
    again later in its object), and the reference to another entry or a tool call it is."""
    if info.kind not in (L.ENTRY, L.HEADER):
        return None, False, None
    raw = info.raw
    loc = scalar_at(raw, offset)
    if loc is None:
        return None, False, None
    if loc.path and not is_kept(raw, loc):
        return loc, True, None
    ref = reference_of(info, loc, doc.is_v1())
    return loc, False, ref if ref is not None and ref.kind != "self" else None


def hover(doc: SessionDocument, line: int, offset: int) -> tuple[str, tuple[int, int] | None] | None:
    """Markdown for the position (line, byte offset), and the byte span it applies to."""
    if not 0 <= line < doc.line_count:
        return None
    info = doc.lines[line]
    loc, ignored, ref = _hovered(doc, info, offset)
    if ignored:
        assert loc is not None
        return _ignored_markdown(info, info.raw, loc), (loc.start, loc.end)
    if ref is not None:
        return _reference_hover(doc, ref), (ref.start, ref.end)
    if info.kind == L.ENTRY:
        return entry_markdown(doc, info), None
    if info.kind == L.HEADER:
        return header_markdown(doc, info), None
    if info.kind == L.MALFORMED:
        glued = L.glued_problem(info)
        if glued is not None:
            return (
                f"**lines glued together** (line {doc.line_number(line)}): {markdown_plain(glued.message)}",
                None,
            )
        return (
            f"**invalid JSON** (line {doc.line_number(line)}): {markdown_plain(info.problems[0].message)}",
            None,
        )
    if info.kind == L.NON_OBJECT:
        return "**not an entry**: valid JSON, but not an object; pi skips this line", None
    return None


def reads_its_line_only(doc: SessionDocument, line: int, offset: int) -> bool:
    """The hover at (line, byte offset) is exact once that line is read in full, whatever the
    other lines' facts beyond the tree's (what a ``quick`` load reads of every line) are: a key
    pi ignores, a line pi skips, or the line's own entry, unless a context edit is involved
    (what it does depends on the roles along its path). A reference to another entry or a tool
    call reads that one's facts; the header's, the leaf's."""
    if not 0 <= line < doc.line_count:
        return True
    info = doc.lines[line]
    if info.kind in (L.MALFORMED, L.NON_OBJECT, L.BLANK):
        return True
    if info.kind != L.ENTRY:
        return False
    _loc, ignored, ref = _hovered(doc, info, offset)
    if ignored:
        return True
    return ref is None and info.etype != "context_edit" and not edits_of(doc, info)


def _ignored_markdown(info: LineInfo, raw: bytes, loc: Located) -> str:
    """On a key or value of ``info``'s line (``raw``) that JSON.parse drops (its key, or one on
    its path, is written again later in the same object: the last one counts): that pi ignores
    it, and what pi reads."""
    path = loc.path
    depth = _written_again(raw, path, loc.start)
    member = path[depth - 1]
    if depth > 1:
        where = f"`{_path_text(path[: depth - 1])}`"
    else:
        where = "this entry" if info.kind == L.ENTRY else "the header"
    kept = value_span(raw, path[:depth])
    later = f", {_json_code(raw[kept[0] : kept[1]])}" if kept is not None else ""
    if not loc.is_key:
        what = "this value"
    else:
        what = "this key or its value" if depth == len(path) else "this key"
    return (
        f"**ignored by pi**: {_code(member)} is written again later in {where}, and JSON.parse "
        f"keeps the last value{later}: pi never reads {what}"
    )


def _written_again(raw: bytes, path: tuple[Any, ...], at: int) -> int:
    """How long the shortest beginning of ``path`` is whose value JSON.parse takes from elsewhere
    than the member at byte ``at`` (the path's own key when no container around it is): a binary
    search, as every longer beginning lies inside that dropped value too."""
    low, high = 1, len(path)  # the answer is in [low, high]
    while low < high:
        middle = (low + high) // 2
        span = value_span(raw, path[:middle])
        if span is not None and span[0] <= at < span[1]:
            low = middle + 1
        else:
            high = middle
    return low


def _path_text(path: tuple[Any, ...]) -> str:
    """A path of keys, for a code span (see :func:`_code`)."""
    return shown_line(".".join(str(part) for part in path).replace("`", "'"))


def _json_code(text: bytes) -> str:
    """A value's JSON text, in code and cut (a dropped image is megabytes)."""
    return _code(text[: TEXT_LIMIT * 4].decode("utf-8", "replace"))


# --------------------------------------------------------------------------------------------
# pieces
# --------------------------------------------------------------------------------------------


def _code(value: Any) -> str:
    """A value of the file in code (cut like message text): nothing in it reads as markdown (a code
    span is on one line: a blank line in it would end it, and the paragraph)."""
    if value is ABSENT:  # JavaScript's `undefined`, which pi would show, tells a reader nothing
        return "*missing*"
    text = shown_line(cut(js_string_of(value, TEXT_LIMIT + 1), TEXT_LIMIT).replace("`", "'"))
    # an empty code span is no code span to Markdown: it would show its two backticks
    return f"`{text}`" if text else "*empty*"


def _js_or_unknown(value: Any) -> str:
    return "?" if value is ABSENT else js_string_of(value)


def _num(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return "?"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.4g}"


def _time(ts: Any) -> str | None:
    t = ms(ts)
    if isinstance(t, float):
        return None
    import datetime as _dt

    try:
        when = _dt.datetime.fromtimestamp(t / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{t % 1000:03d} UTC"


def _title(info: LineInfo, bold_role: bool = True) -> str:
    if info.etype == "message" and isinstance(info.role, str):
        role = markdown_plain(cut(info.role))
        return f"`message` · **{role}**" if bold_role else f"`message` · {role}"
    return _code(info.etype)


def current_label(doc: SessionDocument, info: LineInfo) -> str | None:
    """The entry's label as pi computes it: the last label line for it (any branch) decides. pi
    keys labels by the ``targetId``'s value: an id that is not a string (a number, a boolean) is
    labelled by the labels naming that value. pi keeps any truthy ``label`` (a hand-made file's
    number or object) and its tree shows ``String`` of it, as the CLI's tree does: that text, None
    when it is empty (``[]``) or the label was taken back."""
    if isinstance(info.id, str):
        labels: Iterable[LineInfo] = links.referrers(doc, info)
    else:
        labels = doc.labels_naming(info.key)
    value: Any = ABSENT
    for ref in labels:
        if ref.etype == "label":
            value = get(full_value(ref, doc.errors), "label")
    return label_text(value) or None


def tree_facts(doc: SessionDocument, info: LineInfo) -> list[str]:
    facts = [f"line {doc.line_number(info.line)}", f"depth {links.depth(doc, info)}"]
    parent = links.parent(doc, info)
    if parent is not None:
        facts.append(f"parent{_id_after(doc, parent)} (line {doc.line_number(parent.line)})")
    elif links.names_a_parent(doc, info):
        facts.append(f"parent {_code(info.parent_id)} **not found**")
    else:
        facts.append("root")
    kids = links.children(doc, info)
    if len(kids) > 1:
        facts.append(f"**branch point**: {len(kids)} children")
    else:
        facts.append(f"{len(kids)} child" + ("" if len(kids) == 1 else "ren"))
    if doc.leaf() is info:
        facts.append("**leaf** (where pi continues)")
    elif links.on_leaf_path(doc, info):
        facts.append("on the current path")
    return facts


def _id_after(doc: SessionDocument, info: LineInfo) -> str:
    """`` `id` `` to follow a word, or nothing for an entry of a version 1 file (it has none yet)."""
    return f" {_code(info.id)}" if links.ids_as_written(doc) else ""


def _entry_name(doc: SessionDocument, info: LineInfo) -> str:
    """The entry's id in code, or what stands for it in a version 1 file."""
    shown = links.shown_id(doc, info)
    return _code(shown) if links.ids_as_written(doc) else shown


def entry_markdown(doc: SessionDocument, info: LineInfo) -> str:
    out = [f"### {_title(info)} {_entry_name(doc, info)}", " · ".join(tree_facts(doc, info))]
    if doc.is_v1():
        out.append(
            "*version 1 file*: pi migrates it when it opens it, giving every entry a new id and the "
            "entry before it as its parent"
        )
    label = current_label(doc, info)
    if label:
        out.append(f"**label** {_code(label)}")
    if info.etype == "context_edit":
        out.append(edit_effect(doc, info).text)
    for edit in edits_of(doc, info)[:5]:
        effect = edit_effect(doc, edit)
        out.append(f"**edited** by line {doc.line_number(edit.line)} ({_code(edit.id)}): {effect.on_target}")
    when = _time(info.timestamp)
    if when:
        out.append(f"**time** {when}")
    else:
        unreadable = "" if info.timestamp is ABSENT else " (unreadable)"
        out.append(f"**time** {_code(info.timestamp)}{unreadable}")
    value = full_value(info, doc.errors)
    out.extend(_body_facts(doc, info, value))
    preview = _preview(info, value)
    if preview:
        out.append("---")
        out.append(preview)
    return "\n\n".join(out)


def header_markdown(doc: SessionDocument, info: LineInfo) -> str:
    value = full_value(info, doc.errors)
    entries = len(doc.tree.members)
    leaf = doc.leaf()
    out = [
        f"### session {_code(get(value, 'id'))}",
        f"version {_code(get(value, 'version')) if get(value, 'version') is not ABSENT else '1 (no `version`)'}"
        f" · cwd {_code(get(value, 'cwd'))} · {entries:,} entries",
    ]
    when = _time(get(value, "timestamp"))
    if when:
        out.append(f"**created** {when}")
    parent = get(value, "parentSession")
    if parent is not ABSENT:
        out.append(f"**forked from** {_code(parent)}")
    if leaf is not None:
        out.append(
            f"**leaf**{_id_after(doc, leaf)} (line {doc.line_number(leaf.line)}): {markdown_plain(quick_preview(leaf))}"
        )
    return "\n\n".join(out)


def _body_facts(doc: SessionDocument, info: LineInfo, value: Any) -> list[str]:
    out: list[str] = []
    if info.etype == "message":
        out.extend(_message_facts(info, value))
    elif info.etype in ("usage", "compaction", "branch_summary"):
        out.extend(_summary_facts(doc, info, value))
    elif info.etype == "model_change":
        out.append(f"**model** {_code(get(value, 'provider'))} / {_code(get(value, 'modelId'))}")
    elif info.etype == "thinking_level_change":
        out.append(f"**thinking level** {_code(get(value, 'thinkingLevel'))}")
    elif info.etype == "label":
        # what the line does to its target's label, as pi reads it (and the outline and lenses say)
        shown = label_text(get(value, "label"))
        label = "label cleared" if shown is None else f"label {_code(shown)}"
        out.append(f"**target** {_code(get(value, 'targetId'))} · {label}")
    elif info.etype == "context_edit":
        replacement = get(value, "replacement")
        kind = "omit" if replacement is None else "replace"
        out.append(f"**context {kind}** of {_code(get(value, 'targetId'))}")
    return out


def _message_facts(info: LineInfo, value: Any) -> list[str]:
    out: list[str] = []
    message = get(value, "message")
    if info.role == "assistant":
        named = [get(message, "provider"), get(message, "model")]
        model = ABSENT if all(v is ABSENT for v in named) else " / ".join(_js_or_unknown(v) for v in named)
        out.append(f"**model** {_code(model)} · stop {_code(get(message, 'stopReason'))}")
        out.extend(_usage(get(message, "usage")))
        error = get(message, "errorMessage")
        if isinstance(error, str) and error:
            out.append(f"**error** {markdown_plain(one_line(error, 200))}")
    elif info.role == "toolResult":
        flag = " · **error**" if get(message, "isError") is True else ""
        out.append(
            f"**tool** {_code(get(message, 'toolName'))} · call {_code(get(message, 'toolCallId'))}{flag}"
        )
    elif info.role == "bashExecution":
        out.append(f"**exit code** {_code(get(message, 'exitCode'))}")
    return out


def _summary_facts(doc: SessionDocument, info: LineInfo, value: Any) -> list[str]:
    """The facts of a usage, compaction or branch summary entry."""
    out: list[str] = []
    if info.etype == "usage":
        out.append(
            f"**{markdown_plain(js_string_of(get(value, 'kind'), 80))}** · {_code(get(value, 'provider'))} / {_code(get(value, 'model'))}"
        )
    if info.etype == "compaction":
        out.append(f"**tokens before** {_num(get(value, 'tokensBefore'))} · {_kept(doc, info, value)}")
    if info.etype == "branch_summary":
        out.append(f"**from** {_code(get(value, 'fromId'))}")
    out.extend(_usage(get(value, "usage")))
    return out


def _kept(doc: SessionDocument, info: LineInfo, value: Any) -> str:
    """What compaction ``info`` keeps from before it, as pi reads it (after its migration: a
    version 1 compaction names its kept entry by position, which has no id yet, and an id it
    carries names none)."""
    if not links.ids_as_written(doc):
        kept_line = links.version_1_kept(doc, info, get(value, "firstKeptEntryIndex"))
        if kept_line is None or kept_line is info:
            return "keeps nothing from before it"
        return f"first kept line {doc.line_number(kept_line.line)}"
    first_kept = get(value, "firstKeptEntryId")
    if first_kept is None or first_kept is ABSENT or first_kept == info.id:
        return "keeps nothing from before it"
    return f"first kept {_code(first_kept)}"


def _no_entry_at(doc: SessionDocument, index: Any) -> str:
    """What a version 1 compaction's ``firstKeptEntryIndex`` ``index`` that names no entry names
    instead (pi's migration gives the compaction no kept entry's id from it)."""
    value = links.version_1_value(doc, index)
    if value is None:
        return "no value of the file is at this position (the header's is 0)"
    if value.kind == L.HEADER:
        return f"the value at this position is a header (line {doc.line_number(value.line)})"
    if value.kind == L.ENTRY:
        return (
            f"line {doc.line_number(value.line)}, at this position, comes after the compaction, "
            "and pi's migration has not given it its new id yet"
        )
    return f"line {doc.line_number(value.line)}, at this position, is no entry object"


def _usage(usage: Any) -> list[str]:
    if not isinstance(usage, dict):
        return []
    parts = [
        f"input {_num(usage.get('input'))}",
        f"output {_num(usage.get('output'))}",
        f"cache read {_num(usage.get('cacheRead'))}",
        f"cache write {_num(usage.get('cacheWrite'))}",
        f"total {_num(usage.get('totalTokens'))}",
    ]
    cost = get(get(usage, "cost"), "total")
    line = "**tokens** " + " · ".join(parts)
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        line += f" · **cost** ${cost:.4f}"
    return [line]


def _fence(text: str, limit: int = TEXT_LIMIT) -> str:
    """Session text as a block of code: its first ``limit`` characters, their lines as they are, a
    fence longer than any run of backticks in them, so that nothing in them can close the block;
    how many more characters there are said after it (in the block, its emphasis would be text)."""
    more = len(text) - limit
    shown = shown_lines(text[:limit] + "…" if more > 0 else text)
    fence = "```"
    while fence in shown:
        fence += "`"
    block = f"{fence}text\n{shown}\n{fence}"
    return f"{block}\n\n*({more:,} more characters)*" if more > 0 else block


def _blocks_markdown(content: Any) -> list[str]:
    if isinstance(content, str):
        return [_fence(content)] if content else []
    if not isinstance(content, list):
        return []
    out = []
    for block in content:
        btype = get(block, "type")
        if btype == "text":
            text = get(block, "text")
            if isinstance(text, str) and text:
                out.append(_fence(text))
        elif btype == "thinking":
            text = get(block, "thinking")
            redacted = get(block, "redacted") is True
            body = (
                "(redacted)"
                if redacted
                else markdown_plain(one_line(text if isinstance(text, str) else "", 400))
            )
            out.append(f"> *thinking:* {body}")
        elif btype == "toolCall":
            out.append(
                f"**tool call** {_code(get(block, 'name'))} {_code(get(block, 'id'))}\n\n"
                + _fence(_arguments_text(get(block, "arguments")), ARGS_LIMIT)
            )
        elif btype == "image":
            data = get(block, "data")
            size = human_size(len(data) * 3 // 4) if isinstance(data, str) else "?"
            out.append(f"**image** {_code(get(block, 'mimeType'))}, {size}")
        else:
            out.append(f"*{markdown_plain(js_string_of(btype, 80))} block*")
    return out


def _arguments_text(args: Any) -> str:
    """A tool call's arguments laid out as JSON."""
    if args is ABSENT:
        return ""
    try:
        return json.dumps(args, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return ""
    except RecursionError:  # nested deeper than json's encoder goes: the iterative one
        return dumps_pretty(args, 2, READABLE_DEPTH)


def _preview(info: LineInfo, value: Any) -> str:
    if info.etype == "message":
        message = get(value, "message")
        if info.role == "bashExecution":
            return _fence(
                f"$ {js_string_of(get(message, 'command'))}\n{js_string_of(get(message, 'output'))}"
            )
        return "\n\n".join(_blocks_markdown(get(message, "content")))
    if info.etype == "custom_message":
        return "\n\n".join(_blocks_markdown(get(value, "content")))
    if info.etype in ("compaction", "branch_summary"):
        summary = get(value, "summary")
        return _fence(summary) if isinstance(summary, str) else ""
    if info.etype == "context_edit":
        return "\n\n".join(_blocks_markdown(get(get(value, "replacement"), "content")))
    if info.etype == "session_info":
        return f"**name** {_code(get(value, 'name'))}"
    return ""


def summary_markdown(doc: SessionDocument, target: LineInfo) -> str:
    """A few lines about an entry that something refers to."""
    when = _time(target.timestamp)
    out = [
        f"**→ {_title(target, bold_role=False)}** {_entry_name(doc, target)} · line {doc.line_number(target.line)}"
        + (f" · {when}" if when else ""),
        markdown_plain(quick_preview(target, 160)),
    ]
    label = current_label(doc, target)
    if label:
        out.append(f"label {_code(label)}")
    return "\n\n".join(out)


#: what pi's migration makes of a key of a version 1 entry naming another (:func:`.links.migrated_key`)
_MIGRATED = {
    links.BY_PREVIOUS_ENTRY: "pi's migration replaces this parentId with the previous entry's id",
    links.BY_KEPT_INDEX: "pi's migration replaces this firstKeptEntryId with the id firstKeptEntryIndex names",
    links.AS_WRITTEN: "**names no entry**: pi's migration keeps this {key} but gives every entry a new id",
}
#: what follows :data:`_MIGRATED` when the key names no entry after the migration
_MIGRATED_TO_NONE = {
    links.BY_PREVIOUS_ENTRY: " (none: the first entry is a root)",
    links.BY_KEPT_INDEX: " (none: it names no entry before the compaction)",
}


def _migrated_hover(doc: SessionDocument, ref: Reference, migrated: str, targets: list[Target]) -> str:
    """On a key of a version 1 entry naming another (``targets``: what it names once migrated):
    what pi's migration makes of it (:func:`.links.migrated_key`), and the entry it names then."""
    note = f"{_code(ref.field)} {_code(ref.value)}: {_MIGRATED[migrated].format(key=ref.field)}"
    if not targets:
        note += _MIGRATED_TO_NONE.get(migrated, "")
    return "\n\n---\n\n".join([note, *(summary_markdown(doc, t.info) for t in targets)])


def _reference_hover(doc: SessionDocument, ref: Reference) -> str:
    if ref.kind == "toolCall":
        # on a tool call's own id: its results
        results = doc.tree.results_by_call.get(ref.value, []) if isinstance(ref.value, str) else []
        if not results:
            return f"tool call {_code(ref.value)}: **no tool result** answers it"
        return "\n\n".join(summary_markdown(doc, r) for r in results[:5])
    targets = ref.targets(doc)
    migrated = links.migrated_key(doc, ref.info, ref.field) if ref.kind == "entry" else None
    if migrated is not None:
        return _migrated_hover(doc, ref, migrated, targets)
    if not targets:
        if ref.field == "fromId" and ref.value == "root":
            return "`root`: the branch was left from before the first entry"
        if ref.field == "fromId" and is_forked(doc):
            return (
                f"`fromId` {_code(ref.value)}: no entry in this file has this id: the session was forked "
                "from another one, and the branch left here stayed there"
            )
        if ref.field == "parentId" and not truthy(ref.value):
            return f"`parentId` {_code(ref.value)}: **no parent**: this entry is a root, where a conversation starts"
        if ref.field == "firstKeptEntryId" and ref.value is None:
            # pi 0.86.1's "keep nothing" (docs/DIAGNOSTICS.md, PI034)
            return "`firstKeptEntryId` `null`: the compaction **keeps nothing** from before it"
        if ref.kind == "position":
            return (
                f"{_code(ref.field)} {_code(ref.value)}: **names no entry**: {_no_entry_at(doc, ref.value)}"
            )
        return f"{_code(ref.field)} {_code(ref.value)}: **no entry has this id**"
    return "\n\n---\n\n".join(summary_markdown(doc, t.info) for t in targets[:5])
