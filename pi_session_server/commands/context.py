"""``pi-session context [FILE] [--leaf ID] [--json] [--pi VERSION]``: what the LLM would be sent at the
leaf (or at ID), as pi release VERSION builds it (1.6.0 by default: context edits applied, older
compactions in the kept range silent)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..format.jsjson import dumps_pretty
from ..format.jsvalue import ABSENT, js_string_of
from ..session.describe import content_text, tool_call_text
from ._common import (
    add_index_argument,
    add_pi_argument,
    model_text,
    open_to_look,
    report_skipped_lines,
    session_path,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="session file (default: the bundled example session)")
    parser.add_argument("--leaf", help="build the context at this entry id instead of the session's leaf")
    parser.add_argument("--json", action="store_true", help="print the context as JSON (pi's value)")
    add_pi_argument(parser)
    add_index_argument(parser)


def message_text(message: Any) -> str:
    """A readable rendering of one context message."""
    if not isinstance(message, dict):
        return js_string_of(message)
    role = message.get("role", ABSENT)
    content = message.get("content")
    if role == "assistant" and isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                parts.append(js_string_of(block.get("text", "")))
            elif block.get("type") == "thinking":
                parts.append("(thinking) " + js_string_of(block.get("thinking", "")))
            elif block.get("type") == "toolCall":
                parts.append("(tool call) " + tool_call_text(block.get("name"), block.get("arguments")))
        return "\n".join(parts)
    if role == "compactionSummary" or role == "branchSummary":
        return js_string_of(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {js_string_of(message.get('command', ''))}\n{js_string_of(message.get('output', ''))}"
    if role == "toolResult":
        return f"({js_string_of(message.get('toolName', 'tool'))}) " + content_text(content, "\n")
    return content_text(content, "\n")


def run(args: argparse.Namespace) -> int:
    path = session_path(args.file)
    manager = open_to_look(path, args.pi, index=args.index)
    report_skipped_lines("context", path, manager)
    if args.leaf is not None:
        if manager.get_entry(args.leaf) is ABSENT:
            print(f"pi-session context: Entry {args.leaf} not found", file=sys.stderr)
            return 1
        context = manager.build_session_context_at(args.leaf)
    else:
        context = manager.build_session_context()
    if args.json:
        print(dumps_pretty(context))
        return 0
    print(
        f"model: {model_text(context.get('model'))}   thinking: {js_string_of(context.get('thinkingLevel'))}   "
        f"messages: {len(context['messages'])}\n"
    )
    for message in context["messages"]:
        role = message.get("role") if isinstance(message, dict) else None
        print(f"── {js_string_of(role)} " + "─" * max(0, 60 - len(js_string_of(role))))
        print(message_text(message))
        print()
    return 0
