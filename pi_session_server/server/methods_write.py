"""pi/append (every appender), pi/appendContextEdit, pi/branch, pi/resetLeaf, pi/branchWithSummary, pi/createBranchedSession,
pi/newSession, pi/setSessionFile: the methods that move the leaf or write."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pi_session_server.session import SessionManager
from pi_session_server.session.paths import resolve_path

from . import params as P
from .locations import require_regular_file
from .pending_deletes import deleted_as

if TYPE_CHECKING:
    from .app import PiSessionServer
    from .registry import Slot


def _append(manager: SessionManager, p: P.AppendParams) -> Any:  # noqa: C901 - one arm per append kind, typed
    """Call the appender for ``p.kind``; returns the new entry's id."""
    if isinstance(p, P.AppendMessage):
        return manager.append_message(P.opt(p.message))
    if isinstance(p, P.AppendThinkingLevelChange):
        return manager.append_thinking_level_change(P.opt(p.thinking_level))
    if isinstance(p, P.AppendModelChange):
        return manager.append_model_change(P.opt(p.provider), P.opt(p.model_id))
    if isinstance(p, P.AppendUsage):
        return manager.append_usage(
            P.opt(p.usage_kind), P.opt(p.provider), P.opt(p.model), P.opt(p.usage), P.opt(p.note)
        ).id
    if isinstance(p, P.AppendCompaction):
        return manager.append_compaction(
            P.opt(p.summary),
            P.opt(p.first_kept_entry_id),
            P.opt(p.tokens_before),
            P.opt(p.details),
            P.opt(p.from_hook),
            P.opt(p.usage),
        )
    if isinstance(p, P.AppendCustom):
        return manager.append_custom_entry(P.opt(p.custom_type), P.opt(p.data))
    if isinstance(p, P.AppendCustomMessage):
        return manager.append_custom_message_entry(
            P.opt(p.custom_type), P.opt(p.content), P.opt(p.display), P.opt(p.details)
        )
    if isinstance(p, P.AppendSessionInfo):
        return manager.append_session_info(P.opt(p.name))
    if isinstance(p, P.AppendLabel):
        return manager.append_label_change(P.opt(p.target_id), P.opt(p.label))
    if isinstance(p, P.AppendContextEdit):
        return manager.append_context_edit(P.opt(p.target_id), P.opt(p.replacement))
    raise AssertionError(f"unhandled append kind {type(p).__name__}")


def _new_entry(entry_id: Any, slot: Slot) -> Any:
    return {"id": entry_id, "leafId": slot.opened().get_leaf_id()}


def _new_usage_entry(entry_id: Any, slot: Slot) -> dict[str, Any]:
    """``appendUsage`` returns the whole entry in the reference."""
    manager = slot.opened()
    return {"id": entry_id, "leafId": manager.get_leaf_id(), "entry": manager.get_entry(entry_id)}


def register(server: PiSessionServer) -> None:
    _register_appends(server)
    _register_leaf_moves(server)
    _register_file_switches(server)


def _register_appends(server: PiSessionServer) -> None:
    """pi/append and pi/appendContextEdit."""
    route = server.connection.route

    @route("pi/append")
    def pi_append(params: Any) -> Any:
        p = P.parse_append(params)
        convert = _new_usage_entry if isinstance(p, P.AppendUsage) else _new_entry
        return server.session_call(p, lambda m: _append(m, p), write=True, convert=convert, append=True)

    @route("pi/appendContextEdit")
    def pi_append_context_edit(params: Any) -> Any:
        p = P.parse(params, P.AppendContextEditParams)
        return server.session_call(
            p,
            lambda m: m.append_context_edit(P.opt(p.target_id), P.opt(p.replacement)),
            write=True,
            convert=_new_entry,
            append=True,
        )


def _register_leaf_moves(server: PiSessionServer) -> None:
    """The requests that move the leaf within the session."""
    route = server.connection.route

    @route("pi/branch")
    def pi_branch(params: Any) -> Any:
        p = P.parse(params, P.BranchParams)

        def job(manager: SessionManager) -> Any:
            manager.branch(P.opt(p.entry_id))
            return {"leafId": manager.get_leaf_id()}

        return server.session_call(p, job, moves_leaf=True)

    @route("pi/resetLeaf")
    def pi_reset_leaf(params: Any) -> Any:
        p = P.parse(params, P.SessionParams)

        def job(manager: SessionManager) -> Any:
            manager.reset_leaf()
            return {"leafId": manager.get_leaf_id()}

        return server.session_call(p, job, moves_leaf=True)

    @route("pi/branchWithSummary")
    def pi_branch_with_summary(params: Any) -> Any:
        p = P.parse(params, P.BranchWithSummaryParams)

        def job(manager: SessionManager) -> Any:
            return manager.branch_with_summary(
                P.opt(p.branch_from_id),
                P.opt(p.summary),
                P.opt(p.details),
                P.opt(p.from_hook),
                P.opt(p.usage),
            )

        return server.session_call(p, job, write=True, moves_leaf=True, convert=_new_entry)


def _register_file_switches(server: PiSessionServer) -> None:
    """The requests that leave the manager on another session file."""
    route = server.connection.route

    def switched(value: Any, slot: Slot) -> dict[str, Any]:
        info = server.slot_info(slot)
        info["result"] = value
        return info

    @route("pi/createBranchedSession")
    def pi_create_branched_session(params: Any) -> Any:
        p = P.parse(params, P.CreateBranchedSessionParams)
        return server.session_call(
            p,
            lambda m: m.create_branched_session(P.opt(p.leaf_id)),
            write=True,
            switches_file=True,
            convert=switched,
        )

    @route("pi/newSession")
    def pi_new_session(params: Any) -> Any:
        p = P.parse(params, P.NewSessionParams)
        return server.session_call(
            p,
            lambda m: m.new_session(P.options_dict(p.options)),
            write=True,
            switches_file=True,
            convert=switched,
        )

    @route("pi/setSessionFile")
    def pi_set_session_file(params: Any) -> Any:
        p = P.parse(params, P.SetSessionFileParams)

        def job(manager: SessionManager) -> Any:
            require_regular_file(resolve_path(p.path, env=manager.environment))
            return manager.set_session_file(p.path)

        # the file is resolved in the session's environment, which a worker knows: a path that is
        # not absolute waits for every pending delete
        target = deleted_as(p.path, server.environment) if os.path.isabs(p.path) else None
        return server.session_call(p, job, write=True, switches_file=True, convert=switched, files=[target])
