"""A label whose ``label`` is truthy but not a string (a hand-made file: a number, an object, an
array, ``true``) is kept by pi: its SessionManager sets any truthy value in its Map of labels, and
its tree selector shows ``String(value)``, as the library's ``get_label`` and tree labels keep it and
the CLI's ``tree`` shows it. The lenses, inlay hints and hovers show that same text; a value whose
text is empty (``[]``) shows no label there, as it shows none in the CLI's tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.analysis import SessionDocument, hints, hover
from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of
from pi_session_server.session import SessionManager

#: each entry's label, as a file written by hand might have it
LABEL_VALUES: list[Any] = [42, 1.5, 1e21, {"a": 1}, [1, [2, "x"]], True, [], "plain"]


def _session() -> bytes:
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    ]
    parent = None
    for number in range(len(LABEL_VALUES)):
        entry_id = f"e{number}"
        message = {"role": "user", "content": f"turn {number}", "timestamp": 1}
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
        )
        parent = entry_id
    for number, value in enumerate(LABEL_VALUES):
        label_id = f"l{number}"
        lines.append(
            {
                "type": "label",
                "id": label_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "targetId": f"e{number}",
                "label": value,
            }
        )
        parent = label_id
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _library_labels(path: Path, pi: str) -> dict[str, str]:
    """Each entry's label as the CLI's tree shows it (``String`` of the library's value), where it
    shows one; the tree's nodes and ``get_label`` agree."""
    shown: dict[str, str] = {}
    with SessionManager.open(str(path), read_only=True, pi=pi) as manager:
        nodes = {}
        stack = list(manager.get_tree())
        while stack:
            node = stack.pop()
            nodes[index_key(node.entry.id)] = node
            stack.extend(node.children)
        for number in range(len(LABEL_VALUES)):
            entry_id = f"e{number}"
            value = manager.get_label(entry_id)
            assert nodes[entry_id].label == value
            text = js_string_of(value) if value is not ABSENT else ""
            if text:
                shown[entry_id] = text
    return shown


@pytest.mark.parametrize("pi", ["1.6.0", "0.86.1"])
def test_a_label_that_is_not_a_string_is_shown_as_the_library_gives_it(tmp_path: Path, pi: str) -> None:
    data = _session()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    expected = _library_labels(path, pi)
    # the values pi keeps, not only its strings: String(42), String({}), an array's join
    assert expected["e0"] == "42" and expected["e2"] == "1e+21" and expected["e3"] == "[object Object]"
    assert expected["e4"] == "1,2,x" and expected["e5"] == "true" and "e6" not in expected
    for doc in (SessionDocument(data, pi=pi), SessionDocument.from_file(str(path), pi=pi)):
        lenses = {lens.line: lens.title for lens in hints.code_lenses(doc)}
        shown = {hint.line: hint.label for hint in hints.inlay_hints(doc)}
        for number in range(len(LABEL_VALUES)):
            line = number + 1
            label = expected.get(f"e{number}")
            markdown = hover.hover(doc, line, 1)
            assert markdown is not None
            if label is None:
                assert "label" not in lenses.get(line, "") and "label" not in shown[line]
                assert "**label**" not in markdown[0]
            else:
                assert f"label “{label}”" in lenses[line] and f"label “{label}”" in shown[line]
                assert f"**label** `{label}`" in markdown[0]
