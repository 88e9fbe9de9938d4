"""The context as Markdown (render/context_markdown.py): the one rendering the CLI prints and
pi/buildSessionContext answers with ``format: "markdown"`` for the editors to show."""

from __future__ import annotations

from pathlib import Path

from builders import assistant_message, tool_result_message, user_message

from pi_session_server import cli
from pi_session_server.format.jsjson import READABLE_DEPTH, dumps, parse
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.render.context_markdown import context_markdown, context_title, model_text
from pi_session_server.session import SessionManager


def test_headings_per_message_tool_calls_summaries_bash_and_errors() -> None:
    md = context_markdown(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "q"}, {"type": "image", "mimeType": "image/png"}],
                },
                {"role": "assistant", "content": [], "model": "m", "errorMessage": "boom"},
                {
                    "role": "toolResult",
                    "toolName": "bash",
                    "isError": True,
                    "content": [{"type": "text", "text": "r```x"}],
                },
                {"role": "compactionSummary", "summary": "S", "tokensBefore": 1},
                {"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0},
            ],
            "thinkingLevel": "high",
            "model": {"provider": "p", "modelId": "m"},
        },
        "T",
    )
    assert md.startswith("# T\n\n- model: p/m\n- thinking level: high\n- messages: 5\n")
    assert "## 1. user\n\nq\n\n*[image image/png]*\n" in md
    assert "## 2. assistant (m)\n\n**error:** boom\n" in md
    assert "## 3. toolResult (bash, error)\n\nr```x\n" in md
    assert "## 4. compactionSummary\n\nS\n" in md
    assert "## 5. bashExecution\n\n```console\n$ ls\na\n```\nexit code: 0\n" in md


def test_thinking_tool_calls_and_fences_that_text_cannot_close() -> None:
    message = {
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "thinking", "thinking": "first\nsecond"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a```b"}},
            {"type": "unknown", "x": 1},
        ],
    }
    md = context_markdown({"messages": [message, "not an object", {"role": "user", "content": None}]}, "T")
    assert "> *thinking:* first\n> second" in md
    assert '**tool call** `read` (c1)\n\n````json\n{\n  "path": "a```b"\n}\n````' in md
    assert '```json\n{\n  "type": "unknown",\n  "x": 1\n}\n```' in md
    assert '## 2. ?\n\n```json\n"not an object"\n```' in md
    assert "## 3. user\n\n*(empty)*\n" in md
    assert "- model: none\n- thinking level: off\n- messages: 3\n" in md


def test_models_titles_and_lone_surrogates() -> None:
    assert model_text(None) == "none"
    assert model_text({"provider": None, "modelId": ABSENT}) == "unknown"
    assert model_text({"provider": "p"}) == "p/?"
    assert context_title("s.jsonl") == "Context of s.jsonl at the leaf"
    assert context_title("s.jsonl", "a1") == "Context of s.jsonl at entry a1"
    assert context_title(None, 5) == "Context of an in-memory session at entry 5"
    md = context_markdown({"messages": [{"role": "user", "content": "half \ud800 emoji"}]}, "T")
    assert "half \ufffd emoji" in md  # for display: shown as the terminal shows it


def test_the_cli_prints_the_same_document(tmp_path: Path, capsys) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    first = manager.append_message(user_message("question", 1))
    manager.append_message(assistant_message("answer", 2, calls=("c1",)))
    manager.append_message(tool_result_message("c1", "listing", timestamp=3))
    path = manager.get_session_file()
    name = Path(path).name
    assert cli.main(["context", path]) == 0
    expected = context_markdown(manager.build_session_context(), f"Context of {name} at the leaf")
    assert capsys.readouterr().out == expected + "\n"
    assert cli.main(["context", path, "--leaf", first]) == 0
    at_first = context_markdown(
        manager.build_session_context_at(first), f"Context of {name} at entry {first}"
    )
    assert capsys.readouterr().out == at_first + "\n"
    assert "## 2. assistant (test)" in expected and "## 3. toolResult (bash)\n\nlisting" in expected


def test_a_deeply_nested_value_is_printed_in_about_its_own_size(tmp_path: Path, capsys) -> None:
    """Indentation grows with the square of the nesting depth: a message of 100,000 nested arrays
    (200 KB) would be gigabytes laid out in full. Both forms lay out READABLE_DEPTH levels and
    write the rest on one line: the same value, in about its own size."""
    depth = 100_000
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    manager.append_message(user_message("question", 1))
    manager.append_message({"role": "user", "content": parse("[" * depth + "]" * depth), "timestamp": 2})
    path = manager.get_session_file()
    for form in ([], ["--json"]):
        assert cli.main(["context", *form, path]) == 0
        out = capsys.readouterr().out
        assert "[" * (depth - READABLE_DEPTH - 1) in out and len(out) < 4 * depth
        if form:
            context = parse(out)
            assert dumps(context["messages"][1]["content"]) == "[" * depth + "]" * depth


def test_the_protocol_says_how_deep_json_is_laid_out() -> None:
    from pi_session_server.server.results import ContextMarkdown

    assert f"down to {READABLE_DEPTH} levels" in " ".join((ContextMarkdown.__doc__ or "").split())
