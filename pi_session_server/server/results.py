"""Results and notifications of the pi/* methods as msgspec structures: what the wire promises.

These structures are the contract, not the encoder: handlers keep answering the reference's values as
JSON builtins (or ``msgspec.Raw`` pages), written by ``wire.encode_result``, and ``protocol_doc.py``
turns these structures (with those of ``params.py``) into ``protocol/pi-session.openrpc.json`` and
``editors/vscode/src/protocol.ts``. The end-to-end tests validate every reply against that document.

A field left out of a reply (JS ``undefined``) is ``UNSET`` here; ``Any`` is a value pi stores as
given (an entry's id, a label, a message), which a damaged file may hold with any type. Entries and
messages are pi's own JSON: only the members every reader relies on are named, the rest stays open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_session_server.session.storage import UNREADABLE_AFTER

from . import errors as E
from .params import Count

#: an entry's place in the file
Line = Annotated[
    int,
    Meta(
        ge=0,
        description='0-based line of the entry in the file, as pi numbers them (lines end at "\\n" only; '
        "pi/getLineBreaks tells an editor that also ends a line at a lone CR how it numbers them)",
    ),
]
EntryId = Annotated[Any, Meta(description="The entry's id (null when the entry has none).")]
OwnParentId = Annotated[Any, Meta(description="The entry's own parentId (absent when the line has none).")]
Messages = Annotated[list[Any], Meta(description="pi's messages, as the reference builds them")]


class Result(msgspec.Struct, rename="camel", kw_only=True):
    """Base of the result structures: camelCase members, as pi writes them."""


class PiObject(Result, kw_only=True):
    """Base of pi's own JSON objects (entries, the header): the members named are those readers rely
    on, and the object holds any other (the document says so: ``additionalProperties``)."""


@dataclass(frozen=True)
class OneOf:
    """A result that is one of several structures without a member telling which (msgspec has no
    schema for such a union): documented as the ``anyOf`` of theirs."""

    types: tuple[Any, ...]
    description: str = ""


# --- sessions ------------------------------------------------------------------------------


class Entry(PiObject, kw_only=True):
    """A session entry exactly as stored in the file (one JSON line), keys in the file's order
    (integer-like keys first, as JavaScript orders them). pi never validates what it reads, so any
    field may have any type; session-line.schema.json describes what pi writes."""

    type: Any = UNSET
    id: Any = UNSET
    parent_id: Any = UNSET
    timestamp: Any = UNSET


class Header(PiObject, kw_only=True):
    """The session header line (type "session"), every key it has."""

    type: Literal["session"]
    version: Any = UNSET
    id: Any = UNSET
    timestamp: Any = UNSET
    cwd: Any = UNSET
    parent_session: Any = UNSET


class SkippedLine(Result, kw_only=True):
    """A line pi skips when it reads the file."""

    line: Annotated[int, Meta(ge=0, description="0-based line in the file")]
    column: Annotated[int, Meta(ge=0, description="0-based character where it goes wrong")]
    kind: Literal["malformed", "glued", "falsy", "non_object"]
    message: Annotated[str, Meta(description="why, in words (for lines glued together: the entries lost)")]


class SessionHandleInfo(Result, kw_only=True):
    """What the opening methods return: the handle and the session it holds."""

    session: Annotated[str, Meta(description="The handle for later requests.")]
    uri: Annotated[str, Meta(description="file: URI of the session file, when there is one.")] | UnsetType = (
        UNSET
    )
    session_id: Annotated[Any, Meta(description="getSessionId() (a string for everything pi writes).")]
    session_file: Annotated[str, Meta(description="getSessionFile(); absent in memory.")] | UnsetType = UNSET
    session_dir: str
    cwd: str
    is_persisted: bool
    uses_default_session_dir: bool
    leaf_id: Annotated[
        Any,
        Meta(description="getLeafId(): an id, null (before the first entry / after resetLeaf), or absent."),
    ] = UNSET
    header: Header | None
    entry_count: Annotated[int, Meta(ge=0, description="getEntries().length")]
    session_name: str | UnsetType = UNSET
    read_only: Annotated[
        bool,
        Meta(
            description="true for a file opened through `uri` that needs a write when opened "
            "(migration, newline repair): it is held in memory until the first writing method."
        ),
    ]
    pi_version: Annotated[
        str,
        Meta(
            description="The pi release this session behaves like (the opening method's `pi`, else "
            "the server's: `serve --pi`, initializationOptions.piVersion; default 1.6.0)."
        ),
    ]
    skipped_lines: Annotated[
        int,
        Meta(
            ge=0,
            description="Lines of the file pi skips as it reads it (invalid JSON, lines glued together by "
            "a crash, values that are not objects): their entries are not in the session. Not pi's: pi "
            "skips them silently.",
        ),
    ]
    skipped: (
        Annotated[
            list[SkippedLine],
            Meta(
                max_length=20,
                description="The first of those lines (absent when there are none); the language server's "
                "diagnostics and `pi-session check` give all of them.",
            ),
        ]
        | UnsetType
    ) = UNSET
    result: Annotated[
        Any, Meta(description="createBranchedSession/newSession: the method's own return value.")
    ] = UNSET


class CloseResult(Result, kw_only=True):
    session: str
    closed: Literal[True]


class DeleteResult(Result, kw_only=True):
    path: str
    trashed: bool
    closed_sessions: list[str]


# --- listing -------------------------------------------------------------------------------


class ListedSession(Result, kw_only=True):
    """SessionInfo of list/listAll, as JSON.stringify shows it (dates as ISO strings, null when invalid)."""

    path: str
    id: Any = UNSET
    cwd: str
    name: str | UnsetType = UNSET
    parent_session_path: Any = UNSET
    created: str | None
    modified: str | None
    message_count: int
    first_message: Annotated[str, Meta(description='absent with `text: "none"`')] | UnsetType = UNSET
    all_messages_text: (
        Annotated[str, Meta(description='absent with `text: "first"` or `"none"`')] | UnsetType
    ) = UNSET
    text_truncated: (
        Annotated[
            Literal[True], Meta(description="present when `maxTextChars` cut firstMessage or allMessagesText")
        ]
        | UnsetType
    ) = UNSET


class SessionsPage(Result, kw_only=True):
    """pi/list, pi/listAll with `offset` or `limit`: one page of the newest-first list."""

    sessions: list[ListedSession]
    total: Annotated[int, Meta(ge=0, description="how many sessions the whole list holds")]
    has_more: Annotated[bool, Meta(description="true when sessions follow this page")]
    next_offset: (
        Annotated[int, Meta(ge=0, description="`offset` of the next page (when hasMore)")] | UnsetType
    ) = UNSET


Listing = Annotated[
    list[ListedSession] | SessionsPage,
    Meta(description="The reference's array, newest first; with `offset` or `limit` a SessionsPage."),
]


# --- writing -------------------------------------------------------------------------------


class AppendResult(Result, kw_only=True):
    id: Annotated[Any, Meta(description="The new entry's id (what the reference's appender returns).")]
    leaf_id: Annotated[Any, Meta(description="The leaf after the append (the new entry).")] = UNSET
    entry: (
        Annotated[Entry, Meta(description='kind "usage" only: appendUsage returns the entry.')] | UnsetType
    ) = UNSET


class BranchResult(Result, kw_only=True):
    leaf_id: Any = UNSET


class ResetLeafResult(Result, kw_only=True):
    leaf_id: None


# --- reading -------------------------------------------------------------------------------


class LeafResult(Result, kw_only=True):
    leaf_id: Annotated[Any, Meta(description="getLeafId(); absent when the leaf is undefined.")] = UNSET
    entry: Entry | None


class EntriesPage(Result, kw_only=True):
    entries: list[Entry]
    total: Annotated[int, Meta(description="getEntries().length")]
    has_more: Annotated[bool, Meta(description="true when `limit` cut the page short")]


class ContextModel(Result, kw_only=True):
    provider: Any = UNSET
    model_id: Any = UNSET


class Context(Result, kw_only=True):
    """buildSessionContext(): {messages, thinkingLevel, model}."""

    messages: Messages
    thinking_level: Any = UNSET
    model: ContextModel | None


class ProjectionEntry(Result, kw_only=True):
    source_entry: Annotated[Entry, Meta(description="the context entry, as stored")]
    messages: Annotated[list[Any], Meta(description="the messages it contributes")]


class Projection(Result, kw_only=True):
    """pi 1.6.0's buildSessionProjection(): the context's messages, and per context entry the
    messages it contributes (the latest valid context_edit of the entry applied: none when it omits
    the entry). Under pi 0.86.1 the same shape shows 0.86.1's context (no edits)."""

    entries: list[ProjectionEntry]
    messages: Messages
    thinking_level: Any = UNSET
    model: ContextModel | None


class ContextMarkdown(Result, kw_only=True):
    """pi/buildSessionContext with `format: "markdown"`: the context as a Markdown document to show
    as it is (the one the CLI's `pi-session context` prints): a title naming the file and the entry,
    the model, thinking level and message count, then a section per message (JSON in it laid out
    down to 32 levels, deeper containers on one line)."""

    markdown: str


SessionContext = OneOf((Context, ContextMarkdown))


class TreeNode(Result, kw_only=True):
    """One node of pi/getTree's flat or nested form."""

    id: EntryId
    parent_id: OwnParentId = UNSET
    visible_parent_id: Annotated[
        Any, Meta(description="Id of the nearest ancestor shown in this result (null for roots).")
    ]
    child_ids: (
        Annotated[
            list[Any],
            Meta(
                description="flat form: ids of the node's shown children (also those on other pages or "
                "below `depth`: ask for them with `offset` or `rootId`)"
            ),
        ]
        | UnsetType
    ) = UNSET
    children: Annotated[list[TreeNode], Meta(description="nested form")] | UnsetType = UNSET
    type: Any = UNSET
    role: Any = UNSET
    label: Any = UNSET
    label_timestamp: Any = UNSET
    preview: (
        Annotated[
            str,
            Meta(
                description="What pi's /tree shows for the entry (no colours; half of a surrogate pair cut "
                "by its 200-unit limit, or a lone surrogate in the data, is U+FFFD, as pi's terminal "
                "prints it)."
            ),
        ]
        | UnsetType
    ) = UNSET
    timestamp: Any = UNSET
    line: Line | UnsetType = UNSET
    depth: Count
    is_leaf: bool
    on_leaf_path: bool
    is_branch_point: Annotated[bool, Meta(description="more than one child shown")]
    children_omitted: (
        Annotated[
            Literal[True],
            Meta(
                description="nested form with `depth`: the node has shown children below the depth, left out"
            ),
        ]
        | UnsetType
    ) = UNSET


class LineEntry(Result, kw_only=True):
    """The entry on a line of the file, as a node of pi/getTree shows it (without the filter's fields
    and the preview): no message body is read or sent."""

    id: EntryId
    parent_id: OwnParentId = UNSET
    type: Any = UNSET
    role: Any = UNSET
    label: Any = UNSET
    label_timestamp: Any = UNSET
    timestamp: Any = UNSET
    line: Line
    is_leaf: bool


class LoneCarriageReturnLine(Result, kw_only=True):
    line: Annotated[int, Meta(ge=0, description="0-based line of the file, as pi numbers them")]
    count: Annotated[int, Meta(ge=1, description="the lone CRs in it: each starts a line in the editor")]


class LineBreaks(Result, kw_only=True):
    """Where an editor that ends a line at a lone CR (as the LSP and VS Code do; Neovim does not)
    numbers the session file's lines otherwise than pi: pi's line N starts at the editor's line N
    plus the counts of the lines before it, and each of its own lone CRs starts one more."""

    lone_carriage_returns: Annotated[
        list[LoneCarriageReturnLine],
        Meta(
            description="the lines holding a lone CR (a CR not followed by LF), in file order; none in a file pi wrote"
        ),
    ]


# a window's revision (TreeWindow, TreeLevels)
TreeRevision = Annotated[
    str,
    Meta(
        description="with `offset`/`limit`, `aroundId` or `levels`: the session's revision this reply was "
        "cut from (an opaque token): send it with the next pages of the tree (`revision`), so that a "
        "page of a session that changed meanwhile is refused (TreeChanged, -32015) instead of mixing "
        "two trees"
    ),
]


class TreeView(Result, kw_only=True):
    """pi/getTree's flat or nested form: the nodes, and with `offset`/`limit` or `aroundId` the page's place."""

    leaf_id: Any
    nodes: list[TreeNode]
    total: (
        Annotated[
            int,
            Meta(ge=0, description="with `offset`/`limit`: how many nodes the whole (filtered) result holds"),
        ]
        | UnsetType
    ) = UNSET
    has_more: (
        Annotated[bool, Meta(description="with `offset`/`limit`: true when nodes follow this page")]
        | UnsetType
    ) = UNSET
    next_offset: (
        Annotated[
            int, Meta(ge=0, description="with `offset`/`limit`: `offset` of the next page (when hasMore)")
        ]
        | UnsetType
    ) = UNSET
    offset: (
        Annotated[
            int,
            Meta(ge=0, description="with `aroundId`: where this page starts in the whole (filtered) result"),
        ]
        | UnsetType
    ) = UNSET
    around_index: (
        Annotated[
            Count | None,
            Meta(
                description="with `aroundId`: where the row on the path to that entry is in the whole result "
                "(the entry's own row, or its deepest shown ancestor's); null when no row is on it"
            ),
        ]
        | UnsetType
    ) = UNSET
    revision: TreeRevision | UnsetType = UNSET


class TreeLevel(Result, kw_only=True):
    """One list of the layout: `top` (the window {chain}: the root's chain, or the roots when there
    are several), `branches` ({rootId: a branch point, depth: 1}: its own row first, then its
    branches) or `chain` ({rootId: a branch's second entry, chain}); the list under the path's row of
    the level above. Its rows are the page around the path's row."""

    kind: Literal["top", "branches", "chain"]
    root_id: Any = UNSET
    chain: Literal[True] | UnsetType = UNSET
    depth: Literal[1] | UnsetType = UNSET
    nodes: list[TreeNode]
    total: Count
    has_more: bool
    next_offset: Count | UnsetType = UNSET
    offset: Count
    around_index: Count | None


class TreeLevels(Result, kw_only=True):
    """pi/getTree with `levels`: the lists of pi's /tree layout from the top down to `aroundId`, each
    the reply of its window with `aroundId`."""

    leaf_id: Any
    levels: list[TreeLevel]
    complete: Annotated[
        bool,
        Meta(
            description="false when the levels stop short of the entry: there were more than one reply "
            f"holds ({E.MAX_TREE_NODES // 2:,}); ask on with `rootId` windows from the last one"
        ),
    ]
    revision: TreeRevision | UnsetType = UNSET
    kept_levels: (
        Annotated[
            int,
            Meta(
                ge=0,
                description="with `since`: how many levels, from the top, are those of the reply of that "
                "revision (the same rows, totals and path, but the labels of `relabelled` rows) and are "
                "left out; `levels` holds the ones after them, which replace the client's (a row it "
                "holds of the same entry keeps the lists opened under it, wherever it moved)",
            ),
        ]
        | UnsetType
    ) = UNSET
    relabelled: (
        Annotated[
            list[RelabelledRow],
            Meta(
                description="with `since`: the older entries whose label changed since that revision, "
                "wherever the client holds their rows (also outside the levels)"
            ),
        ]
        | UnsetType
    ) = UNSET
    left_leaf_path: (
        Annotated[
            list[Any],
            Meta(
                description="with `since`, after a move of the leaf (pi/branch, pi/resetLeaf, pi's "
                "/tree, with a turn there or not): the ids of the older rows no longer on the leaf's "
                "path (`onLeafPath` and `isLeaf` false now), wherever the client holds them"
            ),
        ]
        | UnsetType
    ) = UNSET
    joined_leaf_path: (
        Annotated[
            list[Any],
            Meta(
                description="with `since`, after a move of the leaf: the ids of the older rows now on "
                "the leaf's path (`onLeafPath` true), wherever the client holds them"
            ),
        ]
        | UnsetType
    ) = UNSET
    stale_lists: (
        Annotated[
            list[Any],
            Meta(
                description="with `since`: the ids of the rows whose list (the chain or branches under "
                "the row) holds rows that changed otherwise (a row a label or the branch showed or hid, "
                "branches in another order): drop what is held of each list and the lists opened in it, "
                "before taking in `levels` (load it anew when it is shown). No level kept is among them"
            ),
        ]
        | UnsetType
    ) = UNSET


class RelabelledRow(Result, kw_only=True):
    """An older entry's row whose label changed: its `label` and `labelTimestamp` now (left out: none)."""

    id: EntryId
    label: Any = UNSET
    label_timestamp: Any = UNSET


class TreeReload(Result, kw_only=True):
    """pi/getTree `levels` with `since`: the session changed otherwise than by entries appended below
    an older entry or a move of its leaf (a rewrite, a repair, a reload, an append while there is
    no leaf), or the server no longer knows that revision: load the tree anew."""

    reload: Literal[True]
    revision: TreeRevision


class ReferenceTreeNode(Result, kw_only=True):
    """getTree() of the reference: {entry, children, label?, labelTimestamp?}."""

    entry: Entry
    children: list[ReferenceTreeNode]
    label: Any = UNSET
    label_timestamp: Any = UNSET


SessionTree = OneOf(
    (TreeView, TreeLevels, TreeReload, list[ReferenceTreeNode]),
    "form flat/nested: a TreeView (with `levels`: TreeLevels; with `since` too, TreeLevels of what changed "
    "or TreeReload); form reference: getTree() itself (array of ReferenceTreeNode).",
)


class PathItem(Result, kw_only=True):
    """One entry of pi/getPath: the entry and what a branch switcher needs."""

    entry: Entry
    child_ids: Annotated[list[Any], Meta(description="ids of the entry's children, oldest first")]
    sibling_ids: (
        Annotated[
            list[Any],
            Meta(
                description="ids of its parent's children (the roots for the first entry), oldest first; "
                "only where there are several"
            ),
        ]
        | UnsetType
    ) = UNSET
    label: Any = UNSET
    label_timestamp: Any = UNSET
    line: Line | UnsetType = UNSET


class PathPage(Result, kw_only=True):
    """pi/getPath: one page of the path from the root to an entry."""

    leaf_id: Annotated[Any, Meta(description="The session's leaf (null when it has none).")]
    end_id: Annotated[Any, Meta(description="Id of the path's last entry (null for an empty path).")]
    total: Annotated[int, Meta(ge=0, description="entries on the whole path")]
    offset: Annotated[int, Meta(ge=0, description="where this page starts")]
    has_more: bool
    next_offset: Annotated[int, Meta(ge=0, description="when hasMore")] | UnsetType = UNSET
    items: Annotated[list[PathItem], Meta(description="root first")]


class TokenTotals(Result, kw_only=True):
    """Sums of the usage pi's getSessionStats() adds: of assistant messages, tool results, usage
    entries, branch summaries and compactions (a value that is not a finite number counts 0)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total_tokens: Annotated[
        float, Meta(description="sum of the totalTokens recorded (older pi releases recorded none)")
    ]
    total: Annotated[float, Meta(description="pi's tokens.total: input + output + cacheRead + cacheWrite")]


class ModelTotals(Result, kw_only=True):
    """The assistant messages of one provider/model."""

    turns: Count
    total_tokens: float
    cost: float


class SessionStats(Result, kw_only=True):
    """Totals of the whole session (every branch)."""

    entry_count: Count
    types: Annotated[
        dict[str, int], Meta(description='entries by type ("(other)": a type that is not a string)')
    ]
    roles: Annotated[
        dict[str, int], Meta(description='message entries by role ("(other)": a role that is not a string)')
    ]
    branch_points: Annotated[int, Meta(ge=0, description="entries with several children")]
    leaves: Annotated[int, Meta(ge=0, description="entries without children")]
    tokens: TokenTotals
    cost: Annotated[float, Meta(description="sum of usage.cost.total")]
    models: Annotated[
        dict[str, ModelTotals],
        Meta(description='per "provider/model" ("(unknown)" when neither is a string)'),
    ]
    first_timestamp: str | UnsetType = UNSET
    last_timestamp: str | UnsetType = UNSET


# --- notifications (server -> client) ------------------------------------------------------


class DidChangeParams(Result, kw_only=True):
    session: str
    uri: str | None
    kind: Annotated[
        Literal["appended", "reloaded", "rewriting", "unreadable", "deleted", "leafMoved"],
        Meta(
            description="appended: new lines at the end (newEntryIds), pi's and also an entry a request "
            "appended (pi/append, pi/appendContextEdit), told before its answer so that every view of the "
            "session takes it in, not only the one that asked (once: not again when the file is found grown by "
            "it); whole lines another process "
            "appended right before an append of ours (told by pi/foreignWriter) come before ours in "
            "the session as in the file and are told with it before its answer; reloaded: the file was truncated, replaced or rewritten (also in "
            "place, keeping its size) and read again, or another process wrote to it right before an append "
            "of ours what an append cannot tell (a line cut short or not an entry, a header, an id the session "
            "has, bytes written while ours were) and it was read again whole, told before that append's "
            "answer (our entry is in what a refetch finds); either way the session is "
            "what a fresh open gives; also a request left the handle on another file or a new session "
            "(pi/createBranchedSession, pi/newSession, pi/setSessionFile), told before its answer with the "
            "uri of what it shows now and newEntryIds empty: its views load it anew; rewriting: another "
            "program is writing the file again (it is empty or has no header yet), told once when the "
            "server first finds it so: the session stays as it was, nothing is lost or an error; "
            "reloaded follows once the file has a header again (read it again then), or unreadable; "
            f"unreadable: the file has held still for {UNREADABLE_AFTER:g} seconds without a session header (empty, other "
            "text, a header behind a byte order mark: pi cannot read it either): it is not a session now; "
            "the session stays as it was in memory (an append goes on a line of its own after the other "
            "text, as pi's would, and is reported as pi/foreignWriter), and reloaded follows if a header comes back; a change that still leaves no "
            "header is told as rewriting again; deleted: the file is gone (the session stays in memory); "
            "leafMoved: a request moved the session's leaf (pi/branch, pi/resetLeaf, pi/branchWithSummary), "
            "told before its answer, so that every view of the session follows it, not only the one that "
            "asked: leafId is the leaf now (null: before the first entry), newEntryIds is empty (the entry "
            "pi/branchWithSummary wrote is the leaf: it is not told as appended too)"
        ),
    ]
    new_entry_ids: Annotated[list[Any], Meta(description="ids of the entries that are new (file order)")]
    leaf_id: Annotated[Any, Meta(description="The leaf after the change (absent when undefined).")] = UNSET


class ForeignWriterParams(Result, kw_only=True):
    session: str
    uri: str | UnsetType | None = UNSET
    path: str
    message: str
    expected_size: Annotated[int | None, Meta(description="where our last write ended")] | UnsetType = UNSET
    found_size: Annotated[int | None, Meta(description="the size we found before writing")] | UnsetType = (
        UNSET
    )


class LargeFileParams(Result, kw_only=True):
    """A document the editor did not send (too large for it): language features work from the file on disk."""

    uri: str
    size: Annotated[int, Meta(ge=0, description="the file's size in bytes")]
    message: Annotated[str, Meta(description="what to tell the user")]
