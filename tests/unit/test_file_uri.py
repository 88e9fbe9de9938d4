"""The server's ``file:`` URIs are pygls': ``file_uri.from_fs_path`` gives what
``pygls.uris.from_fs_path`` gives (or raises what it raises) for any path, without importing
``urllib.parse``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygls import uris

from pi_session_server.server import file_uri


def _outcome(function: object, path: str) -> tuple[str, object]:
    try:
        return "uri", function(path)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the failure is compared too
        return "error", type(error)


def _pygls(function: object, text: str) -> tuple[str, object]:
    """pygls' outcome, where it can encode ``text``; where a lone surrogate makes it raise, its
    outcome for the text whose escapes of bytes (os.fsdecode's U+DC80-U+DCFF) are those bytes and
    whose other lone surrogates are U+FFFD (what ours gives: a URI for every path)."""
    outcome = _outcome(function, text)
    if outcome != ("error", UnicodeEncodeError):
        return outcome
    from urllib.parse import quote

    marked = "".join(  # each escaped byte as a private-use character, its quoting swapped back below
        chr(0xE000 + ord(c) - 0xDC00)
        if 0xDC80 <= ord(c) <= 0xDCFF
        else "\ufffd"
        if 0xD800 <= ord(c) <= 0xDFFF
        else c
        for c in text
    )
    kind, value = _outcome(function, marked)
    if kind == "uri":
        for byte in range(0x80, 0x100):
            value = str(value).replace(quote(chr(0xE000 + byte)), f"%{byte:02X}")
    return kind, value


PATHS = [
    "/home/u/.pi/agent/sessions/--home-u-proj--/2025-01-01T00-00-00-000Z_0190f5f5.jsonl",
    "/",
    "",
    "relative/name.jsonl",
    "/with space/and%percent/#hash?query;params=1&b=c/plus+/at@/colon:/comma,/",
    "/unicode/é/日本/🎉.jsonl",
    "/back\\slash/tilde~/under_score/dot.dash-",
    "//server/share/file.jsonl",
    "//server",
    "///three/slashes",
    "////four/slashes",
    "//",
    "/C:/Users/x.jsonl",
    "/c:",
    "C:/no/leading/slash",
    "/lone\udc80surrogate",
    "/escaped\udcffbyte",
    "/nul\x00byte/and\nnewline\rreturn\ttab",
    "/\x7f\x80\u00a0",
]


@pytest.mark.parametrize("path", PATHS)
def test_the_uri_of_a_path_is_pygls(path: str) -> None:
    assert _outcome(file_uri.from_fs_path, path) == _pygls(uris.from_fs_path, path)


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("/\\:%#?;@+ ~._-aZ09Cé日🎉\x00\udc80\udcff\ud800")), max_size=20)
)
def test_the_uri_of_any_path_is_pygls(path: str) -> None:
    assert _outcome(file_uri.from_fs_path, path) == _pygls(uris.from_fs_path, path)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_quoting_any_text_is_urllib(text: str) -> None:
    from urllib.parse import quote

    assert _outcome(file_uri.quote, text) == _pygls(quote, text)


def test_no_url_parsing_is_imported() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pi_session_server.server import file_uri; "
            "print(file_uri.from_fs_path('/a b'), 'urllib.parse' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["file:///a%20b", "False"]


def test_a_name_that_is_not_utf8_is_its_own_bytes_and_a_lone_surrogate_the_replacement_character() -> None:
    """Where pygls raises: a file name the file system gave that is not UTF-8 (os.fsdecode's
    escapes) is percent-encoded byte for byte (the URI names that very file); any other lone
    surrogate is U+FFFD, as Node writes the path to the file system."""
    import os

    assert file_uri.from_fs_path(os.fsdecode(b"/s/\xff\xfe-a.jsonl")) == "file:///s/%FF%FE-a.jsonl"
    assert file_uri.from_fs_path("/s/a\ud800\udcff") == "file:///s/a%EF%BF%BD%FF"
    with pytest.raises(UnicodeEncodeError):
        uris.from_fs_path("/s/a\ud800")
