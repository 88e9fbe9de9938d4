"""The wire contract in ``protocol/``, generated from the code that implements it.

``python -m pi_session_server.server.protocol_doc protocol/`` writes ``pi-session.openrpc.json``
(every method: params, result, errors; every notification; the error codes) and, next to the VS Code
client, ``editors/vscode/src/protocol.ts`` (the same types in TypeScript, see ``protocol_ts.py``).
Every schema comes from msgspec structures: params from those the server validates with
(``params.py``), results and notifications from ``results.py``; this module lists the methods and
adds what msgspec cannot say. ``tests/unit/test_protocol_contract.py`` fails when the committed files
and this generator disagree, or when the server registers a method that is not documented (or the
reverse), and the end-to-end tests validate every reply against these schemas.

``protocol/session-line.schema.json`` (the JSON Schema of session lines) is written by hand.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from pi_session_server import __version__
from pi_session_server.session.listing_store import KEPT_FIRST_CHARS

from . import errors as E
from . import params as P
from . import results as R
from .locations import MAX_PATH_CHARS, MAX_URI_CHARS
from .pending_deletes import LOOK_LIMIT_SECONDS
from .protocol_ts import typescript

REF = "#/components/schemas/"
#: where the VS Code client's copy of the types lives, from the directory that holds ``protocol/``
TYPESCRIPT_PATH = Path("editors", "vscode", "src", "protocol.ts")


# --- methods -----------------------------------------------------------------------------------

# errors every method addressed by session/uri can answer (a uri may name a FIFO: PathRefused)
SESSION_ERRORS = [
    E.UNKNOWN_SESSION,
    E.INVALID_SESSION_FILE,
    E.FS_ERROR,
    E.SESSION_ERROR,
    E.PATH_REFUSED,
    E.REQUEST_CANCELLED,
]
# ...and those that write: a session opened by uri to look at may refuse to be rewritten
WRITE_ERRORS = [*SESSION_ERRORS, E.READ_ONLY]
# ...and those that append an entry to the session's file, which another may have replaced (D24)
APPEND_ERRORS = [*WRITE_ERRORS, E.FILE_REPLACED]
OPEN_ERRORS = [
    E.INVALID_SESSION_FILE,
    E.INVALID_SESSION_ID,
    E.FS_ERROR,
    E.SESSION_ERROR,
    E.PATH_REFUSED,
    E.REQUEST_CANCELLED,
]


@dataclass
class Method:
    name: str
    summary: str
    params: Any  # a params struct, or a union of them (pi/append)
    result: Any  # the type of the result (structs of results.py, builtins, unions of them)
    errors: list[int] = field(default_factory=list)
    reference: str = ""


# the methods that answer whole entries the request does not bound
_REPLY_BOUND = (
    f"A reply that would hold more than {E.MAX_REPLY_BYTES / 2**20:g} MiB of entries (estimated from their lines "
    "before anything is sent) is refused with TooLarge (-32011, data {bytes, max}); the message says what "
    "to ask instead (the path in pages: pi/getPath with `offset` and `limit`)."
)


# the listings, whose text the request bounds only when it asks to
_LISTING_KEPT = (
    " Every session file is read, except that a listing with `text` `none`, or `first` with `maxTextChars` "
    f"at most {KEPT_FIRST_CHARS}, keeps what it read of each file of the index's size beside its index, "
    "used again while the file stays unchanged."
)
_LISTING_BOUND = (
    f" A reply that would hold more than {E.MAX_REPLY_BYTES / 2**20:g} MiB (estimated from the length of the "
    "text held) is refused with TooLarge (-32011, data {bytes, max}); the message says what to ask instead "
    "(`text`, `maxTextChars`, or pages)."
)


def _entries(description: str) -> Any:
    """A list of entries, described."""
    return Annotated[list[R.Entry], msgspec.Meta(description=description)]


METHODS: list[Method] = [
    Method(
        "pi/open",
        "SessionManager.open(path, sessionDir?, cwdOverride?): load a session file (or bind a new "
        "session to a missing path).",
        P.OpenParams,
        R.SessionHandleInfo,
        OPEN_ERRORS,
        "open",
    ),
    Method(
        "pi/create",
        "SessionManager.create(cwd, sessionDir?, options?): a new persisted session (written with "
        "the first assistant message).",
        P.CreateParams,
        R.SessionHandleInfo,
        OPEN_ERRORS,
        "create",
    ),
    Method(
        "pi/continueRecent",
        "SessionManager.continueRecent(cwd, sessionDir?): the most recent session of the "
        "directory, or a new one.",
        P.ContinueRecentParams,
        R.SessionHandleInfo,
        OPEN_ERRORS,
        "continueRecent",
    ),
    Method(
        "pi/inMemory",
        "SessionManager.inMemory(cwd?, options?, entries?): a session held in memory, with no file (until "
        "pi/setSessionFile points it at one; pi's load then ends a cut-short last line with a newline).",
        P.InMemoryParams,
        R.SessionHandleInfo,
        OPEN_ERRORS,
        "inMemory",
    ),
    Method(
        "pi/forkFrom",
        "SessionManager.forkFrom(sourcePath, targetCwd, sessionDir?, options?): copy a session "
        "into a new file.",
        P.ForkFromParams,
        R.SessionHandleInfo,
        [*OPEN_ERRORS, E.FORK_ERROR],
        "forkFrom",
    ),
    Method(
        "pi/close",
        "Forget a handle (the file is left as it is).",
        P.CloseParams,
        R.CloseResult,
        [E.UNKNOWN_SESSION],
    ),
    Method(
        "pi/sessions",
        "The sessions this sidecar holds (handle info of each).",
        P.Params,
        list[R.SessionHandleInfo],
        [E.REQUEST_CANCELLED],
    ),
    Method(
        "pi/getInfo",
        "Handle info of one session (ids, file, leaf, header, entry count, name).",
        P.SessionParams,
        R.SessionHandleInfo,
        SESSION_ERRORS,
    ),
    Method(
        "pi/list",
        "SessionManager.list(cwd, sessionDir?): sessions of one project, newest first. Reports "
        "work-done progress. `text`/`maxTextChars` bound the text held and sent, "
        "`offset`/`limit` page the reply." + _LISTING_KEPT + _LISTING_BOUND,
        P.ListParams,
        R.Listing,
        [E.ABORTED, E.FS_ERROR, E.SESSION_ERROR, E.TOO_LARGE, E.REQUEST_CANCELLED],
        "list",
    ),
    Method(
        "pi/listAll",
        "SessionManager.listAll(sessionDir?): sessions of every project (or of one directory), "
        "newest first. Reports work-done progress. `text`/`maxTextChars` bound the text held and sent, "
        "`offset`/`limit` page the reply." + _LISTING_KEPT + _LISTING_BOUND,
        P.ListAllParams,
        R.Listing,
        [E.ABORTED, E.SESSION_ERROR, E.TOO_LARGE, E.REQUEST_CANCELLED],
        "listAll",
    ),
    Method(
        "pi/findById",
        "SessionManager.findById(cwd, id, sessionDir?): the path of the session file with that id, or null.",
        P.FindByIdParams,
        str | None,
        [E.FS_ERROR, E.SESSION_ERROR, E.REQUEST_CANCELLED],
        "findById",
    ),
    Method(
        "pi/delete",
        "Delete a session file as pi's /resume does: to the trash (permanent only with "
        "`permanent: true`); refuses files that are not pi sessions (then no handle is closed); closes handles "
        "on the file (however the delete spells it), each once the requests sent on it before the delete are "
        "done, and deletes the file after them (a symlink: the link, and the handles opened through it). "
        "Requests sent after the delete and before its reply on those handles, or by a `uri` that names the "
        "file one of them holds (however it spells it: a request by `uri` uses the handle held on the file), "
        "write nothing: they answer UnknownSession (-32001, `data.session` the handle closed); pi/close of such "
        "a handle answers `closed`. Every other request on the file sent after the delete (sent after the "
        "reply; pi/open, pi/forkFrom, a listing) starts once the delete answered and finds the file gone "
        "(pi/open: a new session at that path). Until the server knows what file the delete names, every "
        "request on a file or a session waits: a delete whose file the file system does not let the server "
        f"look at within {LOOK_LIMIT_SECONDS:g} s (a stuck network mount) answers FsError (-32005, `data.code` ETIMEDOUT, "
        "`data.syscall` stat), having deleted and closed nothing (it may be sent again), and those requests "
        "go on.",
        P.DeleteParams,
        R.DeleteResult,
        [E.PATH_REFUSED, E.FS_ERROR, E.SESSION_ERROR, E.REQUEST_CANCELLED],
    ),
    Method(
        "pi/append",
        "Every appender, chosen by `kind` (the entry type it writes): message -> appendMessage, "
        "thinking_level_change, model_change, usage (`usageKind` is appendUsage's `kind`), compaction, custom "
        "(appendCustomEntry), custom_message (appendCustomMessageEntry), session_info, label "
        "(appendLabelChange), context_edit (pi 1.6.0's appendContextEdit, as pi/appendContextEdit). A failed "
        "append leaves the session as it was.",
        P.AppendParams,
        R.AppendResult,
        [*APPEND_ERRORS, E.ENTRY_NOT_FOUND, E.CONTEXT_EDIT_REFUSED, E.PI_VERSION],
    ),
    Method(
        "pi/appendContextEdit",
        "pi 1.6.0's appendContextEdit(targetId, replacement): a context_edit entry that omits (`replacement` "
        "null) or replaces the content of an earlier entry on the active branch (a user, assistant or "
        "toolResult message, or a custom_message; a string replaces an assistant's or tool result's "
        "content with one text block). Refused as pi refuses it, in this order, nothing written: a "
        "replacement that is not null or {content: string | array} (ContextEditRefused), an unknown "
        "target (EntryNotFound), a target off the active branch or without editable content "
        "(ContextEditRefused). A session that follows pi 0.86.1, which has no such call: PiVersion (-32013).",
        P.AppendContextEditParams,
        R.AppendResult,
        [*APPEND_ERRORS, E.ENTRY_NOT_FOUND, E.CONTEXT_EDIT_REFUSED, E.PI_VERSION],
        "appendContextEdit",
    ),
    Method(
        "pi/branch",
        "branch(entryId): move the leaf (nothing is written).",
        P.BranchParams,
        R.BranchResult,
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND],
        "branch",
    ),
    Method(
        "pi/resetLeaf",
        "resetLeaf(): the next append starts a new root.",
        P.SessionParams,
        R.ResetLeafResult,
        SESSION_ERRORS,
        "resetLeaf",
    ),
    Method(
        "pi/branchWithSummary",
        "branchWithSummary(branchFromId | null, summary, details?, fromHook?, usage?).",
        P.BranchWithSummaryParams,
        R.AppendResult,
        [*APPEND_ERRORS, E.ENTRY_NOT_FOUND],
        "branchWithSummary",
    ),
    Method(
        "pi/createBranchedSession",
        "createBranchedSession(leafId): the path to leafId becomes a new session "
        "(the handle now holds it; `result` is the new file path).",
        P.CreateBranchedSessionParams,
        R.SessionHandleInfo,
        [*WRITE_ERRORS, E.ENTRY_NOT_FOUND],
        "createBranchedSession",
    ),
    Method(
        "pi/newSession",
        "newSession(options?): the handle starts a new session (`result` is the new file path).",
        P.NewSessionParams,
        R.SessionHandleInfo,
        [*WRITE_ERRORS, E.INVALID_SESSION_ID],
        "newSession",
    ),
    Method(
        "pi/setSessionFile",
        "setSessionFile(path): the handle switches to another file (unchanged on failure).",
        P.SetSessionFileParams,
        R.SessionHandleInfo,
        WRITE_ERRORS,
        "setSessionFile",
    ),
    Method(
        "pi/getTree",
        "getTree() with pi's /tree filter modes. form flat (default): preorder nodes with "
        "childIds, safe for any depth; nested: children inline; reference: the reference's getTree() value "
        "({entry, children, label?, labelTimestamp?}). filter none (default) shows every entry; default, "
        "no-tools, user-only, labeled-only, all are the TUI's modes. `rootId` and `depth` (flat, nested) "
        f"ask for a subtree, `offset` and `limit` (flat) for a page of the preorder, `chain` for one list of "
        f"the /tree layout, `aroundId` for the page around an entry, `levels` for every list down to it. One "
        f"reply holds at most "
        f"{E.MAX_TREE_NODES:,} nodes: a bigger result without `limit` is refused with TooLarge (-32011), "
        "and a larger `limit` gives pages of that size. The reference form, whose nodes hold whole entries, "
        f"is also refused past {E.MAX_REPLY_BYTES / 2**20:g} MiB of entries (data {{bytes, max}}). The pages of one "
        "tree are cut from one walk of it, "
        "which the server keeps while the session and the other params stay the same (it lets it go after "
        "the last page, or after 60 s without a page): ask for them one after another. A window's reply gives "
        "the session's `revision`; the next pages sent with it are refused with TreeChanged (-32015) once the "
        "session changed, instead of joining pages of two trees. A tree view that follows a session pi "
        "writes asks `levels` with `since` (the revision of the levels it holds) for what changed.",
        P.GetTreeParams,
        R.SessionTree,
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND, E.TOO_LARGE, E.TREE_CHANGED],
        "getTree",
    ),
    Method(
        "pi/getBranch",
        "getBranch(fromId?): the path from the root to fromId (default: the leaf). " + _REPLY_BOUND,
        P.GetBranchParams,
        _entries("root first"),
        [*SESSION_ERRORS, E.TOO_LARGE],
        "getBranch",
    ),
    Method(
        "pi/getPath",
        "The path from the root to `entryId` (default: the leaf) as a session viewer shows it, a page at "
        f"a time: `offset`, `limit` (at most {1000:,}; a page also ends once its entries' lines hold about "
        "4 MB). Each item is the entry with its childIds and, where its parent has several children, "
        "siblingIds. `descend` continues the path below the entry to a leaf (through the child on the way "
        "to the session's leaf, else the newest one): the path through another branch. The path is kept "
        "while the session stays the same, so the pages of one path are cut from one walk.",
        P.GetPathParams,
        R.PathPage,
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND],
    ),
    Method(
        "pi/getStats",
        "Totals of the whole session for a viewer: entries by type and role, branch points, leaves, the "
        "assistant messages' tokens and cost (by model), first and last timestamps. Kept per session: "
        "after an append only the new entries are read.",
        P.SessionParams,
        R.SessionStats,
        SESSION_ERRORS,
    ),
    Method(
        "pi/getChildren",
        "getChildren(parentId): entries whose parentId is parentId (null: the roots). " + _REPLY_BOUND,
        P.GetChildrenParams,
        _entries("index order"),
        [*SESSION_ERRORS, E.TOO_LARGE],
        "getChildren",
    ),
    Method(
        "pi/getEntry",
        "getEntry(id): the entry, or null.",
        P.GetEntryParams,
        R.Entry | None,
        SESSION_ERRORS,
        "getEntry",
    ),
    Method(
        "pi/getEntryAtLine",
        "The entry read from (or appended to) 0-based line `line` of the session file, as a tree node "
        "shows it, or null: the header, a blank or broken line, no such line, or an entry not written "
        "yet. What an editor needs for the entry under the cursor, without reading the tree.",
        P.GetEntryAtLineParams,
        R.LineEntry | None,
        SESSION_ERRORS,
    ),
    Method(
        "pi/getLineBreaks",
        "Where an editor that ends a line at a lone CR (a CR not followed by LF: the LSP and VS Code "
        "do, Neovim does not) numbers the session file's lines otherwise than pi, whose lines end at "
        "LF only: the lines holding lone CRs. Every line the pi/* methods take or give is pi's; such "
        "an editor converts its own with this (pi's line N starts at its line N plus the lone CRs of "
        "the lines before; its lines inside a line with lone CRs are that pi line). Read from the "
        "file on disk (kept while it is unchanged; after an append, only the bytes appended are read); "
        "ask again after pi/didChange.",
        P.SessionParams,
        R.LineBreaks,
        SESSION_ERRORS,
    ),
    Method(
        "pi/getEntries",
        "getEntries() in file order; `offset` (entries to skip) and `limit` page through them (`since`, an "
        "entry id: the entries after its last occurrence, skips entries when ids repeat, as in a damaged "
        "file; not with `offset`). " + _REPLY_BOUND,
        P.GetEntriesParams,
        R.EntriesPage,
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND, E.TOO_LARGE],
        "getEntries",
    ),
    Method(
        "pi/getLeaf",
        "getLeafId() and getLeafEntry().",
        P.SessionParams,
        R.LeafResult,
        SESSION_ERRORS,
        "getLeafId",
    ),
    Method(
        "pi/getLabel",
        "getLabel(id): the label, or null.",
        P.GetLabelParams,
        str | None,
        SESSION_ERRORS,
        "getLabel",
    ),
    Method(
        "pi/getSessionName",
        "getSessionName(): the name, or null.",
        P.SessionParams,
        str | None,
        SESSION_ERRORS,
        "getSessionName",
    ),
    Method(
        "pi/getHeader",
        "getHeader(): the header line, or null.",
        P.SessionParams,
        R.Header | None,
        SESSION_ERRORS,
        "getHeader",
    ),
    Method(
        "pi/buildContextEntries",
        "buildContextEntries() (with `leafId`: as if the leaf were there; null gives []). " + _REPLY_BOUND,
        P.ContextParams,
        _entries("the entries the context is built from"),
        [*SESSION_ERRORS, E.TOO_LARGE],
        "buildContextEntries",
    ),
    Method(
        "pi/buildSessionContext",
        'buildSessionContext() (with `leafId`: the context at that entry; with `format: "markdown"`: the '
        "context rendered for display). " + _REPLY_BOUND,
        P.SessionContextParams,
        R.SessionContext,
        [*SESSION_ERRORS, E.TOO_LARGE],
        "buildSessionContext",
    ),
    Method(
        "pi/buildSessionProjection",
        "pi 1.6.0's buildSessionProjection() (with `leafId`: at that entry): the context, and what each "
        "context entry contributes to it once context edits apply. Also answered for a session that "
        "follows pi 0.86.1, whose context has no edits. " + _REPLY_BOUND,
        P.ContextParams,
        R.Projection,
        [*SESSION_ERRORS, E.TOO_LARGE],
        "buildSessionProjection",
    ),
    Method(
        "pi/getEntryCount",
        "pi 1.6.0's getEntryCount(): the number of distinct entry ids (entryCount of pi/getInfo counts "
        "lines, which differs when ids repeat or are missing). Also answered under pi 0.86.1.",
        P.SessionParams,
        P.Count,
        SESSION_ERRORS,
        "getEntryCount",
    ),
]


@dataclass
class Notification:
    name: str
    summary: str
    params: type[msgspec.Struct]


NOTIFICATIONS = [
    Notification(
        "pi/didChange",
        "server -> client: another process appended to (or rewrote, or deleted) a held session "
        "file, or a request moved a session's leaf; the session already took the change in.",
        R.DidChangeParams,
    ),
    Notification(
        "pi/foreignWriter",
        "server -> client: while appending, the server found bytes it did not write since its "
        "last append (pi or another tool writes the same file).",
        R.ForeignWriterParams,
    ),
    Notification(
        "pi/largeFile",
        "server -> client: the editor did not send an opened document (too large for it); the language "
        "features read and follow the file on disk.",
        R.LargeFileParams,
    ),
]

FIELD_DOCS = {
    "session": "A handle returned by an opening method.",
    "uri": (
        "file:// URI of a session file (its host empty or localhost), read as Node's fileURLToPath reads it "
        "(file://localhost/x is /x). Use "
        "instead of `session`. Opened on demand to look at: nothing is written (no v1/v2 conversion, no newline "
        "repair), and line numbers, problems and ids are the file's. A file that is not there is FsError (-32005, "
        "data.code ENOENT, data.path the file) for a reading method (pi's open would make a new, empty session, "
        "hiding a mistyped or deleted path); a writing method starts a new session there, as pi/open of a "
        "missing path and that write would, but where a pi/delete deleted the file while a session held it: "
        "the write meets that session closed (UnknownSession, -32001, data.session its handle), as it does "
        "when it is sent behind the delete, read before or after the delete answered. A writing method "
        "reopens it for writing, "
        "except a version 1 or 2 file, which writing would convert: ReadOnly (-32012). A FIFO or device is "
        "refused (PathRefused, -32010) without being opened. Held until no request has addressed it for 15 "
        "minutes, then closed (pi/sessions no longer lists its handle, its pi/didChange notifications stop), "
        "unless it was written to or branched or an editor has its file open; the next request by `uri` opens "
        "it again. Hold a session with pi/open to keep it."
    ),
    "workDoneToken": "LSP work-done progress token: the server reports $/progress for long operations.",
    "environment": (
        "The working directory, HOME, PI_CODING_AGENT_DIR and PI_CODING_AGENT_SESSION_DIR pi would read "
        "from its process, for this request: relative paths, `~`, the default cwd, the default session "
        "directories and where pi's command line keeps sessions (`cliSessionDir`). Members left out are "
        "the server's (its own process's at start, or initializationOptions.environment); null for "
        "home, agentDir or sessionDir means not set. A session opened with one keeps it for its later "
        "requests."
    ),
    "kind": "Which appender: the type of the entry it writes.",
    "filter": "none (every entry) or one of pi's /tree modes.",
    "form": "flat, nested or reference.",
    "format": (
        'pi/buildSessionContext: "json" (the default) answers pi\'s value, "markdown" `{markdown}`, the '
        "context as a document to show (what `pi-session context` prints)."
    ),
    "previews": "false skips the preview texts (faster on huge sessions).",
    "activeBranchFirst": "order children as pi's TUI does: the branch holding the leaf first.",
    "search": (
        f"pi's /tree search: every whitespace-separated word must occur (case-insensitive). At most "
        f"{P.MAX_SEARCH_CHARS} characters and {P.MAX_SEARCH_WORDS} distinct words (a word given twice counts "
        "once); more is InvalidParams (-32602)."
    ),
    "since": (
        "pi/getEntries: an entry id: return the entries after its last occurrence in file order. Where ids "
        "repeat (a damaged file) that skips entries: page with `offset` instead (not both). pi/getTree "
        "(with `levels`, not with `revision`): the `revision` of a levels reply the client holds, with "
        "the same other params (but `aroundId`, the leaf now): the reply leaves out the first levels "
        "that are as that reply gave them but for the labels of relabelled rows (`keptLevels`), names "
        "the older rows whose label changed (`relabelled`), those that left the leaf's path or joined it "
        "(`leftLeafPath`, `joinedLeafPath`) and the lists whose rows changed otherwise (`staleLists`) "
        "when the session only had entries appended below an older entry (pi writing a turn below "
        "the leaf, or below another entry after /tree or pi/branchWithSummary) or only its leaf moved "
        "(pi/branch, pi/resetLeaf, /tree before a turn) and the server still knows that reply (a few "
        "views of a session, each its params, a few revisions each, kept while the session is open); "
        "else it is TreeReload (`{reload: true, revision}`): load the tree anew."
    ),
    "limit": (
        "At most this many items in the reply (at least 1): entries (pi/getEntries; pi/getPath, default 100), nodes of the flat form (pi/getTree; "
        f"at most {E.MAX_TREE_NODES:,}, a larger limit gives pages of {E.MAX_TREE_NODES:,}) or sessions "
        "(pi/list, pi/listAll). pi/getTree and the listings then answer one page with `total`, `hasMore` "
        "and `nextOffset`."
    ),
    "offset": (
        "Skip this many items first: entries in file order (pi/getEntries; not with `since`), entries of the "
        "path (pi/getPath), nodes of the flat form's preorder (pi/getTree) or sessions of the "
        "newest-first list (pi/list, pi/listAll). Pass the previous page's `nextOffset`; pages concatenate "
        "to the whole result (if the session or directory did not change in between)."
    ),
    "rootId": (
        "pi/getTree: only the subtree of this entry, which is the top node (depth 0, visibleParentId null); "
        "EntryNotFound (-32002) if there is none. Hidden by the filter, its shown descendants are the tops."
    ),
    "depth": (
        "pi/getTree: only nodes at most this many levels below the top nodes (0: the tops only). Flat form: "
        "childIds still name the children left out; nested form: such a node has `childrenOmitted: true`."
    ),
    "chain": (
        "pi/getTree (flat): only what one level of pi's /tree layout lists: the top node and its shown "
        "descendants while each has exactly one shown child (several tops: the tops alone). A tree view "
        "that nests branches under branch points asks for each level on expand."
    ),
    "aroundId": (
        "pi/getTree (flat): answer the page around the row on the path to this entry (its own row, or its "
        "deepest shown ancestor's), wherever `offset` points; the reply adds `offset` and `aroundIndex`. "
        "EntryNotFound (-32002) if there is no such entry."
    ),
    "revision": (
        "pi/getTree (flat, with `offset`, `limit`, `aroundId` or `levels`): the `revision` a reply before this "
        "one gave. If the session changed since (an append, a reload, another leaf), this page would be of "
        "another tree: it is refused with TreeChanged (-32015, data.revision the current one). A client that "
        "follows the session (`since`) asks again at that revision once it has followed to it; else it asks for "
        "the tree again from its first page. Left out, the page is of the tree as it is now."
    ),
    "levels": (
        "pi/getTree (flat, with `aroundId`): every level of pi's /tree layout from the top down to that entry "
        "in one reply (TreeLevels): the top list, then under each branch point on the path its branches and "
        "under each branch its chain, each the page around the path's row (what a tree view asks level by "
        "level to open down to an entry). `limit`: rows per level (default 50; fewer when the levels are "
        "many). No `rootId`, `depth`, `offset` or `chain`."
    ),
    "entryId": "pi/getPath: the entry the path leads to (default: the leaf); pi/branch: the new leaf.",
    "descend": "pi/getPath: continue the path below the entry down to a leaf.",
    "text": (
        "pi/list, pi/listAll: the texts each session carries. all (default): the reference's SessionInfo; "
        "first: firstMessage only; none: neither firstMessage nor allMessagesText. Text left out is never "
        "collected, so a listing of long sessions stays small."
    ),
    "cliSessionDir": (
        "pi/list, pi/listAll, pi/findById, pi/continueRecent, pi/create, pi/open, pi/forkFrom: true, without "
        "`sessionDir`: "
        "look (and make the session) where pi's command line keeps sessions (`--session-dir` aside): "
        "PI_CODING_AGENT_SESSION_DIR (`environment.sessionDir`, else the server's), else the "
        "`sessionDir` setting of the agent directory and of the working directory's project (the "
        "request's `environment`), else SessionManager's default, as pi --resume, --session and "
        "--continue find them and pi makes a new one (docs/FORMAT.md §3.1). A choice pi stops on at its "
        "start (a file URL Node refuses; for the setting, a value that is not a string too) fails the "
        "request with Node's error (data.name, data.code), its message naming the variable or the "
        "settings file that holds it. A "
        "setting holding a NUL byte (docs/DEVIATIONS.md D25): the listings and pi/findById find nothing "
        "and the other methods use the default. Default false: SessionManager's default."
    ),
    "maxTextChars": (
        "pi/list, pi/listAll: cut firstMessage and allMessagesText to this many characters (Unicode code "
        "points); `textTruncated: true` marks a session whose text was cut. Only the kept text is held."
    ),
    "permanent": "true deletes the file instead of moving it to the trash.",
    "pi": (
        "The pi release the new session behaves like for as long as it is held (the listing: how it "
        "compares directories), one of the releases the server knows; default: the server's (`serve "
        "--pi`, initializationOptions.piVersion). Another value is InvalidParams (-32602), naming them."
    ),
    "targetId": "pi/appendContextEdit, pi/append (label, context_edit): the entry the new entry is about.",
    "replacement": (
        "pi/appendContextEdit, pi/append (context_edit): null omits the target's messages from the "
        "context; {content} replaces their content (a string or an array of content blocks)."
    ),
    "usageKind": "appendUsage's `kind` (e.g. cache_warm).",
}


def _one_of_required(names: list[str]) -> dict[str, Any]:
    return {"anyOf": [{"required": [name]} for name in names]}


def _form_refuses(form: str, names: list[str], only: dict[str, Any] | None = None) -> dict[str, Any]:
    """pi/getTree with ``form`` must not carry any of ``names``, and those of ``only`` only with
    the value given (-32602)."""
    then: dict[str, Any] = {"not": {"anyOf": [{"required": [name]} for name in names]}}
    if only:
        then["properties"] = {name: {"const": value} for name, value in only.items()}
    return {"if": {"properties": {"form": {"const": form}}, "required": ["form"]}, "then": then}


# pages are of the flat form; the reference form is getTree() itself, whole and unfiltered
# (a switch that is off, `chain: false`, asks for nothing: any form takes it)
_TREE_WINDOW_RULES = [
    _form_refuses(
        "nested", ["offset", "limit", "aroundId", "revision", "since"], {"chain": False, "levels": False}
    ),
    _form_refuses(
        "reference",
        ["rootId", "depth", "offset", "limit", "aroundId", "search", "revision", "since"],
        {"filter": "none", "activeBranchFirst": False, "chain": False, "levels": False},
    ),
    {
        "if": {"properties": {"levels": {"const": True}}, "required": ["levels"]},
        "then": {
            "required": ["aroundId"],
            "not": {"anyOf": [{"required": [name]} for name in ("rootId", "depth", "offset")]},
            "properties": {"chain": {"const": False}},
        },
    },
    {  # a tree view's levels since a revision it holds
        "if": {"required": ["since"]},
        "then": {
            "properties": {"levels": {"const": True}},
            "required": ["levels"],
            "not": {"required": ["revision"]},
        },
    },
    {  # a revision is of a window: the pages of one tree
        "if": {"required": ["revision"]},
        "then": {
            "anyOf": [
                *({"required": [name]} for name in ("offset", "limit", "aroundId")),
                {"properties": {"levels": {"const": True}}, "required": ["levels"]},
            ]
        },
    },
]


def _params_rules(components: dict[str, Any]) -> None:
    """Add to the params schemas what msgspec cannot express: a session method needs ``session`` or
    ``uri``; pi/delete needs ``path`` or ``uri``; pi/getTree's forms refuse some windows."""
    for name, body in components.items():
        props = body.get("properties", {})
        if name in _PARAMS_STRUCTS and "session" in props and "uri" in props:
            body.update(_one_of_required(["session", "uri"]))
        elif name == "DeleteParams":
            body.update(_one_of_required(["path", "uri"]))
        if name == "GetTreeParams":
            body["allOf"] = _TREE_WINDOW_RULES
        elif name == "GetEntriesParams":
            body["not"] = {"required": ["since", "offset"]}


_PARAMS_STRUCTS = {
    name for name, value in vars(P).items() if isinstance(value, type) and issubclass(value, msgspec.Struct)
}


def _open_objects(components: dict[str, Any]) -> None:
    """Mark pi's own objects (entries, the header) as open: they hold any member."""
    for name, body in components.items():
        struct = getattr(R, name, None)
        if isinstance(struct, type) and issubclass(struct, R.PiObject):
            body["additionalProperties"] = True


def _unwrap_descriptions(schema: Any) -> None:
    """Docstrings are wrapped to the width of the code; a description is one line per paragraph."""
    if isinstance(schema, dict):
        text = schema.get("description")
        if isinstance(text, str):
            schema["description"] = "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))
        for value in schema.values():
            _unwrap_descriptions(value)
    elif isinstance(schema, list):
        for value in schema:
            _unwrap_descriptions(value)


def _union_members(struct: Any) -> list[Any]:
    return [struct] if not hasattr(struct, "__args__") else list(struct.__args__)


def _descriptors(struct: Any, components: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenRPC content descriptors (by-name params) of a params struct or a union of structs."""
    members = _union_members(struct)
    seen: dict[str, dict[str, Any]] = {}
    for member in members:
        body = components[member.__name__]
        required = set(body.get("required", []))
        for name, schema in body["properties"].items():
            if name in seen:
                continue
            descriptor: dict[str, Any] = {"name": name, "schema": schema}
            if (len(members) == 1 and name in required) or name == "kind":
                descriptor["required"] = True
            if name in FIELD_DOCS:
                descriptor["description"] = FIELD_DOCS[name]
            seen[name] = descriptor
    # the required first, each group in the order the structs declare them (a base's before its
    # subclass's: the options every method of a kind takes would come before what this one needs)
    return sorted(seen.values(), key=lambda descriptor: not descriptor.get("required", False))


def _schemas() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(params schema of each method, result schema of each method, params schema of each
    notification, the components they refer to), from the structures."""
    results = [m.result.types if isinstance(m.result, R.OneOf) else (m.result,) for m in METHODS]
    types = (
        [m.params for m in METHODS] + [n.params for n in NOTIFICATIONS] + [t for ts in results for t in ts]
    )
    schemas, components = msgspec.json.schema_components(types, ref_template=REF + "{name}")
    _params_rules(components)
    _open_objects(components)
    _unwrap_descriptions(components)
    given = iter(schemas)
    params = [next(given) for _ in METHODS]
    notifications = [next(given) for _ in NOTIFICATIONS]
    result_schemas = []
    for method, types_of_result in zip(METHODS, results, strict=True):
        if isinstance(method.result, R.OneOf):
            one_of = {"anyOf": [next(given) for _ in types_of_result]}
            result_schemas.append(
                {"description": method.result.description, **one_of} if method.result.description else one_of
            )
        else:
            result_schemas.append(next(given))
    return params, result_schemas, notifications, components


def openrpc() -> dict[str, Any]:
    params_schemas, result_schemas, notification_schemas, components = _schemas()
    methods = []
    for m, params_schema, result_schema in zip(METHODS, params_schemas, result_schemas, strict=True):
        entry: dict[str, Any] = {
            "name": m.name,
            "summary": m.summary,
            "paramStructure": "by-name",
            "params": _descriptors(m.params, components),
            "result": {"name": "result", "schema": result_schema},
            "x-paramsSchema": params_schema,
        }
        if m.reference:
            entry["x-reference"] = f"SessionManager.{m.reference}"
        codes = sorted(set(m.errors), reverse=True)
        entry["errors"] = [
            {"code": c, "message": E.ERROR_CODES[c][0], "data": E.ERROR_CODES[c][1]} for c in codes
        ]
        methods.append(entry)
    return {
        "openrpc": "1.3.2",
        "info": {
            "title": "pi-session-server sidecar",
            "version": __version__,
            "description": (
                "JSON-RPC 2.0 over LSP base framing (Content-Length headers) on the stdio of `pi-session serve`. "
                "Every SessionManager operation of pi 1.6.0 (and 0.86.1) as a pi/* method; results are the reference's values "
                "in JSON (camelCase keys as pi writes them, JS key order). A session is addressed by a handle "
                "(`session`) or by the file's `uri`. Requests on one session run in arrival order. The same "
                "process answers LSP (initialize, textDocument/*): initialize is optional for pi/* clients; "
                "initializationOptions: {fsync?: boolean, watchInterval?: seconds, rollbackFailedWrites?: boolean, "
                'piVersion?: the pi release every session and document behaves like ("1.6.0", the default, or '
                '"0.86.1"; `serve --pi` sets it for clients that send no initialize; an unknown one is logged '
                "and shown to the user, and the default stays), lineBreaks?: where the client's lines end, for "
                'the language server\'s positions ("lsp", the default: at a lone CR too, as the LSP says; '
                '"newline": at \\n only, as pi\'s, which the Neovim plugin sends)}. '
                "Parameters that the reference takes as plain values (ids, message, data, ...) accept any JSON "
                "value and may be left out, which means JS undefined (not null). Paths (`path`, `cwd`, "
                f"`sessionDir`, ...) hold at most {MAX_PATH_CHARS} characters and a `uri` {MAX_URI_CHARS} (longer: "
                "InvalidParams, -32602); a lone UTF-16 surrogate in a path becomes U+FFFD, as Node writes it. "
                "Every request runs as a job on a worker: one per session (requests on a session are answered in "
                "arrival order, and a session stuck on another process's lock delays no other). `$/cancelRequest` "
                "answers a queued request RequestCancelled (-32800) at once, and a running read too (its work "
                "stops at the next check: the scan of a file, a listing; a walk of a tree or a path in memory "
                "runs to its end before the session's next request); a write that started finishes."
            ),
        },
        "methods": methods,
        "components": {
            "schemas": components,
            "errors": {
                E.ERROR_CODES[c][0]: {"code": c, "message": E.ERROR_CODES[c][1]}
                for c in sorted(E.ERROR_CODES)
            },
        },
        "x-notifications": [
            {"name": n.name, "summary": n.summary, "params": {"name": "params", "schema": schema}}
            for n, schema in zip(NOTIFICATIONS, notification_schemas, strict=True)
        ],
        "x-errorData": (
            "Application errors (-32001..-32015) carry the reference's message verbatim in `message`; for an error "
            "the reference throws, `data.name` is its JS error name (Error, AbortError, TypeError) and `data.code` "
            "the Node fs code (EEXIST, ENOENT, EISDIR) for -32005; an error of the server's own (an unknown handle, "
            "a `rootId`, `entryId` or `since` not found) names the member in `data` instead. After a failed request the session is as it was: unlike pi, an entry whose write failed "
            "(EEXIST/ENOENT) is not kept in memory; initializationOptions.rollbackFailedWrites=false (or "
            "`serve --keep-failed-appends`) gives pi's behaviour."
        ),
    }


def render() -> str:
    return json.dumps(openrpc(), indent=2, ensure_ascii=False) + "\n"


def render_typescript() -> str:
    return typescript(openrpc())


def documented_methods() -> set[str]:
    return {m.name for m in METHODS}


def main(argv: list[str]) -> int:
    """Write ``protocol/`` (the directory given, default ``protocol``) and, when the directory that
    holds it has the VS Code client, that client's ``protocol.ts``."""
    target = Path(argv[0] if argv else "protocol")
    target.mkdir(parents=True, exist_ok=True)
    (target / "pi-session.openrpc.json").write_text(render(), encoding="utf-8")
    typescript_file = target.resolve().parent / TYPESCRIPT_PATH
    if typescript_file.parent.is_dir():
        typescript_file.write_text(render_typescript(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
