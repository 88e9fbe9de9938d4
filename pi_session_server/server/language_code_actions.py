"""Code actions: the quick fixes of the lines asked about, "Fix All", and the commands that change
files: a repair of the file on disk (what the editor's text cannot hold: a byte order mark it
hides), and an image moved out of the session into a file of its own next to it."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from pi_session_server.analysis import autofix, repairs
from pi_session_server.analysis.diagnostics import diagnostics_of_lines
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.errors import StaleFileError
from pi_session_server.render.editor_text import shown_line

from .language_conversions import start_first
from .language_document_state import DocState
from .locations import path_of_uri

if TYPE_CHECKING:
    from .language_documents import LanguageDocuments

EXTRACT_IMAGE = "pi.session.extractImage"
#: repairs made to the file on disk (a byte order mark the editor hides), as `repair --in-place`
REPAIR_FILE = "pi.session.repairFile"
#: the kind of the "fix all" source action (VS Code's codeActionsOnSave "source.fixAll" includes it)
FIX_ALL = "source.fixAll.pi-session"


class CodeActions:
    """The code actions of a document, and the commands they run (on the document's worker)."""

    def __init__(self, documents: LanguageDocuments) -> None:
        self.documents = documents
        self.server = documents.server
        self.convert = documents.convert
        self.diagnostics = documents.diagnostics

    def workspace_cwd(self) -> str | None:
        """The directory a document without a file (an untitled one) is taken to belong to, as pi
        writes its working directory in a session's header: the client's first workspace folder,
        else its root; None without either (the analysis then takes this process's)."""
        try:
            workspace = self.server.workspace
        except RuntimeError:  # not initialized
            return None
        for folder in list(workspace.folders.values()):
            path = path_of_uri(folder.uri)
            if path:
                return path
        root = workspace.root_uri
        return (path_of_uri(root) if root else None) or workspace.root_path or None

    def _resolve_support(self) -> bool:
        try:
            caps = self.server.client_capabilities
        except AttributeError:
            return False
        action = caps.text_document.code_action if caps.text_document else None
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties)

    def workspace_edit(self, state: DocState, edits: Sequence[repairs.TextEdit]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(
            changes={
                state.uri: [
                    types.TextEdit(
                        self.convert.range(state, e.start_line, e.start, e.end, e.end_line), e.new_text
                    )
                    for e in edits
                ]
            }
        )

    def code_actions(self, state: DocState, params: types.CodeActionParams) -> list[types.CodeAction]:
        doc = state.opened()
        only = params.context.only
        out = []
        if only is not None and _asks_for(only, FIX_ALL):
            automatic = params.context.trigger_kind == types.CodeActionTriggerKind.Automatic
            fix_all = self._fix_all_action(state, on_disk=not automatic)
            if fix_all is not None:
                out.append(fix_all)
        if only is not None and not _asks_for(only, types.CodeActionKind.QuickFix):
            return out
        selection = start_first(params.range)
        first = self.convert.line_of(state, selection.start.line)
        last = max(first, self.convert.line_of(state, _last_line_selected(selection)))
        resolve = self._resolve_support()
        # (its lines' only: asked at a pause of the search for the document's, it would make that twice)
        diags = diagnostics_of_lines(doc, first, last)
        for repair in repairs.repairs(doc, first, last, state.path, self.workspace_cwd()):
            if repair.image is not None and not self._image_movable(state, repair):
                continue
            action = types.CodeAction(
                title=shown_line(repair.title),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[
                    self.diagnostics.lsp_diagnostic(state, d)
                    for d in diags
                    if d.code == repair.code and d.line == repair.line
                ],
                is_preferred=repair.preferred,
            )
            if resolve:  # the edit (or the command) is computed when the user picks the action
                action.data = {"uri": state.uri, "version": doc.version, "key": list(repair.key)}
            else:
                self._complete(state, action, repair)
            out.append(action)
        return out

    @staticmethod
    def _image_movable(state: DocState, repair: repairs.Repair) -> bool:
        """Whether moving the image out of the file can succeed: the session has a file to write
        it next to, and its data is one strict base64 string (what :meth:`extract_image` checks
        again when it runs: the text may change meanwhile). Decided once for each text of the
        image's line."""
        if state.path is None or repair.image is None:
            return False
        lines = state.opened().lines
        info = lines[repair.line]
        known = state.image_verdicts.get(repair.key)
        if known is not None and known[0] is info:
            return known[1]
        verdict = repair.image() is not None
        # (the verdicts of lines edited or removed since go: they would keep old lines alive)
        kept = {key: v for key, v in state.image_verdicts.items() if _in_document(lines, v[0])}
        kept[repair.key] = (info, verdict)
        state.image_verdicts = kept
        return verdict

    def _complete(self, state: DocState, action: types.CodeAction, repair: repairs.Repair) -> None:
        """What picking a repair does: a text edit, or a command for what a text edit cannot do."""
        if repair.image is not None:
            action.command = self._image_command(state, repair)
        elif repair.on_disk:
            action.command = self._file_command(state, repair.title, list(repair.key))
        else:
            action.edit = self.workspace_edit(state, repair.edits())

    @staticmethod
    def _file_command(state: DocState, title: str, key: list[Any]) -> types.Command:
        return types.Command(
            shown_line(title), REPAIR_FILE, arguments=[state.uri, state.opened().version, key]
        )

    def _fix_all_action(self, state: DocState, on_disk: bool = True) -> types.CodeAction | None:
        """Every repair that loses nothing (``pi-session repair``'s default), as one action: what
        "Fix All" and ``"editor.codeActionsOnSave": {"source.fixAll": ...}`` run. Only offered when
        the client asks for source actions (planning reads the whole document).

        When the file on disk needs a repair the text cannot hold (a byte order mark the editor
        hides), an explicit Fix All (``on_disk``) repairs the file itself, all of it, as ``pi-session
        repair --in-place`` does, and the editor reloads it; run automatically (on save: the editor
        writes its text right after) it makes the text's repairs only."""
        plan = autofix.plan_repairs(state.opened(), autofix.SAFE_CODES, state.path, self.workspace_cwd())
        to_file = on_disk and bool(plan.on_disk)
        count = len(plan.applied) + (len(plan.on_disk) if to_file else 0)
        if not count:
            return None
        where = ", in the file on disk" if to_file else ""
        action = types.CodeAction(
            title=f"Fix all problems pi-session can repair without loss ({count} repair{'s' if count > 1 else ''}{where})",
            kind=FIX_ALL,
        )
        if self._resolve_support():
            action.data = {
                "uri": state.uri,
                "version": state.opened().version,
                "key": [FIX_ALL],
                "onDisk": to_file,
            }
        elif to_file:
            action.command = self._file_command(state, action.title, [FIX_ALL])
        else:
            action.edit = self.workspace_edit(state, _plan_edits(plan))
        return action

    def _find_repair(self, state: DocState, version: Any, key: list[Any]) -> repairs.Repair | None:
        doc = state.opened()
        if doc.version != version or not key:
            return None
        line = repair_line(key)
        first, last = (0, doc.line_count - 1) if line is None else (line, line)
        for repair in repairs.repairs(doc, first, last, state.path, self.workspace_cwd()):
            if list(repair.key) == key:
                return repair
        return None

    def resolve_code_action(self, state: DocState, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        if data.get("key") == [FIX_ALL]:
            if state.opened().version != data.get("version"):
                return action
            if data.get("onDisk") is True:
                action.command = self._file_command(state, action.title, [FIX_ALL])
            else:
                plan = autofix.plan_repairs(
                    state.opened(), autofix.SAFE_CODES, state.path, self.workspace_cwd()
                )
                action.edit = self.workspace_edit(state, _plan_edits(plan))
            return action
        repair = self._find_repair(state, data.get("version"), data.get("key") or [])
        if repair is not None:
            self._complete(state, action, repair)
        return action

    @staticmethod
    def _image_command(state: DocState, repair: repairs.Repair) -> types.Command:
        doc = state.opened()
        return types.Command(
            shown_line(repair.title), EXTRACT_IMAGE, arguments=[state.uri, doc.version, list(repair.key)]
        )

    def repair_file(self, state: DocState, version: Any, key: list[Any]) -> Any:
        """On the worker: make a repair (``key``: a repair's, or ``[FIX_ALL]`` for every repair
        that loses nothing) to the file on disk under its lock, as ``pi-session repair --in-place``
        does, if the editor's text is what the file holds (without the byte order mark the editor
        hides). The editor then reloads the file; its problems are published again."""
        doc = state.opened()
        changed = "the document changed; ask for the code action again"
        if state.path is None or doc.version != version:
            return self._not_applied(changed)
        if key == [FIX_ALL]:
            chosen = autofix.SAFE_CODES
        else:
            repair = self._find_repair(state, version, key)
            if repair is None or not repair.on_disk:
                return self._not_applied(changed)
            chosen = frozenset({repair.code})
        try:
            done = autofix.repair_file(state.path, chosen, doc.profile, text=doc.data())
        except StaleFileError as error:
            return self._not_applied(str(error))
        except OSError as error:
            return self._not_applied(f"{state.path}: {error.strerror or error}")
        self.documents.file_changed(state)
        return {"applied": True, "file": state.path, "repairs": done.repairs, "kept": done.kept}

    def _not_applied(self, reason: str) -> dict[str, Any]:
        """A repair command that did nothing: the reply says why, and so does the editor (a client
        does not show what a command answers)."""
        self.server.notify(
            types.WINDOW_SHOW_MESSAGE,
            {
                "type": types.MessageType.Warning.value,
                "message": shown_line(f"pi-session: nothing repaired: {reason}"),
            },
        )
        return {"applied": False, "reason": reason}

    def extract_image(self, state: DocState, version: Any, key: list[Any]) -> Any:
        """On the worker: write the image next to the session; the edit that replaces the block
        (or why nothing was done)."""
        if state.path is None:
            return self._not_applied("the document has no file to write the image next to: save it first")
        repair = self._find_repair(state, version, key)
        if repair is None or repair.image is None:
            return self._not_applied("the document changed; ask for the code action again")
        plan = repair.image()
        if plan is None:  # (not one strict base64 string: nothing is taken out that a file would not hold)
            return self._not_applied("the image data is not valid base64: it stays in the session")
        try:
            target = _write_new_file(os.path.join(os.path.dirname(state.path), plan.file_name), plan.data)
        except OSError as error:
            where = error.filename if isinstance(error.filename, str) else plan.file_name
            return self._not_applied(f"the image could not be written to {where}: {error.strerror or error}")
        edit = plan.edit
        if os.path.basename(target) != plan.file_name:
            edit = repairs.TextEdit(
                edit.start_line,
                edit.start,
                edit.end_line,
                edit.end,
                edit.new_text.replace(plan.file_name, os.path.basename(target)),
            )
        return types.ApplyWorkspaceEditParams(
            self.workspace_edit(state, [edit]), label=shown_line(repair.title)
        ), target


def _last_line_selected(selection: types.Range) -> int:
    """The last line a selection holds a character of: one that ends at the start of a line (a
    whole line selected, as clicking its number does) ends on the line before."""
    end = selection.end
    if end.character == 0 and end.line > selection.start.line:
        return end.line - 1
    return end.line


def _asks_for(only: Sequence[str], kind: str) -> bool:
    """Does a ``context.only`` list ask for actions of ``kind``? (A kind covers its subkinds:
    "source" asks for "source.fixAll.pi-session".)"""
    return any(k == kind or kind.startswith(k + ".") for k in only)


def repair_line(key: Sequence[Any]) -> int | None:
    """The line a repair's key names (None for a repair of the file: its header, its encoding)."""
    return key[1] if len(key) > 1 and type(key[1]) is int else None


def quick_fixes_only(params: types.CodeActionParams) -> bool:
    """A code action request that asks for no "fix all" action: the quick fixes of the lines of its
    range, what the editor asks at every cursor move (a "fix all" plans every repair of the
    document)."""
    only = params.context.only
    return only is None or not _asks_for(only, FIX_ALL)


def _plan_edits(plan: autofix.Plan) -> list[repairs.TextEdit]:
    return [edit for planned in plan.applied for edit in planned.repair.edits()]


def _in_document(lines: Sequence[LineInfo], info: LineInfo) -> bool:
    """``info`` is still one of ``lines`` (an edit gives the lines it changes new facts and
    renumbers the others)."""
    return info.line < len(lines) and lines[info.line] is info


def _free_name(path: str) -> str:
    """``path``, or ``<stem>-<n><ext>`` with the first n that names nothing (a dangling symlink
    takes its name too: creating the file would fail)."""
    if not os.path.lexists(path):
        return path
    stem, ext = os.path.splitext(path)
    n = 2
    while os.path.lexists(f"{stem}-{n}{ext}"):
        n += 1
    return f"{stem}-{n}{ext}"


_NAME_TRIES = 8  # names tried when another program takes each free name first


def _write_new_file(path: str, data: bytes) -> str:
    """Write ``data`` to a new file at ``path`` or the next free name (:func:`_free_name`; another
    program, such as a second editor window moving the same image, may take it between the look
    and the creation: the next one is tried); the path written. A write that fails removes the
    file it made. Raises OSError."""
    for _ in range(_NAME_TRIES):
        target = _free_name(path)
        try:
            f = open(target, "xb")  # noqa: SIM115 - closed below, removed if the write fails
        except FileExistsError:
            continue
        try:
            with f:
                f.write(data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target)
            raise
        return target
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
