"""Language features for session files: the ``textDocument/*`` handlers, thin routes to the parts
that do the work over :mod:`pi_session_server.analysis`:

* :mod:`.language_documents`: the documents' life (opened, changed, saved, closed, reopened) and
  the queueing of every request about one on the document's serial queue;
* :mod:`.language_disk_reads`: the session files the editor did not send, read from disk and
  followed there;
* :mod:`.language_diagnostics`: their problems, pushed or pulled;
* :mod:`.language_answers`: the read-only answers (hover, navigation, completion, outline, folding,
  hints, lenses, selection ranges);
* :mod:`.language_code_actions`: the quick fixes, "Fix All", and the commands that write files
  (a repair of the file on disk, an image moved out of the session);
* :mod:`.language_conversions`: positions and answers in the client's terms;
* :mod:`.language_document_state`: what is kept of each document.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .errors import INVALID_PARAMS
from .language_answers import DocumentAnswers
from .language_code_actions import (
    EXTRACT_IMAGE,
    FIX_ALL,
    REPAIR_FILE,
    CodeActions,
    quick_fixes_only,
    repair_line,
)
from .language_diagnostics import SOURCE
from .language_document_state import DocState
from .language_documents import LanguageDocuments
from .workers import Job, on_loop

if TYPE_CHECKING:
    from .app import PiSessionServer

_NOT_A_SESSION = {"applied": False, "reason": "not a session document"}


def register_language_features(server: PiSessionServer) -> LanguageDocuments:
    """Register the ``textDocument/*`` features for session files on ``server``; its documents."""
    documents = LanguageDocuments(server)
    answers = DocumentAnswers(documents.convert)
    actions = CodeActions(documents)
    connection = server.connection
    route = connection.lsp_route

    route(server, types.TEXT_DOCUMENT_DID_OPEN)(documents.did_open)
    route(server, types.TEXT_DOCUMENT_DID_CHANGE)(documents.did_change)
    route(server, types.TEXT_DOCUMENT_DID_CLOSE)(documents.did_close)
    route(server, types.TEXT_DOCUMENT_DID_SAVE)(documents.did_save)
    connection.raw_route(types.TEXT_DOCUMENT_DID_OPEN, documents.did_open_raw)

    def about_document(
        method: str,
        answer: Callable[[DocState, Any], Any],
        options: Any = None,
        otherwise: Any = None,
        whole_document: bool = False,
        content_modified: bool = True,
        urgent: bool | Callable[[Any], bool] = False,
        exact_early: Callable[[DocState, Any], bool] | None = None,
    ) -> None:
        """A request about one document: a job on the document's queue (``otherwise`` for a
        document that is not a session; ``whole_document``, ``content_modified``, ``urgent``,
        ``exact_early``: see :meth:`LanguageDocuments.ask`; ``urgent`` may be decided by the
        request's params)."""

        def handler(params: Any) -> Any:
            return documents.ask(
                params.text_document.uri,
                lambda state: answer(state, params),
                otherwise=otherwise,
                gone=otherwise,
                whole_document=whole_document,
                content_modified=content_modified,
                urgent=urgent(params) if callable(urgent) else urgent,
                exact_early=None if exact_early is None else lambda state: exact_early(state, params),
            )

        route(server, method, options)(handler)

    about_document(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        documents.diagnostics.pull,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
        otherwise={"kind": "full", "items": []},
        # about the whole document, but computed once a version: the short requests asked after it
        # go first; answered for its text, even when a change comes after it
        whole_document=True,
        content_modified=False,
    )
    # about a position, where the user waits: answered ahead of the whole-document answers asked before
    about_document(types.TEXT_DOCUMENT_HOVER, answers.hover, urgent=True, exact_early=answers.hover_exact_now)
    # asked again by the editor after each change, each about the whole document (Neovim's inlay
    # hints and folds are asked for every line)
    about_document(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, answers.document_symbols, whole_document=True)
    about_document(types.TEXT_DOCUMENT_DEFINITION, answers.definition, urgent=True)
    about_document(types.TEXT_DOCUMENT_REFERENCES, answers.references, urgent=True)
    about_document(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, answers.document_highlights, urgent=True)
    about_document(types.TEXT_DOCUMENT_IMPLEMENTATION, answers.implementation, urgent=True)
    about_document(
        types.TEXT_DOCUMENT_COMPLETION,
        answers.completion,
        # a string's opening quote: the editor closes it, the cursor is then inside it
        types.CompletionOptions(trigger_characters=['"'], resolve_provider=False),
        urgent=True,
    )
    about_document(types.TEXT_DOCUMENT_FOLDING_RANGE, answers.folding, whole_document=True)
    about_document(
        types.TEXT_DOCUMENT_INLAY_HINT,
        answers.inlay_hints,
        types.InlayHintOptions(resolve_provider=False),
        whole_document=True,
    )
    about_document(
        types.TEXT_DOCUMENT_CODE_LENS,
        answers.code_lenses,
        types.CodeLensOptions(resolve_provider=False),
        whole_document=True,
    )
    about_document(types.TEXT_DOCUMENT_SELECTION_RANGE, answers.selection_ranges, urgent=True)
    about_document(
        types.TEXT_DOCUMENT_CODE_ACTION,
        actions.code_actions,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
        ),
        urgent=quick_fixes_only,  # (a "fix all", asked on save, waits its turn)
    )

    @route(server, types.CODE_ACTION_RESOLVE)
    def resolve_code_action(params: types.CodeAction) -> Any:
        data = params.data if isinstance(params.data, dict) else {}
        uri = data.get("uri")
        unresolved = documents.convert.encoded(params)
        if not isinstance(uri, str):
            return unresolved
        key = data.get("key")
        return documents.ask(
            uri,
            lambda state: actions.resolve_code_action(state, params),
            otherwise=unresolved,
            gone=unresolved,
            # the quick fix picked, which the user waits for: made from its line
            urgent=isinstance(key, list) and repair_line(key) is not None,
        )

    @connection.command(server, REPAIR_FILE)
    def repair_file(arguments: list[Any]) -> Any:
        uri, version, key = _command_arguments(REPAIR_FILE, arguments)
        return documents.ask(
            uri,
            lambda state: actions.repair_file(state, version, key),
            encode=False,
            otherwise=_NOT_A_SESSION,
        )

    @connection.command(server, EXTRACT_IMAGE)
    def extract_image(arguments: list[Any]) -> Any:
        uri, version, key = _command_arguments(EXTRACT_IMAGE, arguments)
        extracted = documents.ask(
            uri,
            lambda state: actions.extract_image(state, version, key),
            encode=False,
            otherwise=_NOT_A_SESSION,
        )
        return _apply_image_edit(server, extracted)

    return documents


async def _apply_image_edit(server: PiSessionServer, extracted: Any) -> Any:
    """Once the image is written (``extracted``: what :meth:`LanguageDocuments.ask` returned): ask
    the editor to replace the block with the reference to it."""
    if isinstance(extracted, Job):
        extracted = on_loop(extracted, asyncio.get_running_loop())
    done = await extracted if inspect.isawaitable(extracted) else extracted
    if not isinstance(done, tuple):
        return done
    edit, target = done
    try:
        result = await server.workspace_apply_edit_async(edit)
    except JsonRpcException as error:  # the editor refused the request or answered nonsense
        return {"applied": False, "file": target, "reason": error.message}
    return {"applied": bool(result.applied), "file": target}


def _command_arguments(command: str, arguments: list[Any]) -> tuple[str, int, list[Any]]:
    """``[uri, version, key]`` of a repair command; -32602 for anything else."""
    if (
        len(arguments) != 3
        or not isinstance(arguments[0], str)
        or not isinstance(arguments[1], int)
        or isinstance(arguments[1], bool)
        or not isinstance(arguments[2], list)
    ):
        raise JsonRpcException(
            code=INVALID_PARAMS,
            message=f"Invalid params: {command} takes [uri: string, version: integer, key: array]",
        )
    return arguments[0], arguments[1], arguments[2]
