"""The wire contract in ``protocol/``, generated from the code that implements it.

``python -m pi_session_server.server.protocol_doc protocol/`` writes ``pi-session.openrpc.json``
(every method: params, result, errors; every notification; the error codes). Params schemas come from
the msgspec structures the server validates with (``params.py``); result schemas are written here, next
to the list of methods. ``tests/unit/test_protocol_contract.py`` fails when the committed files and this
generator disagree, or when the server registers a method that is not documented (or the reverse), and
the end-to-end tests validate every reply against these schemas.

``protocol/session-line.schema.json`` (the JSON Schema of session lines) is written by hand.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pi_session_server import __version__

from . import errors as E
from . import params as P
from .locations import MAX_PATH_CHARS, MAX_URI_CHARS

REF = "#/components/schemas/"


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


ANY: dict[str, Any] = {}
NULLABLE_ENTRY = {"anyOf": [ref("Entry"), {"type": "null"}]}

# --- result schemas --------------------------------------------------------------------------

SCHEMAS: dict[str, Any] = {
    "JsonValue": {"description": "Any JSON value (the reference stores such fields as given)."},
    "Entry": {
        "type": "object",
        "description": (
            "A session entry exactly as stored in the file (one JSON line), keys in the file's order "
            "(integer-like keys first, as JavaScript orders them). pi never validates what it reads, so "
            "any field may have any type; session-line.schema.json describes what pi writes."
        ),
        "properties": {"type": ANY, "id": ANY, "parentId": ANY, "timestamp": ANY},
    },
    "Header": {
        "type": "object",
        "description": 'The session header line (type "session"), every key it has.',
        "properties": {
            "type": {"const": "session"},
            "version": ANY,
            "id": ANY,
            "timestamp": ANY,
            "cwd": ANY,
            "parentSession": ANY,
        },
        "required": ["type"],
    },
    "SessionHandleInfo": {
        "type": "object",
        "description": "What the opening methods return: the handle and the session it holds.",
        "properties": {
            "session": {"type": "string", "description": "The handle for later requests."},
            "uri": {"type": "string", "description": "file: URI of the session file, when there is one."},
            "sessionId": {"description": "getSessionId() (a string for everything pi writes)."},
            "sessionFile": {"type": "string", "description": "getSessionFile(); absent in memory."},
            "sessionDir": {"type": "string"},
            "cwd": {"type": "string"},
            "isPersisted": {"type": "boolean"},
            "usesDefaultSessionDir": {"type": "boolean"},
            "leafId": {
                "description": "getLeafId(): an id, null (before the first entry / after resetLeaf), or absent."
            },
            "header": {"anyOf": [ref("Header"), {"type": "null"}]},
            "entryCount": {"type": "integer", "minimum": 0, "description": "getEntries().length"},
            "sessionName": {"type": "string"},
            "readOnly": {
                "type": "boolean",
                "description": "true for a file opened through `uri` that needs a write when opened "
                "(migration, newline repair): it is held in memory until the first writing method.",
            },
            "piVersion": {
                "type": "string",
                "description": "The pi release this session behaves like (the opening method's `pi`, else "
                "the server's: `serve --pi`, initializationOptions.piVersion; default 1.6.0).",
            },
            "skippedLines": {
                "type": "integer",
                "minimum": 0,
                "description": "Lines of the file pi skips as it reads it (invalid JSON, lines glued together by a "
                "crash, values that are not objects): their entries are not in the session. Not pi's: pi "
                "skips them silently.",
            },
            "skipped": {
                "type": "array",
                "maxItems": 20,
                "items": ref("SkippedLine"),
                "description": "The first of those lines (absent when there are none); the language server's "
                "diagnostics and `pi-session check` give all of them.",
            },
            "result": {"description": "createBranchedSession/newSession: the method's own return value."},
        },
        "required": [
            "session",
            "sessionId",
            "sessionDir",
            "cwd",
            "isPersisted",
            "usesDefaultSessionDir",
            "header",
            "entryCount",
            "readOnly",
            "piVersion",
            "skippedLines",
        ],
    },
    "SkippedLine": {
        "type": "object",
        "description": "A line pi skips when it reads the file.",
        "properties": {
            "line": {"type": "integer", "minimum": 0, "description": "0-based line in the file"},
            "column": {
                "type": "integer",
                "minimum": 0,
                "description": "0-based character where it goes wrong",
            },
            "kind": {"enum": ["malformed", "glued", "falsy", "non_object"]},
            "message": {
                "type": "string",
                "description": "why, in words (for lines glued together: the entries lost)",
            },
        },
        "required": ["line", "column", "kind", "message"],
    },
    "ListedSession": {
        "type": "object",
        "description": "SessionInfo of list/listAll, as JSON.stringify shows it (dates as ISO strings, null when invalid).",
        "properties": {
            "path": {"type": "string"},
            "id": ANY,
            "cwd": {"type": "string"},
            "name": {"type": "string"},
            "parentSessionPath": ANY,
            "created": {"type": ["string", "null"]},
            "modified": {"type": ["string", "null"]},
            "messageCount": {"type": "integer"},
            "firstMessage": {"type": "string", "description": 'absent with `text: "none"`'},
            "allMessagesText": {"type": "string", "description": 'absent with `text: "first"` or `"none"`'},
            "textTruncated": {
                "const": True,
                "description": "present when `maxTextChars` cut firstMessage or allMessagesText",
            },
        },
        "required": ["path", "cwd", "created", "modified", "messageCount"],
    },
    "SessionsPage": {
        "type": "object",
        "description": "pi/list, pi/listAll with `offset` or `limit`: one page of the newest-first list.",
        "properties": {
            "sessions": {"type": "array", "items": ref("ListedSession")},
            "total": {
                "type": "integer",
                "minimum": 0,
                "description": "how many sessions the whole list holds",
            },
            "hasMore": {"type": "boolean", "description": "true when sessions follow this page"},
            "nextOffset": {
                "type": "integer",
                "minimum": 0,
                "description": "`offset` of the next page (when hasMore)",
            },
        },
        "required": ["sessions", "total", "hasMore"],
    },
    "AppendResult": {
        "type": "object",
        "properties": {
            "id": {"description": "The new entry's id (what the reference's appender returns)."},
            "leafId": {"description": "The leaf after the append (the new entry)."},
            "entry": {**ref("Entry"), "description": 'kind "usage" only: appendUsage returns the entry.'},
        },
        "required": ["id"],
    },
    "LeafResult": {
        "type": "object",
        "properties": {
            "leafId": {"description": "getLeafId(); absent when the leaf is undefined."},
            "entry": NULLABLE_ENTRY,
        },
        "required": ["entry"],
    },
    "EntriesPage": {
        "type": "object",
        "properties": {
            "entries": {"type": "array", "items": ref("Entry")},
            "total": {"type": "integer", "description": "getEntries().length"},
            "hasMore": {"type": "boolean", "description": "true when `limit` cut the page short"},
        },
        "required": ["entries", "total", "hasMore"],
    },
    "Context": {
        "type": "object",
        "description": "buildSessionContext(): {messages, thinkingLevel, model}.",
        "properties": {
            "messages": {"type": "array", "items": ANY},
            "thinkingLevel": ANY,
            "model": {
                "anyOf": [
                    {"type": "null"},
                    {"type": "object", "properties": {"provider": ANY, "modelId": ANY}},
                ]
            },
        },
        "required": ["messages", "model"],
    },
    "Projection": {
        "type": "object",
        "description": (
            "pi 1.6.0's buildSessionProjection(): the context's messages, and per context entry the "
            "messages it contributes (the latest valid context_edit of the entry applied: none when it "
            "omits the entry). Under pi 0.86.1 the same shape shows 0.86.1's context (no edits)."
        ),
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sourceEntry": {**ref("Entry"), "description": "the context entry, as stored"},
                        "messages": {"type": "array", "items": ANY},
                    },
                    "required": ["sourceEntry", "messages"],
                },
            },
            "messages": {"type": "array", "items": ANY},
            "thinkingLevel": ANY,
            "model": {
                "anyOf": [
                    {"type": "null"},
                    {"type": "object", "properties": {"provider": ANY, "modelId": ANY}},
                ]
            },
        },
        "required": ["entries", "messages", "model"],
    },
    "ContextMarkdown": {
        "type": "object",
        "description": 'pi/buildSessionContext with `format: "markdown"`: the context as a Markdown document '
        "to show as it is (the one the CLI's `pi-session context` prints): a title naming the file and the "
        "entry, the model, thinking level and message count, then a section per message.",
        "properties": {"markdown": {"type": "string"}},
        "required": ["markdown"],
    },
    "TreeNode": {
        "type": "object",
        "description": "One node of pi/getTree's flat or nested form.",
        "properties": {
            "id": {"description": "The entry's id (null when the entry has none)."},
            "parentId": {"description": "The entry's own parentId (absent when the line has none)."},
            "visibleParentId": {
                "description": "Id of the nearest ancestor shown in this result (null for roots)."
            },
            "childIds": {
                "type": "array",
                "description": "flat form: ids of the node's shown children (also those on other pages or "
                "below `depth`: ask for them with `offset` or `rootId`)",
            },
            "children": {"type": "array", "items": ref("TreeNode"), "description": "nested form"},
            "type": ANY,
            "role": ANY,
            "label": ANY,
            "labelTimestamp": ANY,
            "preview": {
                "type": "string",
                "description": "What pi's /tree shows for the entry (no colours; half of a surrogate pair cut by its 200-unit limit, or a lone surrogate in the data, is U+FFFD, as pi's terminal prints it).",
            },
            "timestamp": ANY,
            "line": {"type": "integer", "minimum": 0, "description": "0-based line of the entry in the file"},
            "depth": {"type": "integer", "minimum": 0},
            "isLeaf": {"type": "boolean"},
            "onLeafPath": {"type": "boolean"},
            "isBranchPoint": {"type": "boolean", "description": "more than one child shown"},
            "childrenOmitted": {
                "const": True,
                "description": "nested form with `depth`: the node has shown children below the depth, left out",
            },
        },
        "required": ["id", "visibleParentId", "depth", "isLeaf", "onLeafPath", "isBranchPoint"],
    },
    "LineEntry": {
        "type": "object",
        "description": "The entry on a line of the file, as a node of pi/getTree shows it (without "
        "the filter's fields and the preview): no message body is read or sent.",
        "properties": {
            "id": {"description": "The entry's id (null when the entry has none)."},
            "parentId": {"description": "The entry's own parentId (absent when the line has none)."},
            "type": ANY,
            "role": ANY,
            "label": ANY,
            "labelTimestamp": ANY,
            "timestamp": ANY,
            "line": {"type": "integer", "minimum": 0, "description": "0-based line of the entry in the file"},
            "isLeaf": {"type": "boolean"},
        },
        "required": ["id", "line", "isLeaf"],
    },
    "TreeView": {
        "type": "object",
        "properties": {
            "leafId": ANY,
            "nodes": {"type": "array", "items": ref("TreeNode")},
            "total": {
                "type": "integer",
                "minimum": 0,
                "description": "with `offset`/`limit`: how many nodes the whole (filtered) result holds",
            },
            "hasMore": {
                "type": "boolean",
                "description": "with `offset`/`limit`: true when nodes follow this page",
            },
            "nextOffset": {
                "type": "integer",
                "minimum": 0,
                "description": "with `offset`/`limit`: `offset` of the next page (when hasMore)",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "with `aroundId`: where this page starts in the whole (filtered) result",
            },
            "aroundIndex": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "with `aroundId`: where the row on the path to that entry is in the whole "
                "result (the entry's own row, or its deepest shown ancestor's); null when no row is on it",
            },
        },
        "required": ["leafId", "nodes"],
    },
    "TreeLevels": {
        "type": "object",
        "description": "pi/getTree with `levels`: the lists of pi's /tree layout from the top down to "
        "`aroundId`, each the reply of its window with `aroundId`.",
        "properties": {
            "leafId": ANY,
            "levels": {"type": "array", "items": ref("TreeLevel")},
            "complete": {
                "type": "boolean",
                "description": "false when the levels stop short of the entry: there were more than one "
                f"reply holds ({E.MAX_TREE_NODES // 2:,}); ask on with `rootId` windows from the last one",
            },
        },
        "required": ["leafId", "levels", "complete"],
    },
    "TreeLevel": {
        "type": "object",
        "description": "One list of the layout: `top` (the window {chain}: the root's chain, or the roots "
        "when there are several), `branches` ({rootId: a branch point, depth: 1}: its own row first, then "
        "its branches) or `chain` ({rootId: a branch's second entry, chain}); the list under the path's "
        "row of the level above. Its rows are the page around the path's row.",
        "properties": {
            "kind": {"enum": ["top", "branches", "chain"]},
            "rootId": ANY,
            "chain": {"const": True},
            "depth": {"const": 1},
            "nodes": {"type": "array", "items": ref("TreeNode")},
            "total": {"type": "integer", "minimum": 0},
            "hasMore": {"type": "boolean"},
            "nextOffset": {"type": "integer", "minimum": 0},
            "offset": {"type": "integer", "minimum": 0},
            "aroundIndex": {"type": ["integer", "null"], "minimum": 0},
        },
        "required": ["kind", "nodes", "total", "hasMore", "offset", "aroundIndex"],
    },
    "PathItem": {
        "type": "object",
        "description": "One entry of pi/getPath: the entry and what a branch switcher needs.",
        "properties": {
            "entry": ref("Entry"),
            "childIds": {"type": "array", "description": "ids of the entry's children, oldest first"},
            "siblingIds": {
                "type": "array",
                "description": "ids of its parent's children (the roots for the first entry), oldest first; "
                "only where there are several",
            },
            "label": ANY,
            "labelTimestamp": ANY,
            "line": {"type": "integer", "minimum": 0, "description": "0-based line of the entry in the file"},
        },
        "required": ["entry", "childIds"],
    },
    "PathPage": {
        "type": "object",
        "properties": {
            "leafId": {"description": "The session's leaf (null when it has none)."},
            "endId": {"description": "Id of the path's last entry (null for an empty path)."},
            "total": {"type": "integer", "minimum": 0, "description": "entries on the whole path"},
            "offset": {"type": "integer", "minimum": 0, "description": "where this page starts"},
            "hasMore": {"type": "boolean"},
            "nextOffset": {"type": "integer", "minimum": 0, "description": "when hasMore"},
            "items": {"type": "array", "items": ref("PathItem"), "description": "root first"},
        },
        "required": ["leafId", "endId", "total", "offset", "hasMore", "items"],
    },
    "SessionStats": {
        "type": "object",
        "description": "Totals of the whole session (every branch).",
        "properties": {
            "entryCount": {"type": "integer", "minimum": 0},
            "types": {"type": "object", "description": "entries by type"},
            "roles": {"type": "object", "description": "message entries by role"},
            "branchPoints": {"type": "integer", "minimum": 0, "description": "entries with several children"},
            "leaves": {"type": "integer", "minimum": 0, "description": "entries without children"},
            "tokens": {
                "type": "object",
                "description": "sums of the assistant messages' usage: input, output, cacheRead, cacheWrite, "
                "totalTokens",
            },
            "cost": {"type": "number", "description": "sum of usage.cost.total"},
            "models": {
                "type": "object",
                "description": "per provider/model: {turns, totalTokens, cost}",
            },
            "firstTimestamp": {"type": "string"},
            "lastTimestamp": {"type": "string"},
        },
        "required": ["entryCount", "types", "roles", "branchPoints", "leaves", "tokens", "cost", "models"],
    },
    "ReferenceTreeNode": {
        "type": "object",
        "description": "getTree() of the reference: {entry, children, label?, labelTimestamp?}.",
        "properties": {
            "entry": ref("Entry"),
            "children": {"type": "array", "items": ref("ReferenceTreeNode")},
            "label": ANY,
            "labelTimestamp": ANY,
        },
        "required": ["entry", "children"],
    },
    "DidChangeParams": {
        "type": "object",
        "properties": {
            "session": {"type": "string"},
            "uri": {"type": ["string", "null"]},
            "kind": {
                "enum": ["appended", "reloaded", "rewriting", "deleted"],
                "description": "appended: new lines at the end (newEntryIds); reloaded: the file was "
                "truncated, replaced or rewritten (also in place, keeping its size) and read again; "
                "rewriting: another program is writing the file again (it is empty or has no header "
                "yet): the session stays as it was, nothing is lost or an error, and a later "
                "pi/didChange (reloaded) follows once the file is whole; read it again then; deleted: "
                "the file is gone (the session stays in memory)",
            },
            "newEntryIds": {"type": "array", "description": "ids of the entries that are new (file order)"},
            "leafId": {"description": "The leaf after the change (absent when undefined)."},
        },
        "required": ["session", "uri", "kind", "newEntryIds"],
    },
    "ForeignWriterParams": {
        "type": "object",
        "properties": {
            "session": {"type": "string"},
            "uri": {"type": ["string", "null"]},
            "path": {"type": "string"},
            "message": {"type": "string"},
            "expectedSize": {"type": ["integer", "null"], "description": "where our last write ended"},
            "foundSize": {"type": ["integer", "null"], "description": "the size we found before writing"},
        },
        "required": ["session", "path", "message"],
    },
}

LISTING_RESULT = {
    "description": "The reference's array, newest first; with `offset` or `limit` a SessionsPage.",
    "anyOf": [{"type": "array", "items": ref("ListedSession")}, ref("SessionsPage")],
}

SESSION_TREE_RESULT = {
    "description": "form flat/nested: a TreeView (with `levels`: TreeLevels); form reference: getTree() itself "
    "(array of ReferenceTreeNode).",
    "anyOf": [ref("TreeView"), ref("TreeLevels"), {"type": "array", "items": ref("ReferenceTreeNode")}],
}

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
    result: dict[str, Any]
    errors: list[int] = field(default_factory=list)
    reference: str = ""


def _entries(description: str) -> dict[str, Any]:
    return {"type": "array", "items": ref("Entry"), "description": description}


METHODS: list[Method] = [
    Method(
        "pi/open",
        "SessionManager.open(path, sessionDir?, cwdOverride?): load a session file (or bind a new "
        "session to a missing path).",
        P.OpenParams,
        ref("SessionHandleInfo"),
        OPEN_ERRORS,
        "open",
    ),
    Method(
        "pi/create",
        "SessionManager.create(cwd, sessionDir?, options?): a new persisted session (written with "
        "the first assistant message).",
        P.CreateParams,
        ref("SessionHandleInfo"),
        OPEN_ERRORS,
        "create",
    ),
    Method(
        "pi/continueRecent",
        "SessionManager.continueRecent(cwd, sessionDir?): the most recent session of the "
        "directory, or a new one.",
        P.ContinueRecentParams,
        ref("SessionHandleInfo"),
        OPEN_ERRORS,
        "continueRecent",
    ),
    Method(
        "pi/inMemory",
        "SessionManager.inMemory(cwd?, options?, entries?): a session that never touches the disk.",
        P.InMemoryParams,
        ref("SessionHandleInfo"),
        OPEN_ERRORS,
        "inMemory",
    ),
    Method(
        "pi/forkFrom",
        "SessionManager.forkFrom(sourcePath, targetCwd, sessionDir?, options?): copy a session "
        "into a new file.",
        P.ForkFromParams,
        ref("SessionHandleInfo"),
        [*OPEN_ERRORS, E.FORK_ERROR],
        "forkFrom",
    ),
    Method(
        "pi/close",
        "Forget a handle (the file is left as it is).",
        P.CloseParams,
        {
            "type": "object",
            "properties": {"session": {"type": "string"}, "closed": {"const": True}},
            "required": ["session", "closed"],
        },
        [E.UNKNOWN_SESSION],
    ),
    Method(
        "pi/sessions",
        "The sessions this sidecar holds (handle info of each).",
        P.Params,
        {"type": "array", "items": ref("SessionHandleInfo")},
        [E.REQUEST_CANCELLED],
    ),
    Method(
        "pi/getInfo",
        "Handle info of one session (ids, file, leaf, header, entry count, name).",
        P.SessionParams,
        ref("SessionHandleInfo"),
        SESSION_ERRORS,
    ),
    Method(
        "pi/list",
        "SessionManager.list(cwd, sessionDir?): sessions of one project, newest first. Reports "
        "work-done progress. Every file is read; `text`/`maxTextChars` bound the text held and sent, "
        "`offset`/`limit` page the reply.",
        P.ListParams,
        LISTING_RESULT,
        [E.ABORTED, E.SESSION_ERROR, E.REQUEST_CANCELLED],
        "list",
    ),
    Method(
        "pi/listAll",
        "SessionManager.listAll(sessionDir?): sessions of every project (or of one directory), "
        "newest first. Reports work-done progress. `text`/`maxTextChars` bound the text held and sent, "
        "`offset`/`limit` page the reply.",
        P.ListAllParams,
        LISTING_RESULT,
        [E.ABORTED, E.SESSION_ERROR, E.REQUEST_CANCELLED],
        "listAll",
    ),
    Method(
        "pi/findById",
        "SessionManager.findById(cwd, id, sessionDir?): the path of the session file with that id, or null.",
        P.FindByIdParams,
        {"type": ["string", "null"]},
        [E.SESSION_ERROR, E.REQUEST_CANCELLED],
        "findById",
    ),
    Method(
        "pi/delete",
        "Delete a session file as pi's /resume does: to the trash (permanent only with "
        "`permanent: true`); refuses files that are not pi sessions; closes handles on the file.",
        P.DeleteParams,
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "trashed": {"type": "boolean"},
                "closedSessions": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["path", "trashed", "closedSessions"],
        },
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
        ref("AppendResult"),
        [*WRITE_ERRORS, E.ENTRY_NOT_FOUND, E.CONTEXT_EDIT_REFUSED, E.PI_VERSION],
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
        ref("AppendResult"),
        [*WRITE_ERRORS, E.ENTRY_NOT_FOUND, E.CONTEXT_EDIT_REFUSED, E.PI_VERSION],
        "appendContextEdit",
    ),
    Method(
        "pi/branch",
        "branch(entryId): move the leaf (nothing is written).",
        P.BranchParams,
        {"type": "object", "properties": {"leafId": ANY}},
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND],
        "branch",
    ),
    Method(
        "pi/resetLeaf",
        "resetLeaf(): the next append starts a new root.",
        P.SessionParams,
        {"type": "object", "properties": {"leafId": {"type": "null"}}, "required": ["leafId"]},
        SESSION_ERRORS,
        "resetLeaf",
    ),
    Method(
        "pi/branchWithSummary",
        "branchWithSummary(branchFromId | null, summary, details?, fromHook?, usage?).",
        P.BranchWithSummaryParams,
        ref("AppendResult"),
        [*WRITE_ERRORS, E.ENTRY_NOT_FOUND],
        "branchWithSummary",
    ),
    Method(
        "pi/createBranchedSession",
        "createBranchedSession(leafId): the path to leafId becomes a new session "
        "(the handle now holds it; `result` is the new file path).",
        P.CreateBranchedSessionParams,
        ref("SessionHandleInfo"),
        [*WRITE_ERRORS, E.ENTRY_NOT_FOUND],
        "createBranchedSession",
    ),
    Method(
        "pi/newSession",
        "newSession(options?): the handle starts a new session (`result` is the new file path).",
        P.NewSessionParams,
        ref("SessionHandleInfo"),
        [*WRITE_ERRORS, E.INVALID_SESSION_ID],
        "newSession",
    ),
    Method(
        "pi/setSessionFile",
        "setSessionFile(path): the handle switches to another file (unchanged on failure).",
        P.SetSessionFileParams,
        ref("SessionHandleInfo"),
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
        "and a larger `limit` gives pages of that size. The pages of one tree are cut from one walk of it, "
        "which the server keeps while the session and the other params stay the same (it lets it go after "
        "the last page, or after 60 s without a page): ask for them one after another.",
        P.GetTreeParams,
        SESSION_TREE_RESULT,
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND, E.TOO_LARGE],
        "getTree",
    ),
    Method(
        "pi/getBranch",
        "getBranch(fromId?): the path from the root to fromId (default: the leaf).",
        P.GetBranchParams,
        _entries("root first"),
        SESSION_ERRORS,
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
        ref("PathPage"),
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND],
    ),
    Method(
        "pi/getStats",
        "Totals of the whole session for a viewer: entries by type and role, branch points, leaves, the "
        "assistant messages' tokens and cost (by model), first and last timestamps. Kept per session: "
        "after an append only the new entries are read.",
        P.SessionParams,
        ref("SessionStats"),
        SESSION_ERRORS,
    ),
    Method(
        "pi/getChildren",
        "getChildren(parentId): entries whose parentId is parentId (null: the roots).",
        P.GetChildrenParams,
        _entries("index order"),
        SESSION_ERRORS,
        "getChildren",
    ),
    Method(
        "pi/getEntry",
        "getEntry(id): the entry, or null.",
        P.GetEntryParams,
        NULLABLE_ENTRY,
        SESSION_ERRORS,
        "getEntry",
    ),
    Method(
        "pi/getEntryAtLine",
        "The entry read from (or appended to) 0-based line `line` of the session file, as a tree node "
        "shows it, or null: the header, a blank or broken line, no such line, or an entry not written "
        "yet. What an editor needs for the entry under the cursor, without reading the tree.",
        P.GetEntryAtLineParams,
        {"anyOf": [ref("LineEntry"), {"type": "null"}]},
        SESSION_ERRORS,
    ),
    Method(
        "pi/getEntries",
        "getEntries() in file order; `since` (an entry id: entries after its last occurrence) "
        "and `limit` page through them.",
        P.GetEntriesParams,
        ref("EntriesPage"),
        [*SESSION_ERRORS, E.ENTRY_NOT_FOUND],
        "getEntries",
    ),
    Method(
        "pi/getLeaf",
        "getLeafId() and getLeafEntry().",
        P.SessionParams,
        ref("LeafResult"),
        SESSION_ERRORS,
        "getLeafId",
    ),
    Method(
        "pi/getLabel",
        "getLabel(id): the label, or null.",
        P.GetLabelParams,
        {"type": ["string", "null"]},
        SESSION_ERRORS,
        "getLabel",
    ),
    Method(
        "pi/getSessionName",
        "getSessionName(): the name, or null.",
        P.SessionParams,
        {"type": ["string", "null"]},
        SESSION_ERRORS,
        "getSessionName",
    ),
    Method(
        "pi/getHeader",
        "getHeader(): the header line, or null.",
        P.SessionParams,
        {"anyOf": [ref("Header"), {"type": "null"}]},
        SESSION_ERRORS,
        "getHeader",
    ),
    Method(
        "pi/buildContextEntries",
        "buildContextEntries() (with `leafId`: as if the leaf were there; null gives []).",
        P.ContextParams,
        _entries("the entries the context is built from"),
        SESSION_ERRORS,
        "buildContextEntries",
    ),
    Method(
        "pi/buildSessionContext",
        'buildSessionContext() (with `leafId`: the context at that entry; with `format: "markdown"`: the '
        "context rendered for display).",
        P.SessionContextParams,
        {"anyOf": [ref("Context"), ref("ContextMarkdown")]},
        SESSION_ERRORS,
        "buildSessionContext",
    ),
    Method(
        "pi/buildSessionProjection",
        "pi 1.6.0's buildSessionProjection() (with `leafId`: at that entry): the context, and what each "
        "context entry contributes to it once context edits apply. Also answered for a session that "
        "follows pi 0.86.1, whose context has no edits.",
        P.ContextParams,
        ref("Projection"),
        SESSION_ERRORS,
        "buildSessionProjection",
    ),
    Method(
        "pi/getEntryCount",
        "pi 1.6.0's getEntryCount(): the number of distinct entry ids (entryCount of pi/getInfo counts "
        "lines, which differs when ids repeat or are missing). Also answered under pi 0.86.1.",
        P.SessionParams,
        {"type": "integer", "minimum": 0},
        SESSION_ERRORS,
        "getEntryCount",
    ),
]

NOTIFICATIONS = [
    (
        "pi/didChange",
        "server -> client: another process appended to (or rewrote, or deleted) a held session "
        "file; the session already took the change in.",
        "DidChangeParams",
    ),
    (
        "pi/foreignWriter",
        "server -> client: while appending, the server found bytes it did not write since its "
        "last append (pi or another tool writes the same file).",
        "ForeignWriterParams",
    ),
]

FIELD_DOCS = {
    "session": "A handle returned by an opening method.",
    "uri": (
        "file: URI of a session file, read as Node's fileURLToPath reads it (file://localhost/x is /x). Use "
        "instead of `session`. Opened on demand to look at: nothing is written (no v1/v2 conversion, no newline "
        "repair), and line numbers, problems and ids are the file's. A writing method reopens it for writing, "
        "except a version 1 or 2 file, which writing would convert: ReadOnly (-32012). A FIFO or device is "
        "refused (PathRefused, -32010) without being opened."
    ),
    "workDoneToken": "LSP work-done progress token: the server reports $/progress for long operations.",
    "environment": (
        "The working directory, HOME and PI_CODING_AGENT_DIR pi would read from its process, for this "
        "request: relative paths, `~`, the default cwd and the default session directories. Members left "
        "out are the server's (its own process's at start, or initializationOptions.environment). A "
        "session opened with one keeps it for its later requests."
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
    "since": "An entry id: return the entries after its last occurrence in file order.",
    "limit": (
        "At most this many items in the reply (at least 1): entries (pi/getEntries; pi/getPath, default 100), nodes of the flat form (pi/getTree; "
        f"at most {E.MAX_TREE_NODES:,}, a larger limit gives pages of {E.MAX_TREE_NODES:,}) or sessions "
        "(pi/list, pi/listAll). pi/getTree and the listings then answer one page with `total`, `hasMore` "
        "and `nextOffset`."
    ),
    "offset": (
        "Skip this many items first: entries of the path (pi/getPath), nodes of the flat form's preorder (pi/getTree) or sessions of the "
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


def _form_refuses(form: str, names: list[str]) -> dict[str, Any]:
    """pi/getTree with ``form`` must not carry any of ``names`` (-32602)."""
    return {
        "if": {"properties": {"form": {"const": form}}, "required": ["form"]},
        "then": {"not": {"anyOf": [{"required": [name]} for name in names]}},
    }


# pages are of the flat form; the reference form is getTree() itself, whole
_TREE_WINDOW_RULES = [
    _form_refuses("nested", ["offset", "limit", "chain", "aroundId", "levels"]),
    _form_refuses("reference", ["rootId", "depth", "offset", "limit", "chain", "aroundId", "levels"]),
    {
        "if": {"properties": {"levels": {"const": True}}, "required": ["levels"]},
        "then": {
            "required": ["aroundId"],
            "not": {"anyOf": [{"required": [name]} for name in ("rootId", "depth", "offset", "chain")]},
        },
    },
]


def _params_schema(struct: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(schema of the params object, definitions it needs) with refs into components.

    What msgspec cannot express is added: a session method needs ``session`` or ``uri``; pi/delete
    needs ``path`` or ``uri``."""
    schema = msgspec.json.schema(struct)
    defs = schema.pop("$defs", {})
    for name, body in defs.items():
        props = body.get("properties", {})
        if "session" in props and "uri" in props:
            body.update(_one_of_required(["session", "uri"]))
        elif name == "DeleteParams":
            body.update(_one_of_required(["path", "uri"]))
        if name == "GetTreeParams":
            body["allOf"] = _TREE_WINDOW_RULES
    text = json.dumps(schema).replace('"#/$defs/', '"' + REF)
    defs_text = json.dumps(defs).replace('"#/$defs/', '"' + REF)
    return json.loads(text), json.loads(defs_text)


def _descriptors(struct: Any, defs: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenRPC content descriptors (by-name params) of a params struct or a union of structs."""
    members = [struct] if not hasattr(struct, "__args__") else list(struct.__args__)
    seen: dict[str, dict[str, Any]] = {}
    for member in members:
        body = defs[member.__name__]
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
    return list(seen.values())


def openrpc() -> dict[str, Any]:
    components: dict[str, Any] = copy.deepcopy(SCHEMAS)
    methods = []
    for m in METHODS:
        params_schema, defs = _params_schema(m.params)
        for name, body in defs.items():
            components.setdefault(name, body)
        entry: dict[str, Any] = {
            "name": m.name,
            "summary": m.summary,
            "paramStructure": "by-name",
            "params": _descriptors(m.params, defs),
            "result": {"name": "result", "schema": m.result},
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
                "and shown to the user, and the default stays)}. "
                "Parameters that the reference takes as plain values (ids, message, data, ...) accept any JSON "
                "value and may be left out, which means JS undefined (not null). Paths (`path`, `cwd`, "
                f"`sessionDir`, ...) hold at most {MAX_PATH_CHARS} characters and a `uri` {MAX_URI_CHARS} (longer: "
                "InvalidParams, -32602); a lone UTF-16 surrogate in a path becomes U+FFFD, as Node writes it. "
                "Every request runs as a job on a worker: one per session (requests on a session are answered in "
                "arrival order, and a session stuck on another process's lock delays no other). `$/cancelRequest` "
                "answers a queued request RequestCancelled (-32800) at once, and a running read too (its work "
                "stops at the next check: the scan of a file, a listing); a write that started finishes."
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
            {"name": name, "summary": summary, "params": {"name": "params", "schema": ref(schema)}}
            for name, summary, schema in NOTIFICATIONS
        ],
        "x-errorData": (
            "Application errors (-32001..-32012) carry the reference's message verbatim in `message`; `data.name` is "
            "the JS error name (Error, AbortError, TypeError), `data.code` the Node fs code (EEXIST, ENOENT, EISDIR) "
            "for -32005. After a failed request the session is as it was: unlike pi, an entry whose write failed "
            "(EEXIST/ENOENT) is not kept in memory; initializationOptions.rollbackFailedWrites=false (or "
            "`serve --keep-failed-appends`) gives pi's behaviour."
        ),
    }


def render() -> str:
    return json.dumps(openrpc(), indent=2, ensure_ascii=False) + "\n"


def documented_methods() -> set[str]:
    return {m.name for m in METHODS}


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else "protocol")
    target.mkdir(parents=True, exist_ok=True)
    (target / "pi-session.openrpc.json").write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
