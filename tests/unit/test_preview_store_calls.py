"""The tool results' parts the stored previews keep (preview_store._StoredResults): each shows the
last call of its id among the messages kept, and a message's calls are gone through once, however
many tool results show them."""

from __future__ import annotations

from array import array
from types import SimpleNamespace
from typing import Any

from pi_session_server.session.preview_store import _StoredResults


class _CountedCalls(list[Any]):
    """A message's (key, call) pairs that count how many of them are gone through."""

    gone_through = 0

    def __iter__(self) -> Any:
        for pair in super().__iter__():
            _CountedCalls.gone_through += 1
            yield pair

    def __reversed__(self) -> Any:
        for pair in super().__reversed__():
            _CountedCalls.gone_through += 1
            yield pair


def _result(call_id: Any, name: str = "tool") -> SimpleNamespace:
    return SimpleNamespace(call_id=call_id, name=name)


def _text(result: Any, call: tuple[Any, Any]) -> str:
    return f"{call[0]}({call[1]})"


def test_a_result_shows_the_last_call_of_its_id_and_the_offset_of_its_message() -> None:
    listed = [SimpleNamespace(offset=offset) for offset in (0, 10, 20, 30)]
    calls = [
        [("a", ("read", 1)), ("b", ("bash", 2)), ("a", ("read", 3))],
        [],
        [("b", ("edit", 4))],
    ]
    results = _StoredResults.of_held(listed, array("q", [0, 1, 3]), calls, _text)  # type: ignore[arg-type]
    assert results.stored(_result("a")) == ["a", "tool", "read(3)", 0]
    assert results.stored(_result("b")) == ["b", "tool", "edit(4)", 30]
    assert results.stored(_result("c")) == ["c", "tool", None, -1]
    assert results.stored(_result("")) == ["", "tool", None, -1]  # (no id: falsy, as in JS)
    assert results.stored(_result(None)) == [None, "tool", None, -1]


def test_a_message_s_calls_are_gone_through_once_however_many_results_show_them() -> None:
    count = 300
    message_calls = _CountedCalls((f"call{n}", ("read", n)) for n in range(count))
    results = _StoredResults.of_held(
        [SimpleNamespace(offset=5)],  # type: ignore[list-item]
        array("q", [0]),
        [message_calls],
        _text,
    )
    stored = [results.stored(_result(f"call{n}")) for n in range(count)]
    assert stored == [[f"call{n}", "tool", f"read({n})", 5] for n in range(count)]
    assert _CountedCalls.gone_through <= 2 * count  # (not once more for each result)
