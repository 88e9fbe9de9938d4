"""The diagnostic codes: one stable code per kind of problem, with its severity and remedy.

``docs/DIAGNOSTICS.md`` is this table in prose; a unit test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from ..session.migrate import CURRENT_SESSION_VERSION
from ..session.releases import RELEASES


class Severity(IntEnum):
    """Same numbering as LSP's DiagnosticSeverity."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    severity: Severity
    title: str
    meaning: str
    fix: str


_VERSION = CURRENT_SESSION_VERSION  # what every release in RELEASES writes
_KNOWN_RELEASES = " or ".join(RELEASES)  # as a remedy names them: "0.86.1 or 1.6.0"

# line level
INVALID_JSON = "PI001"
TRUNCATED_LAST_LINE = "PI002"
NOT_AN_OBJECT = "PI003"
BLANK_LINE = "PI004"
NO_FINAL_NEWLINE = "PI005"
GLUED_LINES = "PI006"
# header and file level
MISSING_HEADER = "PI010"
INVALID_HEADER = "PI011"
HEADER_NOT_FIRST = "PI012"
DUPLICATE_HEADER = "PI013"
BOM = "PI014"
OLD_VERSION = "PI015"
UNKNOWN_VERSION = "PI016"
NOT_UTF8 = "PI017"
# fields
UNKNOWN_ENTRY_TYPE = "PI020"
FIELD_MISSING = "PI021"
FIELD_WRONG_TYPE = "PI022"
UNKNOWN_ROLE = "PI023"
UNKNOWN_BLOCK_TYPE = "PI024"
BAD_TIMESTAMP = "PI025"
BAD_STOP_REASON = "PI026"
MALFORMED_CONTEXT_EDIT = "PI027"
# tree
DUPLICATE_ID = "PI030"
DANGLING_PARENT = "PI031"
PARENT_CYCLE = "PI032"
LABEL_TARGET_MISSING = "PI033"
FIRST_KEPT_NOT_ON_PATH = "PI034"
FROM_ID_UNKNOWN = "PI035"
ORPHAN_TOOL_RESULT = "PI036"
UNANSWERED_TOOL_CALL = "PI037"
CONTEXT_EDIT_TARGET = "PI038"
# size
HUGE_IMAGE = "PI040"

E, W, INFO, H = Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT

CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            INVALID_JSON,
            E,
            "Invalid JSON",
            "The line is not valid JSON (`JSON.parse` fails at the marked column). pi skips the line on every load.",
            "Fix the JSON at the marked column, or delete the line if it holds nothing worth keeping. A line of NUL bytes alone (the zero-filled tail a crash leaves) holds nothing: code action *Remove the NUL bytes*. A control character JSON takes only escaped (a stray BEL or form feed in a string) is named at its column, as U+0007 or U+000C: an editor shows it as nothing or as a box. A line with control bytes no text holds (`\\x01`-`\\x08`, `\\x0e`-`\\x1f` but escape) is said to be binary bytes (a binary file, or one written over) when there are more than 3 of them, or NUL bytes beside them, or bytes that are not UTF-8 (fewer, in text: the parser's error where the first is). Neither is a cut-off line (PI002: pi writes no raw control byte) nor a crash's tail, even when it ends in NUL bytes or is the last line.",
        ),
        Code(
            TRUNCATED_LAST_LINE,
            E,
            "Truncated last line",
            "The last line has no final newline and is not valid JSON, and the parser ran out of it (a line cut short fails nowhere before its end): an interrupted write. pi skips it and appends a newline when it opens the file. A last line that fails before its end (a raw tab or control character in a string) is PI001 there.",
            "Code action *Remove the truncated last line*.",
        ),
        Code(
            NOT_AN_OBJECT,
            W,
            "Line is not a JSON object",
            "The line is valid JSON but not an object (a number, string, array, `null`, `true`/`false`). It is not an entry: pi skips it (D3).",
            "Delete the line or turn it into a proper entry object.",
        ),
        Code(
            BLANK_LINE,
            H,
            "Blank line",
            "A line that is empty or only whitespace. pi never writes one and skips it on load.",
            "Delete the line.",
        ),
        Code(
            NO_FINAL_NEWLINE,
            INFO,
            "No final newline",
            "The file does not end with a newline. The last line is valid, and pi appends the newline the next time it opens the file.",
            "Add a newline at the end of the file.",
        ),
        Code(
            GLUED_LINES,
            E,
            "Lines glued together",
            "The line holds two or more of pi's lines without the newline between them: a writer stopped in the middle of a line (a crash, a full disk) and the next line was appended right after it, or two processes wrote the file at once. pi skips the whole line, so every entry in it is lost, and the entries after it lose their parent (PI031). The message lists the pieces: whole entries and cut-off lines.",
            "Code action *Split the glued line* (each piece on a line of its own: pi reads the whole entries again; a cut-off piece stays as an invalid line), or *Split the glued line and remove the cut-off parts*.",
        ),
        Code(
            MISSING_HEADER,
            E,
            "Missing session header",
            'The first JSON line is not a session header (`{"type":"session",...}`), and there is none later either. pi refuses the file: *not a valid pi session*. A header inside lines glued together is not missing: PI006 reports it, and splitting that line gives it back.',
            "Code action *Insert a session header* (id and time are taken from the file name when it has pi's naming).",
        ),
        Code(
            INVALID_HEADER,
            E,
            "Invalid session header",
            "The first JSON line is a `session` header but its `id` is missing or not a string. pi refuses the file.",
            "Give the header a string `id` (the session id, usually the UUID in the file name).",
        ),
        Code(
            HEADER_NOT_FIRST,
            E,
            "Header not first",
            "A session header exists, but another JSON value comes before it. pi only accepts a header as the first parsable line and refuses the file.",
            "Code action *Move the session header to the first line*.",
        ),
        Code(
            DUPLICATE_HEADER,
            W,
            "More than one header",
            "A second `session` line after the header. pi keeps it in the file but ignores it (it is not an entry).",
            "Code action *Remove the duplicate session header*.",
        ),
        Code(
            BOM,
            E,
            "Byte order mark",
            "The file starts with a UTF-8 byte order mark. The reference then cannot parse the header line and refuses the whole file.",
            "Code action *Remove the byte order mark* (save as UTF-8 without BOM).",
        ),
        Code(
            OLD_VERSION,
            INFO,
            "Old format version",
            "The header says version 1 (no `version`) or 2. pi migrates the entries to version 3 and rewrites the whole file the next time it opens it.",
            "Nothing to do, or code action *Migrate to version 3* to rewrite it now exactly as pi would (unparsable lines are kept).",
        ),
        Code(
            UNKNOWN_VERSION,
            W,
            "Unknown format version",
            f"The header's `version` is not a number this tool knows (not numeric, or newer than {_VERSION}). A non-numeric version makes pi rewrite the file unchanged; a newer one may hold entries this version misreads.",
            f"Set `version` to {_VERSION} if pi {_KNOWN_RELEASES} wrote the file: every release this tool knows writes version {_VERSION}. "
            f"A file written by a pi from before version {_VERSION} takes the version that pi wrote: 2, or no `version` for version 1 (pi then migrates it).",
        ),
        Code(
            NOT_UTF8,
            E,
            "Not UTF-8",
            "The file starts with a UTF-16 or UTF-32 byte order mark (Windows PowerShell's `>` and "
            "`Out-File` write UTF-16). An editor decodes it and shows the session, but pi reads every "
            "file as UTF-8: it cannot parse a line and refuses the file.",
            "Code action *Save the file as UTF-8* (in the editor), *Re-encode the file as UTF-8* "
            "(`pi-session repair`); or save it as UTF-8 yourself (VS Code: *Save with Encoding*; "
            "Neovim: `:set fileencoding=utf-8 nobomb`, then `:w`).",
        ),
        Code(
            UNKNOWN_ENTRY_TYPE,
            INFO,
            "Unknown entry type",
            "An entry `type` that the pi release followed does not know (e.g. from a newer pi, or `context_edit` under pi 0.86.1). It is kept, indexed and part of the tree, but contributes nothing to the context.",
            "Nothing, if a newer pi wrote it; otherwise check the spelling of `type`.",
        ),
        Code(
            FIELD_MISSING,
            W,
            "Missing required field",
            "A field that pi always writes for this entry type or message role is missing (see the typed records of the format). Not reported for `usage.totalTokens`, which older pi releases did not write: pi adds up the token counts when it is missing; nor for a compaction's `firstKeptEntryId`, which pi 0.86.1 writes as `null` or leaves out to keep nothing.",
            "Add the field; pi itself never validates, so readers of the file may misbehave without it.",
        ),
        Code(
            FIELD_WRONG_TYPE,
            W,
            "Field has the wrong type",
            "A field has a JSON type other than the one pi writes (e.g. a number where a string id belongs).",
            "Correct the value's type.",
        ),
        Code(
            UNKNOWN_ROLE,
            INFO,
            "Unknown message role",
            "A `message` entry whose `message.role` pi 0.86.1 does not know. pi carries it into the context unchanged.",
            "Nothing, if a newer pi wrote it; otherwise check the spelling of `role`.",
        ),
        Code(
            UNKNOWN_BLOCK_TYPE,
            W,
            "Unknown content block",
            "A content block whose `type` is not allowed for this role (text/image for users and tool results, text/thinking/toolCall for the assistant).",
            "Correct the block's `type` or remove the block: providers reject unknown blocks.",
        ),
        Code(
            BAD_TIMESTAMP,
            W,
            "Unreadable timestamp",
            "The entry `timestamp` is not a date pi can read (`new Date(x)` is invalid), so the tree orders its siblings unpredictably.",
            "Use the ISO form pi writes, e.g. `2025-01-01T12:00:00.000Z`.",
        ),
        Code(
            BAD_STOP_REASON,
            W,
            "Unexpected stop reason",
            "An assistant message's `stopReason` is not one pi persists (`stop`, `length`, `toolUse`, `error`, `aborted`, `deferred`); `pending` only exists while streaming.",
            "Correct `stopReason`.",
        ),
        Code(
            MALFORMED_CONTEXT_EDIT,
            E,
            "Malformed context edit",
            "(pi 1.6.0) A `context_edit` whose `replacement` is missing, or is neither `null` nor an object whose `content` is a string or an array (what `appendContextEdit` writes). pi 1.6.0 applies it anyway: without `replacement` every context build that applies it throws, so nothing can be sent or compacted on that branch; any other value takes the content out of the target's messages or sends the wrong value as their content. This tool does not count the line as an edit (D10). Under pi 0.86.1 the line is an unknown entry type (PI020).",
            'Set `replacement` to `null` (leave the target out of the context) or to `{"content": …}` with a string or content blocks, or delete the line.',
        ),
        Code(
            DUPLICATE_ID,
            E,
            "Duplicate id",
            "Two entries share an `id`. pi's index keeps the later one, so the earlier one cannot be found and the tree shows the later entry under each parent.",
            "Give one of them a fresh 8-hex-digit id (and update the references that meant it). A line that is the same entry as a later line, byte for byte (written twice): code action *Remove this line*, which loses nothing (pi keeps the later copy).",
        ),
        Code(
            DANGLING_PARENT,
            W,
            "Parent not found",
            "`parentId` names an id that no entry has. pi shows the entry as an extra root, and the context built from it stops there.",
            "Code action *Re-parent to … the nearest surviving ancestor*: the closest earlier entry that is not a descendant (every entry naming the same missing id moves with it).",
        ),
        Code(
            PARENT_CYCLE,
            E,
            "Parent cycle",
            "Following `parentId` from this entry comes back to it (or it is its own parent). The reference loops forever on such a file.",
            "Code action *Break the cycle at line N* (offered on every line of the cycle, made once): the link pi cannot have written, a `parentId` naming an entry later in the file, goes to the entry written before it (or becomes `null`). Or *Break the cycle here* (makes this entry a root), or point one `parentId` of the cycle at an entry outside it.",
        ),
        Code(
            LABEL_TARGET_MISSING,
            W,
            "Label target not found",
            "A `label` entry's `targetId` names no entry. pi keeps the label, but it is attached to nothing visible.",
            "Point `targetId` at an existing entry, or delete the label line.",
        ),
        Code(
            FIRST_KEPT_NOT_ON_PATH,
            W,
            "Compaction keeps nothing",
            "A compaction's `firstKeptEntryId` is not an entry on the path from the root to the compaction, so the context after it keeps no earlier entries. The compaction's own id is not reported: that is how pi 1.6.0 writes \"keep nothing\" (`null` or no key in older files), and every pi release reads it so.",
            "Set `firstKeptEntryId` to an entry on the compaction's own branch.",
        ),
        Code(
            FROM_ID_UNKNOWN,
            W,
            "Branch summary source not found",
            "A `branch_summary`'s `fromId` (the abandoned leaf, or `root`) names no entry. Not reported in a session forked from another one (its header has `parentSession`): pi's `/fork` copies only the path it continues, so the abandoned leaf stays in the session it was forked from. pi itself never looks `fromId` up.",
            "Point `fromId` at the entry the branch was left from, or `root`.",
        ),
        Code(
            ORPHAN_TOOL_RESULT,
            E,
            "Tool result without its call",
            "A `toolResult` whose `toolCallId` matches no `toolCall` of an assistant message on its own path. Providers reject such a context (pi #4570).",
            "Code action *Move under the assistant message that made the call* (when that message is on another branch: after its other results), *Keep it as a custom message* (its text stays in the context, the rest of the result in its details; preferred, and what `repair --all` makes, when there is no call to move it to), or *Remove this tool result* (its children move up to its parent).",
        ),
        Code(
            UNANSWERED_TOOL_CALL,
            H,
            "Tool call never answered",
            'An assistant `toolCall` whose id no `toolResult` below it answers, on any branch: the tool was interrupted, or its result was left on another branch (pi\'s `/fork` copies only the path it continues). Harmless: when pi sends the context, it puts a synthetic error result ("No result provided") in place of the missing one.',
            "Nothing to do; add the tool result if the model should see what the tool returned.",
        ),
        Code(
            CONTEXT_EDIT_TARGET,
            W,
            "Context edit target missing, off its branch or not editable",
            "(pi 1.6.0) A `context_edit` whose `targetId` names no entry, an entry that is not above the edit on its branch, or an entry `appendContextEdit` refuses (anything but a `custom_message` or a user, assistant or tool result message). pi never writes such an edit. It changes nothing in the context, except that `null` still leaves out the messages of a target above it, and that a target below the edit is still edited on the paths that go on through it.",
            "Point `targetId` at a message above the edit on its branch, or delete the line.",
        ),
        Code(
            HUGE_IMAGE,
            INFO,
            "Huge inline image",
            "An image content block whose base64 data is very large (the size is in the message); it bloats the file and every context built from it.",
            "Code action *Move the image out of the file* (writes it next to the session and leaves a placeholder text block).",
        ),
    )
}


def markdown_table() -> str:
    """The table of ``docs/DIAGNOSTICS.md`` (kept identical by a unit test)."""
    rows = ["| code | severity | meaning | how to fix |", "|---|---|---|---|"]
    for c in CODES.values():
        rows.append(f"| {c.code} | {c.severity.name.lower()} | **{c.title}**. {c.meaning} | {c.fix} |")
    return "\n".join(rows) + "\n"
