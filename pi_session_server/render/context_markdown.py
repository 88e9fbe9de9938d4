"""The LLM context of a session as a Markdown document, written once for every front end:
``pi-session context`` prints it, and ``pi/buildSessionContext`` with ``format: "markdown"`` answers
it, which the editors show as it comes.

The document: a title, the model, thinking level and message count, then one section per message
(``## 3. toolResult (bash, error)``) holding its text, thinking as a quote, tool calls with their
arguments as JSON, images as a placeholder, bash executions as a console block. Text from the session
is put in fences longer than any backtick run it holds, so it cannot close them. Lone surrogates are
shown as U+FFFD (the document is for display). JSON is laid out down to ``READABLE_DEPTH`` levels and
written on one line below: the document stays about the size of the context whatever it nests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..format.jsjson import READABLE_DEPTH, dumps, dumps_pretty
from ..format.jstext import as_displayed
from ..format.jsvalue import ABSENT, js_string_of

__all__ = ["context_markdown", "context_title", "id_text", "model_text"]

_BACKTICKS = re.compile("`+")


def id_text(entry_id: Any) -> str:
    """An entry id as text: a string as it is, any other value as JSON."""
    return entry_id if isinstance(entry_id, str) else _json(entry_id)


def context_title(file_name: str | None, leaf_id: Any = ABSENT) -> str:
    """``Context of FILE at the leaf`` (or ``at entry ID`` for the context at another entry)."""
    where = "the leaf" if leaf_id is ABSENT else f"entry {id_text(leaf_id)}"
    return f"Context of {file_name or 'an in-memory session'} at {where}"


def model_text(model: Any) -> str:
    """``provider/modelId`` of a context's model: "none" without a model, "unknown" when the
    message it comes from names neither (old sessions), "?" for the part it does not name."""
    if not isinstance(model, Mapping):
        return "none"
    parts = [model.get(key) for key in ("provider", "modelId")]
    if all(_missing(part) for part in parts):
        return "unknown"
    return "/".join("?" if _missing(part) else js_string_of(part) for part in parts)


def context_markdown(context: Mapping[str, Any], title: str) -> str:
    """The Markdown document of a ``buildSessionContext`` result ``{messages, thinkingLevel, model}``."""
    messages = context.get("messages")
    messages = messages if isinstance(messages, list) else []
    thinking = context.get("thinkingLevel")
    lines = [
        f"# {title}",
        "",
        f"- model: {model_text(context.get('model'))}",
        f"- thinking level: {'off' if _missing(thinking) else js_string_of(thinking)}",
        f"- messages: {len(messages)}",
        "",
    ]
    for number, message in enumerate(messages, 1):
        if isinstance(message, Mapping):
            body = _body(message).strip()
            lines += [_heading(message, number), "", body or "*(empty)*", ""]
        else:
            lines += [f"## {number}. ?", "", _fence(_json(message), "json"), ""]
    return as_displayed("\n".join(lines))


def _heading(message: Mapping[str, Any], number: int) -> str:
    role = _text(message.get("role")) or "?"
    extra: list[str] = []
    if role == "assistant" and _present(message.get("model")):
        extra.append(_text(message.get("model")))
    elif role == "toolResult":
        extra.append(_text(message.get("toolName")) or "tool")
        if message.get("isError") is True:
            extra.append("error")
    elif role == "custom" and _present(message.get("customType")):
        extra.append(_text(message.get("customType")))
    return f"## {number}. {role}" + (f" ({', '.join(extra)})" if extra else "")


def _body(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "bashExecution":
        console = f"$ {_text(message.get('command'))}\n{_text(message.get('output'))}"
        return f"{_fence(console, 'console')}\nexit code: {_text(message.get('exitCode'))}"
    if role == "compactionSummary" or role == "branchSummary":
        return _text(message.get("summary"))
    body = _content(message.get("content"))
    if role == "assistant" and _present(message.get("errorMessage")):
        return f"{body}\n\n**error:** {_text(message.get('errorMessage'))}"
    return body


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(_block(block) for block in content)
    if _missing(content):
        return ""
    return _fence(_pretty(content), "json")


def _block(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return _fence(_pretty(block), "json")
    kind = block.get("type")
    if kind == "text":
        return _text(block.get("text"))
    if kind == "thinking":
        return "> *thinking:* " + _text(block.get("thinking")).replace("\n", "\n> ")
    if kind == "toolCall":
        arguments = block.get("arguments")
        call = f"**tool call** `{_text(block.get('name')) or '?'}` ({_text(block.get('id'))})"
        return f"{call}\n\n{_fence(_pretty({} if _missing(arguments) else arguments), 'json')}"
    if kind == "image":
        return f"*[image {_text(block.get('mimeType'))}]*"
    return _fence(_pretty(block), "json")


def _fence(text: str, language: str = "") -> str:
    """``text`` in a fence longer than any backtick run inside it (at least three backticks)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def _missing(value: Any) -> bool:
    return value is None or value is ABSENT


def _present(value: Any) -> bool:
    """JS truthiness of a field the heading shows only when it is set."""
    return not _missing(value) and value != "" and value is not False and value != 0


def _text(value: Any) -> str:
    """``String(value ?? "")``."""
    return "" if _missing(value) else js_string_of(value)


def _json(value: Any) -> str:
    try:
        return dumps(value)
    except (TypeError, ValueError):
        return js_string_of(value)


def _pretty(value: Any) -> str:
    try:
        return dumps_pretty(value, indented_depth=READABLE_DEPTH)
    except (TypeError, ValueError):
        return js_string_of(value)
