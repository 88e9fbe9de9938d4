"""The bytes of a JSON string token, unescaped in one pass (a big ``didOpen``'s text)."""

from __future__ import annotations

import json
import warnings

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.server import json_string
from pi_session_server.server.json_string import json_string_bytes


class Item(msgspec.Struct):
    text: msgspec.Raw


def _token(document: str) -> msgspec.Raw:
    return msgspec.json.decode(document, type=Item).text


def _has_unknown_escape(token: bytes) -> bool:
    """A ``\\u`` or ``\\/`` escape in a valid JSON string token, read escape by escape."""
    i = 1
    while i < len(token) - 1:
        if token[i] == 0x5C:
            if token[i + 1] in b"u/":
                return True
            i += 2
        else:
            i += 1
    return False


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"])), st.booleans(), st.booleans())
def test_the_utf8_of_the_decoded_string_or_none_for_an_unknown_escape(
    text: str, ensure_ascii: bool, slash: bool
) -> None:
    document = json.dumps({"text": text}, ensure_ascii=ensure_ascii)
    if slash:  # JSON.stringify never writes "\/", other writers do
        document = document.replace("/", "\\/")
    token = _token(document)
    found = json_string_bytes(token)
    if _has_unknown_escape(bytes(token)):
        assert found is None
    else:
        assert found == text.encode("utf-8")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\u0041", b"\\u0041"),  # an escaped backslash before "u": no \u escape
        ("a\\/b", b"a\\/b"),
        ("\\\\u", b"\\\\u"),
        ('"\n\t\b\f\r\\', b'"\n\t\b\f\r\\'),
        ("\x1b[0m", None),  # JSON writes a control character as \u001b
        ("\u00e9", None),  # ensure_ascii: \u00e9
    ],
)
def test_unknown_escapes_are_told_from_escaped_backslashes(text: str, expected: bytes | None) -> None:
    assert json_string_bytes(_token(json.dumps({"text": text}))) == expected


def test_a_filter_added_later_does_not_hide_an_unknown_escape() -> None:
    token = _token('{"text": "a\\/b"}')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert json_string_bytes(token) is None
    with warnings.catch_warnings():
        warnings.resetwarnings()
        assert json_string_bytes(token) is None
        assert json_string_bytes(_token('{"text": "a/b"}')) == b"a/b"


def test_without_the_warning_the_token_is_searched_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_string, "_escape_warning_raises", lambda: False)
    monkeypatch.setattr(json_string, "_unescaped", lambda data: bytes(data))  # never says None
    assert json_string_bytes(_token('{"text": "a\\/b"}')) is None
    assert json_string_bytes(_token('{"text": "\\\\u"}')) is None  # the search cannot tell
    assert json_string_bytes(_token('{"text": "ab"}')) == b"ab"


def test_this_python_warns_of_the_escapes_it_keeps() -> None:
    assert json_string._escape_warning_raises()


def test_not_a_string() -> None:
    assert json_string_bytes(_token('{"text": 12}')) is None
    assert json_string_bytes(_token('{"text": ""}')) == b""


def test_the_filter_is_added_only_when_it_is_not_first(monkeypatch: pytest.MonkeyPatch) -> None:
    token = _token('{"text": "ab"}')
    json_string_bytes(token)
    added: list[object] = []
    real = warnings.filterwarnings
    monkeypatch.setattr(warnings, "filterwarnings", lambda *a, **k: (added.append(a), real(*a, **k)))
    assert json_string_bytes(token) == b"ab"
    assert added == []  # first already: the warnings shown so far are not forgotten
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert json_string_bytes(_token('{"text": "\\/"}')) is None
        assert len(added) == 1
