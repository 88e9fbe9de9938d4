"""Parameters of the pi/* methods as msgspec structures.

What is checked: parameters the server itself uses (``session``, ``uri``, ``kind``, paths and
directories, ``filter``, ``form``, ``since``, ``limit``, ...) and those the reference cannot do
without (a session name must be a string) must be present with their type; a failure is ``-32602``
naming the field. What the reference stores or compares without looking (ids, ``message``, ``data``,
``details``, ``usage``, ``content``, ``display``, ``tokensBefore``, ...) may be any JSON value or be
left out, because the reference gives each a defined answer (``branch(5)`` fails with ``Entry 5 not
found``, ``branch()`` with ``Entry undefined not found``, ``getEntry()`` finds an entry without id).
A field that is left out is JS ``undefined`` (``ABSENT``), which is not the same as ``null``.

The same structures generate the params schemas of ``protocol/`` and of the VS Code client's
``protocol.ts`` (see ``protocol_doc.py``).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections import deque
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from pi_session_server.errors import PiVersionError
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session.environment import Environment
from pi_session_server.session.profiles import PROFILES, Profile, profile_for

from .errors import bounded_validation_message, invalid_params, quoted_start
from .locations import MAX_PATH_CHARS, MAX_URI_CHARS, fs_path

T = TypeVar("T")

#: the longest ``search`` of pi/getTree, in characters, and the most distinct words it may hold
MAX_SEARCH_CHARS = 1000
MAX_SEARCH_WORDS = 32

Id = Any  # looked up by strict equality; any JSON value has a defined answer
Path = Annotated[str, msgspec.Meta(max_length=MAX_PATH_CHARS)]
AbsolutePath = Annotated[str, msgspec.Meta(pattern="^/", max_length=MAX_PATH_CHARS)]
FileUri = Annotated[str, msgspec.Meta(pattern="^file://", max_length=MAX_URI_CHARS)]
Count = Annotated[int, msgspec.Meta(ge=0)]
PageSize = Annotated[int, msgspec.Meta(ge=1)]
SearchText = Annotated[str, msgspec.Meta(max_length=MAX_SEARCH_CHARS)]
Revision = Annotated[str, msgspec.Meta(max_length=64)]  # (the server's tokens are a few digits)
ProgressToken = int | str
#: a session handle (the server's are "s" and a number): a longer one is refused, not echoed back
Handle = Annotated[str, msgspec.Meta(max_length=64)]
#: a pi release the library has a profile for (checked by :func:`profile_of`, which names them)
PiVersionName = Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"enum": list(PROFILES)})]


class Params(msgspec.Struct, rename="camel", kw_only=True):
    """Base: every request may carry an LSP work-done progress token."""

    work_done_token: ProgressToken | UnsetType = UNSET


class SessionParams(Params, kw_only=True):
    """A method on one session: ``session`` (a handle) or ``uri`` (a session file)."""

    session: Handle | UnsetType = UNSET
    uri: FileUri | UnsetType = UNSET


class SessionOptions(msgspec.Struct, rename="camel", kw_only=True):
    id: Any = UNSET
    parent_session: Any = UNSET


class EnvironmentOptions(msgspec.Struct, rename="camel", kw_only=True):
    """What pi reads from its process: the working directory (absolute; relative paths and the
    default cwd), HOME (where ~ leads), PI_CODING_AGENT_DIR (the default session directories) and
    PI_CODING_AGENT_SESSION_DIR (where pi's command line keeps sessions: `cliSessionDir`). A
    member given replaces the server's own; null for home, agentDir or sessionDir means not set."""

    cwd: AbsolutePath | UnsetType = UNSET
    home: Path | UnsetType | None = UNSET
    agent_dir: Path | UnsetType | None = UNSET
    session_dir: Path | UnsetType | None = UNSET

    def applied_to(self, base: Environment) -> Environment:
        given = {name: getattr(self, name) for name in ("cwd", "home", "agent_dir", "session_dir")}
        return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not UNSET})


class LocatedParams(Params, kw_only=True):
    """A method that finds files by path: relative paths, ``~`` and the default directories are
    those of ``environment`` (the server's own for what it leaves out). A session opened this way
    keeps it for its later requests."""

    environment: EnvironmentOptions | UnsetType = UNSET

    def environment_in(self, base: Environment) -> Environment:
        return base if self.environment is UNSET else self.environment.applied_to(base)


# --- opening -------------------------------------------------------------------------------


class OpeningParams(LocatedParams, kw_only=True):
    """A method that makes a new session (or reads session files): ``pi`` chooses the pi release it
    behaves like, for as long as the session is held (default: the server's)."""

    pi: PiVersionName | UnsetType = UNSET


class OpeningInDirectoryParams(OpeningParams, kw_only=True):
    """A method that looks for sessions in, or keeps one in, a session directory: ``sessionDir``,
    else with ``cliSessionDir`` the one pi's command line would use (server/session_dir_choice.py)."""

    session_dir: Path | UnsetType = UNSET
    cli_session_dir: bool = False


class OpenParams(OpeningInDirectoryParams, kw_only=True):
    path: Path
    cwd_override: Path | UnsetType = UNSET


class CreateParams(OpeningInDirectoryParams, kw_only=True):
    cwd: Path
    options: SessionOptions | UnsetType = UNSET


class ContinueRecentParams(OpeningInDirectoryParams, kw_only=True):
    cwd: Path


class InMemoryParams(OpeningParams, kw_only=True):
    cwd: Path | UnsetType = UNSET
    options: SessionOptions | UnsetType = UNSET
    entries: list[Any] | UnsetType = UNSET


class ForkFromParams(OpeningInDirectoryParams, kw_only=True):
    source_path: Path
    target_cwd: Path
    options: SessionOptions | UnsetType = UNSET


class CloseParams(Params, kw_only=True):
    session: Handle


# --- listing -------------------------------------------------------------------------------


ListText = Literal["all", "first", "none"]


class ListingParams(LocatedParams, kw_only=True):
    """What pi/list and pi/listAll add to the reference: how much text, and which page."""

    session_dir: Path | UnsetType = UNSET
    # without sessionDir: where pi's command line keeps sessions, not SessionManager's default
    cli_session_dir: bool = False
    text: ListText = "all"
    max_text_chars: Count | UnsetType = UNSET
    offset: Count | UnsetType = UNSET
    limit: PageSize | UnsetType = UNSET

    @property
    def paged(self) -> bool:
        return self.offset is not UNSET or self.limit is not UNSET


class ListParams(ListingParams, kw_only=True):
    cwd: Path
    pi: PiVersionName | UnsetType = UNSET


class ListAllParams(ListingParams, kw_only=True):
    pass


class FindByIdParams(OpeningInDirectoryParams, kw_only=True):
    cwd: Path
    id: str


class DeleteParams(LocatedParams, kw_only=True):
    path: Path | UnsetType = UNSET
    uri: FileUri | UnsetType = UNSET
    permanent: bool = False


# --- writing -------------------------------------------------------------------------------

AppendKind = Literal[
    "message",
    "thinking_level_change",
    "model_change",
    "usage",
    "compaction",
    "custom",
    "custom_message",
    "session_info",
    "label",
    "context_edit",
]


class AppendMessage(SessionParams, tag="message", tag_field="kind", kw_only=True):
    message: Any = UNSET


class AppendThinkingLevelChange(SessionParams, tag="thinking_level_change", tag_field="kind", kw_only=True):
    thinking_level: Any = UNSET


class AppendModelChange(SessionParams, tag="model_change", tag_field="kind", kw_only=True):
    provider: Any = UNSET
    model_id: Any = UNSET


class AppendUsage(SessionParams, tag="usage", tag_field="kind", kw_only=True):
    usage_kind: Any = UNSET
    provider: Any = UNSET
    model: Any = UNSET
    usage: Any = UNSET
    note: Any = UNSET


class AppendCompaction(SessionParams, tag="compaction", tag_field="kind", kw_only=True):
    summary: Any = UNSET
    first_kept_entry_id: Id = UNSET
    tokens_before: Any = UNSET
    details: Any = UNSET
    from_hook: Any = UNSET
    usage: Any = UNSET


class AppendCustom(SessionParams, tag="custom", tag_field="kind", kw_only=True):
    custom_type: Any = UNSET
    data: Any = UNSET


class AppendCustomMessage(SessionParams, tag="custom_message", tag_field="kind", kw_only=True):
    custom_type: Any = UNSET
    content: Any = UNSET
    display: Any = UNSET
    details: Any = UNSET


class AppendSessionInfo(SessionParams, tag="session_info", tag_field="kind", kw_only=True):
    name: Any = UNSET


class AppendLabel(SessionParams, tag="label", tag_field="kind", kw_only=True):
    target_id: Id = UNSET
    label: Any = UNSET


class AppendContextEdit(SessionParams, tag="context_edit", tag_field="kind", kw_only=True):
    target_id: Id = UNSET
    replacement: Any = UNSET


class AppendContextEditParams(SessionParams, kw_only=True):
    """pi/appendContextEdit: pi 1.6.0's ``appendContextEdit(targetId, replacement)``."""

    target_id: Id = UNSET
    replacement: Any = UNSET


AppendParams = (
    AppendMessage
    | AppendThinkingLevelChange
    | AppendModelChange
    | AppendUsage
    | AppendCompaction
    | AppendCustom
    | AppendCustomMessage
    | AppendSessionInfo
    | AppendLabel
    | AppendContextEdit
)


class BranchParams(SessionParams, kw_only=True):
    entry_id: Id = UNSET


class BranchWithSummaryParams(SessionParams, kw_only=True):
    branch_from_id: Id = UNSET
    summary: Any = UNSET
    details: Any = UNSET
    from_hook: Any = UNSET
    usage: Any = UNSET


class CreateBranchedSessionParams(SessionParams, kw_only=True):
    leaf_id: Id = UNSET


class NewSessionParams(SessionParams, kw_only=True):
    options: SessionOptions | UnsetType = UNSET


class SetSessionFileParams(SessionParams, kw_only=True):
    path: Path


# --- reading -------------------------------------------------------------------------------

TreeFilter = Literal["none", "default", "no-tools", "user-only", "labeled-only", "all"]


class GetTreeParams(SessionParams, kw_only=True):
    filter: TreeFilter = "none"
    form: Literal["flat", "nested", "reference"] = "flat"
    search: SearchText | UnsetType = UNSET
    active_branch_first: bool = False
    previews: bool = True
    root_id: Id = UNSET
    depth: Count | UnsetType = UNSET
    offset: Count | UnsetType = UNSET
    limit: PageSize | UnsetType = UNSET
    chain: bool = False
    around_id: Id = UNSET
    levels: bool = False
    revision: Revision | UnsetType = UNSET
    since: Revision | UnsetType = UNSET

    @property
    def paged(self) -> bool:
        return self.offset is not UNSET or self.limit is not UNSET or self.around_id is not UNSET


class GetPathParams(SessionParams, kw_only=True):
    entry_id: Id = UNSET
    descend: bool = False
    offset: Count = 0
    limit: PageSize = 100


class GetBranchParams(SessionParams, kw_only=True):
    from_id: Id = UNSET


class GetChildrenParams(SessionParams, kw_only=True):
    parent_id: Id = UNSET


class GetEntryParams(SessionParams, kw_only=True):
    id: Id = UNSET


class GetEntryAtLineParams(SessionParams, kw_only=True):
    line: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="0-based line of the file, as pi numbers them (an editor that ends a line at a "
            "lone CR converts its own with pi/getLineBreaks)",
        ),
    ]


class GetEntriesParams(SessionParams, kw_only=True):
    since: str | UnsetType = UNSET
    offset: Count | UnsetType = UNSET
    limit: PageSize | UnsetType = UNSET


class GetLabelParams(SessionParams, kw_only=True):
    id: Id = UNSET


class ContextParams(SessionParams, kw_only=True):
    leaf_id: Id = UNSET


class SessionContextParams(ContextParams, kw_only=True):
    format: Literal["json", "markdown"] = "json"


# members that name files: a lone surrogate in them reaches the file system as U+FFFD (Node's way)
_PATH_MEMBERS = ("path", "cwd", "sessionDir", "cwdOverride", "sourcePath", "targetCwd")
_ENVIRONMENT_PATH_MEMBERS = ("cwd", "home", "agentDir", "sessionDir")


def parse(params: Any, struct: type[T]) -> T:
    """Validate raw params; a failure is a -32602 reply that names the field."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid_params("Invalid params: expected an object")
    return convert(with_paths_as_the_file_system_has_them(params), struct)


def with_paths_as_the_file_system_has_them(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` whose paths (and the ``environment``'s) have their lone surrogates as U+FFFD,
    as Node's file system functions take them (:func:`.locations.fs_path`)."""
    changed = _paths_of(params, _PATH_MEMBERS)
    environment = params.get("environment")
    if isinstance(environment, dict):
        fixed = _paths_of(environment, _ENVIRONMENT_PATH_MEMBERS)
        if fixed is not environment:
            changed = {**changed, "environment": fixed}
    return changed


def _paths_of(members: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    for name in names:
        value = members.get(name)
        if type(value) is str and not value.isascii():
            members = {**members, name: fs_path(value)}
    return members


def convert(params: Any, struct: type[T]) -> T:
    """``msgspec.convert``; a failure is a -32602 error that names the member."""
    taken = 0
    while True:
        try:
            return msgspec.convert(params, struct)
        except msgspec.ValidationError as error:
            whole = _with_whole_number_as_int(params, str(error)) if taken < _WHOLE_NUMBERS_TAKEN else None
            if whole is None:
                raise invalid_params(f"Invalid params: {bounded_validation_message(str(error))}") from None
            params, taken = whole, taken + 1
        except UnicodeEncodeError:  # msgspec takes no string with a lone surrogate, whatever the type
            known = _unknown_members_left_out(params, struct)
            if known is params:
                raise invalid_params(f"Invalid params: {_lone_surrogate_problem(params, struct)}") from None
            params = known


def _unknown_members_left_out(params: Any, struct: type[Any]) -> Any:
    """``params`` without the members whose names hold a lone surrogate, in the objects that are
    structures (not in a value of any type, which keeps them as pi would): no member's name holds
    one, so they are unknown members, which a request may carry, but msgspec refuses their names
    before it could ignore them. ``params`` itself when there is none."""
    if not isinstance(params, dict):
        return params
    nested = {field.encode_name: _structure_in(field.type) for field in msgspec.structs.fields(struct)}
    kept: dict[Any, Any] = {}
    for name, value in params.items():
        if type(name) is str and fs_path(name) != name:
            continue
        inner = nested.get(name)
        kept[name] = value if inner is None else _unknown_members_left_out(value, inner)
    same = len(kept) == len(params) and all(kept[name] is params[name] for name in kept)
    return params if same else kept


def _structure_in(annotation: Any) -> type[Any] | None:
    """The msgspec structure a member's type holds (``EnvironmentOptions | UnsetType``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation
    for part in typing.get_args(annotation):
        found = _structure_in(part)
        if found is not None:
            return found
    return None


# msgspec's refusal of a float where the schema says integer (alone or in a union, as a progress
# token's `int | str`), and the member's path in the params; a request may write this many of its
# integers as whole floats (each costs one more conversion)
_WHOLE_NUMBERS_TAKEN = 8
_FLOAT_FOR_INT = re.compile(r"Expected `int(?: \| \w+)*`, got `float` - at `\$((?:\.[A-Za-z_]\w*|\[\d+\])*)`")
_PATH_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")


def _with_whole_number_as_int(params: Any, refusal: str) -> Any:
    """``params`` with the whole number msgspec refused as a float (``refusal``) as an int, or None
    when the refusal is another. JSON has one number type and JSON Schema's integer is any whole
    number: ``1e21``, the way JavaScript writes every number from 1e21 on, or ``4.0``. Only the
    member the schema types as an integer changes (a member of any type keeps its float), and only
    on this path: a request whose integers are written as such is converted once."""
    found = _FLOAT_FOR_INT.fullmatch(refusal)
    if found is None:
        return None
    steps = [name if name else int(index) for name, index in _PATH_STEP.findall(found.group(1))]
    if not steps:
        return None
    copy = root = _shallow_copy(params)
    try:
        for step in steps[:-1]:
            child = _shallow_copy(copy[step])
            copy[step] = child
            copy = child
        value = copy[steps[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    if type(value) is not float or not value.is_integer():
        return None
    copy[steps[-1]] = int(value)
    return root


def _shallow_copy(value: Any) -> Any:
    return dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value


def _lone_surrogate_problem(params: Any, struct: type[Any]) -> str:
    """Why ``params`` holding a lone surrogate do not convert: the type error of the member that
    holds it, if it has the wrong type anyway; else that its string cannot hold one."""
    try:
        msgspec.convert(_displayed(params), struct)
    except msgspec.ValidationError as error:
        return bounded_validation_message(str(error))
    return f"a lone surrogate (an unpaired UTF-16 code unit) in a string that cannot hold one - at `{_surrogate_at(params)}`"


def _displayed(value: Any) -> Any:
    """``value`` with every string's lone surrogates as U+FFFD (keys too). Iterative, in one pass
    over the value: params are parsed on the event loop, and a message can nest at any depth."""
    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if type(item) is str:
            holder[key] = fs_path(item)
        elif isinstance(item, dict):
            copy = {fs_path(k) if type(k) is str else k: v for k, v in item.items()}
            holder[key] = copy
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, list):
            holder[key] = copy_list = list(item)
            stack.extend((copy_list, i) for i in range(len(copy_list)))
    return root[0]


def _surrogate_at(value: Any, at: str = "$") -> str:
    """Where the first string holding a lone surrogate is in ``value`` (msgspec's path notation),
    found breadth first in one pass."""
    pending: deque[tuple[Any, str]] = deque([(value, at)])
    while pending:
        item, where = pending.popleft()
        if type(item) is str and fs_path(item) != item:
            return where
        if isinstance(item, dict):
            for key, member in item.items():
                if type(key) is str and fs_path(key) != key:
                    return where
                pending.append((member, f"{where}.{key}"))
        elif isinstance(item, list):
            pending.extend((member, f"{where}[{i}]") for i, member in enumerate(item))
    return at


def search_words(search: str) -> list[str]:
    """The distinct words of a pi/getTree ``search`` (the TUI's tokens: lowercased, split on white
    space); -32602 beyond :data:`MAX_SEARCH_WORDS`."""
    words = list(dict.fromkeys(search.lower().split()))
    if len(words) > MAX_SEARCH_WORDS:
        raise invalid_params(
            f"Invalid params: `search` holds {len(words)} distinct words, more than the {MAX_SEARCH_WORDS} "
            "a search may hold"
        )
    return words


APPEND_KINDS: dict[str, type[Any]] = {
    str(cls.__struct_config__.tag): cls
    for cls in (
        AppendMessage,
        AppendThinkingLevelChange,
        AppendModelChange,
        AppendUsage,
        AppendCompaction,
        AppendCustom,
        AppendCustomMessage,
        AppendSessionInfo,
        AppendLabel,
        AppendContextEdit,
    )
}


def parse_append(params: Any) -> AppendParams:
    """The appender's params, chosen by ``kind`` (a dict lookup: converting to the union is slow)."""
    if isinstance(params, dict):
        kind = params.get("kind")
        if kind is None and "kind" not in params:
            raise invalid_params("Invalid params: Object missing required field `kind`")
        struct = APPEND_KINDS.get(kind) if isinstance(kind, str) else None
        if struct is None:
            raise invalid_params(
                f"Invalid params: Invalid value {_described(kind)} - at `$.kind` "
                f"(expected one of {', '.join(APPEND_KINDS)})"
            )
        return parse(params, struct)  # type: ignore[no-any-return]
    return parse(params, AppendMessage)


def id_key(value: Any) -> tuple[type, str]:
    """A key for an ``Id`` param (of what is kept for the next request) that tells 1, 1.0 and true
    apart. An object or an array is no entry's id (ids are compared strictly, and it is a value of
    this request): they all find the same, nothing, and share one key without being written out
    (the repr of one nested thousands deep fails)."""
    if type(value) in (dict, list):
        return dict, "an object or an array"
    return type(value), repr(value)


def _described(value: Any) -> str:
    """``value`` as an error message shows it: a string (its start), else its JSON type."""
    if type(value) is str:
        return quoted_start(value)
    return f"of JSON type {_JSON_TYPES.get(type(value), 'number')}"


_JSON_TYPES = {dict: "object", list: "array", bool: "boolean", type(None): "null", str: "string"}


def profile_of(p: Any, default: Profile) -> Profile:
    """The pi release a request asks for (its ``pi``), or ``default``; -32602 naming the releases
    the server knows for any other."""
    pi = getattr(p, "pi", UNSET)
    if pi is UNSET:
        return default
    try:
        return profile_for(pi)
    except PiVersionError as error:
        raise invalid_params(f"Invalid params: {error} - at `$.pi`") from None


def opt(value: Any) -> Any:
    """UNSET (field left out) -> ABSENT (JS undefined)."""
    return ABSENT if value is UNSET else value


def options_dict(options: SessionOptions | UnsetType) -> Any:
    """The reference's ``options`` object, or ABSENT."""
    if options is UNSET:
        return ABSENT
    result: dict[str, Any] = {}
    if options.id is not UNSET:
        result["id"] = options.id
    if options.parent_session is not UNSET:
        result["parentSession"] = options.parent_session
    return result
