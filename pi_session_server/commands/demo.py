"""``pi-session demo [FILE]``: the sidecar as a front end sees it.

Starts ``python -m pi_session_server serve`` as a subprocess, talks JSON-RPC to it over stdio exactly
as an editor would (initialize, pi/getInfo, pi/getTree, pi/buildSessionContext, shutdown), and prints the
session's tree (drawn, with labels, branch points and the leaf) and its LLM context as pi release
``--pi`` builds it (sent as ``initializationOptions.piVersion``). Without FILE it shows the bundled
example session.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from pi_session_server.commands._common import (
    add_pi_argument,
    counted,
    output_encoding,
    output_glyphs,
    path_problem,
    say_leaf_not_found,
    terminal_columns,
    why_not_a_session,
    width,
)
from pi_session_server.format.jsvalue import js_string_of
from pi_session_server.render.context_markdown import model_text
from pi_session_server.render.glyphs import Glyphs, cut, cut_start, one_line_cut
from pi_session_server.render.terminal_text import one_terminal_line
from pi_session_server.render.tree_text import NO_ENTRIES
from pi_session_server.render.written_text import written_width
from pi_session_server.server.errors import INVALID_SESSION_FILE, MAX_TREE_NODES
from pi_session_server.server.stdio_client import RpcError, SidecarClient
from pi_session_server.session.tree_modes import FILTERS

# The lines' width when neither --width nor the terminal's width (COLUMNS, or stdout's terminal)
# says otherwise: piped output is the same whatever terminal it ran from.
DEFAULT_WIDTH = 110
# The context's lines are indented under their heading by this much (within the width).
CONTEXT_INDENT = "  "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="a pi session file (default: the bundled example session)")
    parser.add_argument(
        "--filter",
        choices=FILTERS,
        default="default",
        help="which entries the tree shows: pi's /tree modes, or none (every entry); default: pi's default",
    )
    parser.add_argument("--leaf", metavar="ID", help="show the context at this entry instead of the leaf")
    parser.add_argument(
        "--width",
        type=width,
        help="line width (at least 1; default: the terminal's, as COLUMNS or the terminal says; "
        f"{DEFAULT_WIDTH} when neither does)",
    )
    parser.add_argument("--ascii", action="store_true", help="draw with ASCII characters only")
    add_pi_argument(parser)


def example_path() -> Path:
    return Path(str(resources.files("pi_session_server") / "examples" / "example-session.jsonl"))


def server_command() -> tuple[list[str], dict[str, str]]:
    """``python -m pi_session_server serve`` with this package importable, however it is installed."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        package_root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else package_root
    )
    return [sys.executable, "-m", "pi_session_server", "serve"], env


def _clip(text: str, width: int, ellipsis: str, encoding: str | None) -> str:
    return cut(" ".join(text.split()), width, ellipsis, encoding)


def draw_tree(tree: dict[str, Any], width: int, glyphs: Glyphs, encoding: str | None = None) -> list[str]:
    """Lines of the tree: a chain of single children stays in one column; a branch point fans out.
    Each preview is cut to what its line's other parts leave of ``width`` columns, as written in
    ``encoding`` (the output's; None: one that writes every character)."""
    nodes = {n["id"]: n for n in tree["nodes"]}
    roots = [n for n in tree["nodes"] if n["visibleParentId"] is None]
    lines: list[str] = []
    # (node, prefix of its own line, prefix of the lines below it)
    stack: list[tuple[dict[str, Any], str, str]] = []
    if len(roots) > 1:
        for i, root in enumerate(reversed(roots)):
            last = i == 0
            stack.append((root, glyphs.last if last else glyphs.tee, glyphs.gap if last else glyphs.bar))
    else:
        stack.extend((root, "", "") for root in roots)
    while stack:
        node, prefix, below = stack.pop()
        marks = []
        if node.get("label"):
            marks.append(f"[{node['label']}]")
        if node["isLeaf"]:
            marks.append(glyphs.leaf)
        bullet = glyphs.dot + " " if node["onLeafPath"] else "  "
        tail = (" " + " ".join(marks)) if marks else ""
        head = f"{prefix}{bullet}{js_string_of(node['id'])} "
        room = width - written_width(head, encoding) - written_width(tail, encoding)
        preview = node.get("preview") or f"[{node.get('type')}]"
        lines.append(head + _clip(preview, room, glyphs.ellipsis, encoding) + tail)
        children = [nodes[c] for c in node["childIds"] if c in nodes]
        if len(children) == 1:
            stack.append((children[0], below, below))
            continue
        for i, child in enumerate(reversed(children)):
            last = i == 0
            stack.append(
                (
                    child,
                    below + (glyphs.last if last else glyphs.tee),
                    below + (glyphs.gap if last else glyphs.bar),
                )
            )
    return lines


def _message_text(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        return str(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {message.get('command', '')}  {message.get('output', '')}"
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "toolCall":
            parts.append(
                f"{block.get('name')}({', '.join(f'{k}={v!r}' for k, v in (block.get('arguments') or {}).items())})"
            )
        elif block.get("type") == "thinking":
            parts.append(f"(thinking) {block.get('thinking', '')}")
    return " ".join(parts)


def draw_context(
    context: dict[str, Any], width: int, glyphs: Glyphs, encoding: str | None = None
) -> list[str]:
    """The context's lines: a line a message, its text cut to what its number and role leave of
    ``width`` columns, as written in ``encoding`` (see :func:`draw_tree`)."""
    messages = context["messages"]
    lines = [
        f"{counted(len(messages), 'message')}, model {model_text(context.get('model'))}, thinking {context.get('thinkingLevel', 'off')}"
    ]
    for number, message in enumerate(messages, 1):
        role = str(message.get("role"))
        if role == "toolResult":
            role = f"toolResult:{message.get('toolName')}"
        head = f"{number:>3} {role:<18} "
        room = width - written_width(head, encoding)
        lines.append(head + _clip(_message_text(message), room, glyphs.ellipsis, encoding))
    return lines


def whole_tree(client: Any, params: dict[str, Any], page_size: int = MAX_TREE_NODES) -> dict[str, Any]:
    """pi/getTree (flat form) in pages joined into one result, as the editors read big trees."""
    nodes: list[Any] = []
    offset = 0
    while True:
        page = client.request("pi/getTree", {**params, "form": "flat", "offset": offset, "limit": page_size})
        nodes.extend(page["nodes"])
        following = page.get("nextOffset")
        if (
            not page.get("hasMore")
            or not page["nodes"]
            or not isinstance(following, int)
            or following <= offset
        ):
            return {**page, "nodes": nodes}
        offset = following


class _Lines:
    """The demo's lines on stdout, each no wider than the width asked for: cut to it as written in
    stdout's encoding (a line whose parts leave nothing of a preview, a long path or name), what
    it holds of the session (ids, the cwd, previews, messages) with its control characters as
    escapes, as the other commands print them."""

    def __init__(self, width: int, ellipsis: str, encoding: str) -> None:
        self.width = width
        self.ellipsis = ellipsis
        self.encoding = encoding

    def show(self, line: str = "") -> None:
        print(one_line_cut(line, self.width, self.ellipsis, self.encoding))


def _entries_and_leaf(info: dict[str, Any]) -> str:
    """The session's number of entries and its leaf (pi/getInfo's), or pi's words for none."""
    if not info["entryCount"]:
        return NO_ENTRIES
    return f"{counted(info['entryCount'], 'entry', 'entries')}   leaf {js_string_of(info.get('leafId'))}"


def _context_heading(leaf: str | None, info: dict[str, Any]) -> str:
    """Where the context shown is built: at ``leaf`` (--leaf), else at the session's leaf."""
    if leaf:
        return f"Context at entry {leaf}:"
    if not info["entryCount"]:
        return "Context (no entries):"
    return f"Context at the leaf {js_string_of(info.get('leafId'))}:"


def _session_to_show(file: str | None) -> Path | None:
    """The file the demo shows (links resolved), or None when it cannot be (said on stderr)."""
    if not file:
        return example_path()
    problem = path_problem(file)
    if problem is not None:
        print(f"pi-session demo: {one_terminal_line(os.path.abspath(file))}: {problem}", file=sys.stderr)
        return None
    return Path(os.path.realpath(file))


def run(args: argparse.Namespace) -> int:
    path = _session_to_show(args.file)
    if path is None:
        return 2
    line_width = args.width or terminal_columns() or DEFAULT_WIDTH
    glyphs = output_glyphs(args.ascii)
    encoding = output_encoding()[0]
    _show = _Lines(line_width, glyphs.ellipsis, encoding).show
    command, env = server_command()
    with SidecarClient(command, env=env) as client:
        # the release goes where an editor puts it: initializationOptions.piVersion
        client.initialize({"window": {"workDoneProgress": False}}, {"piVersion": args.pi})
        try:
            # by uri: a view that writes nothing, even where pi's open would (a v1 file's
            # migration, a missing final newline); pi/open by path writes as pi does
            info = client.request("pi/getInfo", {"uri": path.as_uri()})
            tree = whole_tree(client, {"session": info["session"], "filter": args.filter})
            context_params: dict[str, Any] = {"session": info["session"]}
            if args.leaf is not None:
                if (
                    not args.leaf
                    or client.request("pi/getEntry", {"session": info["session"], "id": args.leaf}) is None
                ):
                    say_leaf_not_found("demo", args.leaf, args.file)
                    return 1
                context_params["leafId"] = args.leaf
            context = client.request("pi/buildSessionContext", context_params)
        except RpcError as error:
            hint = why_not_a_session(str(path)) if error.rpc_code == INVALID_SESSION_FILE else ""
            print(
                one_terminal_line(
                    f"pi-session demo: {error.message} (JSON-RPC error {error.rpc_code}){hint}"
                ),
                file=sys.stderr,
            )
            return 2  # the file cannot be shown, as for the other commands
        name = info.get("sessionName") or "(no name)"
        _show(f"Session {name!r}  id {js_string_of(info['sessionId'])}")
        # a long path shown by its end, which names the file
        file = str(info.get("sessionFile", path))
        _show("  file " + cut_start(file, line_width - len("  file "), glyphs.ellipsis, encoding))
        _show(f"  cwd {info['cwd']}   {_entries_and_leaf(info)}")
        skipped = info["skippedLines"]
        if skipped:  # what pi would not say: the file is damaged, entries are missing
            _show(f"  {counted(skipped, 'line')} of the file pi skips:")
            for problem in info["skipped"][:3]:  # (each message cut with its line)
                _show(f"    line {problem['line'] + 1}: {problem['message']}")
            if skipped > 3:
                _show(f"    and {skipped - 3:,} more (pi-session check {path})")
        _show()
        shown = len(tree["nodes"])
        _show(
            f"Tree (filter {args.filter}: {shown:,} of {counted(info['entryCount'], 'entry', 'entries')}; {glyphs.dot} = on the path to the leaf)"
        )
        for line in draw_tree(tree, line_width, glyphs, encoding):
            _show(line)
        _show()
        _show(_context_heading(args.leaf, info))
        for line in draw_context(context, line_width - len(CONTEXT_INDENT), glyphs, encoding):
            _show(CONTEXT_INDENT + line)
        client.request("pi/close", {"session": info["session"]})
    return 0
